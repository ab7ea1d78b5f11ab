"""A console bar's counter followed by its word (`59783/65340 iters  Epoch: [164] [250/363]`): the
iteration, which counts the whole run, is the step, not the epoch; in the same log a later launch of
another set-up (`Epoch: [3] [250/726]`, no global count) counts by its epoch and batch. The lines are
written as PaddleDetection's trainer prints them (`ppdet.engine INFO:` after a `[MM/DD HH:MM:SS]` stamp).
"""
from __future__ import annotations

import math

import polars as pl

from spikelens.api import load_runs

PER_EPOCH = 40  # batches an epoch in the semi-supervised launches
EPOCHS = 6
SUP_PER_EPOCH = 30  # batches an epoch in the supervised launch
SUP_EPOCHS = 4


def _semi(it: int, epoch: int, batch: int, total: int) -> str:
    loss = 30 * math.exp(-it / 200) + 2
    return (f"[03/15 07:41:23] ppdet.engine INFO: {it:>6}/{total} iters Epoch: [{epoch}] [{batch:>5}/{PER_EPOCH}] "
            f"learning_rate: 0.000100 sup_loss_class: {loss / 4:.6f} sup_loss_bbox: {loss / 8:.6f} "
            f"unsup_loss_class: {loss / 5:.6f} loss: {loss:.6f} eta: 1 day, 0:31:22 batch_cost: 2.5055 "
            f"data_cost: 0.0018 ips: 1.5965 images/s")


def _sup(epoch: int, batch: int) -> str:
    loss = 9 * math.exp(-(epoch * SUP_PER_EPOCH + batch) / 50) + 1
    return (f"[03/17 11:41:54] ppdet.engine INFO: Epoch: [{epoch}] [{batch:>3}/{SUP_PER_EPOCH}] "
            f"learning_rate: 0.000100 loss_class: {loss / 3:.6f} loss_bbox: {loss / 6:.6f} loss: {loss:.6f} "
            f"eta: 0:31:22 batch_cost: 1.2 data_cost: 0.0018 ips: 3.1 images/s")


def _log(tmp_path, killed_at_epoch: int | None = 3):
    total = PER_EPOCH * EPOCHS
    lines = ["[03/15 07:41:20] ppdet.engine INFO: Init Model successfully!"]
    # a first launch killed in epoch 3, then a launch that trains all its epochs
    for stop in (killed_at_epoch, EPOCHS):
        for epoch in range(stop):
            for batch in range(0, PER_EPOCH, 10):
                lines.append(_semi(epoch * PER_EPOCH + batch + 1, epoch, batch, total))
        if stop != EPOCHS:
            lines += ["Traceback (most recent call last):", "SystemError: (Fatal) DataLoader process (pid 14823) "
                      "exited is killed by signal: Killed.", "[03/15 09:00:00] ppdet.engine INFO: Init Model successfully!"]
    lines.append("[03/17 11:41:50] ppdet.engine INFO: Init Model successfully!")
    for epoch in range(SUP_EPOCHS):
        for batch in range(0, SUP_PER_EPOCH, 10):
            lines.append(_sup(epoch, batch))
    path = tmp_path / "workerlog.0"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_iteration_counter_beside_the_epoch_is_the_step_and_another_launch_counts_its_epochs(tmp_path):
    (run,) = load_runs(_log(tmp_path))
    loss = run.frame.filter(pl.col("metric") == "loss").sort("seq")
    by_launch = loss.group_by("segment", maintain_order=True).agg(pl.col("step"))
    steps = by_launch.get_column("step").to_list()
    iters = [e * PER_EPOCH + b + 1 for e in range(EPOCHS) for b in range(0, PER_EPOCH, 10)]
    # the killed launch and the full one count their iterations (not epochs 0..5)
    assert steps[0] == iters[:3 * PER_EPOCH // 10]
    assert steps[1] == iters
    # the supervised launch has no global count: epoch and batch compose its step
    assert steps[2] == [e * SUP_PER_EPOCH + b for e in range(SUP_EPOCHS) for b in range(0, SUP_PER_EPOCH, 10)]
    values = loss.filter(pl.col("segment") == by_launch.get_column("segment")[1]).get_column("value").to_list()
    assert values[-1] == round(30 * math.exp(-iters[-1] / 200) + 2, 6)
