"""The one entry point of an analysis over many runs: discover the groups of sources,
fan them out on an executor (each group: read, stitch, detect, explain), link the runs
(same-step spikes, shared level shifts) on the collected compact reports, and with a
findings dataset keep the findings as data and skip the groups that did not change.
"""
from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .. import diagnostics, findings_data, storage
from ..outputs import refuse_overlap
from ..config import Config
from ..discover import Run, source_groups
from ..errors import OutputOverlap, UsageError
from ..explain.crossrun import link_runs
from ..explain.mirrors import drop_mirrors
from ..model.report import Report, RunReport
from ..naming import rename_reports
from . import incremental
from .executors import execute
from .progress import as_progress
from .run import analyze_group, report_run
from .crosslinks import Gathered, cross_run
from .runsummary import RunTable, SpooledRuns
from .spool import PREFIX, Spool

SPOOL_FROM = 64
"""A sweep of this many groups or more keeps its reports on disk when the caller lets it
(`spool=True`): its parent then holds a few numbers and the name of each run, not its report."""
SPOOL_ENV = "SPIKELENS_SPOOL_DIR"
"""The folder a spooled sweep keeps its reports in (a private folder made inside it), before
the caller's choice and the system's temporary folder: a sweep's reports, frames included
with `--html`, may not fit a small /tmp."""


def analyze_roots(roots: list[Path], cfg: Config, *, detector_params: dict | None = None,
                  executor: str = "local", jobs: int | None = None,
                  progress: Callable[[str], None] | None = None, keep_frames: bool = True,
                  findings: Path | None = None, spool: bool | Path = False) -> Report:
    """Report every run under the roots. With `findings`, write the findings dataset, and
    reuse the reports of groups whose files have not changed since it was written (only
    when no frames are wanted: a reused run has none). With `spool`, a sweep of
    `SPOOL_FROM` groups or more keeps its reports in a temporary file: `report.runs` is
    then a sequence that reads each run back when asked (`runsummary.SpooledRuns`), for
    callers that go over the runs and let each go (the CLI's outputs). `spool` may name
    the folder to keep it in (next to an output file); `SPIKELENS_SPOOL_DIR` comes first,
    the system's temporary folder last. The spool is removed when the report is let go,
    at exit, or at once when the sweep fails or is interrupted."""
    if findings is not None:
        refuse_overlap(findings, roots, "--findings")  # the user's logs: never written, never removed
        _cache_outside(roots)
    if spool is not False:
        spool = spool_folder(spool, roots)
    return _sweep(roots, cfg, detector_params, executor, jobs, progress, keep_frames, findings, spool)


def spool_folder(spool: bool | Path, roots: list[Path]) -> Path | None:
    """Where a spool is made: `SPIKELENS_SPOOL_DIR`, else the folder the caller names (next
    to an output file) unless it is a log folder, else None (the system's temporary folder).
    The spool's own folder is never inside the logs, nor beside a log file read."""
    named = os.environ.get(SPOOL_ENV)
    if named:
        refuse_overlap(Path(named) / PREFIX, roots, SPOOL_ENV, near_files=True)
        return Path(named)
    if isinstance(spool, Path):
        try:
            refuse_overlap(spool / PREFIX, roots, "the spool", near_files=True)
        except OutputOverlap:  # an output beside the logs: the temporary folder instead
            return None
        return spool
    return None


def _sweep(roots: list[Path], cfg: Config, detector_params: dict | None, executor: str, jobs: int | None,
           progress: Callable[[str], None] | None, keep_frames: bool, findings: Path | None,
           spool: bool | Path | None) -> Report:
    report = Report(command="analyze")
    # with a dataset, object storage is copied into the cache and kept: the next sweep fetches what changed
    # sweeps into one folder dataset run one after the other (its lock)
    with diagnostics.collecting() as diag, findings_data.locked(findings), \
            storage.kept_copies() if findings else nullcontext():
        # on disk past a few thousand sources (`groupindex`), read back a group at a time
        found = source_groups(roots, spool=spool if isinstance(spool, Path) else None)
        n_groups = len(found)
        tell = as_progress(progress)
        if tell:
            tell.start(n_groups)
        settings = incremental.settings(cfg, detector_params, roots) if findings else ""
        spooled = _spool_in(spool) if spool is not False and n_groups >= SPOOL_FROM else None
        gathered = Gathered(RunTable(spooled)) if spooled is not None else None
        try:
            # a spooled sweep keeps the previous sweep's states (bytes and decoded reports) on disk
            before, hashes = (incremental.previous(findings, settings, None if keep_frames else spooled)
                              if findings else ({}, {}))
            if keep_frames:
                before = {}
            # each group's key and fingerprint, and whether it is analysed again: on disk when spooled
            keys, prints, todo = _plan(found, before, findings is not None, spooled)
            fresh = execute(executor, analyze_group, _HandedOut(found, todo),
                            (roots, cfg, detector_params, keep_frames), jobs)
            states: dict[str, tuple[findings_data.GroupState, list[RunReport]]] = {}
            for i in range(n_groups):
                if todo[i]:
                    reports, warnings = next(fresh)
                    kept = incremental.keep(keys[i], prints[i], settings, reports, warnings) if findings else None
                else:
                    kept = before.pop(keys[i])  # the parent lets it go once written
                    reports, warnings = incremental.restore(kept)
                if tell:
                    tell.advance(reports, len(warnings))
                if gathered is not None:  # each run's report and record to disk, a few numbers kept
                    table = gathered.table
                    if findings and reports:  # the group's state waits on disk; its runs know where (or
                        # that it has none: every run keeps its place in the table)
                        table.add_state(None if kept is None else spooled.append(kept.bare()),  # type: ignore[union-attr]
                                        len(reports))
                    for k in range(len(reports)):
                        gathered.add(reports[k])
                        reports[k] = None  # type: ignore[call-overload]  # on disk: let go
                    reports = []
                elif kept is not None:
                    states[keys[i]] = (kept, reports)
                report.runs.extend(reports)
                for line in warnings:
                    diagnostics.warn(line)
            del keys, prints, todo
            found.close()
            if gathered is not None:
                cross_run(gathered)
                report.runs = SpooledRuns(gathered.table)  # type: ignore[assignment]
                del gathered
            else:
                _cross_run(report)
            if findings:  # still collecting: a damaged partition replaced is a warning of this sweep
                findings_data.write(findings, findings_data.row_chunks(report, states), hashes)  # streamed
        except BaseException:  # an error, Ctrl-C or SIGTERM: the spool goes now, not at exit
            found.close()
            if spooled is not None:
                spooled.close()
            raise
    report.warnings = diag.lines
    return report


