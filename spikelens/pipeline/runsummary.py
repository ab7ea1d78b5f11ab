"""What a sweep's parent keeps of each run while its reports wait on disk (`spool`): nothing
in memory, since issue 28's session 13 (a sweep of 10^5 runs held ~12 KB of report a run, then
~1.2 KB of summary while the links ran, then ~0.1 KB: its name and places): a run's places
in the spool and its final name are rows of on-disk arrays (`spool.DiskArray`, `DiskStrings`).

Each run is two spool entries: its report, and its `Record`, what the cross-run work reads
of it (name, sources, the stats mirrors compare, one small stub per finding the links read:
spikes and the other events of one loss, outliers, level shifts). Mirrors, names and links
(`crosslinks`) read the records back from the spool where they need them, from pairs by
step and hashes of names sorted on disk, and write a changed record back; a run's report is read
back with its record's changes put on it when an output asks (`RunTable.full`).

The links see a stub as they see a finding: kind, code, metric, steps, magnitude, the
evidence keys they read (`LINK_EVIDENCE`), and `causes`, which starts empty: a cause the
links put first on a stub replaces the finding's causes of that name, as it would have on
the finding. A finding the links add (a shared spike, a confirmed shift) is a real
finding, kept as it is; the links then sort the run's findings, and the full report's
findings are sorted the same way (a stable sort on the same key: the same order).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Callable, Iterator

from ..model.finding import EVENT_KINDS, Finding
from ..model.report import RunReport
from ..naming import rename_report
from .spool import DiskArray, Spool

LINK_EVIDENCE = ("steps", "bad_batch", "largest", "window_steps")
"""The evidence keys `explain.crossrun` reads (`steps` of a bad-batch finding only); an outlier's
`largest` items keep their step and ratio."""
LINKED_KINDS = frozenset(EVENT_KINDS) | {"outliers", "level_shift"}
"""The kinds `explain.crossrun` reads: spikes and outliers (shared steps), level shifts, and
the events of one loss that cover a step a shift is asked about."""
MIRROR_STATS = ("main_metric", "first_step", "last_step", "points", "first_value", "last_value")
"""The stats `explain.mirrors` compares."""


def finding_order(f: Any) -> tuple:
    """The key `explain.crossrun` sorts a run's findings by when it adds one."""
    return (f.anchor_step if f.anchor_step is not None else -1, f.kind)


class Stub:
    """A finding as the cross-run links read it (`origin`: its place in the run's findings)."""

    __slots__ = ("origin", "kind", "code", "metric", "run", "severity", "recovery", "start_step", "peak_step",
                 "end_step", "magnitude", "evidence", "extra", "causes")

    anchor_step = Finding.anchor_step
    span = Finding.span

    def __init__(self, origin: int, f: Finding) -> None:
        self.origin = origin
        self.kind, self.code, self.metric, self.run = f.kind, f.code, f.metric, f.run
        self.severity, self.recovery, self.magnitude = f.severity, f.recovery, f.magnitude
        self.start_step, self.peak_step, self.end_step = f.start_step, f.peak_step, f.end_step
        self.evidence = _link_evidence(f.evidence)
        resume = f.extra.get("resume_step")
        self.extra = {} if resume is None else {"resume_step": resume}
        self.causes: Any = ()  # a list once a link puts a cause on it


def _link_evidence(ev: dict[str, Any]) -> dict[str, Any]:
    kept = {k: ev[k] for k in LINK_EVIDENCE if k in ev and (k != "steps" or ev.get("bad_batch"))}
    if "largest" in kept:
        kept["largest"] = [{k: item[k] for k in ("step", "ratio") if k in item} for item in kept["largest"]]
    return kept


class _Findings(list):
    """A run's stubs; remembers whether the links sorted them (the full report is then sorted too)."""

    __slots__ = ("resorted",)

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.resorted = False

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self.resorted = True
        super().sort(*args, **kwargs)


class _Stats:
    """The stats mirrors compare, read as a dict."""

    __slots__ = MIRROR_STATS

    def __init__(self, stats: dict[str, Any]) -> None:
        for k in MIRROR_STATS:
            setattr(self, k, stats.get(k))

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None) if key in MIRROR_STATS else None
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value


