"""One pattern names the terms of an adversarial objective (`frame.is_adversarial`, issue 25): the
roles read a run that names no loss by its GAN terms, and significance notes those terms' swings
as the game's. The two used to be separate regexes that knew different spellings: CycleGAN's
`D_A`/`G_B` stood for the loss of a run (frame) and then alarmed as training failures
(significance knew `D_loss`, not `D_A`); `errD` was adversarial for one and not the other.
Fixtures: TensorBoard event files written by the real writer (`fixtures/writers/curve_kinds`)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from spikelens.frame import infer_roles, is_adversarial

from conftest import FIXTURES, only_run, loud

sys.path.insert(0, str(FIXTURES))
from writers.curve_kinds import _decay, _tb  # noqa: E402


@pytest.mark.parametrize("name", ["D_A", "G_B", "errD", "loss_D", "G_GAN", "D_real", "Discriminator Loss",
                                  "gen/loss", "G_VGG", "l_g_gan"])
def test_a_gan_term_is_one_both_where_roles_are_inferred_and_where_events_are_weighed(name):
    assert is_adversarial(name)
    roles = infer_roles([name, "acc", "lr"])  # a run that names no loss: its GAN term stands for it
    assert roles[name] == "loss"


@pytest.mark.parametrize("name", ["loss_general", "loss_dist", "val_loss", "d_model", "gen_len", "disk_io"])
def test_names_that_only_look_like_a_gan_term_are_not_one(name):
    assert not is_adversarial(name)


def _cyclegan(root, n: int = 800):
    """CycleGAN's console names, no `loss` anywhere: the discriminator D_A drops 100x for single
    iterations as the generator catches up (the game), the cycle terms fall smoothly."""
    rng = np.random.default_rng(7)
    d_a = 0.25 * np.exp(0.15 * rng.standard_normal(n))
    for s in (200, 430, 650):
        d_a[s] = 0.002
    d_a[520:540] *= 12  # a stretch where the discriminator loses the game (the generators hover at one level)
    terms = {"D_A": d_a, "G_A": 0.6 * np.exp(0.1 * rng.standard_normal(n)),
             "cycle_A": _decay(n, 2.0, 0.4, 8, 0.03), "D_B": 0.25 * np.exp(0.15 * rng.standard_normal(n)),
             "G_B": 0.6 * np.exp(0.1 * rng.standard_normal(n)), "cycle_B": _decay(n, 2.1, 0.45, 9, 0.03)}
    return _tb(root, terms)


def test_a_cyclegan_run_is_read_by_its_gan_terms_and_their_moves_are_notes_of_the_game(tmp_path):
    run = only_run(_cyclegan(tmp_path))
    assert run.metrics["D_A"] == "loss" and run.metrics["G_B"] == "loss"  # the run names no loss
    assert loud(run) == []  # G_B hovering at one level (the game) was 'never learned'; D_A's swing a spike
    assert run.stats["main_metric"] == "cycle_A"  # the cycle term: the one curve of the game that measures progress
    game = [f for f in run.findings if f.metric in ("D_A", "G_A", "D_B", "G_B")]
    assert game and all(f.severity == "info" and f.evidence["note_because"] == "adversarial" for f in game)
