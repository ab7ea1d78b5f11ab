"""Ultralytics `results.csv` (YOLOv5, YOLOv8, YOLO11): one row an epoch, read as its users mean it.

What the trainers write (`BaseTrainer.save_metrics`, YOLOv5 `Loggers.on_fit_epoch_end`):

- YOLOv5 pads every header and cell to 20 (classify: 23) characters, counts epochs from
  0 and names its terms `train/obj_loss`, `metrics/mAP_0.5:0.95`, `x/lr0`; its plan is in
  `opt.yaml` beside the CSV.
- YOLOv8/11 count epochs from 1 (`self.epoch + 1`), write `%.6g` unpadded (8.0-8.2 padded
  to 23 and had no `time`), add `time` (seconds since training started: a metric, not a
  wall clock) and `lr/pg0..2`; the plan is in `args.yaml`.

The epoch is the step, as logged. The losses of a row are terms of one objective; the file
logs no total and none is made up: its users read the first term the trainer writes (the
box loss) as the run's curve (`RunContext.main` ranks equal terms by name, box before cls and dfl), and
every term is judged on its own. Precision, recall and mAP are
`accuracy` (higher is better). An epoch that was not validated (`val: false`, `--noval`)
holds zeros in every `val/*` and `metrics/*` cell: those are not logged values.

The plan: `epochs` of the saved arguments, with the number of the first epoch
(`plan.epoch_base`), so a run killed at epoch 5 of 100 is known to have ended early
(`detect.ended`). A run under `time:` (hours) has no epoch plan. Early stopping by
`patience` is a normal end: when the last epoch is `patience` or more epochs after the
best fitness (0.1·mAP50 + 0.9·mAP50-95 summed over the tasks' suffixes, or the mean of
top-1 and top-5 accuracy for classifiers, as the trainers compute it), the stop is
recorded as `plan.stopped_by`.
"""
from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import TABLE_SCHEMA, Importer, Table
from .csvlogs import (decode, float_columns, head_lines, looks_binary, read_bytes, read_string_frame,
                      separator_of, split_fields, to_long)
from .lineprefix import strip as undecorated
from .plans import is_set, saved_arguments, whole_number

_LOSS_TERM = re.compile(r"^(train|val)/\w*loss$")
_EPOCH_METRICS = re.compile(r"^(?:metrics/|lr/pg\d|x/lr\d)")
_MAP50 = re.compile(r"^metrics/mAP(?:50|_0\.5)(?P<task>\([A-Z]\))?$")
_MAP5095 = re.compile(r"^metrics/mAP(?:50-95|_0\.5:0\.95)(?P<task>\([A-Z]\))?$")
_TOP = ("metrics/accuracy_top1", "metrics/accuracy_top5")
ARG_FILES = ("args.yaml", "opt.yaml")
"""Saved arguments beside `results.csv`: YOLOv8/11, then YOLOv5."""


def is_results_header(fields: list[str]) -> bool:
    """`epoch` (first as the trainers write it; anywhere, as the same table with its columns in another
    order is the same run), per-epoch loss terms (`train/box_loss`) beside metrics or learning rates
    (`metrics/mAP50(B)`, `lr/pg0`, `x/lr0`)."""
    names = [f.strip() for f in fields]
    return (len(names) >= 3 and "epoch" in names and any(_LOSS_TERM.match(n) for n in names)
            and any(_EPOCH_METRICS.match(n) for n in names))


def generation(columns: list[str], folder: Path) -> str:
    """'v5' or 'v8' (8.x and 11 write alike), from the column names, else the arguments file."""
    if any(c.startswith("x/lr") or c.endswith("/obj_loss") or ":0.95" in c for c in columns):
        return "v5"
    if "time" in columns or any(c.startswith("lr/pg") or c.endswith("(B)") for c in columns):
        return "v8"
    return "v5" if (folder / "opt.yaml").is_file() and not (folder / "args.yaml").is_file() else "v8"


