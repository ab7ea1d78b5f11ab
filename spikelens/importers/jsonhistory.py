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

Three more layouts hold the same curves, each read as its writer means it:

- a list of records, `[{"step": 0, "train_loss": 4.75, "val_acc": 0.01}, ...]` (a script's
  `json.dump(history, f)` of one dict a logging step): each record a point of every metric
  it holds, at its step key (else its index); claimed only when the records carry a step
  key or a loss, so a list of detections (`image_id`, `bbox`, `score`) is not a history;
- an object of points a metric, `{"train/ep_return": [[step, value], ...]}` (tensorboardX's
  `export_scalars_to_json` writes `[wall_time, step, value]`);
- an object of columns a metric, `{"trainLoss": {"steps": [...], "values": [...],
  "timestamps": [...]}}` (Sacred's `FileStorageObserver` `metrics.json`): each metric at
  its own steps, with its wall times;
- an object of records keyed by their epoch or step, `{"1": {"loss": 0.9}, "2": {...}}` or
  `{"epoch_1": {...}}`: each record a point at the number in its key.

Claimed from the first bytes: a `.json` file that opens an object whose first value is a
list or such a column object, or a list whose first item is an object.

A history may sit beside other sections (`{"model_info": {...}, "training_config": {...},
"training_history": {"loss": [...], ...}}`): its curves are the lists of numbers in the object
that holds the longest one; lists elsewhere (an input shape) are settings. Claimed when the head
names a loss, an accuracy or a reward over a list of numbers.

More shapes (numbers written as strings, x/y curve dumps, lists of points, pandas `to_json` tables,
records keyed by epoch inside each split) are turned into these by `jsonshapes`, and YAML and TOML
histories are parsed by `structdocs` and read as their JSON twins.

One more layout spreads the points over files: a flat object of numbers a file, the files
numbered in their names (AllenNLP's `metrics_epoch_0.json`, `metrics_epoch_1.json`, ...). A
person reads the number in the name as the point's place, so the files that share a name but
for that number are one run, the N-th file its point at step N (`NumberedJsonImporter`); a TOML
snapshot a step (`metrics/step_00000100.toml`) alike.
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..errors import FormatError
from ..naming import key_name
from . import decoding, jsonshapes, structdocs
from .base import Importer, Table, long_table
from .csvlogs import counts_something, read_bytes
from .csvlogs import named_measure as _measure, stem_name as _name_of
from .seriesnames import plain_name, plain_names

_HEAD = re.compile(rb'^\s*\{\s*"[^"\\]{1,200}"\s*:\s*(?:\[\s*(?:"?\s*[-\d.NI]|[\]\[]|null)'
                   rb'|\{\s*"(?:steps|values|timestamps)"\s*:)')
"""An object whose first value is a list of numbers (or an empty list, or of points), or a
metric's columns (`{"steps": [...], "values": [...]}`)."""
_SECTION_HEAD = re.compile(rb'^\s*\{\s*"')
_NAMED_LIST = re.compile(rb'"[^"\\]{0,60}(?:loss|acc|accuracy|reward|return)[^"\\]{0,60}"\s*:\s*\['
                         rb'(?:\s*[-\d.NI][-+\w.]*\s*,){2}\s*[-\d.NI]', re.IGNORECASE)
"""An object of sections whose head names a loss, an accuracy or a reward over a list of three
numbers or more (`"loss_weights": [1.0, 0.5]` is a setting)."""
_NUMBERS_HEAD = re.compile(rb'^\s*\[\s*"?\s*[-\d.NI]')
"""A list whose first item is a number (`json.dump(losses, f)`), perhaps written as text (`default=str`)."""
_RECORDS_HEAD = re.compile(rb'^\s*\[\s*\{')
"""A list whose first item is an object: records, maybe."""
_KEYED_HEAD = re.compile(rb'^\s*\{\s*"[A-Za-z_\- :]{0,20}\d+"\s*:\s*\{\s*"[^"\\]{1,200}"\s*:\s*(?:[-\d.NI]|\{)')
"""An object whose first key is a number (`"0"`, `"epoch_1"`) and first value a record of numbers."""
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
        elif isinstance(value, list) and value and all(isinstance(v, list) and v for v in value):
            # a list of lists of numbers: a curve a list (a fold, a seed, a run), numbered from 1
            out.update(series_of({str(i + 1): v for i, v in enumerate(value)}, f"{name}/"))
        elif isinstance(value, list) and value and all(isinstance(v, dict) and any(isinstance(x, list) for x in v.values())
                                                       for v in value):
            # a list of histories (`[{"loss": [...]}, ...]`, a fold or a seed each), numbered from 1
            out.update(series_of({str(i + 1): v for i, v in enumerate(value)}, f"{name}/"))
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


def _rising(values: list) -> bool:
    """Every value above the one before: a counter that numbers each point (no two points at one epoch)."""
    return all(b > a for a, b in zip(values, values[1:]))


def _counter_key(name: str, values: list) -> bool:
    return name.split("/")[-1].lower() in STEP_KEYS + EPOCH_KEYS and _counter(values)


def history_long(series: dict[str, list[float | None]]):
    """The long frame of a history (see the module doc) and the name of the step list used."""
    counters = {k for k, v in series.items() if k.split("/")[-1].lower() in STEP_KEYS + EPOCH_KEYS and _counter(v)}
    own = _own_counters(series, counters)
    counters |= set(own.values())
    metrics = {k: v for k, v in series.items() if k not in counters}
    if not metrics:
        return None, None
    n = max(len(v) for v in metrics.values())
    step_key = next((k for name in STEP_KEYS for k in sorted(counters)
                     if k.split("/")[-1].lower() == name and len(series[k]) == n), None)
    step_key = step_key or next((k for name in EPOCH_KEYS for k in sorted(counters) if k.split("/")[-1].lower() == name
                                 and len(series[k]) == n and _rising(series[k])), None)  # the epochs, where no step is
    axis = np.asarray(series[step_key], dtype=np.int64) if step_key else np.arange(n, dtype=np.int64)
    steps, names, values = [], [], []
    for name, vals in metrics.items():
        k = len(vals)
        at = axis if k == n else axis[np.ceil((np.arange(k) + 1) * n / k).astype(np.int64) - 1]
        if name in own:  # `train_losses` beside `train_counter`: its own steps
            at = np.asarray(series[own[name]], dtype=np.int64)
            step_key = step_key or own[name]
        arr = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
        logged = np.array([v is not None for v in vals])
        steps.append(at[logged])
        values.append(arr[logged])
        names.extend([name] * int(logged.sum()))
    step = np.concatenate(steps)
    return long_table(step, [None] * step.size, names, np.concatenate(values)), step_key


_COUNTER_WORDS = ("counter", "steps", "step", "iters", "iterations", "iteration", "iter", "epochs", "epoch", "ts",
                  "timesteps")
"""The last word of a list that counts another list's points (`train_counter`, `test_steps`, `train_losses_ts`)."""


def _own_counters(series: dict[str, list], counters: set[str]) -> dict[str, str]:
    """Metric -> the counter list that gives its steps: a list of whole numbers that never go back,
    named by a counting word after the same first word as the metric and as long as it
    (`train_counter` for `train_losses`, `test_counter` for `test_losses`: PyTorch's MNIST example)."""
    out = {}
    for c, v in series.items():
        head, _, word = c.rpartition("_")
        if not head or word.lower() not in _COUNTER_WORDS or not _counter(v):
            continue
        mates = [m for m, mv in series.items() if m != c and m not in counters and len(mv) == len(v)
                 and m.split("_")[0] == head.split("_")[0] and m.rpartition("_")[2].lower() not in _COUNTER_WORDS]
        for m in mates:
            out[m] = c
    return out


def history_section(series: dict[str, list[float | None]]) -> dict[str, list[float | None]]:
    """The lists of the object that holds the longest list (a document of sections: its history)."""
    if not series:
        return series
    curves = {k: v for k, v in series.items() if not _counter_key(k, v)} or series
    longest = max(curves, key=lambda k: len(curves[k]))
    parent, n = longest.rpartition("/")[0], len(curves[longest])
    # a counter as long as the curves counts their points wherever it sits (`{"epoch": [...], "history": {...}}`),
    # and curves as long sit in sections alike (a fold or a seed each: `{"CNN": [{"loss": [...]}, ...]}`)
    return {k: v for k, v in series.items() if k.rpartition("/")[0] == parent or len(v) == n}


_SPLITS = frozenset({"train", "training", "val", "valid", "validation", "test", "testing", "eval", "evaluation", "dev",
                     "history", "metrics", "logs", "log", "stats", "results", "summary", "config", "args"})
"""Keys that say a section of one run (a split, its history, its settings), never a run of its own."""
MIN_CURVE = 10
"""A shorter list in a run's block (a per-class precision, a confusion matrix's row) is no curve beside its epochs."""


def model_blocks(obj: dict) -> dict[str, dict] | None:
    """`{"mfcc": {"all_train_loss": [...], "all_test_acc": [...], "epoch": 50}, "ft": {...}}`: a block per model
    (a feature set, an architecture), each holding the same curves over its own epochs, is a run each, as a
    person reads it; each block's curves are its lists as long as its longest, or of MIN_CURVE points at least.
    None unless there are 2+ blocks, none named as a split or a section, all with the same curves, one of them
    a loss, a score or a reward."""
    from ..frame import infer_role

    if len(obj) < 2 or not all(isinstance(v, dict) for v in obj.values()) or any(
            set(re.split(r"[^a-z]+", str(k).lower())) & _SPLITS for k in obj):
        return None  # (`validation_0` of xgboost's `evals_result()`, `train_metrics`: sections of one run)
    curves = {}
    for name, block in obj.items():
        lists = {k: v for k, v in block.items() if isinstance(v, list) and v and all(_number(x) is not None for x in v)}
        if not lists:
            return None
        n = max(map(len, lists.values()))
        curves[name] = {k for k, v in lists.items() if len(v) == n or len(v) >= MIN_CURVE}
    keys = next(iter(curves.values()))
    if any(c != keys for c in curves.values()) or not any(infer_role(k) != "other" for k in keys):
        return None
    return {str(name): {k: v for k, v in block.items() if k in curves[name] or not isinstance(v, list)}
            for name, block in obj.items()}


class JsonHistoryImporter(Importer):
    """One JSON object of lists, a metric each (a Keras `history.history` dump and the like)."""

    name = "json_history"
    looks_for = ("*.json holding one object of lists ({\"loss\": [...], \"val_loss\": [...]}: a Keras history), "
                 "a list of records, or a list of numbers named by the file (losses.json)")

    def claims(self, path: Path, head: bytes) -> bool:
        head = head.lstrip(b"\xef\xbb\xbf")
        if path.suffix.lower() in structdocs.SUFFIXES:
            return structdocs.claims(path, head)
        if not json_named(path):
            return False
        if jsonshapes.claims(head):
            return True  # strings that spell numbers, x/y curves, lists of points, pandas tables, splits of records
        if _HEAD.match(head) or (_KEYED_HEAD.match(head) and _SCORE_HINT.search(head)):
            return True  # (records keyed by number are claimed when they name a loss, a score or the epoch)
        if _NESTED_HEAD.match(head) or _COLUMNS_HEAD.match(head):
            return True
        if _KEYED_NUMBER_HEAD.match(head) and _measure(path) is not None:
            return True  # numbers keyed by their step: one curve, named by the file
        if _SECTION_HEAD.match(head) and (_NAMED_LIST.search(head) or _NAMED_RECORDS.search(head)):
            return True
        if _NUMBERS_HEAD.match(head) and _measure(path) is not None:
            return True  # a list of numbers in a file named for what they measure (`losses.json`)
        return bool(_RECORDS_HEAD.match(head)) and _records_look_logged(head)

    def read(self, path: Path) -> list[Table]:
        text = decoding.decode_file(path, read_bytes(path))
        if path.suffix.lower() in structdocs.SUFFIXES:
            obj = structdocs.load(path, text)  # a YAML or TOML document: the same objects, read alike
        else:
            try:
                obj = json.loads(text)
            except ValueError as exc:
                raise FormatError(path, f"not a whole JSON document ({exc.msg} at line {exc.lineno})") from None
        return self.tables_of(path, jsonshapes.normalise(obj, path, text), text)

    def tables_of(self, path: Path, obj: Any, text: str) -> list[Table]:
        """The tables of one parsed document (see the module doc)."""
        if isinstance(obj, list) and obj and all(_number(v) is not None or v is None for v in obj):
            name = plain_name(_measure(path) or _name_of(path))  # `json.dump(losses, f)`: one curve, named by the file
            frame, _ = history_long({name: [_number(v) for v in obj]})
            if frame is None:
                raise FormatError(path, "a JSON list of numbers with no value in it")
            return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                          meta={"step.from": "list index", "metric.from": "the file's name"})]
        if isinstance(obj, list):
            frame, step_key = records_long(path, obj)
            return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                          meta={"step.from": step_key or "list index"})]
        if not isinstance(obj, dict):
            raise FormatError(path, "not a JSON object of lists")
        obj = _columns_as_points(obj, path)
        keyed = _keyed_records(obj)
        if keyed is not None:
            frame, _ = records_long(path, keyed)
            return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                          meta={"step.from": "the number in each key"})]
        blocks = model_blocks(obj)
        if blocks is not None:  # `{"mfcc": {"all_train_loss": [...], ...}, "chroma_stft": {...}}`: a run a block
            return [replace(t, run_key=f"{path}[{name}]", segment_key=f"{path}[{name}]",
                            run_name=f"{key_name(str(path))}[{name}]", meta={**t.meta, "run": name})
                    for name, block in blocks.items() for t in self.tables_of(path, block, text)]
        points = points_long(obj)
        if points is not None:
            return [Table(frame=points, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                          meta={"step.from": "each metric's own steps"})]
        series = series_of(obj)
        if not _HEAD.match(text.lstrip("\ufeff").encode()[:4096]) and not _NESTED_HEAD.match(text.lstrip("\ufeff").encode()[:4096]):
            series = history_section(series)
        plain = plain_names(list(series))  # `loss_history: [...]` is the loss
        series = {plain[k]: v for k, v in series.items()}
        frame, step_key = history_long(_named_by_file(series, path)) if series else (None, None)
        records = _record_lists(path, obj)
        if records is not None:
            frame = records if frame is None else pl.concat([frame, records])
        if frame is None:
            raise FormatError(path, "a JSON object with no list of numbers but counters")
        meta = {"step.from": step_key or ("each record's step" if records is not None else "list index")}
        return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta=meta)]


