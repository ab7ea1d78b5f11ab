"""A training history saved as one JSON object of lists: `{"loss": [...], "val_loss": [...]}`.

What `json.dump(model.fit(...).history, f)` writes (Keras), and what many scripts save by
hand (`{"step_losses": [...], "epoch_losses": [...], "steps": [...], "epochs": [...]}`):
each key a metric, each list its values in order. A person reads the i-th value of a list
as the i-th point of that curve, so:

- the axis is the longest list's length N; a list of integers named as a counter
  (`steps`, `step`, `global_step`, `iterations`, ...) of that length gives its steps,
  else the index (0..N-1) does;
- a shorter list (one value an epoch beside one a step) is spread over the same axis,
  its i-th value at the end of its i-th share (`epoch_losses` of 100 beside 2,600 step
  losses: every 26th step); counters (`epochs`) are no metrics;
- nested objects give `outer/inner` names (`{"train": {"loss": [...]}}`); `null` and
  text in a list are "not logged" at that index; NaN and Infinity are kept.

Claimed from the first bytes: a `.json` file that opens an object whose first value is a
list.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError
from . import decoding
from .base import Importer, Table, long_table
from .csvlogs import read_bytes

_HEAD = re.compile(rb'^\s*\{\s*"[^"\\]{1,200}"\s*:\s*\[\s*(?:[-\d.NI\]]|null)')
"""An object whose first value is a list of numbers (or an empty list)."""
STEP_KEYS = ("global_step", "global_steps", "steps", "step", "iterations", "iteration", "iters", "iter",
             "updates", "num_updates", "timesteps", "samples")
EPOCH_KEYS = ("epochs", "epoch")


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def series_of(obj: dict, prefix: str = "") -> dict[str, list[float | None]]:
    """Every list of numbers in the object (nested objects give `outer/inner` names)."""
    out: dict[str, list[float | None]] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(series_of(value, f"{name}/"))
        elif isinstance(value, list) and value:
            nums = [_number(v) for v in value]
            if any(n is not None for n in nums):
                out[name] = nums
    return out


def _counter(values: list[float | None]) -> bool:
    """Whole numbers that never go back: a counter, not a metric."""
    if any(v is None or not math.isfinite(v) or v != int(v) for v in values):
        return False
    return all(b >= a for a, b in zip(values, values[1:]))


def history_long(series: dict[str, list[float | None]]):
    """The long frame of a history (see the module doc) and the name of the step list used."""
    counters = {k for k, v in series.items() if k.split("/")[-1].lower() in STEP_KEYS + EPOCH_KEYS and _counter(v)}
    metrics = {k: v for k, v in series.items() if k not in counters}
    if not metrics:
        return None, None
    n = max(len(v) for v in metrics.values())
    step_key = next((k for name in STEP_KEYS for k in sorted(counters)
                     if k.split("/")[-1].lower() == name and len(series[k]) == n), None)
    axis = np.asarray(series[step_key], dtype=np.int64) if step_key else np.arange(n, dtype=np.int64)
    steps, names, values = [], [], []
    for name, vals in metrics.items():
        k = len(vals)
        at = axis if k == n else axis[np.ceil((np.arange(k) + 1) * n / k).astype(np.int64) - 1]
        arr = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
        logged = np.array([v is not None for v in vals])
        steps.append(at[logged])
        values.append(arr[logged])
        names.extend([name] * int(logged.sum()))
    step = np.concatenate(steps)
    return long_table(step, [None] * step.size, names, np.concatenate(values)), step_key


class JsonHistoryImporter(Importer):
    """One JSON object of lists, a metric each (a Keras `history.history` dump and the like)."""

    name = "json_history"
    looks_for = "*.json holding one object of lists ({\"loss\": [...], \"val_loss\": [...]}: a Keras history)"

    def claims(self, path: Path, head: bytes) -> bool:
        return path.suffix.lower() == ".json" and bool(_HEAD.match(head.lstrip(b"\xef\xbb\xbf")))

    def read(self, path: Path) -> list[Table]:
        text = decoding.decode_file(path, read_bytes(path))
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise FormatError(path, f"not a whole JSON document ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(obj, dict):
            raise FormatError(path, "not a JSON object of lists")
        frame, step_key = history_long(series_of(obj))
        if frame is None:
            raise FormatError(path, "a JSON object with no list of numbers but counters")
        meta = {"step.from": step_key or "list index"}
        return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta=meta)]
