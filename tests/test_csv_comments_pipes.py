"""CSV tables as scripts write them (#24): `#` comment lines over the header (a run's settings, the
command line), and pipes as the separator (`df.to_csv(sep='|')`, `csv.writer(f, delimiter='|')`).
Fixtures are written here with the standard `csv` module and NumPy."""
from __future__ import annotations

import csv
import math

import numpy as np
import polars as pl
import pytest

from spikelens import api

LOSS = [3 * math.exp(-i / 30) + 0.3 for i in range(80)]


def _read(path):
    frame = api.load(str(path))
    return {m: frame.filter(pl.col("metric") == m).sort("step").select("step", "value").rows()
            for m in frame.get_column("metric").unique().to_list()}


def _rows(path, delimiter, lead=()):
    with open(path, "w", newline="") as f:
        for line in lead:
            f.write(line + "\n")
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(["step", "loss", "val_acc"])
        for i, loss in enumerate(LOSS):
            w.writerow([i * 10, f"{loss:.5f}", f"{0.5 + i * 0.005:.4f}"])


@pytest.mark.parametrize("name,delimiter", [("metrics.csv", ","), ("metrics.tsv", "\t"), ("metrics.csv", ";")])
def test_comment_lines_over_the_header_are_skipped_with_a_warning(tmp_path, name, delimiter):
    path = tmp_path / name
    _rows(path, delimiter, lead=["# python train.py --lr 1e-3, --seed 3", "# started 2024-01-01 10:00"])
    with pytest.warns(Warning, match="2 line.s. before the header"):
        got = _read(path)
    assert [s for s, _ in got["loss"]] == [i * 10 for i in range(80)]
    assert [round(v, 5) for _, v in got["loss"]] == [round(v, 5) for v in LOSS]
    assert set(got) == {"loss", "val_acc"}


def test_a_pipe_separated_table_reads_its_columns(tmp_path):
    path = tmp_path / "metrics.csv"
    _rows(path, "|")
    got = _read(path)
    assert set(got) == {"loss", "val_acc"}
    assert [round(v, 5) for _, v in got["loss"]] == [round(v, 5) for v in LOSS]


def test_a_commented_header_over_rows_stays_the_header(tmp_path):
    # np.savetxt(header=...) comments out the header itself: the names are its, not a preamble's
    path = tmp_path / "losses.txt"
    np.savetxt(path, np.column_stack([np.arange(80) * 10, LOSS]), header="step loss", fmt=["%d", "%.5f"])
    got = _read(path)
    assert [round(v, 5) for _, v in got["loss"]] == [round(v, 5) for v in LOSS]


def test_a_markdown_row_is_no_pipe_separated_header(tmp_path):
    from spikelens.importers.csvlogs import separator_of

    assert separator_of("| step | loss |") == ","
    assert separator_of("step|loss|acc") == "|"
    assert separator_of("step,loss|x") == ","
