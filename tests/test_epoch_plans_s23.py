"""A run that stopped far short of the epochs its log plans (SL306 `ended_early`, info), where the
log counts by another counter than the epoch: `Epoch [5/100] Step 120 Loss ...` (the epoch counter's
total), `Training for up to 30 epochs` over `Epoch 1, batch 10/1920 loss=...` (a banner), HF's
`Num Epochs = 3` over `{'loss': ..., 'epoch': 0.57}` (a fractional epoch is the progress itself).
Lookalikes that stay silent: the same logs run to their last epoch. Fixtures: console logs written
here as the scripts print them."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _ended(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "ended_early"]


def _loss(n):
    return 2.0 * np.exp(-np.arange(n) / 60) + 0.5 + 0.01 * np.random.default_rng(0).standard_normal(n)


def _epoch_counter(epochs, per=20):
    loss = _loss(epochs * per)
    return "".join(f"Epoch [{1 + i // per}/100] Step {10 * i} Loss {v:.4f}\n" for i, v in enumerate(loss))


def _banner(epochs, per=60):
    loss = _loss(epochs * per)
    return "Training for up to 30 epochs on device cuda.\n" + "".join(
        f"Epoch {1 + i // per}, batch {10 * (i % per) + 10}/{10 * per} loss={v:.4f}, lr=0.0008\n" for i, v in enumerate(loss))


def _hf(points, total_epochs=3, per_epoch=33.3):
    loss = _loss(points)
    return (f"***** Running training *****\n  Num examples = 10000\n  Num Epochs = {total_epochs}\n"
            + "".join(f"{{'loss': {v:.4f}, 'learning_rate': 1e-05, 'epoch': {(i + 1) / per_epoch:.2f}}}\n"
                      for i, v in enumerate(loss)))


# ------------------------------------------------------------------ must fire


def test_SL306_a_step_keyed_log_stopped_at_epoch_5_of_100(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(_epoch_counter(5))
    (f,) = _ended(path)
    assert f.severity == "info" and f.evidence["planned_epochs"] == 100 and f.evidence["fraction_done"] < 0.1


def test_SL306_a_banner_plan_over_epoch_and_batch_counters(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(_banner(3))
    (f,) = _ended(path)
    assert f.evidence["planned_epochs"] == 30 and 0.05 < f.evidence["fraction_done"] < 0.15


def test_SL306_hf_console_stopped_a_fifth_of_the_way(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(_hf(20))
    (f,) = _ended(path)
    assert f.evidence["planned_epochs"] == 3 and f.evidence["fraction_done"] < 0.25


# ------------------------------------------------------------------ must stay silent


def test_SL306_logs_that_reached_their_last_epoch_are_quiet(tmp_path):
    done = {"a.log": _epoch_counter(100, per=2), "b.log": _banner(30, per=4), "c.log": _hf(100)}
    for name, text in done.items():
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        (folder / name).write_text(text)
        assert _ended(folder / name) == [], name
