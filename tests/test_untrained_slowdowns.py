"""A slowdown where nothing of training is logged is a note, not an alarm (#25): a fine-tuning script's
log that held only its data-preparation bar (`Formatting conversations: 17/13772 [..., 159.47sample/s]`)
was told "throughput dropped 65%" as a warning. The same drop beside a loss stays an alarm."""
from __future__ import annotations

from conftest import analyzed_run


def _rate(i: int, n: int) -> float:
    return 250.0 + (i * 7) % 11 if i < 0.7 * n else 80.0 + (i * 5) % 7


def test_a_data_preparation_bar_alone_is_no_alarm(tmp_path):
    n, total = 600, 13772
    lines = ["2025-11-16 20:23:31 - INFO - __main__ - Creating training dataset..."]
    for i in range(1, n + 1):
        done = i * total // n
        lines.append(f"Formatting conversations:  {100 * done // total}%|          | {done}/{total} "
                     f"[00:{i % 60:02d}<01:26, {_rate(i, n):.2f}sample/s]")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    run = analyzed_run(tmp_path / "train.log")
    drops = [f for f in run.findings if f.kind == "throughput_drop"]
    assert drops and all(f.severity == "info" and f.evidence.get("no_training_logged") for f in drops)


def test_the_same_drop_beside_a_loss_is_an_alarm(tmp_path):
    n = 600
    lines = [f"step {i} | loss {3.0 / (1 + 0.01 * i):.4f} | lr 0.0003 | {_rate(i, n) * 100:.0f} tok/s"
             for i in range(1, n + 1)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    run = analyzed_run(tmp_path / "train.log")
    drops = [f for f in run.findings if f.kind == "throughput_drop"]
    assert drops and any(f.severity == "warning" for f in drops)
