"""The cross-run work of a spooled sweep (mirrors, names, ranks, links) from on-disk arrays
and pairs sorted on disk (`extsort`), each run's record read back from the spool only where
it is needed (issue 28): the parent's memory does not grow with the runs.

`Gathered` notes, as each run arrives, the few numbers the cross-run work asks of every
run, in `spool.DiskArray`s: a hash of its mirror key, (step, run) pairs of its spikes and
outliers; and, for the few runs concerned, whether it may be a rank, has a format's name
with a slash or a level shift. `cross_run` then does what `explain.mirrors`, `naming` and
`explain.crossrun` do on reports held in memory, with the same results
(tests/test_sweep_memory.py, test_sweep_spool.py compare every output with a sweep that
held its reports):

- mirrors and names: only runs whose key or first name another run shares can be a mirror
  or need a longer name (the hashes sorted on disk find them); those are read back and given
  to `drop_mirrors` / `name_runs` as they are, in sweep order (the others' names cannot
  meet theirs: a longer path name holds a slash, a first name does not);
- links: the (step, run) pairs sorted on disk; a step's runs are a range of them, found by
  bisection; a data cause needs only their count and the first few names in order
  (`crossrun.put_spike_cause`), counted and picked as the range is read; each run with a
  spike is read, changed and written back one at a time; a run asked whether it shifted
  where others did is read back (its shift profile, then its record) one at a time.

Still held: the runs that may be ranks, named with a slash or with a level shift (the
links read those together), and the records of runs whose names or mirror keys clash.
"""
from __future__ import annotations

import bisect
import functools
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..detect.ranks import link_ranks, rank_groups, rank_of
from ..explain.crossrun import (RUNS_NAMED, _clusters, _confirmed_shift, _shared_spike, _spike_steps,
                                put_shift_cause, put_spike_cause)
from ..explain.mirrors import _key as mirror_key
from ..explain.mirrors import drop_mirrors
from ..model.report import Report, RunReport
from ..naming import name_runs, run_parts
from .extsort import sorted_pairs
from .runsummary import Record, RunTable, finding_order
from .spool import DiskArray

NO_KEY = -1
"""`hash()` never returns -1: a run without a mirror key."""


class Gathered:
    """What the cross-run work needs of every run, noted as the runs arrive (on-disk arrays:
    the parent holds nothing a run but for the few runs that may be ranks, be named by their
    format with a slash or have a level shift the links read)."""

    def __init__(self, table: RunTable) -> None:
        self.table = table
        spool = table.spool
        self.mirror = spool.array()  # hash of the mirror key, or NO_KEY
        self.odd: list[int] = []  # places of runs named by their format with a slash: named with the clashing ones
        self.ranked: dict[int, str] = {}  # places that may be ranks: their first source
        self.spikes = spool.array(width=2)  # (step, place) of every spike's steps
        self.peaks = spool.array(width=2)  # (peak step, place) of spikes and (step, place) of outliers' largest
        self.outliers = spool.array(width=2)  # (step, place) of outliers' largest steps
        self.shifted: list[int] = []  # places of runs with a level shift the links read

    def add(self, rep: RunReport) -> int:
        rec = Record(rep)
        parts, given = run_parts(rec.sources, rec.run)
        k = self.table.add(rep, rec, rec.run if given else parts[-1])  # the name at one component (`unique_names`)
        key = mirror_key(rec)
        self.mirror.append(NO_KEY if key is None else hash(key))
        if given and "/" in rec.run:
            self.odd.append(k)
        src = rec.sources[0] if rec.sources else rec.run
        if rank_of(str(src)) is not None or rank_of(rec.run) is not None:
            self.ranked[k] = src
        shifted = False
        for f in rec.findings:
            if f.kind == "spike" and f.peak_step is not None:
                for s in _spike_steps(f):
                    self.spikes.append((s, k))
                self.peaks.append((int(f.peak_step), k))
            elif f.kind == "outliers":
                for item in f.evidence.get("largest", []):
                    self.peaks.append((int(item["step"]), k))
                    self.outliers.append((int(item["step"]), k))
            elif f.kind == "level_shift" and f.start_step is not None and f.magnitude:
                shifted = True
        if shifted:
            self.shifted.append(k)
        return k


