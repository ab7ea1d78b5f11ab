"""SL306 ended_early: a run that crashed, or stopped well short of the plan its log
states, is one run-level finding with the last step, the plan and the error line."""
from __future__ import annotations

import sys

import polars as pl
import pytest

from conftest import FIXTURES, analyzed_run as report
from spikelens.detect.ended import ended_early_finding
from spikelens.importers import textsignals
from spikelens.importers.textlogs import split_lines
from spikelens.report.verdict import verdict

sys.path.insert(0, str(FIXTURES))
from writers import relaunches as W  # noqa: E402

HERE = FIXTURES / W.OUT



def ended(run):
    """The run-level SL306 (an earlier launch's crash or death, see test_launch_crashes and
    test_relaunch_crashes, is apart)."""
    found = [f for f in run.findings if f.kind == "ended_early"
             and not f.evidence.get("launch_crashed") and not f.evidence.get("launch_died")]
    assert len(found) <= 1
    return found[0] if found else None


# ------------------------------------------------------------------ must fire


def test_SL306_crash_with_a_traceback_is_an_error_naming_the_exception():
    run = report(HERE / "nanogpt_crash" / "train_log.txt")
    f = ended(run)
    assert f.code == "SL306" and f.severity == "error" and f.metric is None
    assert f.start_step == f.end_step == W.NANO_CRASH_AT
    assert f.evidence["error_line"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert f.evidence["planned_steps"] == W.NANO_PLAN and f.evidence["last_step"] == W.NANO_CRASH_AT
    assert "crashed after step 1200 of the 5,000 planned" in f.message
    assert verdict(run).startswith("crashed after step 1200")


def test_SL306_llmc_stopped_at_750_of_19560():
    f = ended(report(HERE / "llmc_stopped" / "main.out"))
    assert f.severity == "info"  # no error in the log: stopped on purpose, killed, or still running
    assert (f.evidence["last_step"], f.evidence["planned_steps"]) == (W.LLMC_STOP, W.LLMC_PLAN)
    assert f.evidence["fraction_done"] == pytest.approx(750 / 19560, abs=1e-4)


def test_SL306_trainer_state_short_of_max_steps():
    f = ended(report(HERE / "hf_stopped"))
    assert f.evidence["planned_steps"] == W.HF_PLAN and f.evidence["last_step"] == W.HF_STOP


def test_SL306_llamafactory_short_of_total_steps():
    f = ended(report(HERE / "llamafactory_stopped"))
    assert (f.evidence["last_step"], f.evidence["planned_steps"]) == (W.LF_STOP, W.LF_PLAN)


def test_SL306_lightning_short_of_max_epochs_in_hparams():
    f = ended(report(HERE / "lightning_stopped"))
    assert f.evidence["planned_epochs"] == W.LIGHTNING_EPOCHS
    assert f.evidence["last_epoch"] == W.LIGHTNING_STOP - 1


# ------------------------------------------------------------------ must stay silent


@pytest.mark.parametrize("path", ["llmc_finished/main.out", "nanogpt_eval_twice/train_log.txt",
                                  "hf_early_stopping", "hf_checkpoint", "nanogpt_appended/train_log.txt"])
def test_SL306_silent(path):
    # a finished plan, a stop declared by EarlyStoppingCallback, a checkpoint's copy of the
    # state (the run went on), a traceback in the middle of a log that goes on after it
    assert ended(report(HERE / path)) is None


def test_SL306_an_appended_launch_after_a_crash_names_the_crash_as_info():
    run = report(HERE / "nanogpt_appended" / "train_log.txt")
    (f,) = [f for f in run.findings if f.kind == "ended_early" and f.evidence.get("launch_crashed")]
    assert f.severity == "info"
    assert f.evidence["error_line"].startswith("torch.OutOfMemoryError")
    # the launch before it ran to step 330 and was started again from its checkpoint at 300: it died there
    (died,) = [f for f in run.findings if f.kind == "ended_early" and f.evidence.get("launch_died")]
    assert died.severity == "info" and (died.evidence["last_step"], died.evidence["relaunched_at_step"]) == (330, 300)


# ------------------------------------------------------------------ the signals


def _lines(text: str) -> pl.DataFrame:
    return split_lines(text)


def test_final_error_only_after_the_last_value():
    log = "iter 1: loss 2.0\nTraceback (most recent call last):\n  File \"x\"\nValueError: bad\niter 2: loss 1.9\n"
    lines = _lines(log)
    assert textsignals.final_error(lines, last_value_row=4) is None
    assert textsignals.final_error(lines, last_value_row=0) == ("ValueError: bad", 3)


def test_final_error_kill_messages_and_a_cut_off_log():
    assert textsignals.final_error(_lines("iter 1: loss 2.0\nKilled\n"), 0) == ("Killed", 1)
    slurm = "iter 1: loss 2.0\nslurmstepd: error: *** JOB 42 ON n1 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***\n"
    assert "TIME LIMIT" in textsignals.final_error(_lines(slurm), 0)[0]
    assert textsignals.final_error(_lines("iter 1: loss 2.0\niter 2: lo"), 0) is None
    node = "iter 1: loss 2.0\nslurmstepd-c17: error: *** JOB 7 ON c17 CANCELLED AT 2024-04-05T13:06:20 DUE TO TIME LIMIT ***\n"
    assert textsignals.final_error(_lines(node), 0)[0].startswith("slurmstepd-c17: error:")
    darknet = ("iter 1: loss 2.0\nDarknet error location: ./src/parser.c, parse_yolo(), line #458\n"
               "Error: l.outputs == params.inputs: Success\nbacktrace (10 entries)\n")
    assert textsignals.final_error(_lines(darknet), 0) == ("Darknet error location: ./src/parser.c, parse_yolo(), "
                                                           "line #458", 1)
    assert textsignals.final_error(_lines("iter 1: loss 2.0\nError: could not reach wandb, retrying\n"), 0) is None


def test_keyboard_interrupt_is_a_note_not_a_crash():
    meta = {"plan.steps": 1000, "plan.error": "KeyboardInterrupt"}
    f = ended_early_finding("r", meta, first_step=0, last_step=400, last_epoch=None, last_source="train.log")
    assert f.severity == "info" and "interrupted" in f.message  # the owner's Ctrl-C: deliberate, no alarm


def test_a_run_near_its_plan_is_not_short():
    meta = {"plan.steps": 1000}
    assert ended_early_finding("r", meta, first_step=0, last_step=950, last_epoch=None, last_source="x") is None
    assert ended_early_finding("r", meta, first_step=0, last_step=500, last_epoch=None, last_source="x") is not None
