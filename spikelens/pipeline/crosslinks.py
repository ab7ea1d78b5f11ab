"""The cross-run work of a spooled sweep (mirrors, names, ranks, links) from indexes held
as arrays, each run's record read back from the spool only where it is needed (issue 28).

`Gathered` notes, as each run arrives, the few numbers the cross-run work asks of every
run: a hash of its mirror key, a hash of its first name, whether it may be a rank, and
(step, run) pairs of its spikes and outliers. `cross_run` then does what
`explain.mirrors`, `naming` and `explain.crossrun` do on reports held in memory, with the
same results (tests/test_sweep_memory.py compares every output with a sweep that held its
reports):

- mirrors and names: only runs whose key or first name another run shares can be a mirror
  or need a longer name; those are read back and given to `drop_mirrors` / `name_runs` as
  they are, in sweep order (the others' names cannot meet theirs: a longer path name holds
  a slash, a first name does not);
- links: a step's runs are found in the pairs sorted by step; a data cause needs only their
  count and the first few names in order (`crossrun.put_spike_cause`); the runs a link
  changes are read, changed and written back one at a time; a run asked whether it shifted
  where others did is read back (its shift profile, then its record) one at a time.
"""
from __future__ import annotations

import heapq
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..detect.ranks import link_ranks, rank_groups, rank_of
from ..explain.crossrun import (RUNS_NAMED, _clusters, _confirmed_shift, _shared_spike, _spike_steps,
                                put_shift_cause, put_spike_cause)
from ..explain.mirrors import _key as mirror_key
from ..explain.mirrors import drop_mirrors
from ..model.report import Report, RunReport
from ..naming import name_runs, run_parts
from .runsummary import Record, RunTable, finding_order

NO_KEY = -1
"""`hash()` never returns -1: a run without a mirror key."""


class Gathered:
    """What the cross-run work needs of every run, noted as the runs arrive (arrays)."""

    def __init__(self, table: RunTable) -> None:
        self.table = table
        self.mirror = array("q")  # hash of the mirror key, or NO_KEY
        self.odd = array("q")  # places of runs named by their format with a slash: named with the clashing ones
        self.ranked: dict[int, str] = {}  # places that may be ranks: their first source
        self.spikes = array("q")  # (step, place) of every spike's steps
        self.peaks = array("q")  # (peak step, place) of spikes and (step, place) of outliers' largest
        self.outliers = array("q")  # (step, place) of outliers' largest steps
        self.shifted = array("q")  # places of runs with a level shift the links read

    def add(self, rep: RunReport) -> int:
        rec = Record(rep)
        k = self.table.add(rep, rec)
        key = mirror_key(rec)
        self.mirror.append(NO_KEY if key is None else hash(key))
        parts, given = run_parts(rec.sources, rec.run)
        self.table.names[k] = rec.run if given else parts[-1]  # the name at one component (`unique_names`)
        if given and "/" in rec.run:
            self.odd.append(k)
        src = rec.sources[0] if rec.sources else rec.run
        if rank_of(str(src)) is not None or rank_of(rec.run) is not None:
            self.ranked[k] = src
        shifted = False
        for f in rec.findings:
            if f.kind == "spike" and f.peak_step is not None:
                for s in _spike_steps(f):
                    self.spikes.extend((s, k))
                self.peaks.extend((int(f.peak_step), k))
            elif f.kind == "outliers":
                for item in f.evidence.get("largest", []):
                    self.peaks.extend((int(item["step"]), k))
                    self.outliers.extend((int(item["step"]), k))
            elif f.kind == "level_shift" and f.start_step is not None and f.magnitude:
                shifted = True
        if shifted:
            self.shifted.append(k)
        return k


def cross_run(g: Gathered) -> None:
    """Mirrors dropped, names made unique, ranks and runs linked, on the spooled runs."""
    table = g.table
    alive = _drop_mirrors(g)
    if alive is not None:
        table.keep(alive)
        place = np.full(len(g.mirror), -1, dtype=np.int64)
        place[np.asarray(alive, dtype=np.int64)] = np.arange(len(alive))
    else:
        place = None
    odd = _moved(g.odd, place)
    _name(table, odd)
    _link_ranks(table, {int(place[k]) if place is not None else k: src for k, src in g.ranked.items()
                        if place is None or place[k] >= 0})
    if len(table) < 2:
        return
    _link_level_shifts(table, _moved(g.shifted, place))
    spikes = _pairs(g.spikes, place)
    spikes = _promote_shared_outliers(table, _pairs(g.peaks, place), _pairs(g.outliers, place), spikes)
    _link_spikes(table, spikes)


def _pairs(flat: array, place: np.ndarray | None) -> np.ndarray:
    """(step, place) pairs as an n x 2 array, places after the mirrors were dropped."""
    pairs = np.frombuffer(flat, dtype=np.int64).reshape(-1, 2) if len(flat) else np.empty((0, 2), np.int64)
    if place is None:
        return pairs
    pairs = np.column_stack([pairs[:, 0], place[pairs[:, 1]]])
    return pairs[pairs[:, 1] >= 0]


