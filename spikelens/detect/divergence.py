"""Divergence: the loss trend turns and keeps rising, without one abrupt jump."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from ..frame import is_adversarial
from ..model.finding import Finding
from .turns import curve_noise
from .stats import first_and_last_thirds, global_sigma, log_scale, rank_correlation, rolling_median, true_runs


@dataclass(frozen=True, kw_only=True)
class DivergenceDetector(Detector):
    """A loss whose trend turned upward and kept rising to the end of the run.

    Detects: the minimum of the smoothed log-loss (a centred rolling median), followed
    by a sustained, mostly monotone rise to the end of the run that is large against
    the noise and not made of one abrupt jump (that is a spike that never recovered);
    or a loss that ran away below zero, orders of magnitude past its first values and
    still growing (an objective unbounded below); or a loss that never went below its first
    value and stood at twice it or more (it blew up at the start); or a run's main reward that fell from its
    best to the end the same way, taking back a third of what it had gained (a collapse); one
    whose best stretch stood within its own one-point swings of its start and that ended back
    there never kept a gain (a plateau of a run that never learned, not a collapse).
    Why it matters: every step after the turn makes the model worse; the checkpoint
    near the turn is the one to keep, and the run should have been stopped.
    Likely causes: an LR too high for this stage (or a schedule that never decays),
    loss of precision, accumulating numerical error, a data-order problem; also
    over-fitting when it is an eval loss.
    Evidence: step and value where the trend turned, value at the end, total rise,
    rank correlation of the rise, largest single jump's share of it.
    """

    code = "SL202"
    kind = "divergence"
    roles = ("loss", "reward")
    """A reinforcement learner's main reward is judged turned over: its collapse is its divergence."""

    smooth_fraction: float = 0.025
    """Smoothing window as a fraction of the run's points (at least `min_smooth`)."""
    min_smooth: int = 11
    min_rise_ratio: float = 1.08
    """End / turning-point ratio the rise must exceed (positive losses)."""
    min_rise_sigmas: float = 12.0
    """The rise must also exceed this many sigmas of the smoothed noise."""
    min_monotonic: float = 0.7
    """Spearman correlation of the smoothed loss with the step after the turn."""
    max_jump_share: float = 0.4
    """Largest one-point jump of the smoothed loss, as a share of the rise."""
    creep_ratio: float = 1.5
    """A rise under this ratio that an LR cut ended is a warning, not an error."""
    creep_min_ratio: float = 1.02
    """The main loss's rise under `min_rise_ratio` but above this, ..."""
    creep_monotonic: float = 0.9
    """... with this rank correlation or more after the turn (nearly every point higher) ..."""
    creep_duration: float = 0.25
    """... over at least this share of the run's points, is a slow creep: a note (a full-batch loss
    that bottomed at epoch 412 and rose 3% over the next 600 epochs, step after step). It is certain,
    and small; the best checkpoint is at the turn."""
    min_duration_fraction: float = 0.05
    skip_fraction: float = 0.05
    """The first points of a run (warm-up humps) never hold the turning point."""
    runaway_orders: float = 2.0
    """A loss below zero this many orders of magnitude beyond its first values' size ..."""
    runaway_growth: float = 1.1
    """... and still growing away (last tenth / middle third) has run away below zero."""
    sank_spreads: float = 3.0
    """A reward that gained nothing collapses when its last tenth lies this many times the 10-90% spread of
    its points before the fall below where it began, under all of them (`_sank`)."""
    collapse_share: float = 0.3
    """A reward collapses when its fall from its best takes back this share of what it had gained, and,
    for a reward that starts at or above zero (a return counted up from nothing), this share of its best
    level: a DQN return that reached 45 and ends at 39.5, after starting at 38, lost 75% of a gain that was
    its own wander, and 12% of what it earns."""
    held_out_fell: float = 0.1
    """A training loss that rose while the run's eval loss fell this share or more over the same
    steps did not diverge: the model got better on held-out data, so the training task got harder
    (a curriculum, stronger augmentation, a regularizer's weight ramping up): a note."""
    onset_share: float = 0.1
    """The rise starts where the smoothed loss last sat within this share of the rise above its
    minimum: a loss that holds its floor for a while and then climbs turned at the end of the
    floor, not at its lowest point in it."""
    start_rise: float = 2.0
    """A loss that never went below its first value and whose level stands this many times above it
    diverged from its first step."""
    undone_share: float = 0.5
    """A rise under `min_rise_ratio` (over `creep_min_ratio`, as monotone as a creep) that ends back at a level the
    loss last stood at this share of the run before the turn or longer ago undid that progress: it diverged
    (a slow self-supervised loss at 4.8 back to 5.14, its level 80 epochs earlier)."""
    staircase_jump_share: float = 0.6
    """Such a rise may climb in steps (a self-distillation loss jumps at each epoch's boundary), none of them
    more than this share of it: a staircase, where a spike that never came back is one step of nearly all of it."""
    short_rise: float = 1.3
    """Runs under 40 points (epochs, evaluations): the loss stands this far above its
    minimum for consecutive points, a quarter of those after the minimum at least."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        if series.role == "reward":
            return self._collapse(series, ctx) if series is ctx.main("reward") else []
        found = self._rising(series, ctx)
        for f in found:
            if not f.evidence.get("unbounded_below"):  # (a loss that ran to -1e9 is broken, whatever else fell)
                _unless_held_out_improved(self, f, ctx)
                if f.severity != "info":
                    unless_its_terms_fell(f, ctx)
        return found

    def _rising(self, series: Series, ctx: RunContext) -> list[Finding]:
        ok = np.isfinite(series.value)
        if not ok.all():
            last = int(np.argmax(~ok))  # only the finite stretch before a NaN
            ok = np.zeros_like(ok)
            ok[:last] = True
        step, value = series.step[ok], series.value[ok]
        n = step.size
        if n < 40:
            return self._short(series, ctx) if series is ctx.main("loss") else []
        runaway = self._below_zero(series, ctx, step, value) or self._from_the_first_step(series, ctx, step, value)
        if runaway is not None:
            return [runaway]
        y, is_log = log_scale(value)
        w = max(self.min_smooth, int(n * self.smooth_fraction)) | 1
        sm = rolling_median(y, w, center=True, min_samples=1)
        sig = global_sigma(y) * 1.2533 / np.sqrt(w)
        lo = int(n * self.skip_fraction)
        i_min = lo + int(np.nanargmin(sm[lo:]))
        hit = self._rise(y, sm, i_min, n, is_log, sig, w)
        cut = None
        if hit is None:  # a rise that only an LR drop ended (a step schedule cut it short)
            for d in _lr_drops(ctx, step, lo):
                a = max(lo, _previous(_lr_drops(ctx, step, lo), d))
                i_turn = a + int(np.nanargmin(sm[a:d]))
                hit = self._rise(y, sm, i_turn, d, is_log, sig, w)
                if hit is not None:
                    i_min, cut = i_turn, d
                    break
        creep = False
        if hit is None and series is ctx.main("loss") and not is_adversarial(series.metric) \
                and ctx.main("reward") is None:
            # a small rise that is certain: nearly every point after the turn higher, for a good part of the run
            hit = self._rise(y, sm, i_min, n, is_log, sig, w, min_ratio=self.creep_min_ratio,
                             min_rho=self.creep_monotonic, min_points=int(n * self.creep_duration))
            creep = hit is not None
        undone = None
        if hit is None and series is ctx.main("loss") and not is_adversarial(series.metric) \
                and ctx.main("reward") is None:
            # a late rise under `min_rise_ratio` that gave back most of the run's progress: a slow curve's loss
            # (an SSL loss that crept from 5.1 to 4.8 over 80 epochs) back where it stood long ago
            hit = self._rise(y, sm, i_min, n, is_log, sig, w, min_ratio=self.creep_min_ratio,
                             min_rho=self.creep_monotonic, max_jump=self.staircase_jump_share)
            undone = _last_at(sm, i_min, hit[0]) if hit is not None else None
            if undone is None or (i_min - undone) < self.undone_share * (i_min - lo):
                hit, undone = None, None
        if hit is None:
            return []
        tail, rho, share = hit
        last = n - 1 if cut is None else cut - 1
        low_step = int(step[i_min])
        i_min = _onset(sm, i_min, last + 1, tail, self.onset_share)
        if cut is None and i_min - lo <= w:
            i_min = _from_the_start(sm, i_min, self.min_monotonic)
        start_step = int(step[i_min])
        v0 = float(np.exp(sm[i_min])) if is_log else float(sm[i_min])
        v1 = float(np.exp(tail)) if is_log else tail
        ratio = v1 / v0 if is_log else None
        msg = (f"{series.label} diverged: the trend turned at step {start_step} ({v0:.4g}) and rose "
               + (f"{ratio:.2f}x" if ratio else f"by {v1 - v0:.4g}") + f" to {v1:.4g} by step {int(step[last])}"
               + (f", until the learning rate was cut at step {int(step[cut])}" if cut is not None else ""))
        # a small creep that an LR cut ended cost some steps, not the run: a warning
        fixed = cut is not None and (ratio is None or ratio < self.creep_ratio)
        if undone is not None:
            msg += (f": back to where it stood at step {int(step[undone])}, "
                    f"{100 * (i_min - undone) / max(i_min - lo, 1):.0f}% of the run's progress before the turn undone, "
                    f"rising with nearly every point (rank correlation {rho:.2f})")
        if creep:
            msg += (f", rising with nearly every point (rank correlation {rho:.2f}) for {100 * (n - i_min) / n:.0f}% "
                    f"of the run: a slow creep under {self.min_rise_ratio:g}x, a note (the checkpoint at the turn "
                    f"is the best one; a step size too large for this stage, a regularizer gaining on the loss)")
        return [Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric,
                        severity="info" if creep else "warning" if fixed or undone is not None else "error",
                        message=msg, start_step=start_step, peak_step=None, end_step=int(step[last]),
                        magnitude=ratio, evidence={"turn_value": v0, "end_value": v1, "rise_ratio": ratio,
                                                   "spearman": float(rho), "largest_jump_share": float(share),
                                                   "last_step": int(step[last]), "lowest_step": low_step,
                                                   "lr_cut_step": None if cut is None else int(step[cut]),
                                                   **({"note_because": "slow_creep"} if creep else {}),
                                                   **({"undone_from_step": int(step[undone])} if undone is not None else {})})]

    def _collapse(self, series: Series, ctx: RunContext) -> list[Finding]:
        """A reward that fell from its best and stayed down to the end of the run: its last
        tenth below its best by at least `collapse_share` of what it had gained from its first
        points (and `min_rise_sigmas` of its smoothed noise), and its smoothed curve below the
        half-way mark on most points from the fall on. On its own scale (a reward may cross
        zero); a fast fall counts (no spike test runs on a reward)."""
        step, value = series.finite()
        n = step.size
        if n < 40:
            return []
        y = value.astype(np.float64)
        w = max(self.min_smooth, int(n * self.smooth_fraction)) | 1
        if np.unique(y).size <= 3:
            # a game's outcome per episode (win/loss, +-1, a draw at 0): its level is its running mean, a win
            # rate; a median of outcomes is one of them, so a 40% win rate would read 'won' or 'lost' in turn
            sig = float(np.std(y)) * 1.2533 / np.sqrt(w)
            y = _running_mean(y, w)
        else:
            sig = global_sigma(y) * 1.2533 / np.sqrt(w)
        sm = rolling_median(y, w, center=True, min_samples=1)
        lo = int(n * self.skip_fraction)
        i_best = lo + int(np.nanargmax(sm[lo:]))
        best = float(sm[i_best])
        first = float(np.median(y[:max(3, n // 20)]))
        tail = float(np.median(y[-max(5, n // 10):]))
        gained, lost = best - first, best - tail
        if gained <= 0 or lost < self.collapse_share * gained:
            sank = self._sank(series, ctx, step, y, sm, first, tail, sig)
            return [sank] if sank is not None else []
        if lost < self.min_rise_sigmas * sig:
            return []
        if first >= 0 and lost < self.collapse_share * best:
            return []  # a return counted up from zero that kept most of its level (45 -> 39.5): a dip, no collapse
        i0 = _onset(-sm, i_best, n, -tail, self.onset_share)
        after = sm[i0:]
        fell = i0 + int(np.argmax(after < best - 0.5 * lost))
        if n - fell < max(20, int(n * self.min_duration_fraction)) or np.mean(sm[fell:] < best - 0.5 * lost) < 0.8:
            return []  # a late dip, or a fall it climbed back from
        kept = _never_kept(y)
        if kept is not None:  # (where the plateau detector read the reward flat, reconcile keeps that one)
            return [self._never_kept(series, ctx, step, *kept)]
        below = (f"back below where its log began ({first:.4g}): it lost all it had gained" if tail < first else
                 f"losing {lost / gained:.0%} of what the run had gained (from {first:.4g}): the policy got worse "
                 f"and did not come back")
        msg = (f"{series.label} collapsed: from {float(sm[i0]):.4g} at step {int(step[i0])} it fell to {tail:.4g} "
               f"by step {int(step[-1])} and stayed down, {below}")
        return [Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                        message=msg, start_step=int(step[i0]), end_step=int(step[-1]), magnitude=float(lost / gained),
                        evidence={"turn_value": float(sm[i0]), "end_value": tail, "first_value": first,
                                  "lost_share": float(lost / gained), "last_step": int(step[-1]),
                                  "higher_is_better": True})]

    def _sank(self, series: Series, ctx: RunContext, step: np.ndarray, y: np.ndarray, sm: np.ndarray,
              first: float, tail: float, sig: float) -> Finding | None:
        """A reward that had gained nothing and then fell far below anything it had shown and stayed
        there: its last tenth under its lowest point before the fall, by `sank_spreads` x the 10-90%
        spread of those points (AIRL's evaluation return wandering 185, 477, 58, -130 and then pinned at
        -2740 for 86 evaluations: a degenerate policy, a collapse, not a plateau at its start)."""
        n = y.size
        drop = first - tail
        if drop <= 0 or drop < self.min_rise_sigmas * sig:
            return None
        fell = int(np.argmax(sm < first - 0.5 * drop))
        if fell < 5 or n - fell < max(20, int(n * self.min_duration_fraction)) \
                or np.mean(sm[fell:] < first - 0.5 * drop) < 0.8:
            return None
        before = y[:fell]
        lo, hi = np.percentile(before, [10, 90])
        if tail >= float(before.min()) or drop < self.sank_spreads * max(float(hi - lo), 1e-12):
            return None
        i0 = max(0, fell - 1)
        msg = (f"{series.label} collapsed: after wandering at {first:.4g} (10-90% of its points {lo:.4g} to {hi:.4g}) "
               f"it fell at step {int(step[fell])} to {tail:.4g} and stayed there to step {int(step[-1])}, far below "
               f"anything it had shown: the policy degenerated and never came back")
        return Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[i0]), end_step=int(step[-1]), magnitude=float(drop / max(hi - lo, 1e-12)),
                       evidence={"turn_value": float(sm[i0]), "end_value": tail, "first_value": first,
                                 "spread_before": float(hi - lo), "last_step": int(step[-1]), "sank": True,
                                 "higher_is_better": True})

    def _never_kept(self, series: Series, ctx: RunContext, step: np.ndarray, start: float, best: float, i_best: int,
                    end: float, w: int) -> Finding:
        """A reward that fell back to where it began: the run as a whole learned nothing it kept."""
        msg = (f"{series.label} never kept a gain: it started at {start:.4g} (first {w} points), its best stretch of "
               f"{w} stood at {best:.4g} (step {int(step[i_best])}) and it fell back to {end:.4g} by step "
               f"{int(step[-1])}, no better than where it began: the policy learned nothing it kept")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                       evidence={"reading": "never", "level": start, "best": best, "best_step": int(step[i_best]),
                                 "end": end, "points": int(step.size), "never_learned": True, "fell_back": True,
                                 "higher_is_better": True})

    def _below_zero(self, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray) -> Finding | None:
        """A loss that falls through zero and keeps going: its last tenth `runaway_orders`
        orders of magnitude below zero against its first points' size, and still growing
        away (its last tenth at least `runaway_growth` x its middle third). A likelihood
        term whose predicted variance collapsed, or a sign error, runs to -1e9; a loss that
        may be negative (a flow's NLL) settles at its level."""
        n = value.size
        if value.min() >= 0:
            return None
        k, t = max(5, n // 50), max(5, n // 10)
        scale = float(np.median(np.abs(value[:k])))
        tail, prev = float(np.median(value[-t:])), float(np.median(value[n // 3:2 * n // 3]))
        floor = -max(scale, 1e-6) * 10 ** self.runaway_orders
        if not (tail < floor and prev < 0 and tail < self.runaway_growth * prev):
            return None
        sm = rolling_median(value, 5, center=True, min_samples=1)
        left = np.flatnonzero(sm < float(np.min(value[:k])) - 10 * max(scale, 1e-6))
        i0 = _fall_began(sm, max(int(left[0]) - 1, 0) if left.size else 0)
        orders = float(np.log10(abs(tail) / max(scale, 1e-6)))
        msg = (f"{series.label} ran away below zero: from {value[i0]:.4g} at step {int(step[i0])} to {tail:.4g} "
               f"by step {int(step[-1])} ({orders:.0f} orders of magnitude beyond its first values) and still "
               f"growing: an objective unbounded below (a likelihood term whose predicted variance collapsed, a "
               f"sign error); nothing after step {int(step[i0])} is training")
        return Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="error",
                       message=msg, start_step=int(step[i0]), end_step=int(step[-1]), magnitude=abs(tail) / max(scale, 1e-6),
                       evidence={"turn_value": float(value[i0]), "end_value": tail, "unbounded_below": True,
                                 "orders_of_magnitude": orders, "last_step": int(step[-1])})

    def _rose_from_start(self, series: Series, ctx: RunContext) -> Finding | None:
        """SL202 for the main loss of a short run that rose from its first points to its end
        (`rose_from_start`); not an adversarial term nor a reinforcement learner's loss (they rise
        as their opponent or returns improve). An error from `short_rise`'s ratio, else a warning."""
        if series is not ctx.main("loss") or is_adversarial(series.metric) or ctx.main("reward") is not None:
            return None
        hit = rose_from_start(series, min_ratio=self.min_rise_ratio)
        if hit is None:
            return None
        msg = (f"{series.label} diverged from its first points: it rose from {hit['low']:.4g} at step {hit['start']} "
               f"to {hit['end_value']:.4g} by step {hit['end']} ({hit['ratio']:.2f}x), rising with almost every "
               f"logged point and never coming back down: training made the model worse from the start")
        return Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric,
                       severity="error" if hit["ratio"] >= self.short_rise else "warning",
                       message=msg, start_step=hit["start"], peak_step=None, end_step=hit["end"],
                       magnitude=hit["ratio"],
                       evidence={"turn_value": hit["low"], "end_value": hit["end_value"], "rise_ratio": hit["ratio"],
                                 "from_first_points": True, "short_run": True, "last_step": hit["end"]})

    def _from_the_first_step(self, series: Series, ctx: RunContext, step: np.ndarray,
                             value: np.ndarray) -> Finding | None:
        """A positive loss whose every later point stands above its first, at a level (the median of
        the rest, and of its last tenth) `start_rise` times that first value or more: it rose at once
        and never came back, so the turn is the first step and the trend statistics (which skip the
        first points as warm-up) cannot see it. A flat level puts about half its points below its
        first, however noisy; a loss that learned goes below it. Not an adversarial term (a
        generator's loss rises as its discriminator learns) nor a reinforcement learner's (its
        losses chase returns that grow)."""
        n = value.size
        if value.min() <= 0 or is_adversarial(series.metric) or ctx.main("reward") is not None:
            return None
        first, rest = float(value[0]), value[1:]
        level, tail = float(np.median(rest)), float(np.median(value[-max(5, n // 10):]))
        if not (rest > first).all() or min(level, tail) < self.start_rise * first:
            return None
        # where it got up there: the first point past half its rise (in log)
        i_up = 1 + int(np.argmax(np.log(rest) >= 0.5 * (np.log(first) + np.log(level))))
        msg = (f"{series.label} diverged from its first step: it was {first:.4g} at step {int(step[0])}, stood at "
               f"{float(value[i_up]):.4g} by step {int(step[i_up])} and every later point to step {int(step[-1])} "
               f"stayed above where it began (median {level:.4g}, {level / first:.2f}x): the run blew up at the "
               f"start and never recovered")
        return Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="error",
                       message=msg, start_step=int(step[0]), peak_step=None, end_step=int(step[-1]),
                       magnitude=level / first,
                       evidence={"turn_value": first, "end_value": tail, "rise_ratio": level / first,
                                 "from_first_step": True, "risen_by_step": int(step[i_up]),
                                 "last_step": int(step[-1])})

    def _rise(self, y, sm, i_min: int, end: int, is_log: bool, sig: float, w: int, min_ratio: float | None = None,
              min_rho: float | None = None, min_points: int = 0, max_jump: float | None = None):
        """(tail level, rank correlation, largest jump's share) when y rises from the
        turning point `i_min` to the point before `end` as a divergence does: large against
        the level and the noise, mostly monotone, not made of one jump, still near its top
        at `end`; None otherwise. A creep is judged with its own ratio, correlation and length."""
        n = y.size
        ratio = self.min_rise_ratio if min_ratio is None else min_ratio
        post = sm[i_min:end]
        if post.size < max(20 if end == n else 10, int(n * self.min_duration_fraction), min_points):
            return None  # (a rise cut short by an LR drop is judged from 10 points)
        tail = float(np.median(y[max(i_min, end - max(5, n // 40)):end]))
        rise = tail - sm[i_min]
        big = rise > (np.log(ratio) if is_log else (ratio - 1) * abs(sm[i_min]))
        if not big or rise < self.min_rise_sigmas * sig:
            return None
        if tail < np.nanmax(post) - 0.3 * rise:
            return None  # rose and came back down: a hump, not a divergence
        rho = rank_correlation(post) if post.size > 2 else 0.0
        if not np.isfinite(rho) or rho < (self.min_monotonic if min_rho is None else min_rho):
            return None
        jump = _largest_step(y[i_min:end], max(2, min(w // 2, post.size // 8)))
        big_jump = float(np.nanmax(np.diff(post)))
        if max(big_jump, jump) > (self.max_jump_share if max_jump is None else max_jump) * rise:
            return None
        return tail, rho, max(big_jump, jump) / rise

    def _short(self, series: Series, ctx: RunContext) -> list[Finding]:
        """Few points (epoch-level runs, a fine-tune's evaluations): no trend statistics,
        so a divergence is a rise far above the minimum held for consecutive points,
        beyond the point noise when there are enough points to measure it, or a loss that rose
        from its first points to its last, step after step (`rose_from_start`). One finding
        for the training loss and the eval loss that rose with it."""
        rose = [(s, hit) for s in (series, ctx.main("eval_loss")) if s is not None
                for hit in [short_rise(s, self.short_rise)] if hit is not None]
        if not rose or rose[0][0] is not series and (_fell(series, since=rose[0][1]["start"])
                                                     or _at_its_floor(series, since=rose[0][1]["start"])):
            steady = self._rose_from_start(series, ctx)
            return [steady] if steady is not None else []  # (the eval loss alone rose: overfitting)
        s, hit = rose[0]
        start = min(h["start"] for _, h in rose)
        end = max(h["end"] for _, h in rose)
        also = [f"{o.label} {o_hit['ratio']:.2f}x from step {o_hit['start']}" for o, o_hit in rose[1:]]
        lr = ctx.main("lr")
        note = ""
        if lr is not None and lr.value.size and np.isfinite(lr.value).any():
            a, b = np.searchsorted(lr.step, start), np.searchsorted(lr.step, end, side="right")
            seg = lr.value[max(0, a - 1):b]
            if seg.size >= 2 and np.nanmax(seg) > 1.5 * seg[0] > 0:
                note = f" while {lr.label} rose to {np.nanmax(seg):.3g}"
        msg = (f"{s.label} diverged in a short run: from {hit['low']:.4g} at step {hit['start']} it rose "
               f"{hit['ratio']:.2f}x by step {hit['peak']} and stayed {self.short_rise:g}x or more above it for "
               f"{hit['points']} points, to step {hit['end']}{note}" + (f"; {'; '.join(also)}" if also else ""))
        if s is not series:  # the eval loss rose alone: say what the training loss did over those steps
            ends = _quarters(series, since=hit["start"])
            if ends is not None:
                first, last = ends
                msg += (f", while {series.label} did not fall over the same steps ({first:.4g} -> {last:.4g}): "
                        f"the model got worse on held-out data without fitting its training data better, "
                        f"not overfitting")
        return [Finding(kind="divergence", code=self.code, run=ctx.run, metric=s.metric, severity="error",
                        message=msg, start_step=start, peak_step=hit["peak"], end_step=end, magnitude=hit["ratio"],
                        evidence={"turn_value": hit["low"], "peak_ratio": hit["ratio"], "points_above": hit["points"],
                                  "short_run": True,
                                  "also_on": [{"metric": o.metric, "kind": "divergence", "step": h["start"],
                                               "severity": "error", "ratio": h["ratio"]} for o, h in rose[1:]]})]


def rose_from_start(series: Series, *, min_ratio: float, min_rho: float = 0.9, min_points: int = 8) -> dict | None:
    """A short positive series that rose from its first points and never came down: its lowest
    value among its first two, a rank correlation with the step of `min_rho` or more, its last
    quarter at least `min_ratio` above that lowest value and beyond 3 sigma of the point noise,
    and its last point in the top quarter of the rise. A loss that learned falls somewhere in
    its first points; one that rose every epoch from the first (an LR too high, a bad resume)
    got worse all along, though too slowly for `short_rise`."""
    step, v = series.finite()
    if v.size < min_points or v.min() <= 0:
        return None
    y = np.log(v)
    i = int(np.argmin(y))
    if i > 1 or rank_correlation(y) < min_rho:
        return None
    tail = float(np.median(y[-max(2, y.size // 4):]))
    rise = tail - y[i]
    noise = curve_noise(y)
    if rise < np.log(min_ratio) or rise < 3 * noise * np.sqrt(1 + 4 / y.size) \
            or y[-1] < y.max() - 0.25 * (y.max() - y[i]):
        return None
    return {"start": int(step[i]), "end": int(step[-1]), "low": float(v[i]), "end_value": float(np.exp(tail)),
            "ratio": float(np.exp(tail - y[i])), "points": int(v.size - i - 1)}


def short_rise(series: Series, ratio: float) -> dict | None:
    """The minimum of a short positive series and the longest run of consecutive points
    after it standing `ratio` or more above it (at least 2 points and a quarter of those
    after the minimum; beyond 3 sigma of the point noise once there are 8 points)."""
    step, v = series.finite()
    if v.size < 4 or v.min() <= 0:
        return None
    y = np.log(v)
    i = int(np.argmin(y[:-1]))
    # the level it rose from: the minimum with its two neighbours (their median), so that one evaluation
    # that dipped (1.33 among 1.49-2.15 of a small validation set) is not the floor a swing back is measured from
    low = float(np.median(y[i - 1:i + 2])) if i >= 1 else float(y[i])
    above = y[i + 1:] >= low + np.log(ratio)
    runs = true_runs(above)
    if not runs:
        return None
    a, b = max(runs, key=lambda r: r[1] - r[0])
    length = b - a + 1
    if a == 0 and y[i + 1] - y[i] >= np.log(3.0):
        return None  # 3x or more in one logged point: a blow-up (a spike that never recovered)
    if length < max(2, (y.size - i - 1) / 4):
        return None
    seg = y[i + 1 + a:i + 2 + b]
    rise = float(np.median(seg)) - low
    if y.size >= 8:
        if rise < 3 * curve_noise(y) * np.sqrt(1 + 1 / length):
            return None
    peak = i + 1 + a + int(np.argmax(seg))
    return {"start": int(step[i]), "end": int(step[i + 1 + b]), "peak": int(step[peak]), "low": float(np.exp(low)),
            "ratio": float(v[peak] / np.exp(low)), "points": int(length)}


def _running_mean(y: np.ndarray, w: int) -> np.ndarray:
    """The centred mean of `w` points (fewer at the ends, never padded)."""
    c = np.concatenate([[0.0], np.cumsum(y)])
    i = np.arange(y.size)
    a, b = np.maximum(i - w // 2, 0), np.minimum(i + w // 2 + 1, y.size)
    return (c[b] - c[a]) / (b - a)


def _onset(sm: np.ndarray, i_min: int, end: int, tail: float, share: float) -> int:
    """The last index from `i_min` on where the smoothed curve is within `share` of the rise
    (to `tail`) above its minimum, when the curve wandered on that floor until then; `i_min`
    when it was already climbing steadily from there (the slow start of a rise is the rise)."""
    within = np.flatnonzero(sm[i_min:end] <= sm[i_min] + share * (tail - sm[i_min]))
    j = i_min + int(within[-1]) if within.size else i_min
    if j - i_min < 3 or rank_correlation(sm[i_min:j + 1]) > 0.5:
        return i_min
    return j


def _from_the_start(sm: np.ndarray, i_min: int, min_rho: float) -> int:
    """The first points (skipped as warm-up) hold the turn when the loss was already rising
    steadily from its lowest point among them to `i_min`: a loss that climbed from its first
    logged points diverged from there. A warm-up hump falls back, so its minimum lies later."""
    g = int(np.nanargmin(sm[:i_min + 1]))
    if g < i_min - 2 and sm[g] < sm[i_min] and rank_correlation(sm[g:i_min + 1]) >= min_rho:
        return g
    return i_min


def _largest_step(y: np.ndarray, k: int) -> float:
    """The largest rise of the level between the `k` points before and the `k` after any point
    (medians): a one-step jump that stays shows in full, while a noisy per-batch loss's
    point-to-point swings (a 10% sd around a creeping trend) cancel in the medians."""
    if y.size < 2 * k + 1:
        return float(np.nanmax(np.diff(y))) if y.size > 1 else 0.0
    win = np.lib.stride_tricks.sliding_window_view(y, k)
    med = np.median(win, axis=1)  # med[i] = median(y[i:i+k])
    return float(np.max(med[k:] - med[:-k]))


def _fell(series: Series, since: int | None = None) -> bool:
    """Whether the series' last quarter lies below its first (`_quarters`)."""
    ends = _quarters(series, since)
    return ends is not None and ends[1] < ends[0]


def _at_its_floor(series: Series, since: int, above: float = 3.0) -> bool:
    """Whether a positive training loss sat near its lowest value over its points from step `since` on
    (their median under `above` x its minimum): a loss that had fitted its training set and stays at its
    floor while its eval loss rises overfitted (a memorised 0.004-0.011); one that stood 7x above the
    lowest point it ever touched (133 once, then 600-2700) fitted nothing there."""
    step, v = series.finite()
    if not v.size or v.min() <= 0 or v[step >= since].size < 2:
        return True  # (nothing to say it did not: the overfitting reading stands)
    return float(np.median(v[step >= since])) < above * float(v.min())


def _quarters(series: Series, since: int | None = None) -> tuple[float, float] | None:
    """Medians of the series' first and last quarters, over its points from step `since` on where
    it has four there (the steps an eval loss rose over: a training loss whose one wild first point,
    3.7e6, fell to a level it then held, 133-2732 for 13 epochs, did not fall while its eval loss rose)."""
    step, v = series.finite()
    if since is not None and v[step >= since].size >= 4:
        v = v[step >= since]
    if v.size < 2:
        return None
    k = max(1, v.size // 4)
    return float(np.median(v[:k])), float(np.median(v[-k:]))


def _lr_drops(ctx: RunContext, step: np.ndarray, lo: int) -> list[int]:
    """Indices into `step` where the run's LR falls to half or less between two logged
    values (a step schedule's cuts), after the first `lo` points."""
    lr = ctx.main("lr")
    if lr is None or lr.value.size < 2:
        return []
    with np.errstate(divide="ignore", invalid="ignore"):
        r = lr.value[1:] / lr.value[:-1]
    at = lr.step[1:][np.isfinite(r) & (r <= 0.5)]
    idx = np.searchsorted(step, at)
    return sorted({int(i) for i in idx if lo < i < step.size})


def _previous(drops: list[int], d: int) -> int:
    """The LR drop before `d` (0 for the first)."""
    before = [x for x in drops if x < d]
    return before[-1] if before else 0


def _never_kept(y: np.ndarray) -> tuple[float, float, int, float, int] | None:
    """(start, best, best index, end, window) of a reward whose best stretch stood above its start
    by less than three of its one-point swings (an episode's luck, not a skill) and that ended
    where it began (within the noise of a tenth's median): a run that never learned, whatever
    a burst of lucky episodes did; one that fell further below its start than it ever stood above
    it got worse than it began (a collapse). Levels are medians of a tenth of the run, the sustained
    reading of "never rose" (objective.py)."""
    n = y.size
    w = max(3, n // 10)
    med = np.median(np.lib.stride_tricks.sliding_window_view(y, w), axis=1)
    i_best = int(np.argmax(med))
    start, best, end = float(np.median(y[:w])), float(med[i_best]), float(np.median(y[-w:]))
    sigma = global_sigma(y)
    if best - start >= 3.0 * sigma or end > start + 3.0 * sigma * 1.2533 / np.sqrt(w) or start - end > best - start:
        return None
    return start, best, i_best, end, w


def _fall_began(sm: np.ndarray, i: int) -> int:
    """Where a runaway below zero began: back from `i` along the smoothed curve's uninterrupted fall,
    never before the last point at or above zero (a loss that trained down to zero and then ran away
    began running away there). A loss negative and falling from its first point (-3e4, -1e5, -2e5, ...)
    ran away from its first step, whatever size its first values set the threshold at."""
    above = np.flatnonzero(sm[:i + 1] >= 0)
    floor = int(above[-1]) if above.size else 0
    while i > floor and sm[i - 1] > sm[i]:
        i -= 1
    return i


def _unless_held_out_improved(det: DivergenceDetector, f: Finding, ctx: RunContext) -> None:
    """A training loss's divergence is a note when the run's eval loss fell `held_out_fell` or more
    over the same steps (its median over the last third of its evaluations there against the
    first third's, at least 3 evaluations): the model did not get worse."""
    if ctx.roles.get(f.metric or "") != "loss" or f.start_step is None:
        return
    held = ctx.main("eval_loss")
    if held is None:
        return
    step, value = held.finite()
    end = f.end_step if f.end_step is not None else (int(step[-1]) if step.size else f.start_step)
    v = value[(step >= f.start_step) & (step <= end)]
    if v.size < 3 or not (v > 0).all():
        return
    first, last = first_and_last_thirds(v)
    if last > (1.0 - det.held_out_fell) * first:
        return
    f.severity = "info"
    f.evidence["held_out_fell"] = {"metric": held.metric, "from": first, "to": last}
    f.message += (f"; {held.label} fell {100 * (1 - last / first):.0f}% over the same steps ({first:.4g} -> "
                  f"{last:.4g}): the model got better on held-out data, so the training task got harder (a "
                  f"curriculum, stronger augmentation, a regularizer ramping up), no divergence: a note")


def terms_that_fell(ctx: RunContext, metric: str, start: int, end: int) -> list[tuple[str, float, float]]:
    """The run's other training-loss series (and KL terms) over steps `start`..`end` when there are at least two
    and none of them rose (the median of the last third of their points there no higher than the
    first third's): [(metric, first, last)]; [] otherwise."""
    out = []
    for s in ctx.series.values():
        if s.metric == metric or s.role not in ("loss", "kl"):  # (a VAE's KL term is one of its terms)
            continue
        step, value = s.finite()
        v = value[(step >= start) & (step <= end)]
        if v.size < 6:
            continue
        first, last = first_and_last_thirds(v)
        if last > first:
            return []
        out.append((s.metric, first, last))
    return out if len(out) >= 2 else []


def unless_its_terms_fell(f: Finding, ctx: RunContext) -> None:
    """A total that rose while every term logged beside it fell or held is its weights changing (a KL
    weight annealed up, a loss term switched on by a curriculum), not the model getting worse: a note."""
    main = ctx.main("loss")
    if main is None or f.metric != main.metric or f.start_step is None:
        return  # (a term's own rise beside a total that held is `significance`'s minor-term story)
    s = ctx.series.get(f.metric)
    end = f.end_step if f.end_step is not None else (int(s.step[-1]) if s is not None and len(s) else f.start_step)
    fell = terms_that_fell(ctx, f.metric, f.start_step, end)
    if not fell:
        return
    f.severity = "info"
    f.evidence["terms_fell"] = [{"metric": m, "from": a, "to": b} for m, a, b in fell]
    named = ", ".join(f"{m} {a:.4g} -> {b:.4g}" for m, a, b in fell[:4])
    f.message += (f"; every term logged beside it fell or held over the same steps ({named}): the total rose "
                  f"through its weights (a KL or regularizer weight annealed up, a term switched on), not through "
                  f"the model getting worse; a note")


def _last_at(sm: np.ndarray, i_min: int, level: float) -> int | None:
    """The last point before the turn where the smoothed curve stood at `level` or above; None if never."""
    above = np.flatnonzero(sm[:i_min] >= level)
    return int(above[-1]) if above.size else None
