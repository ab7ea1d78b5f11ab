"""`--bisect FROM..TO`: the first step whose update breaks training, with few checked replays.

What a step needs is the state before it, so the search holds one: the checkpoint's at
first, then a copy of the state after the last probe found good. A *probe* of step m
replays the steps between that state and m as plain steps (training's own cost, one
loss and grad-norm read each), then m itself with every check (`run_step`).

A step is bad when its loss is non-finite or jumps above `factor` × the median of the
losses before it, when a gradient is non-finite, or when its update leaves a NaN/Inf in
the weights or optimizer moments. Two facts make the search short:

- a plain step that comes out bad stops the walk, and that step is probed at once from
  the state before it (still held): a bad loss or gradient is found with one checked
  replay, whatever the distance;
- a NaN/Inf that an update leaves in the weights or moments stays there (Adam's moments
  keep it), so "the state before m is broken" is monotone: a probe that finds the state
  already broken halves the range, as bisection does, for the NaN that hides in weights
  the following batches do not reach.

A probe whose own step is bad while the state before it is clean is the answer: every
earlier update left finite state and every earlier loss was seen. So at most
⌈log2 n⌉ + 1 steps are checked, and at most about 2n are replayed plain.

This assumes the replay is deterministic (the captured losses say whether it was): a
trajectory that drifts from the run is reported, and the step found is the replay's.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from .run import StepResult
from .trajectory import Trajectory

MIN_HISTORY = 3
"""Losses needed before a jump can be judged."""


@dataclass
class Probe:
    step: int
    loss: float | None
    bad: str | None
    phase: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "loss": self.loss, "bad": self.bad, "phase": self.phase}


@dataclass
class BisectResult:
    first: int
    last: int
    factor: float
    first_bad: int | None = None
    why: str | None = None
    result: StepResult | None = None
    probes: list[Probe] = field(default_factory=list)
    plain_steps: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"from": self.first, "to": self.last, "factor": self.factor, "first_bad": self.first_bad,
                "why": self.why, "checked_steps": len(self.probes), "plain_steps": self.plain_steps,
                "probes": [p.to_json() for p in self.probes]}


class _Judge:
    """Bad or not, from a step's loss and grad norm against the losses before it."""

    def __init__(self, traj: Trajectory, factor: float, prior: list[float]):
        self.traj, self.factor, self.prior = traj, factor, [x for x in prior if math.isfinite(x)]

    def why(self, step: int, loss: float | None, grad_norm: float | None) -> str | None:
        if loss is not None and not math.isfinite(loss):
            return f"loss is {loss}"
        if grad_norm is not None and not math.isfinite(grad_norm):
            return f"grad norm is {grad_norm}"
        history = self.prior + [v for s, v in sorted(self.traj.losses.items()) if s < step and math.isfinite(v)]
        if loss is not None and len(history) >= MIN_HISTORY:
            median = statistics.median(history[-50:])
            if median > 0 and loss > self.factor * median:
                return f"loss {loss:.4g} > {self.factor:g} × median {median:.4g} of the steps before"
        return None


def bisect(traj: Trajectory, first: int, last: int, *, factor: float = 3.0,
           prior_losses: list[float] | None = None) -> BisectResult:
    """Search (first..last] from a trajectory standing just before `first`."""
    out = BisectResult(first=first, last=last, factor=factor)
    judge = _Judge(traj, factor, prior_losses or [])
    plain_before = traj.plain_steps
    lo = first - 1           # the state after lo is good and held in `held`
    upper: int | None = None  # the first bad step is at or before `upper` (None: maybe none)
    held = traj.snapshot()
    while True:
        hi = last if upper is None else upper
        if lo >= hi:
            break
        m = (lo + hi + 1) // 2
        if traj.at != lo:
            traj.restore(held)
        probe_at = m
        for s in range(lo + 1, m):  # walk to m plainly; a bad plain step is probed at once
            _, _, applied = traj.plain(s, stop=lambda step, loss, norm: judge.why(step, loss, norm) is not None)
            if not applied:
                probe_at = s
                break
        result = traj.checked(probe_at)
        why = _bad(result, judge)
        nf = result.nonfinite
        out.probes.append(Probe(step=probe_at, loss=result.loss, bad=why, phase=nf.phase if nf else None))
        if why is None:
            lo, held = probe_at, traj.snapshot()
            continue
        if nf is not None and nf.phase == "state" and probe_at - 1 > lo:
            upper = probe_at - 1  # an earlier update left the NaN: it is in (lo, probe_at - 1]
            continue
        out.first_bad, out.why, out.result = probe_at, why, result
        break
    out.plain_steps = traj.plain_steps - plain_before
    return out


def _bad(result: StepResult, judge: _Judge) -> str | None:
    nf = result.nonfinite
    if nf is not None:
        where = f" in {nf.module}" if nf.module else ""
        op = f" ({nf.op})" if nf.op else ""
        return f"non-finite in {nf.phase}{where}{op}"
    return judge.why(result.step, result.loss, result.grad_norm)
