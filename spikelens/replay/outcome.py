"""What a replay hands back: the report, and the logged values it is compared with.

Kept apart from `session` so that the walks over a trajectory (`zero_code`) and the
single-step replay share it without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import diagnostics
from ..errors import UsageError
from .run import StepResult


@dataclass
class ReplayReport:
    """Everything `spikelens replay` prints."""

    target: str
    step: int
    checkpoint: str | None
    device: str
    dtype: str
    torch_version: str
    result: StepResult
    optimizer: str | None = None
    window: list[dict[str, Any]] = field(default_factory=list)
    logged: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] | None = None
    bisect: dict[str, Any] | None = None
    replayed: dict[str, Any] | None = None

    @property
    def nonfinite(self):
        return self.result.nonfinite

    @property
    def exit_code(self) -> int:
        """0 everything finite, 1 a NaN/Inf was found (or, bisecting, a bad step)."""
        if self.bisect is not None:
            return 1 if self.bisect.get("first_bad") is not None else 0
        return 1 if self.result.nonfinite is not None else 0


def load_logged_for(logdir, metric, steps):
    if logdir is None:
        if metric is not None:
            raise UsageError("--metric needs --logdir (the logs to compare the replayed loss with)")
        return None
    from .logged import load_logged

    return load_logged(logdir, metric, steps)


def walk_window(steps: list[int], replay_step: Callable[[int], StepResult], logged) -> tuple[list[dict[str, Any]], StepResult]:
    """Replay the steps of a window in order (each call may advance the training state), a
    trajectory point a step; stop at the first step that produced a non-finite value."""
    trajectory: list[dict[str, Any]] = []
    result = None
    for s in steps:
        result = replay_step(s)
        for note in result.notes:
            diagnostics.warn(f"step {s}: {note}")
        trajectory.append(point(result, logged))
        if result.nonfinite is not None:
            if s != steps[-1]:
                diagnostics.warn(f"stopped the window at step {s}: a non-finite value appeared there")
            break
    assert result is not None
    return trajectory, result


def point(result: StepResult, logged) -> dict[str, Any]:
    point = {"step": result.step, "loss": result.loss, "grad_norm": result.grad_norm,
             "finite": result.nonfinite is None}
    if logged is not None:
        point["logged"] = logged.at(result.step)
    return point
