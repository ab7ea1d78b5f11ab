"""A loss that rose at once and never came back below its first value diverged from its first
step (#25: a model blown up at the start, its loss 6x its first value and flat for hundreds of
epochs): the trend statistics skip the first points as warm-up, so this reading has its own rule.
A flat loss (about half its points below the first), a loss that learned, a generator's loss that
rises as its discriminator learns and an agent's value loss stay silent. Written as Lightning's
CSVLogger writes metrics.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _divergences(tmp_path, columns: dict[str, np.ndarray]) -> list:
    n = len(next(iter(columns.values())))
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    rows = ["epoch,step," + ",".join(columns)] + [
        f"{i},{i}," + ",".join(f"{v[i]:.6g}" for v in columns.values()) for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path.parent)
    return [f for r in report.runs for f in r.findings if f.kind == "divergence"]


def _noise(n: int, seed: int, scale: float = 0.02) -> np.ndarray:
    return 1 + scale * np.random.default_rng(seed).standard_normal(n)


def test_a_loss_that_jumped_6x_at_once_and_stayed_diverged_from_its_first_step(tmp_path):
    """5.4e30 at epoch 0, 3.19e31 from epoch 1 on (values as a mis-scaled regression logs them)."""
    loss = 3.19e31 * _noise(300, 1, 0.001)
    loss[0] = 5.4e30
    (f,) = _divergences(tmp_path, {"train_loss": loss})
    assert f.evidence["from_first_step"] and f.start_step == 0 and f.end_step == 299
    assert f.severity == "error" and 5.5 < f.magnitude < 6.5 and "diverged from its first step" in f.message


def test_a_loss_that_climbed_over_its_first_epochs_and_stayed_up_diverged_from_its_first_step(tmp_path):
    loss = np.concatenate([np.geomspace(2.3, 9.0, 8), np.full(200, 9.0)]) * _noise(208, 2)
    loss[0] = 2.3
    (f,) = _divergences(tmp_path, {"train_loss": loss})
    assert f.evidence["from_first_step"] and f.start_step == 0 and f.evidence["risen_by_step"] <= 7


def test_a_flat_loss_that_never_learned_is_no_divergence(tmp_path):
    """Noise around its first value: about half its points fall below the first."""
    assert _divergences(tmp_path, {"train_loss": 0.693 * _noise(300, 3)}) == []


def test_a_loss_that_rose_under_twice_its_first_value_is_no_divergence_from_the_start(tmp_path):
    loss = 1.5 * _noise(300, 4, 0.01)
    loss[0] = 1.0
    assert _divergences(tmp_path, {"train_loss": loss}) == []


def test_a_generators_loss_that_rose_as_its_discriminator_learned_is_no_divergence(tmp_path):
    g = np.concatenate([[0.69], 2.5 * _noise(299, 5, 0.05)])
    d = np.concatenate([[0.69], 0.3 * _noise(299, 6, 0.05)])
    assert _divergences(tmp_path, {"loss_G": g, "loss_D": d}) == []


def test_an_agents_value_loss_that_grew_with_its_returns_is_no_divergence(tmp_path):
    value = np.concatenate([[0.05], 4.0 * _noise(299, 7, 0.1)])
    ret = np.linspace(5, 200, 300) * _noise(300, 8, 0.05)
    assert _divergences(tmp_path, {"value_loss": value, "episode_reward": ret}) == []


def test_a_divergence_that_rose_to_the_end_spans_to_its_last_step(tmp_path):
    """Its span is the turn to the last step it was seen rising (a label over the rise is inside it)."""
    i = np.arange(400)
    loss = np.where(i < 200, 2.0 * np.exp(-i / 70), 2.0 * np.exp(-200 / 70) * np.exp((i - 200) / 60)) * _noise(400, 9)
    (f,) = _divergences(tmp_path, {"train_loss": loss})
    assert not f.evidence.get("from_first_step") and 150 <= f.start_step <= 230 and f.end_step == 399
