"""A reward that never rose is one finding (#25): the plateau detector's flat reading. The other
never-learned readings of the same reward (divergence's "never kept a gain", objective's "never
rose" / "never earned") are dropped by reconcile, not by one detector calling another's method.
Written as SB3 writes `progress.csv`."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import spikelens
from sb3_progress import write_progress

DETECT = Path(spikelens.__file__).parent / "detect"


def _findings(tmp_path, reward):
    write_progress(tmp_path / "agent" / "progress.csv", reward)
    (run,) = spikelens.analyze(tmp_path / "agent", jobs=1).runs
    return [f for f in run.findings if f.metric == "rollout/ep_rew_mean"]


def test_a_flat_reward_is_told_once_by_its_flat_reading(tmp_path):
    """Returns around 10 for 400 rollouts: every reading says "never learned"; one is kept."""
    reward = 10 + np.random.default_rng(3).normal(0, 0.5, 400)
    (f,) = _findings(tmp_path, reward)
    assert f.kind == "plateau" and f.code == "SL205" and f.evidence["reward_flat"] and "never rose" in f.message


def test_a_reward_never_earned_is_told_once(tmp_path):
    """Exactly zero on every rollout while the value loss moved: the flat reading, not a second finding."""
    (f,) = _findings(tmp_path, np.zeros(300))
    assert f.kind == "plateau" and f.evidence["reward_flat"]


def test_a_reward_that_fell_back_keeps_its_never_kept_reading(tmp_path):
    """A failing agent's returns (9-12, one lucky episode in twenty at 30-70) that sat 2 higher early on
    and burst to 40 for 90 of 3,000 rollouts: not one flat level, so divergence's reading stays."""
    rng = np.random.default_rng(7)
    reward = rng.integers(9, 13, 3000).astype(float)
    lucky = rng.random(3000) < 0.05
    reward[lucky] = rng.uniform(30, 70, lucky.sum())
    reward[1300:1390] = rng.normal(40, 10, 90).clip(9)
    reward[300:1000] += 2
    fs = [f for f in _findings(tmp_path, reward) if f.severity != "info"]
    assert [f.code for f in fs] == ["SL202"] and fs[0].evidence["fell_back"] and not fs[0].evidence.get("reward_flat")


def test_no_detector_calls_a_fresh_detectors_private_method():
    """Cross-detector decisions belong in reconcile: `SomeDetector()._method(...)` in a detector module
    runs a second detector's logic with default parameters, whatever the user configured. (The
    inline form only: plateaus' `OverfittingDetector()` kept in a name is a known one left.)"""
    calls = {p.name: re.findall(r"\b\w+Detector\(\)\._\w+", p.read_text()) for p in DETECT.glob("*.py")}
    assert {name: found for name, found in calls.items() if found} == {}
