"""More shapes of a parsed metrics document, each turned into one `jsonhistory` already reads.

A person who opens these files sees curves at once; each is a shape a common writer leaves:

- numbers written as strings (`json.dump(history, f, default=str)` of NumPy floats, an exported
  `log_history` whose values are `"0.6874"`): read as the numbers they spell;
- x/y curves: a visdom window or a plotly figure (`{"data": [{"x": [...], "y": [...], "name": "loss"}]}`),
  a visdom line dump (`{"X": [...], "Y": [[...], ...], "legend": [...]}`), one `{"x": [...], "y": [...]}`
  named by the file; the x values are the steps;
- a list of points, `[[step, value], ...]` or TensorBoard's JSON download `[[wall, step, value], ...]`,
  one curve named by the file (`run-train-tag-epoch_loss.json`: the tag, `epoch_loss`);
- pandas tables, `to_json(orient="split")` (`columns`, `index`, `data`) and `orient="table"` (`schema`,
  `data` records): the table's records, in order;
- records keyed by their epoch inside each split, `{"train": {"0": {"loss": ..}}, "val": {...}}`: a
  record an epoch holding each split's values (`train/loss`, `val/loss`).

Anything else comes back unchanged. `claims` says, from a file's first bytes, whether one of these
shapes opens it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .csvlogs import named_measure, stem_name, tb_download_tag
from .scalarreprs import unwrap_value

_NUMBER_TEXT = re.compile(r"^\s*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|infinity)\s*$", re.I)
_INT_TEXT = re.compile(r"^\s*[-+]?\d+\s*$")
_XY_KEY = re.compile(r'"[xX]"\s*:\s*\[')
_REPR = r"(?:tf\.Tensor|tensor|Tensor|array|np\.\w+|numpy\.\w+|Decimal)\("
"""A scalar's repr opening a string (`"tf.Tensor(0.53, shape=(), dtype=float32)"`: `json.dump` of `str(t)`)."""
_QUOTED_NUMBER = re.compile(rf'[:\[,]\s*"\s*(?:[-+]?(?:\d|\.\d)|{_REPR})')
"""A document that holds a number in quotes somewhere (checked before walking it)."""

_HEADS = (
    re.compile(rb'^\s*\{\s*"[^"\\]{1,200}"\s*:\s*\[\s*"\s*(?:[-+]?(?:\d|\.\d)|' + _REPR.encode() + rb')'),  # {"loss": ["1.23", ...]}
    re.compile(rb'^\s*\[\s*\{\s*"[^"\\]{1,200}"\s*:\s*"\s*(?:[-+]?(?:\d|\.\d)|' + _REPR.encode() + rb')[^"]*"\s*[,}]'),  # [{"loss": "1.23", ...}]
    re.compile(rb'"[xX]"\s*:\s*\[\s*[-\d.]'),  # x/y curves anywhere in the head
    re.compile(rb'^\s*\[\s*\[\s*[-\d.]'),  # [[step, value], ...]
    re.compile(rb'^\s*\{\s*"(?:columns|index|schema)"\s*:\s*[\[{]'),  # pandas split / table
    re.compile(rb'^\s*\{\s*"[^"\\]{1,60}"\s*:\s*\{\s*"[A-Za-z_\- :]{0,20}\d+"\s*:\s*\{'),  # {"train": {"0": {...}}}
)


def claims(head: bytes) -> bool:
    """The head opens one of this module's shapes."""
    return any(h.search(head) if h.pattern.startswith(rb'"') else h.match(head) for h in _HEADS)


def normalise(obj: Any, path: Path, text: str | None = None) -> Any:
    """The document in a shape `jsonhistory` reads (see the module doc), or as it was."""
    if text is None or _QUOTED_NUMBER.search(text):
        obj = numbers_spelled(obj)
    xy = text is None or _XY_KEY.search(text) is not None  # walked only where an `x` key is written
    for shape in ((_xy_curves,) if xy else ()) + (_points_list, _pandas_records, _split_keyed_records):
        found = shape(obj, path)
        if found is not None:
            return found
    return obj


def numbers_spelled(obj: Any) -> Any:
    """Every string that spells a number or a scalar's repr, as that number (ints stay ints); the rest unchanged."""
    if isinstance(obj, str):
        if _NUMBER_TEXT.match(obj):
            return int(obj) if _INT_TEXT.match(obj) else float(obj)
        return unwrap_value(obj)  # `tensor(0.53, device='cuda:0')`: the number its repr holds
    if isinstance(obj, list):
        return [numbers_spelled(v) for v in obj]
    if isinstance(obj, dict):
        return {k: numbers_spelled(v) for k, v in obj.items()}
    return obj


