"""Rebuild an optimizer from its saved state_dict alone (the class is not saved, its options are).

A trainer saves `optimizer.state_dict()`: per group its hyperparameters and the indices of
its parameters, per parameter its moments. The options present name the class
(`betas` and `decoupled_weight_decay` → AdamW, `momentum` and `nesterov` → SGD, ...);
`load_state_dict` then puts back every hyperparameter, the learning rate included.
"""
from __future__ import annotations

from typing import Any

from ..errors import ReplayError

_SIGNATURES: tuple[tuple[str, frozenset[str]], ...] = (
    ("transformers.optimization:Adafactor", frozenset({"scale_parameter", "relative_step", "clip_threshold"})),
    ("torch.optim:RMSprop", frozenset({"alpha", "centered"})),
    ("torch.optim:Adagrad", frozenset({"lr_decay", "initial_accumulator_value"})),
    ("torch.optim:SGD", frozenset({"momentum", "dampening", "nesterov"})),
    ("torch.optim:Adadelta", frozenset({"rho"})),
    ("torch.optim:ASGD", frozenset({"lambd", "t0"})),
    ("torch.optim:Rprop", frozenset({"etas", "step_sizes"})),
)
"""Options only one optimizer family has (the Adam family is told apart in optimizer_class)."""


def optimizer_class(group: dict[str, Any]):
    """The optimizer class whose options a saved param group holds, or None."""
    import importlib

    keys = set(group)
    if {"betas", "eps"} <= keys and not {"scale_parameter", "relative_step"} & keys:
        if "momentum_decay" in keys:
            name = "NAdam"
        elif "amsgrad" in keys:  # Adam and AdamW; older torch saves no decoupled_weight_decay: the trainers' AdamW
            name = "Adam" if group.get("decoupled_weight_decay") is False else "AdamW"
        elif "decoupled_weight_decay" in keys:
            name = "RAdam"
        elif "capturable" in keys:
            name = "Adamax"
        else:
            name = "SparseAdam"
        return getattr(importlib.import_module("torch.optim"), name)
    for path, signature in _SIGNATURES:
        if signature <= keys:
            module, _, name = path.partition(":")
            try:
                return getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                return None
    return None


def rebuild_optimizer(groups: list[list[Any]], state: dict[str, Any], torch, *, source: str):
    """An optimizer over `groups` (lists of parameters in the order the trainer grouped them)
    with `state` loaded, or a ReplayError saying why it does not fit."""
    saved = state.get("param_groups") if isinstance(state, dict) else None
    if not saved:
        raise ReplayError(f"{source}: no param_groups in the optimizer state")
    sizes = [len(g["params"]) for g in saved]
    if sizes != [len(g) for g in groups]:
        raise ReplayError(f"{source}: the optimizer state has groups of {sizes} parameters, the model "
                          f"groups of {[len(g) for g in groups]}")
    cls = optimizer_class(saved[0])
    if cls is None:
        raise ReplayError(f"{source}: optimizer options {sorted(k for k in saved[0] if k != 'params')} "
                          f"match no known optimizer")
    by_index = [p for g in groups for p in g]
    for index, moments in state.get("state", {}).items():
        p = by_index[int(index)] if int(index) < len(by_index) else None
        for key, value in moments.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and p is not None and value.shape != p.shape:
                raise ReplayError(f"{source}: optimizer state {key} of parameter {index} has shape "
                                  f"{tuple(value.shape)}, the parameter {tuple(p.shape)}")
    options = {k: v for k, v in saved[0].items() if k in ("foreach", "fused", "capturable", "differentiable")}
    try:
        opt = cls([{"params": g} for g in groups], lr=float(saved[0].get("lr", 1e-3) or 1e-3), **options)
    except (TypeError, ValueError, RuntimeError):
        opt = cls([{"params": g} for g in groups], lr=float(saved[0].get("lr", 1e-3) or 1e-3))
    try:
        opt.load_state_dict(state)
    except (ValueError, KeyError, RuntimeError) as exc:
        raise ReplayError(f"{source}: {cls.__name__} does not take the saved state: "
                          f"{str(exc).splitlines()[0]}") from None
    return opt