def _moved(places: array, place: np.ndarray | None) -> list[int]:
    if place is None:
        return list(places)
    return [int(place[k]) for k in places if place[k] >= 0]


def _distinct(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values (`np.unique` without counts imports numpy.ma: ~1 MB, once)."""
    a = np.sort(a)
    return a[np.concatenate([[True], a[1:] != a[:-1]])] if len(a) else a


def _clashing(hashes: np.ndarray) -> np.ndarray:
    """Places whose hash another place shares (NO_KEY aside)."""
    keyed = hashes != NO_KEY
    values, counts = np.unique(hashes[keyed], return_counts=True)
    return np.flatnonzero(keyed & np.isin(hashes, values[counts > 1]))


def _drop_mirrors(g: Gathered) -> list[int] | None:
    """The places that stay, or None when no run is a mirror (only runs whose mirror key
    another run shares are read back and compared, in sweep order)."""
    table = g.table
    maybe = _clashing(np.frombuffer(g.mirror, dtype=np.int64)) if len(g.mirror) >= 2 else []
    if not len(maybe):
        return None
    recs = [table.record(int(k)) for k in maybe]
    kept = Report(command="analyze", runs=list(recs))  # type: ignore[arg-type]
    drop_mirrors(kept)
    stay = {id(r) for r in kept.runs}
    gone = {int(k) for k, r in zip(maybe, recs) if id(r) not in stay}
    return None if not gone else [k for k in range(len(table)) if k not in gone]


def _name(table: RunTable, odd: list[int]) -> None:
    """Final names: runs whose first name another run has (or a format's name with a slash)
    are named together, as `naming.name_runs` names all runs."""
    n = len(table)
    if n < 2:
        return
    hashes = np.fromiter((hash(s) for s in table.names), dtype=np.int64, count=n)
    hashes[hashes == NO_KEY] = NO_KEY - 1  # (cannot happen: hash() is never -1)
    together = _distinct(np.concatenate([_clashing(hashes), np.asarray(odd, dtype=np.int64)]))
    if not len(together):
        return
    recs = [table.spool[table.record_at[int(k)]] for k in together]  # names as they came: the first ones
    for k, name in zip(together, name_runs(recs)):
        table.names[int(k)] = name


class _Named:
    __slots__ = ("run", "sources", "place")

    def __init__(self, run: str, source: str, place: int) -> None:
        self.run, self.sources, self.place = run, (source,), place


def _link_ranks(table: RunTable, ranked: dict[int, str]) -> None:
    """Ranks of one training linked on their full reports, a training at a time."""
    if len(ranked) < 2:
        return
    named = [_Named(table.names[k], src, k) for k, src in sorted(ranked.items())]
    for group in rank_groups(named).values():
        if len(group) >= 2:
            places = [m.place for m in group.values()]
            full = [table.full(k) for k in places]
            link_ranks(Report(command="analyze", runs=full))
            for k, rep in zip(places, full):
                table.store(k, rep)


class _Asked:
    """A run as `crossrun._confirmed_shift` reads it: its shift profile from its report, its
    findings from its record, each read back only when asked for."""

    def __init__(self, table: RunTable, k: int) -> None:
        self.table, self.k, self.run = table, k, table.names[k]
        self._findings: Any = None

    @property
    def shift_profile(self) -> Any:
        return self.table.spool[self.table.report_at[self.k]].shift_profile

    @property
    def findings(self) -> Any:
        if self._findings is None:
            self._findings = self.table.record(self.k).findings
        return self._findings


class _Shift:
    """A level shift of a run, as `crossrun._clusters` reads it (`origin`: its stub's place)."""

    __slots__ = ("k", "origin", "magnitude", "metric", "evidence")

    def __init__(self, k: int, f: Any) -> None:
        self.k, self.origin, self.magnitude, self.metric = k, f.origin, f.magnitude, f.metric
        self.evidence = {"window_steps": f.evidence.get("window_steps")}


def _link_level_shifts(table: RunTable, shifted: list[int]) -> None:
    """`crossrun._link_level_shifts` on the spooled runs: the shifts of the runs that have one
    (read back once), clustered by step; for a cluster of enough runs, every other run is asked
    about that step, one at a time; the runs linked are read, given their causes (and a shift
    confirmed) and written back."""
    if len(shifted) < 2:  # a quorum is at least two runs
        return
    shifts = []
    for k in shifted:
        for f in table.record(k).findings:
            if f.kind == "level_shift" and f.start_step is not None and f.magnitude:
                shifts.append((f.start_step, k, _Shift(k, f)))
    shifts.sort(key=lambda x: x[0])
    quorum = 2 if len(table) <= 6 else 3
    for up in (True, False):
        for cluster in _clusters([x for x in shifts if (x[2].magnitude > 1) == up]):
            if len({k for _, k, _ in cluster}) < quorum:
                continue
            at = int(sorted(s for s, _, _ in cluster)[len(cluster) // 2])
            runs = {k for _, k, _ in cluster}
            metrics = {x.metric for _, _, x in cluster}
            confirmed: dict[int, list] = {}
            for k in range(len(table)):
                if k not in runs and (f := _confirmed_shift(_Asked(table, k), at, up, len(runs),  # type: ignore[arg-type]
                                                             metrics)) is not None:
                    confirmed.setdefault(k, []).append(f)
            origins: dict[int, list[int]] = {}
            for _, k, x in cluster:
                origins.setdefault(k, []).append(x.origin)
            members = runs | set(confirmed)
            who = _Head(heapq.nsmallest(RUNS_NAMED + 1, (table.names[k] for k in members)), len(members))
            for k in sorted(members):
                rec = table.record(k)
                stubs = {getattr(s, "origin", None): s for s in rec.findings}
                for origin in origins.get(k, ()):
                    put_shift_cause(stubs[origin], who, rec.run, at, up)
                for f in confirmed.get(k, ()):
                    put_shift_cause(f, who, rec.run, at, up)
                    rec.findings.append(f)
                    rec.findings.sort(key=finding_order)
                table.put_record(k, rec)


def _step_counts(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each step and the number of different runs at it."""
    if not len(pairs):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]  # (np.unique(axis=0) would import numpy.ma: ~1 MB)
    first = np.ones(len(pairs), dtype=bool)
    first[1:] = (pairs[1:, 0] != pairs[:-1, 0]) | (pairs[1:, 1] != pairs[:-1, 1])
    return np.unique(pairs[first, 0], return_counts=True)


def _promote_shared_outliers(table: RunTable, peaks: np.ndarray, outliers: np.ndarray,
                             spikes: np.ndarray) -> np.ndarray:
    """`crossrun._promote_shared_outliers` on the arrays: an outlier step shared by at least
    half the runs becomes a spike on each run that has it; the spikes' pairs, the new ones added."""
    if not len(outliers):
        return spikes
    steps, counts = _step_counts(peaks)
    quorum = max(2, (len(table) + 1) // 2)
    shared_steps = steps[counts >= quorum]
    if not len(shared_steps):
        return spikes
    table.all_sorted = True  # the links sort every run's findings
    shared = {int(s) for s in shared_steps}
    n_at = dict(zip(steps.tolist(), counts.tolist()))
    added = array("q")
    for k in _distinct(outliers[np.isin(outliers[:, 0], shared_steps), 1]).tolist():
        rec = table.record(k)
        for f in [f for f in rec.findings if f.kind == "outliers"]:
            ratios = {int(i["step"]): i.get("ratio") for i in f.evidence.get("largest", [])}
            for s in sorted(set(ratios) & shared):
                if any(o.kind == "spike" and o.peak_step == s for o in rec.findings):
                    continue
                rec.findings.append(_shared_spike(rec, f, s, ratios.get(s), n_at[s]))  # type: ignore[arg-type]
                added.extend((s, k))
        rec.findings.sort(key=finding_order)
        table.put_record(k, rec)
    more = np.frombuffer(added, dtype=np.int64).reshape(-1, 2) if len(added) else np.empty((0, 2), np.int64)
    return np.concatenate([spikes, more])


class _Head(Sequence):
    """The first names of a step's runs, sorted, and how many runs there are: what
    `crossrun.put_spike_cause` reads of the list of all of them."""

    def __init__(self, head: list[str], n: int) -> None:
        self.head, self.n = head, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        return self.head[i]


def _link_spikes(table: RunTable, pairs: np.ndarray, tolerance_steps: int = 2) -> None:
    """`crossrun.link_runs`' spikes on the arrays: a spike at a step (within the tolerance)
    where another run spiked gets a `data` cause naming them."""
    if len(_distinct(pairs[:, 1])) < 2:
        return
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    steps, places = pairs[:, 0], pairs[:, 1]
    lo = np.searchsorted(steps, steps - tolerance_steps, "left")
    hi = np.searchsorted(steps, steps + tolerance_steps, "right")
    crowded = hi - lo >= 2  # another pair near: maybe another run
    if not crowded.any():
        return
    names = table.names
    around: dict[int, np.ndarray] = {}

    def runs_near(s: int) -> np.ndarray:
        if s not in around:
            a = np.searchsorted(steps, s - tolerance_steps, "left")
            b = np.searchsorted(steps, s + tolerance_steps, "right")
            around[s] = _distinct(places[a:b])
        return around[s]

    def head(runs: np.ndarray) -> _Head:
        return _Head(heapq.nsmallest(RUNS_NAMED + 1, (names[k] for k in runs.tolist())), len(runs))

    heads: dict[int, _Head] = {}
    for k in _distinct(places[crowded]).tolist():
        rec = table.record(k)
        changed = False
        for f in rec.findings:
            if f.kind != "spike" or f.peak_step is None:
                continue
            shared = [s for s in _spike_steps(f) if len(runs_near(s)) >= 2]
            if not shared:
                continue
            if len(shared) == 1:
                if shared[0] not in heads:
                    heads[shared[0]] = head(runs_near(shared[0]))
                who = heads[shared[0]]
            else:
                who = head(_distinct(np.concatenate([runs_near(s) for s in shared])))
            put_spike_cause(f, who, rec.run, shared)  # type: ignore[arg-type]
            changed = True
        if changed:
            table.put_record(k, rec)
