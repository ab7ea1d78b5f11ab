"""The training state walked forward from a checkpoint, one captured step at a time.

Each step is redone as the trainer did it: the RNG states of the step's start (dropout),
the learning rate its update used, the same gradient clipping, then the optimizer step.
A *plain* step is only that (no hooks, no anomaly mode: the cost of training itself, plus
one read of the loss and grad norm); a *checked* step is `run_step` with every check.
Snapshots copy the weights and optimizer state, so a search can go back.

Every replayed loss is compared with the loss the trainer saw at that step (kept in the
capture): a replay that drifts from it is not deterministic there, and says so.
"""
from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import diagnostics
from ..errors import ReplayError
from .run import StepResult, autocast, call_loss, rng_restore, rng_snapshot, run_step
from .target import ReplayTarget, call_build
from .tensors import move_to

DRIFT_REL = 1e-3
"""A replayed loss further than this (relative) from the captured one: the replay drifted."""

_UNSET = object()


@dataclass
class StepInput:
    """What one step needs besides the state: its batch and how the trainer stepped."""

    batch: Any
    rng: dict[str, Any] | None = None
    lr: list[float] | None = None
    max_grad_norm: Any = _UNSET
    loss: float | None = None
    loss_fn: Callable[[Any, Any], Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class CaptureInputs:
    """Steps from a capture folder written by `capture()` or the trainer callbacks."""

    def __init__(self, dir: str | Path):
        self.dir = Path(dir)
        if not self.dir.is_dir():
            raise ReplayError(f"{self.dir}: no such capture folder (--captures)")

    def missing(self, steps: range) -> list[int]:
        """The steps of `steps` with no capture."""
        from .capture import captured_steps

        have = set(captured_steps(self.dir))
        return [s for s in steps if s not in have]

    def require(self, steps: range, *, why: str) -> None:
        """Every step of `steps` is captured, or one line naming the missing ones."""
        from .capture import captured_steps

        have = set(captured_steps(self.dir))
        missing = [s for s in steps if s not in have]
        if missing:
            shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
            span = f" (captured: {min(have)}..{max(have)}, {len(have)} steps)" if have else " (it holds none)"
            raise ReplayError(f"{self.dir}: no capture of step {shown}{span}; {why} needs every step from "
                              f"{steps.start} to {steps.stop - 1} (capture with every=1)")

    def __call__(self, step: int) -> StepInput:
        from .capture import load_capture

        rec = load_capture(self.dir, step)
        meta = rec.get("meta") or {}
        lr = meta.get("lr")
        return StepInput(batch=rec["batch"], rng=rec.get("rng"), loss=rec.get("loss"),
                         lr=[float(x) for x in lr] if isinstance(lr, (list, tuple)) and lr else None,
                         max_grad_norm=meta["max_grad_norm"] if "max_grad_norm" in meta else _UNSET, meta=meta)


class BuildInputs:
    """Steps from the user's build(step, checkpoint): only the batch and loss_fn of each."""

    def __init__(self, build, checkpoint: str | None, spec: str):
        self.build, self.checkpoint, self.spec = build, checkpoint, spec

    def require(self, steps: range, *, why: str) -> None:
        return None

    def __call__(self, step: int) -> StepInput:
        fresh = call_build(self.build, step, self.checkpoint, self.spec)
        return StepInput(batch=fresh.batch, loss_fn=fresh.loss_fn)


@dataclass
class Drift:
    """Where the replay first left the trainer's own losses (None: it never did)."""

    compared: int = 0
    max_rel_diff: float = 0.0
    first_step: int | None = None
    replayed: float | None = None
    captured: float | None = None


@dataclass
class Trajectory:
    """The state after step `at`, and how to replay the steps after it."""

    target: ReplayTarget
    at: int
    inputs: Callable[[int], StepInput]
    device: Any
    dtype: str
    torch: Any
    thorough: bool = False
    start_rng: dict[str, Any] | None = None
    learning_rate: Callable[[int], float | None] = lambda step: None
    loss_for: Callable[[dict[str, Any]], Callable[[Any, Any], Any]] | None = None
    losses: dict[int, float] = field(default_factory=dict)
    captured: dict[int, float] = field(default_factory=dict)
    plain_steps: int = 0
    checked_steps: int = 0
    drift: Drift = field(default_factory=Drift)
    last_result: StepResult | None = None
    _lr_warned: bool = False

    def _prepare(self, step: int) -> ReplayTarget:
        from .capture import restore_rng

        if step != self.at + 1:
            raise ReplayError(f"internal: the state is at step {self.at}, not before step {step}")
        inp = self.inputs(step)
        rng = inp.rng if inp.rng is not None else (self.start_rng if not self.losses else None)
        if rng is not None:  # the capture's (the step's start), else the checkpoint's for the first step
            restore_rng({"rng": rng})
        self._set_lr(step, inp.lr)
        clip = self.target.max_grad_norm if inp.max_grad_norm is _UNSET else inp.max_grad_norm
        if inp.loss is not None:
            self.captured[step] = float(inp.loss)
        return ReplayTarget(model=self.target.model, batch=move_to(inp.batch, self.device, self.torch),
                            loss_fn=inp.loss_fn or (self.loss_for(inp.meta) if self.loss_for else self.target.loss_fn),
                            optimizer=self.target.optimizer,
                            max_grad_norm=clip)

    def _set_lr(self, step: int, lrs: list[float] | None) -> None:
        opt = self.target.optimizer
        if opt is None:
            return
        groups = opt.param_groups
        if lrs is not None and len(lrs) == len(groups):
            for g, lr in zip(groups, lrs):
                g["lr"] = lr
            return
        logged = self.learning_rate(step)
        if logged is not None and groups and groups[0]["lr"]:
            ratio = logged / groups[0]["lr"]  # the schedule scales every group alike
            for g in groups:
                g["lr"] = g["lr"] * ratio
        elif not self._lr_warned and isinstance(self.inputs, CaptureInputs):
            self._lr_warned = True
            diagnostics.warn(f"the capture of step {step} holds no learning rate (written by an older callback "
                             f"or capture() without meta): the replay keeps the checkpoint's from there on")

    def plain(self, step: int, stop: Callable[[int, float, float | None], bool] | None = None
              ) -> tuple[float, float | None, bool]:
        """Step `step` as the trainer ran it: (loss, grad norm before clipping, applied). When
        `stop(step, loss, grad_norm)` says so, the update is not applied and the state stays
        before the step (buffers put back), ready for a checked replay of it."""
        torch = self.torch
        t = self._prepare(step)
        model = t.model
        model.zero_grad(set_to_none=True)
        buffers = [b.detach().clone() for b in model.buffers()] if stop is not None else None
        rng = rng_snapshot(torch) if stop is not None else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the user's warnings are reported by checked steps
            with autocast(self.device, self.dtype, torch):
                loss = call_loss(t, step, torch)
            if loss.requires_grad:
                loss.backward()
        value = float(loss.detach().float())
        with_grad = [p for p in model.parameters() if p.grad is not None]
        norm = float(_total_norm([p.grad for p in with_grad], torch)) if with_grad else None
        self.plain_steps += 1
        self._record(step, value)
        if stop is not None and stop(step, value, norm):
            rng_restore(rng, torch)  # the checked replay draws the same dropout (captures restore it anyway)
            with torch.no_grad():
                for b, saved in zip(model.buffers(), buffers or []):
                    b.copy_(saved)
            model.zero_grad(set_to_none=True)
            return value, norm, False
        if t.optimizer is not None and with_grad:
            if t.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(with_grad, float(t.max_grad_norm))
            t.optimizer.step()
        self.at = step
        return value, norm, True

    def checked(self, step: int) -> StepResult:
        """Step `step` with every check (`run_step`), the update applied."""
        t = self._prepare(step)
        result = run_step(t, step, device=self.device, dtype=self.dtype, torch=self.torch, thorough=self.thorough)
        self.checked_steps += 1
        self.last_result = result
        if result.loss is not None:
            self._record(step, result.loss)
        self.at = step
        return result

    def advance_to(self, step: int) -> list[int]:
        """Plain steps up to and including `step`; the steps whose loss or grad norm was not
        finite on the way (they are replayed as the trainer did, updates and all)."""
        bad = []
        while self.at < step:
            loss, norm, _ = self.plain(self.at + 1)
            if not math.isfinite(loss) or (norm is not None and not math.isfinite(norm)):
                bad.append(self.at)
        return bad

    def snapshot(self) -> tuple[int, dict[str, Any], dict[str, Any] | None]:
        """A copy of the state (weights, buffers, optimizer state) after step `at`."""
        model, opt = self.target.model, self.target.optimizer
        weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return self.at, weights, copy.deepcopy(opt.state_dict()) if opt is not None else None

    def restore(self, snap: tuple[int, dict[str, Any], dict[str, Any] | None]) -> None:
        at, weights, opt_state = snap
        self.target.model.load_state_dict(weights)
        if opt_state is not None:
            # a deep copy: load_state_dict may keep the tensors it is given, and steps change them in place
            self.target.optimizer.load_state_dict(copy.deepcopy(opt_state))
        self.at = at

    def _record(self, step: int, loss: float) -> None:
        self.losses[step] = loss
        captured = self.captured.get(step)
        if captured is None:
            return
        d = self.drift
        d.compared += 1
        if math.isfinite(captured) and math.isfinite(loss):
            rel = abs(loss - captured) / max(abs(captured), 1e-12)
        else:
            rel = 0.0 if (math.isnan(captured) and math.isnan(loss)) or captured == loss else math.inf
        if rel > d.max_rel_diff:
            d.max_rel_diff = rel
        if rel > DRIFT_REL and d.first_step is None:
            d.first_step, d.replayed, d.captured = step, loss, captured

    def drift_warning(self) -> str | None:
        """One line when the replay left the trainer's losses, None when it followed them."""
        d = self.drift
        if d.first_step is None:
            return None
        return (f"the replay drifts from the training run from step {d.first_step} (replayed loss "
                f"{d.replayed:.6g} vs {d.captured:.6g} captured): it is not deterministic there (GPU "
                f"kernels, a missing RNG state or learning rate, a different clipping), so later steps "
                f"are the replay's, not necessarily the run's")


def _total_norm(grads: list[Any], torch) -> Any:
    norms = [torch.linalg.vector_norm(g.detach(), dtype=torch.float32) for g in grads]
    return torch.linalg.vector_norm(torch.stack([n.to(norms[0].device) for n in norms]))
