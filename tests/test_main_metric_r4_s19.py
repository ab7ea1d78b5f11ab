"""The main loss among losses that all carry an aggregate word or a member's number (#24): an epoch CSV whose
every loss is an `_avg` is judged by its total (`loss_total_avg`), not by its first term; a group-DRO log's
per-group losses (`avg_loss_group:0`) are members, the run's loss is the one over all (`avg_actual_loss`)."""
from __future__ import annotations

import csv
import math


from spikelens import api
from spikelens.detect.base import main_name_score


def _main(path) -> str | None:
    (run,) = api.analyze(path, jobs=1).runs
    return run.stats.get("main_metric")


def _csv(path, header, rows) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def test_every_loss_averaged_the_total_is_main(tmp_path):
    terms = ["loss_source_avg", "loss_distill_avg", "loss_domain_avg", "loss_total_avg"]
    rows = [[e] + [round((k + 1) * math.exp(-e / 20) + 0.1, 4) for k in range(4)] for e in range(4, 60, 5)]
    _csv(tmp_path / "epoch_metrics.csv", ["epoch", *terms, "mAP50"], [r + [0.3] for r in rows])
    assert _main(tmp_path / "epoch_metrics.csv") == "loss_total_avg"
    assert main_name_score("loss_source_avg", "loss", terms) == 0


def test_a_running_mean_beside_its_loss_and_a_mean_of_terms_stay_as_before():
    assert main_name_score("Loss_avg", "loss", ["Loss", "Loss_avg"]) == 0
    assert main_name_score("mean_loss", "loss", ["mean_loss", "loss_cls", "loss_box"]) == 2


def test_per_group_losses_are_members_not_the_runs_loss(tmp_path):
    names = [f"avg_loss_group:{g}" for g in range(3)] + ["avg_actual_loss", "reg_loss"]
    rows = [[e, 0] + [round((g + 2) * math.exp(-e / 9) + 0.2, 4) for g in range(3)]
            + [round(3 * math.exp(-e / 9) + 0.2, 4), 0.01] for e in range(40)]
    _csv(tmp_path / "train.csv", ["epoch", "batch", *names], rows)
    assert _main(tmp_path / "train.csv") == "avg_actual_loss"
    assert main_name_score("avg_loss_group:0", "loss", names) == 0
    assert main_name_score("loss_head_3", "loss") == 0 and main_name_score("loss", "loss") == 1
