"""Crashes the log itself tells of, where the run's curves say nothing: a job that died before
its first logged value (SL306 error, `check` fails it instead of "nothing read"), and an
earlier launch of an appended log that died and was launched again (SL306 info, with its
error line). Fixtures: console logs written here as nanoGPT and a custom script print them."""
from __future__ import annotations

import pytest

from conftest import main_in_process
from spikelens import api, diagnostics
from spikelens.importers import textsignals
from spikelens.importers.textlogs import split_lines

OOM = ("Traceback (most recent call last):\n"
       '  File "/home/u/train.py", line 300, in <module>\n'
       "    loss.backward()\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB.\n")
PREAMBLE = ("Using device cuda:0, 8 GPUs\nnumber of parameters: 123.59M\nbatch size 32, lr 0.0006, seed 1337\n"
            "loading shard 0 of 12 (1048576 tokens)\n")


def _iters(start: int, stop: int, loss0: float = 10.0) -> str:
    return "".join(f"iter {s}: loss {loss0 - 0.004 * s:.4f}, time 310.00ms, mfu 38.00%\n" for s in range(start, stop + 1))


def _run(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return run


def _sl306(run):
    return [f for f in run.findings if f.kind == "ended_early"]


# ------------------------------------------------------------------ crashed before logging: must fire


@pytest.mark.parametrize("name", ["train.log", "log.csv", "slurm-123.out"])
def test_crash_before_the_first_value_is_an_error_naming_the_exception(tmp_path, name, no_workers):
    path = tmp_path / name  # a console capture, whatever its name (a .csv that holds a traceback)
    path.write_text(PREAMBLE + OOM)
    run = _run(path)
    (f,) = _sl306(run)
    assert f.severity == "error" and run.points == 0
    assert f.evidence["error_line"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert f.evidence["error_line_no"] == PREAMBLE.count("\n") + 4
    assert "before logging any value" in f.message


def test_check_fails_a_crash_before_logging_and_analyze_reports_it(tmp_path, capsys, no_workers):
    (tmp_path / "job.out").write_text(PREAMBLE + "Killed\n")
    code, out, err = main_in_process(capsys, "check", tmp_path / "job.out", "--format", "concise")
    assert code == 1 and "SL306" in out and "Killed" in out
    code, out, _ = main_in_process(capsys, "analyze", tmp_path, "--format", "concise")
    assert code == 0 and "crashed before logging any value: Killed" in out


def test_a_folder_with_only_a_crashed_console_log(tmp_path, no_workers):
    (tmp_path / "README.md").write_text("# notes\nTraceback (most recent call last):\nValueError: in a doc\n")
    (tmp_path / "stderr.err").write_text(PREAMBLE + OOM)
    run = _run(tmp_path)
    assert run.sources[-1].endswith("stderr.err") and _sl306(run)[0].severity == "error"


# ------------------------------------------------------------------ crashed before logging: must stay silent


def test_no_values_and_no_error_is_still_nothing_read(tmp_path, capsys, no_workers):
    (tmp_path / "train.log").write_text(PREAMBLE + "training finished, see wandb\n")
    code, _, err = main_in_process(capsys, "check", tmp_path / "train.log")
    assert code == 2 and "no training logs found" in err and "SL306" not in err


def test_an_error_in_the_middle_of_a_log_with_no_values_is_no_crash(tmp_path):
    # 64 KiB of ordinary lines after the traceback: the log's end is clean
    text = OOM + "".join(f"downloading part {i} of 9000 ... ok\n" for i in range(3000))
    assert textsignals.final_error(split_lines(text), None) is not None  # the whole text holds one...
    (tmp_path / "prep.log").write_text(text)
    assert textsignals.tail_error(tmp_path / "prep.log") is None  # ...but not its last 64 KiB
    (tmp_path / "prep.log").write_text(text + OOM)
    assert textsignals.tail_error(tmp_path / "prep.log") == (OOM.splitlines()[-1], 3000 + 8)


def test_a_folder_with_a_readable_log_gets_no_run_from_a_stray_error_file(tmp_path, no_workers):
    (tmp_path / "train.log").write_text(_iters(0, 200))
    (tmp_path / "old_attempt.err").write_text(PREAMBLE + OOM)  # a file no reader claims: not read at all
    runs = api.analyze(tmp_path).runs
    assert [r.run for r in runs] == ["train.log"] and not _sl306(runs[0])


# ------------------------------------------------------------------ earlier launches: must fire


def test_a_first_launch_that_died_of_oom_before_its_first_step_then_relaunched(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(PREAMBLE + OOM + PREAMBLE + _iters(0, 300))
    (f,) = _sl306(_run(path))
    assert f.severity == "info" and f.evidence["last_step"] is None and f.evidence["relaunched_at_step"] == 0
    assert f.evidence["error_line"].startswith("torch.OutOfMemoryError")
    assert "a launch crashed before logging any value and was started again" in f.message


def test_a_launch_killed_mid_run_then_resumed_from_a_checkpoint(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(PREAMBLE + _iters(0, 250) + "Segmentation fault (core dumped) python train.py\n"
                    + PREAMBLE + _iters(200, 400))
    crashes = [f for f in _sl306(_run(path)) if f.evidence.get("launch_crashed")]
    (f,) = crashes
    assert (f.start_step, f.evidence["relaunched_at_step"], f.severity) == (250, 200, "info")
    assert "Segmentation fault" in f.evidence["error_line"]


# ------------------------------------------------------------------ earlier launches: must stay silent


def test_a_traceback_printed_before_training_that_went_on_is_no_launch_crash(tmp_path, no_workers):
    caught = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
              "ModuleNotFoundError: No module named 'apex'\nfalling back to torch AMP\n")
    path = tmp_path / "train.log"
    path.write_text(PREAMBLE + caught + _iters(0, 300))
    assert not _sl306(_run(path))


def test_a_caught_error_mid_launch_whose_step_goes_on_is_no_crash(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_iters(0, 150) + OOM.replace("torch.OutOfMemoryError", "ValueError") + _iters(151, 300))
    assert not _sl306(_run(path))


# ------------------------------------------------------------------ a NaN the log says, not its curves


def _ppo(epochs: int) -> str:
    return "".join(f"Epoch: {e}, global_step={e * 3200}\nSPS: 5100, pg_loss: 0.0{e % 7 + 1}, v_loss: 0.{e % 5 + 1}\n"
                   for e in range(1, epochs + 1))


NAN_CRASH = ("Traceback (most recent call last):\n  File \"ppo.py\", line 410, in <module>\n"
             "    action, logprob, _, value = agent.get_action_and_value(next_obs)\n"
             "ValueError: Expected parameter loc (Tensor of shape (3200, 7)) of distribution Normal(loc: "
             "torch.Size([3200, 7])) to satisfy the constraint Real(), but found invalid values:\n"
             "tensor([[nan, nan, nan,  ..., nan, nan, nan],\n        [nan, nan, nan,  ..., nan, nan, nan]], "
             "device='cuda:0', grad_fn=<CatBackward0>)\n")


def test_a_crash_whose_error_says_nan_is_one_crash_that_names_the_nan(tmp_path, no_workers):
    path = tmp_path / "ppo.log"  # one error line: one error finding (the crash), not a crash and its echo
    path.write_text(_ppo(120) + NAN_CRASH)
    run = _run(path)
    assert not [f for f in run.findings if f.kind == "nan"]
    (crash,) = _sl306(run)
    assert (crash.severity, crash.start_step) == ("error", 120 * 3200)
    assert "found invalid values" in crash.evidence["nan_message"] and crash.evidence["died_of_nan"]
    assert "NaN/inf" in crash.message and "ValueError" in crash.message
    assert [f for f in run.findings if f.severity == "error"] == [crash]


def test_a_run_stopped_by_its_own_nan_check_is_a_nan(tmp_path, no_workers):
    path = tmp_path / "log.txt"  # DeiT/MAE: print("Loss is {}, stopping training"); sys.exit(1)
    path.write_text(_ppo(80) + "Loss is nan, stopping training\n")
    (nan,) = [f for f in _run(path).findings if f.kind == "nan"]
    assert nan.start_step == 80 * 3200 and nan.evidence["nan_message"] == "Loss is nan, stopping training"


def test_a_crash_without_nan_and_nan_values_read_as_values_are_not_this(tmp_path, no_workers):
    path = tmp_path / "ppo.log"
    path.write_text(_ppo(120) + OOM)  # an OOM names no NaN
    assert not [f for f in _run(path).findings if f.kind == "nan"]
    path.write_text(_ppo(120) + "Epoch: 121, global_step=387200\nSPS: 5100, pg_loss: nan, v_loss: nan\n" + OOM)
    nans = [f for f in _run(path).findings if f.kind == "nan"]
    assert nans and all(f.metric is not None for f in nans)  # the curves say it: no second finding from the text


# ------------------------------------------------------------------ memory that grew into the out-of-memory


def _zero3(mem: list[float]) -> str:
    return "".join(f"[Step {i}/100] Loss: {5.15 + 0.02 * i:.4f} | Global Tokens/s: 2100.5 | GPU Mem (GB): {m:.2f} | "
                   f"Peak Mem: {m * 1.2:.2f}\n" for i, m in enumerate(mem, start=1))


@pytest.mark.parametrize("mem, ends_oom, grew", [([25.21, 50.46], True, True), ([25.2, 25.3, 25.2], True, False),
                                                 ([25.21, 50.46], False, False)])
def test_memory_that_doubled_before_an_out_of_memory_crash(tmp_path, no_workers, mem, ends_oom, grew):
    path = tmp_path / "zero_3.log"
    path.write_text(PREAMBLE + _zero3(mem) + (OOM if ends_oom else "done\n"))
    found = [f for f in _run(path).findings if f.kind == "memory_growth"]
    assert bool(found) == grew
    if grew:
        (f,) = found
        assert f.severity == "warning" and f.evidence["before_oom"] and (f.start_step, f.end_step) == (1, 2)
        assert "ran out of memory" in f.message


def test_a_nan_warning_at_the_end_of_a_run_that_did_not_stop_on_it_is_no_nan(tmp_path, no_workers):
    path = tmp_path / "train.log"  # TensorBoard's summary warning, no crash, no stop
    path.write_text(_ppo(80) + "W tensorflow/core/kernels/check_numerics_op.cc: NaN or Inf found in input tensor.\n")
    assert not [f for f in _run(path).findings if f.kind == "nan"]
