"""Synthetic runs with planted events, for the detector and cause tests.

Curves come from `fixtures/writers/_curves.py` (the same generator the fixture
writers use); each case plants one event at a known step.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))
from writers._curves import clean_run, plant_spike  # noqa: E402

from spikelens.detect.base import RunContext, Series  # noqa: E402
from spikelens.frame import infer_roles  # noqa: E402


def context(metrics: dict[str, tuple[np.ndarray, np.ndarray]], run: str = "case", segment_starts=()) -> RunContext:
    roles = infer_roles(list(metrics))
    series = {m: Series(m, roles[m], np.asarray(s), np.asarray(v, dtype=float)) for m, (s, v) in metrics.items()}
    return RunContext(run=run, roles=roles, series=series, segment_starts=list(segment_starts))


def as_metrics(run: dict[str, np.ndarray], loss="train/loss", grad="train/grad_norm", lr="train/lr"):
    return {loss: (run["step"], run["loss"]), grad: (run["step"], run["grad_norm"]), lr: (run["step"], run["lr"])}


def clean(seed=0, n=3000, interval=1, noise=0.02):
    return as_metrics(clean_run(n, seed=seed, interval=interval, noise=noise))


def spike(at=1500, height=2.5, recover=40, precursor=False, seed=1, interval=1):
    return as_metrics(plant_spike(clean_run(3000, seed=seed, interval=interval), at, height, recover, precursor))


def nan_at(at=2000, seed=2):
    m = clean(seed)
    s, v = m["train/loss"]
    v = v.copy()
    v[s >= at] = np.nan
    m["train/loss"] = (s, v)
    return m


def diverge(turn=1800, seed=3):
    m = clean(seed)
    s, v = m["train/loss"]
    v = v * np.exp(np.where(s > turn, ((s - turn) / 1200.0) ** 2 * 0.8, 0.0))
    m["train/loss"] = (s, v)
    return m


def oscillate(a=1200, b=2000, seed=4):
    m = clean(seed)
    s, v = m["train/loss"]
    rng = np.random.default_rng(seed)
    inside = (s >= a) & (s <= b)
    v = v * np.exp(np.where(inside, 0.25 * np.sin(s / 7.0) + 0.1 * rng.standard_normal(s.size), 0.0))
    m["train/loss"] = (s, v)
    return m


def level_shift(at=2000, pct=3.0, seed=5):
    m = clean(seed, n=6000)
    s, v = m["train/loss"]
    m["train/loss"] = (s, v * np.where(s >= at, 1 + pct / 100, 1.0))
    return m


def excursion(at=1800, length=300, height=2.0, seed=7, interval=1, noise=0.02):
    """A slow bump: the loss climbs `height`x over half of `length` steps and comes back
    (a raised cosine), with no step out of the point-to-point noise."""
    m = clean(seed, interval=interval, noise=noise)
    s, v = m["train/loss"]
    phase = np.clip((s - at) / length, 0.0, 1.0)
    bump = np.where((s >= at) & (s <= at + length), 0.5 * (1 - np.cos(2 * np.pi * phase)), 0.0)
    m["train/loss"] = (s, v * np.exp(np.log(height) * bump))
    return m


def plateau(seed=6):
    rng = np.random.default_rng(seed)
    s = np.arange(2000)
    return {"train/loss": (s, np.log(2) * np.exp(0.01 * rng.standard_normal(s.size)))}
