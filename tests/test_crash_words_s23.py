"""How a run ended, in more of the words launchers and shells print (SL306 `ended_early`,
`textsignals`): a shell's bare `Terminated` (the job got SIGTERM), zsh's kill notices,
torchrun's `Received Signals.SIGTERM death signal` and `Received 15 death signal`, PyTorch's
NCCL watchdog taking the process down after a collective timed out, and a Python traceback
followed by a native library's stack trace whose frames read as numbers (XGBoost's
`[bt] (3) libxgboost.so(+0x8977f)`): the numbers of a failure report are no training, so
the log still ends in its error. Lookalikes that stay silent: a run whose last line is a
normal summary, a word such as "terminated" inside a sentence, a traceback a run caught and
went on after. Fixtures: console logs written here as the tools print them."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics


def _steps(n: int = 80, start: int = 0) -> str:
    loss = 2.0 * np.exp(-np.arange(n) / 40) + 0.5 + 0.01 * np.random.default_rng(0).standard_normal(n)
    return "".join(f"step {10 * (start + i)} | loss {v:.4f} | lr 0.001\n" for i, v in enumerate(loss))


def _ended(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "ended_early" and not f.evidence.get("launch_crashed")]


TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 182, in <module>\n    main()\n'

ENDINGS = {
    "bash_terminated": "Terminated\n",
    "zsh_killed": "zsh: killed     python train.py --lr 3e-4\n",
    "zsh_job_terminated": "[1]  + 48213 terminated  python train.py\n",
    "torchrun_signals_sigterm": ("W1107 10:22:01.123000 140 torch/distributed/elastic/agent/server/api.py:704] "
                                 "Received Signals.SIGTERM death signal, shutting down workers\n"),
    "torchrun_numbered_signal": ("W1107 10:22:01.123000 140 torch/distributed/elastic/agent/server/api.py:719] "
                                 "Received 15 death signal, shutting down workers\n"),
    "nccl_watchdog": ("[rank3]:[E1107 10:22:01.123 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
                      "operation timeout: WorkNCCL(SeqNum=51721, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                      "Timeout(ms)=600000) ran for 600035 milliseconds before timing out.\n"),
    "nccl_taken_down": ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
                        "WorkNCCL(SeqNum=5, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800585 milliseconds "
                        "before timing out.\n[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed "
                        "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                        "corrupted/incomplete data.\n[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are "
                        "taking the entire process down.\n"),
}


# ------------------------------------------------------------------ must fire


@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_SL306_a_log_ending_in_a_kill_or_timeout_notice_crashed(tmp_path, name):
    path = tmp_path / "train.log"
    path.write_text(_steps() + ENDINGS[name])
    (f,) = _ended(path)
    assert f.severity == "error" and f.start_step == 790
    assert f.evidence["error_line_no"] > 80 and "crashed after step 790" in f.message


def test_SL306_a_traceback_then_a_native_stack_trace_is_the_end(tmp_path):
    """A script that prepared its data under progress bars and died in its first training call
    with XGBoost's error: the `[bt] (N) lib(+0x..) [0x..]` frames are numbered lines under keys the
    run never logged before the traceback, no training; the run crashed on the exception line (the
    bars' totals, reached, are no training plan: no "finished its plan, then an error on its way out")."""
    bars = "".join(f"{i}/{n} [00:0{k}<00:44, 133{k}.71it/s]\n"  # its data preparation's bars, run to their totals
                   for n in (60000, 10000) for k, i in enumerate(range(0, n + 1, n // 5)))
    frames = "".join(f"  [bt] ({i}) /opt/conda/lib/libxgboost.so(+0x{8977 + i}f) [0x2ac719ec{i}77f]\n" for i in range(9))
    path = tmp_path / "xgboost.log"
    path.write_text("Training data: (60000, 28, 28)\n" + bars + "XGBoost Training....\n" + TRACEBACK
                    + '  File "core.py", line 188, in _check_call\n'
                    "xgboost.core.XGBoostError: [08:34:48] common.h:153: XGBoost version not compiled with GPU "
                    "support.\nStack trace:\n" + frames)
    (f,) = _ended(path)
    assert f.severity == "error" and "XGBoostError" in f.evidence["error_line"] and "planned_steps" not in f.evidence


# ------------------------------------------------------------------ must stay silent


def test_SL306_a_log_ending_in_a_summary_is_no_crash(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(_steps() + "Training finished in 1:02:03. Final loss 0.52\n")
    assert _ended(path) == []


def test_SL306_terminated_inside_a_sentence_is_no_crash(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(_steps() + "Data loader workers terminated cleanly.\nTraining finished.\n")
    assert _ended(path) == []


def test_SL306_a_caught_traceback_the_run_went_on_after_is_no_crash(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(_steps(40) + TRACEBACK + "OSError: [Errno 28] could not write sample image, skipping\n"
                    + _steps(40, start=40) + "done\n")
    assert _ended(path) == []
