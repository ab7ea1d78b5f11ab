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
