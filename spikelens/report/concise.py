"""One line per finding, `PATH:STEP: CODE severity message`, sorted: the shape of ruff's concise
output and of compilers' diagnostics, so grep, editors and CI annotators read it as it is.

PATH is the file the run was read from (the run's folder when it came from several files); STEP is
the step a person would look at first, `-` for a finding tied to no step. Names and messages are
on one line whatever they hold (no control character, no newline).
"""
from __future__ import annotations

import os
import re

from ..model.report import Report, RunReport
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


def concise_lines(report: Report) -> list[str]:
    rows = []
    for run in report.runs:
        path = _one_line(run_path(run))
        for f in run.findings:
            step = f.anchor_step
            rows.append((path, -1 if step is None else step, f.code, f.severity,
                         f"{path}:{'-' if step is None else step}: {f.code} {f.severity} {_one_line(f.message)}"))
    return [row[-1] for row in sorted(rows)]


def render_concise(report: Report) -> str:
    lines = concise_lines(report)
    return "".join(line + "\n" for line in lines)
