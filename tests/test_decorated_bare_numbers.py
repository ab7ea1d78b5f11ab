"""A file of bare numbers (`loss.txt`, rows `epoch loss acc`) reads the same whatever a logger, a launcher
or a progress bar prints before each line (#24, `importers/lineprefix.py`): Python's `logging` formats,
loguru's and absl's layouts, torchrun's rank tags, a tqdm bar's redraw joined by `\\r`. Fixtures are
written here by Python's own `logging` and by the writes a script makes; lookalikes (a file named for
nothing, a price list behind the same prefix) stay refused."""
from __future__ import annotations

import logging
import math

import polars as pl
import pytest

from spikelens import api
from spikelens.errors import SpikelensError
from spikelens.importers import lineprefix

LOSSES = [round(2.0 * math.exp(-i / 40) + 0.1 + 0.01 * (i % 3), 6) for i in range(120)]


def _series(path, name):
    frame = api.load(str(path))
    return frame.filter(pl.col("metric") == name).sort("seq")


def _logged(path, fmt, lines):
    logger = logging.getLogger("trainer")
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(fmt))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        for line in lines:
            logger.info(line)
    finally:
        logger.removeHandler(handler)
        handler.close()


@pytest.mark.parametrize("fmt", ["%(asctime)s %(message)s", "%(asctime)s - %(levelname)s - %(message)s",
                                 "%(levelname)s:%(name)s:%(message)s", "[%(asctime)s] %(message)s"])
def test_a_loss_list_behind_a_loggers_prefix_reads_as_undecorated(tmp_path, fmt):
    _logged(tmp_path / "loss.txt", fmt, [str(v) for v in LOSSES])
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "loss.txt").write_text("".join(f"{v}\n" for v in LOSSES))
    got, want = _series(tmp_path / "loss.txt", "loss"), _series(tmp_path / "plain" / "loss.txt", "loss")
    assert got.height == len(LOSSES)
    assert got.get_column("value").to_list() == want.get_column("value").to_list() == LOSSES
    assert got.get_column("step").to_list() == want.get_column("step").to_list()


@pytest.mark.parametrize("prefix", ["2024-05-01T12:00:00.123Z ", "[rank0]:[titan] ",
                                    "I0501 12:00:00.123456  1234 train.py:88] ",
                                    "2024-05-01 12:00:00.123 | INFO     | __main__:train:88 - ",
                                    "Training:  42%|████▏     | 420/1000 [01:02<01:26,  6.70it/s]\r"])
def test_rows_of_epoch_loss_acc_behind_other_decorations(tmp_path, prefix):
    rows = [f"{e}\t{v}\t{0.5 + e / 400:.4f}" for e, v in enumerate(LOSSES)]
    (tmp_path / "train_loss.txt").write_text("".join(f"{prefix}{r}\n" for r in rows))
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "train_loss.txt").write_text("".join(f"{r}\n" for r in rows))
    got, want = api.load(str(tmp_path / "train_loss.txt")), api.load(str(tmp_path / "plain" / "train_loss.txt"))
    assert sorted(got.get_column("metric").unique()) == sorted(want.get_column("metric").unique())
    key = ["metric", "step", "value"]
    assert got.select(key).sort(key).equals(want.select(key).sort(key))
    assert got.height == want.height >= 2 * len(LOSSES)


def test_a_value_in_brackets_is_no_prefix():
    """`[nan]` is a printed list holding a NaN (the event a run is read for); `-0.5` keeps its sign."""
    assert lineprefix.strip(["[nan]", "INFO -0.5", "12 0.5", "epoch 3: 0.4"]) == ["[nan]", "-0.5", "12 0.5",
                                                                                 "epoch 3: 0.4"]


def test_a_price_list_behind_a_prefix_stays_refused(tmp_path):
    """A logger's prefix makes no numbers a curve: a file whose name names no measure is still not read."""
    _logged(tmp_path / "prices.txt", "%(asctime)s - %(levelname)s - %(message)s",
            [f"{100 + (i * 7) % 13}.25" for i in range(60)])
    with pytest.raises(SpikelensError):
        api.load(str(tmp_path / "prices.txt"))


def test_a_settings_dump_behind_a_prefix_stays_refused(tmp_path):
    _logged(tmp_path / "train.log", "%(asctime)s - %(levelname)s - %(message)s",
            [f"{name} ........ {value}" for name, value in
             [("lr", 0.001), ("batch_size", 32), ("epochs", 100), ("seed", 42), ("warmup", 500)] * 4])
    with pytest.raises(SpikelensError):
        api.load(str(tmp_path / "train.log"))


def _noisy(values: list[float]) -> list[str]:
    """A loop's `print(loss)` with what a run also prints between: warnings, blank lines, a traceback it survived."""
    import traceback
    import warnings as w

    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        trace = traceback.format_exc().rstrip("\n").split("\n")
    warning = w.formatwarning("Detected call of `lr_scheduler.step()` before `optimizer.step()`.", UserWarning,
                              "/opt/conda/lib/python3.10/site-packages/torch/optim/lr_scheduler.py", 139).rstrip()
    out = []
    for i, v in enumerate(values):
        if i == len(values) // 2:
            out.extend(trace)
        out.append(str(v))
        if i % 7 == 3:
            out.extend(warning.split("\n"))
        if i % 5 == 1:
            out.append("")
    return out


def test_a_loss_list_with_warnings_and_a_traceback_between_reads_as_clean(tmp_path):
    (tmp_path / "loss.txt").write_text("\n".join(_noisy(LOSSES)) + "\n")
    with pytest.warns(Warning, match="rows of bare numbers"):
        got = _series(tmp_path / "loss.txt", "loss")
    assert got.get_column("value").to_list() == LOSSES
    assert got.get_column("step").to_list() == list(range(len(LOSSES)))


def test_a_list_named_for_nothing_with_warnings_between_stays_refused(tmp_path):
    (tmp_path / "data.txt").write_text("\n".join(_noisy(LOSSES)) + "\n")
    with pytest.warns(Warning, match="none is read"):
        assert api.load(str(tmp_path / "data.txt")).height == 0  # the crash it names is kept, no values
