"""What stands for the loss of a run that names none (#24): a total printed as its abbreviation
(`Tot:` beside a PINN's residual terms), a VAE's reconstruction error beside its KL. And a KL
whose very first point is its largest (a VAE's KL starts high and falls as the posterior settles)
is the start of the curve, not a jump: there is no level before it to jump from (#25). Runs are
text logs as a print loop writes them."""
from __future__ import annotations

import math

import numpy as np

from conftest import loud, only_run
from spikelens.frame import infer_roles


def test_tot_and_recon_stand_for_the_loss_of_a_run_that_names_none():
    assert infer_roles(["Tot", "pde", "bc", "lr"])["Tot"] == "loss"
    assert infer_roles(["train_tot", "ic"])["train_tot"] == "loss"
    assert infer_roles(["Recon", "KL", "Phys"])["Recon"] == "loss"


def test_a_named_loss_keeps_tot_and_recon_as_they_were():
    roles = infer_roles(["loss", "Tot", "Recon", "totals", "total_steps"])
    assert roles["loss"] == "loss"
    assert {roles[m] for m in ("Tot", "Recon", "totals", "total_steps")} == {"other"}
    # an RL run is judged by its reward: a reconstruction error beside it does not stand for a loss
    assert infer_roles(["reward", "recon"])["recon"] != "loss"


def _vae_log(path, kl):
    lines = [f"epoch {i + 1} | Recon: {200 * math.exp(-i / 40) + 20:.4f} | KL: {k:.4f} | Phys: {0.1 / (i + 1):.5f}"
             for i, k in enumerate(kl)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path.parent


def test_a_kl_that_starts_high_is_no_jump(tmp_path):
    rng = np.random.default_rng(3)
    kl = 0.06 * np.exp(0.2 * rng.standard_normal(120))
    kl[0] = 39.8  # the first epoch's KL, before the posterior moved toward the prior
    run = only_run(_vae_log(tmp_path / "vae" / "log.txt", kl))
    assert run.stats["main_metric"] == "Recon"
    assert not [f for f in run.findings if f.kind == "spike" and f.metric == "KL"]
    assert not loud(run)


def test_a_kl_that_jumps_after_its_start_is_still_a_spike(tmp_path):
    rng = np.random.default_rng(3)
    kl = 0.06 * np.exp(0.2 * rng.standard_normal(120))
    kl[60] = 39.8
    run = only_run(_vae_log(tmp_path / "vae" / "log.txt", kl))
    (spike,) = [f for f in run.findings if f.kind == "spike" and f.metric == "KL"]
    assert spike.peak_step == 61 and spike.severity == "warning"
