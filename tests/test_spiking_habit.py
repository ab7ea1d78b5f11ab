"""A curve that spikes and comes back dozens of times spikes as its normal behaviour (#25: a bare
loss log with a thousand recovered spikes, a detection head's component with 26, both labelled
clean): even its largest spike is a note, unless it dwarfs the others. Written as Lightning's
CSVLogger writes metrics.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics

N = 3000


def _spikes(tmp_path, name: str, heights: list[float]) -> list:
    rng = np.random.default_rng(11)
    loss = (1.0 + np.exp(-np.arange(N) / 300)) * (1 + 0.01 * rng.standard_normal(N))
    gaps = rng.integers(30, 160, len(heights))  # at no fixed period (that would be a sawtooth)
    at = 150 + np.cumsum(gaps)
    for a, h in zip(at, heights):
        loss[a:a + 3] *= np.array([h, (1 + h) / 2, (3 + h) / 4])  # up for three steps, then back
    path = tmp_path / name / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    rows = ["epoch,step,train_loss"] + [f"{i // 300},{i},{v:.6g}" for i, v in enumerate(loss)]
    path.write_text("\n".join(rows) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path.parent)
    return [f for r in report.runs for f in r.findings if f.kind == "spike"]


def test_thirty_similar_spikes_that_came_back_are_all_notes(tmp_path, no_workers):
    heights = list(np.random.default_rng(1).uniform(2.5, 6.0, 30))
    found = _spikes(tmp_path, "habit", heights)
    assert len(found) >= 20 and all(f.severity == "info" for f in found)
    assert any(f.evidence.get("note_because") == "spiking_habit" for f in found)


def test_a_spike_that_dwarfs_a_habit_of_small_ones_stays_the_alarm(tmp_path, no_workers):
    heights = list(np.random.default_rng(2).uniform(2.5, 4.0, 30))
    heights[15] = 40.0
    found = _spikes(tmp_path, "dwarfs", heights)
    loud = [f for f in found if f.severity != "info"]
    assert len(found) >= 20 and len(loud) == 1 and loud[0].magnitude > 20
