"""SL202 divergence in a short run whose loss rose from its first points and never came down
(`divergence.rose_from_start`): too slow for the short-run rule's 1.3x, but rising with almost every
epoch from the first, so training made the model worse all along. Lookalikes that stay silent: a
warm-up hump that came back down, a loss flat in its noise, a run that learned first and then crept
up a little. Fixtures: a Keras `CSVLogger` file (`epoch,loss,val_loss`) written here with the csv
module, as Keras writes it."""
from __future__ import annotations

import csv

import numpy as np

from spikelens import api, diagnostics


def _keras_csv(path, loss):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epoch", "loss", "val_loss"])
        for i, v in enumerate(loss):
            w.writerow([i, f"{v:.6f}", f"{v * 1.1:.6f}"])
    return path


def _divergence(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "divergence"]


def _rising(n, ratio, noise, seed=0):
    rng = np.random.default_rng(seed)
    return 0.62 * np.exp(np.linspace(0.0, np.log(ratio), n)) * (1 + noise * rng.standard_normal(n))


# ------------------------------------------------------------------ must fire


def test_SL202_a_loss_rising_every_epoch_from_the_first_diverged(tmp_path):
    (f,) = _divergence(_keras_csv(tmp_path / "training.csv", _rising(18, 1.26, 0.003)))
    assert f.severity == "warning" and f.start_step == 0 and f.evidence["from_first_points"]
    assert 1.15 < f.evidence["rise_ratio"] < 1.3 and "from its first points" in f.message


# ------------------------------------------------------------------ must stay silent


def test_SL202_a_warm_up_hump_that_came_back_down_is_no_divergence(tmp_path):
    hump = np.r_[_rising(8, 1.25, 0.003), 0.77 * np.exp(-np.arange(12) / 6)]
    assert _divergence(_keras_csv(tmp_path / "training.csv", hump)) == []


def test_SL202_a_flat_noisy_loss_is_no_divergence(tmp_path):
    flat = 0.69 * (1 + 0.02 * np.random.default_rng(1).standard_normal(20))
    assert _divergence(_keras_csv(tmp_path / "training.csv", flat)) == []


def test_SL202_a_run_that_learned_then_crept_up_a_little_is_not_from_the_start(tmp_path):
    loss = np.r_[0.62 * np.exp(-np.arange(6) / 2), 0.62 * np.exp(-2.5) * np.linspace(1.0, 1.1, 12)]
    assert not any(f.evidence.get("from_first_points") for f in _divergence(_keras_csv(tmp_path / "training.csv", loss)))
