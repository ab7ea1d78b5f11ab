"""A person reads a run that logs its epoch in epochs, while findings sit on steps: each finding's
evidence says the epoch in progress at its anchor step (`epoch`, and `epoch_start` / `epoch_end`
for a span), where the run logs its epoch and its step is not already the epoch. Fixtures: a
`trainer_state.json` written as `TrainerState.save_to_json` writes it (`fixtures/writers/hf.py`),
and a Keras `CSVLogger` file written by the test as that callback writes it (`epoch,loss,val_loss`)."""
from __future__ import annotations

import numpy as np

from spikelens import api

from conftest import write_csv

PER_EPOCH, EPOCHS = 50, 12


def _overfitting_history():
    """Train entries every 10 steps, one evaluation per epoch; the eval loss bottoms at epoch 4 and
    climbs after it while the train loss keeps falling."""
    rng = np.random.default_rng(3)
    out = []
    for s in range(10, PER_EPOCH * EPOCHS + 1, 10):
        out.append({"epoch": round(s / PER_EPOCH, 4), "learning_rate": 5e-5, "step": s,
                    "loss": round(float(2.0 * np.exp(-s / 150) + 0.1 + 0.01 * rng.standard_normal()), 4)})
        if s % PER_EPOCH == 0:
            e = s // PER_EPOCH
            out.append({"epoch": float(e), "step": s, "eval_runtime": 1.0,
                        "eval_loss": round(1.0 - 0.1 * e if e <= 4 else 0.6 + 0.08 * (e - 4), 4)})
    return out


def test_an_overfitting_finding_says_the_epoch_its_best_evaluation_was_in(tmp_path):
    from fixtures.writers.hf import save_to_json, state

    last = PER_EPOCH * EPOCHS
    save_to_json(tmp_path / "trainer_state.json", state(_overfitting_history(), last, max_steps=last))
    (run,) = api.analyze(tmp_path / "trainer_state.json").runs
    (over,) = [f for f in run.findings if f.kind == "overfitting" and f.metric == "eval_loss"]
    assert over.start_step == 4 * PER_EPOCH
    assert over.evidence["epoch"] == 4 and over.evidence["epoch_start"] == 4
    assert over.evidence["epoch_end"] == EPOCHS


def test_a_run_whose_step_is_its_epoch_gets_no_epoch_evidence(tmp_path):
    # Keras CSVLogger: one row an epoch, the epoch is the step; the val loss turns up after epoch 8
    rows = [[e, round(2.0 * np.exp(-e / 6) + 0.1, 4), round(1.0 - 0.08 * e if e <= 8 else 0.36 + 0.06 * (e - 8), 4)]
            for e in range(30)]
    (run,) = api.analyze(write_csv(tmp_path / "training.log", ["epoch", "loss", "val_loss"], rows)).runs
    assert run.findings and all("epoch" not in f.evidence for f in run.findings)
