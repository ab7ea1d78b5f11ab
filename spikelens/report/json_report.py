"""`--format json`: the public contract in findings-contract.md (schema spikelens.report/1)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from ..model.finding import _clean
from ..model.report import SCHEMA_ID, Report, RunReport

if TYPE_CHECKING:
    from ..check import CheckResult


def report_dict(report: Report) -> dict[str, Any]:
    return {
        "schema": SCHEMA_ID,
        "command": report.command,
        "runs": [_run(r) for r in report.runs],
        "warnings": list(report.warnings),
    }


def _run(r: RunReport) -> dict[str, Any]:
    return {
        "run": r.run,
        "sources": r.sources,
        "formats": r.formats,
        "points": r.points,
        "segments": [_segment(s) for s in r.segments],
        "metrics": r.metrics,
        "stats": _clean(r.stats),
        "findings": [f.to_json() for f in r.findings],
    }


def write_json(report: Report, out: TextIO) -> None:
    """`render_json(report)` and a newline, written a run at a time: the same bytes, without
    the whole report as one dict and one string beside the report itself (a sweep's parent
    held three times its reports while rendering; issue 28). `json.dumps` escapes newlines
    inside strings, so every newline of a run's text is layout, indented one level deeper."""
    out.write(f'{{\n "schema": {json.dumps(SCHEMA_ID)},\n "command": {json.dumps(report.command)},\n "runs": ')
    if not report.runs:
        out.write("[]")
    else:
        for i, r in enumerate(report.runs):
            out.write(",\n  " if i else "[\n  ")
            out.write(json.dumps(_run(r), indent=1, allow_nan=False).replace("\n", "\n  "))
        out.write("\n ]")
    warnings = json.dumps(list(report.warnings), indent=1, allow_nan=False).replace("\n", "\n ")
    out.write(f',\n "warnings": {warnings}\n}}\n')


def _segment(s: dict[str, Any]) -> dict[str, Any]:
    keys = ("segment", "source", "first_step", "last_step", "points", "superseded",
            "first_wall_time", "last_wall_time", "step_offset", "launch")
    return _clean({k: s[k] for k in keys if k in s})


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=1, allow_nan=False)


def check_report_dict(result: CheckResult, exit_code: int | None = None) -> dict[str, Any]:
    """The analyze report object (contract spikelens.report/1) plus `check`, and a `gate`
    object on every finding."""
    out = report_dict(result.report)
    for run, data in zip(result.report.runs, out["runs"]):
        for f, fd in zip(run.findings, data["findings"]):
            fd["gate"] = result.gate(f).to_json()
    out["check"] = result.to_json(exit_code)
    return out
