"""What a sweep's parent keeps of each run while its reports wait on disk (`spool`).

While the cross-run work runs, a run is its name, sources, the stats mirrors compare and
one small stub per finding the links read (spikes and the other events of one loss,
outliers, level shifts): mirrors are dropped, runs named and linked (`explain.crossrun`)
on these summaries as on full reports. A data cause the links settle on a stub goes to
the spool at once. After the links (`settle`), a run is its spool index, its name and
where its changes lie; its full report is read back from the spool when an output asks,
with the name and the links' changes put on it (`SpooledRuns`). Issue 28: a sweep of
10^5 runs held ~12 KB of report a run, then ~3 KB of summary and data causes.

The links see a stub as they see a finding: kind, code, metric, steps, magnitude, the
evidence keys they read (`LINK_EVIDENCE`), and `causes`, which starts empty: a cause the
links put first on a stub replaces the finding's causes of that name, as it would have on
the finding. A finding the links add (a shared spike, a confirmed shift) is a real
finding, kept as it is; the links then sort the run's findings, and the full report's
findings are sorted the same way (a stable sort on the same key: the same order).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, Iterator

from ..model.finding import EVENT_KINDS, Finding
from ..model.report import Report, RunReport
from ..naming import rename_report
from .spool import Spool

LINK_EVIDENCE = ("steps", "bad_batch", "largest", "window_steps")
"""The evidence keys `explain.crossrun` reads (`steps` of a bad-batch finding only); an outlier's
`largest` items keep their step and ratio."""
LINKED_KINDS = frozenset(EVENT_KINDS) | {"outliers", "level_shift"}
"""The kinds `explain.crossrun` reads: spikes and outliers (shared steps), level shifts, and
the events of one loss that cover a step a shift is asked about."""
MIRROR_STATS = ("main_metric", "first_step", "last_step", "points", "first_value", "last_value")
"""The stats `explain.mirrors` compares."""
_EMPTY: Any = MappingProxyType({})  # read-only: the links never write a stub's evidence
_WORDS: dict = {}  # tuples of formats, held once


def _word(text: Any) -> Any:
    """A short name every run repeats (kind, code, metric, severity), held once (unpickled
    reports each bring their own copy)."""
    return sys.intern(text) if type(text) is str else text


def finding_order(f: Any) -> tuple:
    """The key `explain.crossrun` sorts a run's findings by when it adds one."""
    return (f.anchor_step if f.anchor_step is not None else -1, f.kind)


class Stub:
    """A finding as the cross-run links read it (`origin`: its place in the run's findings;
    `kept`: where its settled causes lie in the spool, -1 when none)."""

    __slots__ = ("origin", "kind", "code", "metric", "run", "severity", "recovery", "start_step", "peak_step",
                 "end_step", "magnitude", "evidence", "extra", "causes", "kept")

    anchor_step = Finding.anchor_step
    span = Finding.span

    def __init__(self, origin: int, f: Finding) -> None:
        self.origin, self.kept = origin, -1
        self.kind, self.code, self.metric, self.run = _word(f.kind), _word(f.code), _word(f.metric), f.run
        self.severity, self.recovery, self.magnitude = _word(f.severity), _word(f.recovery), f.magnitude
        self.start_step, self.peak_step, self.end_step = f.start_step, f.peak_step, f.end_step
        self.evidence = _link_evidence(f.evidence)
        resume = f.extra.get("resume_step")
        self.extra = _EMPTY if resume is None else MappingProxyType({"resume_step": resume})
        self.causes: Any = ()  # a list once a link puts a cause on it


def _link_evidence(ev: dict[str, Any]) -> Any:
    kept = {k: ev[k] for k in LINK_EVIDENCE if k in ev and (k != "steps" or ev.get("bad_batch"))}
    if not kept:
        return _EMPTY
    if "largest" in kept:
        kept["largest"] = [{k: item[k] for k in ("step", "ratio") if k in item} for item in kept["largest"]]
    return MappingProxyType(kept)


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
    """The stats mirrors compare, read as a dict (a third of one's size)."""

    __slots__ = MIRROR_STATS

    def __init__(self, stats: dict[str, Any]) -> None:
        for k in MIRROR_STATS:
            setattr(self, k, _word(stats.get(k)))

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None) if key in MIRROR_STATS else None
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value


