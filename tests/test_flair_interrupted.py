"""Flair's training loop catches Ctrl-C and prints `Exiting from training early.`, saves the model and
tests the best one (`textsignals._KILL_LINE`, `ended._INTERRUPT`): the run was stopped by hand where the
line stands (SL306 info, "was interrupted"), whatever the test results printed after it; a Flair log that
trained to its end says nothing. Fixtures: Flair's `training.log` as its `log_line`/`log.info` write it."""
from __future__ import annotations

import numpy as np

from conftest import analyzed_run

SEP = "-" * 100


def _flair(path, epochs: int, interrupted: bool):
    rng = np.random.default_rng(0)
    stamp = "2019-06-11 14:{:02d}:{:02d},514"
    lines, k = [], 0
    for e in range(1, epochs + 1):
        lines.append(f"{stamp.format(k // 60 % 60, k % 60)} {SEP}")
        for it in range(0, 150, 15):
            k += 1
            loss = 0.6 * np.exp(-(e * 10 + it / 15) / 25) + 0.05 + 0.01 * rng.standard_normal()
            lines.append(f"{stamp.format(k // 60 % 60, k % 60)} epoch {e} - iter {it}/149 - loss {loss:.8f}")
        lines.append(f"{stamp.format(k // 60 % 60, k % 60)} EPOCH {e} done: loss {loss:.4f} - lr 0.1000")
    if interrupted:
        lines += [f"2019-06-11 15:44:28,514 {SEP}", "2019-06-11 15:44:28,514 Exiting from training early.",
                  "2019-06-11 15:44:28,514 Saving model ...", "2019-06-11 15:44:31,794 Done."]
    lines += [f"2019-06-11 15:44:31,795 {SEP}", "2019-06-11 15:44:31,795 Testing using best model ...",
              "2019-06-11 15:44:31,796 loading file best-model.pt", "2019-06-11 15:45:28,208 0.9235\t0.9108\t0.9171",
              "MICRO_AVG: acc 0.8469 - f1-score 0.9171", "MACRO_AVG: acc 0.5856 - f1-score 0.6546",
              f"2019-06-11 15:45:28,210 {SEP}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _ended(run):
    return [f for f in run.findings if f.kind == "ended_early"]


def test_SL306_flair_stopped_by_hand_was_interrupted(tmp_path):
    (f,) = _ended(analyzed_run(_flair(tmp_path / "training.log", 5, interrupted=True)))
    assert f.severity == "info" and "was interrupted" in f.message and "Exiting from training early" in f.message


def test_SL306_flair_that_trained_to_its_end_is_quiet(tmp_path):
    assert _ended(analyzed_run(_flair(tmp_path / "training.log", 5, interrupted=False))) == []
