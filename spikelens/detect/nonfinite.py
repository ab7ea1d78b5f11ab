"""NaN and ±inf: the first non-finite value of a metric."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from .base import Detector, RunContext, Series
from .prenan import diverged_before_nan
from ..frame import SIDE_ROLES
from ..model.finding import Finding
from .stats import halvings, log_scale


@dataclass(frozen=True, kw_only=True)
class NonFiniteDetector(Detector):
    """The first NaN or ±inf of a loss, eval loss or gradient norm.

    Detects: the first logged value that is NaN or infinite, how many followed, and
    whether the metric became finite again; a blow-up in the points just before it
    belongs to the same finding.
    Why it matters: once the weights hold NaN the run is dead; every step after it is
    wasted compute, and checkpoints written after it are poisoned.
    Likely causes: fp16 overflow, a gradient explosion, log/sqrt/division of zero or a
    negative number, a bad batch, an LR far too high.
    Evidence: first non-finite step and value, count, last finite value, blow-up ratio
    and the step it began.
    """

    code = "SL201"
    kind = "nan"
    roles = ("loss", "eval_loss", "grad_norm", *SIDE_ROLES)

    blowup_points: int = 20
    """Points before the NaN searched for a blow-up."""
    blowup_ratio: float = 1.5
    """A rise by this factor over the pre-NaN median counts as a blow-up."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        bad = ~np.isfinite(series.value)
        earlier = superseded_nonfinite(ctx, series.metric)
        if not bad.any():
            return [self._earlier_finding(series, earlier, ctx)] if earlier.height else []
        first = int(np.argmax(bad))
        step = series.step
        first_step = int(step[first])
        count = int(bad.sum())
        later_ok = np.flatnonzero(~bad[first:])
        back_step = int(step[first + later_ok[0]]) if later_ok.size else None
        value = series.value[first]
        what = "NaN" if np.isnan(value) else ("+inf" if value > 0 else "-inf")
        evidence = {"first_nonfinite_step": first_step, "first_nonfinite": what, "nonfinite_points": count,
                    "points": len(series), "finite_again_step": back_step}
        blow_start = None
        if first > 3:
            pre = series.value[max(0, first - self.blowup_points - 50):first]
            y, is_log = log_scale(pre)
            if is_log and np.isfinite(y).all() and y.size > 8:
                ref = np.median(y[: max(4, y.size - self.blowup_points)])
                tail = y[-self.blowup_points:]
                above = np.flatnonzero(tail - ref > np.log(self.blowup_ratio))
                if above.size:
                    k = y.size - tail.size + int(above[0])
                    blow_start = int(step[first - y.size + k])
                    evidence.update(blowup_start_step=blow_start, blowup_ratio=float(np.exp(y[-1] - ref)),
                                    last_finite=float(np.exp(y[-1])))
            if first > 0 and np.isfinite(series.value[first - 1]):
                evidence.setdefault("last_finite", float(series.value[first - 1]))
        if first == 0:
            message = f"{series.metric} is {what} from its first logged point (step {first_step}): {count} of {len(series)} points"
        else:
            message = f"{series.metric} became {what} at step {first_step}"
            if blow_start is not None:
                message += f" after blowing up {evidence['blowup_ratio']:.1f}x from step {blow_start}"
            message += f"; {count} non-finite point{'s' if count != 1 else ''}"
        message += (f", finite again from step {back_step}" if back_step is not None else ", never finite again")
        if earlier.height:
            evidence["superseded_nonfinite_points"] = earlier.height
            message += f"; {_earlier_text(earlier)}"
        hidden = zero_loss_from(ctx, first_step) if series.role != "loss" and back_step is None else None
        if hidden is not None:
            evidence["loss_reads_zero_from"] = hidden
            message += (f"; the loss reads 0.0 from step {hidden} on: the HF Trainer logs a non-finite loss as 0.0 "
                        f"(logging_nan_inf_filter), so it went non-finite there too")
        severity = "error" if series.role in ("loss", "eval_loss") else "warning"
        if series.role in SIDE_ROLES:
            severity = "info"  # an accuracy or a reward NaN while the losses are finite: worth knowing, no alarm
            if _losses_finite_at(ctx, series.step[bad]):
                message += "; the losses stay finite there: a metric computed on a degenerate batch, not a blow-up"
        if series.role == "grad_norm" and back_step is not None and (count <= 3 or _scale_halved(ctx, first_step)):
            severity = "info"  # fp16 steps the loss scaler skipped
            message += " (steps skipped by the fp16 loss scaler)"
        return [Finding(kind="nan", code=self.code, run=ctx.run, metric=series.metric, severity=severity,
                        message=message, start_step=first_step, peak_step=first_step, end_step=back_step,
                        evidence=evidence), *diverged_before_nan(series, ctx, first)]


    def _earlier_finding(self, series: Series, earlier: pl.DataFrame, ctx: RunContext) -> Finding:
        """The NaN/inf of launches that later ones replaced (runs appended to one log, a
        restart from an earlier step): the detectors judge the live timeline, but a value
        that went non-finite is a fact about the run whichever launch logged it."""
        step, value, segment = earlier.row(0)
        what = "NaN" if np.isnan(value) else ("+inf" if value > 0 else "-inf")
        launches = earlier.get_column("segment").unique().sort().to_list()
        evidence = {"first_nonfinite_step": int(step), "first_nonfinite": what, "nonfinite_points": earlier.height,
                    "points": len(series), "finite_again_step": None, "replaced_launch": True,
                    "launches": [int(k) + 1 for k in launches]}
        message = (f"{series.metric} was {what} at step {int(step)} in launch {int(segment) + 1}, which a later "
                   f"launch replaced: {_earlier_text(earlier, lead=False)}; the live run's {series.metric} "
                   f"stays finite")
        # the launch that went non-finite was replaced, so the run is not dead: a loss's is worth a
        # warning (the likely reason it was run again), any other metric's a note
        severity = "warning" if series.role in ("loss", "eval_loss") else "info"
        return Finding(kind="nan", code=self.code, run=ctx.run, metric=series.metric, severity=severity,
                       message=message, start_step=int(step), peak_step=int(step), end_step=None, evidence=evidence)


