"""One mechanism folds a frozen curve into the never-learned plateau it belongs to (#25): a frozen
loss beside a reward that never rose (the cause: nothing was updated), a frozen score beside a loss
stuck at chance or on the score that never rose above zero (the same symptom). Findings built as the
detectors emit them; the fold is judged alone (fast, and each case can fail on its own)."""
from __future__ import annotations

from spikelens.detect.base import RunContext
from spikelens.detect.reconcile import _fold_frozen
from spikelens.model.finding import Finding

ROLES = {"reward": "reward", "policy_loss": "loss", "loss": "loss", "val_acc": "accuracy", "val_recall_at_10": "accuracy"}


def _plateau(metric, reading, start=0, end=1000, **ev):
    return Finding(kind="plateau", code="SL205", run="r", metric=metric, severity="warning", message=f"{metric} stuck",
                   start_step=start, end_step=end, evidence={"reading": reading, **ev})


def _frozen(metric, start=0, end=1000, severity="warning", **ev):
    return Finding(kind="plateau", code="SL208", run="r", metric=metric, severity=severity,
                   message=f"{metric} was exactly 0", start_step=start, end_step=end,
                   evidence={"reading": "frozen", "level": 0.25, **ev})


def _fold(plateau, *others):
    drop: set[int] = set()
    _fold_frozen(plateau, [plateau, *others], RunContext(run="r", roles=ROLES, series={}), drop)
    return drop


def test_a_frozen_loss_beside_a_reward_that_never_rose_is_its_cause():
    never, frozen = _plateau("reward", "never", higher_is_better=True), _frozen("policy_loss", 100, 1000)
    assert _fold(never, frozen) == {id(frozen)}
    assert never.evidence["frozen"]["metric"] == "policy_loss" and "nothing was being updated, which is why" in never.message


def test_a_frozen_score_beside_a_loss_stuck_at_chance_is_the_same_symptom():
    stuck, frozen = _plateau("loss", "chance"), _frozen("val_acc", 200, 900, higher_is_better=True)
    assert _fold(stuck, frozen) == {id(frozen)}
    assert stuck.evidence["frozen"]["metric"] == "val_acc" and "which is why" not in stuck.message


def test_a_score_at_zero_and_its_frozen_reading_are_one_finding():
    zero = _plateau("val_recall_at_10", "never", higher_is_better=True)
    frozen = _frozen("val_recall_at_10", higher_is_better=True)
    assert _fold(zero, frozen) == {id(frozen)} and "exactly 0.25 at every evaluation" in zero.message


def test_a_frozen_curve_over_another_stretch_stays_its_own_finding():
    never = _plateau("reward", "never", 0, 1000, higher_is_better=True)
    assert not _fold(never, _frozen("policy_loss", 800, 1000))  # a fifth of the reward's plateau: no cause
    assert not _fold(_plateau("loss", "chance", 0, 300), _frozen("val_acc", 200, 1000, higher_is_better=True))


def test_a_frozen_loss_beside_a_stuck_loss_is_not_folded():
    assert not _fold(_plateau("loss", "never"), _frozen("policy_loss"))


def test_a_zero_score_whose_frozen_note_saw_another_score_rise_becomes_a_note():
    zero = _plateau("val_recall_at_10", "never", higher_is_better=True)
    note = _frozen("val_recall_at_10", severity="info", higher_is_better=True, other_score_moved="val_acc")
    assert not _fold(zero, note) and zero.severity == "info" and "val_acc rose meanwhile" in zero.message
