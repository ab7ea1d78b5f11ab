"""Lines a progress bar redrew with `\\r`, and rows a logger decorated (#24): a YOLOv5/v7 console's
training row is a tqdm description redrawn at every batch on one physical line (the epoch's row is the last
redraw, one row an epoch, as the trainer's own `results.txt` has it; the labels read such a run by epoch); a bar over which a message was
printed is overwritten by it; a header and rows of which only some carry a launcher's time stamp still
line up; YOLOv5's `results.txt` read through a logger's prefix. Fixtures are written here with the trainers'
own format strings, tqdm's layout, and Python's `logging` for the prefixes."""
from __future__ import annotations

import logging
import math
import sys

import polars as pl
import pytest

from conftest import FIXTURES
from spikelens import api
from spikelens.frame import roles_of

sys.path.insert(0, str(FIXTURES))
from writers.trainers import write_results_txt  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_user_patterns")

EPOCHS, BATCHES, VAL_BATCHES = 8, 6, 3


def _bar(desc: str, n: int, total: int, rate: str = "1.20it/s") -> str:
    """tqdm's default line: `{desc}: {percentage:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}]`."""
    fill = "#" * (10 * n // total)
    head = f"{desc}: " if desc else ""
    return f"{head}{100 * n // total:3d}%|{fill:10s}| {n}/{total} [00:{n:02d}<00:{total - n:02d}, {rate}]"


def _box(e: int, i: int) -> float:
    return 0.08 * math.exp(-(e * BATCHES + i) / 20) + 0.02


def yolo_console(stamp: str = "") -> tuple[str, list[float]]:
    """A YOLOv5 (v5.0) train.py console as `nohup` keeps it: the header via `logger.info`, the training bar
    (`tqdm(..., total=nb)`, `pbar.set_description(s)` each batch, `s = ('%10s' * 2 + '%10.4g' * 6) % (...)`),
    the validation bar (`tqdm(dataloader, desc=s)`) and the `all` row (`print(pf % ...)`); `stamp` is what
    a launcher that stamps each line it relays puts at the start of every physical line. Also the total
    each epoch's last redraw shows."""
    out, last = [f"{stamp}Starting training for {EPOCHS} epochs...\n", "\n"], []
    for e in range(EPOCHS):
        out.append(stamp + ("%10s" * 8) % ("Epoch", "gpu_mem", "box", "obj", "cls", "total", "labels", "img_size") + "\n")
        redraws = ["\r" + _bar("", 0, BATCHES, "?it/s")]  # the bar before its first description
        for i in range(BATCHES):
            box = _box(e, i)
            s = ("%10s" * 2 + "%10.4g" * 6) % (f"{e}/{EPOCHS - 1}", "3.2G", box, 0.02, 0.01, box + 0.03, 10 + i, 640)
            redraws.append("\r" + _bar(s, i, BATCHES))
        redraws.append("\r" + _bar(s, BATCHES, BATCHES))  # close(): the last description at 100%
        last.append(float("%.4g" % (_box(e, BATCHES - 1) + 0.03)))
        out.append(stamp + "".join(redraws) + "\n")
        head = ("%20s" + "%12s" * 6) % ("Class", "Images", "Labels", "P", "R", "mAP@.5", "mAP@.5:.95")
        out.append(stamp + "".join("\r" + _bar(head, k, VAL_BATCHES, "4.50it/s") for k in range(VAL_BATCHES + 1)) + "\n")
        out.append(stamp + ("%20s" + "%12i" * 2 + "%12.3g" * 4) % ("all", 37, 41, 0.3 + 0.03 * e, 0.25 + 0.03 * e,
                                                                   0.2 + 0.04 * e, 0.1 + 0.02 * e) + "\n")
    return "".join(out), last


@pytest.mark.parametrize("stamp", ["", "2024-05-01 12:00:00,123 ", "[12:00:01] ", "[rank0]:"])
def test_a_yolo_console_redrawn_by_tqdm_is_one_row_an_epoch(tmp_path, stamp):
    text, last = yolo_console(stamp)
    (tmp_path / "nohup.out").write_text(text)
    (run,) = api.load_runs(tmp_path / "nohup.out")
    f = run.frame
    total = f.filter(pl.col("metric") == "total").sort("seq")
    # one row an epoch, its step the epoch (the closed bar's `6/6` counts nothing more), not epoch x batch
    steps = list(range(EPOCHS))
    assert total.get_column("step").to_list() == steps
    assert total.get_column("value").to_list() == pytest.approx(last)  # each epoch's last redraw
    m = f.filter(pl.col("metric") == "mAP@.5").sort("seq")
    assert m.get_column("step").to_list() == steps and m.get_column("value")[-1] == pytest.approx(0.48)
    roles = roles_of(f)
    assert roles["total"] == "loss" and roles["mAP@.5"] == "accuracy"
    assert "it/s" not in roles and "all" not in roles
    assert run.meta.get("plan.steps") == EPOCHS


def test_a_bar_a_message_was_printed_over_is_overwritten(tmp_path):
    # a loop that logs through tqdm.write: the bar's last redraw, `\r`, the bar cleared, `\r`, the message
    lines = []
    for step in range(1, 121):
        bar = _bar("Training", step * 8, 1000, "6.70it/s")
        lines.append(f"\r{bar}\r{' ' * len(bar)}\rstep {step * 8} loss {3.0 * math.exp(-step / 40) + 0.5:.4f} lr 3e-4")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    (run,) = api.load_runs(tmp_path / "train.log")
    f = run.frame
    loss = f.filter(pl.col("metric") == "loss").sort("seq")
    assert loss.get_column("step").to_list() == [s * 8 for s in range(1, 121)]
    assert loss.get_column("value")[0] == pytest.approx(3.0 * math.exp(-1 / 40) + 0.5, abs=1e-4)
    assert "it/s" not in set(f.get_column("metric").cast(str).unique().to_list())


def test_keras_redraws_of_a_record_are_each_read(tmp_path):
    # Keras' progbar redraws `12/40 [=====>....] - ETA: 3s - loss: 0.51` with `\r`: each redraw is a record
    lines = []
    for e in range(1, 4):
        lines.append(f"Epoch {e}/3")
        redraws = [f"\r{i:2d}/40 [{'=' * (i * 30 // 40):30s}] - ETA: {40 - i}s - loss: {2.0 / (e * 40 + i):.4f}"
                   for i in range(1, 41)]
        lines.append("".join(redraws) + f" - val_loss: {1.5 / e:.4f}")
    (tmp_path / "keras.log").write_text("\n".join(lines) + "\n")
    f = api.load(tmp_path / "keras.log")
    assert f.filter(pl.col("metric") == "loss").height == 120  # 40 redraws an epoch, all read, as before


def test_results_txt_through_a_logger_prefix(tmp_path):
    plain = write_results_txt(tmp_path / "plain" / "exp", 12, epochs=300)
    log = logging.getLogger("r2.results")
    log.propagate = False
    (tmp_path / "logged" / "exp").mkdir(parents=True)
    handler = logging.FileHandler(tmp_path / "logged" / "exp" / "results.txt")
    handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        for row in plain.read_text().splitlines():
            log.info(row)
    finally:
        log.removeHandler(handler)
        handler.close()
    a, b = api.load_runs(plain)[0], api.load_runs(tmp_path / "logged" / "exp" / "results.txt")[0]
    assert b.formats == a.formats == ["ultralytics_txt"]
    for name in ("train/loss", "train/box_loss", "metrics/mAP_0.5"):
        got = b.frame.filter(pl.col("metric") == name).sort("step").select("step", "value").rows()
        assert got == a.frame.filter(pl.col("metric") == name).sort("step").select("step", "value").rows()
    assert [s for s, _ in got] == list(range(12))
    assert roles_of(b.frame)["train/loss"] == "loss" and b.meta.get("plan.epochs") == 300
