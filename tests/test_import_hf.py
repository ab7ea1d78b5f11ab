"""HF trainer_state.json importer: entry kinds, bare NaN, checkpoint copies, damaged files.

Expected values come from the fixture writer (`fixtures/writers/hf.py`).
"""
from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

from conftest import FIXTURES, load, ls_without_writing, metric, run_cli, tree_hashes
from spikelens.importers.base import read_head
from spikelens.importers.hf import HfTrainerStateImporter

sys.path.insert(0, str(FIXTURES))
from writers import hf as W  # noqa: E402

HF = FIXTURES / "hf"


def per_step_points(entries) -> int:
    """Numeric keys of train/eval entries, epoch once per step (what the importer must keep)."""
    n, epochs = 0, set()
    for e in entries:
        if "train_runtime" in e:
            continue
        for k, v in e.items():
            if k == "step" or not isinstance(v, (int, float)):
                continue
            if k == "epoch":
                if (e["step"], v) in epochs:
                    continue
                epochs.add((e["step"], v))
            n += 1
    return n


def test_fixtures_are_what_the_writer_writes(tmp_path):
    W.make(tmp_path)
    assert tree_hashes(tmp_path / "hf") == tree_hashes(HF)


def test_bare_nan_is_written_like_save_to_json():
    text = (HF / "run_clean" / "trainer_state.json").read_text()
    assert '"grad_norm": NaN' in text and text.endswith("}\n")


def test_train_and_eval_entries_become_metrics_as_logged():
    (run,), warnings = load(HF / "run_clean")
    hist = W.log_history(seed=0, upto=W.FINAL_STEP, nan_step=W.NAN_STEP)
    train = [e for e in hist if "loss" in e]
    assert run.formats == ["hf_trainer_state"] and len(run.segments) == 1
    assert metric(run, "loss")["step"].to_list() == [e["step"] for e in train]
    assert metric(run, "loss")["value"].to_list() == [e["loss"] for e in train]
    gn = metric(run, "grad_norm")
    nan_at = gn.filter(pl.col("value").is_nan())["step"].to_list()
    assert nan_at == [W.NAN_STEP]
    evals = [e for e in hist if "eval_loss" in e]
    assert metric(run, "eval_loss")["step"].to_list() == [e["step"] for e in evals]
    assert metric(run, "epoch").height == len(train)  # eval entries repeat the epoch: kept once
    assert run.frame.height == per_step_points(hist)
    assert warnings == []


def test_final_summary_goes_to_meta_not_to_the_curve():
    (run,), _ = load(HF / "run_clean")
    hist = W.log_history(seed=0, upto=W.FINAL_STEP, nan_step=W.NAN_STEP)
    want = W.summary(hist, W.FINAL_STEP)
    assert not {"train_loss", "train_runtime", "total_flos"} & set(run.frame["metric"])
    assert run.meta["hf.train_loss"] == pytest.approx(want["train_loss"])
    assert run.meta["hf.global_step"] == W.FINAL_STEP


def test_checkpoint_copies_that_are_prefixes_add_no_segment():
    (run,), warnings = load(HF / "run_checkpoints")
    hist = W.log_history(seed=1, upto=W.FINAL_STEP)
    assert len(run.segments) == 1
    assert run.segments[0]["source"].endswith("run_checkpoints/trainer_state.json")
    assert run.frame.height == per_step_points(hist)
    assert not any("checkpoint" in w for w in warnings)


