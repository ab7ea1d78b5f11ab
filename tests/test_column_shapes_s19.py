"""Headerless numbers a person reads by their shape (#24): a score beside a counter, one number a line
that stands alone in its folder, a commented header over a run cut short.

Files are written as the scripts write them: `f.write(f"{epoch},{acc:.2f}\\n")` into `progress.csv`,
`np.savetxt('out.txt', rewards)` (`%.18e`) and `f.write(f"{r}\\n")`, Torch7's `optim.Logger` (`%` header,
`%13.4e` rows tab-ended)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spikelens.errors import SpikelensError

from spikelens import api
from spikelens.diagnostics import SpikelensWarning
from spikelens.frame import infer_role
from loaded_runs import one_run, series


def refused(path, match):
    """Nothing read from the path, and a warning names why."""
    with pytest.warns(SpikelensWarning, match=match):
        assert api.load_runs(path) == []


def rising(n, top):
    rng = np.random.default_rng(3)
    return [round(top * (0.85 - 0.35 * math.exp(-e / 12)) + float(rng.normal(0, top * 0.004)), 4) for e in range(n)]


def test_a_rising_percentage_beside_the_epoch_is_a_score(tmp_path):
    acc = rising(100, 100.0)
    (tmp_path / "progress.csv").write_text("".join(f"{e + 1},{a:.2f}\n" for e, a in enumerate(acc)))
    run = one_run(tmp_path)
    steps, values = series(run, "progress_score_column2")
    assert steps == list(range(1, 101)) and values == pytest.approx(acc, abs=0.006)
    assert infer_role("progress_score_column2") in ("reward", "accuracy")  # higher is better


def test_a_falling_column_is_still_the_loss_and_a_flat_one_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "history.txt").write_text("".join(f"{e} {2 * math.exp(-e / 9) + 0.1:.5f}\n" for e in range(40)))
    assert "history_loss_column2" in set(one_run(tmp_path / "a").frame["metric"])
    (tmp_path / "b").mkdir()  # a column that neither falls nor rises steadily beside the counter: refused, reason named
    rng = np.random.default_rng(0)
    (tmp_path / "b" / "history.txt").write_text("".join(f"{e} {0.5 + rng.normal(0, 0.05):.4f}\n" for e in range(40)))
    refused(tmp_path / "b", "rises as a score does")


def test_a_percentage_above_its_scale_is_no_score(tmp_path):
    values = [50 + 1.5 * e for e in range(60)]  # rises to 138.5: not bounded by 100
    (tmp_path / "progress.csv").write_text("".join(f"{e},{v:.2f}\n" for e, v in enumerate(values)))
    refused(tmp_path, "rises as a score does")


def test_one_number_a_line_alone_is_read_by_its_shape(tmp_path):
    (tmp_path / "a").mkdir()
    reward = rising(300, 1.0)
    np.savetxt(tmp_path / "a" / "out.txt", reward)
    steps, values = series(one_run(tmp_path / "a"), "out_score")
    assert steps == list(range(300)) and values == pytest.approx(reward)
    (tmp_path / "b").mkdir()
    loss = [3 * math.exp(-i / 50) + 0.2 for i in range(200)]
    (tmp_path / "b" / "output.txt").write_text("".join(f"{v}\n" for v in loss))
    (tmp_path / "b" / "train.py").write_text("print('code is no log')\n")
    assert series(one_run(tmp_path / "b"), "output_loss")[1] == pytest.approx(loss)


def test_one_number_a_line_beside_named_logs_is_not_read_by_guess(tmp_path):
    loss = [3 * math.exp(-i / 50) + 0.2 for i in range(200)]
    (tmp_path / "loss.txt").write_text("".join(f"{v}\n" for v in loss))
    (tmp_path / "predictions.txt").write_text("".join(f"{0.3 + 0.6 * i / 200}\n" for i in range(200)))  # rises in [0, 1]
    run = one_run(tmp_path)
    assert set(run.frame["metric"]) == {"loss"}


def test_one_number_a_line_of_no_shape_is_refused_with_its_reason(tmp_path):
    rng = np.random.default_rng(1)
    np.savetxt(tmp_path / "out.txt", rng.normal(5, 1, 200))
    with pytest.raises(SpikelensError, match="neither fall as a loss does nor rise"):
        api.load_runs(tmp_path / "out.txt")  # the file named on its own: a one-line error


def test_a_commented_header_names_a_run_cut_short(tmp_path):
    (tmp_path / "train.log").write_text("% mean class accuracy (train set)\t\n" + f"{float('nan'):13.4e}\t\n")
    run = one_run(tmp_path)
    steps, values = series(run, "mean class accuracy (train set)")
    assert len(values) == 1 and math.isnan(values[0])


def test_a_few_bare_numbers_without_a_header_stay_refused(tmp_path):
    (tmp_path / "data.txt").write_text("1.0\n2.0\n")  # fewer than ten numbers and no header: no curve
    with pytest.raises(SpikelensError):
        api.load_runs(tmp_path)