class UltralyticsImporter(Importer):
    """Ultralytics `results.csv`, its plan and early stopping from `args.yaml` / `opt.yaml`."""

    name = "ultralytics"
    looks_for = "Ultralytics results.csv (YOLOv5, YOLOv8, YOLO11) beside args.yaml / opt.yaml"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv" or not head.strip() or looks_binary(head):
            return False
        lines = head_lines(path, head, 1)
        return bool(lines) and is_results_header(split_fields(lines[0], separator_of(lines[0])))

    def read(self, path: Path) -> list[Table]:
        raw = read_bytes(path)
        if looks_binary(raw[:4096]):
            raise FormatError(path, "binary data, not a CSV text file")
        parsed = read_string_frame(path, decode(path, raw))
        frame, sep = parsed.frame, parsed.sep
        if frame.height == 0:
            diagnostics.warn(f"{path}: header only, no epochs")
            return []
        version = generation(frame.columns, path.parent)
        frame = without_unvalidated(frame, sep)
        long = to_long(path, frame, sep, step_col="epoch")
        meta = {"ultralytics.version": version, **plan_of(path.parent, long, version)}
        return [Table(frame=long, source=path, format=f"ultralytics_{version}", run_key=str(path),
                      segment_key=str(path), meta=meta)]


def without_unvalidated(frame: pl.DataFrame, sep: str) -> pl.DataFrame:
    """Epochs the trainer did not validate (`val: false`, YOLOv5 `--noval`: only the last
    epoch is) carry its initial zeros in every `val/*` and `metrics/*` cell; a validation
    loss of exactly 0 in every term is no measurement, so those cells become not logged."""
    terms = [c for c in frame.columns if _LOSS_TERM.match(c) and c.startswith("val/")]
    if not terms:
        return frame
    floats = float_columns(frame, terms, sep)
    unvalidated = pl.all_horizontal([floats[t].expr == 0 for t in terms])
    cols = [c for c in frame.columns if c.startswith(("val/", "metrics/"))]
    return frame.with_columns([pl.when(unvalidated).then(None).otherwise(pl.col(c)).alias(c) for c in cols])


def plan_of(folder: Path, long: pl.DataFrame, version: str) -> dict:
    """`plan.epochs`, `plan.epoch_base` and, for a stop by patience, `plan.stopped_by`, from
    the saved arguments in `folder` and the epochs read (a long table, the epoch its step)."""
    args_file = next((folder / n for n in ARG_FILES if (folder / n).is_file()), None)
    args = saved_arguments(args_file) if args_file is not None else {}
    epochs = whole_number(args, "epochs")
    if args_file is None or epochs is None or epochs <= 0 or is_set(args, "time") or long.height == 0:
        return {}  # no saved plan, or a timed run (`time:` hours) whose epochs the trainer sets itself
    first = int(long.item(0, "step"))
    base = first if first in (0, 1) else (0 if version == "v5" else 1)
    meta = {"plan.epochs": epochs, "plan.epoch_base": base, "plan.from": f"epochs in {args_file.name}"}
    last = int(long.get_column("step").max())
    stop = patience_stop(long, whole_number(args, "patience"))
    if stop is not None and last - base + 1 < epochs:
        meta["plan.stopped_by"] = stop
    return meta


def tensorboard_plan(folder: Path, frame: pl.DataFrame) -> dict:
    """The plan of an Ultralytics run logged to TensorBoard (its callback logs every key at
    `epoch + 1`), from the `args.yaml` beside the event file; {} for any other run."""
    args = saved_arguments(folder / "args.yaml")
    if "task" not in args or args.get("mode") != "train" or frame.height == 0:
        return {}
    names = set(frame.get_column("metric").cast(pl.String).unique().to_list())
    if not any(_LOSS_TERM.match(n) for n in names) or not any(_EPOCH_METRICS.match(n) for n in names):
        return {}
    return plan_of(folder, frame.sort("step", maintain_order=True), "v8")


def patience_stop(long: pl.DataFrame, patience: int | None) -> str | None:
    """The early stop the trainer's `EarlyStopping` made, when the last epoch is `patience`
    or more after the best fitness (ties go to the later epoch, as `fitness >= best` does)."""
    if not patience or patience <= 0:  # patience 0 means never stop early
        return None
    fit = fitness_by_epoch(long)
    if fit is None or fit.height == 0:
        return None
    best_epoch = int(fit.filter(pl.col("fitness") == pl.col("fitness").max()).get_column("step").max())
    last = int(long.get_column("step").max())
    if last - best_epoch < patience:
        return None
    return (f"EarlyStopping (patience {patience}): no better fitness after epoch {best_epoch}, "
            f"stopped at epoch {last}")