class _Moved:
    """Places before the mirrors were dropped -> places after (-1: dropped), from the few dropped."""

    def __init__(self, gone: list[int]) -> None:
        self.gone, self.dropped = sorted(gone), set(gone)

    def __call__(self, k: int) -> int:
        return -1 if k in self.dropped else k - bisect.bisect_left(self.gone, k)

    def pairs(self, rows: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        for s, k in rows:
            if k not in self.dropped:
                yield s, self(k)

    def places(self, places: Iterable[int]) -> list[int]:
        return [self(k) for k in places if k not in self.dropped]


def cross_run(g: Gathered) -> None:
    """Mirrors dropped, names made unique, ranks and runs linked, on the spooled runs."""
    table = g.table
    gone = _drop_mirrors(g)
    moved = _Moved(gone)
    if gone:
        table.drop(moved.dropped)
    _name(table, moved.places(g.odd))
    _link_ranks(table, {moved(k): src for k, src in g.ranked.items() if k not in moved.dropped})
    if len(table) < 2:
        return
    _link_level_shifts(table, moved.places(g.shifted))
    added = _promote_shared_outliers(table, lambda: moved.pairs(g.peaks), lambda: moved.pairs(g.outliers))
    _link_spikes(table, lambda: itertools.chain(moved.pairs(g.spikes), added))


def _clashing(keys: Iterable[int], folder: str) -> list[int]:
    """Places whose key (a hash) another place shares, ascending (NO_KEY aside): the keys
    sorted on disk, only the clashing places held."""
    out: list[int] = []
    group: list[int] = []
    last: Any = None
    for key, k in sorted_pairs(((key, k) for k, key in enumerate(keys) if key != NO_KEY), folder):
        if key != last:
            if len(group) > 1:
                out += group
            group, last = [], key
        group.append(k)
    if len(group) > 1:
        out += group
    return sorted(out)


def _drop_mirrors(g: Gathered) -> list[int]:
    """The places of runs dropped as mirrors (only runs whose mirror key another run shares
    are read back and compared, in sweep order)."""
    table = g.table
    maybe = _clashing(g.mirror, table.spool.folder) if len(g.mirror) >= 2 else []
    if not maybe:
        return []
    recs = [table.record(k) for k in maybe]
    kept = Report(command="analyze", runs=list(recs))  # type: ignore[arg-type]
    drop_mirrors(kept)
    stay = {id(r) for r in kept.runs}
    return [k for k, r in zip(maybe, recs) if id(r) not in stay]


def _name(table: RunTable, odd: list[int]) -> None:
    """Final names: runs whose first name another run has (or a format's name with a slash)
    are named together, as `naming.name_runs` names all runs."""
    if len(table) < 2:
        return
    together = sorted(set(_clashing((hash(s) for s in table.names), table.spool.folder)) | set(odd))
    if not together:
        return
    recs = [table.spool[table.record_at[k]] for k in together]  # names as they came: the first ones
    for k, name in zip(together, name_runs(recs)):
        table.names[k] = name


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


def _distinct_sorted(pairs: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Sorted pairs, each once."""
    last = None
    for pair in pairs:
        if pair != last:
            yield pair
            last = pair


def _promote_shared_outliers(table: RunTable, peaks: Callable[[], Iterator[tuple[int, int]]],
                             outliers: Callable[[], Iterator[tuple[int, int]]]) -> list[tuple[int, int]]:
    """`crossrun._promote_shared_outliers` on the pairs sorted on disk: an outlier step shared
    by at least half the runs becomes a spike on each run that has it; the spikes' new pairs
    (a step at most a few: a step shared by half the runs)."""
    folder = table.spool.folder
    if next(outliers(), None) is None:
        return []
    quorum = max(2, (len(table) + 1) // 2)
    n_at: dict[int, int] = {}  # the shared steps (a few: each is half the runs) and their runs
    step, n = None, 0
    for s, _ in _distinct_sorted(sorted_pairs(peaks(), folder)):
        if s != step:
            if step is not None and n >= quorum:
                n_at[step] = n
            step, n = s, 0
        n += 1
    if step is not None and n >= quorum:
        n_at[step] = n
    if not n_at:
        return []
    table.all_sorted = True  # the links sort every run's findings
    shared = set(n_at)
    added: list[tuple[int, int]] = []
    runs = sorted_pairs(((k, 0) for s, k in outliers() if s in shared), folder)
    for k, _ in _distinct_sorted(runs):
        rec = table.record(k)
        for f in [f for f in rec.findings if f.kind == "outliers"]:
            ratios = {int(i["step"]): i.get("ratio") for i in f.evidence.get("largest", [])}
            for s in sorted(set(ratios) & shared):
                if any(o.kind == "spike" and o.peak_step == s for o in rec.findings):
                    continue
                rec.findings.append(_shared_spike(rec, f, s, ratios.get(s), n_at[s]))  # type: ignore[arg-type]
                added.append((s, k))
        rec.findings.sort(key=finding_order)
        table.put_record(k, rec)
    return added


class _Head(Sequence):
    """The first names of a step's runs, sorted, and how many runs there are: what
    `crossrun.put_spike_cause` reads of the list of all of them."""

    def __init__(self, head: list[str], n: int) -> None:
        self.head, self.n = head, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        return self.head[i]


class _Near:
    """The runs that spiked near given steps, from the (step, place) pairs sorted on disk
    (`rows`): how many and the first names, read in place (a step of 10^5 runs is never
    held); a step's answer is kept for the next run that asks (`CACHED` steps at most)."""

    CACHED = 1024

    def __init__(self, table: RunTable, rows: DiskArray, tolerance: int) -> None:
        self.table, self.rows, self.tolerance = table, rows, tolerance
        self.one = functools.lru_cache(maxsize=self.CACHED)(lambda s: self.around((s,)))

    def around(self, steps: tuple[int, ...]) -> _Head:
        """The runs within the tolerance of any of the steps: their count and first names."""
        t, rows = self.tolerance, self.rows
        values: set[int] = set()  # the step values there: the pairs of each are sorted by place
        for s in steps:
            lo, hi = rows.first_at_least(s - t), rows.first_at_least(s + t + 1)
            at = lo
            while at < hi:
                v = rows[at][0]
                values.add(v)
                at = rows.first_at_least(v + 1)
        streams = [(k for _, k in rows.rows(rows.first_at_least(v), rows.first_at_least(v + 1)))
                   for v in sorted(values)]
        n, names = 0, self.table.names
        places = (k for k, _ in _distinct_sorted((k, 0) for k in heapq.merge(*streams)))

        def counted() -> Iterator[str]:
            nonlocal n
            for k in places:
                n += 1
                yield names[k]

        head = heapq.nsmallest(RUNS_NAMED + 1, counted())
        return _Head(head, n)


def _link_spikes(table: RunTable, pairs: Callable[[], Iterator[tuple[int, int]]], tolerance_steps: int = 2) -> None:
    """`crossrun.link_runs`' spikes on the pairs sorted on disk: a spike at a step (within the
    tolerance) where another run spiked gets a `data` cause naming them. Each run with a
    spike is read back once, in place order."""
    folder = table.spool.folder
    rows = table.spool.array(width=2)
    rows.extend(_distinct_sorted(sorted_pairs(pairs(), folder)))
    if not len(rows):
        return
    near = _Near(table, rows, tolerance_steps)
    for k, _ in _distinct_sorted(sorted_pairs(((k, 0) for _, k in pairs()), folder)):
        rec = table.record(k)
        changed = False
        for f in rec.findings:
            if f.kind != "spike" or f.peak_step is None:
                continue
            shared = [s for s in _spike_steps(f) if len(near.one(s)) >= 2]
            if not shared:
                continue
            who = near.one(shared[0]) if len(shared) == 1 else near.around(tuple(shared))
            put_spike_cause(f, who, rec.run, shared)  # type: ignore[arg-type]
            changed = True
        if changed:
            table.put_record(k, rec)
