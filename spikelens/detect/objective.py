"""The run's objective when it is a score or a reward: judged as the main curve, higher is better.

A run that logs no loss but a score (a Dice, an accuracy, a mAP) is trained to raise that score, so
its falls are what a loss's spikes and divergences are; a reinforcement learner's reward is its
objective too. The loss detectors read ratios on a log scale; a score is read on its own scale (an
accuracy is bounded, a reward may cross zero), against its own evaluation-to-evaluation noise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import scores
from .base import Detector, RunContext, Series
from ..model.finding import Finding

_BEST = scores._BEST
_NOT_ANSWERS = re.compile(r"explained|variance", re.I)
"""An explained variance is a fit statistic of a value function, not a model's answers."""
_ALL_OR_NOTHING = re.compile(r"seq(?:uence)?_?acc|exact|(?:^|[/_\-. ])em(?:$|[/_\-. ])", re.I)
"""Scores that count a whole output right only when every token is (sequence accuracy, exact match)."""


@dataclass(frozen=True, kw_only=True)
class ObjectiveDetector(Detector):
    """A score or reward, judged as the run's objective: its falls, its frozen or barely moving level.

    Detects: on a run that logs no loss and no reward, its main score (turned so higher is
    better): a fall of at least `min_drop_share` of its level in one evaluation, beyond
    `min_drop_noise` x its own evaluation-to-evaluation noise and beyond every other one-point
    fall of the run by `tail_factor`: a spike when it was back above the half-way mark within
    `max_spike_points` evaluations, a collapse when it stayed below it longer (or to the end). On
    any run, an accuracy-like score that repeated one exact value, below a perfect score, on every
    evaluation from its first (or second) on: the model's predictions never changed. On a run's
    main reward logged from the start, a best sustained level that never stood more than
    `min_reward_gain` of the reward's own size above where it began: the policy learned nothing
    that shows. On a run's main reward, however late its log starts, a return of exactly zero on
    every logged point (at least `min_frozen_points`) while the run's losses moved: no episode
    ever earned a reward.
    Why it matters: a collapse of the objective is the run losing what it had learned; a frozen
    accuracy is a model that answers the same whatever it is shown; a reward that never moved is a
    policy that never improved, whatever its losses did.
    Likely causes: a bad checkpoint, an evaluation on a corrupted batch, an LR spike (a fall); a
    constant or majority-class predictor, labels disconnected from the inputs, NaN weights (a
    frozen score); no reward signal, an exploration or reward-scale problem (a reward that never
    moved).
    Evidence: the level before the fall, the lowest value, the evaluations below half-way, the
    noise; the frozen value and how many evaluations held it; the reward's start level, best
    sustained level and size.
    """

    code = "SL208"
    kind = "divergence"
    roles = ("accuracy", "reward", "entropy")

    level_points: int = 5
    """Evaluations before a point that set the level it fell from (their median)."""
    min_drop_share: float = 0.3
    """A fall takes at least this share of the level it fell from ..."""
    min_drop_noise: float = 10.0
    """... and is at least this many times the score's own evaluation-to-evaluation noise ..."""
    tail_factor: float = 2.0
    """... and this many times the run's 99th-percentile one-point fall otherwise: a score that
    swings by a third every few evaluations has no falls to stand out from."""
    max_spike_points: int = 2
    """A fall back above half-way within this many evaluations is a spike; a longer one a collapse."""
    min_points: int = 8
    """Fewest evaluations a score's falls are judged on (the level needs some before it)."""
    min_frozen_points: int = 5
    """Fewest evaluations of one exact value that make a frozen score."""
    min_reward_points: int = 50
    """Fewest logged rewards judged for a rise too small to matter (a short run's rise is noise)."""
    min_uniform_points: int = 20
    """Fewest logged entropies at ln k that make a policy that never left uniform ..."""
    uniform_tolerance: float = 1e-5
    """... each within this relative distance of ln k (float32 rounding of a uniform softmax is 1e-7)."""
    min_reward_gain: float = 0.05
    """A reward whose best sustained level stood less than this share of its size above its start
    never learned: a policy that improved moves its return by more than a rounding of its size."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        if series.role == "entropy":
            found = self._uniform_policy(series, ctx) if series is ctx.main("entropy") else None
            return [found] if found is not None else []
        if series.role == "reward":
            if series is not ctx.main("reward"):
                return []
            return self._barely_rose(series, ctx) or self._never_rewarded(series, ctx)
        if scores.direction(series) != 1 or _BEST.search(series.metric) or _NOT_ANSWERS.search(series.metric):
            return []
        frozen = [s for s in sorted(ctx.by_role(series.role), key=lambda s: (-len(s), s.metric))
                   if scores.direction(s) == 1 and not _BEST.search(s.metric) and not _NOT_ANSWERS.search(s.metric)
                   and self._frozen(s, ctx) is not None]
        if frozen and frozen[0] is series:  # one finding for a run's frozen scores, on the one logged most
            found = self._frozen(series, ctx)
            moved = [s for s in ctx.by_role(series.role) if s not in frozen and scores.direction(s) == 1
                     and not _BEST.search(s.metric) and _moved(s)]
            if moved and found.evidence["level"] == 0:  # beside a score that moved, a score never once right
                # is one class or one head that is never right, not a model answering the same to everything
                found.severity = "info"
                found.message = (found.message.split(": the model's answers")[0] + f", while {moved[0].label} "
                                 f"moved: one class or one head was never right (a class never predicted, a head "
                                 f"left untrained), not the whole model")
                found.evidence["other_score_moved"] = moved[0].metric
            if len(frozen) > 1:
                found.message += f"; {', '.join(s.label for s in frozen[1:])} froze as well"
                found.evidence["also_frozen"] = [s.metric for s in frozen[1:]]
            chance = _frozen_at_chance(ctx)
            if chance is not None and found.severity != "info":  # the plateau detector's chance reading
                found.severity = "info"  # tells the run's frozen answers (`plateaus._frozen_at_chance`)
                found.message += f"; told as {chance.label}'s chance accuracy"
                found.evidence["note_because"] = "told_as_chance"
            return [found]
        if frozen and series in frozen:
            return []
        if is_objective_score(series, ctx):
            return self._falls(series, ctx)
        return []

    # -- falls of a score-only run's main score
    def _falls(self, series: Series, ctx: RunContext) -> list[Finding]:
        """One-evaluation falls far beyond the score's own noise: a spike when it came back
        above half-way at once, a collapse when it stayed down."""
        step, y = scores.oriented(series)
        n = y.size
        if n < self.min_points:
            return []
        k = self.level_points
        win = np.lib.stride_tricks.sliding_window_view(y[:-1], k)
        level = np.full(n, np.nan)
        level[k:] = np.median(win, axis=1)
        drop = level - y
        sigma = scores.point_sigma(y)
        falls = np.maximum(-np.diff(y), 0.0)
        big = np.flatnonzero((drop >= self.min_drop_share * np.abs(level)) & (drop >= self.min_drop_noise * sigma)
                             & (level > 0))
        if big.size == 0:
            return []
        rest = np.delete(falls, np.clip(big - 1, 0, falls.size - 1))
        tail = float(np.quantile(rest, 0.99)) if rest.size >= 10 else 0.0
        events = []
        i_next = 0
        for i in big:
            if i < i_next or drop[i] < self.tail_factor * tail:
                continue
            lvl, d = float(level[i]), float(drop[i])
            above = np.flatnonzero(y[i:] >= lvl - d / 2)
            back = i + int(above[0]) if above.size else n  # the first evaluation back above half-way
            low = i + int(np.argmin(y[i:back]))
            near = np.flatnonzero(y[back:] >= lvl - 0.2 * d) if back < n else np.empty(0, dtype=np.int64)
            j = back + int(near[0]) if near.size else None  # back near its level: the event is over
            events.append((i, low, back, j, lvl))
            i_next = n if j is None else max(j, i + 1)
        collapses = [e for e in events if e[2] - e[0] > self.max_spike_points]
        spikes = [e for e in events if e[2] - e[0] <= self.max_spike_points]
        out = [self._collapse(series, ctx, step, y, e) for e in collapses]
        if spikes:  # listed in one finding, as a loss's bad batches are
            out.append(self._spikes(series, ctx, step, y, spikes, sigma))
        return out

    def _collapse(self, series: Series, ctx: RunContext, step: np.ndarray, y: np.ndarray, e: tuple) -> Finding:
        i, low, back, j, lvl = e
        n = y.size
        lowest = float(y[low])
        where = f"back above half-way at step {int(step[back])}" if back < n else "still below half-way at the end"
        came = (f", near its level again ({float(y[j]):.4g}) at step {int(step[j])}" if j is not None else
                f"; it ended at {float(y[-1]):.4g}, below the {lvl:.4g} it had before")
        msg = (f"{series.label} collapsed at step {int(step[i])}: from {lvl:.4g} to {lowest:.4g} (lost "
               f"{1 - lowest / lvl:.0%} of its level), below half-way for {back - i} evaluations, {where}{came}: "
               f"the model lost what it had learned and had to learn it again")
        return Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[i]), peak_step=int(step[low]),
                       end_step=int(step[j]) if j is not None else int(step[-1]), magnitude=_times(lvl, lowest),
                       evidence={"higher_is_better": True, "objective_score": True, "level_before": lvl,
                                 "lowest": lowest, "evaluations_below_half": int(back - i),
                                 "recovered_step": None if j is None else int(step[j]), "turn_value": lvl,
                                 "end_value": float(y[-1])})

    def _spikes(self, series: Series, ctx: RunContext, step: np.ndarray, y: np.ndarray, events: list,
                sigma: float) -> Finding:
        """The score's one- or two-evaluation falls, listed in one finding as a loss's bad batches are."""
        parts = [(int(step[low]), float(y[low]), lvl) for _, low, _, _, lvl in events]
        deepest = max(range(len(parts)), key=lambda k: parts[k][2] - parts[k][1])
        listed = ", ".join(f"{s} ({v:.4g} against {lvl:.4g})" for s, v, lvl in parts[:8])
        more = f" and {len(parts) - 8} more" if len(parts) > 8 else ""
        lost = [1 - v / lvl for _, v, lvl in parts]
        unrec = [s for (s, _, _), e in zip(parts, events) if e[3] is None]
        if len(parts) == 1:
            head = (f"{series.label} fell at step {parts[0][0]} from {parts[0][2]:.4g} to {parts[0][1]:.4g} (lost "
                    f"{lost[0]:.0%} of its level) for {events[0][2] - events[0][0]} evaluation(s)")
        else:
            head = (f"{series.label} fell for one or two evaluations {len(parts)} times, losing "
                    f"{min(lost):.0%}-{max(lost):.0%} of its level: {listed}{more}")
        msg = (f"{head}; its evaluation-to-evaluation noise is {sigma:.3g}"
               + (f"; not back near its level after step {unrec[0]}" if unrec else ", each back at once")
               + ": spikes of the run's score (a bad checkpoint or evaluation batch, an unstable update)")
        s_peak, v_peak, l_peak = parts[deepest]
        return Finding(kind="spike", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=parts[0][0], peak_step=s_peak, end_step=parts[-1][0],
                       recovery="none" if unrec else "fast", magnitude=_times(l_peak, v_peak),
                       evidence={"higher_is_better": True, "objective_score": True, "one_point": True,
                                 "steps": [p[0] for p in parts], "values": [p[1] for p in parts],
                                 "levels": [p[2] for p in parts], "noise": sigma, "baseline": l_peak,
                                 "peak_value": v_peak})

    # -- a score that never changed
    def _frozen(self, series: Series, ctx: RunContext) -> Finding | None:
        """An accuracy-like score that repeated one exact value on every evaluation from its first
        (or its second: the first epoch's average holds the untrained start), at least
        `min_frozen_points` times, below a perfect score."""
        step, v = series.finite()
        if v.size < self.min_frozen_points + 1 and not (v.size >= self.min_frozen_points and (v == v[0]).all()):
            return None
        a = 0 if (v == v[0]).all() else 1
        if not (v[a:] == v[a]).all() or v.size - a < self.min_frozen_points:
            return None
        value = float(v[a])
        if value >= scores.score_scale(series, v) or value < 0:
            return None  # a perfect score held is a solved task, not a stuck model
        if value == 0 and _ALL_OR_NOTHING.search(series.metric):
            return None  # an exact match of whole sequences is 0 where a fine-tune starts, and may stay there
        if not scores.from_the_start(step, ctx):
            return None  # first evaluated late: a score that settled, not one that never moved
        moved = _others_moved(ctx, series, int(step[a]), int(step[-1]))
        if not moved:
            return None  # nothing in the run moved: a log that repeats its values, not a stuck model
        chance = scores.chance_accuracy(series, v[a:])
        said = (f" (chance for {chance} classes)" if chance else
                " (no right answer)" if value == 0 else "")
        msg = (f"{series.label} was exactly {value:.6g}{said} on {'all its' if a == 0 else 'every one of its last'} "
               f"{v.size - a} evaluations, from step {int(step[a])} to {int(step[-1])}, while {moved} moved: "
               f"the model's answers never changed (a constant or majority-class prediction, NaN weights, labels "
               f"disconnected from the inputs): it never learned")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                       evidence={"reading": "frozen", "level": value, "points": int(v.size - a),
                                 "never_learned": True, "higher_is_better": True, "chance_classes": chance})

    # -- a policy that never left uniform
    def _uniform_policy(self, series: Series, ctx: RunContext) -> Finding | None:
        """A policy's entropy at ln k (uniform over k actions) to float precision on every logged
        point from the start of the run: the policy never moved from where it was initialised."""
        step, v = series.finite()
        if v.size and float(np.max(v)) < 0:
            v = -v  # an entropy loss (SB3's `entropy_loss`) is the entropy negated
        if v.size < self.min_uniform_points or float(np.min(v)) <= 0:
            return None
        if not scores.from_the_start(step, ctx):
            return None
        k = int(round(float(np.exp(np.median(v)))))
        if k < 2 or float(np.max(np.abs(v - np.log(k)))) > self.uniform_tolerance * np.log(k):
            return None
        msg = (f"{series.label} was ln {k} = {np.log(k):.5f} (a uniform choice among {k} actions) on all its {v.size} "
               f"logged points, from step {int(step[0])} to {int(step[-1])}: the policy never moved from uniform, so "
               f"it never learned (its gradient never reaches the policy head, an entropy bonus that dominates, an "
               f"action mask or logits that are constant)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                       evidence={"reading": "uniform_policy", "level": float(np.median(v)), "actions": k,
                                 "points": int(v.size), "never_learned": True})

    # -- a reward that never rose by a material amount
    def _barely_rose(self, series: Series, ctx: RunContext) -> list[Finding]:
        """A main reward logged from the start whose best sustained level (the highest median of a
        tenth of the run) stood less than `min_reward_gain` of its size above its first tenth: on a
        return of -8000, +40 is nothing learned, however significant against the noise."""
        step, v = series.finite()
        n = v.size
        if n < self.min_reward_points or (step[0] > 0.05 * max(step[-1], 1) and step[0] >= 100):
            return []
        y = v.astype(np.float64)
        if float(np.min(y)) >= 0 and float(np.max(y)) <= 1:
            return []  # a success rate or a preference accuracy: bounded by its headroom, not its size
        w = max(3, n // 10)
        start = float(np.median(y[:w]))
        best_i = int(np.argmax(np.median(np.lib.stride_tricks.sliding_window_view(y, w), axis=1)))
        best = float(np.median(y[best_i:best_i + w]))
        size = max(abs(start), abs(best))
        if size == 0 or best - start >= self.min_reward_gain * size:
            return []
        end = float(np.median(y[-w:]))
        msg = (f"{series.label} never rose: it started at {start:.4g} (first {w} points), its best stretch of {w} "
               f"stood at {best:.4g} (step {int(step[best_i])}, {(best - start) / size:+.1%} of its size) and it ended "
               f"at {end:.4g} by step {int(step[-1])}: the policy learned nothing that shows in its return")
        severity = "warning" if n >= 100 else "info"
        return [Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity=severity,
                        message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                        evidence={"reading": "never", "level": start, "best": best, "end": end,
                                  "gain_share": float((best - start) / size), "points": int(n),
                                  "never_learned": True, "higher_is_better": True})]


    # -- a reward that was never once earned
    def _never_rewarded(self, series: Series, ctx: RunContext) -> list[Finding]:
        """A main return of exactly zero on every logged point while the run's losses moved: the
        agent was being updated and no episode ever earned a reward (a sparse-reward task never
        solved). Told however late the log starts: a policy that had learned earns something on
        some episode of a 100-episode mean, so a continuation at zero is stuck, not converged."""
        step, v = series.finite()
        if v.size < self.min_frozen_points or (v != 0).any():
            return []
        from .plateaus import REWARD_POINTS_FOR_WARNING  # (a flat reading of the plateau detector wins: reconcile)

        moved = _a_loss_moved(ctx, int(step[0]), int(step[-1]))
        if not moved:
            return []  # no loss moved (or none logged): nothing says the agent was being updated
        msg = (f"{series.label} was exactly 0 on all its {v.size} logged points, from step {int(step[0])} to "
               f"{int(step[-1])}, while {moved} moved: the agent was updated and no episode ever earned a reward "
               f"(a sparse reward never reached: exploration, a goal out of reach, a reward not wired to the "
               f"environment): it never learned")
        severity = "warning" if v.size >= REWARD_POINTS_FOR_WARNING else "info"
        return [Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity=severity,
                        message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                        evidence={"reading": "zero", "level": 0.0, "points": int(v.size), "never_learned": True,
                                  "higher_is_better": True, "other_moved": moved})]


def _times(level: float, low: float) -> float | None:
    """How many times lower the score fell (the size a loss's spike is told in), None at zero."""
    return float(level / low) if low > 0 else None


def is_objective_score(series: Series, ctx: RunContext) -> bool:
    """The run's main score when it logs no loss and no reward: what it was trained to raise."""
    if ctx.main("loss") is not None or ctx.main("reward") is not None or ctx.main("eval_loss") is not None:
        return False
    return series is ctx.main("accuracy")


def _frozen_at_chance(ctx: RunContext) -> Series | None:
    """An accuracy of the run frozen at 1/k (`scores.frozen_chance`): the evaluation's one answer is
    then told as that accuracy's chance plateau, and the frozen scores beside it are the same story."""
    return next((s for s in sorted(ctx.by_role("accuracy"), key=lambda s: s.metric) if scores.frozen_chance(s)), None)


def _moved(s: Series) -> bool:
    _, v = s.finite()
    return v.size >= 2 and float(np.max(v)) != float(np.min(v))


def _a_loss_moved(ctx: RunContext, a: int, b: int) -> str:
    """The name of a training loss of the run that changed between steps a and b, '' when none did:
    a loss that moves is an optimizer updating the model (a counter or a clock moves regardless)."""
    for s in sorted(ctx.by_role("loss"), key=lambda s: -len(s)):
        st, v = s.finite()
        seg = v[(st >= a) & (st <= b)]
        if seg.size >= 2 and float(np.max(seg)) != float(np.min(seg)):
            return s.label
    return ""


def _others_moved(ctx: RunContext, series: Series, a: int, b: int) -> str:
    """The name of another series of the run that changed between steps a and b (a loss first),
    '' when none did: a frozen score beside a moving loss is a stuck model, not a stuck log."""
    order = sorted((s for s in ctx.series.values() if s is not series and len(s)),
                   key=lambda s: (s.role != "loss", s.role not in ("eval_loss", "accuracy"), -len(s)))
    for s in order:
        st, v = s.finite()
        seg = v[(st >= a) & (st <= b)]
        if seg.size >= 2 and float(np.nanmax(seg)) != float(np.nanmin(seg)):
            return s.label
    return ""