def fitness_by_epoch(long: pl.DataFrame) -> pl.DataFrame | None:
    """The trainer's fitness of each epoch (`step`, `fitness`): 0.1·mAP50 + 0.9·mAP50-95 for
    each task suffix ((B) boxes, (M) masks, (P) poses), summed; a classifier's mean
    top-1/top-5 accuracy. None when the run logs neither."""
    names = long.get_column("metric").cast(pl.String).unique().to_list()
    tasks: dict[str, dict[str, str]] = {}
    for c in names:
        for kind, pattern in (("50", _MAP50), ("5095", _MAP5095)):
            m = pattern.match(c)
            if m:
                tasks.setdefault(m.group("task") or "", {})[kind] = c
    pairs = [(t["50"], t["5095"]) for t in tasks.values() if len(t) == 2]
    if pairs:
        cols = [c for p in pairs for c in p]
        expr = pl.sum_horizontal([0.1 * pl.col(a) + 0.9 * pl.col(b) for a, b in pairs])
    elif all(c in names for c in _TOP):
        cols, expr = list(_TOP), (pl.col(_TOP[0]) + pl.col(_TOP[1])) / 2
    else:
        return None
    wide = (long.filter(pl.col("metric").cast(pl.String).is_in(cols))
            .with_columns(pl.col("metric").cast(pl.String))
            .pivot(on="metric", index="step", values="value", aggregate_function="last"))
    if any(c not in wide.columns for c in cols):
        return None
    return wide.select("step", fitness=expr).drop_nulls().filter(pl.col("fitness").is_finite())


# ------------------------------------------------------------------ results.txt (YOLOv5 before v6, YOLOv7)

TXT_NAME = "results.txt"
TXT_COLUMNS = ("gpu_mem", "train/box_loss", "train/obj_loss", "train/cls_loss", "train/loss", "labels", "img_size",
               "metrics/precision", "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95",
               "val/box_loss", "val/obj_loss", "val/cls_loss")
"""The fields after `epoch/last` of a `results.txt` line: `('%10s' * 2 + '%10.4g' * 6) % (f'{epoch}/{epochs - 1}',
f'{mem:.3g}G', box, obj, cls, total, targets, img_size)` then `'%10.4g' * 7 % (P, R, mAP@.5, mAP@.5:.95,
val box, val obj, val cls)`: the names YOLOv5's later `results.csv` gives the same values (`train/loss` is
the total the trainer logs itself, `gpu_mem` in GB)."""
_TXT_LINE = re.compile(r"^\s*(\d+)/(\d+)\s+([\d.]+)G?((?:\s+\S+){13,24})\s*$")
_TERMS = ("box", "obj", "cls")
_SCORES = TXT_COLUMNS[7:11]


def txt_layout(rows: list[list[float | None]]) -> tuple[str, ...] | None:
    """The names of a results.txt's fields after `epoch/last` (memory first), told from their
    values: forks of the old YOLOv5 trainer add loss terms (yolov5-face's landmark) and so move
    every column after them. The train terms are followed by their total (their sum, at
    `%10.4g`), the number of targets and the image size (whole numbers), then P, R, mAP@.5,
    mAP@.5:.95 and the validation terms. Terms past box, obj and cls have no name in the file:
    they are named by their column (`train/col6_loss`, the line's sixth field). None when no
    total adds up on every line."""
    width = min(len(r) for r in rows) if rows else 0
    for k in range(2, width - 7):  # k train terms, then the total at k + 1 (after memory at 0)
        def adds_up(r: list) -> bool:
            terms, total = r[1:k + 1], r[k + 1]
            if total is None or any(t is None for t in terms):
                return False
            return abs(sum(terms) - total) <= 1e-3 * abs(total) + 1e-4 * k
        whole = all(r[k + 2] is not None and r[k + 3] is not None and float(r[k + 2]).is_integer()
                    and float(r[k + 3]).is_integer() for r in rows)
        if not (whole and all(adds_up(r) for r in rows) and any(r[k + 1] for r in rows)):
            continue
        terms = [f"train/{n}_loss" if i < 3 else f"train/col{i + 3}_loss" for i, n in
                 enumerate(_TERMS + ("",) * (k - 3))][:k]
        vals = width - (k + 4) - len(_SCORES)
        if vals < 0:
            continue
        val = [f"val/{_TERMS[i]}_loss" if i < 3 else f"val/col{k + 10 + i}_loss" for i in range(vals)]
        return ("gpu_mem", *terms, "train/loss", "labels", "img_size", *_SCORES, *val)
    return None


