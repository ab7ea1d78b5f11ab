"""A seed the run draws for itself at every start is no name of a run (`textsignals._RANDOM_SEED`):
detectron2 prints `Using a generated random seed 8867425` at each launch, a script a drawn
`seed=2871650374`; another number at every relaunch, it made a launch killed a third of the
way and started again read as another run of a seed sweep, which hid the death (SL306 info,
`ended.relaunch_crash_findings`). A seed the user set (`seed=3` after `seed=2`) still names the run of a
sweep. Fixtures: console logs of a training script written here as it prints them, launch after launch."""
from __future__ import annotations

import numpy as np

from appended_runs import clean_loss, launches_log as _log, relaunch_deaths as _died


def _two(seed=0):
    rng = np.random.default_rng(seed)
    return clean_loss(300, rng), clean_loss(300, rng)


def test_SL306_a_generated_random_seed_per_start_does_not_hide_a_death(tmp_path):
    a, b = _two()
    launches = [("[11/16 02:58:06] d2.utils.env INFO: Using a generated random seed 8867425\n", a[:100]),
                ("[11/16 04:44:54] d2.utils.env INFO: Using a generated random seed 56124812\n", b)]
    (f,) = _died(_log(tmp_path / "train.log", launches))
    assert f.start_step == 100 and "died there" in f.message


def test_SL306_a_long_drawn_seed_in_the_settings_does_not_hide_a_death(tmp_path):
    a, b = _two(1)
    launches = [("Namespace(lr=0.001, batch_size=32, seed=2871650374)\n", a[:120]),
                ("Namespace(lr=0.001, batch_size=32, seed=1045539216)\n", b)]
    (f,) = _died(_log(tmp_path / "train.log", launches))
    assert f.start_step == 120


def test_SL306_a_seed_the_user_set_still_names_a_run_of_a_sweep(tmp_path):
    a, b = _two(2)
    launches = [("Namespace(lr=0.001, batch_size=32, seed=2)\n", a[:100]), ("Namespace(lr=0.001, batch_size=32, seed=3)\n", b)]
    assert _died(_log(tmp_path / "train.log", launches)) == []
