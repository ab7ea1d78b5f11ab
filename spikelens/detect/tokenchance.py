"""A language model's loss that stayed at a vocabulary's uniform level.

A token cross-entropy starts near ln(V), the uniform level over a V-token vocabulary (or, for a
broken objective, above it). Learning token frequencies alone takes a language model far below it
(the unigram entropy of text is some 3-4 nats under ln V) within its first hundred steps, so a loss
still within `NEAR` of ln V after `MIN_POINTS` logged points has not learned even that: the loss,
the labels or the objective is broken, or the LR is far too low. A loss that started lower (a
fine-tune at 1-2) or a short log of a run's first steps (11.5 -> 10.0 in 24 steps is an ordinary
start) is not judged here; the plateau detector's flat readings still judge any loss.
"""
from __future__ import annotations

import numpy as np

MIN_POINTS = 100
"""Fewest logged points: a pretraining log of its first few dozen steps is still falling from ln V."""
START_SHARE = 0.95
"""The loss's first points sit at or above this share of ln V for the smallest listed vocabulary..."""
MAX_START = 1.3
"""...and under this many times ln V for the largest: a per-token mean, not a sum over tokens or a
regression's error (a summed SFT loss of 20-40)."""
NEAR = 0.12
"""The median of the last fifth of the points within this share under ln V (or above it) is still
at the uniform level (10.6 after 806 steps against ln 128256 = 11.76)."""


def stayed_at_vocab_chance(value: np.ndarray, vocabs: tuple[int, ...]) -> dict | None:
    """{chance, above, start, end, points} when a positive loss logged from the run's start began at a
    tokenizer's uniform level (`vocabs`: the listed vocabulary sizes; its first points between `START_SHARE` of ln V for the smallest listed
    vocabulary and `MAX_START` times ln V for the largest: the untrained model's level is ln of its
    own vocabulary, whichever that is) and its last fifth is still within `NEAR` under that level, or
    under ln V of the largest vocabulary for a start above it (`above`: worse than uniform over any
    tokenizer's); None otherwise."""
    n = value.size
    if n < MIN_POINTS or not (value > 0).all():
        return None
    start = float(np.median(value[:max(3, n // 20)]))
    end = float(np.median(value[-max(3, n // 5):]))
    levels = np.log(np.array(vocabs, dtype=np.float64))
    if not START_SHARE * levels.min() <= start <= MAX_START * levels.max():
        return None
    chance = min(start, float(levels.max()))
    if end < (1 - NEAR) * chance:
        return None
    return {"chance": chance, "above": bool(end > levels.max()), "start": start, "end": end, "points": int(n)}
