"""A running mean restarted each epoch (`significance._average_restart`, issue 25): MXNet's
Speedometer and an `AverageMeter` print the mean loss since the epoch began, so the first print of
an epoch averages a handful of batches while the one before averaged a whole epoch. A jump there is
the averaging window, a note; a bad batch inside the mean (the jump decays as slowly as a mean of
hundreds of batches does) stays loud. Found on a dev run's keypoint term: 4 of its 7 loud 2.6-4.6x
'spikes' were the first print of an epoch; the other 3 imply batches over 2x the level after the jump
(a hard stretch of data) and stay loud.
Fixture: the Speedometer's console lines, written here as MXNet's `logging` prints them."""
from __future__ import annotations

import numpy as np

from conftest import only_run, loud

PER_EPOCH, EVERY = 600, 20


def _speedometer(path, epochs: int = 10, heavy_start=(3, 5, 7), bad_batch: tuple[int, int] | None = None):
    """`Epoch[e] Batch [0-k]  Speed: ..  kpt_loss=..` every 20 batches, the mean since the epoch began.
    `heavy_start`: epochs whose first 20 batches hold two hard batches (25x the level);
    `bad_batch`: (epoch, batch) of one batch at 2000x the level, deep inside an epoch's mean."""
    rng = np.random.default_rng(11)
    lines = []
    for e in range(epochs):
        level = 0.4 * 0.93 ** e
        batches = level * np.exp(0.35 * rng.standard_normal(PER_EPOCH))
        if e in heavy_start:
            batches[[3, 11]] = 25 * level
        if bad_batch is not None and bad_batch[0] == e:
            batches[bad_batch[1]] = 2000 * level
        means = np.cumsum(batches) / np.arange(1, PER_EPOCH + 1)
        for k in range(EVERY, PER_EPOCH + 1, EVERY):
            lines.append(f"2018-10-11 09:{e:02d}:{k // 20:02d},200 INFO - Epoch[{e}] Batch [0-{k}]\t"
                         f"Speed: {25.5 + 0.3 * rng.standard_normal():.2f} samples/sec\tkpt_loss={means[k - 1]:.6f}")
        lines.append(f"2018-10-11 09:{e:02d}:59,900 INFO - Epoch[{e}] Train-kpt_loss={means[-1]:.6f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _spikes(run):
    return [f for f in run.findings if f.kind == "spike" and f.metric == "kpt_loss"]


def test_the_first_print_of_an_epochs_mean_jumping_is_the_averaging_window_a_note(tmp_path):
    run = only_run(_speedometer(tmp_path / "train.log"))
    restarts = [f for f in _spikes(run) if f.evidence.get("note_because") == "average_restart"]
    assert restarts, [f.message for f in _spikes(run)]
    assert [f for f in loud(run) if f.kind == "spike"] == []
    assert all(f.magnitude > 2 for f in restarts)  # alarms before: 2.6-3.4x, over RECOVERED_LOUD
    assert "the averaging window, not the loss" in restarts[0].message


def test_a_bad_batch_deep_inside_the_mean_stays_loud(tmp_path):
    run = only_run(_speedometer(tmp_path / "train.log", heavy_start=(), bad_batch=(6, 300)))
    (bad,) = [f for f in loud(run) if f.kind == "spike"]
    assert bad.evidence.get("note_because") is None and bad.magnitude > 2
