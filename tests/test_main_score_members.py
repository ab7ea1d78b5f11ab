"""The score a run is read by when it logs no loss (#24): the mean over classes (`map`, `mIoU`,
`macro_f1`), not one class's score beside it (`class_person_ap` among `class_cat_ap`, ...), and F1
beside the precision and recall it combines; names that differ by a measure word (`accuracy_pct`,
`recall_pct`) are other measures, not members of a set. Fixtures written here as an evaluation script's
CSV."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api
from spikelens.detect.base import is_member, main_name_score


def _eval_csv(path, columns, mean_name):
    rng = np.random.default_rng(0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(",".join(["epoch", *columns, *([mean_name] if mean_name else [])]) + "\n")
        for e in range(40):
            per = [min(0.9, 0.2 + 0.02 * e + 0.05 * rng.random()) for _ in columns]
            f.write(",".join([str(e), *(f"{a:.4f}" for a in per), *([f"{np.mean(per):.4f}"] if mean_name else [])]) + "\n")
    return path


def _main(path):
    (run,) = api.analyze(str(path.parent), jobs=1).runs
    return run.stats.get("main_metric")


@pytest.mark.parametrize("columns,mean_name", [
    (["class_person_ap", "class_cat_ap", "class_dog_ap"], "map"),
    (["iou_road", "iou_car", "iou_sky", "iou_tree"], "mIoU"),
    (["f1_neg", "f1_pos", "f1_neutral"], "macro_f1"),
])
def test_the_mean_over_classes_is_the_score_the_run_is_read_by(tmp_path, columns, mean_name):
    assert _main(_eval_csv(tmp_path / "eval" / "eval_log.csv", columns, mean_name)) == mean_name


def test_without_a_mean_a_member_is_still_read(tmp_path):
    columns = ["class_person_ap", "class_cat_ap", "class_dog_ap"]
    assert _main(_eval_csv(tmp_path / "eval" / "eval_log.csv", columns, None)) in columns


def test_members_and_measures():
    per_class = ["FOREST_precision", "PARK_precision", "UNIT_precision", "FB1", "precision", "recall"]
    assert is_member("PARK_precision", per_class)
    assert not is_member("FB1", per_class)
    measures = ["accuracy_pct", "recall_pct", "precision_pct"]
    assert not any(is_member(m, measures) for m in measures)
    assert not is_member("class_cat_ap", ["class_cat_ap", "class_dog_ap"])  # two are no set
    assert main_name_score("FB1", "accuracy", per_class) > main_name_score("precision", "accuracy", per_class)
    assert main_name_score("f1", "accuracy", ["f1", "acc"]) == main_name_score("acc", "accuracy", ["f1", "acc"])