class Record:
    """A run as the cross-run work reads it (mirrors, naming, links): kept in the spool
    beside its report, read back where a pass needs it."""

    __slots__ = ("run", "sources", "formats", "points", "stats", "findings")

    frame = None  # renaming relabels no frame here: the full report's is relabelled when read back
    shift_profile = None  # read from the report when a link asks (`crosslinks`)

    def __init__(self, rep: RunReport) -> None:
        self.run, self.sources, self.formats, self.points = rep.run, tuple(rep.sources), tuple(rep.formats), rep.points
        self.stats = _Stats(rep.stats)
        self.findings: Any = _Findings([Stub(i, f) for i, f in enumerate(rep.findings) if f.kind in LINKED_KINDS])


def with_changes(rep: RunReport, rec: Record | None, name: str, resort: bool) -> RunReport:
    """The run's report with its final name and what the links changed on its record (None: nothing)."""
    if rep.run != name:
        rename_report(rep, name)
    else:
        rep.run = name  # the table's string, not one more copy of it
    if rec is None:
        if resort:
            rep.findings.sort(key=finding_order)
        return rep
    for s in rec.findings:
        if isinstance(s, Stub) and s.causes:
            f = rep.findings[s.origin]
            named = {c.cause for c in s.causes}  # put first by a link, in place of the finding's causes of those names
            f.causes = list(s.causes) + [c for c in f.causes if c.cause not in named]
    added = [s for s in rec.findings if not isinstance(s, Stub)]
    if added:
        rep.findings = rep.findings + added
    if resort or rec.findings.resorted:
        rep.findings.sort(key=finding_order)
    return rep


_NO_STATE = -(1 << 62)
"""`RunTable.group_state` of a run whose group has no state (far below any `~index`)."""


class RunTable:
    """A spooled sweep's runs as on-disk arrays (`spool.DiskArray`; the parent holds nothing a
    run): for run `k`, where its report and its record lie in the spool, its final name and
    (with a findings dataset) where its group's state lies (`~index` for a group's other runs,
    whose rows name the group but do not carry it)."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.report_at = spool.array()
        self.record_at = spool.array()
        self.names = spool.strings()
        self.group_state: DiskArray | None = None
        self.changed = spool.array()
        """1 where the links changed a run's record (else its report is read back alone)."""
        self.all_sorted = False
        """Every run's findings sorted by the links (shared outliers promoted somewhere)."""

    def __len__(self) -> int:
        return len(self.report_at)

    def add(self, rep: RunReport, rec: Record | None = None, name: str | None = None) -> int:
        """Spool a run's report and its record (`name`: its name for now, else the report's); its place."""
        self.report_at.append(self.spool.append(rep))
        self.record_at.append(self.spool.append(rec if rec is not None else Record(rep)))
        self.names.append(rep.run if name is None else name)
        self.changed.append(0)
        return len(self.report_at) - 1

    def add_state(self, at: int | None, runs: int) -> None:
        """The group state at spool index `at` is of the next `runs` runs (the first carries it);
        `at` None: their group has no state (one it cannot spell), yet each run keeps its place."""
        if self.group_state is None:
            self.group_state = self.spool.array()
        self.group_state.extend([_NO_STATE] * runs if at is None else [at] + [~at] * (runs - 1))

    def record(self, k: int) -> Record:
        rec: Record = self.spool[self.record_at[k]]
        rec.run = self.names[k]
        return rec

    def put_record(self, k: int, rec: Record) -> None:
        self.spool.replace(self.record_at[k], rec)
        self.changed[k] = 1

    def full(self, k: int) -> RunReport:
        """Run `k`'s report as it stands after the cross-run work."""
        rec = self.spool[self.record_at[k]] if self.changed[k] else None
        return with_changes(self.spool[self.report_at[k]], rec, self.names[k], self.all_sorted)

    def store(self, k: int, rep: RunReport) -> None:
        """Write back a report changed in full (ranks linked), and its record anew."""
        self.spool.replace(self.report_at[k], rep)
        self.spool.replace(self.record_at[k], Record(rep))  # nothing changed on it yet
        self.names[k] = rep.run
        self.changed[k] = 0

    def drop(self, gone: set[int]) -> None:
        """These runs go (mirrors dropped): each array written anew without them."""
        n = len(self)
        for name in ("report_at", "record_at", "group_state", "changed"):
            old = getattr(self, name)
            if old is not None:
                new = self.spool.array()
                new.extend(old[k] for k in range(n) if k not in gone)
                setattr(self, name, new)
        names = self.spool.strings()
        for k in range(n):
            if k not in gone:
                names.append(self.names[k])
        self.names = names

    def state_at(self, k: int) -> int | None:
        at = None if self.group_state is None else self.group_state[k]
        return None if at == _NO_STATE else at


