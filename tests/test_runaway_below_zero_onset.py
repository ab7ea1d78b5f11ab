"""Where a loss that ran away below zero began (#25): a Keras loss negative and falling from its first
epoch (-3.4e4, -1.1e5, -2.0e5, ... -6.5e7: a likelihood term unbounded below) ran away from epoch 0,
not from where it first stood ten times its first values' size; a loss that trained down to zero and
then ran away began at its crossing; the finding spans to the last epoch. A flow's negative NLL that
settles at its level did not run away. Written as Keras' CSVLogger writes training.log."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _divergences(tmp_path, loss: np.ndarray) -> list:
    path = tmp_path / "training.log"
    path.write_text("epoch,loss,lr\n" + "\n".join(f"{i},{v:.8g},0.001" for i, v in enumerate(loss)) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind == "divergence"]


def test_a_loss_negative_and_falling_from_its_first_epoch_ran_away_from_epoch_0(tmp_path):
    e = np.arange(70)
    loss = -3.4e4 * (1 + e) ** 1.9  # -3.4e4 at epoch 0, -1.1e5 at 1, ... -1.1e8 at 69
    (f,) = _divergences(tmp_path, loss)
    assert f.evidence["unbounded_below"] and f.start_step == 0 and f.end_step == 69


def test_a_loss_that_trained_to_zero_and_ran_away_began_at_its_crossing(tmp_path):
    e = np.arange(120)
    loss = np.where(e < 60, 2.0 * np.exp(-e / 15), 0.0)
    loss[60:] = -1.0 * (e[60:] - 59) ** 2.5  # through zero at epoch 60, -5e4 by the end
    (f,) = _divergences(tmp_path, loss)
    assert f.evidence["unbounded_below"] and 55 <= f.start_step <= 60 and f.end_step == 119


def test_a_negative_nll_that_settles_did_not_run_away(tmp_path):
    e = np.arange(120)
    rng = np.random.default_rng(2)
    loss = -3.0 + 4.0 * np.exp(-e / 10) + 0.05 * rng.standard_normal(e.size)
    assert _divergences(tmp_path, loss) == []
