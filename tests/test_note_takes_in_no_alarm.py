"""A note leads nothing (#25): a held-out score that 'never improved' within its noise is a note, and
an alarm folded into it would vanish from the report. A validation loss that swings 2x between
evaluations and ends worse than it began (an unstable evaluation: a small validation set, BatchNorm
statistics) stays the alarm beside the note on a validation accuracy that never improved; a validation
set that only wobbles has neither. Written as Keras' CSVLogger writes training.log."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _findings(tmp_path, loss_noise: np.ndarray, val_acc: np.ndarray, val_loss: np.ndarray) -> list:
    e = np.arange(val_acc.size)
    loss = 0.98 * np.exp(-e / 120) + 0.01 * loss_noise
    acc = 0.55 + 0.3 * (1 - np.exp(-e / 30))
    path = tmp_path / "training.log"
    path.write_text("epoch,accuracy,loss,val_accuracy,val_loss\n" + "\n".join(
        f"{i},{a:.4f},{l:.4f},{va:.4f},{vl:.4f}" for i, a, l, va, vl in zip(e, acc, loss, val_acc, val_loss)) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings]


def test_an_unstable_validation_loss_stays_the_alarm_beside_a_never_improved_note(tmp_path):
    rng = np.random.default_rng(0)
    n = 100
    noise = rng.standard_normal(n)
    val_acc = np.where(rng.uniform(size=n) < 0.35, rng.uniform(0.33, 0.40, n), rng.uniform(0.70, 0.85, n))
    val_loss = np.where(val_acc < 0.5, rng.uniform(2.0, 6.0, n), rng.uniform(0.45, 1.0, n)) * (1 + 0.4 * np.arange(n) / n)
    found = _findings(tmp_path, noise, val_acc, val_loss)
    swings = [f for f in found if f.kind == "oscillation" and f.metric == "val_loss"]
    assert len(swings) == 1 and swings[0].severity == "warning"
    notes = [f for f in found if f.kind == "plateau" and f.metric == "val_accuracy"]
    assert notes and all(f.severity == "info" and not f.evidence.get("folded") for f in notes)


def test_a_validation_set_that_only_wobbles_has_no_alarm(tmp_path):
    rng = np.random.default_rng(0)
    n = 100
    noise = rng.standard_normal(n)
    val_acc = 0.78 + 0.01 * rng.standard_normal(n)
    val_loss = 0.6 * (1 + 0.03 * rng.standard_normal(n))
    found = _findings(tmp_path, noise, val_acc, val_loss)
    assert not [f for f in found if f.severity != "info" and f.metric in ("val_loss", "val_accuracy")]
