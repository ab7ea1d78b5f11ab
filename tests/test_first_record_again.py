"""A first attempt killed right after logging its first record, relaunched with the same seed, which logs
that record again with the same values and trains on (`stitching._first_record_again`): the relaunch
re-logged the one step the killed attempt logged (SL301 info, `killed_at_start`), and the attempt died
there (SL306 info). MAE's `log.txt` held its epoch 0 twice, identical, then epochs 1-199 once each (its
reader keeps one of the two identical lines, so that file itself is not told yet).
Silent: every record written twice (two writers), a first step whose second record holds other metrics
(a train row, then an eval row), a repeat of a later step. Fixtures: JSON lines as `json.dumps` writes
them a record a line (a `metrics.jsonl`) and a Keras CSVLogger-style CSV."""
from __future__ import annotations

import json
import math

from conftest import analyzed_run


def _record(e: int) -> dict:
    return {"train_lr": 1e-6 * (e + 0.78), "train_loss": 2.07 * math.exp(-e / 20) + 0.05, "epoch": e}


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _kinds(run):
    return {f.kind: f for f in run.findings if f.kind in ("resume_overlap", "step_reset", "ended_early")}


def test_SL301_the_first_record_logged_again_is_a_killed_first_attempt(tmp_path):
    recs = [_record(0), _record(0)] + [_record(e) for e in range(1, 60)]
    found = _kinds(analyzed_run(_jsonl(tmp_path / "metrics.jsonl", recs)))
    assert found["resume_overlap"].evidence.get("killed_at_start") and found["resume_overlap"].start_step == 0
    assert found["resume_overlap"].severity == "info" and found["ended_early"].severity == "info"


def test_SL301_the_same_in_a_csv(tmp_path):
    rows = ["epoch,loss,lr"] + [f"0,{_record(0)['train_loss']},{_record(0)['train_lr']}"] * 2 + \
        [f"{e},{_record(e)['train_loss']},{_record(e)['train_lr']}" for e in range(1, 60)]
    (tmp_path / "training.log.csv").write_text("\n".join(rows) + "\n")
    assert _kinds(analyzed_run(tmp_path / "training.log.csv"))["resume_overlap"].evidence.get("killed_at_start")


def test_every_record_written_twice_is_no_killed_attempt(tmp_path):
    recs = [r for e in range(60) for r in (_record(e), _record(e))]
    assert "resume_overlap" not in _kinds(analyzed_run(_jsonl(tmp_path / "metrics.jsonl", recs)))


def test_a_first_step_with_a_train_and_an_eval_record_is_no_killed_attempt(tmp_path):
    recs = [_record(0), {"val_loss": 2.3, "epoch": 0}] + [_record(e) for e in range(1, 60)]
    assert "resume_overlap" not in _kinds(analyzed_run(_jsonl(tmp_path / "metrics.jsonl", recs)))


def test_a_later_record_logged_again_is_no_killed_first_attempt(tmp_path):
    recs = [_record(e) for e in range(0, 30)] + [_record(29)] + [_record(e) for e in range(30, 60)]
    found = _kinds(analyzed_run(_jsonl(tmp_path / "metrics.jsonl", recs)))
    assert not (found.get("resume_overlap") and found["resume_overlap"].evidence.get("killed_at_start"))
