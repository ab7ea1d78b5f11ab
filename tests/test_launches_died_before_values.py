"""Launches that died before logging anything, one after another, then a launch that trained: each
traceback followed by another with no value line between is a launch that died (one that went on
after a caught traceback would have logged values first). One traceback before training (an optional
import printed and caught) is no crash. Fixtures: console logs written here as a custom script prints
them (`Step N | Loss: X`), with Python's own traceback text."""
from __future__ import annotations

from spikelens import api, diagnostics

BANNER = "2026-02-13 14:50:01,000 - __main__ - INFO - Starting training with config configs/distill.yaml\n"


def _traceback(exc: str) -> str:
    return ("Traceback (most recent call last):\n"
            '  File "/home/u/train.py", line 88, in <module>\n'
            "    trainer.train()\n"
            '  File "/home/u/trainer.py", line 140, in train\n'
            "    out = self.model(batch)\n"
            f"{exc}\n")


def _steps(n: int) -> str:
    return "".join(f"2026-02-13 15:{i // 60:02d}:{i % 60:02d},000 - trainer - INFO - Step {50 * (i + 1)} | "
                   f"Loss: {0.5 * 0.99 ** i:.4f} | LR: 1.00e-04\n" for i in range(n))


def _crashes(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "ended_early"]


def test_launches_that_died_one_after_another_before_training_are_each_a_crash(tmp_path):
    errors = ["RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)",
              "RuntimeError: Given groups=1, weight of size [256, 4, 3, 3], expected input[4, 3, 64, 64] to have "
              "4 channels, but got 3 channels instead",
              "RuntimeError: mat1 and mat2 shapes cannot be multiplied (308x512 and 768x256)"]
    text = "".join(BANNER + _traceback(e) for e in errors) + BANNER + _steps(80)
    path = tmp_path / "training.log"
    path.write_text(text)
    died = _crashes(path)
    assert len(died) == 2 and all(f.severity == "info" and f.evidence["launch_crashed"] for f in died)
    assert [f.evidence["error_line"] for f in died] == errors[:2]
    assert all("before logging any value" in f.message for f in died)


def test_one_caught_traceback_before_training_is_no_crash(tmp_path):
    text = BANNER + _traceback("ModuleNotFoundError: No module named 'apex'") + _steps(80)
    path = tmp_path / "training.log"
    path.write_text(text)
    assert _crashes(path) == []
