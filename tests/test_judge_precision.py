"""Loud findings only where the run says something went wrong (#25), on CSV files as training
scripts write them (`csv.writer` rows):
- a loss printed as the same value on every step while the run's other training losses move is a
  constant of the logging (an unused head, an average of a flag), not a model that stopped
  updating; when every loss stands still it stays the warning it was;
- an actor's loss (TD3's `ALoss`, the negated value its critic gives its actions) that jumps and
  stays up is a note, where the same curve as a training loss is an alarm."""
from __future__ import annotations

import csv

import numpy as np

import spikelens

LOUD = ("warning", "error")


def _csv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _detector_losses(n: int, seed: int, bbox_moves: bool):
    """`loss` printed as exactly 1 on every iteration; `loss_bbox` a falling, noisy term (or
    printed as exactly 0.5 too)."""
    rng = np.random.default_rng(seed)
    it = np.arange(0, 20 * n, 20)
    bbox = 0.2 + 0.6 * np.exp(-it / 400) * np.exp(0.2 * rng.standard_normal(n)) if bbox_moves else np.full(n, 0.5)
    return [(int(i), "1.000000", f"{b:.6f}") for i, b in zip(it, bbox)]


def test_a_loss_frozen_while_another_training_loss_moves_is_a_constant_of_the_log(tmp_path):
    run = _run(_csv(tmp_path / "const" / "log_train.csv", ["iteration", "loss", "loss_bbox"],
                    _detector_losses(60, 1, bbox_moves=True)))
    frozen = [f for f in run.findings if f.kind == "plateau" and f.evidence.get("reading") == "frozen"]
    assert frozen and all(f.severity == "info" and f.evidence.get("constant_term") for f in frozen), frozen
    assert not [f for f in run.findings if f.kind == "plateau" and f.severity in LOUD]
    assert not any(f.evidence.get("never_learned") for f in run.findings)


def test_a_loss_frozen_while_every_loss_stands_still_stays_a_warning(tmp_path):
    run = _run(_csv(tmp_path / "still" / "log_train.csv", ["iteration", "loss", "loss_bbox"],
                    _detector_losses(60, 1, bbox_moves=False)))
    frozen = [f for f in run.findings if f.kind == "plateau" and f.evidence.get("reading") == "frozen"
              and f.severity == "warning"]
    assert frozen and not frozen[0].evidence.get("constant_term")


def _td3(name: str):
    """200 episodes: the actor's loss near 56 that jumps 8x at episode 120 and stays there (the
    critic's estimates moved); the critic's loss falls."""
    rng = np.random.default_rng(2)
    e = np.arange(200)
    actor = np.where(e < 120, 56.0, 470.0) * np.exp(0.03 * rng.standard_normal(200))
    critic = 5 * np.exp(-e / 60) + 0.1 + 0.01 * rng.standard_normal(200)
    return [(int(i), f"{a:.4f}", f"{c:.4f}") for i, a, c in zip(e, actor, critic)], ["episode", name, "CLoss"]


def test_an_actor_loss_that_jumps_and_stays_up_is_a_note(tmp_path):
    rows, header = _td3("ALoss")
    run = _run(_csv(tmp_path / "td3" / "train.csv", header, rows))
    on_actor = [f for f in run.findings if f.metric == "ALoss" and f.kind in ("spike", "level_shift", "divergence")]
    assert on_actor and not [f for f in on_actor if f.severity in LOUD], on_actor
    assert any("actor" in f.message for f in on_actor)


def test_the_same_jump_on_a_training_loss_is_an_alarm(tmp_path):
    rows, header = _td3("loss")
    run = _run(_csv(tmp_path / "sup" / "train.csv", header, rows))
    assert [f for f in run.findings if f.metric == "loss" and f.severity in LOUD]


def _per_step(path, loss):
    return _csv(path, ["step", "loss"], [(i, f"{v:.6f}") for i, v in enumerate(loss)])


def test_a_loss_whose_batches_spread_widely_around_ln2_is_not_at_chance(tmp_path):
    """A flow-matching fine-tune's per-step MSE spreads 0.4-1.1 around a median of 0.693: its median
    is ln 2 by chance, its batches are predicted per input; a classifier stuck at chance logs ln 2
    within a fraction of a percent on every batch (the control)."""
    rng = np.random.default_rng(7)
    wide = np.log(2) * np.exp(0.35 * rng.standard_normal(3000))
    tight = np.log(2) * np.exp(0.002 * rng.standard_normal(3000))
    for name, loss, at_chance in (("wide", wide, False), ("tight", tight, True)):
        run = _run(_per_step(tmp_path / name / "train_log.csv", loss))
        chance = [f for f in run.findings if f.kind == "plateau" and f.evidence.get("chance_classes") == 2]
        assert bool(chance) == at_chance, (name, [f.message for f in run.findings])