_NESTED_HEAD = re.compile(rb'^\s*\{\s*"[^"\\]{1,200}"\s*:\s*\{\s*"[^"\\]{1,200}"\s*:\s*\[\s*[-\d.NI]')
"""An object of objects of lists of numbers (`{"validation_0": {"logloss": [...]}}`: xgboost's
`evals_result()`, `{"loss": {"train": [...], "val": [...]}}`)."""
_COLUMNS_HEAD = re.compile(rb'^\s*\{\s*"[^"\\]{1,200}"\s*:\s*\{\s*"\d+"\s*:\s*[-\d.NI]')
"""An object of columns keyed by row number (`DataFrame(history).to_json()`: `{"loss": {"0": 2.3, ...}}`)."""
_KEYED_NUMBER_HEAD = re.compile(rb'^\s*\{\s*"[A-Za-z_\- :]{0,20}\d+"\s*:\s*[-\d.NI]')
"""An object of numbers keyed by their step (`{"0": 2.31, "100": 2.05}`, `{"iter: 5": 1.2}`)."""
_NAMED_RECORDS = re.compile(rb'"[^"\\]{1,80}"\s*:\s*\[\s*\{(?:[^{}\[\]]|\{[^{}\[\]]{0,200}\}|\{){0,400}?"[^"\\]{0,40}'
                            rb'(?:loss|acc|reward)[^"\\]{0,40}"\s*:\s*[-\d.NI]', re.I)
