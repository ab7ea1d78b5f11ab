"""A text log that says its early stopping ended the run (#25): Keras' `Epoch 00023: early stopping`,
Lightning's `Signaling Trainer to stop.`, Ultralytics' `Stopping training early ...`, a script's own
`Early stopping at epoch 23`: the run stopped by its own rule, short of its planned epochs, is no
unfinished run. A setting (`early_stopping=True`), a patience count (`EarlyStopping counter: 3 out of
7`) or a log with no such line keeps the note that the log stops short of its plan. Written here as
Keras' `fit(verbose=2)` prints."""
from __future__ import annotations

import pytest

from spikelens import api


def _keras_log(path, last_line: str | None, *, header: str = "", epochs: int = 23):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(header)
        for e in range(1, epochs + 1):
            loss, val = 1 / e + 0.3, 0.5 + 0.02 * abs(e - 15)
            f.write(f"Epoch {e}/100\n1875/1875 - 5s - loss: {loss:.4f} - accuracy: {1 - loss / 3:.4f} - "
                    f"val_loss: {val:.4f} - val_accuracy: 0.8{e % 10}00 - 5s/epoch - 3ms/step\n")
        if last_line:
            f.write(last_line + "\n")
    return path


def _ended(path):
    (run,) = api.analyze(str(path), jobs=1).runs
    return [f for f in run.findings if f.kind == "ended_early"]


@pytest.mark.parametrize("line", [
    "Epoch 00023: early stopping",
    "Epoch 23: early stopping",
    "Early stopping at epoch 23, best val_loss 0.52",
    "Monitored metric val_loss did not improve in the last 5 records. Best score: 0.520. Signaling Trainer to stop.",
    "Stopping training early as no improvement observed in last 5 epochs. Best results observed at epoch 18.",
])
def test_a_run_its_early_stopping_ended_is_no_unfinished_run(tmp_path, line):
    path = _keras_log(tmp_path / "stopped" / "train.log", line)
    assert not _ended(path)
    (run,) = api.load_runs(str(path))
    assert run.meta.get("plan.stopped_by") == line


@pytest.mark.parametrize("line,header", [
    (None, ""),
    ("EarlyStopping counter: 3 out of 7", ""),
    (None, "Namespace(batch_size=32, early_stopping=True, epochs=100, patience=5)\n"),
    (None, "early stopping: True\nuse early stopping\n"),  # said before any value: a setting
], ids=["no-line", "patience-count", "setting", "said-before-training"])
def test_a_log_that_stops_short_without_saying_why_keeps_its_note(tmp_path, line, header):
    found = _ended(_keras_log(tmp_path / "short" / "train.log", line, header=header))
    assert found and found[0].severity == "info" and "stopped_by" not in found[0].evidence


def test_an_error_after_the_stop_is_still_a_crash(tmp_path):
    path = _keras_log(tmp_path / "crash" / "train.log",
                      "Epoch 00023: early stopping\nTraceback (most recent call last):\n"
                      "  File \"train.py\", line 9, in <module>\nRuntimeError: CUDA error: device-side assert triggered")
    found = _ended(path)
    assert found and found[0].severity == "error" and found[0].evidence["stopped_by"] == "Epoch 00023: early stopping"
