"""LLaMA-Factory `trainer_log.jsonl`: one JSON object per logging step.

LLaMA-Factory's `LogCallback` (`src/llamafactory/train/callbacks.py`) appends
`{"current_steps", "total_steps", "loss", "lr", "epoch", "percentage", "elapsed_time",
"remaining_time"}` (plus `eval_loss`, `reward`, `accuracy` ... when there are any) to
`output_dir/trainer_log.jsonl`. `current_steps` is the optimizer step; `total_steps` is the
plan (kept as `plan_steps` in the run's meta, not as a metric), `percentage` restates it.
`elapsed_time` (`H:MM:SS`, or `N day(s), H:MM:SS`) counts from the launch: it becomes the
wall-time column (seconds since the launch started, not Unix time), so a relaunch that
appends to the same file shows as the clock starting again.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import diagnostics
from .base import Importer, Table
from .csvlogs import decode, head_lines, read_bytes
from .wandb_exports import parse_jsonl, rows_to_long

STEP_KEY = "current_steps"
PLAN_KEY = "total_steps"
ELAPSED_KEY = "elapsed_time"
NOT_METRICS = (PLAN_KEY, "percentage", "remaining_time", ELAPSED_KEY)
_ELAPSED = re.compile(r"^\s*(?:(?P<days>\d+)\s+days?,\s*)?(?P<h>\d+):(?P<m>\d{1,2}):(?P<s>\d{1,2}(?:\.\d+)?)\s*$")


def elapsed_seconds(text: Any) -> float | None:
    """`0:02:13` → 133.0, `1 day, 0:08:23` → 86903.0; anything else None."""
    if not isinstance(text, str):
        return None
    m = _ELAPSED.match(text)
    if not m:
        return None
    days = int(m.group("days") or 0)
    return days * 86400.0 + int(m.group("h")) * 3600.0 + int(m.group("m")) * 60.0 + float(m.group("s"))


def _is_trainer_log(line: str) -> bool:
    return line.lstrip().startswith("{") and f'"{STEP_KEY}"' in line and f'"{PLAN_KEY}"' in line


class LlamaFactoryImporter(Importer):
    """`trainer_log.jsonl` written by LLaMA-Factory (any name: recognised by its keys)."""

    name = "llamafactory"
    looks_for = "LLaMA-Factory trainer_log.jsonl (current_steps, total_steps, loss ...)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in (".jsonl", ".json"):
            return False
        lines = head_lines(path, head, 3)  # a line a wrapper printed before the records (a banner) is no record
        first = next((ln for ln in lines if ln.lstrip().startswith("{")), None)
        return first is not None and _is_trainer_log(first)

    def read(self, path: Path) -> list[Table]:
        data = read_bytes(path)
        if not data.strip():
            diagnostics.warn(f"{path}: empty file, no data")
            return []
        rows = parse_jsonl(path, decode(path, data))
        plans = [r[PLAN_KEY] for r in rows if isinstance(r.get(PLAN_KEY), int) and not isinstance(r.get(PLAN_KEY), bool)]
        for r in rows:
            r["_elapsed"] = elapsed_seconds(r.get(ELAPSED_KEY))
        long = rows_to_long(path, rows, step_key=STEP_KEY, wall_key="_elapsed", skip=NOT_METRICS)
        if long.height == 0:
            diagnostics.warn(f"{path}: no numeric values found")
        meta = {"plan_steps": plans[-1]} if plans else {}
        return [Table(frame=long, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta=meta)]

