"""`spikelens export`: a stitched resume written back as a TensorBoard event file (read back
with TensorBoard's own EventAccumulator) and as a W&B offline run (decoded with wandb's own
protobuf, accepted by `wandb sync --dry-run`): one point per step, the live timeline only."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from spikelens import api
from spikelens.errors import UsageError
from spikelens.export.run import export
from spikelens.export.timeline import live_points

from conftest import FIXTURES, main_in_process, run_cli, tree_hashes

ROLLBACK = FIXTURES / "resumes" / "tb_rollback"  # launch 2 re-logs steps the first had reached
RESET = FIXTURES / "resumes" / "tb_reset"  # launch 2's step counter restarted at 0


def accumulate(folder: Path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def stitched_live(path: Path) -> pl.DataFrame:
    _, frame = api.stitch(str(path))
    return live_points(frame)


@pytest.mark.parametrize("fixture", [ROLLBACK, RESET], ids=["rollback", "reset"])
def test_tensorboard_export_is_the_live_timeline_with_no_step_twice(tmp_path, fixture):
    raw = api.load(str(fixture))
    before = tree_hashes(fixture)
    folder, points = export(str(fixture), out=tmp_path / "out", fmt="tensorboard")
    assert tree_hashes(fixture) == before
    acc = accumulate(folder)
    live = stitched_live(fixture)
    assert points == live.height
    for metric in acc.Tags()["scalars"]:
        steps = np.array([e.step for e in acc.Scalars(metric)])
        values = np.array([e.value for e in acc.Scalars(metric)])
        assert (np.diff(steps) > 0).all(), metric  # strictly increasing: no step twice
        want = live.filter(pl.col("metric") == metric)
        assert steps.tolist() == want["step"].to_list()
        assert np.allclose(values, want["value"].to_numpy().astype(np.float32), equal_nan=True)
    assert set(acc.Tags()["scalars"]) == set(live["metric"].unique())
    loss = raw.filter(pl.col("metric") == "train/loss")
    assert loss["step"].is_duplicated().any() or loss["step"].max() < live["step"].max()  # there was a resume
    assert len(loss) > live.filter(pl.col("metric") == "train/loss").height or fixture == RESET


def test_a_restarted_step_counter_is_exported_re_based(tmp_path):
    raw_last = api.load(str(RESET)).get_column("step").max()
    folder, _ = export(str(RESET), out=tmp_path, fmt="tensorboard")
    steps = [e.step for e in accumulate(folder).Scalars("train/loss")]
    assert max(steps) > raw_last and len(steps) == len(set(steps))


def test_the_exported_file_reads_back_as_one_launch(tmp_path):
    folder, _ = export(str(ROLLBACK), out=tmp_path, fmt="tensorboard")
    runs = api.discover(str(folder))
    assert len(runs) == 1 and len(runs[0]["segments"]) == 1


def test_wandb_export_is_an_offline_run_wandb_accepts(tmp_path):
    from wandb.proto import wandb_internal_pb2

    from spikelens.importers.leveldb_log import read_records

    folder, points = export(str(ROLLBACK), out=tmp_path / "out", fmt="wandb")
    (wandb_file,) = folder.glob("run-*.wandb")
    steps = []
    for data in read_records(wandb_file.read_bytes()).payloads:
        rec = wandb_internal_pb2.Record()
        rec.ParseFromString(data)
        if rec.WhichOneof("record_type") == "history":
            steps.append(rec.history.step.num)
    live = stitched_live(ROLLBACK)
    assert steps == sorted(set(live["step"].to_list()))
    assert points == live.height
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    res = subprocess.run([sys.executable, "-m", "wandb", "sync", "--dry-run", str(folder)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0 and "Would sync 1 run" in res.stdout + res.stderr, res.stdout + res.stderr
    back = api.load(str(folder))
    assert back.filter(pl.col("metric") == "train/loss")["step"].to_list() == \
        live.filter(pl.col("metric") == "train/loss")["step"].to_list()
    wall = back.filter(pl.col("metric") == "train/loss")["wall_time"].to_numpy()
    assert np.allclose(wall, live.filter(pl.col("metric") == "train/loss")["wall_time"].to_numpy())


def test_never_writes_into_the_logs_or_over_an_earlier_export(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(ROLLBACK, logs)
    with pytest.raises(UsageError, match="inside the logs"):
        export(str(logs), out=logs / "fixed", fmt="tensorboard")
    first, _ = export(str(logs), out=tmp_path / "out", fmt="tensorboard")
    (old,) = first.glob("events.out.tfevents.*")
    with pytest.raises(UsageError, match="already exists; --force replaces it"):
        export(str(logs), out=tmp_path / "out", fmt="tensorboard")
    assert [p.name for p in first.iterdir()] == [old.name]  # the earlier export untouched
    again, _ = export(str(logs), out=tmp_path / "out", fmt="tensorboard", name="logs", force=True)
    assert again == first and not old.exists()  # replaced whole: the new event file alone
    (new,) = again.glob("events.out.tfevents.*")
    assert accumulate(again).Scalars("train/loss")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["logs"]  # nothing left aside


def test_cli_export_and_its_one_line_errors(tmp_path, capsys):
    res = run_cli("export", ROLLBACK, "-o", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert list((tmp_path / "out" / "tb_rollback").glob("events.out.tfevents.*"))
    # the errors from the same entry point in this process (a process start each is CI time)
    code, _, err = main_in_process(capsys, "export", ROLLBACK, "-o", ROLLBACK / "fixed")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert not (ROLLBACK / "fixed").exists()
    code, _, err = main_in_process(capsys, "export", tmp_path / "missing", "-o", tmp_path / "o2")
    assert code == 2 and len(err.strip().splitlines()) == 1