"""A section holding a list of records that name a loss, an accuracy or a reward, maybe inside a record of
each split (`"epochs": [{"epoch": 1, "train": {"loss": ..}}]`; `"training_iterations":
[{"iter": 0, "loss": 11.0}, ...]`, ParlAI's `"train_reports": [...]`)."""
_OTHER_KINDS = frozenset({".jsonl", ".ndjson", ".csv", ".tsv", ".txt", ".log", ".out", ".err", ".yaml", ".yml",
                          ".xml", ".html", ".md", ".py", ".sh", ".toml", ".cfg", ".ini", ".pkl", ".pt", ".pth",
                          ".npy", ".npz", ".h5", ".parquet", ".db", ".ipynb"})
"""Extensions that say what a file is, something else than one JSON document."""


def json_named(path: Path) -> bool:
    """A `.json` file, or a file whose extension says nothing a reader knows: no extension (Chainer's
    `LogReport` writes `log`) or the writer's own (ParlAI's `model.trainstats`). What such a file
    holds is what its content says (the head's JSON shape is checked by the caller)."""
    suffix = path.suffix.lower()
    if path.name.startswith("."):
        return False
    return suffix == ".json" or (suffix not in _OTHER_KINDS and not suffix.startswith(".events"))


def _named_by_file(series: dict[str, list], path: Path) -> dict[str, list]:
    """Series that name no measure of their own (`{"train": [...], "val": [...]}` in `loss.json`; a model
    each, `{"Quantum_QVAE": [...], "Classical_AE": [...]}` in `training_history.json`) measure what the
    file's name says: named `<measure>/<series>` (`loss/train`, `loss/Quantum_QVAE`), as a person reads
    them. Unchanged when a series names its own measure, or the file's name says none."""
    from ..frame import infer_role

    measure = _measure(path)
    if measure is None or any(infer_role(k) != "other" or counts_something(k) for k in series
                              if not (k.split("/")[-1].lower() in STEP_KEYS + EPOCH_KEYS and _counter(series[k]))):
        return series
    counters = {k for k, v in series.items() if k.split("/")[-1].lower() in STEP_KEYS + EPOCH_KEYS and _counter(v)}
    return {k if k in counters else f"{measure}/{k}": v for k, v in series.items()}