def test_a_jump_two_steps_before_the_log_ends_is_no_spike_that_never_came_back(tmp_path):
    """A smooth loss that jumps 3x two points before the end of the log (the run was killed):
    whether it came back cannot be told; the same jump with 60 points after it that stay up can."""
    rng = np.random.default_rng(9)
    base = 2.0 + 3.0 * np.exp(-np.arange(400) / 60) + 0.01 * rng.standard_normal(400)
    late = base.copy()
    late[-3:] *= 3.0
    run = _run(_per_step(tmp_path / "late" / "train_log.csv", late))
    jumps = [f for f in run.findings if f.kind == "spike" and f.metric == "loss"]
    assert jumps and not [f for f in jumps if f.severity in LOUD], [f.message for f in jumps]
    assert any("too soon to tell" in f.message for f in jumps)
    stays = base.copy()
    stays[-60:] *= 3.0
    run = _run(_per_step(tmp_path / "stays" / "train_log.csv", stays))
    assert [f for f in run.findings if f.kind == "spike" and f.metric == "loss" and f.severity in LOUD]


def test_two_scores_that_never_rose_over_the_same_steps_are_one_clause_of_the_verdict():
    from spikelens.model.finding import Finding
    from spikelens.model.report import RunReport
    from spikelens.report.verdict import verdict

    def never(metric):
        return Finding(kind="plateau", code="SL205", run="r", metric=metric, severity="warning", message="never",
                       start_step=1, end_step=14, evidence={"reading": "never", "higher_is_better": True, "level": 0.0})

    run = RunReport(run="r", sources=[], segments=[], metrics={"loss": "loss", "Acc/val": "accuracy",
                                                                 "Acc/train": "accuracy"},
                    findings=[never("Acc/val"), never("Acc/train")], stats={"main_metric": "loss"})
    assert verdict(run) == "never learned: Acc/val, Acc/train never rose (0 over steps 1–14)"


def test_one_loss_stuck_at_chance_in_several_appended_runs_is_one_clause_with_their_spans():
    from spikelens.model.finding import Finding
    from spikelens.model.report import RunReport
    from spikelens.report.verdict import verdict

    def stuck(end, index):
        return Finding(kind="plateau", code="SL205", run="r", metric="train_loss", severity="info", message="stuck",
                       start_step=0, end_step=end,
                       evidence={"reading": "chance", "never_learned": True, "level": 1.3861, "chance_classes": 4,
                                 "session": {"index": index, "of": 4}})

    run = RunReport(run="r", sources=[], segments=[], metrics={"train_loss": "loss"},
                    findings=[stuck(11, 1), stuck(9, 2), stuck(9, 3)], stats={"main_metric": "train_loss"})
    assert verdict(run) == ("never learned in 3 of the 4 runs appended to this log: train_loss stayed at 1.386 "
                            "(ln 4, chance level) over steps 0–11, 0–9")


def _energy(swing: float):
    """A VMC energy per step (negative): -1.354 converging to -1.406 by step 100, Monte Carlo noise
    of 0.0008 over the first 800 steps and 0.0002 after; `swing` adds an alternating swing of that
    share of the level as random swings over steps 300-700 (an unstable optimiser)."""
    rng = np.random.default_rng(11)
    s = np.arange(6000)
    e = -1.406 + 0.052 * np.exp(-s / 30) + np.where(s < 800, 0.0008, 0.0002) * rng.standard_normal(s.size)
    e += np.where((s >= 300) & (s < 700), swing * 1.406 * rng.standard_normal(s.size), 0.0)
    return [(int(i), f"{v:.6f}") for i, v in zip(s, e)]


def test_monte_carlo_noise_of_a_negative_energy_is_no_oscillation(tmp_path):
    run = _run(_csv(tmp_path / "vmc" / "train.csv", ["step", "energy_loss"], _energy(0.0)))
    assert not [f for f in run.findings if f.kind == "oscillation"], [f.message for f in run.findings]


def test_swings_of_a_tenth_of_a_negative_loss_are_an_oscillation(tmp_path):
    run = _run(_csv(tmp_path / "swing" / "train.csv", ["step", "energy_loss"], _energy(0.1)))
    assert [f for f in run.findings if f.kind == "oscillation" and 200 <= f.start_step <= 400], \
        [f.message for f in run.findings]
