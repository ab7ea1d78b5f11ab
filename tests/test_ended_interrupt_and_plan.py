"""How a run ended when its last line is an error but no fault stopped it: a launcher's notice
that the user pressed Ctrl-C (DeepSpeed's `Main process received SIGINT, exiting`) is an
interrupt, and an error printed after the run reached its stated plan (`step 800/800`) came on
its way out: both are info, never an alarm. The same logs stopped short by a real fault still
crash (error). Fixtures: console logs written here as the tools print them."""
from __future__ import annotations

from spikelens import api, diagnostics


def _steps(stop: int, total: int) -> str:
    return "".join(f"step {s}/{total} | loss {3.0 - 0.002 * s:.4f} | lr 1.0e-04\n" for s in range(1, stop + 1))


def _ended(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "ended_early" and not f.evidence.get("launch_crashed")]


SIGINT = ("[2024-01-07 17:47:33,815] [INFO] [launch.py:324:sigkill_handler] Main process received SIGINT, "
          "exiting\n")
SHUTDOWN = ("Traceback (most recent call last):\n  File \"train.py\", line 310, in <module>\n    wandb.finish()\n"
            "BrokenPipeError: [Errno 32] Broken pipe\n")
FAULT = ("Traceback (most recent call last):\n  File \"train.py\", line 212, in <module>\n    loss.backward()\n"
         "RuntimeError: CUDA error: an illegal memory access was encountered\n")


def test_a_launchers_sigint_notice_is_an_interrupt_not_a_crash(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_steps(98, 800) + SIGINT)
    (f,) = _ended(path)
    assert f.severity == "info" and "interrupted" in f.message and "SIGINT" in f.evidence["error_line"]


def test_an_error_after_the_plan_was_done_is_no_crash(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_steps(800, 800) + SHUTDOWN)
    found = _ended(path)
    assert all(f.severity == "info" for f in found)
    assert found and found[0].evidence.get("finished_plan") and "finished its plan" in found[0].message


def test_a_fault_short_of_the_plan_is_still_a_crash(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_steps(400, 800) + FAULT)
    (f,) = _ended(path)
    assert f.severity == "error" and "crashed" in f.message and "illegal memory access" in f.evidence["error_line"]
    assert not f.evidence.get("finished_plan")


def test_a_kill_signal_other_than_sigint_is_still_a_crash(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_steps(98, 800) + "slurmstepd: error: *** JOB 42 ON n1 CANCELLED AT 2024-01-07T17:47:33 DUE TO "
                    "TIME LIMIT ***\n")
    (f,) = _ended(path)
    assert f.severity == "error" and "crashed" in f.message