def _columns_as_points(obj: dict, path: Path) -> dict:
    """Columns keyed by row or step number (`{"loss": {"0": 2.3, "1": 2.1}}`, pandas' `to_json()`) as a
    metric's columns (`{"steps": [...], "values": [...]}`); numbers keyed by their step at the top
    (`{"0": 2.3, "1": 2.1}`) as one such column named by the file. Anything else as it is."""
    def column(d: Any) -> dict | None:
        if not isinstance(d, dict) or len(d) < 2:
            return None
        found = [(_KEY_NUMBER.match(str(k)), _number(v)) for k, v in d.items()]
        if any(m is None or v is None for m, v in found) or len({m["pre"] for m, _ in found}) != 1:
            return None
        pts = sorted((int(m["n"]), v) for m, v in found)
        return {"steps": [p for p, _ in pts], "values": [v for _, v in pts]}

    top = column(obj)
    if top is not None:
        return {_measure(path) or _name_of(path): top}
    cols = {k: column(v) for k, v in obj.items()}
    if cols and all(c is not None for c in cols.values()):
        return cols
    return obj


def _record_lists(path: Path, obj: dict):
    """The lists of records an object holds beside its settings (`"training_iterations": [{"iter": 0,
    "loss": 11.0}, ...]`, `"eval_steps": [...]`), each read as a list of records, its metrics named
    `<list>/<metric>`; None when it holds none."""
    parts = []
    for key, value in obj.items():
        if not (isinstance(value, list) and len(value) >= 2 and all(isinstance(r, dict) for r in value)):
            continue
        if not any(_number(v) is not None for r in value[:5] for v in r.values()):
            continue
        try:
            frame, _ = records_long(path, value)
        except FormatError:
            continue
        named = pl.concat_str([pl.lit(f"{key}/"), pl.col("metric").cast(pl.String)])
        parts.append(frame.with_columns(named.cast(frame.schema["metric"]).alias("metric")))
    return pl.concat(parts) if parts else None


