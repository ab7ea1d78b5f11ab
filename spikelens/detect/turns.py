"""A held-out curve that turned the wrong way from its best while the training loss fell:
the one reading overfitting reports and plateaus leaves to it (a held-out score that stalled
is a plateau only when it did not turn). One home, so neither detector calls the other."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import scores
from .base import Series
from .stats import MAD_TO_SIGMA, rolling_median


@dataclass(frozen=True)
class TurnRule:
    """How far and how surely a held-out curve must turn (see `OverfittingDetector`)."""

    min_evals: int = 2
    min_rise: float = 0.01
    min_z: float = 3.0
    few_points: int = 8


def turned_from_best(series: Series, train: Series | None, rule: TurnRule = TurnRule()) -> dict | None:
    """Where `series` (an eval loss, or a held-out score read on its oriented log) bottomed and
    how far it rose after, beyond its own noise, while `train` fell over the same steps; None
    when it did not turn, or when the training loss rose with it (divergence, not this)."""
    step, v = series.finite()
    if train is not None and not np.isfinite(train.value).all():
        keep = step < train.step[np.argmax(~np.isfinite(train.value))]
        step, v = step[keep], v[keep]  # after the training loss went non-finite, the NaN is the event
    n = v.size
    if n < rule.min_evals + 1 or v.min() <= 0:
        return None
    sign = -1.0 if scores.direction(series) > 0 else 1.0
    y = np.log(v) * sign  # an accuracy's fall is a loss's rise
    if n == rule.min_evals + 1 and (int(np.argmin(y)) != 0 or (y[1:] - y[0]).min() < np.log1p(rule.min_rise)):
        return None  # three evaluations (one an epoch): a turn only when the first is the best and both after stand above it
    w = max(1, n // 10) | 1
    sm = rolling_median(y, w, center=True, min_samples=1) if w > 1 else y
    i = int(np.argmin(sm))
    tail = y[i + 1:]
    if tail.size < max(rule.min_evals, n // 10):
        return None
    k = max(1, min(tail.size // 3, max(2, n // 10)))
    end = float(np.median(y[-k:]))
    low = float(sm[i])
    rise = end - low
    if rise < np.log1p(rule.min_rise):
        return None
    if n < rule.few_points:
        if n > rule.min_evals + 1 and np.mean(np.diff(y[i:]) > 0) < 0.6:
            return None
        z = None
    else:
        se = max(local_noise(y, i, rule.few_points - 2), 1e-6) * 1.2533 * np.sqrt(1.0 / k + 1.0 / w)
        z = rise / se
        if z < rule.min_z:
            return None
    fell = train_change(train, int(step[i]), int(step[-1]))
    if fell is not None and fell >= 0:
        return None  # the training loss rose (or stood still) too: divergence, not overfitting
    first = float(np.median(v[:max(1, min(i, n // 10))])) if i > 0 else float(v[0])
    best, last = float(np.exp(sign * low)), float(np.exp(sign * end))
    gained = abs(first - best)
    stalled = stalled_from(y, i, float(y[i]), STALL_SHARE * rise)
    return {"min_step": int(step[i]), "min_value": best, "end_value": last, "after": int(tail.size),
            "stalled_step": int(step[stalled]), "stalled_value": float(np.exp(sign * y[stalled])),
            "rise": rise, "z": None if z is None else float(z), "last_step": int(step[-1]), "train_change": fell,
            "given_back": abs(last - best) / gained if gained > 0 else None, "first_value": first}


STALL_SHARE = 0.25
"""A held-out curve stopped improving where it first stood within this share of its later rise of
its best (`stalled_from`): flat on the scale of the turn, not merely on the way down to it."""


def stalled_from(y: np.ndarray, i: int, low: float, within: float) -> int:
    """Where a held-out curve that bottomed at `i` stopped improving: the first evaluation of the
    unbroken stretch before its best that stood within `within` (log) of that best. An engineer marks
    the turn where the eval loss went flat while the training loss kept falling (6.24, 6.23, 6.21,
    6.20, then up to 6.33), not at its lowest evaluation, which in a flat stretch is a matter of noise."""
    j = i
    while j > 0 and y[j - 1] - low <= within:
        j -= 1
    return j


def curve_noise(y: np.ndarray) -> float:
    """Point noise of a short, curved series: the MAD of its second differences (a local
    straight line cancels; white noise gives them a variance of 6 sigma^2). First
    differences would count a steep early fall as noise."""
    d2 = np.diff(y, n=2)
    return MAD_TO_SIGMA * float(np.median(np.abs(d2))) / np.sqrt(6.0) if d2.size else 0.0


def local_noise(y: np.ndarray, i: int, min_points: int) -> float:
    """Point noise where the rise is judged: `curve_noise` of the stretch from the best
    evaluation `i` to the end when it holds `min_points` or more, else of the whole curve.
    The fall before the best (a steep first epoch, a score climbing from 0.01) bends the curve
    and inflates its second differences; the rise is measured against the scatter of the
    evaluations it is made of."""
    tail = y[i:]
    return curve_noise(tail) if tail.size >= min_points else curve_noise(y)


def train_change(train: Series | None, start: int, end: int) -> float | None:
    """Change of log(train loss) from around `start` to around `end` (negative: it
    fell), from the medians of the points near each end; None without a training loss."""
    if train is None:
        return None
    step, v = train.positive()
    if v.size < 2:
        return None
    a, b = np.searchsorted(step, start), np.searchsorted(step, end, side="right")
    if not (a < step.size and step[a] == start):
        a = max(0, a - 1)  # no training point at `start`: the one logged before it is the level there
    seg = np.log(v[a:b])  # (never one before a point at `start`: an untrained first epoch is no fall)
    if seg.size < 2:
        return None
    k = max(1, seg.size // 5)
    return float(np.median(seg[-k:]) - np.median(seg[:k]))


MEMORISED_FALL = 0.3
"""A held-out curve that never improved while the training loss fell this much (log, about 26%) is
overfitting's (the model fitted its training set from the start); under it, a plateau's note."""


@dataclass(frozen=True)
class FlatRule:
    """How surely a held-out curve must have stayed where it began (see `never_improved`)."""

    min_evals: int = 5
    max_gain: float = 0.02
    """A gain under this (log, about 2%) is immaterial whatever its noise says."""
    min_z: float = 3.0
    min_train_fall: float = 0.05
    """...while the training loss fell at least this (log, about 5%) over the same steps (the medians
    of its first and last fifth there: a model still being fitted)."""


def never_improved(series: Series, train: Series | None, rule: FlatRule = FlatRule()) -> dict | None:
    """A held-out curve (an eval loss, or a score read on its oriented log) that never got better
    than its first evaluations while the training loss fell: its last third and its best smoothed
    stretch are no better than its first third, beyond its own noise or `max_gain`. Whatever the
    model learned on its training set, none of it reached the held-out set. None when it improved,
    when the training loss did not fall, or with too few evaluations to say."""
    if train is None:
        return None
    step, v = series.finite()
    if not np.isfinite(train.value).all():
        keep = step < train.step[np.argmax(~np.isfinite(train.value))]
        step, v = step[keep], v[keep]
    n = v.size
    if n < rule.min_evals or v.min() <= 0:
        return None
    y = np.log(v) * (-1.0 if scores.direction(series) > 0 else 1.0)  # lower is better
    k = max(2, n // 3)
    start = float(np.median(y[:k]))
    w = max(3, n // 5) | 1
    sm = rolling_median(y, w, center=True, min_samples=1)
    se = max(curve_noise(y), 1e-6) * 1.2533 * np.sqrt(2.0 / k)
    bar = max(rule.min_z * se, rule.max_gain)
    gain, best_gain = start - float(np.median(y[-k:])), start - float(np.min(sm[k // 2:]))
    if gain > bar or best_gain > bar:
        return None  # it got better, at the end or on the way (a turn is overfitting's)
    fell = train_change(train, int(step[0]), int(step[-1]))
    if fell is None or fell > -rule.min_train_fall:
        return None  # the training loss stood still too: the run's own plateau, not this
    sign = -1.0 if scores.direction(series) > 0 else 1.0
    return {"first_step": int(step[0]), "last_step": int(step[-1]), "evals": int(n), "train_change": fell,
            "first_value": float(np.exp(sign * start)), "last_value": float(np.exp(sign * float(np.median(y[-k:])))),
            "gain_log": gain}


@dataclass(frozen=True)
class PassingRule:
    """How far and how long a held-out loss must rise before it comes back (see `passing_turn`)."""

    min_rise: float = 0.69
    """At its peak, at least this far (log: twice) above its best before the rise."""
    min_evals: int = 5
    """...at least this many evaluations 1.5x or more above that best..."""
    min_train_fall: float = 0.3
    """...while the training loss fell at least this much (log, about 26%) from that best to the peak."""


def passing_turn(series: Series, train: Series | None, rule: PassingRule = PassingRule()) -> dict | None:
    """A held-out loss that rose far above its early best while the training loss fell, stayed up,
    and later came back below that best: the model memorised its training set first and generalised
    later (grokking, double descent). `turned_from_best` misses it, since its best is the late one.
    None when it never rose so, or never came back (that is `turned_from_best`'s)."""
    if train is None:
        return None
    step, v = series.finite()
    n = v.size
    if n < 3 * rule.min_evals or v.min() <= 0 or scores.direction(series) > 0:
        return None
    y = np.log(v)
    w = max(3, n // 20) | 1
    sm = rolling_median(y, w, center=True, min_samples=1)
    p = int(np.argmax(sm))
    if p < 1:
        return None
    i = int(np.argmin(y[:p]))  # (its best may be one evaluation: the untrained model's, at step 0)
    low = float(y[i])
    if float(sm[p]) - low < rule.min_rise or int((y[i:p + 1] >= low + np.log(1.5)).sum()) < rule.min_evals:
        return None
    back = np.flatnonzero(sm[p:] < low)
    if back.size == 0:
        return None  # it never came back: a turn from its best, not a passing one
    fell = train_change(train, int(step[i]), int(step[p]))
    if fell is None or fell > -rule.min_train_fall:
        return None
    r = p + int(back[0])
    return {"min_step": int(step[i]), "min_value": float(np.exp(low)), "peak_step": int(step[p]),
            "peak_value": float(np.exp(sm[p])), "back_step": int(step[r]), "end_value": float(np.exp(np.median(y[-max(1, n // 10):]))),
            "train_change": fell, "rise": float(sm[p]) - low}
