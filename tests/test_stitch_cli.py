"""`spikelens stitch` and `analyze` on resumed runs written by the real writers
(`fixtures/writers/resumes.py`, W&B offline from `fixtures/writers/wandb_offline.py`).

Expected steps and values are recomputed from the writers' curves, never copied from
the output; every run checks that the input files were left untouched.
"""
from __future__ import annotations

import importlib
import json
import shutil
import sys

import numpy as np
import polars as pl

from conftest import FIXTURES, run_cli, tree_hashes
from spikelens import api

sys.path.insert(0, str(FIXTURES))
from writers import resumes as R  # noqa: E402

RES = FIXTURES / "resumes"


def stitched_json(*paths, cwd=None, extra=()):
    before = {p: tree_hashes(p if p.is_dir() else p.parent) for p in paths}
    proc = run_cli("stitch", *paths, "--format", "json", *extra, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    for p, h in before.items():
        assert tree_hashes(p if p.is_dir() else p.parent) == h, f"{p} was modified"
    return json.loads(proc.stdout)


def findings(report, kind):
    return [f for r in report["runs"] for f in r["findings"] if f["kind"] == kind]


def test_SL301_tensorboard_rollback_later_launch_wins(tmp_path):
    out = tmp_path / "stitched.parquet"
    report = stitched_json(RES / "tb_rollback", extra=("-o", str(out)))
    (run,) = report["runs"]
    assert [(s["first_step"], s["last_step"]) for s in run["segments"]] == [(0, R.ROLLBACK_LAST),
                                                                           (R.ROLLBACK_AT, R.ROLLBACK_END)]
    (f,) = findings(report, "resume_overlap")
    assert f["metric"] is None and f["code"] == "SL301"
    assert (f["resume_step"], f["rolled_back_from"]) == (R.ROLLBACK_AT, R.ROLLBACK_LAST)
    # the written frame: every point kept, the later launch live on the overlap
    frame = pl.read_parquet(out)
    assert frame.height == run["points"] and frame.get_column("superseded").dtype == pl.Boolean
    first = R.true_curve(R.ROLLBACK_END + R.INTERVAL, seed=11, interval=R.INTERVAL)
    second = R.true_curve(R.ROLLBACK_END + R.INTERVAL, seed=12, interval=R.INTERVAL)
    loss = frame.filter((pl.col("metric") == "train/loss") & ~pl.col("superseded")).sort("step")
    want = np.where(first["step"] >= R.ROLLBACK_AT, second["loss"], first["loss"]).astype(np.float32)
    np.testing.assert_array_equal(loss.get_column("step").to_numpy(), first["step"])
    np.testing.assert_array_equal(loss.get_column("value").to_numpy().astype(np.float32), want)
    old = frame.filter((pl.col("metric") == "train/loss") & pl.col("superseded"))
    keep = (first["step"] >= R.ROLLBACK_AT) & (first["step"] <= R.ROLLBACK_LAST)
    np.testing.assert_array_equal(old.sort("step").get_column("value").to_numpy().astype(np.float32),
                                  first["loss"][keep].astype(np.float32))
    assert old.get_column("segment").unique().to_list() == [0]


def test_SL302_tensorboard_reset_is_rebased_in_the_frame(tmp_path):
    out = tmp_path / "stitched.csv"
    report = stitched_json(RES / "tb_reset", extra=("-o", str(out)))
    (f,) = findings(report, "step_reset")
    assert f["resume_step"] == R.RESET_TRUE_STEP and f["step_offset"] == R.RESET_TRUE_STEP
    assert f["rolled_back_from"] == R.RESET_LAST
    assert not findings(report, "resume_overlap")
    seg = report["runs"][0]["segments"][1]
    assert (seg["first_step"], seg["last_step"], seg["step_offset"]) == (R.RESET_TRUE_STEP, R.RESET_END,
                                                                         R.RESET_TRUE_STEP)
    frame = pl.read_csv(out)
    c = R.true_curve(R.RESET_END + R.INTERVAL, seed=21, interval=R.INTERVAL)
    loss = frame.filter((pl.col("metric") == "train/loss") & ~pl.col("superseded")).sort("step")
    np.testing.assert_array_equal(loss.get_column("step").to_numpy(), c["step"])
    np.testing.assert_allclose(loss.get_column("value").to_numpy(), c["loss"], rtol=1e-6)


def test_SL301_identical_relaunches_say_identical_values():
    report = stitched_json(RES / "tb_identical")
    (f,) = findings(report, "resume_overlap")  # identical reruns from the first step: one finding, a count
    assert f["restarts"] == R.IDENTICAL_LAUNCHES - 1
    assert f["identical_values"] and f["severity"] == "info"
    assert (f["resume_step"], f["rolled_back_from"]) == (1, R.IDENTICAL_STEPS)


def test_SL304_lightning_versions_given_separately_are_one_run_with_a_gap():
    report = stitched_json(RES / "lightning" / "version_1", RES / "lightning" / "version_0")
    (run,) = report["runs"]
    assert [s["first_step"] for s in run["segments"]] == [0, R.LIGHTNING_RESUME]
    (gap,) = findings(report, "step_gap")
    assert (gap["start_step"], gap["end_step"]) == (R.LIGHTNING_LAST, R.LIGHTNING_RESUME)
    assert not findings(report, "resume_overlap") and not findings(report, "step_reset")


def test_SL301_csv_whose_steps_go_back():
    report = stitched_json(RES / "csv_steps_back" / "metrics.csv")
    (f,) = findings(report, "resume_overlap")
    assert (f["resume_step"], f["rolled_back_from"]) == (R.CSV_BACK_TO, R.CSV_LAST)


def test_SL303_repeated_data_after_a_resume_that_relogs_the_checkpoint_step():
    report = stitched_json(RES / "csv_repeated" / "metrics.csv")
    (f,) = findings(report, "repeated_data")
    assert f["metric"] == "loss" and f["code"] == "SL303"
    assert f["start_step"] == R.REPEAT_AT
    assert abs(f["end_step"] - 2 * R.REPEAT_AT) <= 5 * R.REPEAT_EVERY
    assert [s["first_step"] for s in report["runs"][0]["segments"]] == [R.REPEAT_EVERY, R.REPEAT_AT]
    # the jump back is the end of the repeat, not a spike that never recovered
    assert not [s for s in findings(report, "spike") if s["metric"] == "loss" and s["recovery"] == "none"]


def test_SL303_repeated_data_without_a_boundary_in_one_hf_file():
    proc = run_cli("analyze", RES / "hf_repeated" / "trainer_state.json", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (f,) = findings(report, "repeated_data")
    assert abs(f["start_step"] - R.HF_REPEAT_AT) <= 3 * R.HF_EVERY
    assert abs(f["end_step"] - 2 * R.HF_REPEAT_AT) <= 5 * R.HF_EVERY
    assert f["evidence"]["resume_boundary"] is False


def test_SL303_silent_on_the_same_run_without_the_repeat():
    report = api.analyze(RES / "csv_clean" / "metrics.csv", jobs=1)
    assert not [f for f in report.findings() if f.kind in ("repeated_data", "resume_overlap", "step_reset")]


def test_wandb_offline_resume_restarting_step_is_a_reset():
    W = importlib.import_module("writers.wandb_offline")
    folder = FIXTURES / "wandb" / "runs" / "wandb"
    assert folder.is_dir(), "W&B offline fixtures missing: python fixtures/make_fixtures.py wandb_offline"
    report = stitched_json(folder)
    (f,) = findings(report, "step_reset")
    assert f["resume_step"] == W.RESUMED_FROM and f["rolled_back_from"] == W.N_BASE - 1


def test_wandb_rewind_branch_point_is_honoured():
    W = importlib.import_module("writers.wandb_offline")
    folder = FIXTURES / "wandb" / "rewind" / "wandb"
    assert folder.is_dir(), "W&B offline fixtures missing: python fixtures/make_fixtures.py wandb_offline"
    report = stitched_json(folder)
    (f,) = findings(report, "resume_overlap")
    assert f["resume_step"] == W.REWIND_AT + 1 and f["rolled_back_from"] == W.N_REWIND_BASE - 1


def test_rich_output_shows_the_launch_timeline(tmp_path):
    proc = run_cli("stitch", RES / "tb_reset", env={"COLUMNS": "160"})
    assert proc.returncode == 0, proc.stderr
    assert "launch(es) on one timeline" in proc.stdout
    assert "reset" in proc.stdout and f"+{R.RESET_TRUE_STEP}" in proc.stdout


def test_bad_output_suffix_missing_path_and_nothing_found_are_one_line_errors(tmp_path):
    bad = run_cli("stitch", RES / "tb_rollback", "-o", tmp_path / "out.txt")
    assert bad.returncode == 2 and "out.txt" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    missing = run_cli("stitch", tmp_path / "nope")
    assert missing.returncode == 2 and "nope" in missing.stderr and "Traceback" not in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = run_cli("stitch", empty)
    assert nothing.returncode == 2 and "no training logs" in nothing.stderr


def test_stitch_writes_nothing_into_input_folders(tmp_path):
    src = tmp_path / "run"
    shutil.copytree(RES / "tb_rollback", src)
    before = tree_hashes(tmp_path)
    proc = run_cli("stitch", "run", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tree_hashes(tmp_path) == before


def test_help_has_an_example():
    proc = run_cli("stitch", "--help")
    assert proc.returncode == 0 and "Example" in proc.stdout and "--output" in proc.stdout
