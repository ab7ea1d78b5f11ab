"""Hugging Face `trainer_state.json` (`TrainerState.save_to_json`: sorted keys, bare `NaN`).

`log_history` holds three kinds of entries: train (`loss`, `grad_norm`,
`learning_rate`, `epoch`, `step`), eval (`eval_*` at the step of a train entry) and
one final summary (`train_runtime`, `train_loss`, ...). Evaluation results written
without a step (`predict_*`, `test_*`, `eval_*` entries a script appends after training)
are placed at the last step logged before them, not dropped. Train and eval keys become
metrics exactly as logged (`epoch` too, once per step, as an `other` metric); the
summary is a run average, not a point of the curve, so it goes into the run's meta
(`hf.train_loss`, ...). `json.loads` reads the bare `NaN`/`Infinity` tokens; a file
cut short keeps every complete entry, with a warning.

One output folder is one run. Its `checkpoint-N/trainer_state.json` files are older
copies of the same history and add nothing, unless a resume from an earlier
checkpoint abandoned steps that only an old copy still holds: that copy becomes an
earlier segment (its entries up to where it parts from the final file included), and
the final file's entries from there on the next one, so the stitcher sees the
rollback. Identical copies never make segments. Without a top-level file the copy of
the highest checkpoint is the reference.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from .. import diagnostics
from ..errors import FormatError, SpikelensError
from .base import TABLE_SCHEMA, Importer, Table
from . import decoding
from .csvlogs import read_bytes
from .scalarreprs import SPELLED_TEXT, spelled_values

FILE_NAME = "trainer_state.json"
_CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")
EVAL_PREFIXES = ("eval_", "test_", "predict_")
SUMMARY_KEYS = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second",
                          "total_flos", "train_loss"})
"""Keys of the summary entry `Trainer.train()` logs once at the end."""
STATE_META_KEYS = ("global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
                   "num_train_epochs", "train_batch_size", "best_metric", "best_model_checkpoint", "best_global_step")


@dataclass
class StateFile:
    """One parsed trainer_state.json."""

    path: Path
    state: dict[str, Any]
    entries: list[dict[str, Any]]
    checkpoint: int | None
    keys: list[str] = field(default_factory=list)
    """Canonical text of each entry: equal entries in two copies are the same log call."""

    def __post_init__(self) -> None:
        self.keys = [json.dumps(e, sort_keys=True) for e in self.entries]


def checkpoint_number(path: Path) -> int | None:
    m = _CHECKPOINT_DIR.match(path.parent.name)
    return int(m.group(1)) if m and path.name == FILE_NAME else None


def output_dir(path: Path) -> Path | None:
    """The Trainer output folder a canonical trainer_state.json belongs to (None for a
    renamed copy, which is a run of its own)."""
    if path.name != FILE_NAME:
        return None
    return path.parent.parent if checkpoint_number(path) is not None else path.parent


def parse_state(path: Path) -> StateFile:
    """Parse one file; a truncated file keeps its complete `log_history` entries."""
    text = decoding.decode_file(path, read_bytes(path))  # BOM, UTF-16, NULs, bad bytes: one warning
    if not text.strip():
        raise FormatError(path, "empty file, not a trainer_state.json")
    try:
        state = json.loads(text)
    except ValueError as exc:
        state = _salvage(path, text, exc)
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise FormatError(path, "no log_history list: not a Hugging Face trainer_state.json")
    entries = [e for e in state["log_history"] if isinstance(e, dict)]
    if SPELLED_TEXT.search(text, 0, 1 << 20):  # values written as text (`"loss": "1.23"`)
        entries = [spelled_values(e) for e in entries]
    if len(entries) != len(state["log_history"]):
        diagnostics.warn(f"{path}: {len(state['log_history']) - len(entries)} log_history entries are not objects; skipped")
    return StateFile(path, state, entries, checkpoint_number(path))


_NEXT_ENTRY = re.compile(r"\}\s*,\s*(?=\{)")
"""The end of one log_history entry and the start of the next."""


def _salvage(path: Path, text: str, exc: ValueError) -> dict[str, Any]:
    """Complete entries of a damaged file's `log_history`, read one object at a time."""
    m = re.search(r'"log_history"\s*:\s*\[', text)
    if m is None:
        raise FormatError(path, f"not valid JSON ({exc})") from None
    decoder = json.JSONDecoder()
    pos, entries, damaged = m.end(), [], 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except ValueError:
            # a damaged entry costs itself: go on from the next entry (`}, {` after it; a
            # log_history entry is a flat object), else the file was cut here
            nxt = _NEXT_ENTRY.search(text, pos)
            if nxt is None:
                break
            damaged, pos = damaged + 1, nxt.end()
            continue
        entries.append(obj)
    skipped = f", {damaged} damaged entries skipped" if damaged else ""
    diagnostics.warn(f"{path}: damaged or truncated JSON ({exc.args[0].split(':')[0] if exc.args else exc}); "
                     f"kept {len(entries)} complete log_history entries{skipped}")
    state: dict[str, Any] = {"log_history": entries}
    for key in STATE_META_KEYS:  # top-level keys before log_history survive a cut at the end
        km = re.search(rf'"{key}"\s*:\s*(-?[\d.eE+-]+|null|"[^"]*")', text[: m.start()])
        if km:
            try:
                state[key] = json.loads(km.group(1))
            except ValueError:
                pass
    return state


