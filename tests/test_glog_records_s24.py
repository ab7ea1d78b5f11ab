"""Caffe's solver log, as glog prints it: a record is the `Iteration N, loss = x` line and one `Train net
output #k: name = v` line a term after it; its step is the iteration (not the order of the lines), and the
same when a launcher's time stamp, a bracketed time or a rank tag stands before glog's header (prefixes
stack: the header is still no part of the message) (#24).
"""
from __future__ import annotations

import math

import polars as pl
import pytest

from spikelens.api import load_runs

EVERY = 500


def _loss(i: int) -> float:
    return round(9 * math.exp(-i / 30) + 1, 4)


def _caffe(n: int) -> list[str]:
    lines = ["I0613 17:29:41.490244  1860 solver.cpp:48] Initializing solver from parameters: ",
             "base_lr: 0.1", "max_iter: 200000", "lr_policy: \"poly\""]
    for i in range(n):
        it, loss = i * EVERY, _loss(i)
        lines += [f"I0613 17:{29 + i // 60:02d}:{i % 60:02d}.112738  1860 solver.cpp:228] Iteration {it}, loss = {loss}",
                  f"I0613 17:29:58.112772  1860 solver.cpp:244]     Train net output #0: accuracy = {min(i / n, 1):.4g}",
                  f"I0613 17:29:58.112792  1860 solver.cpp:244]     Train net output #1: center_loss = {loss / 9:.6g} "
                  f"(* 0.008 = {loss / 9 * 0.008:.6g} loss)",
                  f"I0613 17:29:58.112803  1860 solver.cpp:244]     Train net output #2: loss = {loss - 0.004} "
                  f"(* 1 = {loss - 0.004} loss)",
                  f"I0613 17:29:58.112829  1860 sgd_solver.cpp:106] Iteration {it}, lr = {0.1 * (1 - it / 200000):.6g}"]
    return lines


@pytest.mark.parametrize("prefix", ["", "2024-05-01 12:00:00,123 ", "[12:00:01] ", "[rank0]: "])
def test_a_caffe_record_over_several_lines_steps_by_its_iteration(tmp_path, prefix):
    n = 40
    path = tmp_path / "log.txt"
    path.write_text("\n".join(prefix + line if line else line for line in _caffe(n)) + "\n")
    (run,) = load_runs(path)
    assert run.meta["step.from"] == "step"
    want = [i * EVERY for i in range(n)]
    for metric in ("accuracy", "center_loss", "lr"):
        got = run.frame.filter(pl.col("metric") == metric).sort("seq")
        assert got.get_column("step").to_list() == want, metric
    center = run.frame.filter(pl.col("metric") == "center_loss").sort("seq").get_column("value").to_list()
    assert center[:2] == [float(f"{_loss(0) / 9:.6g}"), float(f"{_loss(1) / 9:.6g}")]
    # `(* 0.008 = 0.004 loss)` is the term's weighted share, no running average of it
    assert "center_loss_avg" not in set(run.frame.get_column("metric").cast(pl.String))
