"""A fine-tune evaluated once an epoch for three epochs (#25): the first evaluation the best and
both later ones above it while the training loss fell is a turn (a note: two evaluations after the
best are a step, not yet a trend); three that fell, or a last one back at the best, are none.
Written as the HF Trainer writes `trainer_state.json`."""
from __future__ import annotations

import sys

import numpy as np

import spikelens

from conftest import FIXTURES

sys.path.insert(0, str(FIXTURES))
from writers import hf  # noqa: E402


def _run(tmp_path, evals):
    history = []
    for s in range(10, 3001, 10):
        history.append({"epoch": s / 1000, "learning_rate": 2e-5, "loss": round(1.2 * np.exp(-s / 700.0) + 0.01, 5),
                        "step": s})
        if s % 1000 == 0:
            history.append({"epoch": s / 1000, "eval_loss": evals[s // 1000 - 1], "step": s})
    path = tmp_path / "ft" / "trainer_state.json"
    path.parent.mkdir()
    hf.save_to_json(path, hf.state(history, 3000, max_steps=3000))
    (run,) = spikelens.analyze(path, jobs=1).runs
    return [f for f in run.findings if f.kind == "overfitting"]


def test_three_epochs_best_first_then_above_is_a_note(tmp_path):
    (f,) = _run(tmp_path, [0.46, 0.53, 0.534])
    assert f.metric == "eval_loss" and f.severity == "info" and f.start_step == 1000 and f.end_step == 3000
    assert "rose 16%" in f.message and "only 2 evaluations after the best" in f.message


def test_three_falling_evaluations_are_no_turn(tmp_path):
    assert not _run(tmp_path, [0.53, 0.49, 0.46])


def test_a_last_evaluation_back_at_the_best_is_no_turn(tmp_path):
    assert not _run(tmp_path, [0.46, 0.53, 0.462])


def test_a_middle_best_is_no_turn_on_three(tmp_path):
    assert not _run(tmp_path, [0.50, 0.46, 0.53])
