"""Trainers' own CSV/JSON files read as their users mean them: timm `summary.csv` with its
`args.yaml` plan, HF evaluation results logged without a step, MMEngine `scalars.json`
with its eval records apart. Each file is written the way the trainer writes it
(`fixtures/writers/trainers.py`, `fixtures/writers/hf.py`)."""
from __future__ import annotations

import sys

import pytest

from conftest import FIXTURES
from spikelens import api
from spikelens.frame import infer_roles
from spikelens.importers.registry import IMPORTERS
from spikelens.importers.mmengine import MmengineScalarsImporter
from spikelens.importers.timm import TimmSummaryImporter

sys.path.insert(0, str(FIXTURES))
from writers import hf as HF  # noqa: E402
from writers.trainers import dump_scalars, mmengine_epoch_based, timm_epoch, update_summary, write_timm  # noqa: E402


def only_run(path):
    (run,) = api.load_runs(path)
    return run


def series(run, metric):
    fr = run.frame.filter(run.frame["metric"] == metric).sort("step", "seq")
    return fr["step"].to_list(), fr["value"].to_list()


def claimed_by(path):
    return next(imp for imp in IMPORTERS if imp.claims(path, path.read_bytes()[:4096]))


# ------------------------------------------------------------------ timm summary.csv


def test_timm_summary_values_epochs_roles(tmp_path):
    f = write_timm(tmp_path / "output/train/20240101-resnet50", 12, epochs=12)
    assert f.read_text().startswith("epoch,train_loss,eval_loss,eval_top1,eval_top5,lr")
    assert isinstance(claimed_by(f), TimmSummaryImporter)
    run = only_run(f)
    assert run.formats == ["timm"] and run.name.endswith("20240101-resnet50")
    steps, top1 = series(run, "eval_top1")
    assert steps == list(range(12)) and top1 == pytest.approx([timm_epoch(e)[1]["top1"] for e in range(12)])
    roles = infer_roles(run.frame["metric"].unique().cast(str).to_list())
    assert roles == {"train_loss": "loss", "eval_loss": "eval_loss", "eval_top1": "accuracy",
                     "eval_top5": "accuracy", "lr": "lr"}
    assert (run.meta["plan.epochs"], run.meta["plan.epoch_base"]) == (12, 0)


def test_timm_killed_early_and_finished(tmp_path):
    report = api.analyze(write_timm(tmp_path / "killed", 20, epochs=100, cooldown=10), jobs=1)
    (f,) = [x for x in report.runs[0].findings if x.kind == "ended_early"]
    assert f.evidence["planned_epochs"] == 110 and f.evidence["fraction_done"] == pytest.approx(20 / 110, abs=1e-4)
    assert "cooldown_epochs" in f.evidence["plan_from"]
    report = api.analyze(write_timm(tmp_path / "done", 15, epochs=15), jobs=1)
    assert not [x for x in report.runs[0].findings if x.kind == "ended_early"]


def test_timm_resumed_writes_its_header_again(tmp_path):
    f = write_timm(tmp_path / "r", 6, epochs=10)
    for e in range(4, 10):  # resumed from the checkpoint of epoch 3: best_metric is None again, header again
        train, ev, lr = timm_epoch(e)
        update_summary(e, train, ev, f, lr=lr, write_header=e == 4)
    run = only_run(f)
    steps, _ = series(run, "train_loss")
    assert sorted(set(steps)) == list(range(10))
    assert len(run.segments) == 2


def test_a_keras_log_is_not_a_timm_summary(tmp_path):
    f = tmp_path / "summary.csv"
    f.write_text("epoch,loss,val_loss\n0,1.0,1.1\n1,0.9,1.0\n")
    assert not isinstance(claimed_by(f), TimmSummaryImporter)


# ------------------------------------------------------------------ HF evaluation results without a step


def test_hf_predict_and_test_entries_without_a_step_are_placed_after_the_last_step(tmp_path):
    hist = HF.log_history(seed=3, upto=200)
    summary = HF.summary(hist, 200)
    hist.append(summary)
    hist.append({"predict_loss": 1.95, "predict_accuracy": 0.61, "predict_runtime": 4.1,
                 "predict_samples_per_second": 120.5})  # appended by a script after trainer.predict()
    hist.append({"test_loss": 1.97, "test_runtime": 4.0})
    out = tmp_path / "out"
    HF.save_to_json(out / "trainer_state.json", HF.state(hist, 200, max_steps=200))
    run = only_run(out)
    assert series(run, "predict_loss") == ([200], [1.95])
    assert series(run, "predict_accuracy") == ([200], [0.61])
    assert series(run, "test_loss") == ([200], [1.97])
    roles = infer_roles(["predict_loss", "predict_accuracy", "test_loss", "predict_samples_per_second"])
    assert roles == {"predict_loss": "eval_loss", "predict_accuracy": "accuracy", "test_loss": "eval_loss",
                     "predict_samples_per_second": "throughput"}
    assert run.meta["hf.train_loss"] == pytest.approx(summary["train_loss"])


