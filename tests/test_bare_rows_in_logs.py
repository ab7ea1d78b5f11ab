"""Rows of bare numbers a training loop prints, read among the other lines of its log (#24): after a
logger's `asctime - ` prefix, under `epoch 0 lr 0.0001` headers, between a launcher's date lines and a
traceback; the first measured number of a training log's counted rows is its loss even when it never
falls. Fixtures are written here by Python's own `logging` and `print`."""
from __future__ import annotations

import logging
import math

import polars as pl
import pytest

from spikelens import api
from spikelens.errors import SpikelensError


def _loss_series(path):
    frame = api.load(str(path))
    losses = [m for m in frame.get_column("metric").unique().to_list() if "loss" in m]
    assert len(losses) == 1, losses
    return frame.filter(pl.col("metric") == losses[0]).sort("seq")


def test_rows_after_a_loggers_time_stamp_are_read(tmp_path):
    path = tmp_path / "train.txt"
    logger = logging.getLogger("barerows-test")
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s - %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("<module 'rela' from 'rela.cp37-win_amd64.pyd'>")
        for epoch in range(6):
            for i in range(50):
                logger.info("%d\t%d\t%f", epoch, i, 1.6 * math.exp(-(epoch * 50 + i) / 120) + 0.05)
            logger.info("update model at epoch %d ", epoch)
            logger.info("%d*4 < 1*25600", 514 + epoch)
    finally:
        logger.removeHandler(handler)
        handler.close()
    with pytest.warns(Warning, match="300 rows of bare numbers"):
        loss = _loss_series(path)
    assert loss.height == 300
    assert round(loss.get_column("value")[0], 4) == 1.65
    assert loss.get_column("step").is_sorted()


def test_rows_under_epoch_headers_between_a_launchers_lines(tmp_path):
    lines = ["2018-12-15 14:10:58", "load from saved data", "63.155111", "Traceback (most recent call last):",
             '  File "main.py", line 268, in <module>', "KeyError: 'rnnhidden'", "2018-12-15 16:39:11",
             "load from saved data", "63.902247", "model name: MLPMeta", "load model"]
    for epoch in range(12):
        lines.append(f"epoch {epoch} lr 0.0001")
        for i in range(0, 2000, 194):
            lines.append(f"{i} {0.5 * math.exp(-(epoch * 11 + i / 194) / 30) + 0.01}")
        lines.append(f"{3.45 - epoch * 0.1} use time: {29.8 + epoch}")
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    with pytest.warns(Warning, match="rows of bare numbers"):
        loss = _loss_series(tmp_path / "log.txt")
    assert loss.height == 12 * 11
    assert round(loss.get_column("value")[0], 4) == 0.51
    # the loss is the second number of its printed `i loss` row, as a person counts it: the header's
    # epoch leads no printed row
    assert loss.get_column("metric")[0] == "log_loss_column2"


def test_a_flat_loss_of_a_training_log_is_still_its_loss(tmp_path):
    # `f.write(f'{epoch}, {i}, {loss}, {a}, {b}, {c}, 0')`: a run that never learned, its loss flat
    rows = [f"0, {i}, {16.5 + 0.05 * math.sin(i)}, {10.8 + 0.01 * math.cos(i)}, {3.7 + 0.03 * math.sin(2 * i)}, "
            f"{1.96 + 0.001 * i}, 0" for i in range(45)]
    (tmp_path / "trainlog.txt").write_text("\n".join(rows) + "\n")
    loss = _loss_series(tmp_path / "trainlog.txt")
    assert loss.get_column("metric")[0] == "trainlog_loss_column3" and loss.height == 45


def test_a_data_file_and_prose_with_few_rows_stay_unread(tmp_path):
    rows = [f"0, {i}, {16.5 + 0.05 * math.sin(i)}, {10.8 + 0.01 * math.cos(i)}" for i in range(45)]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "data.txt").write_text("\n".join(rows) + "\n")  # named for nothing: its shape says no loss
    (tmp_path / "a" / "other.csv").write_text("x\n1\n")
    prose = [f"Processed batch {i} of the dataset in {0.1 * i:.2f} seconds" for i in range(40)]
    prose += [f"{i} {0.5 + 0.01 * i}" for i in range(12)]  # a few rows among many sentences
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "train.log").write_text("\n".join(prose) + "\n")
    for path in (tmp_path / "a" / "data.txt", tmp_path / "b" / "train.log"):
        with pytest.raises(SpikelensError):
            api.analyze(str(path), jobs=1)


def _rows_then(tmp_path, ending):
    lines = ["2018-12-15 16:39:11", "load from saved data", "model name: MLPMeta"]
    for epoch in range(4):
        lines.append(f"epoch {epoch} lr 0.0001")
        lines += [f"{i} {0.5 * math.exp(-(epoch * 11 + i / 194) / 30) + 0.01}" for i in range(0, 2000, 194)]
    (tmp_path / "log.txt").write_text("\n".join(lines + ending) + "\n")
    from spikelens.importers import barerows

    with pytest.warns(Warning):
        (table,) = barerows.read(tmp_path / "log.txt")
    return table.meta


def test_the_error_a_bare_rows_log_ends_with_is_told(tmp_path):
    # the rows are the log, the traceback after them is how the run ended (textsignals reads it as for any log)
    meta = _rows_then(tmp_path, ["Traceback (most recent call last):", '  File "main.py", line 301, in <module>',
                                 "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"])
    assert "CUDA out of memory" in meta["plan.error"] and meta["plan.error_line_no"] == 54  # the exception line


def test_a_bare_rows_log_that_ends_cleanly_tells_no_error(tmp_path):
    meta = _rows_then(tmp_path, ["3.4592898959498 use time: 29.84", "done"])
    assert "plan.error" not in meta
