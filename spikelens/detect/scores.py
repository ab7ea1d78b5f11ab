"""Held-out scores (an eval accuracy, a dice, a WER, a reward): which series they are, which
way is better, and the readings the curve detectors share on them (stopped improving, never
rose above zero, sat at a chance accuracy).

A score is judged turned so that higher is better: a WER or an error rate is negated. Scores
are compared on their own scale (a reward may cross zero, an accuracy is bounded), never as
ratios.
"""
from __future__ import annotations

import re

import numpy as np

from ..frame import HIGHER_IS_BETTER, is_eval, is_lower_better_score
from .base import RunContext, Series
from .stats import MAD_TO_SIGMA, rolling_median

_BEST = re.compile(r"(?:^|[/_\-. ])best(?:$|[/_\-. ])", re.I)
"""`Best_Valid_accuracy`, `test_best_dice`: a running best, which never falls whatever the model does."""
_CHANCE_NAME = re.compile(r"acc|top[\-_]?1", re.I)
"""Scores whose chance level is 1/k of the classes (accuracy, top-1); an F1, a mAP or a dice has none."""
_AUC = re.compile(r"(?:^|[/_\-. ])(?:(?:roc[_\-]?)?auc|au[_\-]?roc)(?:$|[/_\-. ])", re.I)
"""A ROC AUC: a model that ranks at random scores 1/2 whatever the number of classes (a PR AUC,
`auprc`, `pr_auc`, sits at the positives' share instead: not matched)."""
_PR = re.compile(r"pr[_\-]?auc|auprc|average[_\-]?precision", re.I)
_PERCENT = re.compile(r"pct|percent|%", re.I)
CHANCE_ACCURACY_CLASSES = (2, 3, 4, 5, 10, 100, 200, 1000)
"""Class counts a held-out accuracy's chance level (1/k) is checked against."""


def direction(series: Series) -> int:
    """+1 when a rise of the score is progress (accuracy, reward), -1 when a fall is (WER, error)."""
    if series.role in HIGHER_IS_BETTER:
        return 1
    return -1 if series.role == "other" and is_lower_better_score(series.metric) else 0


def held_out_scores(ctx: RunContext, train: Series | None) -> list[Series]:
    """The run's held-out scores: an accuracy-like metric or an error rate named as measured
    on eval/val/test data, or logged at most half as often as the training loss (an
    evaluation every few steps); a running best (`best_dice`) is none, nor is a reward (the
    reinforcement learner's objective, judged as the run's main curve)."""
    out = []
    for s in ctx.series.values():
        if s.role == "reward" or direction(s) == 0 or _BEST.search(s.metric) or len(s) < 3:
            continue
        sparse = train is not None and len(s) <= 0.5 * len(train)
        if is_eval(s.metric) or sparse:
            out.append(s)
    return sorted(out, key=lambda s: (-len(s), s.metric))


def from_the_start(step: np.ndarray, ctx: RunContext, late: float = 0.1) -> bool:
    """Whether a series logged at `step` began with the run: its first point within `late` of the
    run's span after the first step any metric logged (a score first evaluated late has settled,
    it says nothing of whether the model ever moved)."""
    first = min(int(s.step[0]) for s in ctx.series.values() if len(s))
    return step[0] - first <= late * max(int(step[-1]) - first, 1)


def oriented(series: Series) -> tuple[np.ndarray, np.ndarray]:
    """Finite steps and values of a score, turned so that higher is better."""
    step, value = series.finite()
    return step, value.astype(np.float64) * (direction(series) or 1)


def point_sigma(y: np.ndarray) -> float:
    """Point-to-point noise of a score (the MAD of its differences around their median)."""
    d = np.diff(y)
    return MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2.0) if d.size else 0.0