def test_hf_results_without_any_step_before_them_go_to_the_global_step(tmp_path):
    hist = [{"predict_loss": 2.5, "predict_runtime": 1.0}]  # a state saved after trainer.predict() alone
    HF.save_to_json(tmp_path / "trainer_state.json", HF.state(hist, 500, max_steps=500))
    assert series(only_run(tmp_path / "trainer_state.json"), "predict_loss") == ([500], [2.5])


def test_hf_stepless_summary_goes_to_meta_and_training_entries_without_step_are_still_skipped(tmp_path):
    hist = HF.log_history(seed=4, upto=100)
    summary = HF.summary(hist, 100)
    del summary["step"]
    hist += [summary, {"loss": 9.9, "learning_rate": 1e-5}]  # a train entry without a step: nowhere to put it
    HF.save_to_json(tmp_path / "trainer_state.json", HF.state(hist, 100, max_steps=100))
    run = only_run(tmp_path / "trainer_state.json")
    assert run.meta["hf.train_runtime"] == summary["train_runtime"]
    assert 9.9 not in series(run, "loss")[1]


# ------------------------------------------------------------------ MMEngine scalars.json


def test_mmengine_epoch_based_eval_records_at_the_last_iteration_of_their_epoch(tmp_path):
    work = tmp_path / "work_dirs/faster-rcnn/20240101_120000"
    path = dump_scalars(work, mmengine_epoch_based())
    assert isinstance(claimed_by(path), MmengineScalarsImporter)
    run = only_run(work)  # the <timestamp>.json copy beside scalars.json is not a second run
    assert run.formats == ["mmengine"] and run.name == "20240101_120000" and len(run.segments) == 1
    assert series(run, "coco/bbox_mAP") == ([200, 400, 600], pytest.approx([0.1, 0.2, 0.3]))
    steps, times = series(run, "time")
    assert set(times) == {0.30} and steps[0] == 50  # the training iteration time only
    assert series(run, "val/time") == ([200, 400, 600], [0.05] * 3)
    assert series(run, "loss")[0] == list(range(50, 601, 50))
    roles = infer_roles(run.frame["metric"].unique().cast(str).to_list())
    assert roles["coco/bbox_mAP"] == "accuracy" and roles["loss"] == "loss" and roles["memory"] == "memory"
    assert roles["val/time"] == "other" and roles["data_time"] == "step_time"


def test_mmengine_iteration_based_eval_records_keep_their_step(tmp_path):
    recs = []
    for it in range(50, 1001, 50):
        recs.append({"lr": 0.01, "data_time": 0.01, "loss": 1.0 / it, "decode.loss_ce": 1.0 / it,
                     "decode.acc_seg": 90.0, "time": 0.5, "iter": it, "memory": 4000, "step": it})
        if it % 500 == 0:  # log_metric_by_epoch=False: step is runner.iter
            recs.append({"aAcc": 90.0, "mIoU": 40.0 + it / 100, "mAcc": 50.0, "data_time": 0.003, "time": 0.1,
                         "step": it})
    run = only_run(dump_scalars(tmp_path / "seg", recs))
    assert series(run, "mIoU") == ([500, 1000], [45.0, 50.0])
    assert series(run, "val/data_time")[0] == [500, 1000]
    assert "iter" not in set(run.frame["metric"].cast(str))  # the same counter as `step`
    # mmseg's `aAcc` (all-pixel accuracy): a camel-cased `Acc` is an accuracy as `acc_seg` is
    assert infer_roles(["mIoU", "aAcc", "decode.acc_seg"]) == {"mIoU": "accuracy", "aAcc": "accuracy",
                                                              "decode.acc_seg": "accuracy"}


def test_mmengine_hierarchy_keys_are_kept(tmp_path):
    recs = [{"train/lr": 0.01, "train/loss": 1.0 / s, "train/time": 0.3, "train/epoch": 1, "epoch": 1, "step": s}
            for s in (50, 100)]
    recs.append({"val/accuracy/top1": 55.0, "val/time": 0.02, "step": 1})
    run = only_run(dump_scalars(tmp_path / "cls", recs))
    assert series(run, "val/accuracy/top1") == ([100], [55.0])
    assert "val/val/time" not in set(run.frame["metric"].cast(str))
