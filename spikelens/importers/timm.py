"""timm `summary.csv` (`timm.utils.update_summary`, written by `train.py` once an epoch).

The columns are `epoch`, the train metrics prefixed `train_` (`train_loss`), the eval
metrics prefixed `eval_` (`eval_loss`, `eval_top1`, `eval_top5`) and `lr`; epochs are
counted from 0. A resumed run writes the header again (read as concatenated logs, see
`csvlogs`). The epoch is the step, as logged. The plan is `epochs` plus
`cooldown_epochs` of the `args.yaml` that `train.py` saves beside it, so a run killed
early is known to have ended early (`detect.ended`, with `plan.epoch_base` 0).
"""
from __future__ import annotations

from pathlib import Path

from .. import diagnostics
from ..errors import FormatError
from .base import Importer, Table
from .csvlogs import (decode, head_lines, looks_binary, read_bytes, read_string_frame, separator_of,
                      split_fields, to_long)
from .plans import saved_arguments, whole_number

FILE_NAME = "summary.csv"
ARGS_FILE = "args.yaml"


def is_summary_header(fields: list[str]) -> bool:
    """`epoch`, then `train_*` and `eval_*` columns (and `lr`), as `update_summary` writes."""
    names = [f.strip() for f in fields]
    rest = names[1:]
    return (len(names) >= 3 and names[0] == "epoch" and any(n.startswith("train_") for n in rest)
            and any(n.startswith("eval_") for n in rest)
            and all(n.startswith(("train_", "eval_")) or n == "lr" for n in rest))


class TimmSummaryImporter(Importer):
    """timm `summary.csv`, its plan from the `args.yaml` beside it."""

    name = "timm"
    looks_for = "timm summary.csv (epoch, train_*, eval_*, lr) beside args.yaml"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv" or not head.strip() or looks_binary(head):
            return False
        if path.name != FILE_NAME and not (path.parent / ARGS_FILE).is_file():
            return False  # the same columns in another file: a generic per-epoch CSV
        lines = head_lines(path, head, 1)
        return bool(lines) and is_summary_header(split_fields(lines[0], separator_of(lines[0])))

    def read(self, path: Path) -> list[Table]:
        raw = read_bytes(path)
        if looks_binary(raw[:4096]):
            raise FormatError(path, "binary data, not a CSV text file")
        parsed = read_string_frame(path, decode(path, raw))
        if parsed.frame.height == 0:
            diagnostics.warn(f"{path}: header only, no epochs")
            return []
        long = to_long(path, parsed.frame, parsed.sep, step_col="epoch")
        meta = plan_of(path)
        return [Table(frame=long, source=path, format=self.name, run_key=str(path), segment_key=str(path), meta=meta)]


def plan_of(path: Path) -> dict:
    """`plan.epochs` (`epochs` + `cooldown_epochs`) and `plan.epoch_base` from `args.yaml`."""
    args_file = path.parent / ARGS_FILE
    args = saved_arguments(args_file)
    epochs = whole_number(args, "epochs")
    if not epochs or epochs <= 0:
        return {}
    cooldown = whole_number(args, "cooldown_epochs") or 0
    return {"plan.epochs": epochs + max(cooldown, 0), "plan.epoch_base": 0,  # range(start_epoch, num_epochs)
            "plan.from": f"epochs{' + cooldown_epochs' if cooldown > 0 else ''} in {ARGS_FILE}"}
