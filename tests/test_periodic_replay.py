"""A loss that repeats itself value for value every N steps (SL303 `repeated_data`, `resume.replay_period`):
the same batches in the same order each epoch on a model whose weights never change, or a loop that logs
stored losses again. Each value equals, to the last digit, the one a period before, over many distinct
values: no chance repeat does that. Silent: a converged loss printed with three decimals (its values repeat
often, never at one distance), a flat loss of a handful of values. Fixtures: a training script's
`losses.txt`, one float a line as `f.write(f"{loss}\\n")` writes it, and a console log."""
from __future__ import annotations

import numpy as np

from conftest import analyzed_run


def _replays(run):
    return [f for f in run.findings if f.kind == "repeated_data" and f.evidence.get("periodic")]


def test_SL303_a_frozen_model_replays_its_epoch_of_losses(tmp_path):
    rng = np.random.default_rng(4)
    epoch = (1.16 + 0.12 * rng.standard_normal(1000)).astype(np.float32)  # torch's float32 losses, as str() writes
    path = tmp_path / "losses.txt"
    path.write_text("".join(f"{float(v)}\n" for v in np.tile(epoch, 3)[:2900]))
    (f,) = _replays(analyzed_run(path))
    assert f.severity == "info" and f.evidence["period_steps"] == 1000 and f.start_step == 1000
    assert f.evidence["replayed_points"] == 1900


def test_SL303_a_converged_loss_printed_with_three_decimals_is_no_replay(tmp_path):
    rng = np.random.default_rng(5)
    loss = 0.8 + 1.5 * np.exp(-np.arange(3000) / 300) + 0.01 * rng.standard_normal(3000)
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {i} | loss {v:.3f}\n" for i, v in enumerate(loss)))
    assert _replays(analyzed_run(path)) == []


def test_SL303_a_flat_loss_of_a_few_values_is_no_replay(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {i} | loss {0.69 + 0.01 * (i % 7):.2f}\n" for i in range(2000)))
    assert _replays(analyzed_run(path)) == []