class UltralyticsResultsTxtImporter(Importer):
    """`results.txt` of YOLOv5 before v6.0, YOLOv7 and their forks: one line an epoch."""

    name = "ultralytics_txt"
    looks_for = "results.txt of YOLOv5 (before v6) / YOLOv7: 'epoch/last  mem  box obj cls total ...' lines"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.name != TXT_NAME or not head.strip() or looks_binary(head):
            return False
        lines = undecorated(head_lines(path, head, 2))  # a logger's time stamp or prefix before each row
        return bool(lines) and all(_TXT_LINE.match(ln) for ln in lines[:1])

    def read(self, path: Path) -> list[Table]:
        raw = read_bytes(path)
        if looks_binary(raw[:4096]):
            raise FormatError(path, "binary data, not a results.txt")
        epochs, fields, planned = [], [], []
        bad = 0
        for line in undecorated(decode(path, raw).splitlines()):
            m = _TXT_LINE.match(line)
            if m is None:
                bad += bool(line.strip())
                continue
            epochs.append(int(m.group(1)))
            fields.append([_number(t) for t in (m.group(3), *m.group(4).split())])
            planned.append(int(m.group(2)) + 1)
        if bad:
            diagnostics.warn(f"{path}: {bad} line(s) that are no results.txt epoch line skipped")
        widths = {len(f) for f in fields}
        if len(widths) > 1:  # lines of another layout (an appended run of another fork): the first layout's
            fields_of = [f for f in fields if len(f) == len(fields[0])]
            diagnostics.warn(f"{path}: {len(fields) - len(fields_of)} line(s) with another number of columns skipped")
            keep = [len(f) == len(fields[0]) for f in fields]
            epochs = [e for e, k in zip(epochs, keep) if k]
            planned = [p for p, k in zip(planned, keep) if k]
            fields = fields_of
        names = txt_layout(fields) if fields else TXT_COLUMNS
        if names is None:
            if len(fields[0]) != len(TXT_COLUMNS):
                raise FormatError(path, f"results.txt lines of {len(fields[0]) + 1} columns whose loss terms add "
                                        f"up to no total column: cannot tell which column is which")
            names = TXT_COLUMNS  # YOLOv5/v7's own layout, its total rounded another way
        steps, metrics, values = [], [], []
        for epoch, row in zip(epochs, fields):
            for name, value in zip(names, row):
                if value is None:
                    continue
                steps.append(epoch)
                metrics.append(name)
                values.append(value)
        long = pl.DataFrame({"step": steps, "wall_time": [None] * len(steps), "metric": metrics, "value": values},
                            schema=TABLE_SCHEMA)
        long = with_unvalidated_dropped(long)
        meta = {}
        if planned:
            meta = {"plan.epochs": planned[-1], "plan.epoch_base": 0,
                    "plan.from": f"the epoch/{planned[-1] - 1} counter in {TXT_NAME}"}
        return [Table(frame=long, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta=meta)]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def with_unvalidated_dropped(long: pl.DataFrame) -> pl.DataFrame:
    """Epochs not tested (`--notest`: only the last is) write zeros for P, R, mAP and the val
    losses: not logged values (as `without_unvalidated` for results.csv)."""
    val = long.filter(pl.col("metric").cast(pl.String).str.starts_with("val/"))
    zero = val.group_by("step").agg((pl.col("value") == 0).all().alias("z")).filter("z").get_column("step")
    if zero.len() == 0:
        return long
    names = pl.col("metric").cast(pl.String)
    side = names.str.starts_with("val/") | names.str.starts_with("metrics/")
    return long.filter(~(side & pl.col("step").is_in(zero.to_list())))
