"""JSON-lines metric logs (detectron2, mmcv, home-grown): steps, values, damage, and what
is not such a log.

Expected values are recomputed from the fixture writer (`fixtures/writers/jsonlines.py`).
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np

from conftest import FIXTURES, load, metric, run_cli, tree_hashes
from spikelens.importers.base import read_head
from spikelens.importers.jsonlines import JsonLinesImporter
from spikelens.importers.registry import IMPORTERS

sys.path.insert(0, str(FIXTURES))
from writers import jsonlines as W  # noqa: E402

JSONL = FIXTURES / "jsonl"


def test_fixtures_are_what_the_writer_writes(tmp_path):
    W.make(tmp_path)
    assert tree_hashes(tmp_path / "jsonl") == tree_hashes(JSONL)


def test_detectron2_metrics_json():
    (run,), warnings = load(JSONL / "detectron2")
    want = W.series(1)
    idx = np.arange(W.D2_EVERY - 1, W.N_STEPS, W.D2_EVERY)
    assert run.formats == ["jsonl"] and warnings == []
    assert run.name == "detectron2"  # a generic file name: the run is its folder
    loss = metric(run, "total_loss")
    assert loss["step"].to_list() == want["step"][idx].tolist()
    np.testing.assert_array_equal(loss["value"].to_numpy(), want["loss"][idx])
    np.testing.assert_array_equal(metric(run, "lr")["value"].to_numpy(), want["lr"][idx])
    assert "iteration" not in set(run.frame["metric"])


def test_mmcv_per_epoch_iterations_become_global_steps():
    (run,), warnings = load(JSONL / "mmcv")
    want = W.series(2, W.MM_EPOCHS * W.MM_ITERS)
    loss = metric(run, "loss")
    steps = [(e - 1) * W.MM_ITERS + i for e in range(1, W.MM_EPOCHS + 1) for i in range(W.MM_EVERY, W.MM_ITERS + 1, W.MM_EVERY)]
    assert loss["step"].to_list() == steps
    np.testing.assert_array_equal(loss["value"].to_numpy(), want["loss"][np.array(steps) - 1])
    assert metric(run, "bbox_mAP")["step"].to_list() == [e * W.MM_ITERS for e in range(1, W.MM_EPOCHS + 1)]
    assert any("'iter' restarts with every epoch" in w for w in warnings)
    assert len(run.segments) == 1  # not read as three restarts


def test_custom_jsonl_keeps_nan_inf_and_wall_time():
    (run,), warnings = load(JSONL / "custom")
    rows = W.custom_rows()
    loss = metric(run, "loss")
    got = loss["value"].to_list()
    assert len(got) == W.N_STEPS and math.isnan(got[W.NAN_STEP]) and got[W.INF_STEP] == math.inf
    assert [r["loss"] for i, r in enumerate(rows) if i not in (W.NAN_STEP, W.INF_STEP)] == \
        [v for i, v in enumerate(got) if i not in (W.NAN_STEP, W.INF_STEP)]
    assert loss["wall_time"].to_list() == [r["timestamp"] for r in rows]
    assert set(run.frame["metric"]) == {"loss", "lr"}  # timestamp is time, phase is text
    assert warnings == []


def test_damaged_lines_are_skipped_with_a_warning_and_the_rest_kept():
    (run,), warnings = load(JSONL / "damaged")
    assert metric(run, "loss").height == W.N_STEPS - 1
    assert any("2 line(s) that are not JSON skipped" in w and "metrics.jsonl" in w for w in warnings)


def test_what_is_not_a_jsonl_log_is_not_claimed(tmp_path):
    (tmp_path / "train.jsonl").write_text('{"text": "a dataset row"}\n{"text": "another"}\n')
    for path in [*(JSONL / "not_logs").iterdir(), tmp_path / "train.jsonl"]:
        assert not JsonLinesImporter().claims(path, read_head(path)), path
    proc = run_cli("analyze", JSONL / "not_logs")
    assert proc.returncode == 2 and "no training logs found" in proc.stderr and "Traceback" not in proc.stderr


def test_a_jsonl_without_a_step_key_is_not_a_metric_log(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"loss": 1.0, "lr": 0.1}\n{"loss": 0.9, "lr": 0.1}\n')
    proc = run_cli("analyze", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.strip().count("\n") == 0
    assert f"{path}: no training logs found" in proc.stderr and "with a step key" in proc.stderr


def test_a_damaged_first_line_does_not_hide_the_log(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0, "lo\n' + "".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, 50)))
    (run,), warnings = load(path)
    assert metric(run, "loss")["step"].to_list() == list(range(1, 50))
    assert any("1 line(s) that are not JSON skipped" in w for w in warnings)


def test_an_empty_jsonl_is_a_warning_not_an_error(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("")
    proc = run_cli("analyze", tmp_path / "metrics.jsonl", "--format", "json", "--allow-empty")
    assert proc.returncode == 0 and json.loads(proc.stdout)["runs"] == []
    assert "metrics.jsonl: empty file, no data" in " ".join(proc.stderr.split())
    # nothing read is no pass: without --allow-empty, exit 2 and one line naming the file
    proc = run_cli("analyze", tmp_path / "metrics.jsonl", "--format", "json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "metrics.jsonl: empty file, no data" in proc.stderr


def test_fast_and_row_by_row_paths_agree(tmp_path):
    """Polars reads clean files; a bare NaN sends the same file row by row: same points."""
    clean, dirty = tmp_path / "clean" / "m.jsonl", tmp_path / "dirty" / "m.jsonl"
    rows = [{"step": s, "loss": 2.0 + 1 / (s + 1), "aux": {"z_loss": 0.01 * s}} for s in range(0, 500, 5)]
    for p, extra in ((clean, ""), (dirty, '{"step": 500, "loss": NaN}\n')):
        p.parent.mkdir()
        p.write_text("".join(json.dumps(r) + "\n" for r in rows) + extra)
    (a,), _ = load(clean.parent)
    (b,), _ = load(dirty.parent)
    cols = ["step", "metric", "value"]
    got_a = a.frame.select(cols).sort("metric", "step")
    got_b = b.frame.select(cols).sort("metric", "step").filter(~((b.frame.sort("metric", "step")["step"] == 500)))
    assert got_a.to_dicts() == got_b.to_dicts()
    assert set(got_a["metric"]) == {"loss", "aux.z_loss"}


def test_registered_after_the_wandb_history_reader():
    names = [imp.name for imp in IMPORTERS]
    assert names.index("wandb_history") < names.index("jsonl") < names.index("csv")