def _spool_in(folder: Path | None) -> Spool:
    try:
        return Spool(folder)
    except OSError as exc:
        where = folder if folder is not None else "the temporary folder"
        raise UsageError(f"{where}: cannot keep the sweep's reports there ({exc.strerror or exc}); "
                         f"set {SPOOL_ENV} to another folder") from None


def _plan(found: Any, before: Any, findings: bool, spooled: Spool | None) -> tuple[Any, Any, Any]:
    """Each group's key and fingerprint (with a findings dataset) and whether it is analysed
    (1) or comes back from the dataset (0), by group: kept in the spool's files when there
    is one (no list of 10^5 paths), else in lists. Without a dataset every group is analysed
    and nothing is kept."""
    if not findings:
        return (), (), _All()
    keys: Any = spooled.strings() if spooled is not None else []
    prints: Any = spooled.strings() if spooled is not None else []
    todo: Any = spooled.array() if spooled is not None else []
    for group in found:
        key, fp = incremental.group_key(group), incremental.fingerprint(group)
        kept = before.get(key) if before else None
        keys.append(key)
        prints.append(fp)
        todo.append(0 if kept is not None and kept.fingerprint == fp else 1)
    return keys, prints, todo


class _All:
    """Every group is analysed (no dataset to reuse from)."""

    def __getitem__(self, i: int) -> int:
        return 1


class _HandedOut:
    """The groups to analyse, read from discovery's groups as an executor takes them (the
    parent never holds a list of every group's sources); sized, as the executors ask."""

    def __init__(self, found: Any, todo: Any) -> None:
        self.found, self.todo = found, todo
        self.n = len(found) if isinstance(todo, _All) else sum(1 for t in todo if t)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Any]:
        for i, group in enumerate(self.found):
            if self.todo[i]:
                yield group


def analyze_runs(runs: Iterable[Run], cfg: Config, *, detector_params: dict | None = None,
                 progress: Callable[[str], None] | None = None, keep_frames: bool = True) -> Report:
    """Report runs the caller already holds in memory (no files to discover, group or fan
    out): each analysed as a sweep analyses a run, then linked as a sweep links its runs."""
    report = Report(command="analyze")
    tell = as_progress(progress)
    if tell and hasattr(runs, "__len__"):
        tell.start(len(runs))
    with diagnostics.collecting() as diag:
        for run in runs:
            rep = report_run(run, cfg, detector_params, keep_frames)
            report.runs.append(rep)
            if tell:
                tell.advance([rep], 0)
        link_runs(report)
    report.warnings = diag.lines
    return report


def _cross_run(report: Report) -> None:
    """Mirrors dropped, names made unique, runs linked, on the reports held in memory (a
    spooled sweep does the same on its arrays and records: `crosslinks`)."""
    drop_mirrors(report)  # one training written by two writers (metrics.json + events) is one run
    rename_reports(report.runs)  # names unique among all the runs (see naming)
    link_runs(report)


def _cache_outside(roots: list[Path]) -> None:
    """Kept copies of object storage are never written into a local folder analysed
    alongside (the next sweep would read them twice)."""
    if not any(storage.protocol(storage.unmangle(str(r))) for r in roots):
        return
    cache = storage.cache_dir().resolve()
    root = _root_holding(cache, roots)
    if root is not None:
        raise UsageError(f"the object-storage cache {cache} is inside {root}, a folder being analysed; "
                         f"set {storage.CACHE_ENV} to a folder elsewhere")


def _root_holding(path: Path, roots: list[Path]) -> Path | None:
    """The first folder among the roots that is `path` or holds it."""
    where = path.resolve()
    for root in roots:
        base = root.resolve()
        if root.is_dir() and (where == base or base in where.parents):
            return root
    return None
