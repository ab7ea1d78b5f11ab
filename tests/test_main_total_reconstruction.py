"""The curve a run is judged by when its losses are a total and its terms, or a GAN's game (#24, #25):
the total no name gives away is the term at least the sum of the others that moves with them
(`batch_loss` over `classify_loss`, `angle_loss`, `iou_loss`); a GAN's reconstruction term (CycleGAN's
`cycle_A`, pix2pix's `G_L1`) over its adversarial ones; a total printed one step later than its terms
still counts as logged as often. Fixtures are written here in the writers' own formats."""
from __future__ import annotations

import numpy as np

from spikelens import api


def _main(path):
    (run,) = api.analyze(str(path), jobs=1).runs
    return run.stats.get("main_metric")


def _parts(n, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    cls = 0.9 * np.exp(-t / 300) + 0.05 * rng.random(n)
    angle = 0.6 * np.exp(-t / 200) + 0.05 * rng.random(n)
    iou = 5.5 * np.exp(-t / 400) + 0.3 * rng.random(n) + 0.5
    return cls, angle, iou


def test_the_weighted_sum_of_the_terms_is_the_total(tmp_path):
    cls, angle, iou = _parts(200)
    (tmp_path / "metrics.csv").write_text("step,classify_loss,angle_loss,iou_loss,batch_loss\n" + "".join(
        f"{i},{c:.5f},{a:.5f},{u:.5f},{c + 10 * a + u:.5f}\n" for i, (c, a, u) in enumerate(zip(cls, angle, iou))))
    assert _main(tmp_path) == "batch_loss"


def test_a_large_term_of_its_own_is_no_total(tmp_path):
    # a contrastive term larger than the pixel terms together, its batch noise its own: the writer's first stays
    cls, angle, iou = _parts(200)
    own = 20 + np.random.default_rng(7).normal(0, 1.0, 200)
    (tmp_path / "metrics.csv").write_text("step,l_pix,l_freq,l_edge,l_cr\n" + "".join(
        f"{i},{c:.5f},{a:.5f},{u:.5f},{o:.5f}\n" for i, (c, a, u, o) in enumerate(zip(cls, angle, iou, own))))
    assert _main(tmp_path) == "l_pix"


def test_a_zero_term_leaves_two_terms_and_no_total(tmp_path):
    # YOLO on one class: cls_loss stays 0; obj above box is no sum of terms
    cls, angle, iou = _parts(100)
    (tmp_path / "results.csv").write_text("epoch,train/box_loss,train/obj_loss,train/cls_loss\n" + "".join(
        f"{i},{a:.5f},{u:.5f},0\n" for i, (a, u) in enumerate(zip(angle, iou))))
    assert _main(tmp_path) == "train/box_loss"


def test_a_total_printed_one_step_after_its_terms_is_logged_as_often(tmp_path):
    cls, angle, iou = _parts(21)
    rows = [f"{i},{c:.5f},{a:.5f},{'' if i == 0 else f'{c + a + u:.5f}'},{u:.5f}\n"
            for i, (c, a, u) in enumerate(zip(cls, angle, iou))]
    (tmp_path / "metrics.csv").write_text("step,loss_cls,loss_bbox,loss,loss_rpn\n" + "".join(rows))
    assert _main(tmp_path) == "loss"


def _cyclegan_log(path, names):
    rng = np.random.default_rng(3)
    lines = ["================ Training Loss (Mon Jan  1 00:00:00 2024) ================\n"]
    for e in range(1, 6):
        for it in range(100, 1100, 100):
            k = (e - 1) * 10 + it / 100
            vals = {n: (2.0 * np.exp(-k / 20) + 0.3 if n.startswith(("cycle", "G_L1")) else 0.25 + 0.2 * rng.random())
                    for n in names}
            body = " ".join(f"{n}: {v:.3f}" for n, v in vals.items())
            lines.append(f"(epoch: {e}, iters: {it}, time: 0.210, data: 0.004) {body} \n")
    path.write_text("".join(lines))


def test_a_cyclegan_run_is_judged_by_its_cycle_loss(tmp_path):
    _cyclegan_log(tmp_path / "loss_log.txt", ["D_A", "G_A", "cycle_A", "idt_A", "D_B", "G_B", "cycle_B", "idt_B"])
    assert _main(tmp_path) == "cycle_A"


def test_a_pix2pix_run_is_judged_by_its_l1_term(tmp_path):
    _cyclegan_log(tmp_path / "loss_log.txt", ["G_GAN", "G_L1", "D_real", "D_fake"])
    assert _main(tmp_path) == "G_L1"


def test_a_generator_total_over_its_own_l1_part_stays(tmp_path):
    rng = np.random.default_rng(5)
    rows = [f"{i},{0.6 + 0.2 * rng.random():.4f},{1.5 * np.exp(-i / 40) + 0.6:.4f},{1.2 * np.exp(-i / 40):.4f}\n"
            for i in range(120)]
    (tmp_path / "metrics.csv").write_text("step,loss_D,loss_G,loss_G_l1\n" + "".join(rows))
    assert _main(tmp_path) == "loss_G"


def test_without_a_reconstruction_term_the_generator_is_judged(tmp_path):
    _cyclegan_log(tmp_path / "loss_log.txt", ["D_A", "G_A", "D_B", "G_B"])
    assert _main(tmp_path) == "G_A"
