"""Overfitting (SL206) judged as an engineer reads it: the held-out curve rose from its best by
more than the scatter of the evaluations after that best, while the training loss fell; and a
rise that gives back a negligible share of what the held-out loss gained is a note.

Fixtures are HF `trainer_state.json` files written here the way `TrainerState.save_to_json`
writes them (`fixtures/writers/hf.py`): a noisy fine-tune whose eval loss zigzags on its way
down (its second differences are large before the best) and then sits above its best, a twin
that holds its best level (silent), and a long run whose eval loss ends a thousandth of a nat
above a best near zero."""
from __future__ import annotations

import sys

import numpy as np

import spikelens

from conftest import FIXTURES, loud

sys.path.insert(0, str(FIXTURES))
from writers import hf  # noqa: E402

EVAL_EVERY = 200


def _write(path, train: list[float], evals: list[float], every: int = 100):
    """A trainer_state.json: a train loss every `every` steps, an eval loss every EVAL_EVERY."""
    hist = []
    for i, loss in enumerate(train, start=1):
        s = i * every
        hist.append({"epoch": round(s / 460, 4), "learning_rate": 3e-5 * (1 - s / (every * len(train) + 1)),
                     "loss": round(loss, 4), "step": s})
        if s % EVAL_EVERY == 0 and s // EVAL_EVERY <= len(evals):
            hist.append({"epoch": round(s / 460, 4), "eval_loss": evals[s // EVAL_EVERY - 1], "eval_runtime": 3.1,
                         "eval_samples_per_second": 410.0, "eval_steps_per_second": 12.9, "step": s})
    last = len(train) * every
    hf.save_to_json(path / "trainer_state.json", hf.state(hist, last, max_steps=last))
    return path / "trainer_state.json"


def _overfitting(run):
    return [f for f in run.findings if f.kind == "overfitting"]


TRAIN = list(np.geomspace(0.46, 0.027, 22))
# falls with a zigzag to its best at the 4th evaluation, then sits 10-30% above it
NOISY_RISE = [0.314, 0.255, 0.266, 0.232, 0.303, 0.272, 0.254, 0.283, 0.294, 0.294, 0.288]
# the same descent, then it holds its best level with the same scatter
NOISY_HOLD = [0.314, 0.255, 0.266, 0.232, 0.241, 0.229, 0.236, 0.244, 0.231, 0.238, 0.235]


def test_an_eval_loss_that_sits_above_its_best_beyond_its_own_scatter_is_overfitting(tmp_path):
    (run,) = spikelens.analyze(_write(tmp_path, TRAIN, NOISY_RISE), jobs=1).runs
    (over,) = _overfitting(run)
    assert over.severity == "warning" and over in loud(run)
    assert over.metric == "eval_loss" and over.start_step == 4 * EVAL_EVERY
    assert "best checkpoint is near step 800" in over.message
    assert over.evidence["robust_z"] >= 3


def test_an_eval_loss_that_holds_its_best_level_is_not_overfitting(tmp_path):
    (run,) = spikelens.analyze(_write(tmp_path, TRAIN, NOISY_HOLD), jobs=1).runs
    assert not [f for f in _overfitting(run) if f.severity != "info"], [f.message for f in _overfitting(run)]


def test_a_rise_a_thousandth_of_the_eval_loss_gain_near_zero_is_a_note(tmp_path):
    rng = np.random.default_rng(3)
    n = 200
    train = list(np.geomspace(4.0, 3e-7, n) * np.exp(rng.normal(0, 0.05, n)))
    # a grokking-like held-out loss: from 4.8 down to 3e-4 by the 100th evaluation, then a slow
    # climb to 1.3e-3 (4x on the log scale, 0.02% of what it fell)
    down = np.geomspace(4.8, 3e-4, 50)
    up = np.geomspace(3e-4, 1.3e-3, 50)
    evals = list(np.concatenate([down, up]) * np.exp(rng.normal(0, 0.02, 100)))
    (run,) = spikelens.analyze(_write(tmp_path, train, evals), jobs=1).runs
    (over,) = _overfitting(run)
    assert over.severity == "info" and over not in loud(run)
    assert "negligible" in over.message and over.evidence["rise_percent"] > 100


def test_the_same_rise_against_a_modest_gain_stays_loud(tmp_path):
    rng = np.random.default_rng(3)
    n = 200
    train = list(np.geomspace(4.0, 0.05, n) * np.exp(rng.normal(0, 0.05, n)))
    down = np.geomspace(2.0, 1.0, 50)
    up = np.geomspace(1.0, 1.6, 50)
    evals = list(np.concatenate([down, up]) * np.exp(rng.normal(0, 0.02, 100)))
    (run,) = spikelens.analyze(_write(tmp_path, train, evals), jobs=1).runs
    (over,) = _overfitting(run)
    assert over.severity == "warning" and "negligible" not in over.message


def test_the_finding_leads_with_the_eval_curve_whose_rise_matters(tmp_path):
    """A total eval loss that rose 2% because its box term rose 16% while its class term fell:
    the event is the box term's, and the best checkpoint is where that turned."""
    rng = np.random.default_rng(5)
    n_eval = 40
    box = np.concatenate([np.geomspace(1.6, 1.0, 16), np.geomspace(1.0, 1.16, n_eval - 16)])
    cls = np.geomspace(1.2, 1.08, n_eval)
    box, cls = box * np.exp(rng.normal(0, 0.004, n_eval)), cls * np.exp(rng.normal(0, 0.004, n_eval))
    hist = []
    for i in range(1, 2 * n_eval + 1):
        s = 100 * i
        hist.append({"epoch": i / 2, "learning_rate": 1e-4, "loss": round(2.5 * 0.98 ** i, 4), "step": s})
        if s % EVAL_EVERY == 0:
            k = s // EVAL_EVERY - 1
            hist.append({"epoch": i / 2, "eval_loss": float(box[k] + cls[k]), "eval_box_loss": float(box[k]),
                         "eval_cls_loss": float(cls[k]), "eval_runtime": 3.0, "step": s})
    hf.save_to_json(tmp_path / "trainer_state.json", hf.state(hist, 100 * 2 * n_eval, max_steps=100 * 2 * n_eval))
    (run,) = spikelens.analyze(tmp_path / "trainer_state.json", jobs=1).runs
    (over,) = _overfitting(run)
    assert over.metric == "eval_box_loss" and abs(over.start_step - 16 * EVAL_EVERY) <= 2 * EVAL_EVERY
    assert over.evidence["rise_percent"] > 10
    assert "eval_loss" in [a["metric"] for a in over.evidence["also_on"]]
