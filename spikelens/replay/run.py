"""Run one training step under watch: state and batch checks, forward with op and module
hooks, backward under `torch.autograd.detect_anomaly(check_nan=True)` with node hooks,
the gradient table, and the optimizer step when the target has an optimizer.

The watch is dear (a Python call per op, anomaly mode's forward traces), so by default a
step first runs plain; only when its loss or a gradient comes out non-finite is it run
again, from the same RNG and buffers, under the watch to name the op. `thorough=True`
watches every step in one pass (it also sees a NaN that a later op masked away).
"""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import ReplayError
from .grads import GradTable, measure, record_update, snapshot
from .target import ReplayTarget
from .tensors import all_finite, describe_nonfinite, first_nonfinite, move_to
from .watch import BackwardWatch, ForwardWatch, NonFinite

DTYPES = ("float32", "float16", "bfloat16")


@dataclass
class StepResult:
    """What one replayed step showed."""

    step: int
    loss: float | None
    nonfinite: NonFinite | None
    grads: GradTable | None
    notes: list[str] = field(default_factory=list)

    @property
    def grad_norm(self) -> float | None:
        return self.grads.total_grad_norm if self.grads is not None else None


def resolve_device(device: str, torch):
    """`auto` → CUDA when available, else CPU; an unavailable CUDA is an error, not a fallback."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ReplayError(f"--device {device}: {exc}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ReplayError(f"--device {device}: CUDA is not available on this machine (torch {torch.__version__})")
    return dev


def autocast(device, dtype: str, torch):
    """The autocast context of `--dtype` (float32: none)."""
    if dtype not in DTYPES:
        raise ReplayError(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    if dtype == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=getattr(torch, dtype))


def place(target: ReplayTarget, device, torch) -> ReplayTarget:
    """Model, optimizer state and batch on the replay device."""
    target.model.to(device)
    opt = target.optimizer
    if opt is not None:
        # torch's own rule (Optimizer.load_state_dict): a step counter stays on the CPU unless the
        # group is fused or capturable, whose kernels take it on the parameters' device
        on_device = {id(p) for g in getattr(opt, "param_groups", [])
                     if g.get("fused") or g.get("capturable") for p in g["params"]}
        for param, state in getattr(opt, "state", {}).items():
            for k, v in list(state.items()):
                if isinstance(v, torch.Tensor) and (k != "step" or id(param) in on_device):
                    state[k] = v.to(device)
    target.batch = move_to(target.batch, device, torch)
    return target


def scalar_loss(out: Any, torch) -> Any:
    """The loss tensor from what loss_fn returned (a tensor, `.loss`, or `["loss"]`)."""
    loss = out
    if not isinstance(loss, torch.Tensor):
        loss = getattr(out, "loss", None)
        if loss is None and isinstance(out, dict):
            loss = out.get("loss")
    if not isinstance(loss, torch.Tensor):
        raise ReplayError(f"loss_fn returned a {type(out).__name__}; expected a scalar tensor "
                          f"(or an object with .loss)")
    if loss.numel() != 1:
        raise ReplayError(f"loss_fn returned a tensor of shape {tuple(loss.shape)}; expected a scalar")
    return loss.reshape(())


def check_state(model, torch, optimizer=None) -> NonFinite | None:
    """Parameters, buffers or optimizer moments already NaN/Inf before the step: the checkpoint
    itself is broken (a moment keeps a NaN for good, even while the weights are still finite)."""
    types = {n or "(root)": type(m).__name__ for n, m in model.named_modules()}
    for kind, named in (("parameter", model.named_parameters()), ("buffer", model.named_buffers()),
                        ("optimizer state of", _optimizer_state(model, optimizer, torch))):
        for name, t in named:
            if not all_finite(t, torch):
                module = name.split(" ")[0].rpartition(".")[0] or "(root)"
                return NonFinite(phase="state", module=module, module_type=types.get(module), op=None,
                                 detail=f"{kind} {name} holds {describe_nonfinite(t, torch)} before the step "
                                        f"(the checkpoint or the model's init is already broken)")
    return None


def _optimizer_state(model, optimizer, torch):
    """(`param name (exp_avg)`, tensor) for every tensor the optimizer keeps per parameter."""
    if optimizer is None:
        return
    names = {id(p): n for n, p in model.named_parameters()}
    for p, state in getattr(optimizer, "state", {}).items():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and key != "step":
                yield f"{names.get(id(p), '?')} ({key})", value


def check_input(batch, torch) -> NonFinite | None:
    hit = first_nonfinite(batch, torch)
    if hit is None:
        return None
    path, t = hit
    return NonFinite(phase="input", module=None, module_type=None, op=None,
                     detail=f"{path} holds {describe_nonfinite(t, torch)}: the batch itself is bad")


def run_step(target: ReplayTarget, step: int, *, device, dtype: str, torch, thorough: bool = False) -> StepResult:
    """One forward + backward (+ optimizer step) with every check; the first NaN/Inf wins.
    Plain first, watched again only when something came out non-finite (unless `thorough`)."""
    model = target.model
    model.zero_grad(set_to_none=True)
    notes: list[str] = []
    found = check_state(model, torch, target.optimizer) or check_input(target.batch, torch)
    watch = thorough or found is not None
    grads = None
    if not watch:
        rng, buffers = rng_snapshot(torch), [b.detach().clone() for b in model.buffers()]
        loss_value = _plain_pass(target, step, device, dtype, torch, notes)
        grads = measure(model, torch)
        if not (math.isfinite(loss_value) and _grads_finite(grads)):
            watch = True  # the same step again, from the same RNG and buffers, to name the op
            rng_restore(rng, torch)
            with torch.no_grad():
                for b, saved in zip(model.buffers(), buffers):
                    b.copy_(saved)
            model.zero_grad(set_to_none=True)
            notes.clear()
    if watch:
        loss_value, found = _watched_pass(target, step, device, dtype, torch, notes, found)
        grads = measure(model, torch)
    if target.optimizer is not None:
        before = snapshot(model)
        if target.max_grad_norm:
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None],
                                           float(target.max_grad_norm))
        try:
            target.optimizer.step()
        except Exception as exc:
            raise ReplayError(f"optimizer.step() raised {type(exc).__name__} at step {step}: {exc}") from None
        record_update(grads, model, before, torch)
        if found is None:
            found = _after_optimizer(model, target.optimizer, torch)
    if found is not None and found.step is None:
        found.step = step
    return StepResult(step=step, loss=loss_value, nonfinite=found, grads=grads, notes=notes)


def _grads_finite(grads: GradTable) -> bool:
    import numpy as np

    return bool(np.isfinite(grads.grad_norm[grads.has_grad]).all())


def rng_snapshot(torch) -> tuple[Any, Any]:
    """torch's CPU and CUDA generator states: a second pass draws the same dropout masks."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def rng_restore(state: tuple[Any, Any], torch) -> None:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def call_loss(target: ReplayTarget, step: int, torch) -> Any:
    """loss_fn(model, batch) as a scalar tensor; its exceptions are the user's, in one line."""
    try:
        out = target.loss_fn(target.model, target.batch)
    except ReplayError:
        raise
    except Exception as exc:
        raise ReplayError(f"loss_fn raised {type(exc).__name__} at step {step}: {exc}") from None
    return scalar_loss(out, torch)


