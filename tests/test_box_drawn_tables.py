"""Tables a terminal drew (#24): rich's and prettytable's borders (`│ ┃ ║`, `─ ━ ═`, `┌ ┼ ╪ ╭`) read as
the pipe tables they stand for. Fixtures are drawn here by the real rich, in each of its box styles,
and compared with the same table drawn in ASCII."""
from __future__ import annotations

import io
import math

import polars as pl
import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from spikelens import api
from spikelens.importers.decoding import ascii_rules, clean_bytes

ROWS = [(i * 10, 3 * math.exp(-i / 30) + 0.3 + 0.01 * (i % 3), 0.5 + i * 0.004) for i in range(60)]


def _draw(style, rows=ROWS, header=("step", "loss", "val_acc")) -> str:
    out = io.StringIO()
    table = Table(box=style)
    for name in header:
        table.add_column(name)
    for step, loss, acc in rows:
        table.add_row(str(step), f"{loss:.4f}", f"{acc:.4f}")
    Console(file=out, width=120, color_system=None).print(table)
    return out.getvalue()


def _values(path):
    frame = api.load(str(path))
    return {m: frame.filter(pl.col("metric") == m).sort("step").select("step", "value").rows()
            for m in frame.get_column("metric").unique().to_list()}


@pytest.mark.parametrize("style", ["SQUARE", "HEAVY_HEAD", "ROUNDED", "DOUBLE", "MINIMAL", "SIMPLE_HEAVY", "HEAVY"])
def test_a_box_drawn_table_reads_as_its_ascii_twin(tmp_path, style):
    (tmp_path / "drawn").mkdir()
    (tmp_path / "ascii").mkdir()
    (tmp_path / "drawn" / "train.log").write_text(_draw(getattr(box, style)), encoding="utf-8")
    (tmp_path / "ascii" / "train.log").write_text(_draw(box.ASCII), encoding="utf-8")
    drawn = _values(tmp_path / "drawn" / "train.log")
    assert drawn == _values(tmp_path / "ascii" / "train.log")
    assert [s for s, _ in drawn["loss"]] == [r[0] for r in ROWS]
    assert [round(v, 4) for _, v in drawn["loss"]] == [round(r[1], 4) for r in ROWS]
    (run,) = api.analyze(str(tmp_path / "drawn"), jobs=1).runs
    assert run.metrics == {"loss": "loss", "val_acc": "accuracy"}


def test_a_table_drawn_each_epoch_is_one_curve(tmp_path):
    text = "".join(f"epoch {row[0] // 10} done\n" + _draw(box.SQUARE, [row], ("step", "loss", "acc")) for row in ROWS)
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    got = _values(tmp_path / "train.log")
    assert [round(v, 4) for _, v in got["loss"]] == [round(r[1], 4) for r in ROWS]


def test_every_box_character_becomes_one_ascii_character():
    drawn = "".join(chr(c) for c in range(0x2500, 0x2580))
    out = ascii_rules(drawn.encode()).decode()
    assert len(out) == len(drawn) and set(out) <= set("|-+ ")
    assert ascii_rules("│".encode()) == b"|" and ascii_rules("═".encode()) == b"-" and ascii_rules("╭".encode()) == b"+"
    plain = "step 1 loss 2.0 ▌█ progress\n".encode()  # block elements of progress bars are no borders
    assert ascii_rules(plain) is plain
    assert clean_bytes("│ 3 │ 0.5 │\n".encode("utf-16"))[0] == b"| 3 | 0.5 |\n"
