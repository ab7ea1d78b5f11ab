"""Launches inside one file: each relaunch appended to a log becomes a segment, stitched
like separate files (SL301 resume_overlap, SL302 step_reset), from every signal the
format gives (a step logged again, the step counter going back, nanoGPT's `mfu -100.00%`
first lines); writers side by side in one file and eval rows at a logged step are not
launches."""
from __future__ import annotations

import sys

import numpy as np
import polars as pl

from conftest import FIXTURES, analyzed_run as report, tree_hashes
from spikelens import api, diagnostics
from spikelens.importers import textsignals
from spikelens.importers.patterns import NANOGPT
from spikelens.importers.textlogs import split_lines

sys.path.insert(0, str(FIXTURES))
from writers import relaunches as W  # noqa: E402

HERE = FIXTURES / W.OUT



def spans(run) -> list[tuple[int, int]]:
    return [(s["first_step"], s["last_step"]) for s in run.segments]


def kinds(run, *names) -> list:
    return [f for f in run.findings if f.kind in names]


def test_fixtures_are_what_the_writer_writes(tmp_path):
    W.make(tmp_path)
    assert tree_hashes(tmp_path / W.OUT) == tree_hashes(HERE)


# ------------------------------------------------------------------ SL301 / SL302 must fire


def test_SL301_nanogpt_appended_relaunches_are_segments():
    run = report(HERE / "nanogpt_appended" / "train_log.txt")
    # launch 3 logged nothing; launch 4 re-logged iter 500 with launch 2's values: only its
    # mfu -100.00% lines show it started there
    assert spans(run) == [(0, 330), (300, 500), (500, 700)]
    (overlap,) = kinds(run, "resume_overlap")
    assert (overlap.extra["resume_step"], overlap.extra["rolled_back_from"]) == (300, 330)
    assert overlap.severity == "info" and overlap.code == "SL301"  # a relaunch is a note (significance)
    assert not kinds(run, "step_reset")  # the traceback is mid-file, not where the log ends:
    crash, died = sorted(kinds(run, "ended_early"), key=lambda f: not f.evidence.get("launch_crashed"))
    # the launch it ended is named (info), the run is not called crashed
    assert crash.severity == "info" and crash.evidence["launch_crashed"] and crash.start_step == 500
    # launch 1 ran to 330 and was started again from its checkpoint at 300: it died there (info)
    assert died.severity == "info" and died.evidence["launch_died"] and died.start_step == 330


def test_nanogpt_relaunch_with_identical_relog_is_only_seen_through_the_mfu_marker(tmp_path):
    text = (HERE / "nanogpt_appended" / "train_log.txt").read_text()
    plain = tmp_path / "train_log.txt"
    plain.write_text(text.replace("mfu -100.00%", "mfu 38.00%"))
    assert spans(report(plain)) == [(0, 330), (300, 700)]


def test_launch_starts_open_after_the_last_unmarked_step_line():
    lines = split_lines((HERE / "nanogpt_appended" / "train_log.txt").read_text())
    starts = textsignals.launch_starts(lines, NANOGPT)
    texts = lines.get_column("text")
    # each start is the first line after the old launch's last iteration (the relaunch's
    # preamble and eval line belong to it); the first launch's own placeholders open nothing
    assert len(starts) == 2
    assert all(texts[s - 1].startswith("iter ") and not texts[s].startswith("iter ") for s in starts)


def test_SL301_SL302_detectron2_rollbacks_and_a_stage_whose_counter_restarts():
    run = report(HERE / "detectron2_stages" / "metrics.json")
    segs = run.segments
    assert [s["launch"] for s in segs] == ["start", "rollback", "reset", "rollback"]
    (reset,) = kinds(run, "step_reset")
    assert reset.extra["logged_first_step"] == 19 and reset.extra["resume_step"] == 4019
    # the rollback inside stage 2 is on stage 2's re-based counter, not on stage 1's steps
    assert segs[3]["step_offset"] == segs[2]["step_offset"] == 4000
    overlaps = sorted((f.extra["resume_step"], f.extra["rolled_back_from"]) for f in kinds(run, "resume_overlap"))
    assert overlaps == [(1519, 1999), (5019, 5999)]


def test_SL301_keras_appended_fit_calls_restart_from_epoch_0():
    run = report(HERE / "keras_rerun" / "training.log")
    assert spans(run) == [(0, W.KERAS_FIRST - 1), (0, W.KERAS_SECOND - 1)]
    (overlap,) = kinds(run, "resume_overlap")
    assert overlap.extra["resume_step"] == 0 and overlap.evidence["from_scratch"] is True


def test_SL301_keras_resumed_from_a_checkpoint_epoch_is_a_second_segment():
    """A rollback of a few epochs, past the old end on the 4th row after it, is a relaunch:
    one such row per metric is not two writers side by side."""
    run = report(HERE / "keras_resumed" / "training.log")
    assert spans(run) == [(0, W.KERAS_CRASH - 1), (W.KERAS_CHECKPOINT, W.KERAS_EPOCHS - 1)]
    (overlap,) = kinds(run, "resume_overlap")
    assert overlap.extra["resume_step"] == W.KERAS_CHECKPOINT


