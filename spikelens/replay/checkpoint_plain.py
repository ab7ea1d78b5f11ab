"""A plain `torch.save`d state dict plus the function or class that builds the model (`--module`).

The file is a state dict, or a dict holding one under `model` / `state_dict` /
`model_state_dict` (and then maybe `optimizer` / `optimizer_state_dict`, `step` /
`global_step`). The factory returns the model, or `(model, optimizer)` to replay the update.
The loss is the model's own output on the batch unless `--loss pkg.mod:fn` names one.
"""
from __future__ import annotations

from pathlib import Path
from ..errors import ReplayError
from ._torch import require_torch
from .capture import load_checkpoint
from .restored import Restored, find_state, import_object, model_call_loss
from .target import ReplayTarget

MODEL_KEYS = ("model", "state_dict", "model_state_dict", "model_state")
OPTIMIZER_KEYS = ("optimizer", "optimizer_state_dict", "optim", "optimizer_state")
STEP_KEYS = ("step", "global_step")


def load_plain_checkpoint(path: str | Path, module: str | None) -> Restored:
    torch = require_torch()
    if not module:
        raise ReplayError(f"{path}: a state dict needs the function or class that builds the model: "
                          f"--module pkg.mod:make_model")
    factory = import_object(module, "--module")
    if not callable(factory):
        raise ReplayError(f"--module {module}: not callable")
    state = load_checkpoint(path)
    weights = find_state(state, MODEL_KEYS)
    if weights is None and isinstance(state, dict) and state and all(isinstance(k, str) for k in state):
        weights = state
    if not isinstance(weights, dict):
        raise ReplayError(f"{path}: holds no state dict (nor one under {', '.join(MODEL_KEYS)})")
    try:
        built = factory()
    except Exception as exc:
        raise ReplayError(f"--module {module}: calling it raised {type(exc).__name__}: {exc}") from None
    model, optimizer = (built if isinstance(built, tuple) and len(built) == 2 else (built, None))
    if not isinstance(model, torch.nn.Module):
        raise ReplayError(f"--module {module}: returned a {type(model).__name__}, not a torch.nn.Module "
                          f"(or a (model, optimizer) pair)")
    try:
        model.load_state_dict(weights)
    except (RuntimeError, TypeError, KeyError) as exc:
        raise ReplayError(f"{path}: weights do not fit the model: {str(exc).splitlines()[0]}") from None
    model.train()
    restored, notes = ["weights"], []
    opt_state = find_state(state, OPTIMIZER_KEYS)
    if optimizer is not None and opt_state is not None:
        try:
            optimizer.load_state_dict(opt_state)
            restored.append(f"optimizer ({type(optimizer).__name__})")
        except (ValueError, KeyError, RuntimeError) as exc:
            raise ReplayError(f"{path}: the optimizer state does not fit {type(optimizer).__name__}: "
                              f"{str(exc).splitlines()[0]}") from None
    elif optimizer is not None:
        notes.append(f"{path}: no optimizer state: the optimizer starts fresh")
    step = find_state(state, STEP_KEYS)
    target = ReplayTarget(model=model, batch=None, loss_fn=model_call_loss, optimizer=optimizer)
    return Restored(kind="state_dict", path=str(path), target=target,
                    at_step=int(step) if isinstance(step, int) else None, restored=restored, warnings=notes)
