"""Oscillation: a sustained stretch of abnormally large swings, reported once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import scores
from .base import Detector, RunContext, Series
from ..frame import is_eval
from ..model.finding import Finding
from .stats import log_scale, rolling_median, true_runs


@dataclass(frozen=True, kw_only=True)
class OscillationDetector(Detector):
    """A stretch where the loss swings far more than its usual noise, for a long time.

    Detects: the rolling median absolute deviation of the detrended log-loss rising
    to `min_amp_ratio` times its run-wide median and staying there for at least
    `min_points` logged points (one spike barely moves a median, so it never counts);
    the stretch is reported once, with its start and end; a warning only when it cost
    progress (the trend stalled under the swings, `stall_swings`), a note otherwise.
    Why it matters: the optimizer is bouncing across a valley instead of descending;
    progress stalls and a spike or NaN often follows.
    Likely causes: an LR too high (often right after an LR jump or a restart), too
    little warm-up, β2 too low, batch size too small for the LR.
    A held-out curve of few evaluations (an eval loss, a val accuracy or mAP, too few points for
    a swing amplitude) oscillates when nearly every evaluation reverses the last one's move and
    the typical move is half the curve's level or more (`held_swing`): its numbers are noise, a
    tiny or unbalanced validation set, a decision threshold flipping. A warning when the curve
    ended no better than it started (the swings cost the progress); a note otherwise.
    Evidence: start and end steps, amplitude against the usual noise, number of swings.
    """

    code = "SL203"
    kind = "oscillation"
    roles = ("loss", "eval_loss", "accuracy", "other")
    """The training loss is judged for sustained swings; held-out curves (eval losses and
    scores) for evaluation-to-evaluation swings."""

    detrend_points: int = 15
    """Centred median that removes the trend (at least; grows with long runs)."""
    window_points: int = 45
    """Window of the swing amplitude (at least; grows with long runs)."""
    scale_fraction: float = 0.006
    """Long runs: the detrend window is this fraction of the points (swings span more points)."""
    min_amp_ratio: float = 3.0
    """Local swing amplitude / run-wide amplitude that opens a stretch."""
    keep_amp_ratio: float = 2.0
    """A stretch extends while the amplitude stays above this ratio and 40% of its core."""
    min_abs_amp: float = 0.03
    """Minimum swing amplitude on the log scale (≈3%) so quiet runs never qualify; for a loss read on
    its values (one that goes negative) the same share of the median size of its values."""
    keep_abs_fraction: float = 0.6
    """A stretch extends while the amplitude stays above this fraction of `min_abs_amp`."""
    min_points: int = 25
    min_fraction: float = 0.02
    merge_gap_points: int = 20
    """Stretches closer than this (or half the earlier stretch) are one oscillation."""
    stall_swings: float = 2.0
    """An oscillation is a warning only when it cost progress: over its stretch the trend fell by
    less than this many typical swings (a loss still falling steadily under growing noise, late in
    a clean run, is a note)."""
    held_swing: float = 1.5
    """A held-out curve whose typical move between evaluations is this factor (on its log, or
    half its level for a score that touches zero) ..."""
    held_reversals: float = 0.6
    """... and whose moves reverse direction this often (at least 3 times) oscillates."""
    held_min_points: int = 6
    held_swing_beside_train: float = 1.12
    """A held-out loss whose typical move between evaluations is this factor, while it is at least
    `held_train_multiple` x the training loss's own typical move, oscillates too (a note): a
    validation loss that swings 0.71 -> 1.05 -> 0.75 from epoch to epoch while the training loss
    falls smoothly is the evaluation's noise, not the model's progress."""
    held_train_multiple: float = 3.0
    floor_share: float = 0.02
    """A stalled oscillation of a loss is a note when its typical swing, in the loss's units, is under
    this share of what the loss had fallen from where it began (median of its first 3 points) to its
    level over the stretch: a loss at its floor (0.001-0.004 after falling from 3.3) doubles and halves
    on moves of a thousandth of its progress; its trend has nowhere left to fall, so 'stalled' says
    nothing. The loud oscillations the dev side labels no event swing 0.07-0.7% of the fall."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        if series.role != "loss":
            return self._held_out_lead(series, ctx) if _held_out(series, ctx) else []
        step, value = series.finite()
        n = step.size
        if n < 3 * self.window_points:
            return []
        y, is_log = log_scale(value)
        detrend = max(self.detrend_points, int(self.scale_fraction * n)) | 1
        window = max(self.window_points, 3 * detrend) | 1
        resid = y - rolling_median(y, detrend, center=True)
        amp = rolling_median(np.abs(resid), window, center=True)
        typical = float(np.nanmedian(amp))
        # the floor on the curve's own scale: a share of its level (on the log, `min_abs_amp` itself);
        # a loss read on its values (negative: an energy, an ELBO) swings against the size of its level,
        # so the Monte Carlo noise of an energy at -1.406 (0.0008 early, 0.0002 converged) is none
        floor = self.min_abs_amp if is_log else self.min_abs_amp * float(np.median(np.abs(value)))
        noiseless = typical == 0 and _noiseless(value)
        if noiseless:
            typical = NOISELESS_SHARE * floor  # a full-batch curve has no noise: its swings count against the floor
        if not np.isfinite(typical) or typical <= 0:
            return []
        ratio = amp / typical
        loud = amp > floor
        # hysteresis: a stretch opens above the floor and lasts while above most of it, so an
        # amplitude that hovers at the floor does not cut one oscillation into fragments
        still_loud = amp > self.keep_abs_fraction * floor
        regions = []
        for c0, c1 in true_runs((ratio > self.min_amp_ratio) & loud):
            if c1 - c0 < 4:
                continue
            core = float(np.nanmedian(amp[c0:c1 + 1]))
            keep = (amp > max(self.keep_amp_ratio * typical, 0.4 * core)) & still_loud
            while c0 > 0 and keep[c0 - 1]:
                c0 -= 1
            while c1 + 1 < n and keep[c1 + 1]:
                c1 += 1
            gap_ok = max(self.merge_gap_points, 0.5 * (regions[-1][1] - regions[-1][0])) if regions else 0
            if regions and c0 <= regions[-1][1] + gap_ok:
                regions[-1] = (regions[-1][0], max(c1, regions[-1][1]))
            else:
                regions.append((c0, c1))
        min_len = max(self.min_points, int(self.min_fraction * n))
        out = []
        stretches: list[tuple[int, int]] = []
        for a, b in regions:
            seg = resid[a:b + 1]
            if b - a + 1 < min_len or int(np.sum(np.diff(np.sign(seg[np.abs(seg) > typical])) != 0)) < 6:
                continue  # judged on the stretch the amplitude marks; only then are its edges refined
            a, b = _swing_edges(resid, amp, a, b, window // 2)
            if stretches and a <= stretches[-1][1] + max(self.merge_gap_points, 0.5 * (stretches[-1][1] - stretches[-1][0])):
                a = stretches.pop()[0]  # the refined edges close the gap: one oscillation
            stretches.append((a, b))
        trend = rolling_median(y, window, center=True, min_samples=1) if stretches else y
        for a, b in stretches:
            seg = resid[a:b + 1]
            swings = int(np.sum(np.diff(np.sign(seg[np.abs(seg) > typical])) != 0))
            r = float(np.nanmedian(ratio[a:b + 1]))
            s0, s1 = int(step[a]), int(step[b])
            swing = float(np.nanmedian(np.abs(seg)))
            progress = float(trend[a] - trend[b])  # what the trend still fell over the stretch
            # (a noiseless curve's swings are measured against an assumed floor, not its own noise: a note)
            stalled = progress < self.stall_swings * swing and not noiseless
            at_floor = _floor_share(value, trend, a, b, float(np.nanmedian(amp[a:b + 1]))) if stalled and is_log else None
            if at_floor is not None and at_floor[0] >= self.floor_share:
                at_floor = None
            stalled = stalled and at_floor is None
            usual = (f"swings of {float(np.nanmedian(amp[a:b + 1])):.2g}{' on its log' if is_log else ''} where the rest "
                     f"of the curve is one smooth line") if noiseless else f"swings {r:.1f}x its usual noise"
            msg = (f"{series.label} oscillated from step {s0} to {s1}: {usual} "
                   f"({swings} reversals over {b - a + 1} points)")
            if noiseless:
                msg += ("; a curve with no noise elsewhere has no usual swing to weigh these against "
                        "(a full-batch run): a note, with any spike among them its own finding")
            elif at_floor is not None:
                msg += (f"; its swings (about {at_floor[1]:.3g} at a level of {at_floor[2]:.4g}) are "
                        f"{100 * at_floor[0]:.2g}% of the {at_floor[3] - at_floor[2]:.4g} the loss fell from where it "
                        f"began ({at_floor[3]:.4g}): a loss near its floor swings by factors on tiny absolute moves, "
                        f"a note (an alarm from {100 * self.floor_share:g}%)")
            elif not stalled:
                msg += (f"; its trend kept falling through them ({progress / max(swing, 1e-12):.0f} typical swings"
                        f"{' on its log' if is_log else ''}): noise that did not cost progress, no alarm")
            out.append(Finding(kind="oscillation", code=self.code, run=ctx.run, metric=series.metric,
                               severity="warning" if stalled else "info", message=msg, start_step=s0, end_step=s1,
                               magnitude=r,
                               evidence={"amplitude_ratio": r, "swings": swings, "points": b - a + 1,
                                         "typical_amplitude": typical,
                                         "amplitude": float(np.nanmedian(amp[a:b + 1])),
                                         "trend_progress": progress, "stalled": bool(stalled),
                                         **({"note_because": "swings_at_floor", "fall_share": at_floor[0]}
                                            if at_floor is not None else {}),
                                         **({"noiseless": True} if noiseless else {})}))
        return out

    def _held_out_lead(self, series: Series, ctx: RunContext) -> list[Finding]:
        """One finding a run for its held-out curves that swing: on the first of them (the main
        eval loss, then eval losses, then scores, by name), naming the others."""
        mine = self._held_out(series, ctx)
        if not mine:
            return []
        main = ctx.main("eval_loss")
        rank = lambda s: (s is not main, s.role != "eval_loss", s.metric)  # noqa: E731
        others = [(s, f) for s in ctx.series.values() if s is not series and _held_out(s, ctx)
                  for f in self._held_out(s, ctx)]
        if any(rank(s) < rank(series) for s, _ in others):
            return []  # another held-out curve leads and names this one
        (found,) = mine
        if others:
            names = [s.metric for s, _ in others]
            found.message += f"; {len(names)} other held-out curve{'s' if len(names) > 1 else ''} swung too ({', '.join(names[:5])})"
            found.evidence["also_on"] = [{"metric": s.metric, "kind": "oscillation", "step": f.start_step,
                                          "severity": f.severity, "ratio": f.magnitude} for s, f in others]
            if any(f.severity == "warning" for _, f in others) and found.severity == "info":
                found.severity = "warning"
        return [found]

    def _held_out(self, series: Series, ctx: RunContext) -> list[Finding]:
        """Evaluation-to-evaluation swings of a held-out curve too short for the amplitude
        statistics (see the class doc)."""
        step, v = series.finite()
        n = v.size
        if n < self.held_min_points or n >= 3 * self.window_points:
            return []
        level = float(np.median(np.abs(v)))
        if level <= 0:
            return []
        grid = np.diff(np.unique(v))
        if grid.size and float(np.median(np.abs(np.diff(v)))) < 3 * float(grid.min()):
            return []  # moves of a digit or two of what the log prints (0.0006 -> 0.0007) are its rounding
        on_log = bool(v.min() > 0.01 * level)  # a score that touches 0 (a mAP of 0.000) moves on its level
        d = np.diff(np.log(v)) if on_log else np.diff(v) / level
        moved = np.flatnonzero(d != 0)
        if moved.size < 4:
            return []
        signs = np.sign(d[moved])
        flips = int(np.sum(signs[1:] != signs[:-1]))
        if flips < 3 or flips < self.held_reversals * (moved.size - 1):
            return []
        swing = float(np.median(np.abs(d[moved])))
        beside = on_log and series.role == "eval_loss" and self._swings_beside_train(swing, ctx)
        if swing < (np.log(self.held_swing) if on_log else self.held_swing - 1) and not beside:
            return []
        better = scores.direction(series) or -1  # an eval loss is better when lower
        k = max(2, n // 3)
        first, last = float(np.median(v[:k])), float(np.median(v[-k:]))
        stalled = better * (last - first) <= 0
        a = int(moved[0])
        s0, s1 = int(step[a]), int(step[-1])
        size = f"{np.exp(swing):.1f}x" if on_log else f"{swing:.0%} of its level"
        msg = (f"{series.label} swung {size} between evaluations (median move), reversing {flips} times over "
               f"{n} evaluations from step {s0} to {s1}: its numbers are mostly noise (a small or unbalanced "
               f"validation set, a decision threshold flipping)")
        msg += (f", and it ended no better than it started ({first:.4g} -> {last:.4g}): choose checkpoints by "
                f"something steadier" if stalled else "; its trend still improved, read it over several evaluations")
        if beside and swing < np.log(self.held_swing):
            stalled = False  # swings a smooth training loss does not make: a note on the evaluation's noise
            msg += f"; {self.held_train_multiple:g}x or more the training loss's own moves, which fell smoothly"
        return [Finding(kind="oscillation", code=self.code, run=ctx.run, metric=series.metric,
                        severity="warning" if stalled else "info", message=msg, start_step=s0, end_step=s1,
                        magnitude=float(np.exp(swing)) if on_log else 1.0 + swing,
                        evidence={"held_out": True, "median_move": swing, "on_log": on_log, "reversals": flips,
                                  "points": int(n), "first_level": first, "last_level": last,
                                  "stalled": bool(stalled), "beside_train": bool(beside and swing < np.log(self.held_swing))})]


    def _swings_beside_train(self, swing: float, ctx: RunContext) -> bool:
        """The held-out loss's typical move (log) clears `held_swing_beside_train` and is at least
        `held_train_multiple` x the training loss's own typical move."""
        train = ctx.main("loss")
        if train is None or swing < np.log(self.held_swing_beside_train):
            return False
        _, tv = train.finite()
        if tv.size < 4 or not (tv > 0).all():
            return False
        own = float(np.median(np.abs(np.diff(np.log(tv)))))
        return swing >= self.held_train_multiple * own


def _floor_share(value: np.ndarray, trend: np.ndarray, a: int, b: int, amp: float) -> tuple | None:
    """(swing / fall, swing, level, began) of a stretch of a log-scaled loss: its typical swing `amp`
    (log) in the loss's units at its median trend level, against the fall from the median of its first
    3 points to that level; None where the loss stands at or above where it began."""
    level = float(np.exp(np.nanmedian(trend[a:b + 1])))
    began = float(np.median(value[:3]))
    if not began > level:
        return None
    swing = level * float(np.expm1(amp))
    return swing / (began - level), swing, level, began


NOISELESS_SHARE = 0.1
"""A curve whose usual swing is exactly zero (a full-batch, deterministic loss: most of it one smooth
line) is judged against this share of `min_abs_amp`: its chaotic stretches (a toy regression's loss
jumping 14.6 -> 50 -> 19 -> 34 mid-fall) are the only swings it has."""


def _noiseless(value: np.ndarray) -> bool:
    """Nearly every value distinct (at least 90%): a usual swing of zero is a smooth curve, not values
    printed so coarsely that they repeat (0.12, 0.12, 0.13), whose flips are rounding."""
    v = value[np.isfinite(value)]
    return v.size > 0 and np.unique(v).size >= 0.9 * v.size


def _held_out(series: Series, ctx: RunContext) -> bool:
    """An eval loss, or a score measured on held-out data (named so, or logged at most half as
    often as the training loss); a running best never swings."""
    if series.role == "eval_loss":
        return True
    if scores.direction(series) == 0 or series.role == "reward" or scores._BEST.search(series.metric):
        return False
    if is_eval(series.metric):
        return True
    train = ctx.main("loss")
    return train is not None and len(series) <= 0.5 * len(train)


def _swing_edges(resid: np.ndarray, amp: np.ndarray, a: int, b: int, reach: int) -> tuple[int, int]:
    """Move a stretch's edges out to its first and last large swing.

    The amplitude is a centred median over many points, so it crosses its bar only once half
    its window is inside the stretch: the stretch it marks starts late and ends early. The
    first swing is the earliest point, within half a window before, that is as large as half
    the stretch's typical swing and from which on at least half the points are that large."""
    big = np.abs(resid) > 0.5 * float(np.nanmedian(amp[a:b + 1]))
    lo = max(0, a - reach)
    if lo < a:
        tail_share = np.cumsum(big[lo:a][::-1])[::-1] / np.arange(a - lo, 0, -1)
        ok = np.flatnonzero(big[lo:a] & (tail_share >= 0.5))
        if ok.size:
            a = lo + int(ok[0])
    hi = min(resid.size - 1, b + reach)
    if hi > b:
        head_share = np.cumsum(big[b + 1:hi + 1]) / np.arange(1, hi - b + 1)
        ok = np.flatnonzero(big[b + 1:hi + 1] & (head_share >= 0.5))
        if ok.size:
            b = b + 1 + int(ok[-1])
    return a, b
