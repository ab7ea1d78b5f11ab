"""`--format json`: the public contract in findings-contract.md (schema spikelens.report/1)."""
from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any, Callable, TextIO

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


def write_json(report: Report, out: TextIO, *, run_json: Callable[[RunReport], dict] | None = None,
               after: Callable[[TextIO], None] | None = None) -> None:
    """`render_json(report)` and a newline, written a run at a time: the same bytes, without
    the whole report as one dict and one string beside the report itself (a sweep's parent
    held three times its reports while rendering; issue 28). `json.dumps` escapes newlines
    inside strings, so every newline of a run's text is layout, indented one level deeper.
    `run_json` makes a run's object (`check` adds gates), `after` writes more members after
    `warnings` (`check`'s own object)."""
    run_json = run_json or _run
    out.write(f'{{\n "schema": {json.dumps(SCHEMA_ID)},\n "command": {json.dumps(report.command)},\n "runs": ')
    if not report.runs:
        out.write("[]")
    else:
        for i, r in enumerate(report.runs):
            out.write(",\n  " if i else "[\n  ")
            out.write(indented(run_json(r), "\n  "))
        out.write("\n ]")
    warnings = json.dumps(list(report.warnings), indent=1, allow_nan=False).replace("\n", "\n ")
    out.write(f',\n "warnings": {warnings}')
    if after is not None:
        after(out)
    out.write("\n}\n")


def indented(obj: Any, newline: str = "\n") -> str:
    """`json.dumps(obj, indent=1, allow_nan=False)`, each newline written as `newline`, for the
    JSON-safe values `_clean` makes (dicts with string keys, lists, strings, numbers, booleans,
    None). An indented `json.dumps` runs the pure-Python encoder, whose nested functions refer
    to each other: every call leaves a ~16 KB cycle only the garbage collector frees (200 runs
    written: 6,600 objects of such garbage), and a sweep's parent, holding many long-lived
    objects, runs a full collection rarely. This writes the same text with no such cycle."""
    parts: list[str] = []
    _indent(obj, newline, parts)
    return "".join(parts)


def _indent(obj: Any, nl: str, parts: list[str]) -> None:
    if isinstance(obj, str):
        parts.append(encode_basestring_ascii(obj))
    elif obj is None or obj is True or obj is False:
        parts.append("null" if obj is None else "true" if obj else "false")
    elif isinstance(obj, int):
        parts.append(int.__repr__(obj))
    elif isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            raise ValueError(f"Out of range float values are not JSON compliant: {obj!r}")
        parts.append(float.__repr__(obj))
    elif isinstance(obj, dict):
        if not obj:
            parts.append("{}")
            return
        inner = nl + " "
        for i, (k, v) in enumerate(obj.items()):
            parts.append(("," if i else "{") + inner + encode_basestring_ascii(_key(k)) + ": ")
            _indent(v, inner, parts)
        parts.append(nl + "}")
    elif isinstance(obj, (list, tuple)):
        if not obj:
            parts.append("[]")
            return
        inner = nl + " "
        for i, v in enumerate(obj):
            parts.append(("," if i else "[") + inner)
            _indent(v, inner, parts)
        parts.append(nl + "]")
    else:
        parts.append(json.dumps(obj, allow_nan=False))  # anything else as json.dumps writes it (or refuses it)


def _key(k: Any) -> str:
    """A dict key as json.dumps writes it (it turns numbers, booleans and None into strings)."""
    if isinstance(k, str):
        return k
    if k is None or k is True or k is False:
        return "null" if k is None else "true" if k else "false"
    return int.__repr__(k) if isinstance(k, int) else float.__repr__(k) if isinstance(k, float) else str(k)


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


def write_check_json(result: CheckResult, out: TextIO, exit_code: int | None = None) -> None:
    """`json.dumps(check_report_dict(result, exit_code), indent=1)` and a newline, written a run
    at a time (the report's runs, then the `check` object's `runs`): a spooled sweep's runs are
    read back and checked one at a time, never held."""
    def run_json(r: RunReport) -> dict[str, Any]:
        data = _run(r)
        for f, fd in zip(r.findings, data["findings"]):
            fd["gate"] = result.gate(f).to_json()
        return data

    def check(out: TextIO) -> None:
        head = indented(result.json_head(exit_code), "\n ")
        out.write(',\n "check": ' + head[: -len("\n }")] + ',\n  "runs": ')
        first = True
        for item in result.json_runs():
            out.write("[\n   " if first else ",\n   ")
            out.write(indented(item, "\n   "))
            first = False
        out.write("[]" if first else "\n  ]")
        out.write("\n }")

    write_json(result.report, out, run_json=run_json, after=check)