def _numbers(v: Any) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)


def _axis(x: Any) -> bool:
    """Numbers that never go back: a curve's x axis (a shape's coordinates go back and forth)."""
    return _numbers(x) and all(b >= a for a, b in zip(x, x[1:]))


def _column(x: list, y: list) -> dict:
    """A curve's columns; x values that are no whole numbers (fractional epochs) give way to the index."""
    steps = [int(s) for s in x] if all(s == int(s) for s in x) else list(range(len(x)))
    return {"steps": steps, "values": list(y)}


_NAME_KEYS = ("name", "label", "legend", "title", "tag")


def _xy_curves(obj: Any, path: Path) -> dict | None:
    """x/y curves as `{name: {"steps": x, "values": y}}` (see the module doc); None when there are none."""
    found: dict[str, dict] = {}

    def walk(node: Any, parent: str, depth: int) -> None:
        if depth > 5:
            return
        if isinstance(node, dict):
            keys = {k.lower(): k for k in node if isinstance(k, str)}
            x, y = node.get(keys.get("x", "")), node.get(keys.get("y", ""))
            legend = node.get(keys.get("legend", ""))
            if _axis(x) and isinstance(y, list) and y and all(_numbers(r) for r in y) and isinstance(legend, list) \
                    and all(len(r) == len(legend) for r in y) and len(y) == len(x):  # visdom: Y rows, a value a legend entry
                for j, name in enumerate(legend):
                    found[str(name)] = _column(x, [r[j] for r in y])
                return
            if _axis(x) and _numbers(y) and len(x) == len(y):
                name = next((str(node[keys[k]]) for k in _NAME_KEYS if isinstance(node.get(keys.get(k, "")), str)), parent)
                found[name or _curve_name(path)] = _column(x, y)
                return
            for k, v in node.items():
                walk(v, str(k), depth + 1)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, parent if len(node) == 1 else f"{parent}/{i + 1}".lstrip("/"), depth + 1)

    walk(obj, "", 0)
    return found or None


def _points_list(obj: Any, path: Path) -> dict | None:
    """`[[step, value], ...]` or `[[wall, step, value], ...]` at the top: one curve named by the file."""
    if not (isinstance(obj, list) and len(obj) >= 2 and all(_numbers(p) and len(p) in (2, 3) for p in obj)):
        return None
    if len({len(p) for p in obj}) != 1:
        return None
    steps = [p[-2] for p in obj]
    if any(s != int(s) for s in steps) or any(b < a for a, b in zip(steps, steps[1:])):
        return None  # the x values are no steps that go forward: no curve this module names
    return {_curve_name(path): obj}


def _curve_name(path: Path) -> str:
    """The name a file gives its one curve: a TensorBoard download's tag, else what the file's name
    measures, else the file's name."""
    return tb_download_tag(path) or named_measure(path) or stem_name(path)


def _pandas_records(obj: Any, path: Path) -> list | None:
    """pandas `to_json(orient="split")` / `orient="table"` as a list of records in row order."""
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
        return None
    data, cols = obj["data"], obj.get("columns")
    if isinstance(cols, list) and all(isinstance(r, list) and len(r) == len(cols) for r in data):
        return [dict(zip((str(c) for c in cols), r)) for r in data]
    if isinstance(obj.get("schema"), dict) and all(isinstance(r, dict) for r in data):
        index = obj["schema"].get("primaryKey") or ["index"]
        return [{k: v for k, v in r.items() if k not in index} for r in data]
    return None


_KEY_NUMBER = re.compile(r"^(?P<pre>\D*?)(?P<n>\d+)$")


def _split_keyed_records(obj: Any, path: Path) -> list | None:
    """`{"train": {"0": {...}, "1": {...}}, "val": {...}}` (records keyed by their epoch in each split) as
    records, one an epoch, each holding its splits' records (`{"step": 0, "train": {...}, "val": {...}}`)."""
    if not isinstance(obj, dict) or len(obj) < 1:
        return None
    by_step: dict[int, dict] = {}
    for split, section in obj.items():
        if not isinstance(section, dict) or len(section) < 2:
            return None
        for key, rec in section.items():
            m = _KEY_NUMBER.match(str(key))
            if m is None or not isinstance(rec, dict) or not any(isinstance(v, (int, float)) for v in rec.values()):
                return None
            by_step.setdefault(int(m["n"]), {"step": int(m["n"])})[str(split)] = rec
    return [by_step[k] for k in sorted(by_step)]
