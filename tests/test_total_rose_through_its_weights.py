"""A total loss that rose through its weights did not diverge (#25): a VAE whose KL weight is annealed
from 0 to 1 over its first 1,200 steps logs a total that climbs from 1.8 to 25 while its reconstruction
and KL terms both fall; that is the weighting, a note. The same total with its terms rising too is the
divergence. Written by TensorBoard's own SummaryWriter."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics

SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter


def _loud(tmp_path, seed: int, terms_rise: bool) -> list:
    rng = np.random.default_rng(seed)
    n = 3000
    t = np.arange(n)
    beta = np.minimum(t / 1200, 1)
    recon = 0.3 + 1.5 * np.exp(-t / 300)
    kl = 20 * np.exp(-t / 2000) + 5
    if terms_rise:
        recon, kl = recon * (1 + t / 1000), kl * (1 + t / 1000)
    total = (recon + beta * kl) * np.exp(0.02 * rng.standard_normal(n))
    with SummaryWriter(str(tmp_path / "vae")) as w:
        for i in range(0, n, 5):
            w.add_scalar("train/loss", total[i], i)
            w.add_scalar("train/recon_loss", recon[i], i)
            w.add_scalar("train/kl_loss", kl[i], i)
            w.add_scalar("train/beta", beta[i], i)
    with diagnostics.collecting():
        report = api.analyze(tmp_path / "vae")
    return [f for r in report.runs for f in r.findings
            if f.severity != "info" and f.metric == "train/loss" and f.kind in ("divergence", "spike")]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_total_that_rose_while_its_terms_fell_is_a_note(tmp_path, seed):
    assert _loud(tmp_path, seed, terms_rise=False) == []


def test_a_total_that_rose_with_its_terms_is_an_alarm(tmp_path):
    assert _loud(tmp_path, 1, terms_rise=True)
