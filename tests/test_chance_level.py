"""A loss at ln(k) is at chance only where the run agrees (`plateaus.not_chance`, issue 25): ln(k) is
the level of one cross-entropy over k outcomes, so a classifier that started at ln(1000) (its
untrained level) and learned down to 4.6 is not at ln(100), and a detector's total of logged terms
(giou + conf + cls) that settles at 1.10 is not at ln(3). Dev: three loud 'chance' plateaus
(PaddleClas on ImageNet at ln 100, YOLOv3 at ln 49152, YOLOX at ln 3) and a diffusion LM at
ln(32768) that had started at ln(128k). The look-alikes still fire: a run that stays at its own
starting chance level, a loss at chance beside a sliver of an auxiliary term.
Fixtures: TensorBoard event files written by the real writer."""
from __future__ import annotations

import sys

import numpy as np

from conftest import FIXTURES, only_run, loud

sys.path.insert(0, str(FIXTURES))
from writers.curve_kinds import _tb  # noqa: E402

N = 600


def _settles(start: float, level: float, seed: int, fall_share: float = 0.3) -> np.ndarray:
    """A loss from `start` down to `level` over the first `fall_share` of the run, then flat within 0.5%."""
    rng = np.random.default_rng(seed)
    t = np.arange(N)
    fall = level + (start - level) * np.exp(-t / (fall_share * N / 5))
    return fall * np.exp(0.005 * rng.standard_normal(N))


def _chance(run):
    return [f for f in run.findings if f.kind == "plateau" and f.evidence.get("reading") == "chance"]


def test_a_classifier_that_learned_from_ln_1000_down_to_ln_100_is_not_at_chance(tmp_path):
    run = only_run(_tb(tmp_path / "imagenet", {"train/loss": _settles(np.log(1000), np.log(100) * 1.005, 1)}))
    assert _chance(run) == [] and [f for f in loud(run) if f.kind == "plateau"] == []


def test_a_classifier_that_stayed_at_its_starting_ln_1000_is_at_chance(tmp_path):
    rng = np.random.default_rng(2)
    run = only_run(_tb(tmp_path / "stuck", {"train/loss": np.log(1000) * np.exp(0.004 * rng.standard_normal(N))}))
    (flat,) = [f for f in loud(run) if f.kind == "plateau"]
    assert flat.evidence["chance_classes"] == 1000


def test_a_detectors_total_of_logged_terms_at_1_10_is_not_ln_3(tmp_path):
    giou, conf, cls = _settles(4.0, 0.45, 3), _settles(3.0, 0.40, 4), _settles(1.5, 0.25, 5)
    run = only_run(_tb(tmp_path / "yolo", {"train/total_loss": giou + conf + cls, "train/iou_loss": giou,
                                           "train/conf_loss": conf, "train/cls_loss": cls}))
    assert abs(float(np.median((giou + conf + cls)[-200:])) - np.log(3)) < 0.02 * np.log(3)
    assert _chance(run) == [] and [f for f in loud(run) if f.kind == "plateau"] == []


def test_a_loss_at_ln_3_beside_a_sliver_of_an_auxiliary_term_is_still_at_chance(tmp_path):
    rng = np.random.default_rng(6)
    ce = np.log(3) * np.exp(0.004 * rng.standard_normal(N))
    aux = 0.002 * np.exp(0.1 * rng.standard_normal(N))
    run = only_run(_tb(tmp_path / "aux", {"train/loss": ce + aux, "train/ce_loss": ce, "train/aux_loss": aux}))
    (flat,) = [f for f in loud(run) if f.kind == "plateau"]
    assert flat.metric == "train/loss" and flat.evidence["chance_classes"] == 3