def test_SL302_identical_reruns_are_runs_appended_with_a_count():
    run = report(HERE / "detectron2_reruns" / "metrics.json")
    assert len(run.segments) == 4
    (appended,) = kinds(run, "step_reset")
    assert appended.evidence["appended_runs"] == 4 and appended.evidence["launches"] == [1, 2, 3]
    assert appended.message.startswith("4 runs appended to this log, each from step 19")
    (relogged,) = kinds(run, "resume_overlap")  # the steps they logged again: a note
    assert relogged.extra["restarts"] == 3 and relogged.severity == appended.severity == "info"


def test_stamped_nanogpt_lines_are_read_with_their_wall_time():
    run = report(HERE / "nanogpt_stamped" / "log.txt")
    loss = run.frame.filter(pl.col("metric") == "train_loss")
    assert loss.height == len(range(2500, 3061, 10)) and loss.get_column("wall_time").null_count() == 0
    (nan,) = kinds(run, "nan")
    assert nan.start_step == 3010


# ------------------------------------------------------------------ must stay silent


def test_writers_side_by_side_in_one_file_are_not_relaunches():
    run = report(HERE / "csv_two_writers" / "metrics.csv")
    assert spans(run) == [(10, 600), (410, 800)]  # only the relaunch from step 400
    (overlap,) = kinds(run, "resume_overlap")
    assert overlap.extra["resume_step"] == 410


def test_detectron2_eval_rows_at_a_logged_iteration_are_not_a_relaunch():
    run = report(HERE / "detectron2_eval_rows" / "metrics.json")
    assert len(run.segments) == 1
    assert not kinds(run, "resume_overlap", "step_reset", "step_gap", "wallclock_gap", "ended_early")


def test_finished_nanogpt_run_with_eval_and_iter_lines_at_one_step_is_quiet():
    run = report(HERE / "nanogpt_eval_twice" / "train_log.txt")
    assert len(run.segments) == 1
    assert not kinds(run, "resume_overlap", "step_reset", "ended_early")


# ------------------------------------------------------------------ SL303 after a relaunch: what is not repeated data


def _repeated(step, value, starts=()):
    import detector_cases as cases
    from spikelens.detect.resume import RepeatedDataDetector

    ctx = cases.context({"train/loss": (step, value)}, segment_starts=starts)
    return RepeatedDataDetector().detect(ctx.series["train/loss"], ctx)


def _curve(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    step = np.arange(n)
    rng = np.random.default_rng(seed)
    return step, (2.0 + 3.0 * np.exp(-step / 300)) * np.exp(0.01 * rng.standard_normal(n))


def test_SL303_fires_when_the_loss_stays_low_until_fresh_data():
    step, value = _curve(1200, 50)
    value[400:800] *= 0.85  # data loader restarted at 400: the 400 steps trained before are seen again
    (f,) = _repeated(step, value, starts=[400])
    assert (f.start_step, f.end_step) == (400, 800)


def test_SL303_silent_on_a_fall_across_a_hole_in_the_logged_steps():
    step, value = _curve(1200, 51)
    # a relaunch whose logs were lost: 600 steps of progress fall between two logged points
    keep = (step < 300) | (step >= 900)
    s, v = np.concatenate([step[keep][:300], step[keep][300:]]), value[keep]
    v = np.where(s >= 900, v * 0.6, v)
    assert _repeated(s, v, starts=[900]) == []


def test_SL303_silent_on_a_loss_that_flips_between_two_levels():
    step, value = _curve(1250, 52)
    rng = np.random.default_rng(60)
    low = np.repeat(rng.random(1250 // 25) < 0.15, 25)  # data order: stretches at a second, lower level
    low[343:741] = np.repeat(rng.random(40) < 0.5, 10)[:398]  # ... half of them between 343 and 741
    assert _repeated(step, np.where(low, value * 0.88, value)) == []


def test_detectron2_metrics_json_and_its_event_files_are_one_run_reported_once():
    with diagnostics.collecting():
        rep = api.analyze(HERE / "detectron2_mirror")
    (run,) = rep.runs  # metrics.json and the TensorBoard files hold the same curves
    assert len([f for f in run.findings if f.kind == "resume_overlap"]) == 1
    assert any("metrics.json hold(s) the same curves as 2 tensorboard files" in line for line in rep.warnings)


def test_runs_in_one_folder_with_different_curves_are_both_kept(tmp_path):
    import shutil

    shutil.copytree(HERE / "detectron2_mirror", tmp_path / "out")
    (tmp_path / "out" / "metrics.json").write_text((HERE / "detectron2_reruns" / "metrics.json").read_text())
    with diagnostics.collecting():
        assert len(api.analyze(tmp_path / "out").runs) == 2
