"""MMEngine `vis_data/scalars.json` (`LocalVisBackend.add_scalars`): train and eval records apart.

`LoggerHook` writes two kinds of records into one JSON-lines file, each with `step`:

- a train record every `interval` iterations (`loss`, its terms, `lr`, `time`,
  `data_time`, `memory`, and `epoch` for epoch-based loops or `iter` for iteration-based
  ones), its `step` the global iteration (`runner.iter + 1`);
- an eval record after each validation (`mIoU`, `coco/bbox_mAP`, `accuracy/top1`, ... and
  the validation loop's own `time`, `data_time`), with no `epoch` or `iter` key. With
  `log_metric_by_epoch=True` (the default) its `step` is the *epoch*, not an iteration.

Read as one JSON-lines log, an eval record of epoch 3 lands at iteration 3 and the
validation loop's `time` joins the training `time`. Here an eval record whose `step` is
an epoch (the train records count epochs, and it is below the iteration reached) is
placed at the last iteration of that epoch, and its keys that train records also log
(`time`, `data_time`) are named `val/<key>`. The run is the work dir holding `vis_data/`
(named by its time stamp), and the `<timestamp>.json` copy beside `scalars.json` is not
read again. With `log_with_hierarchy` (keys already
`train/...`, `val/...`) nothing clashes and nothing is renamed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .jsonlines import json_object
from .. import diagnostics
from ..errors import FormatError
from . import decoding
from .base import Importer, Table
from .csvlogs import decode, head_lines, looks_binary, read_bytes
from .wandb_exports import parse_jsonl, rows_to_long

COUNTER_KEYS = ("epoch", "iter")
"""Keys a train record carries and an eval record does not."""


VIS_DIR = "vis_data"


def is_scalars_file(path: Path) -> bool:
    """`scalars.json`, a copy named `<something>_scalars.json`, or the `<timestamp>.json`
    copy `LoggerHook` has `LocalVisBackend` write beside it in `vis_data/`."""
    name = path.name.lower()
    return (name == "scalars.json" or name.endswith("_scalars.json")
            or (path.parent.name == VIS_DIR and name.endswith(".json")))


class MmengineScalarsImporter(Importer):
    """MMEngine `scalars.json`: train records by iteration, eval records placed and named apart."""

    name = "mmengine"
    looks_for = "MMEngine vis_data/scalars.json"

    def claims(self, path: Path, head: bytes) -> bool:
        if not is_scalars_file(path) or not head.strip() or looks_binary(head):
            return False
        lines = head_lines(path, head, 3)
        objs = [o for o in (json_object(ln) for ln in lines) if o is not None]
        return bool(objs) and all("step" in o for o in objs)

    def group_key(self, path: Path) -> str:
        """The files of one `vis_data/` folder are read together (one holds the other's copy)."""
        return f"mmengine:{path.parent}" if path.parent.name == VIS_DIR else str(path)

    def read_many(self, paths: list[Path]) -> list[Table]:
        """`scalars.json` when the folder has it: the `<timestamp>.json` beside it holds the
        same records again."""
        main = [p for p in paths if p.name.lower() == "scalars.json"]
        return super().read_many(main or paths)

    def read(self, path: Path) -> list[Table]:
        data = decoding.clean_file(path, read_bytes(path))
        if not data.strip():
            diagnostics.warn(f"{path}: empty file, no data")
            return []
        rows = [r for r in parse_jsonl(path, decode(path, data)) if isinstance(r, dict)]
        if not rows:
            raise FormatError(path, "no JSON objects, one a line")
        rows, moved = place_eval_records(rows)
        long = rows_to_long(path, rows, step_key="step", wall_key=None, skip=("iter",))  # `iter` repeats `step`
        if long.height == 0:
            diagnostics.warn(f"{path}: no numeric values found")
        run_key = str(path.parent.parent if path.parent.name == VIS_DIR else path)  # the work dir of the launch
        return [Table(frame=long, source=path, format=self.name, run_key=run_key, segment_key=str(path),
                      meta={"mmengine.eval_records_by_epoch": moved} if moved else {})]


def place_eval_records(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Rows with eval records on the iteration axis and their clashing keys named `val/...`;
    and how many eval records were moved from an epoch to an iteration."""
    train_keys = {k for r in rows if _is_train(r) for k in r}
    if not train_keys:
        return rows, 0  # a file of eval records only: nothing to place them against
    by_epoch = any("epoch" in r for r in rows if _is_train(r))
    out: list[dict[str, Any]] = []
    last_iter = None
    last_of_epoch: dict[Any, int] = {}
    moved = 0
    for r in rows:
        step = r.get("step")
        if _is_train(r):
            if isinstance(step, (int, float)) and not isinstance(step, bool):
                last_iter = step
                if "epoch" in r:
                    last_of_epoch[r["epoch"]] = step
            out.append(r)
            continue
        ev = {(f"val/{k}" if k in train_keys and k != "step" else k): v for k, v in r.items()}
        if (by_epoch and last_iter is not None and isinstance(step, (int, float)) and not isinstance(step, bool)
                and step < last_iter):
            ev["step"] = last_of_epoch.get(step, last_iter)  # `step` is the epoch: its last iteration
            moved += 1
        out.append(ev)
    return out, moved


def _is_train(row: dict[str, Any]) -> bool:
    return any(k in row for k in COUNTER_KEYS)


