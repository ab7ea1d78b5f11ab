"""The main loss among terms of equal standing is the one their users read, not the largest (#24).

A file that logs several loss terms and no total is read by its users on one term (YOLO's
`train/box_loss` beside its cls and dfl terms, BasicSR's `l_pix` beside `l_cr`, a CycleGAN's
`G_A` beside `G_B`); the reader makes up no total, and the choice is by the names (the plain name
the others extend, a generator, a data term, then the name's order), never by the column's place
(`test_order_free_reading_s23.py` reverses the columns). A total the writer logs (`total_loss`, `loss`) still wins wherever it stands.
Files are written by the trainers' own format strings (`fixtures/writers/trainers.py`) or
by `csv.writer` as the scripts do."""
from __future__ import annotations

import csv
import sys

from conftest import FIXTURES
from spikelens import api

sys.path.insert(0, str(FIXTURES))
from writers.trainers import write_v8  # noqa: E402


def judged(path) -> str:
    (run,) = api.analyze(path, jobs=1).runs
    return run.stats["main_metric"]


def scale_columns(path, factors: dict[str, float]) -> None:
    """Make some terms larger than the first one, as a real YOLO run's dfl/cls terms often are."""
    rows = list(csv.reader(path.read_text().splitlines()))
    head = [h.strip() for h in rows[0]]
    for r in rows[1:]:
        for name, k in factors.items():
            i = head.index(name)
            r[i] = "%.6g" % (float(r[i]) * k)
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")


def write_terms(path, names: list[str], scales: list[float], n: int = 60) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epoch", *names])
        for e in range(n):
            w.writerow([e, *(round(s * (0.4 + 2.0 / (1 + e)), 6) for s in scales)])


def test_yolo_results_are_judged_on_the_box_loss_though_other_terms_are_larger(tmp_path):
    f = write_v8(tmp_path / "runs/detect/train", 40, epochs=40)
    scale_columns(f, {"train/cls_loss": 1.6, "train/dfl_loss": 1.3})
    assert judged(f) == "train/box_loss"


def test_loss_terms_without_a_total_take_the_first_the_writer_logs(tmp_path):
    f = tmp_path / "train_log.csv"
    write_terms(f, ["l_pix", "l_cr", "l_freq"], [1.0, 2.5, 2.0])  # (no term the sum of the others: that is a total)
    assert judged(f) == "l_pix"


def test_a_total_the_writer_logs_still_wins_from_the_last_column(tmp_path):
    f = tmp_path / "losses.csv"
    write_terms(f, ["loss_cls", "loss_box", "total_loss"], [2.0, 1.0, 3.0])
    assert judged(f) == "total_loss"
    g = tmp_path / "b" / "losses.csv"
    g.parent.mkdir()
    write_terms(g, ["mse", "kl", "loss"], [2.0, 0.5, 2.5])  # the plain `loss` over its terms
    assert judged(g) == "loss"


def test_a_gan_is_judged_on_its_first_generator_term(tmp_path):
    f = tmp_path / "loss_log.csv"
    write_terms(f, ["loss_D_A", "loss_G_A", "loss_D_B", "loss_G_B"], [0.5, 1.0, 0.5, 1.8])
    assert judged(f) == "loss_G_A"


def test_lightning_epoch_suffix_keeps_the_plain_train_loss_first(tmp_path):
    # CSVLogger (keys sorted): `data_loss` and `train_loss` logged on_epoch (and rarely on_step); the
    # `_epoch` / `_step` suffix says how often, so `train_loss_epoch` is the plain training loss
    f = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    f.parent.mkdir(parents=True)
    keys = ["data_loss_epoch", "data_loss_step", "epoch", "step", "train_loss_epoch", "train_loss_step"]
    with f.open("w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=keys)
        w.writeheader()
        for e in range(120):
            v = 0.5 + 3.0 / (1 + e)
            w.writerow({"epoch": e, "step": 7 * e + 6, "data_loss_epoch": 2 * v, "train_loss_epoch": v})
            if e % 10 == 0:
                w.writerow({"epoch": e, "step": 7 * e + 6, "data_loss_step": 2 * v, "train_loss_step": v})
    assert judged(f) == "train_loss_epoch"


def test_a_step_series_logged_far_more_often_stays_the_main(tmp_path):
    f = tmp_path / "metrics.csv"
    with f.open("w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=["epoch", "step", "train_loss_epoch", "train_loss_step", "val_loss"])
        w.writeheader()
        for s in range(600):
            w.writerow({"epoch": s // 50, "step": s, "train_loss_step": 0.5 + 3.0 / (1 + s / 20)})
            if s % 50 == 49:
                w.writerow({"epoch": s // 50, "step": s, "train_loss_epoch": 0.5 + 3.0 / (1 + s / 20), "val_loss": 1.0})
    assert judged(f) == "train_loss_step"
