"""JSON-lines metric logs that are not W&B's: one JSON object a line with a step key.

Many trainers append one object per logging call: detectron2's `metrics.json`
(`iteration`, `total_loss`, `lr`), MMEngine/mmcv's `*.log.json` (`iter`, `loss`,
`mode`), and home-grown `metrics.jsonl` files (`{"step": 100, "loss": 2.31}`). The step
key is found by the CSV importer's rules (`step`, `global_step`, `iteration`, `iter`,
or a key made of a step word); the wall time from `timestamp`/`wall_time`-style keys.
Numbers are metrics, nested objects become dotted keys, strings and lists are ignored;
rows without a step (an eval summary, a header object) are skipped with a warning.
A value written as the summary of its measurements, `{"num": 8, "mean": 1.42, "std": 0.3}`
(stylegan2-ada's `stats.jsonl`), is its mean, as a person plots it; records of such summaries
that name no step are counted by a key whose whole numbers count up by one a line (`Progress/tick`).
`*.jsonl` / `*.ndjson` files, and `*.json` files whose first two lines are objects
(a pretty-printed `trainer_state.json` is one object over many lines, not this).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from . import decoding, rankcolumn
from .base import Importer, Table
from .recordlists import has_member_lists, spread_lists
from .scalarreprs import SPELLED_HINT
from .csvlogs import SPLIT_WORDS, decode, head_lines, read_bytes, split_metric, split_of, step_column
from .wandb_exports import flatten, parse_jsonl, rows_to_long, typed_jsonl, typed_to_long

WALL_KEYS = ("_timestamp", "timestamp", "wall_time", "walltime", "wallclock", "unix_time")
SCAN_ROWS = 200
"""Rows whose keys are pooled to find the step key (the first line may be a header object)."""


def json_object(line: str) -> dict[str, Any] | None:
    """One line's JSON object, or None (not JSON, or JSON that is not an object)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


_SUMMARY_KEYS = frozenset({"num", "n", "count", "mean", "std", "min", "max", "sum", "var"})


def _summary(v: Any) -> bool:
    return isinstance(v, dict) and "mean" in v and set(v) <= _SUMMARY_KEYS


def means(row: dict[str, Any]) -> dict[str, Any]:
    """A record whose summaries (`{"num", "mean", "std"}`) are their means; other records as they are."""
    if not any(_summary(v) for v in row.values()):
        return row
    return {k: v["mean"] if _summary(v) else v for k, v in row.items()}


def step_key_of(rows: list[dict[str, Any]]) -> str | None:
    """The step key among the keys of the first rows (by `step_column`'s names, whatever their order); else a
    key whose whole numbers count up by one a record (in the records that log it: an event record may not)."""
    keys: dict[str, None] = {}
    summaries = any(_summary(v) for row in rows[:SCAN_ROWS] for v in row.values())
    rows = [means(r) for r in rows[:SCAN_ROWS]]
    for row in rows:
        for k, v in row.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                keys.setdefault(k, None)
    found = step_column(list(keys))
    if found is not None or len(rows) < (2 if summaries else ORDER_MIN):
        return found
    measured = any(isinstance(v, float) and v != int(v) for r in rows for v in r.values()
                   if isinstance(v, float) and math.isfinite(v))
    for k in sorted(keys, key=str):  # a key counting the records by one (`k` of an optimiser loop), in those that
        # log it; the first by name where several do, never the writer's first (#24)
        if not summaries and (_ID_KEY.search(str(k)) or not measured):
            continue  # a data set's `id`, or records that measure nothing (whole labels): no training log
        vals = [r[k] for r in rows if k in r] if not summaries else [r.get(k) for r in rows]
        ones = [b - a == 1 for a, b in zip(vals, vals[1:])]
        if len(vals) >= (2 if summaries else ORDER_MIN) and \
                all(isinstance(v, (int, float)) and not isinstance(v, bool) and v == int(v) for v in vals) and \
                (all(ones) if summaries else sum(ones) >= 0.8 * len(ones)):
            return k  # (an event logged at the step before it, a session restarting the count: most steps are +1)
    return None


_ID_KEY = re.compile(r"^(?:id|idx|index|row|uid|uuid|key|line|sample|item)$|_id$|_idx$", re.I)
"""Keys that number a data set's records, not a loop's steps."""
ORDER_MIN = 3
"""Records a stepless file holds at least (in its head) to be read as a curve: two lines are no history."""
ORDER_KEY = "\x00line"
"""The step of records that name none: their place in the file (a history written a record a line)."""


