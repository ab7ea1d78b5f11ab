"""A term that never moved while its twin (the same term for the model's other direction) fell to
under half: one path of the model never learned (#25; `detect/twins.py`). Logs are written as the
pytorch-CycleGAN-and-pix2pix `Visualizer.print_current_losses` prints them:
`(epoch: 1, iters: 4, time: 0.250, data: 0.010) D_A: 0.251 G_A: 0.968 cycle_A: 9.998 ...`."""
from __future__ import annotations

import numpy as np

import spikelens

N = 120


def _cyclegan_log(path, terms):
    """`loss_log.txt` lines, 40 iterations an epoch, the terms in the trainer's order."""
    lines = ["================ Training Loss (Sat Nov 28 10:00:00 2026) ================\n"]
    for i in range(N):
        head = f"(epoch: {i // 40 + 1}, iters: {i % 40 + 1}, time: 0.250, data: 0.010) "
        lines.append(head + " ".join(f"{k}: {v[i]:.3f}" for k, v in terms.items()) + " \n")
    path.write_text("".join(lines))
    return path


def _terms(cycle_a, idt_a=None, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(N)
    noise = lambda: np.exp(0.05 * rng.standard_normal(N))  # noqa: E731
    falling = lambda hi, lo: (lo + (hi - lo) * np.exp(-t / 15.0)) * noise()  # noqa: E731
    return {"D_A": 0.25 * noise(), "G_A": 0.9 * noise(), "cycle_A": cycle_a,
            "idt_A": falling(4.0, 0.2) if idt_a is None else idt_a, "D_B": 0.25 * noise(), "G_B": 0.9 * noise(),
            "cycle_B": falling(8.0, 0.4), "idt_B": falling(4.0, 0.2)}


def _twin_findings(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return [f for f in run.findings if f.kind == "plateau" and "twin" in f.evidence]


def test_cycle_a_saturated_at_ten_while_cycle_b_fell_never_learned(tmp_path):
    stuck = 10.0 - 0.0015 * np.arange(N)  # lambda 10 x a saturated L1: 10.000 -> 9.82
    (f,) = _twin_findings(_cyclegan_log(tmp_path / "loss_log.txt", _terms(stuck)))
    assert f.metric == "cycle_A" and f.evidence["twin"] == "cycle_B" and f.severity == "warning"
    assert f.start_step <= 2 and "never learned" in f.message


def test_both_directions_learning_is_silent(tmp_path):
    rng = np.random.default_rng(3)
    falling = (0.5 + 7.5 * np.exp(-np.arange(N) / 12.0)) * np.exp(0.05 * rng.standard_normal(N))
    assert not _twin_findings(_cyclegan_log(tmp_path / "loss_log.txt", _terms(falling)))


def test_a_twin_that_started_where_the_other_ended_is_not_stuck(tmp_path):
    # cycle_A low from the start (an easy direction) while cycle_B came down to it: nothing stuck
    flat_low = 0.45 * np.exp(0.03 * np.random.default_rng(4).standard_normal(N))
    assert not _twin_findings(_cyclegan_log(tmp_path / "loss_log.txt", _terms(flat_low)))
