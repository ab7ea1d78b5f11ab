"""What a sweep's parent keeps of each run while its reports wait on disk (`spool`): the
run's name, sources and the few numbers the cross-run work reads, and one small stub per
finding. Mirrors are dropped, runs named and linked (`explain.crossrun`) on these
summaries as on full reports; a run's full report is read back from the spool when an
output asks for it, with the summary's name and the links' changes put on it
(`SpooledRuns`). The parent then holds a few hundred bytes a run, not its report (issue
28: a sweep of 10^5 runs held ~12 KB of report a run).

The links see a stub as they see a finding: kind, code, metric, steps, magnitude, the
evidence keys they read (`LINK_EVIDENCE`), and `causes`, which starts empty: a cause the
links put first on a stub replaces the finding's causes of that name, as it would have
on the finding. A finding the links add (a shared spike, a confirmed shift) is a real
finding, kept as it is. The stubs' order after linking is the findings' order.
"""
from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, Iterator

from ..model.finding import Finding
from ..model.report import Report, RunReport
from ..naming import rename_report
from .spool import Spool

LINK_EVIDENCE = ("steps", "bad_batch", "largest", "window_steps")
"""The evidence keys `explain.crossrun` reads (`steps` of a bad-batch finding only); an outlier's
`largest` items keep their step and ratio."""
MIRROR_STATS = ("main_metric", "first_step", "last_step", "points", "first_value", "last_value")
"""The stats `explain.mirrors` compares."""
_EMPTY: Any = MappingProxyType({})  # read-only: the links never write a stub's evidence


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
        self.extra = _EMPTY if resume is None else MappingProxyType({"resume_step": resume})
        self.causes: list = []


def _link_evidence(ev: dict[str, Any]) -> Any:
    kept = {k: ev[k] for k in LINK_EVIDENCE if k in ev and (k != "steps" or ev.get("bad_batch"))}
    if not kept:
        return _EMPTY
    if "largest" in kept:
        kept["largest"] = [{k: item[k] for k in ("step", "ratio") if k in item} for item in kept["largest"]]
    return MappingProxyType(kept)


class _Stats:
    """The stats mirrors compare, read as a dict (a sixth of one's size)."""

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


class RunSummary:
    """A run as the cross-run work reads it; `index` is its report's place in the spool."""

    __slots__ = ("index", "run", "sources", "formats", "points", "stats", "findings", "_spool")

    frame = None  # renaming relabels no frame here: the full report's is relabelled when read back

    def __init__(self, index: int, rep: RunReport, spool: Spool) -> None:
        self.index, self.run, self._spool = index, rep.run, spool
        self.sources, self.formats, self.points = tuple(rep.sources), tuple(rep.formats), rep.points
        self.stats = _Stats(rep.stats)
        self.findings: list = [Stub(i, f) for i, f in enumerate(rep.findings)]

    @property
    def shift_profile(self) -> Any:
        """Read from the spool when a link asks (a shift several runs share: rare)."""
        return self._spool[self.index].shift_profile

    def full(self) -> RunReport:
        """The run's report as it stands after the cross-run work."""
        rep: RunReport = self._spool[self.index]
        if rep.run != self.run:
            rename_report(rep, self.run)
        findings = []
        for s in self.findings:
            if isinstance(s, Stub):
                f = rep.findings[s.origin]
                if s.causes:  # put first by a link, in place of the finding's causes of those names
                    named = {c.cause for c in s.causes}
                    f.causes = list(s.causes) + [c for c in f.causes if c.cause not in named]
                findings.append(f)
            else:  # a finding a link added
                findings.append(s)
        rep.findings = findings
        return rep

    def store(self, rep: RunReport) -> None:
        """Write back a report changed in full (ranks linked), and summarise it again."""
        self._spool.replace(self.index, rep)
        self.run = rep.run
        self.findings = [Stub(i, f) for i, f in enumerate(rep.findings)]


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