_LOGGED_KEY = re.compile(rb'"(?:global_step|steps?|iterations?|iters?|epochs?|updates|timesteps|[^"]{0,40}loss[^"]{0,40})"\s*:',
                         re.I)


def _records_look_logged(head: bytes) -> bool:
    """The first record of a list names a step or a loss (a history, not a list of detections)."""
    first = head[: head.find(b"}") + 1 or len(head)]
    return bool(_LOGGED_KEY.search(first))


def records_long(path: Path, records: list):
    """A list of records (see the module doc): the long frame and the step key used."""
    rows = [r for r in records if isinstance(r, dict)]
    if not rows:
        raise FormatError(path, "a JSON list with no record (object) in it")
    keys = {k for r in rows for k in r}
    step_key = next((k for name in STEP_KEYS for k in sorted(keys) if k.lower() == name
                     and all(isinstance(r.get(k), int) and not isinstance(r.get(k), bool) for r in rows if k in r)),
                    None) or _record_counter(rows, keys)
    steps, names, values = [], [], []
    for i, r in enumerate(rows):
        at = r.get(step_key, i) if step_key else i
        for k, v in series_of({k: [v] for k, v in r.items() if k != step_key and not isinstance(v, dict)}).items():
            if v[0] is not None:
                steps.append(at)
                names.append(k)
                values.append(v[0])
        for k, v in r.items():
            if isinstance(v, dict):
                for name, vals in series_of({k: {kk: [vv] for kk, vv in v.items()}}).items():
                    if vals[0] is not None:
                        steps.append(at)
                        names.append(name)
                        values.append(vals[0])
    counters = {k for k in set(names) if k.lower() in EPOCH_KEYS}
    kept = [i for i, n in enumerate(names) if n not in counters or n == step_key]
    if not kept:
        raise FormatError(path, "a JSON list of records holding no number but counters")
    step = np.asarray([steps[i] for i in kept], dtype=np.int64)
    return long_table(step, [None] * step.size, [names[i] for i in kept],
                      np.asarray([values[i] for i in kept], dtype=np.float64)), step_key


