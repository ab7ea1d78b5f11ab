"""'Never learned' needs a loss that did not fall: a noisy per-batch loss falling 20% in rank order
over its points is learning (`plateaus._rank_fall_z`, issue 25), though its thirds' medians sit
within their noise (dev: a Lightning run of 40 single-batch losses, 0.225 -> 0.179, labelled clean,
was 'never left its first level'). The same noise with no fall still never learned.
Fixtures: Lightning's CSVLogger `metrics.csv` (epoch, step, train_loss), written here as it writes it."""
from __future__ import annotations

import numpy as np

from conftest import only_run, loud, write_csv


def _lightning(path, fall: float, seed: int = 31, n: int = 40):
    rng = np.random.default_rng(seed)
    trend = 0.225 * np.exp(np.linspace(0, np.log(1 - fall), n))
    loss = trend * np.exp(0.17 * rng.standard_normal(n))
    return write_csv(path / "metrics.csv", ["epoch", "step", "train_loss"],
                     ([i // 8, 50 * i + 49, f"{v:.6f}"] for i, v in enumerate(loss)))


def _never(run):
    return [f for f in loud(run) if f.kind == "plateau"]


def test_a_noisy_loss_falling_20_percent_in_rank_order_is_learning(tmp_path):
    assert _never(only_run(_lightning(tmp_path / "falls", fall=0.2))) == []


def test_the_same_noise_with_no_fall_never_learned(tmp_path):
    (flat,) = _never(only_run(_lightning(tmp_path / "flat", fall=0.0)))
    assert flat.evidence["reading"] == "never"
