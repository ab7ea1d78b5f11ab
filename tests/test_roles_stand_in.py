"""Runs that log no metric named as a loss are still checked through what stands for one
(a perplexity, the terms of an adversarial objective), and a NaN in a metric that is not a
loss is told as a note, not an alarm, and folded into the loss's NaN when both go.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli
from spikelens import api
from spikelens.frame import infer_roles


def write_csv(path, columns: dict[str, list[float]]):
    names = list(columns)
    rows = zip(*columns.values())
    path.write_text(",".join(["step", *names]) + "\n"
                    + "".join(",".join([str(i), *("nan" if isinstance(v, float) and math.isnan(v) else repr(v) for v in r)]) + "\n"
                              for i, r in enumerate(rows)))
    return path


def falling(n, start=6.0, end=2.0, seed=0, noise=0.01):
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, n)
    return [float(v) for v in np.round((end + (start - end) * np.exp(-6 * x)) * np.exp(noise * rng.standard_normal(n)), 6)]


@pytest.mark.parametrize("metrics, expected", [
    (["ppl", "lr"], {"ppl": "loss"}),
    (["eval/perplexity", "lr"], {"eval/perplexity": "eval_loss"}),
    (["G_GAN", "G_GAN_Feat", "D_fake", "D_real", "acc"], {"G_GAN": "loss", "D_fake": "loss", "D_real": "loss", "acc": "accuracy"}),
    (["G_A", "D_A", "cycle_A"], {"G_A": "loss", "D_A": "loss"}),
    (["train/loss", "ppl", "D_fake"], {"train/loss": "loss", "ppl": "perplexity", "D_fake": "other"}),
    (["D", "Dice", "Grad"], {"D": "other", "Dice": "accuracy", "Grad": "other"}),  # a dice is a score, not a loss
])
def test_what_stands_for_a_loss_only_when_none_is_named(metrics, expected):
    roles = infer_roles(metrics)
    assert {m: roles[m] for m in expected} == expected


def test_an_override_is_never_replaced_by_a_stand_in():
    assert infer_roles(["ppl", "acc"], {"ppl": "other"})["ppl"] == "other"


def test_perplexity_only_run_is_checked_and_shown_as_logged(tmp_path):
    ppl = [float(round(math.exp(v), 4)) for v in falling(40, start=8.5, end=0.6)]
    f = write_csv(tmp_path / "sft.csv", {"ppl": ppl})
    res = run_cli("analyze", str(f), "--format", "json")
    assert res.returncode == 0, res.stderr
    run = json.loads(res.stdout)["runs"][0]
    assert run["metrics"]["ppl"] == "loss"
    report = api.analyze(f, jobs=1)
    stats = report.runs[0].stats
    assert stats["first_value"] == pytest.approx(ppl[0]) and stats["last_value"] == pytest.approx(ppl[-1])


def test_adversarial_terms_only_run_is_read_not_refused(tmp_path):
    n = 44
    f = write_csv(tmp_path / "gan.csv", {"G_GAN": falling(n, 3.0, 2.5, seed=1, noise=0.2),
                                        "D_fake": falling(n, 0.7, 0.5, seed=2, noise=0.2),
                                        "acc": [0.5] * n})
    res = run_cli("analyze", str(f), "--format", "json")
    assert res.returncode in (0, 1), res.stderr  # read and checked: not exit 2 "no loss"


def test_nan_in_a_metric_that_is_not_a_loss_is_a_note_with_the_losses_finite(tmp_path):
    n = 60
    acc = [0.5 + 0.005 * i for i in range(n)]
    for i in (20, 35, 36):
        acc[i] = float("nan")
    f = write_csv(tmp_path / "run.csv", {"loss": falling(n), "acc": acc})
    report = api.analyze(f, jobs=1)
    (nan,) = [x for x in report.runs[0].findings if x.kind == "nan"]
    assert nan.metric == "acc" and nan.severity == "info" and nan.start_step == 20
    assert "losses stay finite" in nan.message


def test_nan_in_a_metric_with_the_loss_is_one_finding_on_the_loss(tmp_path):
    n = 80
    loss = falling(n)
    acc = [0.5] * n
    for i in range(50, n):
        loss[i] = float("nan")
        acc[i] = float("nan")
    f = write_csv(tmp_path / "run.csv", {"loss": loss, "acc": acc})
    report = api.analyze(f, jobs=1)
    nans = [x for x in report.runs[0].findings if x.kind == "nan"]
    assert [x.metric for x in nans] == ["loss"] and nans[0].severity == "error"
