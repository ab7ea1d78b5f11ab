"""One line per finding, `PATH:STEP: CODE severity message`, sorted: the shape of ruff's concise
output and of compilers' diagnostics, so grep, editors and CI annotators read it as it is.

PATH is the file the run was read from (the run's folder when it came from several files); STEP is
the step a person would look at first, `-` for a finding tied to no step. Names and messages are
on one line whatever they hold (no control character, no newline).
"""
from __future__ import annotations

import io
import os
import re
from typing import TextIO

from ..model.report import Report, RunReport
from ..pipeline.runsummary import sorted_keys
from ..sanitize import shown

LINE = re.compile(r"^(?P<path>.+):(?P<step>\d+|-): (?P<code>[A-Z]+\d+) (?P<severity>[a-z]+) (?P<message>.*)$")
"""How a line parses (the path may hold colons: URLs; the step and code after the last one do not)."""


def run_path(run: RunReport) -> str:
    """The file a run was read from, or the folder holding all its files, else its name."""
    sources = [s for s in run.sources if s]
    if len(sources) == 1:
        return sources[0]
    if sources:
        try:
            return os.path.commonpath(sources)
        except ValueError:  # URLs and paths mixed
            return sources[0]
    return run.run


def _one_line(text: str) -> str:
    return " ".join(shown(str(text)).split())


def run_lines(run: RunReport) -> list[tuple]:
    """(path, step, code, severity, line) of each of the run's findings."""
    path = _one_line(run_path(run))
    rows = []
    for f in run.findings:
        step = f.anchor_step
        rows.append((path, -1 if step is None else step, f.code, f.severity,
                     f"{path}:{'-' if step is None else step}: {f.code} {f.severity} {_one_line(f.message)}"))
    return rows


def concise_lines(report: Report) -> list[str]:
    """Every line, sorted (all in memory: `write_concise` writes them a path at a time)."""
    return [row[-1] for row in sorted(row for run in report.runs for row in run_lines(run))]


def render_concise(report: Report) -> str:
    buf = io.StringIO()
    write_concise(report, buf)
    return buf.getvalue()


def write_concise(report: Report, out: TextIO) -> None:
    """The lines, sorted, written a path at a time: the runs are ordered by their path first
    (one pass; a spooled sweep's runs are read back one at a time, their paths sorted on
    disk), then the runs of each path are read again and their lines sorted. Lines sort by
    path first, so this is the order of all lines sorted at once, without them all in memory."""
    runs = report.runs
    rows: list[tuple] = []
    current = None
    for path, i in sorted_keys(runs, (_one_line(run_path(run)) for run in runs)):
        if path != current and rows:
            out.writelines(row[-1] + "\n" for row in sorted(rows))
            rows = []
        current = path
        rows += run_lines(runs[i])
    out.writelines(row[-1] + "\n" for row in sorted(rows))