def _plain_pass(target: ReplayTarget, step: int, device, dtype: str, torch, notes: list[str]) -> float:
    """Forward and backward as the training loop ran them: no hooks, no anomaly mode."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with autocast(device, dtype, torch):
            loss = call_loss(target, step, torch)
        _require_grad(loss, step)
        loss.backward()
    notes.extend(_user_warnings(caught))
    return float(loss.detach().float())


def _require_grad(loss, step: int) -> None:
    if not loss.requires_grad:
        raise ReplayError(f"the loss at step {step} does not require grad (no trainable parameter "
                          f"reaches it, or loss_fn runs under torch.no_grad)")


def _watched_pass(target: ReplayTarget, step: int, device, dtype: str, torch, notes: list[str],
                  found: NonFinite | None) -> tuple[float, NonFinite | None]:
    """Forward under op and module hooks, backward under anomaly mode with node hooks."""
    model = target.model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=True):
            with ForwardWatch(model, torch) as fwd, autocast(device, dtype, torch):
                loss = call_loss(target, step, torch)
            loss_value = float(loss.detach().float())
            found = found or fwd.found
            if found is None and not math.isfinite(loss_value):
                found = NonFinite(phase="forward", module=None, module_type=None, op=None,
                                  detail=f"the loss is {loss_value} but no watched op produced it")
            _require_grad(loss, step)
            bwd_found = _backward(loss, fwd, watch=found is None, torch=torch, notes=notes)
            found = found or bwd_found
    notes.extend(_user_warnings(caught))
    return loss_value, found


def _after_optimizer(model, optimizer, torch) -> NonFinite | None:
    broken = check_state(model, torch, optimizer)
    if broken is not None:
        broken.phase = "optimizer"
        broken.detail = broken.detail.split(" before the step")[0] + " after the optimizer step"
    return broken


def _backward(loss, fwd: ForwardWatch, *, watch: bool, torch, notes: list[str]) -> NonFinite | None:
    """Backward (inside the caller's anomaly mode) with node hooks; if anomaly mode stopped it,
    once more without anomaly mode so every gradient is there for the table."""
    if not watch:
        _plain_backward(loss, torch, notes, "backward after a non-finite forward raised")
        return None
    bwd = BackwardWatch(loss, fwd, torch)
    try:
        loss.backward(retain_graph=True)
    except RuntimeError as exc:
        error: RuntimeError | None = exc
    else:
        error = None
    found = bwd.found
    if error is None:
        return found
    if found is None:
        found = bwd.from_anomaly(str(error))
        if found is None:
            raise ReplayError(f"backward raised RuntimeError: {str(error).splitlines()[0]}") from None
    bwd.active = False
    for p in fwd.model.parameters():
        p.grad = None
    _plain_backward(loss, torch, notes, "second backward for the gradient table failed")
    return found


def _plain_backward(loss, torch, notes: list[str], failure: str) -> None:
    """Backward with anomaly mode off, only to fill the gradients for the table: the culprit is
    already known (or not sought), so an error becomes a note `failure: first line of it`."""
    with torch.autograd.set_detect_anomaly(False):
        try:
            loss.backward()
        except RuntimeError as exc:
            notes.append(f"{failure}: {str(exc).splitlines()[0]}")


_TORCH_NOISE = ("Anomaly Detection has been enabled", "Error detected in", "No forward pass information")


def _user_warnings(caught) -> list[str]:
    """Warnings the user's own code raised during the step (anomaly mode's chatter dropped)."""
    out = []
    for w in caught:
        text = str(w.message)
        if not any(n in text for n in _TORCH_NOISE):
            out.append(f"{w.category.__name__}: {text.splitlines()[0] if text else ''}")
    return out
