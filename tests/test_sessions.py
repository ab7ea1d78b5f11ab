"""Several runs appended to one log, each restarting its step counter (`sessions.py`, #25): the
report judges the last, and each earlier run is judged on its own points too, on the file's own
step axis, naming their run: as loud as alone when it ran its course in a log of a few runs, notes for
an attempt killed short or a run of a sweep. Must fire: an earlier run whose loss ran away (a script's
text log run three times), an earlier Keras run whose val_loss turned up (CSVLogger with
append=True). Must stay silent: three clean runs appended, and a run resumed from a checkpoint
(a rollback inside one run is not a new run)."""
from __future__ import annotations

import numpy as np

import spikelens

from appended_runs import clean_loss as _clean, script_log as _script_log
from conftest import write_csv


def _findings(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run.findings


def test_an_earlier_run_whose_loss_ran_away_to_its_end_keeps_its_own_severity(tmp_path):
    # the script ran to its last step three times: the first run's divergence is an outcome of its own
    rng = np.random.default_rng(0)
    first = _clean(200, rng)
    first[100:] = first[100] * np.exp(np.linspace(0, np.log(6), 100))
    found = _findings(_script_log(tmp_path / "train.log", [first, _clean(200, rng), _clean(200, rng)]))
    (div,) = [f for f in found if f.kind == "divergence"]
    assert div.evidence["session"]["index"] == 1 and div.evidence["session"]["of"] == 3
    assert 90 <= div.start_step <= 110  # the file's own steps, not an offset axis
    assert div.severity == "error" and div.evidence["session"]["ran_its_course"]
    assert div.message.startswith("run 1 of 3 appended to this log") and "ran its course" in div.message
    assert any(f.kind == "step_reset" for f in found)


def test_an_attempt_killed_short_that_a_relaunch_replaced_is_a_note(tmp_path):
    # the first attempt ran away and was killed at step 130; the relaunch ran all 200 steps
    rng = np.random.default_rng(0)
    first = _clean(200, rng)
    first[60:] = first[60] * np.exp(np.linspace(0, np.log(6), 140))
    found = _findings(_script_log(tmp_path / "train.log", [first[:130], _clean(200, rng)]))
    (div,) = [f for f in found if f.kind == "divergence"]
    assert div.severity == "info" and div.evidence["session"]["severity_alone"] == "error"
    assert not div.evidence["session"]["ran_its_course"] and "replaced by the later runs" in div.message


def test_an_earlier_run_of_a_sweep_is_a_note_however_far_it_ran(tmp_path):
    # five configurations appended to one log: each run's events are notes the verdict sums up
    rng = np.random.default_rng(0)
    first = _clean(200, rng)
    first[100:] = first[100] * np.exp(np.linspace(0, np.log(6), 100))
    found = _findings(_script_log(tmp_path / "train.log", [first] + [_clean(200, rng) for _ in range(4)]))
    (div,) = [f for f in found if f.kind == "divergence"]
    assert div.severity == "info" and div.evidence["session"]["of"] == 5


def test_three_clean_runs_appended_have_no_finding_about_any_of_them(tmp_path):
    rng = np.random.default_rng(1)
    found = _findings(_script_log(tmp_path / "train.log", [_clean(200, rng) for _ in range(3)]))
    assert not [f for f in found if "session" in f.evidence]
    assert not [f for f in found if f.kind not in ("step_reset", "resume_overlap")]


def test_a_run_resumed_from_a_checkpoint_is_one_run_not_sessions(tmp_path):
    rng = np.random.default_rng(2)
    loss = _clean(300, rng)
    lines = [f"step {i + 1} | loss {v:.5f}\n" for i, v in enumerate(loss[:220])]
    lines += ["Resuming from checkpoint-200\n"] + [f"step {i + 1} | loss {v:.5f}\n" for i, v in
                                                 zip(range(200, 300), loss[200:] * 1.001)]
    (tmp_path / "train.log").write_text("".join(lines))
    assert not [f for f in _findings(tmp_path / "train.log") if "session" in f.evidence]


def test_an_earlier_keras_run_whose_val_loss_turned_up_is_found_in_a_csvlogger_appended_file(tmp_path):
    # CSVLogger(append=True) writes its header once and the second fit's epochs from 0 again
    rng = np.random.default_rng(3)
    rows = []
    for run in range(2):
        for e in range(30):
            loss = 1.5 * np.exp(-e / 8) + 0.1 + 0.005 * rng.standard_normal()
            val = (0.9 * np.exp(-e / 5) + 0.4 + (0.03 * max(0, e - 10) if run == 0 else 0.0)
                   + 0.005 * rng.standard_normal())
            rows.append([e, round(loss, 5), round(val, 5)])
    found = _findings(write_csv(tmp_path / "training.log", ["epoch", "loss", "val_loss"], rows))
    over = [f for f in found if f.kind == "overfitting" and f.evidence.get("session", {}).get("index") == 1]
    # both fits ran their 30 epochs: the first one's turn is its own outcome, as loud as alone
    assert over and 6 <= over[0].start_step <= 14 and over[0].severity == "warning"
