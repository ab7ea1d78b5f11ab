"""Readers for the trackers of 2026: DVCLive, Ray Tune, Trackio, SwanLab (fixtures written by
the libraries themselves, `fixtures/writers/trackers.py`), neptune-exporter Parquet,
LLaMA-Factory and TensorBoard files named without pid or suffix (`fixtures/writers/layouts.py`).

Each reader: the values it returns are the curve the writer logged, the planted events
are found end to end, and damaged input gives a warning or a one-line error.
"""
from __future__ import annotations

import math
import shutil
import sqlite3
import sys

import numpy as np
import polars as pl
import pytest

from conftest import FIXTURES, load, ls_without_writing, metric, run_cli, written_hashes
from spikelens import api
from spikelens.errors import SpikelensError

sys.path.insert(0, str(FIXTURES))
from writers import layouts as L  # noqa: E402
from writers import trackers as T  # noqa: E402

TRACKERS = FIXTURES / "trackers"
LAYOUTS = FIXTURES / "layouts"


def kinds_by_run(path):
    report = api.analyze(path, jobs=1)
    return {r.run: {f.kind for f in r.findings if f.severity in ("warning", "error")} for r in report.runs}


def assert_logged(run, name, expected):
    got = metric(run, name).sort("step", maintain_order=True)
    np.testing.assert_array_equal(got["step"].to_numpy(), T.spiky()["step"][: got.height])
    np.testing.assert_allclose(got["value"].to_numpy(), expected[: got.height], rtol=1e-12, equal_nan=True)
    assert got.height == expected.size


# ------------------------------------------------------------------ DVCLive


def test_dvclive_folder_is_one_run_with_metric_keys_from_paths():
    (run,), warnings = load(TRACKERS / "dvclive_run")
    assert run.formats == ["dvclive"]
    assert {"train/loss", "train/grad_norm", "lr"} <= set(run.frame["metric"])
    assert_logged(run, "train/loss", T.spiky()["loss"])
    assert run.frame["wall_time"].null_count() == run.frame.height  # DVCLive 3 writes no time stamps
    assert run.meta.get("param.model") == "gpt-small"
    assert warnings == []


def test_dvclive_timestamp_column_is_milliseconds(tmp_path):
    """DVCLive 2 wrote `timestamp<TAB>step<TAB>value`, the time in milliseconds."""
    metrics = tmp_path / "dvclive" / "plots" / "metrics"
    metrics.mkdir(parents=True)
    (metrics / "loss.tsv").write_text("timestamp\tstep\tloss\n1700000000000\t0\t2.5\n1700000001500\t1\t2.4\n")
    (run,), _ = load(tmp_path / "dvclive")
    assert metric(run, "loss")["wall_time"].to_list() == [1.7e9, 1.7e9 + 1.5]
    assert set(run.frame["metric"]) == {"loss"}


def test_dvclive_spike_is_found_end_to_end():
    (run_findings,) = kinds_by_run(TRACKERS / "dvclive_run").values()
    assert "spike" in run_findings


def test_dvclive_damaged_metric_file_is_skipped_with_a_warning(tmp_path):
    run_dir = shutil.copytree(TRACKERS / "dvclive_run", tmp_path / "run")
    (run_dir / "dvclive" / "plots" / "metrics" / "broken.tsv").write_text("garbage only\n")
    (run, ), warnings = load(run_dir)
    assert any("broken.tsv" in w and "DVCLive" in w for w in warnings)
    assert "train/loss" in set(run.frame["metric"])


# ------------------------------------------------------------------ Ray Tune


def test_ray_tune_trials_are_runs_with_bookkeeping_left_out():
    runs, warnings = load(TRACKERS / "raytune")
    assert len(runs) == 2 and all(r.formats == ["ray_tune"] for r in runs)
    spiky = next(r for r in runs if "spiky" in r.name)
    assert set(spiky.frame["metric"]) == {"loss", "lr"}
    loss = metric(spiky, "loss")
    assert loss["step"].to_list() == list(range(1, T.N_STEPS + 1))  # training_iteration counts from 1
    np.testing.assert_allclose(loss["value"].to_numpy(), T.spiky()["loss"], rtol=1e-12)


def test_ray_tune_nan_and_spike_are_found():
    by_run = kinds_by_run(TRACKERS / "raytune")
    spiky = next(v for k, v in by_run.items() if "spiky" in k)
    nan = next(v for k, v in by_run.items() if "nan" in k and "spiky" not in k)
    assert "spike" in spiky and "nan" in nan


def _restored_trial(tmp_path):
    """The spiky trial restored from its checkpoint at iteration 100 after running to 180:
    the same progress.csv goes on with iterations_since_restore starting at 1 again."""
    src = next((TRACKERS / "raytune" / "demo").glob("*spiky*"))
    trial = shutil.copytree(src, tmp_path / src.name)
    frame = pl.read_csv(trial / "progress.csv", infer_schema_length=0)
    first = frame.head(180)
    again = frame.slice(100, 200).with_columns(
        iterations_since_restore=(pl.int_range(pl.len()) + 1).cast(pl.String))
    pl.concat([first, again]).write_csv(trial / "progress.csv")
    return trial