def superseded_nonfinite(ctx: RunContext, metric: str) -> pl.DataFrame:
    """`step, value, segment` of the metric's NaN/inf points that a later launch superseded
    (`stitching`), in read order; empty when there are none."""
    table = ctx.__dict__.get("_superseded_nonfinite")  # one table a run, not one filter of the frame a metric
    if table is None:
        table = ctx.__dict__["_superseded_nonfinite"] = _superseded_table(ctx.frame)
    return table.filter(pl.col("metric") == metric).drop("metric") if table.height else table.drop("metric")


def _superseded_table(frame: pl.DataFrame | None) -> pl.DataFrame:
    cols = {"metric": pl.String, "step": pl.Int64, "value": pl.Float64, "segment": pl.Int64}
    if frame is None or "superseded" not in frame.columns or not frame.get_column("superseded").any():
        table = pl.DataFrame(schema=cols)
    else:
        table = (frame.filter(pl.col("superseded") & ~pl.col("value").is_finite())
                 .sort("seq").select([pl.col(c).cast(t) for c, t in cols.items()]))
    return table


def _earlier_text(earlier: pl.DataFrame, lead: bool = True) -> str:
    """How many NaN/inf points earlier (superseded) launches logged, and in how many launches."""
    n, k = earlier.height, earlier.get_column("segment").n_unique()
    text = f"{n} non-finite point{'s' if n != 1 else ''} in {k} launch{'es' if k != 1 else ''} a later one replaced"
    return f"also {text}" if lead else text


def _losses_finite_at(ctx: RunContext, steps: np.ndarray) -> bool:
    """Are the run's losses finite wherever they were logged at these steps?"""
    losses = ctx.by_role("loss") + ctx.by_role("eval_loss")
    seen = False
    for loss in losses:
        at = np.isin(loss.step, steps)
        if at.any():
            seen = True
            if not np.isfinite(loss.value[at]).all():
                return False
    return seen


def _scale_halved(ctx: RunContext, at: int) -> bool:
    """Did a loss-scale metric halve within a few logged points of `at`?"""
    for sc in ctx.by_role("loss_scale"):
        i = int(np.searchsorted(sc.step, at))
        if halvings(sc.value[max(0, i - 3):i + 4]).any():
            return True
    return False


def zero_loss_from(ctx: RunContext, at: int) -> int | None:
    """The step from which the main loss reads exactly 0.0 to its end, when that starts
    within a few logged points of `at` and the loss was not near zero before: how the
    HF Trainer shows a NaN loss (`logging_nan_inf_filter` drops it from the average)."""
    loss = ctx.main("loss")
    if loss is None or len(loss) < 3:
        return None
    v = loss.value
    nonzero = np.flatnonzero(v != 0)
    if nonzero.size == 0 or nonzero[-1] >= v.size - 1 or np.nanmedian(np.abs(v[:nonzero[-1] + 1])) < 1e-3:
        return None
    first_zero = int(nonzero[-1]) + 1
    i = int(np.searchsorted(loss.step, at))
    return int(loss.step[first_zero]) if abs(first_zero - i) <= 3 else None
