"""MLflow file-store importer: run folders, metric keys from paths, 3/5-field lines, resumes.

Expected values come from the fixture writer (`fixtures/writers/mlflow.py`).
"""
from __future__ import annotations

import math
import sys

import numpy as np
import polars as pl

from conftest import FIXTURES, load, ls_without_writing, metric, tree_hashes
from spikelens.importers.mlflow import MlflowRunImporter

sys.path.insert(0, str(FIXTURES))
from writers import mlflow as W  # noqa: E402

MLRUNS = FIXTURES / "mlflow" / "mlruns"
EXP = MLRUNS / W.EXP_ID


def test_fixtures_are_what_the_writer_writes(tmp_path):
    W.make(tmp_path)
    assert tree_hashes(tmp_path / "mlflow") == tree_hashes(FIXTURES / "mlflow")


def test_only_run_folders_are_claimed():
    imp = MlflowRunImporter()
    assert imp.claims(EXP / W.RUN_CLEAN, b"")
    assert not imp.claims(EXP, b"")  # the experiment folder has meta.yaml but no metrics/
    assert not imp.claims(MLRUNS / "0", b"")


def test_whole_store_gives_one_run_per_run_folder_named_from_meta_yaml():
    runs, _ = load(MLRUNS)
    assert sorted(r.name for r in runs) == ["clean-run", "damaged-run", "resumed-run"]
    assert all(r.formats == ["mlflow"] for r in runs)


def test_metric_keys_are_relative_paths_and_values_match():
    (run,), warnings = load(EXP / W.RUN_CLEAN)
    s = W.clean_series()
    assert set(run.frame["metric"]) == {"train/loss", "train/lr", "grad_norm", "eval acc"}
    loss = metric(run, "train/loss")
    assert loss["step"].to_list() == s["step"].tolist()
    np.testing.assert_array_equal(loss["value"].to_numpy(), s["loss"])
    np.testing.assert_allclose(loss["wall_time"].to_numpy(), (W.T0_MS + 100 * np.arange(W.N_STEPS)) / 1000)
    assert metric(run, "eval acc")["step"].to_list() == list(range(0, W.N_STEPS, 10))
    assert run.meta["param.lr"] == "0.0003" and run.meta["mlflow.experiment"] == "spikelens-demo"
    assert warnings == []


def test_rows_are_in_logging_order_across_metric_files():
    (run,), _ = load(EXP / W.RUN_CLEAN)
    assert run.frame["wall_time"].is_sorted()
    assert run.frame.head(3)["metric"].to_list()[:2] in (["train/loss", "train/lr"], ["train/lr", "train/loss"])


def test_resume_restarting_the_step_is_a_second_segment_with_special_values_kept():
    (run,), _ = load(EXP / W.RUN_RESUMED)
    first, second = W.resumed_series()
    assert [(s["first_step"], s["last_step"]) for s in run.segments] == [(0, W.RESUME_FROM - 1), (0, W.N_STEPS - 1)]
    seg0 = run.frame.filter(pl.col("segment") == 0, pl.col("metric") == "train/loss")
    at = dict(zip(seg0["step"].to_list(), seg0["value"].to_list()))
    assert math.isnan(at[W.NAN_STEP]) and at[W.INF_STEP] == math.inf and at[W.NEG_INF_STEP] == -math.inf
    dup = seg0.filter(pl.col("step") == W.DUP_STEP)["value"].to_list()
    assert dup == [first["loss"][W.DUP_STEP], first["loss"][W.DUP_STEP] * 0.5]  # both kept, in order
    seg1 = run.frame.filter(pl.col("segment") == 1, pl.col("metric") == "train/loss")
    np.testing.assert_array_equal(seg1["value"].to_numpy(), second["loss"])


def test_five_field_lines_take_the_step_from_the_third_field():
    (run,), _ = load(EXP / W.RUN_RESUMED)
    ev = metric(run, "eval/loss")
    assert ev.filter(pl.col("segment") == 0)["step"].to_list() == list(range(0, W.RESUME_FROM, 20))
    assert ev.filter(pl.col("segment") == 1)["step"].to_list() == list(range(0, W.N_STEPS, 20))


def test_damaged_lines_are_skipped_with_one_warning_and_the_rest_kept():
    (run,), warnings = load(EXP / W.RUN_DAMAGED)
    assert metric(run, "train/loss")["step"].to_list() == list(range(10))
    assert len(run.segments) == 1
    (w,) = [w for w in warnings if "skipped" in w]
    assert "2 metric line(s)" in w and "metrics/train/loss line 11" in w


def test_old_stepless_files_use_line_order_with_a_warning(tmp_path):
    exp = W.experiment(tmp_path, "7", "old")
    run = W.run_folder(exp, "a" * 32, "old-run", W.T0_MS, {})
    (run / "metrics" / "loss").write_text("".join(f"{W.T0_MS + i} {1.0 / (i + 1)}\n" for i in range(5)))
    (got,), warnings = load(run)
    assert metric(got, "loss")["step"].to_list() == [0, 1, 2, 3, 4]
    assert any("no steps" in w for w in warnings)


def test_run_without_metric_values_warns_and_gives_no_run(tmp_path):
    exp = W.experiment(tmp_path, "7", "empty")
    run = W.run_folder(exp, "b" * 32, "empty-run", W.T0_MS, {})
    runs, warnings = load(run)
    assert runs == [] and any("without metric values" in w for w in warnings)


def test_cli_reads_the_store_without_writing_into_it(tmp_path):
    runs = {r["run"]: r for r in ls_without_writing(MLRUNS, tmp_path)}
    assert len(runs["resumed-run"]["segments"]) == 2
    assert runs["clean-run"]["metrics"]["train/loss"] == "loss"