def test_resume_from_an_earlier_checkpoint_keeps_abandoned_steps_as_an_earlier_segment():
    (run,), warnings = load(HF / "run_resumed")
    first, second = W.resumed_histories()
    assert run.name == "run_resumed"
    assert len(run.segments) == 2
    old, new = run.segments
    assert Path(old["source"]).parent.name == f"checkpoint-{W.ABANDONED_AT}"
    assert (old["first_step"], old["last_step"]) == (W.LOGGING_STEPS, W.ABANDONED_AT)
    assert Path(new["source"]).name == "trainer_state.json" and Path(new["source"]).parent.name == "run_resumed"
    assert new["first_step"] == W.RESUME_FROM + W.LOGGING_STEPS
    # the rollback is visible: the later segment starts below where the earlier one ended
    assert new["first_step"] <= old["last_step"]
    seg1 = run.frame.filter(pl.col("segment") == 1, pl.col("metric") == "loss")
    assert seg1["value"].to_list() == [e["loss"] for e in second if "loss" in e and e["step"] > W.RESUME_FROM]
    assert run.frame.height == per_step_points(first) + per_step_points([e for e in second if e["step"] > W.RESUME_FROM])
    assert any("checkpoint copy" in w for w in warnings)


def test_without_a_final_file_the_highest_checkpoint_is_the_reference(tmp_path):
    out = tmp_path / "run"
    for ck in (100, 200, 300):
        shutil.copytree(HF / "run_resumed" / f"checkpoint-{ck}", out / f"checkpoint-{ck}")
    (run,), _ = load(out)
    assert [Path(s["source"]).parent.name for s in run.segments] == ["checkpoint-200", "checkpoint-300"]


def test_identical_copies_never_make_segments(tmp_path):
    out = tmp_path / "run"
    shutil.copytree(HF / "run_clean", out)
    (out / "checkpoint-400").mkdir()
    shutil.copy(out / "trainer_state.json", out / "checkpoint-400" / "trainer_state.json")
    (run,), _ = load(out)
    assert len(run.segments) == 1


def test_a_checkpoint_file_named_directly_is_read_on_its_own():
    path = HF / "run_resumed" / "checkpoint-200" / "trainer_state.json"
    (run,), _ = load(path)
    first, _ = W.resumed_histories()
    assert run.frame.height == per_step_points(first)


def test_truncated_file_keeps_every_complete_entry_with_a_warning():
    (run,), warnings = load(HF / "damaged" / "truncated")
    full = W.log_history(seed=4, upto=200)
    loss = metric(run, "loss")
    kept = loss["step"].to_list()
    assert 0 < len(kept) < len([e for e in full if "loss" in e])
    assert loss["value"].to_list() == [e["loss"] for e in full if "loss" in e][: len(kept)]
    assert run.meta["hf.global_step"] == 200
    assert any("truncated" in w for w in warnings)


@pytest.mark.parametrize("case, needle", [("empty", "empty file"), ("not_json", "not valid JSON"),
                                          ("no_log_history", "no log_history")])
def test_unreadable_files_named_directly_are_one_line_errors(case, needle):
    res = run_cli("ls", HF / "damaged" / case / "trainer_state.json")
    assert res.returncode == 2, res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and f"{case}/trainer_state.json" in lines[0]


def test_unreadable_files_found_in_a_folder_are_warnings():
    runs, warnings = load(HF / "damaged")
    assert [r.name for r in runs] == ["truncated"]
    assert sum("skipped" in w for w in warnings) == 3


def test_claims_trainer_state_and_renamed_copies_only(tmp_path):
    imp = HfTrainerStateImporter()
    renamed = tmp_path / "state_backup.json"
    shutil.copy(HF / "run_clean" / "trainer_state.json", renamed)
    other = tmp_path / "config.json"
    other.write_text(json.dumps({"hidden_size": 768, "log_history_len": 3}))
    assert imp.claims(renamed, read_head(renamed))
    assert not imp.claims(other, read_head(other))
    (run,), _ = load(renamed)
    assert math.isnan(metric(run, "grad_norm").filter(pl.col("step") == W.NAN_STEP)["value"][0])


def test_cli_json_lists_the_resumed_run_and_writes_nothing(tmp_path):
    (run,) = ls_without_writing(HF, tmp_path, "run_resumed")
    assert len(run["segments"]) == 2 and run["metrics"]["grad_norm"] == "grad_norm"
    assert run["metrics"]["learning_rate"] == "lr" and run["metrics"]["epoch"] == "other"
