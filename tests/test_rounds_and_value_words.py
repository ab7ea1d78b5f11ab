"""Two ways people print what they measure (#24): a federated run's `Round N` line heading the server's
stats (`server stats: [loss: 1.925`, the bracket never closed), and a value word glued to the name in CJK
prints (`loss值`, `損失の値`, `loss 값`). Fixtures are written here as the scripts print them."""
from __future__ import annotations

import math

import polars as pl

from spikelens import api
from spikelens.importers.seriesnames import plain_name


def test_rounds_head_the_server_stats_they_report(tmp_path):
    lines = []
    for r in range(20):
        lines += [f"Round {r}", f"server stats: [loss: {2.0 + 0.05 * math.sin(r):.3f}",
                  f"server stats: [accuracy: {55 + 10 * math.sin(r / 2):.3f}"]
    (tmp_path / "nohup.out").write_text("\n".join(lines) + "\n")
    frame = api.load(str(tmp_path / "nohup.out"))
    loss = frame.filter(pl.col("metric") == "loss").sort("seq")
    assert loss.get_column("step").to_list() == list(range(20))
    assert frame.filter(pl.col("metric") == "accuracy").height == 20


def test_a_value_word_after_the_name_is_no_part_of_it(tmp_path):
    assert [plain_name(n) for n in ("loss值", "loss的值", "損失の値", "loss 값")] == ["loss", "loss", "損失", "loss"]
    values = [7.658917] + [1.2 * math.exp(-i / 10) + 0.1 for i in range(29)]
    (tmp_path / "loss.log").write_text(f"loss值{values[0]}\n" + "".join(f"{v:.6f}\n" for v in values[1:]))
    frame = api.load(str(tmp_path / "loss.log"))
    assert frame.get_column("metric").unique().to_list() == ["loss"] and frame.height == 30
