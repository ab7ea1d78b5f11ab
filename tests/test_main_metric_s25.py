"""Main metric, session 25 (#24): a `tot_loss` logged beside the same loss named as this batch's (`current_loss`,
`cur_loss`, `batch_loss`) is its running total over the steps, not a sum of terms: the run is read by the batch
loss, as its labeller did (`detect/base._accumulates`); a total beside its terms stays the main metric. Fixtures:
TensorBoard event files through TensorBoard's own EventFileWriter (`fixtures/writers/tensorboard.py`)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from spikelens import api, diagnostics

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))
from writers.tensorboard import name, scalar_event, write_events  # noqa: E402


def _tb(folder, series: dict[str, np.ndarray]) -> None:
    """`add_scalar(tag, value, step)` for each tag per logging step."""
    n = len(next(iter(series.values())))
    events = [scalar_event(100 * (i + 1), 1780000000.0 + i, tag, float(v[i])) for i in range(n) for tag, v in series.items()]
    write_events(folder / name(1780000000, 4242, 0), events)


def _main(folder) -> str | None:
    with diagnostics.collecting():
        (run,) = api.analyze(folder, jobs=1).runs
    return run.stats.get("main_metric")


def _batches(n: int = 60, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 2.7 - 0.002 * np.arange(n) + rng.normal(0, 0.08, n)


def test_a_running_total_beside_the_batch_loss_it_accumulates_is_not_the_main_loss(tmp_path, no_workers):
    current = _batches()
    running = np.cumsum(current) / np.arange(1, current.size + 1)  # icefall/VALL-E's `tot_loss`: over the steps so far
    _tb(tmp_path, {"train/current_loss": current, "train/tot_loss": running})
    assert _main(tmp_path) == "train/current_loss"


def test_a_total_beside_its_terms_stays_the_main_loss(tmp_path, no_workers):
    box, cls = _batches(seed=4) / 3, _batches(seed=5) / 2
    _tb(tmp_path, {"train/box_loss": box, "train/cls_loss": cls, "train/total_loss": box + cls,
                   "train/batch_time": np.full(box.size, 0.3)})
    assert _main(tmp_path) == "train/total_loss"