def ordered_records(rows: list[dict[str, Any]]) -> bool:
    """Records that name no step but repeat one set of number keys line after line, one of them a
    loss (`df.to_json('history.jsonl', orient='records', lines=True)` of a Keras history): a record
    an epoch, counted by its line as a person counts them. A dataset's rows (text, labels, a score)
    name no loss."""
    from ..frame import infer_role

    keys = [frozenset(k for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
            for r in rows[:SCAN_ROWS]]
    if len(keys) < ORDER_MIN or not keys[0] or any(k != keys[0] for k in keys):
        return False
    return any(infer_role(str(k)) in ("loss", "eval_loss", "perplexity") for k in keys[0])


class JsonLinesImporter(Importer):
    """One JSON object a line with a step key: detectron2, MMEngine, custom loggers."""

    name = "jsonl"
    looks_for = "*.jsonl / *.ndjson (or JSON-lines *.json) metric logs with a step key, or a history's records with a loss, one a line"

    def claims(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix not in (".jsonl", ".ndjson", ".json"):
            return False
        lines = head_lines(path, head, 3)
        if not lines:
            return suffix != ".json"  # an empty .jsonl: read as such, with a warning
        objs = [o for o in (json_object(ln) for ln in lines) if o is not None]
        if suffix == ".json" and (len(lines) < 2 or json_object(lines[0]) is None):
            return False  # one pretty-printed document (trainer_state.json), not JSON lines
        # a step key among the first objects (one may be damaged or cut by the head): a
        # dataset shard or a provenance list in the same folder is not a metric log
        return step_key_of(objs) is not None or ordered_records(objs)

    def read(self, path: Path) -> list[Table]:
        data = decoding.clean_file(path, read_bytes(path))  # BOM, UTF-16, NULs, bad bytes: one warning
        if not data.strip():
            diagnostics.warn(f"{path}: empty file, no data")
            return []
        # the step key from the first rows, before decoding the whole file
        head = [o for o in (json_object(ln) for ln in decode(path, data[:1 << 20]).splitlines()[:SCAN_ROWS])
                if o is not None]
        if not head:
            raise FormatError(path, "no JSON objects, one a line")
        step_key = step_key_of(head)
        if step_key is None and ordered_records(head):
            return [self._by_order(path, data)]
        if step_key is None:
            keys = sorted({k for r in head for k, _ in flatten(r)})[:12]
            raise FormatError(path, f"JSON lines without a step key (keys: {', '.join(keys)})")
        wall_key = next((k for k in WALL_KEYS if any(k in r for r in head)), None)
        rank_key = rankcolumn.rank_key(sorted({k for r in head for k in r}))
        summaries = any(means(r) is not r for r in head)
        split_key = _split_key(head)
        # `"loss": "tensor(0.53, device='cuda:0')"`, `"loss": "1.234"`: numbers written as text, read row by row
        # (`parse_jsonl` reads them as numbers)
        reprs = SPELLED_HINT.search(data[:1 << 20]) is not None
        members = has_member_lists(head)  # `"seats": [{"id": 0, "q_loss": ...}, ...]`: a series per member
        frame = (None if summaries or split_key or reprs or members
                 else typed_jsonl(data, step_key=step_key, wall_key=wall_key))
        if frame is not None and "run_id" not in frame.columns and not _per_epoch(frame, step_key):
            ranks = (rankcolumn.row_ranks(frame.get_column(step_key), frame.get_column(rank_key))
                     if rank_key in frame.columns else None)
            skip = (rank_key,) if ranks is not None else ()

            def read(part: pl.DataFrame) -> pl.DataFrame:
                return typed_to_long(part, step_key=step_key, wall_key=wall_key, skip=skip)

            long = read(frame)
            no_step = frame.get_column(step_key).null_count()
            if no_step:
                diagnostics.warn(f"{path}: {no_step} row(s) without an integer {step_key} skipped")
            by_rank = (lambda idx: read(frame[idx])) if ranks is not None else None
        else:  # bare NaN, damaged lines, text values, a per-epoch counter: row by row
            rows = parse_jsonl(path, decode(path, data))
            if members:
                rows = [spread_lists(r) for r in rows]
            rows = global_steps(path, [means(r) for r in rows] if summaries else rows, step_key)
            if split_key and split_of([r.get(split_key) for r in rows]):
                trained = {k for r in rows if str(r.get(split_key, "")).strip().lower() in ("train", "training")
                           for k in r}
                rows = [_split_row(r, split_key, step_key, trained) for r in rows]
            ranks = (rankcolumn.row_ranks(_numbers([r.get(step_key) for r in rows]),
                                          _numbers([r.get(rank_key) for r in rows])) if rank_key else None)
            skip = (rank_key,) if ranks is not None else ()
            long = rows_to_long(path, rows, step_key=step_key, wall_key=wall_key, skip=skip)
            by_rank = (lambda idx: rows_to_long(path, [rows[i] for i in idx], step_key=step_key,
                                                wall_key=wall_key, skip=skip)) if ranks is not None else None
        if long.height == 0:
            diagnostics.warn(f"{path}: no numeric values found")
        table = Table(frame=long, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta=ended_in_error(data))
        if ranks is not None and by_rank is not None:  # a rank key: one run a rank when ranks print their own values
            with diagnostics.collecting():  # the whole file's read above warned once
                parts = rankcolumn.split(ranks, by_rank)
            if parts:
                return rankcolumn.rank_tables(table, parts)
        return [table]

    def _by_order(self, path: Path, data: bytes) -> Table:
        """Records with no step key, stepped by their line (see `ordered_records`)."""
        rows = _line_steps(parse_jsonl(path, decode(path, data)))
        diagnostics.warn(f"{path}: no step key in its records; each record's line order is its step")
        long = rows_to_long(path, rows, step_key=ORDER_KEY, wall_key=None, skip=())
        return Table(frame=long, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                     meta={"step.from": "order", **ended_in_error(data)})


_ERROR_KEYS = ("err", "error", "exception", "exc", "traceback", "error_message")
_FAILED_EVENT = re.compile(r"fail|error|crash|exception|abort|killed|oom", re.I)


def ended_in_error(data: bytes) -> dict[str, Any]:
    """`plan.error` (how the run ended, SL306) when the file's last record reports an error: an `err`/`error`/
    `exception` key holding text, or an `event`/`status` that says a failure (`{"k": 107, "event": "job_failed",
    "err": "IBMRuntimeError(...)"}`); else nothing. Errors in earlier records were survived."""
    tail = data[-65536:].rstrip().rsplit(b"\n", 1)[-1]
    try:
        last = json.loads(tail)
    except ValueError:
        return {}
    if not isinstance(last, dict):
        return {}
    said = next((str(last[k]).strip() for k in _ERROR_KEYS if isinstance(last.get(k), str) and last[k].strip()), None)
    event = next((str(last[k]) for k in ("event", "status", "state") if isinstance(last.get(k), str)), "")
    if said is None and not _FAILED_EVENT.search(event):
        return {}
    return {"plan.error": " ".join(x for x in (event, (said or "")[:200]) if x)}


def _line_steps(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, ORDER_KEY: i} for i, r in enumerate(rows)]


def _split_key(rows: list[dict[str, Any]]) -> str | None:
    """A text key whose values name the data a record was measured on (`"split": "train"`)."""
    for k in {k for r in rows for k, v in r.items() if isinstance(v, str)}:
        vals = {str(r[k]).strip().lower() for r in rows if isinstance(r.get(k), str)}
        if vals and vals <= SPLIT_WORDS:
            return k
    return None


def _split_row(row: dict[str, Any], split_key: str, step_key: str, trained: set[str]) -> dict[str, Any]:
    """A record's metrics named by its split where training records log the same name (`loss` of a
    `test` record is `test/loss`, see `csvlogs.split_metric`; mmcv's `bbox_mAP`, only ever in `val`
    records, keeps its name); its step and wall time as they are."""
    split = row.get(split_key)
    return {split_metric(split, k) if k in trained and k not in (step_key, *WALL_KEYS)
            and isinstance(v, (int, float)) and not isinstance(v, bool) else k: v
            for k, v in row.items() if k != split_key}


def _numbers(values: list[Any]) -> pl.Series:
    """A key's values as floats (null where it is no number)."""
    return pl.Series([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                      for v in values], dtype=pl.Float64)


def _per_epoch(frame: pl.DataFrame, step_key: str) -> bool:
    """Does the step counter go back when the epoch moves on (mmcv's per-epoch `iter`)?"""
    if step_key == "epoch" or "epoch" not in frame.columns:
        return False
    return bool((frame.get_column(step_key).diff() < 0).any())


def global_steps(path: Path, rows: list[dict[str, Any]], step_key: str) -> list[dict[str, Any]]:
    """A counter that restarts with every epoch (mmcv's `iter`) made global: each epoch
    adds the largest count of the epoch before. Other files are returned as they are."""
    if step_key == "epoch" or not any("epoch" in r for r in rows[:SCAN_ROWS]):
        return rows
    offset = top = 0
    epoch = last = None
    out, moved = [], False
    for r in rows:
        s, e = r.get(step_key), r.get("epoch")
        if isinstance(s, (int, float)) and not isinstance(s, bool):
            if e != epoch and epoch is not None and last is not None and s < last:
                offset, top, moved = offset + top, 0, True
            epoch, last, top = e, s, max(top, s)
            r = {**r, step_key: s + offset}
        out.append(r)
    if moved:
        diagnostics.warn(f"{path}: {step_key!r} restarts with every epoch; steps are counted across epochs "
                         f"(each epoch adds the largest {step_key!r} of the one before)")
    return out
