"""`replay()`: what `spikelens replay` calls, usable from Python too.

The target is a build function (`file.py:build`), or a checkpoint replayed without code:
a Hugging Face `checkpoint-N/` folder, a Lightning `.ckpt` with `module`, a state dict
with a model factory, over the batches a capture folder holds. Replays step N (or the
window N-K..N), or searches FROM..TO for the first bad step (`bisect`), and compares
with the logged loss when a log folder is given (else with the captured one).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .. import diagnostics
from ..errors import ReplayError, UsageError
from ._torch import require_torch
from .outcome import ReplayReport, load_logged_for, walk_window
from .run import DTYPES, place, resolve_device, run_step
from .target import ReplayTarget, call_build, load_build


def replay(target: str | Callable[..., Any], step: int | None = None, *, checkpoint: str | Path | None = None,
           device: str = "auto", dtype: str = "float32", window: int = 0,
           logdir: str | Path | None = None, metric: str | None = None, captures: str | Path | None = None,
           module: str | None = None, loss: str | None = None, bisect: str | tuple[int, int] | None = None,
           factor: float = 3.0, thorough: bool = False) -> ReplayReport:
    """Replay training step `step` of `target` (`file.py:build`, `pkg.mod:build`, the build
    function itself, or a checkpoint path replayed from `captures`) and report where the first
    NaN/Inf came from; with `bisect=(FROM, TO)`, find the first bad step of that range."""
    torch = require_torch()
    span = parse_span(bisect) if bisect is not None else None
    if span is None and step is None:
        raise UsageError("--step N (the step to replay) or --bisect FROM..TO is required")
    kind = _checkpoint_kind(target)
    if kind is not None or span is not None:
        from .zero_code import replay_trajectory

        _check_options(step if step is not None else span[0], window, dtype, checkpoint)
        return replay_trajectory(target, kind, step, span=span, checkpoint=checkpoint, device=device, dtype=dtype,
                                 window=window, logdir=logdir, metric=metric, captures=captures, module=module,
                                 loss=loss, factor=factor, thorough=thorough, torch=torch)
    _check_options(step, window, dtype, checkpoint)
    spec = target if isinstance(target, str) else getattr(target, "__qualname__", repr(target))
    build = load_build(target) if isinstance(target, str) else target
    ckpt = None if checkpoint is None else str(checkpoint)
    dev = resolve_device(device, torch)
    steps = list(range(step - window, step + 1))
    with diagnostics.collecting() as diag:
        logged = load_logged_for(logdir, metric, steps)
        first = place(call_build(build, steps[0], ckpt, spec), dev, torch)
        if window and first.optimizer is None:
            diagnostics.warn("--window without an optimizer in the ReplayTarget: the weights stay those of "
                             "the checkpoint, only the batch changes from step to step")
        def replay_step(s: int):
            t = first if s == steps[0] else _next_step(build, s, ckpt, spec, first, dev, torch)
            return run_step(t, s, device=dev, dtype=dtype, torch=torch, thorough=thorough)

        trajectory, result = walk_window(steps, replay_step, logged)
        comparison = None
        if logged is not None:
            from .logged import compare

            comparison = compare(result.loss, logged.at(result.step), metric=logged.metric, step=result.step)
    opt = first.optimizer
    return ReplayReport(target=spec, step=step, checkpoint=ckpt, device=str(dev), dtype=dtype,
                        torch_version=str(torch.__version__), result=result,
                        optimizer=type(opt).__name__ if opt is not None else None,
                        window=trajectory if window else [], logged=comparison, warnings=diag.lines)


def parse_span(span: str | tuple[int, int]) -> tuple[int, int]:
    """`1000..1031` (or a pair) → (1000, 1031), both ends included."""
    if isinstance(span, tuple):
        first, last = span
    else:
        head, sep, tail = str(span).partition("..")
        try:
            if not sep:
                raise ValueError
            first, last = int(head), int(tail)
        except ValueError:
            raise UsageError(f"--bisect {span}: expected FROM..TO, two steps (e.g. 1000..1031)") from None
    if first < 0 or last < first:
        raise UsageError(f"--bisect {first}..{last}: FROM must be 0 or more and not after TO")
    return int(first), int(last)


def _checkpoint_kind(target) -> str | None:
    """The kind of checkpoint a TARGET path names, None for a build function."""
    if not isinstance(target, (str, Path)):
        return None
    from .restored import checkpoint_kind

    path = Path(target)
    return checkpoint_kind(path) if path.exists() else None


def _check_options(step: int, window: int, dtype: str, checkpoint) -> None:
    if window < 0:
        raise UsageError(f"--window {window}: must be 0 or more")
    if step - window < 0:
        raise UsageError(f"--window {window} reaches before step 0 (--step {step})")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    if checkpoint is not None and not Path(checkpoint).exists():
        raise ReplayError(f"{checkpoint}: no such checkpoint")


def _next_step(build, step: int, ckpt, spec: str, first: ReplayTarget, dev, torch) -> ReplayTarget:
    """The batch (and loss_fn) of a later window step; model and optimizer carry on from the first."""
    from .tensors import move_to

    fresh = call_build(build, step, ckpt, spec)
    return ReplayTarget(model=first.model, batch=move_to(fresh.batch, dev, torch), loss_fn=fresh.loss_fn,
                        optimizer=first.optimizer)