def test_ray_tune_restore_is_a_second_launch_and_a_rollback(tmp_path):
    trial = _restored_trial(tmp_path)
    (run,), _ = load(trial)
    assert run.frame["segment"].n_unique() == 2
    report = api.analyze(trial, jobs=1)
    overlap = [f for f in report.runs[0].findings if f.kind == "resume_overlap"]
    assert overlap and overlap[0].start_step == 101


def test_ray_tune_progress_without_iteration_is_a_one_line_error(tmp_path):
    trial = tmp_path / "trial"
    trial.mkdir()
    (trial / "params.json").write_text("{}")
    (trial / "progress.csv").write_text("loss,lr\n1.0,0.1\n0.9,0.1\n")
    res = run_cli("analyze", str(trial))
    assert res.returncode == 2
    assert "training_iteration" in res.stderr and "Traceback" not in res.stderr


# ------------------------------------------------------------------ Trackio


def test_trackio_project_gives_one_run_per_run_named_as_trackio_shows():
    runs, warnings = load(TRACKERS / "trackio")
    assert sorted(r.name for r in runs) == ["nan-run", "spiky"]
    spiky = next(r for r in runs if r.name == "spiky")
    assert_logged(spiky, "train/loss", T.spiky()["loss"])
    nan_run = next(r for r in runs if r.name == "nan-run")
    loss = metric(nan_run, "train/loss")
    assert loss.filter(pl.col("step") >= T.NAN_AT)["value"].is_nan().all()  # "NaN" strings restored
    assert warnings == []


def test_trackio_nan_is_found_and_the_database_is_not_touched(tmp_path):
    runs = ls_without_writing(TRACKERS / "trackio", tmp_path)
    assert {r["run"] for r in runs} == {"nan-run", "spiky"}
    by_run = kinds_by_run(TRACKERS / "trackio")
    assert "nan" in by_run["nan-run"] and "spike" in by_run["spiky"]


def test_trackio_database_being_written_is_read_whole_and_left_alone(tmp_path):
    """A live Trackio database is in WAL mode: rows committed since the last checkpoint sit
    only in its -wal file. They are read, and no -shm or journal appears beside it."""
    db = tmp_path / "live.db"
    shutil.copyfile(TRACKERS / "trackio" / "spikelens-demo.db", db)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) "
                   "SELECT run_id, timestamp, run_name, step + 1000, metrics FROM metrics WHERE run_name = 'spiky'")
    writer.commit()
    try:
        listing = sorted(p.name for p in tmp_path.iterdir())
        assert "live.db-wal" in listing
        runs, _ = load(db)
        spiky = next(r for r in runs if r.name == "spiky")
        assert metric(spiky, "train/loss")["step"].max() == 1000 + T.N_STEPS - 1
        assert sorted(p.name for p in tmp_path.iterdir()) == listing
    finally:
        writer.close()


def test_trackio_damaged_database_is_one_line_error(tmp_path):
    db = tmp_path / "proj.db"
    data = (TRACKERS / "trackio" / "spikelens-demo.db").read_bytes()
    db.write_bytes(data[:100] + b"\x00" * 4096)  # the header survives, the pages do not
    res = run_cli("analyze", str(db))
    assert res.returncode == 2 and "Traceback" not in res.stderr


# ------------------------------------------------------------------ SwanLab


def test_swanlab_runs_are_named_and_read_from_the_record_file():
    runs, warnings = load(TRACKERS / "swanlab")
    assert sorted(r.name for r in runs) == ["nan-run", "spiky"]
    spiky = next(r for r in runs if r.name == "spiky")
    assert_logged(spiky, "train/loss", T.spiky()["loss"])
    nan_run = next(r for r in runs if r.name == "nan-run")
    assert metric(nan_run, "train/loss").filter(pl.col("step") >= T.NAN_AT)["value"].is_nan().all()
    assert warnings == []