def stalled_from(y: np.ndarray, min_share: float, max_gain_share: float = 0.05) -> int | None:
    """The earliest index from which a score (higher is better) held one level to the end: at
    least `min_share` of its points, after it had improved; from there its smoothed curve
    never climbs, and its last third never moves from its first third, by more than its noise
    or `max_gain_share` of what it had gained before (a long series' slow creep is significant
    and immaterial). A score that falls from its best is not stalled: that is overfitting or a
    collapse. None when it kept improving or never improved."""
    n = y.size
    if n < 5:
        return None
    floor = 1e-3 * max(float(np.median(np.abs(y))), 1e-3)
    sigma = max(point_sigma(y), floor)
    w = max(3, n // 10) | 1
    sm = rolling_median(y, w, center=True, min_samples=1)
    for a in range(1, n - max(3, int(np.ceil(min_share * n))) + 1):
        rest = y[a:]
        k = max(1, rest.size // 3)
        m0 = max(1, min(a, 3))
        gained = float(np.median(rest)) - float(np.median(y[:m0]))
        if gained <= 3 * sigma * np.sqrt(2.0 / m0):
            continue  # it had not improved yet: nothing to stall from
        tol = max_gain_share * gained
        if float(np.max(sm[a:])) - sm[a] > max(3 * sigma * 1.2533 / np.sqrt(w), tol):
            continue  # it climbed again from here: still improving
        move = float(np.median(rest[-k:]) - np.median(rest[:k]))
        if abs(move) > max(3 * sigma * 1.2533 * np.sqrt(2.0 / k), tol):
            continue
        return a
    return None


def score_scale(series: Series, value: np.ndarray) -> float:
    """100 for a score in percent (named so, or above 1 anywhere), 1 for a fraction."""
    return 100.0 if _PERCENT.search(series.metric) or float(np.nanmax(np.abs(value))) > 1.0 else 1.0


def never_above_zero(series: Series, min_points: int = 5, zero: float = 0.01) -> bool:
    """A higher-is-better score at most `zero` (1% of a fraction, 0.01 points of a
    percentage) at every one of at least `min_points` evaluations: the model never produced
    a right answer (a dice of 0.000-0.003 over ten evaluations)."""
    _, v = series.finite()
    return direction(series) == 1 and v.size >= min_points and float(np.max(v)) <= zero and float(np.min(v)) >= 0


def chance_accuracy(series: Series, value: np.ndarray, tolerance: float = 0.05, spread: float = 0.25) -> int | None:
    """The k whose chance accuracy (1/k, or 100/k percent) the values sit at: their median
    within `tolerance` of it and nine in ten within `spread` (relative; a test set's sampling
    noise moves a 1% accuracy by a tenth of itself), for an accuracy-like name (a ROC AUC: only
    k = 2, a random ranking's 1/2); else None."""
    auc = bool(_AUC.search(series.metric)) and not _PR.search(series.metric)
    if not (auc or _CHANCE_NAME.search(series.metric)) or direction(series) != 1 or value.size == 0:
        return None
    scale = score_scale(series, series.finite()[1])
    for k in (2,) if auc else CHANCE_ACCURACY_CLASSES:
        level = scale / k
        off = np.abs(value - level) / level
        if abs(float(np.median(value)) - level) <= tolerance * level and float(np.quantile(off, 0.9)) <= spread:
            return k
    return None


_TOP_K = re.compile(r"top[\-_]?(?:[2-9]|\d\d)", re.I)
"""A top-5 accuracy's chance level is 5/k, not 1/k."""


def frozen_chance(series: Series, min_points: int = 3, tolerance: float = 0.15) -> int | None:
    """The k when an accuracy is exactly the same at every one of at least `min_points` evaluations
    and that value is within `tolerance` of 1/k: a model that gives one answer scores the share of
    that class in the evaluated set, 1/k on a balanced set and near it on a batch (the exact repeat
    is the evidence, so the band is wider than `chance_accuracy`'s); else None."""
    _, v = series.finite()
    if v.size < min_points or float(np.min(v)) != float(np.max(v)) or _TOP_K.search(series.metric):
        return None
    return chance_accuracy(series, v, tolerance=tolerance, spread=tolerance)


BEATS_CHANCE = 1.5
"""An accuracy beats chance over k classes when its late level is this many times 1/k..."""
BEATS_CHANCE_MARGIN = 0.15
"""...and this much of its scale above it (a binary task's 0.75, not 0.6)..."""
BEATS_CHANCE_RISE = 0.1
"""...having risen this much of its scale from its first points (a majority-class rate held from the
start is one answer for every input, however far above 1/k)."""


def beats_chance(ctx: RunContext, k: int) -> tuple[str, float] | None:
    """The accuracy (and its late level) that rose clearly above the 1/k of a model at chance over k
    classes, if the run logs one; None otherwise."""
    bar = max(BEATS_CHANCE / k, 1.0 / k + BEATS_CHANCE_MARGIN)
    return next(((m, late) for m, _, late, scale in _risen_accuracies(ctx) if late >= bar * scale), None)


def accuracy_rose(ctx: RunContext) -> tuple[str, float, float] | None:
    """An accuracy of the run that rose `BEATS_CHANCE_RISE` of its scale from its first points (its
    name, first and late level): the model learned what it measures, whatever a loss beside it did."""
    return next(((m, early, late) for m, early, late, _ in _risen_accuracies(ctx)), None)


def _risen_accuracies(ctx: RunContext):
    """(name, first level, late level, scale) of each accuracy (1/k-scored: not a top-k, an AUC or a
    running best) whose last third rose `BEATS_CHANCE_RISE` of its scale above its first points."""
    for s in sorted(ctx.series.values(), key=lambda s: s.metric):
        if direction(s) != 1 or not _CHANCE_NAME.search(s.metric) or _TOP_K.search(s.metric) \
                or _AUC.search(s.metric) or _BEST.search(s.metric):
            continue
        _, v = s.finite()
        if v.size < 3:
            continue
        scale = score_scale(s, v)
        third = max(1, v.size // 3)
        late, early = float(np.median(v[-third:])), float(np.median(v[:max(1, min(3, third))]))
        if late - early >= BEATS_CHANCE_RISE * scale:
            yield s.metric, early, late, scale


def judged_loss(ctx: RunContext) -> Series | None:
    """The run's training loss (its main `loss`: the total among components); the main
    eval loss when the run logs no training loss."""
    return ctx.main("loss") or ctx.main("eval_loss")