def is_summary(entry: dict[str, Any]) -> bool:
    return bool(SUMMARY_KEYS & entry.keys()) and "loss" not in entry and not any(k.startswith("eval_") for k in entry)


def is_evaluation(entry: dict[str, Any]) -> bool:
    """An entry of evaluation results (`eval_*`, `test_*`, `predict_*` keys, as
    `Trainer.evaluate()`/`predict()` name them), not a training entry."""
    return any(k.startswith(EVAL_PREFIXES) for k in entry) and "loss" not in entry


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def entries_to_long(path: Path, entries: list[dict[str, Any]],
                    global_step: Any = None) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Long table of the per-step entries, and the summary entry's values (for meta).
    Evaluation results without a step go at the last step before them, else at the
    state's `global_step`."""
    steps: list[int] = []
    metrics: list[str] = []
    values: list[float] = []
    summary: dict[str, Any] = {}
    no_step = 0
    last_epoch: tuple[int, float] | None = None
    last_step: int | None = global_step if isinstance(global_step, int) and not isinstance(global_step, bool) else None
    for e in entries:
        step = e.get("step")
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            if is_summary(e):  # the summary written without a step: run meta, as with one
                summary.update({k: v for k, v in e.items() if _number(v) is not None})
                continue
            if last_step is None or not is_evaluation(e):
                no_step += 1
                continue
            step = last_step  # `predict_*`/`eval_*`/`test_*` results written without a step: after the last step
        last_step = step
        if is_summary(e):
            summary.update({k: v for k, v in e.items() if _number(v) is not None and k != "step"})
            continue
        for k, v in e.items():
            if k == "step":
                continue
            x = _number(v)
            if x is None:
                continue
            if k == "epoch":
                if last_epoch is not None and last_epoch[0] == step and (last_epoch[1] == x or (math.isnan(x) and math.isnan(last_epoch[1]))):
                    continue  # the eval entry repeats the train entry's epoch
                last_epoch = (step, x)
            steps.append(step)
            metrics.append(k)
            values.append(x)
    if no_step:
        diagnostics.warn(f"{path}: {no_step} log_history entries without an integer step skipped")
    frame = pl.DataFrame({"step": steps, "wall_time": [None] * len(steps), "metric": metrics, "value": values},
                         schema=TABLE_SCHEMA)
    return frame, summary


