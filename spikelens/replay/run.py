"""Run one training step under watch: state and batch checks, forward with op and module
hooks, backward under `torch.autograd.detect_anomaly(check_nan=True)` with node hooks,
the gradient table, and the optimizer step when the target has an optimizer.
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
        for state in getattr(opt, "state", {}).values():
            for k, v in list(state.items()):
                if isinstance(v, torch.Tensor) and k != "step":
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


def check_state(model, torch) -> NonFinite | None:
    """Parameters or buffers already NaN/Inf before the step: the checkpoint itself is broken."""
    types = {n or "(root)": type(m).__name__ for n, m in model.named_modules()}
    for kind, named in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, t in named:
            if not all_finite(t, torch):
                module = name.rpartition(".")[0] or "(root)"
                return NonFinite(phase="state", module=module, module_type=types.get(module), op=None,
                                 detail=f"{kind} {name} holds {describe_nonfinite(t, torch)} before the step "
                                        f"(the checkpoint or the model's init is already broken)")
    return None


def check_input(batch, torch) -> NonFinite | None:
    hit = first_nonfinite(batch, torch)
    if hit is None:
        return None
    path, t = hit
    return NonFinite(phase="input", module=None, module_type=None, op=None,
                     detail=f"{path} holds {describe_nonfinite(t, torch)}: the batch itself is bad")


def run_step(target: ReplayTarget, step: int, *, device, dtype: str, torch) -> StepResult:
    """One forward + backward (+ optimizer step) with every check; the first NaN/Inf wins."""
    model = target.model
    model.zero_grad(set_to_none=True)
    notes: list[str] = []
    found = check_state(model, torch) or check_input(target.batch, torch)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=True):
            with ForwardWatch(model, torch) as fwd, autocast(device, dtype, torch):
                try:
                    out = target.loss_fn(model, target.batch)
                except ReplayError:
                    raise
                except Exception as exc:
                    raise ReplayError(f"loss_fn raised {type(exc).__name__} at step {step}: {exc}") from None
            loss = scalar_loss(out, torch)
            loss_value = float(loss.detach().float())
            found = found or fwd.found
            if found is None and not math.isfinite(loss_value):
                found = NonFinite(phase="forward", module=None, module_type=None, op=None,
                                  detail=f"the loss is {loss_value} but no watched op produced it")
            if not loss.requires_grad:
                raise ReplayError(f"the loss at step {step} does not require grad (no trainable parameter "
                                  f"reaches it, or loss_fn runs under torch.no_grad)")
            bwd_found = _backward(loss, fwd, watch=found is None, torch=torch, notes=notes)
            found = found or bwd_found
    notes.extend(_user_warnings(caught))
    grads = measure(model, torch)
    if target.optimizer is not None:
        before = snapshot(model)
        try:
            target.optimizer.step()
        except Exception as exc:
            raise ReplayError(f"optimizer.step() raised {type(exc).__name__} at step {step}: {exc}") from None
        record_update(grads, model, before, torch)
        if found is None:
            found = _after_optimizer(model, torch)
    if found is not None and found.step is None:
        found.step = step
    return StepResult(step=step, loss=loss_value, nonfinite=found, grads=grads, notes=notes)


def _after_optimizer(model, torch) -> NonFinite | None:
    broken = check_state(model, torch)
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