_COUNTING_WORDS = frozenset({"epoch", "epochs", "frame", "frames", "episode", "episodes", "iteration", "iterations", "iter",
                             "round", "generation", "gen", "batch", "step", "steps", "update", "updates", "trial"})
_NUMBER_WORDS = frozenset({"id", "idx", "index", "num", "number", "no", "n", "count", "total", "train", "training",
                           "global", "cur", "current"})
"""Words beside a counting word that leave it a count (`frame_number`, `epoch_id`, ParlAI's `total_train_updates`)."""


def _record_counter(rows: list[dict], keys: set) -> str | None:
    """Where no key is named as the step: a key named as a count of the loop (`epoch`, `frame_number`,
    `episode`, `epoch_id`) whose whole numbers rise from record to record, in every record: the
    records' own count, as a person reads it (1-based epochs stay 1-based). None if there is none."""
    for k in sorted(keys, key=lambda k: (k.lower() not in EPOCH_KEYS, k)):
        words = set(re.split(r"[^a-z]+", k.lower())) - {""}
        if not words & _COUNTING_WORDS or words - _COUNTING_WORDS - _NUMBER_WORDS:
            continue
        vals = [r.get(k) for r in rows]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in vals) and len(vals) >= 2 and _rising(vals):
            return k
    return None


_KEY_NUMBER = re.compile(r"^(?P<pre>\D*?)(?P<n>\d+)$")


