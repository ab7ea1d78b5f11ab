"""A console log reads the same whatever a wrapper prints before its logger's own prefix (#24): every time
stamp on a line is blanked with its zone (ISO's `Z`, `+02:00`), the first is the line's wall time. Fixtures
are written here by Python's `logging` (the loguru-like layout) and a wrapper's ISO stamps; a lookalike
(a stamped list of settings) stays refused."""
from __future__ import annotations

import math

import polars as pl
import pytest

from spikelens import api
from spikelens.errors import SpikelensError
from spikelens.importers.linetokens import tokenise

LOSSES = [round(3.0 * math.exp(-e / 6) + 0.2, 6) for e in range(30)]


def _loguru(e: int, v: float) -> list[str]:
    stamp = f"2022-06-24 15:53:{e:02d}.290 | INFO     | __main__:<module>:"
    return [f"{stamp}8 - epoch{e + 1}/30:", f"{stamp}9 - train_loss:{v}", f"{stamp}10 - train_mape:{v * 9:.4f}%"]


@pytest.mark.parametrize("wrapper", ["", "2024-05-01T12:00:00.123Z ", "2024-05-01T12:00:00+02:00 ",
                                     "2024-05-01 12:00:00,123 "])
def test_a_wrappers_stamp_before_the_loggers_reads_the_same(tmp_path, wrapper):
    lines = [f"{wrapper}{ln}" for e, v in enumerate(LOSSES) for ln in _loguru(e, v)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    frame = api.load(str(tmp_path / "train.log"))
    assert sorted(frame.get_column("metric").unique()) == ["train_loss", "train_mape_pct"]
    loss = frame.filter(pl.col("metric") == "train_loss").sort("seq")
    assert loss.get_column("value").to_list() == LOSSES
    assert loss.get_column("step").n_unique() == len(LOSSES)


def test_the_zone_is_no_metric_and_the_first_stamp_is_the_wall_time():
    t = tokenise("2024-05-01T12:00:00.123Z 2022-06-24 15:53:43.292 | INFO | __main__:<module>:9 - loss:1.5")
    assert [name for name, _, _ in t.values] == ["loss"]
    assert t.stamp == (0, len("2024-05-01T12:00:00.123"))


def test_stamped_settings_stay_refused(tmp_path):
    (tmp_path / "train.log").write_text("".join(
        f"2024-05-01T12:00:0{i % 10}Z {name} ........ {value}\n"
        for i, (name, value) in enumerate([("lr", 0.001), ("batch_size", 32), ("epochs", 100), ("seed", 42)] * 5)))
    with pytest.raises(SpikelensError):
        api.load(str(tmp_path / "train.log"))


def _modded(total: int = 40) -> list[str]:
    """modded-nanogpt's printout (`step:N/T train_loss:... train_time:...ms step_avg:...ms`), with its val lines."""
    out = []
    for s in range(total + 1):
        if s % 10 == 0:
            out.append(f"step:{s}/{total} val_loss:{4.0 - s / 20:.4f} train_time:{s * 90}ms step_avg:{90.0:.2f}ms")
        if s:
            out.append(f"step:{s}/{total} train_loss:{4.2 - s / 19:.4f} train_time:{s * 90}ms step_avg:{90.0:.2f}ms")
    return out


@pytest.mark.parametrize("prefix", ["[12:00:01] ", "[rank0]:[titan] ", "I0501 12:00:00.123456  1234 train.py:88] ",
                                    "2024-05-01T12:00:00.123Z ", "INFO:root:"])
def test_a_named_line_pattern_reads_through_a_launchers_decoration(tmp_path, prefix):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "train.log").write_text("\n".join(_modded()) + "\n")
    (tmp_path / "train.log").write_text("\n".join(prefix + ln for ln in _modded()) + "\n")
    key = ["metric", "step", "value"]
    want = api.load(str(tmp_path / "plain" / "train.log")).select(key).sort(key)
    got = api.load(str(tmp_path / "train.log")).select(key).sort(key)
    assert got.equals(want)
    assert want.filter(pl.col("metric") == "train_loss").height == 40


@pytest.mark.parametrize("prefix", ["", "[12:00:01] ", "[2024-05-01 12:00:00] "])
def test_a_boosters_round_after_a_bracketed_time_is_the_step(tmp_path, prefix):
    """LightGBM's `[100]\\ttrain's auc: 0.78` behind a bracketed time: the brackets left holding only the
    blanked time are decoration, so the round in brackets still opens the line."""
    rows = [f"{prefix}[{r}]\ttrain's auc: {0.77 + r / 10_000:.6f}\tvalid's auc: {0.76 + r / 20_000:.6f}"
            for r in range(100, 1_100, 100)]
    (tmp_path / "training_log.txt").write_text("Training until validation scores don't improve for 50 rounds\n"
                                               + "\n".join(rows) + "\n")
    auc = api.load(str(tmp_path / "training_log.txt")).filter(pl.col("metric") == "train_s_auc").sort("seq")
    assert auc.get_column("step").to_list() == list(range(100, 1_100, 100))
