"""A training loss that rose while the held-out loss fell did not diverge (#25): a distillation run
whose curriculum makes the task harder every epoch (training loss 0.0002 -> 0.03) while its validation
loss falls 0.029 -> 0.0137 got better, and its rise is a note; the same rise with the validation loss
rising too is the divergence. Written as Lightning's CSVLogger writes metrics.csv (training rows and
validation rows apart)."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _divergences(tmp_path, val: np.ndarray) -> list:
    rng = np.random.default_rng(0)
    steps = np.arange(0, 3000, 5)
    train = 0.0002 + 0.03 * (1 - np.exp(-steps / 900)) * np.exp(0.05 * rng.standard_normal(steps.size))
    rows = [f"0,{s},{v:.6g}," for s, v in zip(steps, train)]
    rows += [f"{i},{s},,{v:.6g}" for i, (s, v) in enumerate(zip(range(100, 3001, 100), val))]
    rows.sort(key=lambda r: int(r.split(",")[1]))
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("epoch,step,train_loss,val_loss\n" + "\n".join(rows) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path.parent)
    return [f for r in report.runs for f in r.findings if f.kind == "divergence" and f.metric == "train_loss"]


def test_a_training_loss_that_rose_while_the_validation_loss_fell_is_a_note(tmp_path):
    val = 0.0137 + 0.0155 * np.exp(-np.arange(30) / 5)
    found = _divergences(tmp_path, val)
    assert found and all(f.severity == "info" and f.evidence["held_out_fell"]["metric"] == "val_loss"
                         for f in found)


def test_a_training_loss_that_rose_with_the_validation_loss_diverged(tmp_path):
    val = 0.0137 + 0.0155 * (1 - np.exp(-np.arange(30) / 10))
    found = _divergences(tmp_path, val)
    assert found and found[0].severity == "error" and "held_out_fell" not in found[0].evidence
