"""A binary classifier that learned the base rate and nothing else: its loss at the entropy of the class prior.

A model that predicts only the share p of the larger class for every input scores that share as its accuracy
and -(p ln p + (1 - p) ln(1 - p)) as its cross-entropy: 0.611 with 70% of one class. Its loss starts at ln 2
(a coin), falls while the output bias fits the prior, and then holds there epoch after epoch while the
accuracy holds at the majority share: the curve looks like a run that converged, but the model learned no
feature of its inputs. A person checks the two numbers against each other; so does `at_prior`.
"""
from __future__ import annotations

import numpy as np

from .base import RunContext, Series
from ..frame import is_eval

START_TOLERANCE = 0.05
"""The loss's first points within this share of ln 2: a binary classifier from its untrained start."""
LEVEL_TOLERANCE = 0.02
"""Its last half's median within this share of the prior's entropy."""
MAX_DRIFT = 0.02
"""Neither the loss (log) nor the accuracy moved more than this between the last half's two quarters."""
MIN_POINTS = 20


def binary_entropy(p: float) -> float:
    return float(-(p * np.log(p) + (1 - p) * np.log(1 - p)))


def at_prior(series: Series, ctx: RunContext, value: np.ndarray) -> dict | None:
    """The accuracy's name, its majority share and the prior's entropy when the loss began at ln 2 and its
    last half sits flat at the entropy of the share its training accuracy sits flat at; else None."""
    n = value.size
    if n < MIN_POINTS or value.min() <= 0:
        return None
    if abs(float(np.median(value[:max(2, n // 20)])) - np.log(2)) > START_TOLERANCE * np.log(2):
        return None
    tail = value[n // 2:]
    if abs(np.log(np.median(tail[len(tail) // 2:]) / np.median(tail[:len(tail) // 2]))) > MAX_DRIFT:
        return None
    accuracies = sorted(ctx.by_role("accuracy"), key=lambda a: is_eval(a.metric))  # the training accuracy first
    for acc in accuracies:
        _, a = acc.finite()
        if a.size < MIN_POINTS // 2:
            continue
        a = a / 100 if a.max() > 1 else a
        rest = a[a.size // 2:]
        share = float(np.median(rest))
        if not 0.5 < share < 0.99 or abs(np.median(rest[len(rest) // 2:]) - np.median(rest[:len(rest) // 2])) > MAX_DRIFT:
            continue
        h = binary_entropy(share)
        if abs(float(np.median(tail)) - h) <= LEVEL_TOLERANCE * h:
            return {"accuracy": acc.metric, "share": share, "entropy": h, "level": float(np.median(tail))}
    return None
