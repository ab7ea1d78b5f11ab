"""`spikelens check --format github`: GitHub Actions workflow commands, one line per finding.

A finding that fails the gate becomes `::error`; the others `::warning` or `::notice`
by severity; baselined ones are left out (they are known). `file=` is the run's first
source, relative to the working directory (the workspace in a job) when it is under it,
so the annotation links to the log. Escaping follows `@actions/core` (`%`, CR, LF in the
message; also `:` and `,` in properties).
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TextIO

from ..check import CheckResult, Gate
from ..model.report import RunReport

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_file(run: RunReport, cwd: Path | None = None) -> str | None:
    """The run's first source, relative to `cwd` when under it, with forward slashes."""
    if not run.sources:
        return None
    src = Path(run.sources[0])
    base = (cwd or Path.cwd()).resolve()
    try:
        src = src.resolve().relative_to(base)
    except (ValueError, OSError):
        pass
    return src.as_posix() if os.sep == "/" else str(src).replace(os.sep, "/")


def annotation(gate: Gate, run: RunReport, cwd: Path | None = None) -> str:
    """One workflow command for one finding."""
    f = gate.finding
    level = "error" if gate.fails else LEVEL.get(f.severity, "notice")
    where = f" in {f.metric}" if f.metric else ""
    step = f.anchor_step
    title = f"spikelens {f.code} {f.kind}{where}" + (f" at step {step}" if step is not None else "")
    props = [f"title={escape_property(title)}"]
    path = annotation_file(run, cwd)
    if path:
        props.insert(0, f"file={escape_property(path)}")
    text = f"run {run.run}: {f.message} [{gate.reason}]"
    return f"::{level} {','.join(props)}::{escape_data(text)}"


def render_github(result: CheckResult, cwd: Path | None = None) -> str:
    """Every annotation line (ends with a newline; empty when there is nothing to say)."""
    buf = io.StringIO()
    write_github(result, buf, cwd)
    return buf.getvalue()


def write_github(result: CheckResult, out: TextIO, cwd: Path | None = None) -> None:
    """`render_github`, written a run at a time (a spooled sweep's runs are read back one at a time)."""
    for run in result.report.runs:
        out.writelines(annotation(g, run, cwd) + "\n" for g in result.run_gates(run) if g.status != "baselined")
