"""`--format json`: the public contract in findings-contract.md (schema spikelens.report/1)."""
from __future__ import annotations

import json
from typing import Any

from ..detect.finding import _clean
from .model import SCHEMA_ID, Report


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