class RunSummary:
    """A run as the cross-run work reads it; `index` is its report's place in the spool.
    `settle` drops what only the links read and keeps the links' changes: `edits`
    ((finding's place, spool index of its causes), ...), `added` (findings the links
    made) and `resorted`."""

    __slots__ = ("index", "run", "sources", "formats", "points", "stats", "findings", "edits", "added",
                 "resorted", "group_state", "_spool")

    frame = None  # renaming relabels no frame here: the full report's is relabelled when read back

    def __init__(self, index: int, rep: RunReport, spool: Spool) -> None:
        self.index, self.run, self._spool = index, rep.run, spool
        formats = tuple(rep.formats)
        self.sources, self.formats, self.points = tuple(rep.sources), _WORDS.setdefault(formats, formats), rep.points
        self.stats = _Stats(rep.stats)
        self.findings: Any = _stubs(rep)
        self.edits: tuple = ()
        self.added: tuple = ()
        self.resorted = False
        self.group_state: int | None = None
        """With a findings dataset: the spool index of its group's state (`~index` for the
        group's other runs, whose rows name the group but do not carry the state)."""

    @property
    def shift_profile(self) -> Any:
        """Read from the spool when a link asks (a shift several runs share: rare)."""
        return self._spool[self.index].shift_profile

    def settle(self) -> None:
        """After the links: keep only the name and where the changes lie."""
        if self.findings is None:
            return
        for s in self.findings:
            if isinstance(s, Stub):
                keep_causes(self._spool, s)
        self.edits = tuple((s.origin, s.kept) for s in self.findings if isinstance(s, Stub) and s.kept >= 0)
        self.added = tuple(s for s in self.findings if not isinstance(s, Stub))
        self.resorted = self.findings.resorted
        self.findings = self.sources = self.formats = self.stats = None

    def full(self) -> RunReport:
        """The run's report as it stands after the cross-run work."""
        rep: RunReport = self._spool[self.index]
        if rep.run != self.run:
            rename_report(rep, self.run)
        if self.findings is not None:  # before `settle`: the stubs say it
            stubs = [s for s in self.findings if isinstance(s, Stub)]
            edits = [(s.origin, s.kept, s.causes) for s in stubs if s.kept >= 0 or s.causes]
            added, resorted = [s for s in self.findings if not isinstance(s, Stub)], self.findings.resorted
        else:
            edits, added, resorted = [(o, k, None) for o, k in self.edits], list(self.added), self.resorted
        for origin, kept, causes in edits:
            f = rep.findings[origin]
            causes = causes or self._spool[kept]  # put first by a link, in place of the finding's causes of those names
            named = {c.cause for c in causes}
            f.causes = list(causes) + [c for c in f.causes if c.cause not in named]
        if added:
            rep.findings = rep.findings + added
        if resorted:
            rep.findings.sort(key=finding_order)
        return rep

    def store(self, rep: RunReport) -> None:
        """Write back a report changed in full (ranks linked), and summarise it again."""
        self._spool.replace(self.index, rep)
        self.run = rep.run
        self.findings = _stubs(rep)


def keep_causes(spool: Spool, f: Any) -> None:
    """A stub's causes are final (the links settled them): to the spool, out of memory. A
    finding the links made keeps its causes (it is held whole anyway)."""
    if isinstance(f, Stub) and f.causes:
        f.kept = spool.append(f.causes)
        f.causes = ()


def _stubs(rep: RunReport) -> _Findings:
    return _Findings([Stub(i, f) for i, f in enumerate(rep.findings) if f.kind in LINKED_KINDS])


class SpooledRuns(Sequence):
    """`Report.runs` of a spooled sweep: each run read back from disk when asked for, so a
    pass over the runs (an output written run by run) holds one report at a time."""

    def __init__(self, spool: Spool, summaries: list[RunSummary]) -> None:
        self.spool, self.summaries = spool, summaries

    def __len__(self) -> int:
        return len(self.summaries)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [s.full() for s in self.summaries[i]]
        return self.summaries[i].full()

    def __iter__(self) -> Iterator[RunReport]:
        for s in self.summaries:
            yield s.full()

    def __bool__(self) -> bool:
        return bool(self.summaries)

    def view(self, order: Sequence[int]) -> "SpooledRuns":
        """The same runs in another order (positions into this sequence)."""
        return SpooledRuns(self.spool, [self.summaries[i] for i in order])


def reordered(runs: Sequence, order: Sequence[int]) -> Sequence:
    """The runs in another order (positions into `runs`): for a spooled sweep a view that
    reads each run back when asked."""
    if isinstance(runs, SpooledRuns):
        return runs.view(order)
    return [runs[i] for i in order]


def by_name(runs: Sequence) -> Sequence:
    """The runs sorted by name, as the terminal and markdown reports list them: for a
    spooled sweep a view in that order that reads each run back when asked (sorting the
    runs themselves would read them all into memory at once)."""
    if isinstance(runs, SpooledRuns):
        return SpooledRuns(runs.spool, sorted(runs.summaries, key=lambda s: s.run))
    return sorted(runs, key=lambda r: r.run)


def summaries_report(report: Report, summaries: list[RunSummary]) -> Report:
    """A report whose runs are the summaries (what mirrors, naming and links work on)."""
    return Report(command=report.command, runs=summaries)  # type: ignore[arg-type]
