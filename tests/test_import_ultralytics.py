"""Ultralytics `results.csv` (YOLOv5, YOLOv8 8.0-8.2, YOLOv8.3/YOLO11): values, epochs as steps,
roles, the plan and early stopping from `args.yaml` / `opt.yaml`.

The files are written with the trainers' own format strings by `fixtures/writers/trainers.py`
(YOLOv5 `Loggers.on_fit_epoch_end`: `%20s,` / `%20.5g,`, epoch from 0; YOLOv8 up to 8.2
`BaseTrainer.save_metrics`: `%23s,` / `%23.5g,`, `self.epoch + 1`; 8.3 and YOLO11: `%s,` /
`%.6g,` with `time`), and the arguments as `yaml.safe_dump` writes them."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml

from conftest import FIXTURES
from spikelens import api
from spikelens.frame import infer_roles
from spikelens.importers.registry import IMPORTERS
from spikelens.importers.ultralytics import UltralyticsImporter

sys.path.insert(0, str(FIXTURES))
from writers.trainers import (V5_KEYS, V8_KEYS, epoch_values, write_results_txt, write_v5, write_v8,  # noqa: E402
                              write_v8_tensorboard)


def one_run(path):
    (run,) = api.load_runs(path)
    return run


def ended(path):
    report = api.analyze(path, jobs=1)
    found = [f for f in report.runs[0].findings if f.kind == "ended_early"]
    return found[0] if found else None, report.runs[0]


def test_v8_results_are_read_by_epoch_with_the_values_as_written(tmp_path):
    f = write_v8(tmp_path / "runs/detect/train", 12, epochs=12)
    text = f.read_text().splitlines()
    assert text[0].startswith("epoch,time,train/box_loss,")
    run = one_run(f)
    assert run.formats == ["ultralytics_v8"]
    fr = run.frame
    box = fr.filter(fr["metric"] == "train/box_loss").sort("step")
    assert box["step"].to_list() == list(range(1, 13))  # 1-based, as written
    assert box["value"][0] == pytest.approx(float("%.6g" % epoch_values(V8_KEYS, 0, 12)[0]))
    assert not {"train/loss", "val/loss"} & set(fr["metric"].cast(str))  # the file logs no total: none is made up
    assert "time" in set(fr["metric"].cast(str)) and fr["wall_time"].null_count() == fr.height


def test_v8_roles():
    roles = infer_roles(["epoch", "time", *V8_KEYS, "train/loss", "val/loss"])
    assert roles["train/box_loss"] == roles["train/loss"] == "loss"
    assert roles["val/dfl_loss"] == roles["val/loss"] == "eval_loss"
    assert {roles[k] for k in V8_KEYS if k.startswith("metrics/")} == {"accuracy"}
    assert {roles[k] for k in V8_KEYS if k.startswith("lr/")} == {"lr"}
    roles5 = infer_roles(V5_KEYS)
    assert roles5["train/obj_loss"] == "loss" and roles5["metrics/mAP_0.5:0.95"] == "accuracy"
    assert {roles5[k] for k in V5_KEYS if k.startswith("x/")} == {"lr"}


def test_the_main_loss_is_the_first_term_the_trainer_writes(tmp_path):
    f = write_v8(tmp_path / "train", 30, epochs=30)
    run = api.analyze(f, jobs=1).runs[0]
    assert run.stats["main_metric"] == "train/box_loss"  # not the larger dfl/cls terms, no sum made up
    assert run.metrics["metrics/mAP50-95(B)"] == "accuracy"


def test_v8_padded_header_of_8_0_to_8_2(tmp_path):
    f = write_v8(tmp_path / "old", 5, epochs=5, padded=True, time_column=False)
    assert f.read_text().startswith(" " * 18 + "epoch,")
    fr = one_run(f).frame
    assert sorted(set(fr["step"].to_list())) == [1, 2, 3, 4, 5]
    assert "metrics/mAP50-95(B)" in set(fr["metric"].cast(str))


def test_v5_padded_header_and_epochs_from_zero(tmp_path):
    f = write_v5(tmp_path / "runs/train/exp", 8, epochs=8)
    assert f.read_text().startswith(" " * 15 + "epoch,")
    run = one_run(f)
    fr = run.frame
    assert run.formats == ["ultralytics_v5"]
    assert sorted(set(fr["step"].to_list())) == list(range(8))
    assert {"train/obj_loss", "metrics/mAP_0.5:0.95", "x/lr0"} <= set(fr["metric"].cast(str))
    assert "train/loss" not in set(fr["metric"].cast(str))
    assert run.meta["plan.epochs"] == 8 and run.meta["plan.epoch_base"] == 0


def test_v8_killed_at_epoch_5_of_100_ended_early(tmp_path):
    f, run = ended(write_v8(tmp_path / "train", 5, epochs=100))
    assert f is not None and f.code == "SL306" and f.severity == "info"
    assert f.evidence["planned_epochs"] == 100 and f.evidence["fraction_done"] == pytest.approx(0.05)
    assert "args.yaml" in f.evidence["plan_from"]


def test_v5_killed_early_and_finished(tmp_path):
    f, _ = ended(write_v5(tmp_path / "killed", 30, epochs=300))
    assert f is not None and f.evidence["fraction_done"] == pytest.approx(30 / 300)
    f, _ = ended(write_v5(tmp_path / "done", 10, epochs=10))
    assert f is None  # epochs 0..9 of 10: finished


def test_v8_finished_is_silent(tmp_path):
    f, _ = ended(write_v8(tmp_path / "train", 10, epochs=10))
    assert f is None


def test_early_stop_by_patience_is_a_normal_end(tmp_path):
    # best fitness at epoch 20 (1-based 21), patience 15: stopped at epoch 36 of 100
    f, _ = ended(write_v8(tmp_path / "stopped", 36, epochs=100, patience=15, best_at=20))
    assert f is None
    run = one_run(tmp_path / "stopped" / "results.csv")
    assert run.meta["plan.stopped_by"].startswith("EarlyStopping (patience 15)")


def test_short_of_patience_is_still_ended_early(tmp_path):
    # the same curve killed 5 epochs after the best: patience 15 was not used up
    f, _ = ended(write_v8(tmp_path / "killed", 26, epochs=100, patience=15, best_at=20))
    assert f is not None and "stopped_by" not in f.evidence


def test_timed_run_has_no_epoch_plan(tmp_path):
    f = write_v8(tmp_path / "timed", 5, epochs=100)
    args = yaml.safe_load((tmp_path / "timed/args.yaml").read_text())
    args["time"] = 2.5
    (tmp_path / "timed/args.yaml").write_text(yaml.safe_dump(args, sort_keys=False))
    assert "plan.epochs" not in one_run(f).meta


def test_without_arguments_file_there_is_no_plan(tmp_path):
    f = write_v8(tmp_path / "bare", 5, epochs=100, args_file=None)
    run = one_run(f)
    assert not any(k.startswith("plan.") for k in run.meta)
    assert "train/box_loss" in set(run.frame["metric"].cast(str))


def test_epochs_not_validated_are_not_zeros(tmp_path):
    """`val: false`: the trainer validates only the last epoch; the other rows keep the
    zeros it initialised its metrics with (`dict(zip(metric_keys, [0] * len(metric_keys)))`)."""
    f = write_v8(tmp_path / "noval", 6, epochs=6)
    lines = f.read_text().splitlines()
    header = lines[0].split(",")
    zeroed = [lines[0]]
    for ln in lines[1:-1]:
        cells = ln.split(",")
        zeroed.append(",".join("0" if h.startswith(("val/", "metrics/")) else c for h, c in zip(header, cells)))
    f.write_text("\n".join(zeroed + lines[-1:]) + "\n")
    fr = one_run(f).frame
    assert fr.filter(fr["metric"] == "val/box_loss")["step"].to_list() == [6]
    assert fr.filter(fr["metric"] == "metrics/mAP50(B)")["step"].to_list() == [6]
    assert fr.filter(fr["metric"] == "train/box_loss").height == 6


def test_tensorboard_run_takes_its_plan_and_patience_from_args_yaml(tmp_path):
    f, _ = ended(write_v8_tensorboard(tmp_path / "tb_killed" / "train", 7, epochs=100).parent)
    assert f is not None and f.evidence["fraction_done"] == pytest.approx(0.07)
    f, _ = ended(write_v8_tensorboard(tmp_path / "tb_stopped" / "train", 40, epochs=100, patience=15,
                                      best_at=20).parent)
    assert f is None  # stopped by patience 15 after the best epoch 21
    f, _ = ended(write_v8_tensorboard(tmp_path / "tb_done" / "train", 12, epochs=12).parent)
    assert f is None


def test_results_txt_of_yolov5_before_v6_and_yolov7(tmp_path):
    f = write_results_txt(tmp_path / "runs/train/exp", 12, epochs=300)
    first = f.read_text().splitlines()[0]
    assert first.split()[:2] == ["0/299", "5.16G"] and len(first.split()) == 15
    run = one_run(f)
    assert run.formats == ["ultralytics_txt"]
    fr = run.frame
    steps = fr.filter(fr["metric"] == "train/loss").sort("step")["step"].to_list()
    assert steps == list(range(12))
    box, obj, cls, total = (fr.filter(fr["metric"] == m).sort("step")["value"].to_numpy()
                            for m in ("train/box_loss", "train/obj_loss", "train/cls_loss", "train/loss"))
    assert np.allclose(box + obj + cls, total, atol=2e-4)  # the total the trainer logged, at %10.4g
    roles = infer_roles(fr["metric"].unique().cast(str).to_list())
    assert roles["train/loss"] == "loss" and roles["val/box_loss"] == "eval_loss" and roles["gpu_mem"] == "memory"
    assert roles["metrics/mAP_0.5:0.95"] == "accuracy"
    f2, _ = ended(f)
    assert f2 is not None and f2.evidence["planned_epochs"] == 300 and f2.evidence["fraction_done"] == pytest.approx(0.04)


def test_results_txt_untested_epochs_are_not_zeros(tmp_path):
    f = write_results_txt(tmp_path / "exp", 6, epochs=6, notest=True)
    fr = one_run(f).frame
    assert fr.filter(fr["metric"] == "metrics/mAP_0.5")["step"].to_list() == [5]
    assert fr.filter(fr["metric"] == "train/box_loss").height == 6
    f2, _ = ended(f)
    assert f2 is None  # epochs 0..5 of 6: finished


def test_claims_results_csv_before_the_generic_csv_reader(tmp_path):
    f = write_v8(tmp_path / "t", 3, epochs=3)
    head = f.read_bytes()[:4096]
    first = next(imp for imp in IMPORTERS if imp.claims(f, head))
    assert isinstance(first, UltralyticsImporter)
    other = tmp_path / "keras.csv"
    other.write_text("epoch,loss,val_loss\n0,1.0,1.1\n1,0.9,1.0\n")
    assert not UltralyticsImporter().claims(other, other.read_bytes())
