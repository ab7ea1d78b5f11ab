"""A Lightning `.ckpt` plus the user's LightningModule class (`--module pkg.mod:Class`).

Lightning rebuilds the module itself (`Class.load_from_checkpoint(..., weights_only=True)`:
the saved hyperparameters, the weights, the module's own `on_load_checkpoint`); the
optimizer comes from the module's `configure_optimizers()` with the saved
`optimizer_states[0]` loaded into it. The loss is the module's `training_step(batch, batch_idx)`.
"""
from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

from ..errors import ReplayError
from ._torch import require_torch
from .capture import load_checkpoint
from .restored import Restored, import_object
from .target import ReplayTarget

_LOG_WITHOUT_TRAINER = "self.trainer` reference is not registered"


def load_lightning_checkpoint(path: str | Path, module: str | None) -> Restored:
    torch = require_torch()
    if not module:
        raise ReplayError(f"{path}: a Lightning checkpoint needs its LightningModule class: --module pkg.mod:Class")
    cls = import_object(module, "--module")
    state = load_checkpoint(path)
    if not isinstance(state, dict) or "state_dict" not in state:
        raise ReplayError(f"{path}: not a Lightning checkpoint (no state_dict entry)")
    if not hasattr(cls, "load_from_checkpoint"):
        raise ReplayError(f"--module {module}: {getattr(cls, '__name__', cls)} is not a LightningModule class")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cls.load_from_checkpoint(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ReplayError(f"{path}: {cls.__name__}.load_from_checkpoint failed: {_first(exc)}") from None
    if getattr(model, "automatic_optimization", True) is False:
        raise ReplayError(f"--module {module}: manual optimization (training_step steps the optimizer "
                          f"itself) is not replayed zero-code; use the build() contract")
    model.train()
    restored, notes = ["weights", "hyperparameters"], []
    optimizer = _optimizer(model, state, torch, notes)
    if optimizer is not None:
        restored.append(f"optimizer ({type(optimizer).__name__})")
    global_step = state.get("global_step")
    at = int(global_step) - 1 if isinstance(global_step, int) else None  # captures number a step by the
    # global_step at its start: the checkpoint holds the updates of steps 0..global_step-1
    target = ReplayTarget(model=model, batch=None, loss_fn=_training_step_loss, optimizer=optimizer)
    return Restored(kind="lightning", path=str(path), target=target, at_step=at, restored=restored, warnings=notes,
                    loss_for=lambda meta: functools.partial(_training_step_loss,
                                                            batch_idx=int(meta.get("batch_idx", 0) or 0)))


def _optimizer(model, state: dict[str, Any], torch, notes: list[str]):
    saved = state.get("optimizer_states") or []
    if not saved:
        notes.append("the checkpoint holds no optimizer state: replaying without the optimizer update")
        return None
    try:
        configured = model.configure_optimizers()
    except Exception as exc:
        notes.append(f"configure_optimizers() failed outside a Trainer ({type(exc).__name__}: {_first(exc)}): "
                     f"replaying without the optimizer update")
        return None
    optimizers = _optimizers_of(configured, torch)
    if not optimizers:
        notes.append("configure_optimizers() returned no optimizer: replaying without the optimizer update")
        return None
    if len(optimizers) > 1:
        notes.append(f"configure_optimizers() returned {len(optimizers)} optimizers: replaying the first")
    opt = optimizers[0]
    try:
        opt.load_state_dict(saved[0])
    except (ValueError, KeyError, RuntimeError) as exc:
        notes.append(f"the saved optimizer state does not fit configure_optimizers()'s {type(opt).__name__} "
                     f"({_first(exc)}): replaying without the optimizer update")
        return None
    return opt


def _optimizers_of(configured: Any, torch) -> list[Any]:
    """Every optimizer in what configure_optimizers() may return (one, a list, a tuple of lists,
    a dict with "optimizer", or a list of such dicts)."""
    if isinstance(configured, torch.optim.Optimizer):
        return [configured]
    if isinstance(configured, dict):
        return _optimizers_of(configured.get("optimizer"), torch)
    if isinstance(configured, (list, tuple)):
        if len(configured) == 2 and isinstance(configured[0], (list, tuple)):
            return _optimizers_of(list(configured[0]), torch)
        return [o for item in configured for o in _optimizers_of(item, torch)]
    return []


def _training_step_loss(model, batch, batch_idx: int = 0) -> Any:
    """The module's own training_step with the step's batch_idx (from the capture); `self.log`
    without a Trainer only warns, and is hushed."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=f".*{_LOG_WITHOUT_TRAINER}.*")
        return model.training_step(batch, batch_idx)


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
