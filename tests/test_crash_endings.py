"""How a run ended, in the words the log itself uses (SL306 `ended_early`), where its curves say
nothing: a kill notice in any line (a scheduler's time limit with the dying process's buffer
flushed after it, a SIGTERM glued to an unfinished progress bar), a fatal error a logger printed
(`INFO - Error in epoch 40 ... CUDA out of memory`), a launcher's failure report whose numbers
are no training (`exitcode : 1`), a run that died before training (argparse's error, a logger's
ERROR lines, an interrupt amid a parameter dump), and a W&B run's exit record and console log.
Each mechanism has a fixture that must fire and one that must stay silent. Fixtures: console
logs written here as the tools print them; W&B runs written by the real client
(`fixtures/writers/wandb_endings.py`)."""
from __future__ import annotations

import sys
from pathlib import Path

from conftest import main_in_process
from spikelens import api, diagnostics
from spikelens.importers import textsignals
from spikelens.importers.textlogs import split_lines

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from writers import wandb_endings as WE  # noqa: E402


def _iters(start: int, stop: int) -> str:
    return "".join(f"iter {s}: loss {10.0 - 0.004 * s:.4f}, time 310.00ms, mfu 38.00%\n" for s in range(start, stop + 1))


def _run(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return run


def _ended(run):
    return [f for f in run.findings if f.kind == "ended_early" and not f.evidence.get("launch_crashed")]


SLURM = "slurmstepd: error: *** JOB 29161962 ON gpu-q-39 CANCELLED AT 2026-05-10T23:34:23 DUE TO TIME LIMIT ***\n"


# ------------------------------------------------------------------ kill notices: must fire


def test_a_time_limit_with_the_buffer_flushed_after_it_is_the_end(tmp_path, no_workers):
    path = tmp_path / "slurm-29161962.out"
    path.write_text(_iters(0, 300) + SLURM + _iters(301, 302))  # two lines the killed process still flushed
    (f,) = _ended(_run(path))
    assert f.severity == "error" and "DUE TO TIME LIMIT" in f.evidence["error_line"]
    assert f.evidence["error_line_no"] == 302


def test_a_sigterm_glued_to_an_unfinished_progress_bar(tmp_path):
    bar = "".join(f"Epoch 3:  {p}%|###       | {p // 4}/28 [00:01<00:03,  5.1it/s, v_num=4, train_loss=0.{90 - p}]\r"
                  for p in range(4, 40, 4))
    lines = split_lines(_iters(0, 40) + bar + "Epoch 3:  40%|####      | 10/28 [00:01, train_loss=0.5][rank: 0] "
                        "Received SIGTERM: 15\n")
    texts = lines.get_column("text").to_list()
    last = next(i for i, t in enumerate(texts) if "SIGTERM" in t)  # the kill notice is on the last value's line
    at = ("Received SIGTERM: 15", lines.item(last, "line_no"))
    assert textsignals.final_error(lines, last) == at and textsignals.final_error(lines, last - 1) == at


def _nanogpt():
    from spikelens.importers.patterns import CATALOGUE

    return next(p for p in CATALOGUE if p.name == "nanoGPT")


def test_a_fatal_error_a_logger_printed_after_the_last_value(tmp_path, no_workers):
    path = tmp_path / "training_log.log"
    path.write_text(_iters(0, 200) + "2025-03-04 12:43:00,494 - INFO - Error in epoch 40, batch 17. CUDA out of "
                                     "memory. Tried to allocate 3.17 GiB.\n")
    (f,) = _ended(_run(path))
    assert f.severity == "error" and "CUDA out of memory" in f.evidence["error_line"]


def test_a_launchers_failure_report_is_no_training(tmp_path, no_workers):
    report = ("Traceback (most recent call last):\n  File \"run.py\", line 9, in <module>\n"
              "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
              "Root Cause (first observed failure):\n[0]:\n  time      : 2026-04-10_15:08:25\n"
              "  rank      : 3 (local_rank: 3)\n  exitcode  : 1 (pid: 434249)\n")
    lines = split_lines(_iters(0, 50) + report)
    rows = api_rows(lines)
    meta = textsignals.signal_meta(lines, _nanogpt(), rows)
    assert meta["plan.error"].endswith("ChildFailedError:")


def api_rows(lines):
    """Value rows as a reader gives them: the iter lines' loss, and the failure report's
    numbers under keys of their own (what a generic key=value reader makes of them)."""
    import polars as pl

    text = lines.get_column("text")
    rows = [(i, "loss", i) for i, t in enumerate(text) if t.startswith("iter ")]
    rows += [(i, "exitcode" if "exitcode" in t else "rank", 60) for i, t in enumerate(text)
             if t.strip().startswith(("exitcode", "rank"))]
    return pl.DataFrame(rows, schema={"row": pl.Int64, "metric": pl.String, "step": pl.Int64}, orient="row")


# ------------------------------------------------------------------ kill notices: must stay silent


def test_an_oom_caught_mid_run_then_training_went_on_is_no_crash(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_iters(0, 150) + "WARNING: CUDA out of memory. Tried to allocate 2 GiB; retrying with batch 16\n"
                    + _iters(151, 300))
    assert not _ended(_run(path))


def test_a_kill_notice_long_before_the_end_is_not_the_end(tmp_path):
    lines = split_lines(_iters(0, 50) + SLURM + _iters(51, 200))  # 150 value lines after it: no flush
    signals = textsignals.of_lines(lines, _nanogpt())
    assert signals.final_error(lines.height - 1) is None


def test_values_after_a_caught_traceback_under_the_runs_own_keys_are_training(tmp_path):
    caught = "Traceback (most recent call last):\n  File \"x.py\", line 1\nChildFailedError: worker 3 restarted\n"
    lines = split_lines(_iters(0, 50) + caught + _iters(51, 60))
    rows = api_rows(lines)
    assert "plan.error" not in textsignals.signal_meta(lines, _nanogpt(), rows)


# ------------------------------------------------------------------ died before training


def test_an_argparse_error_is_a_crash_before_logging_and_check_fails_it(tmp_path, capsys, no_workers):
    path = tmp_path / "nohup.out"
    path.write_text("usage: train_bash.py [-h] [--fp16 [FP16]] [--lr LR]\n                     [--stage {sft,rm}]\n"
                    "train_bash.py: error: argument --fp16: Truthy value expected: got s\n")
    code, out, _ = main_in_process(capsys, "check", path, "--format", "concise")
    assert code == 1 and "SL306" in out and "train_bash.py: error: argument --fp16" in out


def test_logger_error_lines_in_a_log_without_values_are_a_crash_before_logging(tmp_path, no_workers):
    path = tmp_path / "training.log"
    path.write_text("2025-09-13 15:49:51,176 - __main__ - INFO - Starting training...\n"
                    "2025-09-13 15:51:22,160 - __main__ - ERROR - Training failed with error: Can't pickle MockDataset\n"
                    "2025-09-13 15:57:11,727 - __main__ - INFO - Ablation study completed!\n")
    run = _run(path)
    (f,) = _ended(run)
    assert run.points == 0 and f.severity == "error" and "Training failed with error" in f.evidence["error_line"]


def test_a_warning_that_says_error_is_no_crash(tmp_path, capsys, no_workers):
    path = tmp_path / "training.log"
    path.write_text("2025-09-13 15:49:51,176 - __main__ - WARNING - error rate of the data loader is 0.1%\n"
                    "2025-09-13 15:49:52,176 - __main__ - INFO - done\n")
    code, _, err = main_in_process(capsys, "check", path)
    assert code == 2 and "SL306" not in err


def test_an_interrupt_amid_a_parameter_dump_is_reported_not_nothing_read(tmp_path, capsys, no_workers):
    path = tmp_path / "pretrain.log"
    path.write_text("".join(f"INFO - Embedding_dim: {64 * i}, n_layers: {i}\n" for i in range(1, 9))
                    + "Traceback (most recent call last):\n  File \"train.py\", line 262, in main\nKeyboardInterrupt\n")
    code, out, _ = main_in_process(capsys, "analyze", path, "--format", "concise")
    assert code == 0 and "interrupted" in out and "KeyboardInterrupt" in out


# ------------------------------------------------------------------ W&B: exit record and console log


def _wandb(key: str) -> Path:
    (folder,) = (FIXTURES / "wandb_endings" / key).iterdir()
    return folder


def test_a_wandb_run_that_exited_with_an_error_names_its_console_error(no_workers):
    (f,) = _ended(_run(_wandb("crashed")))
    assert f.severity == "error" and f.evidence["error_line"] == WE.ERROR_LINE
    assert f.start_step == WE.N_STEPS - 1


def test_a_wandb_run_with_a_non_zero_exit_code_and_no_error_printed_is_no_crash(no_workers):
    # a code alone says too little: a notebook's or a sweep agent's exit reads 255 on finished runs
    assert not _ended(_run(_wandb("killed")))


def test_a_wandb_run_that_exited_cleanly_is_no_crash_whatever_it_printed(no_workers):
    assert "Traceback" in (_wandb("clean") / "files" / "output.log").read_text()
    assert not _ended(_run(_wandb("clean")))


# ------------------------------------------------------------------ a shell's job notice


TF1_BANNER = ("2019-02-02 19:55:14.738623: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1105] Found device 0 "
              "with properties:\nname: Tesla P40 major: 6 minor: 1 memoryClockRate(GHz): 1.531\n"
              "totalMemory: 22.38GiB freeMemory: 14.27GiB\n")


def test_a_scripts_job_notice_that_it_killed_the_command_is_a_crash_before_logging(tmp_path, no_workers):
    path = tmp_path / "train.out"  # `sh run.sh > train.out 2>&1`: the kernel's OOM killer took python
    path.write_text(TF1_BANNER + "run.sh: line 5: 19817 Killed                  python SE_Inception_resnet_v2.py\n")
    run = _run(path)
    (f,) = _ended(run)
    assert run.points == 0 and f.severity == "error" and "19817 Killed" in f.evidence["error_line"]


def test_an_interactive_shells_killed_job_ends_the_run_it_logged(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_iters(0, 300) + "[1]+  Killed                  python train.py > train.log\n")
    (f,) = _ended(_run(path))
    assert f.severity == "error" and f.evidence["error_line"].startswith("[1]+  Killed")


def test_a_job_notice_that_the_command_is_done_is_no_crash(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_iters(0, 300) + "[1]+  Done                    python train.py > train.log\n")
    assert _ended(_run(path)) == []
