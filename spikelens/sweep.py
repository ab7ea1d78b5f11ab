"""Analyse many runs at once: groups of sources fan out to worker processes.

Each worker reads one group (one run, or the few runs that share files), analyses it
and sends back the reports; the parent keeps at most a few groups in flight, so a
sweep of a thousand runs never holds a thousand frames. Results come back in the
order discovery found them, so the report is the same on every machine.
"""
from __future__ import annotations

import multiprocessing
import os
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

from . import diagnostics
from .config import Config
from .discover import Source, read_group
from .frame import validate
from .model.report import RunReport

MIN_GROUPS_FOR_WORKERS = 4


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def analyze_group(group: list[Source], roots: list[Path], cfg: Config, detector_params: dict | None,
                  keep_frames: bool) -> tuple[list[RunReport], list[str]]:
    """Read and analyse one group; warnings are returned, not printed (they may come
    from a worker process)."""
    from .pipeline.run import analyze_run

    with diagnostics.collecting() as diag:
        reports = []
        for run in read_group(group, roots):
            validate(run.frame, f"import of {run.name}")
            rep = analyze_run(run, cfg, detector_params=detector_params)
            if not keep_frames:
                rep.frame = None
            reports.append(rep)
    return reports, diag.lines


def analyze_groups(groups: list[list[Source]], roots: list[Path], cfg: Config, *,
                   detector_params: dict | None = None, keep_frames: bool = True,
                   jobs: int | None = None,
                   progress: Callable[[str], None] | None = None) -> Iterator[tuple[list[RunReport], list[str]]]:
    """Yield (reports, warnings) per group, in discovery order."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if jobs == 1 or len(groups) < MIN_GROUPS_FOR_WORKERS:
        for g in groups:
            out = analyze_group(g, roots, cfg, detector_params, keep_frames)
            _tell(progress, out[0])
            yield out
        return
    # spawn, not fork: Polars' thread pool does not survive a fork
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        pending: deque[Future] = deque()
        it = iter(groups)
        for g in it:
            pending.append(pool.submit(analyze_group, g, roots, cfg, detector_params, keep_frames))
            if len(pending) >= 2 * jobs:
                break
        while pending:
            out = pending.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(analyze_group, nxt, roots, cfg, detector_params, keep_frames))
            _tell(progress, out[0])
            yield out


def _tell(progress: Callable[[str], None] | None, reports: list[RunReport]) -> None:
    if progress:
        for r in reports:
            progress(r.run)