def _keyed_records(obj: dict) -> list[dict] | None:
    """`{"0": {"loss": 1.2}, "1": {...}}` or `{"epoch_1": {...}, "epoch_2": {...}}`: records keyed by
    their epoch or step (every key the same words and a number, every value an object), as records
    with that number as their `step`, in the number's order; None for any other object."""
    found = [(_KEY_NUMBER.match(str(k)), v) for k, v in obj.items()]
    if len(found) < 2 or any(m is None or not isinstance(v, dict) for m, v in found):
        return None
    if any(isinstance(x, list) for _, v in found for x in v.values()):
        return None  # `{"validation_0": {"logloss": [...]}}`: a split's curves, not one record
    if len({m["pre"] for m, _ in found}) != 1:
        return None
    rows = [{**{k: x for k, x in v.items() if k.lower() not in STEP_KEYS}, "step": int(m["n"])} for m, v in found]
    return sorted(rows, key=lambda r: r["step"])


def points_long(obj: dict):
    """An object of points a metric (`[[step, value], ...]`, `[[wall, step, value], ...]`) or of
    columns a metric (`{"steps": [...], "values": [...], "timestamps": [...]}`); None for any
    other object."""
    steps, walls, names, values = [], [], [], []
    for name, v in obj.items():
        if isinstance(v, dict) and isinstance(v.get("values"), list) and isinstance(v.get("steps"), list):
            vals, at = v["values"], v["steps"]
            stamps = v.get("timestamps") if isinstance(v.get("timestamps"), list) else []
            for i, (st, val) in enumerate(zip(at, vals)):
                num = _number(val)
                if num is None or _number(st) is None:
                    continue
                steps.append(int(st))
                walls.append(_stamp(stamps[i]) if i < len(stamps) else None)
                names.append(name)
                values.append(num)
        elif isinstance(v, list) and v and all(isinstance(p, list) and len(p) in (2, 3) for p in v):
            for p in v:
                nums = [_number(x) for x in p]
                if any(x is None for x in nums):
                    continue
                wall, st, val = (None, *nums) if len(p) == 2 else nums
                steps.append(int(st))
                walls.append(wall)
                names.append(name)
                values.append(val)
        else:
            return None
    if not names:
        return None
    wall = walls if any(w is not None for w in walls) else [None] * len(walls)
    return long_table(np.asarray(steps, dtype=np.int64), wall, names, np.asarray(values, dtype=np.float64))


def _stamp(text: Any) -> float | None:
    """Seconds since the epoch of an ISO time stamp (Sacred writes them without a zone: UTC)."""
    from datetime import datetime, timezone

    if not isinstance(text, str):
        return _number(text)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


# ------------------------------------------------------------------ one flat object a numbered file

_NUMBERED = re.compile(r"^(?P<pre>.*?)(?P<n>\d+)(?P<post>\D*)\.(?:json|toml)$", re.I)
"""`metrics_epoch_12.json`, `epoch_12_metrics.json`: a name and the file's number (its last run of
digits); the rest of the name, which the files share, holds a letter."""


def _stem(name: str) -> tuple[str, int] | None:
    """The name a numbered file shares with the others of its series (its number as `N`) and its
    number; None for a name with no number, or nothing but a number (`3.json`)."""
    m = _NUMBERED.match(name)
    if m is None or not re.search(r"[A-Za-z]", m["pre"] + m["post"]):
        return None
    return f"{m['pre']}N{m['post']}", int(m["n"])


_FLAT_HEAD = re.compile(rb'^\s*\{\s*"[^"\\]{1,200}"\s*:\s*(?:[-\d"tfnNI{]|\[\s*\])')
"""An object whose first value is a number, a string, a boolean, null or an object: a record."""
_SCORE_HINT = re.compile(rb'"[^"]{0,60}(?:loss|acc|reward|perplexity|ppl|epoch|step)[^"]{0,60}"\s*:\s*[-\d.NI]',
                         re.I)
"""...that names a loss, an accuracy, a reward or the epoch it is of: a record of training (a config,
or one image's detections with their `score`, names none)."""
_TOML_FLAT_HEAD = re.compile(rb'^\s*(?:#[^\n]*\n\s*)*[\w"\'.\-/]{1,200}\s*=\s*[-+\d."tfin]')
_TOML_SCORE_HINT = re.compile(rb'(?m)^\s*[\w"\'.\-/]{0,60}(?:loss|acc|reward|perplexity|ppl|epoch|step)[\w"\'.\-/]{0,60}\s*=\s*[-+\d.]',
                              re.I)