def test_swanlab_cut_file_keeps_what_was_written(tmp_path):
    src = next((TRACKERS / "swanlab" / "swanlog").glob("run-*/run-*.swanlab"))
    folder = tmp_path / "swanlog" / src.parent.name
    folder.mkdir(parents=True)
    data = src.read_bytes()
    (folder / src.name).write_bytes(data[: len(data) * 2 // 3])
    (run,), warnings = load(tmp_path)
    assert 0 < metric(run, "train/loss").height < T.N_STEPS
    assert any("damaged SwanLab log" in w for w in warnings)


def test_swanlab_kinds_found():
    by_run = kinds_by_run(TRACKERS / "swanlab")
    assert "nan" in by_run["nan-run"] and "spike" in by_run["spiky"]


# ------------------------------------------------------------------ neptune-exporter Parquet


def test_layout_fixtures_are_what_the_writer_writes(tmp_path):
    L.make(tmp_path)
    assert written_hashes(tmp_path / "layouts") == written_hashes(LAYOUTS)


def test_neptune_parts_are_one_run_named_from_sys_name_and_tmp_parts_are_ignored():
    runs, warnings = load(LAYOUTS / "neptune")
    assert [r.name for r in runs] == [L.NEPTUNE_NAME]
    (run,) = runs
    assert set(run.frame["metric"]) == {"train/loss", "train/lr", "train/grad_norm"}
    loss = metric(run, "train/loss")
    assert loss["step"].to_list() == list(range(L.N_STEPS))
    s = L.series(seed=21)
    np.testing.assert_allclose(loss.filter(pl.col("step") < L.NEPTUNE_NAN_AT)["value"].to_numpy(),
                               s["loss"][: L.NEPTUNE_NAN_AT])
    assert loss.filter(pl.col("step") >= L.NEPTUNE_NAN_AT)["value"].is_nan().all()
    assert run.meta["neptune.run_id"] == L.NEPTUNE_RUN
    assert warnings == []


def test_neptune_fractional_steps_are_scaled_with_a_warning(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from decimal import Decimal

    rows = [r for r in L.neptune_rows() if r["attribute_type"] == "float_series"][:50]
    rows = [{**r, "step": Decimal(r["step"]) / 2} for r in rows]
    pq.write_table(pa.Table.from_pylist(rows, schema=L.neptune_schema()), tmp_path / "R-1_part_0.parquet")
    (run,), warnings = load(tmp_path)
    assert any("fractional" in w and "x 10" in w for w in warnings)
    assert metric(run, "train/loss")["step"].to_list()[:3] == [0, 5, 10]


def test_neptune_damaged_part_is_a_one_line_error(tmp_path):
    src = LAYOUTS / "neptune" / "exports" / "team_llm-pretrain" / "LLM-42_part_0.parquet"
    bad = tmp_path / "X_part_0.parquet"
    bad.write_bytes(src.read_bytes()[:200])
    res = run_cli("analyze", str(bad))
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_neptune_spike_and_nan_found():
    (kinds,) = kinds_by_run(LAYOUTS / "neptune").values()
    assert {"spike", "nan"} <= kinds


# ------------------------------------------------------------------ LLaMA-Factory


def test_llamafactory_log_keeps_the_plan_and_the_launch_clock():
    (run,), warnings = load(LAYOUTS / "llamafactory")
    assert run.formats == ["llamafactory"]
    assert {"loss", "lr", "eval_loss"} <= set(run.frame["metric"])
    assert not {"total_steps", "percentage"} & set(run.frame["metric"])
    assert run.meta["plan_steps"] == L.TOTAL_STEPS
    loss = metric(run, "loss")
    assert loss["step"].to_list() == list(range(L.LOG_EVERY, L.N_STEPS, L.LOG_EVERY))
    assert loss["wall_time"].to_list()[:2] == [math.floor(3.1 * 5), math.floor(3.1 * 10)]
    assert warnings == []


def test_llamafactory_elapsed_time_spellings():
    from spikelens.importers.llamafactory import elapsed_seconds

    assert elapsed_seconds("0:02:13") == 133.0
    assert elapsed_seconds("1 day, 0:08:23") == 86400 + 503
    assert elapsed_seconds("2 days, 10:00:00") == 2 * 86400 + 36000
    assert elapsed_seconds("soon") is None and elapsed_seconds(None) is None


def test_llamafactory_spike_found():
    (kinds,) = kinds_by_run(LAYOUTS / "llamafactory").values()
    assert "spike" in kinds


# ------------------------------------------------------------------ TensorBoard file names


def test_event_file_named_without_suffix_or_pid_is_read():
    runs, warnings = load(LAYOUTS / "tb_names")
    by_name = {r.name.split("/")[-1]: r for r in runs}
    assert set(by_name) == {"catboost", "tf1"}
    assert metric(by_name["catboost"], "loss").height == L.N_STEPS // 2
    tf1 = by_name["tf1"]
    assert tf1.frame["segment"].n_unique() == 2  # two launches, ordered by the time in their names
    first = tf1.frame.filter(pl.col("segment") == 0)
    assert first["step"].max() == L.RESTART_AT + 19
    assert warnings == []


def test_ls_lists_every_new_format(tmp_path):
    res = run_cli("ls", str(TRACKERS), str(LAYOUTS), "--format", "json")
    assert res.returncode == 0, res.stderr
    import json

    formats = {f for r in json.loads(res.stdout)["runs"] for f in r["formats"]}
    assert {"dvclive", "ray_tune", "trackio", "swanlab", "neptune", "llamafactory", "tensorboard"} <= formats


def test_unreadable_sqlite_that_is_not_trackio_is_not_claimed(tmp_path):
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
    with pytest.raises(SpikelensError):
        api.load_runs(db)
