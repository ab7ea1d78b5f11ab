"""A bad batch in a short run (#25: a 54-epoch GNN whose loss jumped 5.8x and 5.0x for one epoch, a
3.6x jump beside them): the bar a one-step jump must clear is twice the run's own noise tail, and in
a short run the 99th percentile of its other moves is its largest other move, which a smaller bad
batch sets. The tail leaves out the few largest moves (`spikes.noise_quantile`). A short run whose
every few epochs jump 2-4x still has no bad batches. Written as Lightning's CSVLogger writes
metrics.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics
from spikelens.detect.spikes import noise_quantile


def _spikes(tmp_path, loss) -> list:
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("epoch,step,train_loss\n" + "\n".join(f"{i},{i},{v:.6g}" for i, v in enumerate(loss)) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path.parent)
    return [f for r in report.runs for f in r.findings if f.kind == "spike" and f.severity != "info"]


def _smooth(n: int, seed: int) -> np.ndarray:
    return 0.6 * np.exp(-np.arange(n) / 200) * (1 + 0.04 * np.random.default_rng(seed).standard_normal(n))


def test_two_bad_batches_in_a_54_epoch_run_are_listed(tmp_path):
    loss = _smooth(54, 1)
    loss[30] *= 5.8
    loss[[14, 22]] *= 3.6  # (below the bad-batch ratio: they set the 99th percentile of the other moves)
    loss[45] *= 6.5
    (f,) = _spikes(tmp_path, loss)
    assert f.evidence["bad_batch"] and f.evidence["steps"] == [30, 45] and "bad batches" in f.message


def test_a_short_run_whose_epochs_jump_2_to_4x_has_no_bad_batches(tmp_path):
    """Every fifth epoch 2-4x its neighbours: a 5.5x one is the tail of that noise."""
    rng = np.random.default_rng(2)
    loss = _smooth(54, 3)
    loss[2::5] *= rng.uniform(2.0, 4.0, loss[2::5].size)
    loss[31] = 5.5 * loss[30]
    assert _spikes(tmp_path, loss) == []


def test_the_noise_quantile_leaves_out_the_largest_moves_of_a_short_run():
    assert noise_quantile(50) == 0.94 and noise_quantile(5000) == 0.99
