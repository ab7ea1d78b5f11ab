"""A file of bare numbers, one a line (`np.savetxt('loss.txt', losses)`, `f.write(f'{loss}\\n')`),
or a row of them a line with no header (`rewards.csv`: `i,r1,r2`).

No key names the numbers; the file's name does (`loss.txt` holds the loss, `train_loss.log`
the train loss, `rewards.txt` the rewards), as a person reads it. A file whose name says no
such thing (`data.txt`, `labels.txt`) is not claimed: its numbers may be anything. The step is the line's place among the numbers (the
file says nothing else). Blank lines are skipped; a file with any other line is not this
format (the text reader says why it cannot read it).

Rows of several numbers are columns the file names together: each is the file's name and its
place (`rewards_column2`, counted from 1 as a person counts them), except a first column of
whole numbers that only goes up (by one, or by a stride: `1000,5.02` of a loss saved every 1,000
steps, `1028,-19` of an episode's return at its frame count; restarting low in appended runs):
that is the x axis a person plots the rest against, the step.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import FormatError
from .base import Importer, Table, long_table, to_float
from .decoding import text_head
from .textlogs import TEXT_SUFFIXES

SUFFIXES = TEXT_SUFFIXES | {".csv", ".tsv"}
MIN_LINES = 10
"""Fewer numbers than this are no curve (a score written once per run)."""
_ONE = r"[ \t]*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))[ \t]*"
_BARE = re.compile(_ONE)
_ROW = re.compile(rf"{_ONE}(?:[,\t]{_ONE})*")
"""A row of bare numbers (`np.savetxt(..., delimiter=',')`, `writer.writerow([i, r1, r2])`): no header."""


def _name_of(path: Path) -> str:
    """`loss.txt` -> `loss`, `G_losses.txt` -> `G_losses`: the stem, its spaces as `_`."""
    return re.sub(r"\s+", "_", path.stem.strip()) or "value"


class BareNumbersImporter(Importer):
    """One number a line, named by the file."""

    name = "bare-numbers"
    looks_for = "*.txt, *.log, *.out files of one number a line, named by the file (loss.txt)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in SUFFIXES or not path.stem or b"\x00" in head[:1024]:
            return False
        from ..frame import infer_role

        if infer_role(_name_of(path)) == "other":
            return False
        lines = [ln for ln in text_head(head).replace("\r", "\n").split("\n")[:-1] if ln.strip()]
        whole = len(head) < 4096
        if whole:  # the whole file is in its head: its last line is complete
            lines = [ln for ln in text_head(head).replace("\r", "\n").split("\n") if ln.strip()]
        return len(lines) >= (MIN_LINES if whole else 2) and all(_ROW.fullmatch(ln) for ln in lines) \
            and len({_width(ln) for ln in lines}) == 1

    def read(self, path: Path) -> list[Table]:
        text = text_head(path.read_bytes())
        lines = pl.Series("text", text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        lines = lines.filter(lines.str.strip_chars() != "")
        bad = lines.filter(~lines.str.contains(f"^(?:{_ROW.pattern})$"))
        if bad.len():
            raise FormatError(f"{path}: not one row of numbers a line (line {bad[0][:60]!r} holds more)")
        if lines.len() < MIN_LINES:
            raise FormatError(f"{path}: {lines.len()} numbers, fewer than {MIN_LINES}: no curve")
        width = _width(lines[0])
        cols = lines.str.split_exact("\t" if "\t" in lines[0] else ",", width - 1).struct.unnest() if width > 1 \
            else lines.to_frame("field_0")
        cols = cols.select(to_float(pl.col(c).str.strip_chars()).alias(c) for c in cols.columns)
        if cols.select(pl.any_horizontal(pl.all().is_null()).any()).item():
            raise FormatError(f"{path}: the rows do not all hold {width} numbers")
        n = cols.height
        steps, meta = np.arange(n, dtype=np.int64), {"step.from": "order", "metric.from": "the file's name"}
        first = cols.to_series(0)
        if width > 1 and _counts(first):
            steps, cols = first.cast(pl.Int64).to_numpy(), cols.drop(cols.columns[0])
            meta["step.from"] = "the first column (whole numbers that only go up)"
        name = _name_of(path)
        names = [name] if cols.width == 1 and width == 1 else [f"{name}_column{width - cols.width + k + 1}"
                                                              for k in range(cols.width)]
        frame = pl.concat([long_table(steps, [None] * n, [m] * n, cols.to_series(k).to_numpy())
                           for k, m in enumerate(names)])
        return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta=meta)]


def _width(line: str) -> int:
    return len(re.split(r"[,\t]", line.strip()))


def _counts(col: pl.Series) -> bool:
    """Whole numbers that go up (a row counter, a step every N, a frame count), maybe starting
    again at or below the first one (appended runs): nine rows in ten or more rise."""
    if col.null_count() or not bool((col % 1 == 0).all()) or col.len() < 2:
        return False
    d = col.diff().drop_nulls()
    restart = (d < 0) & (col.slice(1) <= max(float(col[0]), 1.0))
    return bool(((d > 0) | restart).all()) and int((d > 0).sum()) >= 0.9 * d.len()
