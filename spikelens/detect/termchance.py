"""A term of the training loss that sat at a chance level for the whole run while the total fell.

A detector's classification term at ln 2 (0.693) for 600,000 steps, even drifting up to it, while the
localisation term learned and the total fell 11%: the total looks healthy and hides a head that never
learned. ln k is the level of one cross-entropy over k outcomes predicted uniformly; a term that starts
there, never falls below it and ends there learned nothing, however noisy its batches (the uniform
prediction's own batches are exact, a head that predicts per input near chance spreads by percents).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Series


@dataclass(frozen=True)
class TermRule:
    min_points: int = 50
    """Fewest logged points of the term: a long run's stretch, not a few epochs of a slow start."""
    tolerance: float = 0.05
    """Every tenth of the term's points (its median) within this share of ln k."""
    max_fall: float = 0.01
    """The term's last third no more than this (log) under its first: it never learned down from ln k."""
    min_total_fall: float = 0.05
    """...while the total it is part of fell at least this much (log): the rest of the model learned."""
    classes: tuple[int, ...] = (2, 3, 4, 5, 10)
    """Class counts a term's chance level is checked against: a head's few outcomes (a vocabulary's
    level is the language model's own loss, judged as the run's loss)."""


def term_at_chance(term: Series, total: Series, rule: TermRule = TermRule()) -> dict | None:
    """{k, level, first, last, total_first, total_last, start, end, points} when `term` sat at ln k from
    its first tenth to its last while `total` fell `min_total_fall`; None otherwise."""
    step, v = term.finite()
    tstep, tv = total.finite()
    if v.size < rule.min_points or tv.size < rule.min_points or v.min() <= 0 or tv.min() <= 0:
        return None
    tenths = np.array([np.median(part) for part in np.array_split(v, 10)])
    ks = np.array(rule.classes)
    level = float(np.median(v))
    k = int(ks[np.argmin(np.abs(np.log(ks) - level))])
    if np.max(np.abs(tenths / np.log(k) - 1)) > rule.tolerance:
        return None
    third = max(1, v.size // 3)
    first, last = float(np.median(v[:third])), float(np.median(v[-third:]))
    tthird = max(1, tv.size // 3)
    t0, t1 = float(np.median(tv[:tthird])), float(np.median(tv[-tthird:]))
    if np.log(first) - np.log(last) > rule.max_fall or np.log(t0) - np.log(t1) < rule.min_total_fall:
        return None
    return {"k": k, "level": level, "first": first, "last": last, "total_first": t0, "total_last": t1,
            "start": int(step[0]), "end": int(step[-1]), "points": int(v.size)}
