"""A classifier stuck at chance for most of its run that broke out in its last epochs (#25, session 25): the stuck
stretch is the run's story, from its first epochs, even though what followed is shorter than half of it (its fall
is measured to the end of the run). A run that fell early and converged shows no such stretch. Written as
`np.savetxt('train_loss.txt', losses)` writes a per-batch loss, one a line."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _plateaus(path):
    with diagnostics.collecting():
        return [f for r in api.analyze(str(path)).runs for f in r.findings if f.kind == "plateau"]


def test_a_long_stretch_at_chance_broken_out_of_in_the_last_epochs_is_the_plateau(tmp_path):
    rng = np.random.default_rng(11)
    n, stuck = 3000, 2550  # 85% at ln 2, then a memorising fall to near zero
    level = np.r_[np.full(stuck, np.log(2)), np.log(2) * np.exp(-np.arange(n - stuck) / 80)]
    loss = level * np.exp(0.05 * rng.standard_normal(n))
    np.savetxt(tmp_path / "train_loss.txt", loss, fmt="%.6f")
    found = [f for f in _plateaus(tmp_path / "train_loss.txt") if f.evidence.get("reading") == "breakthrough"]
    assert found and found[0].start_step <= 150 and found[0].end_step >= 2000
    assert found[0].evidence["chance_classes"] == 2 and "by the end of the run" in found[0].message


def test_a_run_that_fell_early_and_converged_has_no_stuck_stretch(tmp_path):
    rng = np.random.default_rng(12)
    n = 3000
    loss = (0.05 + 0.65 * np.exp(-np.arange(n) / 150)) * np.exp(0.05 * rng.standard_normal(n))
    np.savetxt(tmp_path / "train_loss.txt", loss, fmt="%.6f")
    assert not [f for f in _plateaus(tmp_path / "train_loss.txt") if f.evidence.get("reading") == "breakthrough"]
