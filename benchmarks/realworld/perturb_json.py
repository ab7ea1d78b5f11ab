"""Invariance benchmark for JSON logs: a JSON history reads the same however it was dumped.

usage: python benchmarks/realworld/perturb_json.py [--sample N] [--seed S] [--only ID ...]
                                                   [--transforms T ...] [--max-lines N] [--show]

The JSON twin of `perturb_tables.py` (whose harness it runs): for each dev run whose files are all
`.json`/`.jsonl`, each transformation rewrites copies the way another script would have dumped the same
records: an array of records as JSON lines, numbers written as strings
(`json.dump(history, default=str)`, ms-swift's quoted dicts), an array of records under a key
(`{"history": [...]}`), a document indented or compacted, a log line before JSON lines, every object's
keys reversed or sorted (`sort_keys=True`), CRLF, a BOM.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perturb import bench  # noqa: E402
from perturb_tables import reading, write_copy  # noqa: E402

JSON = {".json", ".jsonl"}


def _parse(text: str) -> tuple[Any, bool] | None:
    """The document and whether it was JSON lines; None when it is neither."""
    try:
        return json.loads(text), False
    except ValueError:
        pass
    try:
        return [json.loads(ln) for ln in text.splitlines() if ln.strip()], True
    except ValueError:
        return None


def _records(obj: Any) -> bool:
    return isinstance(obj, list) and len(obj) > 1 and all(isinstance(x, dict) for x in obj)


def _strings(obj: Any) -> Any:
    """Every fractional number written as a string, as `default=str` leaves NumPy's floats or a quoting
    logger its values (the counts stay numbers)."""
    if isinstance(obj, dict):
        return {k: _strings(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_strings(v) for v in obj]
    return repr(obj) if isinstance(obj, float) else obj


def _nested(obj: Any) -> Any:
    """Records whose `a/b` keys are written as nested objects (`{"train": {"loss": ...}}`), as a logger of
    dicts of dicts leaves them."""
    if isinstance(obj, list):
        return [_nested(r) for r in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict = {}
    for k, v in obj.items():
        head, _, rest = str(k).partition("/")
        if rest and isinstance(out.setdefault(head, {}), dict) and rest not in out[head]:
            out[head][rest] = _nested(v)
        else:
            out[k] = _nested(v)
    return out


def _keys(obj: Any, order: Callable[[list], list]) -> Any:
    """Every object's keys in another order (`reversed`, or sorted as `json.dump(..., sort_keys=True)`
    writes them): the same records, whose reading must not hang on which key comes first."""
    if isinstance(obj, list):
        return [_keys(v, order) for v in obj]
    if isinstance(obj, dict):
        return {k: _keys(obj[k], order) for k in order(list(obj))}
    return obj


def _lines(records: list) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


REWRITES: dict[str, Callable[[Any, bool], str | None]] = {
    "as_lines": lambda obj, jl: _lines(obj) if not jl and _records(obj) else None,
    "strings": lambda obj, jl: _lines(_strings(obj)) if jl else json.dumps(_strings(obj)),
    "wrapped": lambda obj, jl: json.dumps({"history": obj}) if _records(obj) and not jl else None,
    "indented": lambda obj, jl: None if jl else json.dumps(obj, indent=4),
    "compact": lambda obj, jl: None if jl else json.dumps(obj, separators=(",", ":")),
    "nested": lambda obj, jl: (_lines(_nested(obj)) if jl else json.dumps(_nested(obj)))
    if any("/" in str(k) for r in (obj if isinstance(obj, list) else [obj]) if isinstance(r, dict) for k in r) else None,
    "log_line": lambda obj, jl: "2024-05-01 12:00:00 INFO training started\n" + _lines(obj) if jl else None,
    "keys_reversed": lambda obj, jl: _lines(_keys(obj, lambda k: k[::-1])) if jl else json.dumps(_keys(obj, lambda k: k[::-1])),
    "keys_sorted": lambda obj, jl: _lines(_keys(obj, sorted)) if jl else json.dumps(_keys(obj, sorted)),
}
BYTES: dict[str, Callable[[str], str]] = {"crlf": lambda t: t.replace("\n", "\r\n"), "bom": lambda t: "\ufeff" + t}


def rewrite(text: str, name: str) -> str | None:
    """The file dumped another way (`identity`: unchanged); None where the rewrite has no use for it."""
    if name == "identity":
        return text
    if name in BYTES:
        return BYTES[name](text)
    parsed = _parse(text)
    return None if parsed is None else REWRITES[name](*parsed)


if __name__ == "__main__":
    raise SystemExit(bench("json", JSON, [*REWRITES, *BYTES],
                           lambda run, root, name, n: write_copy(run, root, name, n, rewrite), reading, sample=0))
