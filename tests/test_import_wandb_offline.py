"""W&B offline importer: LevelDB-log framing, history records, launches of one run id,
rewind branch points, damage recovery.

Expected values are recomputed from the fixture writer (`fixtures/writers/wandb_offline.py`),
never copied from the importer's output.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, ROOT, run_cli, tree_hashes
from spikelens import api, diagnostics
from spikelens.errors import FormatError
from spikelens.importers import leveldb_log
from spikelens.importers.wandb_offline import (WandbOfflineFileImporter, WandbOfflineRunImporter, read_wandb_file,
                                               record_class)

sys.path.insert(0, str(FIXTURES))
from writers import wandb_offline as W  # noqa: E402

WB = FIXTURES / "wandb"


def folder(key: str) -> Path:
    return WB / W.FOLDERS[key]


def wandb_file(key: str) -> Path:
    (f,) = folder(key).glob("run-*.wandb")
    return f


def load(*paths: Path):
    with diagnostics.collecting() as diag:
        runs = api.load_runs(*paths)
    return runs, diag.lines


def metric(run, name: str, segment: int | None = None) -> pl.DataFrame:
    f = run.frame.filter(pl.col("metric") == name)
    return f if segment is None else f.filter(pl.col("segment") == segment)


def same_floats(got, want) -> bool:
    got, want = list(got), list(want)
    return len(got) == len(want) and all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want))


# ------------------------------------------------------------------ claiming


def test_run_folders_and_named_files_are_claimed():
    assert WandbOfflineRunImporter().claims(folder("base"), b"")
    assert not WandbOfflineRunImporter().claims(folder("base").parent, b"")
    f = wandb_file("base")
    assert WandbOfflineFileImporter().claims(f, f.read_bytes()[:4096])
    other = FIXTURES / "tensorboard" / "twin" / "csv" / "metrics.csv"
    assert not WandbOfflineFileImporter().claims(other, other.read_bytes()[:4096])


def test_the_run_folder_is_read_once_and_its_text_files_are_not_logs(tmp_path):
    run_dir = tmp_path / "wandb" / folder("base").name
    shutil.copytree(folder("base"), run_dir)
    (run_dir / "files").mkdir(exist_ok=True)
    (run_dir / "files" / "output.log").write_text("step    1/300 | loss 3.000000 (+0.00z)| norm 1.0000 (+0.00z)| "
                                                  "lr 3.00e-04 | 100.00 ms | 40.0% bf16 MFU | 100000 tok/s\n" * 3)
    (run,), _ = load(tmp_path)
    assert run.formats == ["wandb_offline"] and run.sources == [str(run_dir / f"run-{W.RUN_ID}.wandb")]


# ------------------------------------------------------------------ history values


def test_history_values_steps_and_wall_times():
    runs, warnings = load(WB / "runs")
    assert warnings == []
    (run,) = runs
    assert run.name == W.DISPLAY_NAME and run.meta["wandb.run_id"] == W.RUN_ID
    s = W.base_series()
    assert set(run.frame["metric"]) == {"train/loss", "train/lr", "train/grad_norm", "opt.scale", "eval/loss"}
    loss = metric(run, "train/loss", 0)
    assert loss["step"].to_list() == list(range(W.N_BASE))
    assert same_floats(loss["value"].to_list(), s["loss"].tolist())  # NaN and +inf as logged
    assert metric(run, "opt.scale", 0).filter(pl.col("step") == W.NEG_INF_STEP)["value"].to_list() == [-math.inf]
    assert metric(run, "eval/loss")["step"].to_list() == list(range(W.EVAL_EVERY - 1, W.N_BASE, W.EVAL_EVERY))
    wall = loss["wall_time"].to_numpy()
    assert np.isfinite(wall).all() and (np.diff(wall) >= 0).all() and wall[0] > 1.6e9


def test_a_resume_with_the_same_id_is_a_second_launch_with_its_steps_as_logged():
    (run,), _ = load(WB / "runs")
    r = W.resumed_series()
    seg = [(s["segment"], s["first_step"], s["last_step"]) for s in run.segments]
    assert seg == [(0, 0, W.N_BASE - 1), (1, 0, W.N_RESUMED - 1)]  # offline _step restarts at 0
    assert metric(run, "train/loss", 1)["value"].to_list() == r["loss"].tolist()
    launches = run.meta["wandb.launches"]
    assert [x["folder"] for x in launches] == [folder("base").name, folder("resumed").name]
    assert [x["resume"] for x in launches] == [False, True]
    assert launches[1]["step_restarted"] and run.meta["wandb.step_restarts"] == 1
    assert run.meta["segment_meta"][1]["resume"] is True


def test_a_rewind_keeps_its_branch_point_for_the_stitcher():
    (run,), _ = load(WB / "rewind")
    assert [(s["first_step"], s["last_step"]) for s in run.segments] == [
        (0, W.N_REWIND_BASE - 1), (W.REWIND_AT + 1, W.REWIND_AT + W.N_REWOUND)]
    bp = run.meta["segment_meta"][1]["branch_point"]
    assert bp == {"run": W.REWIND_ID, "step": W.REWIND_AT, "metric": "_step", "kind": "rewind"}
    assert run.meta["wandb.step_restarts"] == 0
    assert "sample_text" not in set(run.frame["metric"])  # a string is not a metric


def test_a_record_spanning_blocks_is_reassembled():
    buf = wandb_file("rewind_base").read_bytes()
    log = leveldb_log.read_records(buf)
    assert not log.damage.any
    assert max(len(p) for p in log.payloads) > 2 * leveldb_log.BLOCK  # FIRST, MIDDLE, LAST
    assert read_wandb_file(wandb_file("rewind_base")).rows == W.N_REWIND_BASE


# ------------------------------------------------------------------ damage


def test_a_truncated_file_keeps_every_complete_row_and_warns():
    (run,), warnings = load(folder("truncated"))
    s = W.simple_series(W.N_DAMAGED, 15)
    loss = metric(run, "train/loss")
    n = loss.height
    assert W.N_DAMAGED - 3 <= n < W.N_DAMAGED
    assert loss["step"].to_list() == list(range(n)) and loss["value"].to_list() == s["loss"][:n].tolist()
    (w,) = warnings
    assert "truncated at the end" in w and str(wandb_file("truncated")) in w


def test_a_bad_chunk_skips_to_the_next_block_and_keeps_the_rest():
    (run,), warnings = load(folder("bad_chunk"))
    s = W.simple_series(W.N_DAMAGED, 15)
    loss = metric(run, "train/loss")
    steps = loss["step"].to_list()
    assert 0 < len(steps) < W.N_DAMAGED and steps[-1] == W.N_DAMAGED - 1
    assert loss["value"].to_list() == s["loss"][steps].tolist()
    (w,) = warnings
    assert "1 bad chunk(s)" in w and str(wandb_file("bad_chunk")) in w


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), max_size=3),
       st.integers(min_value=0, max_value=20_000))
def test_any_damage_keeps_only_true_rows(flips, cut):
    data = bytearray(wandb_file("truncated").read_bytes())
    for pos, mask in flips:
        data[len(leveldb_log.HEADER) + pos % (len(data) - len(leveldb_log.HEADER))] ^= mask
    buf = bytes(data[: len(data) - cut])
    log = leveldb_log.read_records(buf)
    Record = record_class()
    s = W.simple_series(W.N_DAMAGED, 15)
    for payload in log.payloads:
        rec = Record()
        rec.ParseFromString(payload)
        if rec.WhichOneof("record_type") == "history":
            items = {".".join(i.nested_key) or i.key: i.value_json for i in rec.history.item}
            assert float(items["train/loss"]) == s["loss"][int(items["_step"])]


def test_a_file_without_the_header_is_a_format_error(tmp_path):
    bad = wandb_file("not_wandb")
    with pytest.raises(FormatError, match="not a W&B .wandb file"):
        WandbOfflineFileImporter().read(bad)
    res = run_cli("ls", bad)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "not a W&B .wandb file" in res.stderr
    runs, warnings = load(WB / "damaged")  # found by walking: skipped with a warning
    assert any("not_wandb" in w and "skipped" in w for w in warnings)
    assert {r.name for r in runs} == {W.DAMAGED_ID}


# ------------------------------------------------------------------ CLI, imports, regeneration


def test_cli_lists_the_runs_without_writing_into_them(tmp_path):
    tree = tmp_path / "wandb"
    shutil.copytree(WB / "runs" / "wandb", tree)
    before = tree_hashes(tree)
    res = run_cli("ls", tree, "--format", "json")
    assert res.returncode == 0, res.stderr
    (r,) = json.loads(res.stdout)["runs"]
    assert r["run"] == W.DISPLAY_NAME and len(r["segments"]) == 2 and r["metrics"]["train/loss"] == "loss"
    assert tree_hashes(tree) == before


def test_reading_does_not_import_the_sdk_and_a_later_import_still_works():
    code = ("import sys; from spikelens.importers.wandb_offline import read_wandb_file; "
            f"wf = read_wandb_file(__import__('pathlib').Path({str(wandb_file('base'))!r})); "
            "assert 'wandb' not in sys.modules, 'sdk imported'; "
            "import wandb; from wandb.proto import wandb_internal_pb2 as pb; "
            "r = pb.Record(); r.history.item.add(key='a', value_json='1'); "
            "print(wf.rows, wandb.__version__, len(r.SerializeToString()))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[0] == str(W.N_BASE)


@pytest.mark.slow
def test_the_writer_reproduces_the_committed_values(tmp_path):
    W.make(tmp_path)
    for key in ("base", "resumed", "rewind_base", "rewound"):
        got = read_wandb_file(next((tmp_path / "wandb" / W.FOLDERS[key]).glob("run-*.wandb"))).frame
        want = read_wandb_file(wandb_file(key)).frame
        cols = ["step", "metric", "value"]  # the client orders the items of a row freely
        assert got.select(cols).sort(cols).equals(want.select(cols).sort(cols), null_equal=True), key


def test_dict_values_of_older_clients_give_their_numeric_leaves():
    from spikelens.importers.wandb_offline import _flatten

    keys, texts = [], []
    _flatten("opt", '{"scale": 1024, "state": {"lr": NaN, "name": "adam"}, "hist": {"_type": "histogram"}}',
             keys, texts)
    assert dict(zip(keys, texts)) == {"opt.scale": "1024.0", "opt.state.lr": "nan"}
