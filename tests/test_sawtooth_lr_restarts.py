"""A sawtooth that the learning rate's warm restarts make is the schedule (#25): a loss that climbs at
every restart of a cosine schedule with warm restarts (SGDR, every 1,000 steps) and falls as the LR
anneals is a note when the run logs the LR jumping back up at each cycle's start; the same sawtooth
with a constant LR (the same hard batches at the same place every epoch) stays the warning. Written
as Lightning's CSVLogger writes metrics.csv."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics


def _sawtooths(tmp_path, restarts: bool) -> list:
    rng = np.random.default_rng(2)
    n = 5000
    t = np.arange(n)
    cosine = 0.001 * 0.5 * (1 + np.cos(np.pi * (t % 1000) / 1000))
    lr = cosine if restarts else np.full(n, 0.001)
    loss = (0.3 + 2 * np.exp(-t / 800)) * (1 + 1.5 * cosine / 0.001) * np.exp(0.03 * rng.standard_normal(n))
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("step,train_loss,lr-Adam\n" + "\n".join(f"{i},{v:.6g},{a:.6g}" for i, v, a in zip(t, loss, lr)) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path.parent)
    return [f for r in report.runs for f in r.findings if f.kind == "oscillation" and f.evidence.get("periodic")]


@pytest.mark.parametrize("restarts, severity", [(True, "info"), (False, "warning")])
def test_a_sawtooth_at_the_lrs_warm_restarts_is_a_note(tmp_path, restarts, severity):
    (f,) = _sawtooths(tmp_path, restarts)
    assert f.severity == severity and f.evidence["period_steps"] == 1000
    assert ("warm restarts" in f.message) == restarts
