"""What a replay runs: the user's `build(step, checkpoint)` and the ReplayTarget it returns.

A target is named like a console-script entry point, `path/to/file.py:build` or
`package.module:build`, so the same build function works from the shell and from Python.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import ReplayError

DEFAULT_FUNCTION = "build"


@dataclass
class ReplayTarget:
    """One training step, as the user's build function rebuilds it.

    `loss_fn(model, batch)` returns the scalar loss (or an object with a `.loss` /
    `["loss"]`). `optimizer`, when given, is stepped after the gradients are recorded,
    which gives the update ratio ‖Δw‖/‖w‖ per layer; `max_grad_norm` clips the gradients
    before that step as the training loop did (the table shows them before clipping, as
    trainers log the grad norm).
    """

    model: Any
    batch: Any
    loss_fn: Callable[[Any, Any], Any]
    optimizer: Any = None
    max_grad_norm: float | None = None


def split_spec(spec: str) -> tuple[str, str]:
    """`a/b.py:build` → (`a/b.py`, `build`); the function defaults to `build`."""
    head, sep, func = spec.rpartition(":")
    if not sep or not func or os.sep in func or "/" in func or (len(head) == 1 and head.isalpha()):
        return spec, DEFAULT_FUNCTION  # no function part (or only a Windows drive letter)
    return head, func


def _is_file_spec(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where


def load_build(spec: str) -> Callable[..., Any]:
    """The build function a TARGET names; ReplayError for every way that can go wrong."""
    where, func = split_spec(spec)
    module = _load_file(where) if _is_file_spec(where) else _load_module(where)
    build = getattr(module, func, None)
    if build is None:
        have = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise ReplayError(f"{where}: no function {func!r} (callables there: {', '.join(have[:12]) or 'none'})")
    if not callable(build):
        raise ReplayError(f"{where}: {func!r} is a {type(build).__name__}, not a function")
    return build


def _load_file(where: str):
    path = Path(where)
    if not path.is_file():
        raise ReplayError(f"{where}: no such file" if not path.exists() else f"{where}: not a file")
    name = f"spikelens_replay_target_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ReplayError(f"{where}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(module_spec)
    parent = str(path.resolve().parent)
    sys.path.insert(0, parent)  # the file's own imports see its siblings, as when run as a script
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except ReplayError:
        raise
    except BaseException as exc:  # a SyntaxError or a failing import is the user's file, not a crash
        sys.modules.pop(name, None)
        raise ReplayError(f"{where}: importing it failed: {type(exc).__name__}: {exc}") from None
    finally:
        if parent in sys.path:
            sys.path.remove(parent)
    return module


def _load_module(where: str):
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)  # `pkg.module:build` resolves from where the user stands
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name and where.startswith(exc.name):
            raise ReplayError(f"{where}: no such module (nor file); TARGET is FILE.py:FUNCTION "
                              f"or package.module:FUNCTION") from None
        raise ReplayError(f"{where}: importing it failed: ModuleNotFoundError: {exc}") from None
    except BaseException as exc:
        raise ReplayError(f"{where}: importing it failed: {type(exc).__name__}: {exc}") from None
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def call_build(build: Callable[..., Any], step: int, checkpoint: str | None, spec: str = "build") -> ReplayTarget:
    """Call build(step, checkpoint) and check what came back."""
    torch = _torch()
    try:
        target = build(step, checkpoint)
    except ReplayError:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise ReplayError(f"{spec}: build(step={step}, checkpoint={checkpoint!r}) raised "
                          f"{type(exc).__name__}: {exc}") from None
    missing = [a for a in ("model", "batch", "loss_fn") if not hasattr(target, a)]
    if missing:
        raise ReplayError(f"{spec}: build returned a {type(target).__name__}, expected a ReplayTarget "
                          f"(missing {', '.join(missing)})")
    if not isinstance(target.model, torch.nn.Module):
        raise ReplayError(f"{spec}: ReplayTarget.model is a {type(target.model).__name__}, not a torch.nn.Module")
    if not callable(target.loss_fn):
        raise ReplayError(f"{spec}: ReplayTarget.loss_fn is not callable")
    if not isinstance(target, ReplayTarget):
        target = ReplayTarget(model=target.model, batch=target.batch, loss_fn=target.loss_fn,
                              optimizer=getattr(target, "optimizer", None),
                              max_grad_norm=getattr(target, "max_grad_norm", None))
    return target


def _torch():
    from ._torch import require_torch

    return require_torch()