class SpooledRuns(Sequence):
    """`Report.runs` of a spooled sweep: each run read back from disk when asked for, so a
    pass over the runs (an output written run by run) holds one report at a time. `order`:
    the table's places in this sequence's order (None: the table's own); `after`: what is
    done to each run read back (`check` checks it)."""

    def __init__(self, table: RunTable, order: Sequence[int] | DiskArray | None = None,
                 after: Callable[[RunReport], RunReport] | None = None) -> None:
        self.table, self.order, self.after = table, order, after
        self.spool = table.spool

    def place(self, i: int) -> int:
        """The table's place of this sequence's `i`th run."""
        return i if self.order is None else self.order[i]

    def __len__(self) -> int:
        return len(self.table) if self.order is None else len(self.order)

    def _read(self, k: int) -> RunReport:
        rep = self.table.full(k)
        return rep if self.after is None else self.after(rep)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._read(self.place(i))

    def __iter__(self) -> Iterator[RunReport]:
        for i in range(len(self)):
            yield self._read(self.place(i))

    def __bool__(self) -> bool:
        return len(self) > 0

    def name(self, i: int) -> str:
        return self.table.names[self.place(i)]

    def state_at(self, i: int) -> int | None:
        """Where the `i`th run's group state lies in the spool (see `RunTable`)."""
        return self.table.state_at(self.place(i))

    def view(self, order: Iterable[int]) -> "SpooledRuns":
        """The same runs in another order (positions into this sequence); the order is kept on disk."""
        places = self.spool.array()
        places.extend(self.place(i) for i in order)
        return SpooledRuns(self.table, places, self.after)

    def then(self, after: Callable[[RunReport], RunReport]) -> "SpooledRuns":
        """The same runs, each passed through `after` when read back."""
        first = self.after
        return SpooledRuns(self.table, self.order, after if first is None else (lambda r: after(first(r))))


def reordered(runs: Sequence, order: Sequence[int]) -> Sequence:
    """The runs in another order (positions into `runs`): for a spooled sweep a view that
    reads each run back when asked."""
    if isinstance(runs, SpooledRuns):
        return runs.view(order)
    return [runs[i] for i in order]


def by_name(runs: Sequence) -> Sequence:
    """The runs sorted by name, as the terminal and markdown reports list them: for a
    spooled sweep a view in that order that reads each run back when asked (sorting the
    runs themselves would read them all into memory at once), the order sorted on disk
    (`extsort`: the names are never all held)."""
    if isinstance(runs, SpooledRuns):
        return runs.view(i for _, i in sorted_keys(runs, (runs.name(i) for i in range(len(runs)))))
    return sorted(runs, key=lambda r: r.run)


def sorted_keys(runs: Sequence, keys: Iterable[Any]) -> Iterator[tuple[Any, int]]:
    """(key, position) of each run, sorted by key then position (a stable sort's order); `keys`
    gives each run's key in the runs' order. A spooled sweep's keys are sorted on disk."""
    pairs = ((key, i) for i, key in enumerate(keys))
    if isinstance(runs, SpooledRuns):
        from .extsort import sorted_pairs

        return sorted_pairs(pairs, runs.spool.folder)
    return iter(sorted(pairs))