"""The same for a TOML snapshot: `key = value` lines, one naming a loss, a score, the epoch or the step."""
MIN_NUMBERED_FILES = 2
"""Files that share a name but for its number, at least: one file is a summary, not a series."""


def _numbered_siblings(path: Path) -> int:
    """How many files in `path`'s folder are named as it is but for the number at its end."""
    named = _stem(path.name)
    if named is None:
        return 0
    try:
        return _folder_stems(str(path.parent), path.parent.stat().st_mtime_ns).get(named[0], 0)
    except OSError:
        return 0


@functools.lru_cache(maxsize=64)
def _folder_stems(folder: str, mtime_ns: int) -> dict[str, int]:
    """Numbered `.json` files of a folder by the name they share, listed once while the folder is
    unchanged (claims asks for every file of it)."""
    out: dict[str, int] = {}
    for entry in os.scandir(folder):
        named = _stem(entry.name) if entry.name.lower().endswith((".json", ".toml")) else None
        if named is not None:
            out[named[0]] = out.get(named[0], 0) + 1
    return out


class NumberedJsonImporter(Importer):
    """A flat JSON object of metrics a file, the files numbered by epoch or step
    (AllenNLP's `metrics_epoch_N.json`): one run, the number in each name its step."""

    name = "json_numbered"
    looks_for = "numbered *_N.json files, one flat object of metrics each (AllenNLP metrics_epoch_N.json)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in (".json", ".toml") or _stem(path.name) is None:
            return False
        head = head.lstrip(b"\xef\xbb\xbf")
        flat, hint = (_TOML_FLAT_HEAD, _TOML_SCORE_HINT) if path.suffix.lower() == ".toml" else (_FLAT_HEAD, _SCORE_HINT)
        return bool(flat.match(head)) and bool(hint.search(head)) and _numbered_siblings(path) >= MIN_NUMBERED_FILES

    def group_key(self, path: Path) -> str:
        named = _stem(path.name)
        return f"json_numbered:{path.parent / named[0]}" if named else str(path)

    def read(self, path: Path) -> list[Table]:
        named = _stem(path.name)
        if named is None:
            raise FormatError(path, "not a numbered JSON file (name_N.json)")
        text = decoding.decode_file(path, read_bytes(path))
        if path.suffix.lower() == ".toml":
            obj = structdocs.load(path, text)  # a snapshot a step (`metrics/step_00000100.toml`)
        else:
            try:
                obj = json.loads(text)
            except ValueError as exc:
                raise FormatError(path, f"not a whole JSON document ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(obj, dict):
            raise FormatError(path, "not a JSON object of metrics")
        values = {k: v[0] for k, v in series_of(_as_lists(obj)).items() if v[0] is not None}
        counters = {k for k in values if k.split("/")[-1].lower() in STEP_KEYS + EPOCH_KEYS}
        metrics = {k: v for k, v in values.items() if k not in counters}
        if not metrics:
            raise FormatError(path, "a JSON object with no number but counters")
        key, n = named
        frame = long_table(np.full(len(metrics), n, dtype=np.int64), [None] * len(metrics), list(metrics),
                           np.asarray(list(metrics.values()), dtype=np.float64))
        try:  # the folder is the run (AllenNLP's serialization dir), unless it holds several series
            series = sum(1 for c in _folder_stems(str(path.parent), path.parent.stat().st_mtime_ns).values()
                         if c >= MIN_NUMBERED_FILES)
        except OSError:
            series = 1
        run_key = str(path.parent) if series <= 1 else str(path.parent / key)
        return [Table(frame=frame, source=path, format=self.name, run_key=run_key,
                      segment_key=str(path.parent / key),
                      order=(n,), meta={"step.from": "the number in each file's name"})]


def _as_lists(obj: dict) -> dict:
    """Every scalar of a (nested) object as a one-item list, for `series_of`."""
    return {k: _as_lists(v) if isinstance(v, dict) else [v] for k, v in obj.items()}
