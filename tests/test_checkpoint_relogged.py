"""A resumed run that logged its checkpoint's step again (#25): the trainer logs the step it resumed at, so
the step shows twice. Nothing was trained twice (no rollback), but where the run was resumed is told, as
one quiet note. Fixtures are written here as a training script's `json.dump(history)`."""
from __future__ import annotations

import json
import math

from spikelens import api


def _history(steps, resumed_at=None, back=0):
    rows = [{"step": s, "train_loss": 5 * math.exp(-s / 4000) + 2.7, "dev_loss": 5 * math.exp(-s / 4000) + 2.8,
             "learning_rate": 0.0012} for s in steps if resumed_at is None or s <= resumed_at]
    if resumed_at is not None:
        rows += [{"step": s, "train_loss": 5 * math.exp(-s / 4000) + 2.75, "dev_loss": 5 * math.exp(-s / 4000) + 2.81,
                  "learning_rate": 0.0012} for s in steps if s >= resumed_at - back]
    return rows


def _findings(tmp_path, rows):
    (tmp_path / "loss_history.json").write_text(json.dumps(rows, indent=2))
    (run,) = api.analyze(str(tmp_path), jobs=1).runs
    return [f for f in run.findings if f.kind == "resume_overlap"]


def test_the_checkpoint_step_logged_again_is_one_quiet_note(tmp_path):
    steps = list(range(250, 30001, 250))
    (note,) = _findings(tmp_path, _history(steps, resumed_at=25000))
    assert note.severity == "info" and note.evidence["checkpoint_step_only"]
    assert "resumed at step 25000" in note.message and note.extra["resume_step"] == 25000


def test_a_rollback_of_several_steps_is_still_told_as_one(tmp_path):
    steps = list(range(250, 30001, 250))
    (f,) = _findings(tmp_path, _history(steps, resumed_at=25000, back=2000))
    assert "2000 steps rolled back" in f.message and not f.evidence.get("checkpoint_step_only")


def test_a_run_without_a_resume_has_no_note(tmp_path):
    assert _findings(tmp_path, _history(list(range(250, 30001, 250)))) == []
