"""Launches that died without a word and were launched again (`ended.relaunch_crash_findings`):
a launch followed by one that starts again at or before the step it reached reads to a person
as "it died there". Fixtures: a training script's console log appended by each launch
(`python train.py >> train.log`), as `appended_runs.script_log` writes it, and a script that
resumes from its last checkpoint. Lookalikes that stay silent: a planned resume at the last
step, k-fold runs that each went as far, a run that learned slowly with no relaunch."""
from __future__ import annotations

import numpy as np

from appended_runs import clean_loss, script_log
from spikelens import api, diagnostics, stitching
from spikelens.detect.ended import relaunch_crash_findings


def _died(path):
    with diagnostics.collecting():
        (run,) = api.load_runs(path)
    st = stitching.stitch_run(run)
    return relaunch_crash_findings(run.name, run.meta or {}, st.boundaries)


def _resumed_log(path, launches):
    """A script that prints `epoch E | step S | loss X` and, relaunched, resumes from its
    checkpoint: each launch a (first step, last step) pair, appended in order."""
    rng = np.random.default_rng(3)
    lines = []
    for first, last in launches:
        lines.append("Namespace(lr=0.001, batch_size=32, resume=True)\n")
        steps = np.arange(first, last + 1)
        loss = 2.0 * np.exp(-steps / 300) + 0.5 + 0.01 * rng.standard_normal(steps.size)
        lines += [f"epoch {s // 100} | step {s} | loss {v:.5f}\n" for s, v in zip(steps, loss)]
    path.write_text("".join(lines))
    return path


# ------------------------------------------------------------------ must fire


def test_a_launch_restarted_from_scratch_short_of_the_relaunch_died_there(tmp_path):
    rng = np.random.default_rng(0)
    loss = clean_loss(400, rng)  # an attempt a tenth of the way in: the same run launched again
    (f,) = _died(script_log(tmp_path / "train.log", [loss[:40] + 0.01, loss]))
    assert f.kind == "ended_early" and f.severity == "info" and f.start_step == 40
    assert f.evidence["died_launches"][0]["launch"] == 1 and "died there" in f.message


def test_a_resume_from_a_checkpoint_before_the_last_step_lost_work_so_the_launch_died(tmp_path):
    (f,) = _died(_resumed_log(tmp_path / "train.log", [(1, 460), (400, 900)]))
    assert f.start_step == 460 and f.evidence["relaunched_at_step"] == 400 and f.severity == "info"


def test_an_attempt_killed_at_its_first_step_died_there(tmp_path):
    rng = np.random.default_rng(1)
    attempt, loss = clean_loss(1, rng), clean_loss(300, rng)  # the relaunch logs step 1 again, with another value
    (f,) = _died(script_log(tmp_path / "train.log", [attempt, loss]))
    assert f.start_step == 1


# ------------------------------------------------------------------ must stay silent


def test_a_planned_resume_at_the_last_step_is_no_death(tmp_path):
    assert _died(_resumed_log(tmp_path / "train.log", [(1, 500), (500, 1000)])) == []


def test_k_fold_runs_that_each_went_as_far_are_no_deaths(tmp_path):
    rng = np.random.default_rng(4)
    assert _died(script_log(tmp_path / "train.log", [clean_loss(300, rng) for _ in range(5)])) == []


def test_runs_appended_with_a_shorter_last_one_are_no_deaths(tmp_path):
    rng = np.random.default_rng(2)  # a sweep's runs, one after another: other settings, other lengths
    runs = [clean_loss(300, rng), clean_loss(300, rng), clean_loss(120, rng)]
    assert _died(script_log(tmp_path / "train.log", runs)) == []


def test_one_launch_that_learned_slowly_is_no_death(tmp_path):
    steps = np.arange(1, 800)
    loss = 3.0 - 0.0008 * steps + 0.01 * np.random.default_rng(5).standard_normal(steps.size)
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {s} | loss {v:.5f}\n" for s, v in zip(steps, loss)))
    assert _died(path) == []
