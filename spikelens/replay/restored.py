"""What a zero-code replay rebuilds from a checkpoint: the training state, and the step it holds.

Three loaders fill it (a Hugging Face `checkpoint-N/` folder, a Lightning `.ckpt`, a plain
`torch.save`d state dict); the trajectory walks it forward over the captured batches.
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import ReplayError, UsageError
from .target import ReplayTarget


@dataclass
class Restored:
    """A model and its optimizer as a checkpoint left them.

    `at_step` is the last captured step whose update the weights already hold (the next
    step to replay is `at_step + 1`), or None when the checkpoint does not say.
    `learning_rate(step)` is the fallback when a capture holds no learning rate."""

    kind: str
    path: str
    target: ReplayTarget
    at_step: int | None
    restored: list[str] = field(default_factory=list)
    rng: dict[str, Any] | None = None
    learning_rate: Callable[[int], float | None] = lambda step: None
    warnings: list[str] = field(default_factory=list)
    loss_for: Callable[[dict[str, Any]], Callable[[Any, Any], Any]] | None = None
    """The loss_fn of one step from its capture's meta (Lightning: its batch_idx), when it varies."""


def import_object(spec: str, what: str) -> Any:
    """`pkg.mod:Name` (or `file.py:Name`) → the object, with a one-line error otherwise."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise UsageError(f"{what} {spec!r}: expected package.module:Name or file.py:Name")
    from .target import _is_file_spec, _load_file

    if _is_file_spec(where):
        module = _load_file(where)
    else:
        cwd = os.getcwd()
        added = cwd not in sys.path
        if added:
            sys.path.insert(0, cwd)
        try:
            module = importlib.import_module(where)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise ReplayError(f"{what} {spec}: importing {where} failed: {type(exc).__name__}: {exc}") from None
        finally:
            if added and cwd in sys.path:
                sys.path.remove(cwd)
    obj = getattr(module, name, None)
    if obj is None:
        raise ReplayError(f"{what} {spec}: {where} has no {name!r}")
    return obj


def model_call_loss(model, batch) -> Any:
    """The loss when none is named: the model called on the batch as a trainer does
    (`model(**batch)` for a dict, `model(*batch)` for a list or tuple, else `model(batch)`),
    its output a scalar, or holding `.loss` / `["loss"]`."""
    if isinstance(batch, dict):
        return model(**batch)
    if isinstance(batch, (list, tuple)):
        return model(*batch)
    return model(batch)


def find_state(obj: Any, keys: tuple[str, ...]) -> Any:
    """The first `obj[key]` present (a checkpoint dict holding a state under a common name)."""
    if isinstance(obj, dict):
        for k in keys:
            if k in obj and obj[k] is not None:
                return obj[k]
    return None


def checkpoint_kind(path: Path) -> str | None:
    """`transformers`, `lightning`, `state_dict`, or None when PATH names a build function."""
    if path.is_dir():
        return "transformers"
    if path.is_file() and path.suffix != ".py":
        return "lightning" if path.suffix == ".ckpt" else "state_dict"
    return None
