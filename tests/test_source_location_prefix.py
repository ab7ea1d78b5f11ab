"""A logger's source location closing its bracketed prefix (`[NeMo I 2023-01-01 12:00:00 trainer:329]`,
`%(module)s:%(lineno)d]`) is part of the prefix, never a metric (#24); a count in brackets (`[epoch:3]`,
`[batch 5 step:100]`) still counts. Fixtures are the lines NeMo's logging formatter and scripts print."""
from __future__ import annotations

import math

import polars as pl

from spikelens import api
from spikelens.importers.linetokens import tokenise


def _named(line):
    t = tokenise(line)
    return [(n, line[s:s + k]) for n, s, k in t.values]


def test_a_location_closing_a_loggers_prefix_is_no_value():
    assert _named("[NeMo I 2023-01-01 12:00:00 trainer:329] step 100 loss 2.31") == [("loss", "2.31")]
    assert _named("[NeMo W 2023-01-01 12:00:00 nemo_logging:349] epoch 2 val_loss: 0.31") == [("val_loss", "0.31")]


def test_a_count_in_brackets_still_counts():
    t = tokenise("[train epoch:3] loss 0.5")
    assert t.epoch is not None and _named("[train epoch:3] loss 0.5") == [("loss", "0.5")]
    line = "Epoch 3 [batch 5 step:100] loss: 0.5"
    t = tokenise(line)
    assert line[t.step[1]:sum(t.step[1:])] == "100"


def test_a_nemo_style_log_reads_its_loss_alone(tmp_path):
    lines = [f"[NeMo I 2023-01-01 12:{s // 60 % 60:02d}:{s % 60:02d} trainer:{300 + s % 7}] step {s} "
             f"loss {3 * math.exp(-s / 20) + 0.2:.4f}" for s in range(60)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    frame = api.load(str(tmp_path / "train.log"))
    assert set(frame.get_column("metric").unique().to_list()) == {"loss"}
    assert frame.filter(pl.col("metric") == "loss").sort("seq").get_column("step").to_list() == list(range(60))
