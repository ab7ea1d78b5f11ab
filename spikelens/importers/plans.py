"""The plan a run's writer saved beside its logs (how long it was meant to train).

Lightning saves the module's hyperparameters to `version_N/hparams.yaml`; when the
training length is one of them (`max_epochs`, `max_steps`, as many scripts pass it
through `save_hyperparameters()`), it is the run's plan. Read with a line pattern,
not a YAML parser: only these top-level scalars matter and the file may hold objects
a safe loader refuses. The keys go into the table meta as `plan.epochs` /
`plan.steps` (see `detect.ended`).
"""
from __future__ import annotations

import re
from pathlib import Path

_KEYS = {"max_epochs": "plan.epochs", "max_steps": "plan.steps", "max_iters": "plan.steps",
         "num_epochs": "plan.epochs", "epochs": "plan.epochs"}
_LINE = re.compile(r"^(?P<key>max_epochs|max_steps|max_iters|num_epochs|epochs):\s*(?P<value>\d+)\s*$", re.M)


def hparams_plan(folder: Path) -> dict:
    """`plan.epochs` / `plan.steps` from `folder/hparams.yaml`, when it states them."""
    path = folder / "hparams.yaml"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return {}
    meta: dict = {}
    for m in _LINE.finditer(text):
        value = int(m.group("value"))
        key = _KEYS[m.group("key")]
        if value > 0 and key not in meta:
            meta[key] = value
            meta["plan.from"] = f"{m.group('key')} in {path.name}"
    return meta


_SCALAR = re.compile(r"^(?P<key>[A-Za-z_][\w.\-]*):[ \t]*(?P<value>[^\s#][^#\n]*?)?[ \t]*(?:#.*)?$", re.M)
_NULLS = {"", "null", "none", "~"}


def saved_arguments(path: Path) -> dict[str, str]:
    """The top-level `key: value` lines of a trainer's saved arguments (Ultralytics
    `args.yaml`, YOLOv5 `opt.yaml`, timm `args.yaml`: flat YAML written by `yaml.safe_dump`),
    as text; {} when the file is missing or unreadable. Read with a line pattern, not a
    YAML parser, for the reason given above."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return {}
    out: dict[str, str] = {}
    for m in _SCALAR.finditer(text):
        out.setdefault(m.group("key"), (m.group("value") or "").strip().strip("'\""))
    return out


def whole_number(args: dict[str, str], key: str) -> int | None:
    """A saved argument as a whole number (`epochs: 100`, `epochs: 100.0`), None when it is
    missing, null or anything else."""
    text = args.get(key, "").strip().lower()
    if text in _NULLS:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def is_set(args: dict[str, str], key: str) -> bool:
    """Is a saved argument given a value (not missing, null, false or 0)?"""
    text = args.get(key, "").strip().lower()
    return text not in _NULLS and text not in {"false", "0", "0.0"}


SIBLING_CONFIGS = ("config.json", "config.yaml", "files/config.yaml")
"""Where a run's writer saved its configuration beside its logs: Spinning Up's `config.json`, W&B's
`config.yaml` (in the run folder, or in `files/` of an offline run folder)."""
_EPOCH_KEYS = ("epochs", "num_epochs", "n_epochs", "max_epochs", "num_train_epochs")
"""The keys a training configuration states its length in epochs by."""
_JSON_KEY = re.compile(r'^(?: {1,4}|\t)?"(?P<key>%s)"\s*:\s*(?P<value>\d+(?:\.0+)?)\s*[,}]?\s*$' % "|".join(_EPOCH_KEYS), re.M)


def _wandb_value(keys: tuple[str, ...], number: str) -> re.Pattern:
    """A top-level key of W&B's `config.yaml` (`epochs:` with its `value: 20` a few lines under it)."""
    return re.compile(r"^(?P<key>%s):[ \t]*\n(?:[ \t]+(?!value:)\S.*\n){0,3}[ \t]+value:[ \t]*(?P<value>%s)[ \t]*$"
                      % ("|".join(keys), number), re.M)


def _flat_value(keys: tuple[str, ...], number: str) -> re.Pattern:
    """A top-level `key: value` line of a YAML configuration (a comment after it allowed)."""
    return re.compile(r"^(?P<key>%s):[ \t]*(?P<value>%s)[ \t]*(?:#.*)?$" % ("|".join(keys), number), re.M)


_WANDB_KEY = _wandb_value(_EPOCH_KEYS, r"\d+(?:\.0+)?")
_FLAT_KEY = _flat_value(_EPOCH_KEYS, r"\d+(?:\.0+)?")


def sibling_plan(folders) -> dict:
    """`plan.epochs` from a configuration saved beside a run's logs (`SIBLING_CONFIGS`) in one of
    `folders`: a top-level `"epochs": 1000` of Spinning Up's `config.json`, W&B's `num_train_epochs:`
    with its `value: 20` under it, or a flat `epochs: 100`. Read with line patterns (the file may hold
    objects a loader refuses; only top-level keys are a run's plan, never a nested model setting)."""
    for folder in sorted({Path(f) for f in folders}, key=str):
        for name in SIBLING_CONFIGS:
            path = folder / name
            try:
                if not path.is_file():
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
            except OSError:
                continue
            patterns = (_JSON_KEY,) if name.endswith(".json") else (_WANDB_KEY, _FLAT_KEY)
            for pat in patterns:
                found = {m.group("key"): int(float(m.group("value"))) for m in pat.finditer(text)}
                key = next((k for k in _EPOCH_KEYS if found.get(k, 0) > 0), None)
                if key is not None:
                    return {"plan.epochs": found[key], "plan.from": f"{key} in {name}"}
            if not name.endswith(".json"):
                steps = _step_plan(text, name)
                if steps:
                    return steps
    return {}


_ITER_KEYS = ("max_iters", "max_train_iters", "num_iters", "num_train_iters")
_PER_ITER_KEYS = ("num_steps_per_iter", "num_updates_per_iter", "steps_per_iter", "updates_per_iter")
_WANDB_ITER = _wandb_value(_ITER_KEYS + _PER_ITER_KEYS, r"\d+")
_FLAT_ITER = _flat_value(_ITER_KEYS + _PER_ITER_KEYS, r"\d+")


def _step_plan(text: str, name: str) -> dict:
    """`plan.steps` of a trainer that runs `max_iters` iterations of `num_steps_per_iter` updates each
    and counts the updates (the Decision Transformer family: `max_train_iters: 500` and
    `num_updates_per_iter: 100` in W&B's `config.yaml`, `num of updates: 34000` in its log): the
    product. Both keys or nothing: an iteration count alone does not say what the log counts."""
    for pat in (_WANDB_ITER, _FLAT_ITER):
        found = {m.group("key"): int(m.group("value")) for m in pat.finditer(text)}
        iters = next((k for k in _ITER_KEYS if found.get(k, 0) > 0), None)
        per = next((k for k in _PER_ITER_KEYS if found.get(k, 0) > 0), None)
        if iters and per:
            return {"plan.steps": found[iters] * found[per], "plan.from": f"{iters} x {per} in {name}"}
    return {}
