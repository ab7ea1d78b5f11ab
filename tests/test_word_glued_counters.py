"""A count glued after the word it counts (#24): `Ep1 TrainLoss 1.8435 steps=158` (a Jittor script's
logging) is epoch 1 as `Epoch 1` is; the log was refused ("keyed numbers with no step counter"). Not a
count: the same letters inside a longer word or a path (`ckpt_step100.pt`, `runs/epoch3`)."""
from __future__ import annotations

from conftest import curve, read_text_log

from spikelens.frame import infer_roles

STAMP = "2025-06-20 13:55:06,661 INFO: "


def _epochs(n: int) -> list[str]:
    lines = [STAMP + "Namespace(epochs=120, bs=8, lr=5e-05, num_classes=6)", STAMP + "Train/Val = 315/63  bs=8"]
    for e in range(1, n + 1):
        lines.append(STAMP + f"Ep{e} TrainLoss {1.9 - 0.01 * e:.4f} steps=158")
        lines.append(STAMP + f"Ep{e} ValLoss {1.8 - 0.012 * e:.4f} Acc {15.6 + e:.3f}%")
        if e % 3 == 0:
            lines.append(STAMP + "  ↳ new best")
    return lines


def test_an_epoch_glued_to_its_word_is_the_step(tmp_path):
    frame, _ = read_text_log(tmp_path, "train.log", _epochs(30))
    assert curve(frame, "TrainLoss") == [(e, round(1.9 - 0.01 * e, 4)) for e in range(1, 31)]
    assert [s for s, _ in curve(frame, "ValLoss")] == list(range(1, 31))
    roles = infer_roles(frame.get_column("metric").unique().to_list())
    assert roles["TrainLoss"] == "loss" and roles["ValLoss"] == "eval_loss"


def test_iter_glued_to_its_word_and_lookalikes_in_paths(tmp_path):
    lines = []
    for i in range(1, 41):
        lines.append(f"iter{i * 50} loss: {3.0 - 0.02 * i:.3f} lr: 0.001")
        if i % 10 == 0:
            lines.append(f"saved ckpt_step{i * 50}.pt to runs/epoch{i // 10}/ (loss: {3.0 - 0.02 * i:.3f})")
    frame, _ = read_text_log(tmp_path, "train.log", lines)
    assert [s for s, _ in curve(frame, "loss")][:3] == [50, 100, 150]
    assert len(curve(frame, "loss")) == 40  # the save lines are no records of steps 500, ..., 2000 again