def segments_of(family: list[StateFile]) -> list[tuple[StateFile, list[dict[str, Any]]]]:
    """(file, entries it alone contributes) per segment, oldest launch first.

    The reference is the top-level file (else the highest checkpoint). A copy whose
    entries all appear in the reference is an older copy: nothing new. A copy that
    parts from the reference holds abandoned steps; of several such copies one launch
    keeps only the largest (the others are its earlier checkpoints)."""
    ref = next((f for f in family if f.checkpoint is None), None) or max(family, key=lambda f: (f.checkpoint, str(f.path)))
    ref_set = set(ref.keys)
    branches: list[StateFile] = []
    seen: set[tuple[str, ...]] = set()
    for f in sorted(family, key=lambda f: (f.checkpoint if f.checkpoint is not None else -1, str(f.path))):
        if f is ref or set(f.keys) <= ref_set or tuple(f.keys) in seen:
            continue
        seen.add(tuple(f.keys))
        branches.append(f)
    branches = [b for b in branches
                if not any(o is not b and set(b.keys) <= set(o.keys) for o in branches)]

    def parting(f: StateFile) -> int:
        n = 0
        for a, b in zip(f.keys, ref.keys):
            if a != b:
                break
            n += 1
        return n

    branches.sort(key=lambda f: (parting(f), f.checkpoint or 0))
    out: list[tuple[StateFile, list[dict[str, Any]]]] = []
    emitted: set[str] = set()
    for f in [*branches, ref]:
        new = [e for e, k in zip(f.entries, f.keys) if k not in emitted]
        emitted.update(f.keys)
        if new:
            out.append((f, new))
    return out


def early_stopped(state: dict[str, Any]) -> bool:
    """Did `EarlyStoppingCallback` stop the run? (transformers >= 4.41 saves callback
    state in `stateful_callbacks`: its patience counter reached the patience.)"""
    cbs = state.get("stateful_callbacks")
    cb = cbs.get("EarlyStoppingCallback") if isinstance(cbs, dict) else None
    if isinstance(cb, list):
        cb = cb[-1] if cb else None
    if not isinstance(cb, dict):
        return False
    patience = (cb.get("args") or {}).get("early_stopping_patience")
    counter = (cb.get("attributes") or {}).get("early_stopping_patience_counter")
    return isinstance(patience, int) and isinstance(counter, int) and 0 < patience <= counter


class HfTrainerStateImporter(Importer):
    """`trainer_state.json` of the Hugging Face Trainer (and TRL trainers built on it)."""

    name = "hf_trainer_state"
    looks_for = "trainer_state.json (Hugging Face Trainer)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".json":
            return False
        if path.name == FILE_NAME:
            return True
        return head.lstrip()[:1] == b"{" and b'"log_history"' in head

    def group_key(self, path: Path) -> str:
        out = output_dir(path)
        return f"hf:{out}" if out is not None else str(path)

    def read(self, path: Path) -> list[Table]:
        return self.read_many([path])

    def read_many(self, paths: list[Path]) -> list[Table]:
        """Files of one output folder together: checkpoint copies are compared with the final file."""
        parsed: list[StateFile] = []
        errors: list[SpikelensError] = []
        for p in paths:
            try:
                parsed.append(parse_state(p))
            except FormatError as exc:
                errors.append(exc)
        if errors and not parsed:
            raise errors[0]
        for exc in errors:
            diagnostics.warn(f"{exc} (skipped; the other trainer_state.json copies are read)")
        families: dict[str, list[StateFile]] = {}
        for f in parsed:
            out = output_dir(f.path)
            families.setdefault(str(out) if out is not None else str(f.path), []).append(f)
        tables: list[Table] = []
        for run_key, family in families.items():
            tables.extend(self._family_tables(run_key, family))
        return tables

    def _family_tables(self, run_key: str, family: list[StateFile]) -> list[Table]:
        segments = segments_of(family)
        ref = segments[-1][0] if segments else family[0]
        meta: dict[str, Any] = {f"hf.{k}": ref.state[k] for k in STATE_META_KEYS
                                if isinstance(ref.state.get(k), (int, float, str)) and not isinstance(ref.state.get(k), bool)}
        if early_stopped(ref.state):
            meta["hf.early_stopping"] = True
        tables = []
        for i, (f, entries) in enumerate(segments):
            frame, summary = entries_to_long(f.path, entries, f.state.get("global_step"))
            if f is ref:
                meta.update({f"hf.{k}": v for k, v in summary.items()})
            tables.append(Table(frame=frame, source=f.path, format=self.name, run_key=run_key,
                                segment_key=str(f.path), order=(i,), meta=dict(meta) if f is ref else {}))
        if len(segments) > 1:
            diagnostics.warn(f"{run_key}: {len(segments) - 1} checkpoint copy(ies) hold steps the final "
                             f"trainer_state.json lacks (a resume from an earlier checkpoint); kept as earlier segments")
        if not any(t.frame.height for t in tables):
            diagnostics.warn(f"{ref.path}: log_history has no per-step entries")
        return tables
