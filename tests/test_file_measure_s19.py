"""A headerless file named for its measure and its kind (`loss_log.txt`, `loss_history.txt`) holds that
measure (#24): its columns are named `loss`, not `loss_log_column2`; a stem that names no measure once its
kind word is gone (`training_log.txt`) keeps its whole name.

Files are written as the scripts write them: `f.write(f"{step},{loss:.9f}\\n")`, `f.write(f"{it}, {loss:.6f}\\n")`,
`f.write(f"{step},{loss},{reward}\\n")`, `f.write(f"{loss}\\n")` batch after batch."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spikelens.frame import infer_role
from loaded_runs import one_run, series


def falling(n):
    rng = np.random.default_rng(5)
    return [2.0 * math.exp(-i / (n / 4)) + 0.1 + float(rng.normal(0, 0.01)) for i in range(n)]


def test_a_step_loss_log_reads_the_loss(tmp_path):
    loss = falling(60)
    (tmp_path / "loss_log.txt").write_text("".join(f"{50 * (i + 1)},{v:.9f}\n" for i, v in enumerate(loss)))
    run = one_run(tmp_path)
    assert set(run.frame["metric"]) == {"loss_column2"}
    steps, values = series(run, "loss_column2")
    assert steps == [50 * (i + 1) for i in range(60)] and values == pytest.approx(loss, abs=1e-8)
    assert infer_role("loss_column2") == "loss"


def test_a_comma_space_iter_loss_log_and_a_bare_loss_log(tmp_path):
    loss = falling(40)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "loss_log.txt").write_text("".join(f"{i + 1}, {v:.6f}\n" for i, v in enumerate(loss)))
    steps, values = series(one_run(tmp_path / "a"), "loss_column2")
    assert steps == list(range(1, 41)) and values == pytest.approx(loss, abs=1e-6)
    (tmp_path / "b").mkdir()  # one number a line: the loss, its line's place the step
    (tmp_path / "b" / "loss_log.txt").write_text("".join(f"{v}\n" for v in loss))
    run = one_run(tmp_path / "b")
    assert set(run.frame["metric"]) == {"loss"}
    assert series(run, "loss") == (list(range(40)), pytest.approx(loss))


def test_a_stem_naming_no_measure_keeps_its_name(tmp_path):
    """`training_log.txt` of `step,loss`: what is left of the stem names nothing, the reading stays as
    before (the column named by the file and its shape)."""
    loss = falling(40)
    (tmp_path / "training_log.txt").write_text("".join(f"{i},{v:.5f}\n" for i, v in enumerate(loss)))
    assert set(one_run(tmp_path).frame["metric"]) == {"training_log_loss_column2"}


def test_a_word_glued_to_the_first_number_names_the_bare_numbers(tmp_path):
    """`f.write('loss值' + str(loss))` once, then `f.write(str(loss))` a line: the word names the series."""
    loss = falling(30)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "out.log").write_text("loss值" + "".join(f"{v:.6f}\n" for v in loss))
    run = one_run(tmp_path / "a" / "out.log")
    # `值` is the word "value" glued to the name (#24): the series is the loss, as its reader calls it
    assert set(run.frame["metric"]) == {"loss"} and infer_role("loss值") == "loss"
    assert series(run, "loss") == (list(range(30)), pytest.approx(loss, abs=1e-6))


def test_a_glued_word_naming_no_measure_or_a_block_file_stays_as_before(tmp_path):
    from spikelens.importers.barenumbers import glued_label

    assert glued_label(["epoch1", "0.5", "0.4"]) is None  # `epoch` names no measure
    assert glued_label(["loss1", "0.5", "acc", "0.4"]) is None  # not bare numbers after it
    loss = falling(30)
    (tmp_path / "history.txt").write_text("loss\n" + "".join(f"{v}\n" for v in loss)
                                          + "val_loss\n" + "".join(f"{v + 0.1}\n" for v in loss))
    assert set(one_run(tmp_path / "history.txt").frame["metric"]) == {"loss", "val_loss"}
