"""The loss the training run logged at the replayed steps, from the run's own logs.

A replay that does not reproduce the logged value is itself a finding: the spike
came from the data and the state together (optimizer moments, the exact weights of
that step), not from the batch alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import diagnostics
from ..errors import ReplayError

REPRODUCED_REL_DIFF = 0.5
"""A replayed loss within 50% of the logged one counts as reproduced."""


@dataclass
class Logged:
    """Logged values of one metric of one run, by step."""

    metric: str
    run: str
    values: dict[int, float]

    def at(self, step: int) -> float | None:
        return self.values.get(step)


def load_logged(logdir: str | Path, metric: str | None, steps: list[int]) -> Logged:
    """The metric's value at each step (the last one logged there, as a resumed run overwrote it)."""
    import polars as pl

    from ..api import load, roles_of

    frame = load(logdir)
    if frame.height == 0:
        raise ReplayError(f"{logdir}: no logged values found")
    if metric is None:
        metric = _main_loss(frame, roles_of(frame))
        diagnostics.warn(f"--metric not given: comparing with {metric!r}")
    sel = frame.filter(pl.col("metric") == metric)
    if sel.height == 0:
        have = sorted(frame.get_column("metric").unique().to_list())
        raise ReplayError(f"{logdir}: no metric {metric!r} (logged: {', '.join(have[:15])}"
                          f"{', ...' if len(have) > 15 else ''})")
    runs = sel.get_column("run").unique(maintain_order=True).to_list()
    if len(runs) > 1:
        diagnostics.warn(f"{logdir}: {len(runs)} runs log {metric!r}; comparing with the first, {runs[0]!r}")
    at = (sel.filter((pl.col("run") == runs[0]) & pl.col("step").is_in(steps))
          .sort("seq").group_by("step", maintain_order=True).agg(pl.col("value").last()))
    values = {int(s): (float(v) if v is not None else math.nan)
              for s, v in zip(at.get_column("step").to_list(), at.get_column("value").to_list())}
    missing = [s for s in steps if s not in values]
    if missing:
        diagnostics.warn(f"{logdir}: {metric!r} was not logged at step(s) {', '.join(map(str, missing[:10]))}")
    return Logged(metric=metric, run=str(runs[0]), values=values)


def _main_loss(frame, roles: dict[str, str]) -> str:
    import polars as pl

    losses = [m for m, r in roles.items() if r == "loss"]
    if not losses:
        raise ReplayError("--logdir given without --metric, and no metric there looks like a training loss")
    counts = frame.filter(pl.col("metric").is_in(losses)).group_by("metric").len().sort("len", descending=True)
    return str(counts.get_column("metric")[0])


def compare(replayed: float | None, logged: float | None, *, metric: str, step: int) -> dict[str, Any]:
    """Relative difference and whether the replay reproduced the logged value, with the sentence."""
    out: dict[str, Any] = {"metric": metric, "step": step, "value": logged, "replayed": replayed,
                           "rel_diff": None, "reproduced": None, "message": None}
    if logged is None or replayed is None:
        out["message"] = f"{metric} was not logged at step {step}"
        return out
    if not (math.isfinite(logged) and math.isfinite(replayed)):
        same = math.isnan(logged) == math.isnan(replayed) and not math.isfinite(logged) and not math.isfinite(replayed)
        out["reproduced"] = bool(same)
    else:
        rel = abs(replayed - logged) / max(abs(logged), 1e-12)
        out["rel_diff"] = rel
        out["reproduced"] = rel <= REPRODUCED_REL_DIFF
    if out["reproduced"]:
        out["message"] = (f"the replay reproduces the logged {metric} at step {step} "
                          f"({_fmt(replayed)} vs {_fmt(logged)})")
    else:
        diff = f", rel diff {out['rel_diff']:.0%}" if out["rel_diff"] is not None else ""
        out["message"] = (f"the replay does not reproduce the logged {metric} at step {step} "
                          f"({_fmt(replayed)} vs {_fmt(logged)}{diff}): data × state, not the batch alone "
                          f"(check the optimizer state, the exact weights of that step, and the RNG)")
    return out


def _fmt(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else str(x)
