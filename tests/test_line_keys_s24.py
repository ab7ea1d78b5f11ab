"""Keys a person reads at a glance that the line reader misread (#24), written as the trainers print them:
- a key whose value is absent (LitGPT's `val: n/a` before its first evaluation) names nothing, and its
  evaluation word does not make the training line an evaluation line;
- a unit after a number is the number's unless a value is linked to it (DeepSpeed's
  `iter time (s): 1.234 samples/sec: 10.123`: `samples/sec` is the next key);
- of two counts that rise on every line and no name ranks, the smaller counts the steps (Marian's
  `Up. 500 : Sen. 64,000`: updates, not the sentences seen).
"""
from __future__ import annotations

import math

import polars as pl

from spikelens.api import load_runs


def _loss(i: int) -> float:
    return round(5 * math.exp(-i / 20) + 0.5, 3)


def _read(tmp_path, name: str, lines: list[str]):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    (run,) = load_runs(path)
    return run


def _series(run, metric: str) -> tuple[list[int], list[float]]:
    s = run.frame.filter(pl.col("metric") == metric).sort("seq")
    return s.get_column("step").to_list(), s.get_column("value").to_list()


def test_an_absent_value_names_nothing_and_leaves_the_line_a_training_line(tmp_path):
    # litgpt/finetune: `val: n/a` until the first evaluation, then the validation loss
    lines = []
    for i in range(40):
        val = f"{_loss(i) + 0.2:.3f}" if i % 10 == 9 else "n/a"
        lines.append(f"Epoch 1 | iter {(i + 1) * 4} step {i + 1} | loss train: {_loss(i):.3f}, val: {val} | "
                     f"iter time: {150 + i % 3:.2f} ms (step)")
    run = _read(tmp_path, "lora.log", lines)
    steps, values = _series(run, "loss_train")
    assert steps == list(range(1, 41))
    assert values == [_loss(i) for i in range(40)]
    assert not any("val" in str(m) and "loss_train" in str(m) for m in run.frame.get_column("metric").unique())


def test_a_spaced_unit_linked_to_a_value_is_the_next_key(tmp_path):
    # DeepSpeed's engine progress line
    lines = [f"steps: {(i + 1) * 10} loss: {_loss(i):.4f} iter time (s): {1.2 + i / 1000:.3f} "
             f"samples/sec: {10 + i / 10:.3f}" for i in range(30)]
    run = _read(tmp_path, "ds.log", lines)
    names = set(run.frame.get_column("metric").cast(pl.String).unique())
    assert {"loss", "iter_time_s", "samples/sec"} <= names
    assert _series(run, "iter_time_s")[1][:2] == [1.2, 1.201]
    assert _series(run, "samples/sec")[1][:2] == [10.0, 10.1]


def test_of_two_rising_counts_the_smaller_counts_the_updates(tmp_path):
    # Marian's training log
    lines = [f"[2020-01-01 12:00:{i % 60:02d}] Ep. 1 : Up. {(i + 1) * 500} : Sen. {(i + 1) * 64000:,} : "
             f"Cost {_loss(i):.8f} : Time {98.37 + (i * 7) % 5:.2f}s : 3000.00 words/s" for i in range(30)]
    run = _read(tmp_path, "train.log", lines)
    steps, values = _series(run, "Cost")
    assert steps == [(i + 1) * 500 for i in range(30)]
    assert values == [_loss(i) for i in range(30)]
