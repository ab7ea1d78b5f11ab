"""`--format json`: the public contract in findings-contract.md (schema spikelens.report/1)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..model.finding import _clean
from ..model.report import SCHEMA_ID, Report

if TYPE_CHECKING:
    from ..check import CheckResult


def report_dict(report: Report) -> dict[str, Any]:
    return {
        "schema": SCHEMA_ID,
        "command": report.command,
        "runs": [
            {
                "run": r.run,
                "sources": r.sources,
                "formats": r.formats,
                "points": r.points,
                "segments": [_segment(s) for s in r.segments],
                "metrics": r.metrics,
                "stats": _clean(r.stats),
                "findings": [f.to_json() for f in r.findings],
            }
            for r in report.runs
        ],
        "warnings": list(report.warnings),
    }


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
