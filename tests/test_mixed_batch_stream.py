"""A per-batch loss whose batches come from a mixed stream (#25): a recommender's loss printed one
value a line, most batches near 0.02 and a share of hard ones at 0.3-1.0, that share larger over some
stretches. Its rises that came back, as spikes or as excursions of its smoothed curve, and its swings
are the stream's own noise: dozens of them, none standing apart, all notes. One stretch of forty
batches at three times the level in an otherwise smooth run stays an alarm. Written as
`numpy.savetxt` writes losses.txt."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _loud(tmp_path, loss: np.ndarray) -> list:
    path = tmp_path / "losses.txt"
    np.savetxt(path, loss, fmt="%.6f")
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.severity != "info"]


def test_the_rises_and_swings_of_a_mixed_batch_stream_are_notes(tmp_path):
    rng = np.random.default_rng(0)
    n = 30000
    trend = 0.02 + 0.1 * np.exp(-np.arange(n) / 3000)
    share = np.full(n, 0.08)
    share[8000:11000] = share[16000:24000] = 0.3  # stretches where hard batches are common
    hard = rng.uniform(size=n) < share
    loss = np.where(hard, rng.uniform(0.3, 1.0, n), trend * np.exp(0.3 * rng.standard_normal(n)))
    assert _loud(tmp_path, loss) == []


def test_a_stretch_of_forty_batches_at_three_times_the_level_stays_an_alarm(tmp_path):
    rng = np.random.default_rng(1)
    n = 6000
    loss = (0.05 + 0.4 * np.exp(-np.arange(n) / 500)) * np.exp(0.05 * rng.standard_normal(n))
    loss[4000:4040] *= 3.0
    found = _loud(tmp_path, loss)
    assert any(f.kind in ("spike", "excursion") and f.start_step is not None and 3990 <= f.start_step <= 4040
               for f in found)
