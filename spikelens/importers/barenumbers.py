"""A file of bare numbers, one a line (`np.savetxt('loss.txt', losses)`, `f.write(f'{loss}\\n')`).

No key names the numbers; the file's name does (`loss.txt` holds the loss, `train_loss.log`
the train loss, `rewards.txt` the rewards), as a person reads it. A file whose name says no
such thing (`data.txt`, `labels.txt`) is not claimed: its numbers may be anything. The step is the line's place among the numbers (the
file says nothing else). Blank lines are skipped; a file with any other line is not this
format (the text reader says why it cannot read it).
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

MIN_LINES = 10
"""Fewer numbers than this are no curve (a score written once per run)."""
_BARE = re.compile(r"[ \t]*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))[ \t]*")


def _name_of(path: Path) -> str:
    """`loss.txt` -> `loss`, `G_losses.txt` -> `G_losses`: the stem, its spaces as `_`."""
    return re.sub(r"\s+", "_", path.stem.strip()) or "value"


class BareNumbersImporter(Importer):
    """One number a line, named by the file."""

    name = "bare-numbers"
    looks_for = "*.txt, *.log, *.out files of one number a line, named by the file (loss.txt)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in TEXT_SUFFIXES or not path.stem or b"\x00" in head[:1024]:
            return False
        from ..frame import infer_role

        if infer_role(_name_of(path)) == "other":
            return False
        lines = [ln for ln in text_head(head).replace("\r", "\n").split("\n")[:-1] if ln.strip()]
        whole = len(head) < 4096
        if whole:  # the whole file is in its head: its last line is complete
            lines = [ln for ln in text_head(head).replace("\r", "\n").split("\n") if ln.strip()]
        return len(lines) >= (MIN_LINES if whole else 2) and all(_BARE.fullmatch(ln) for ln in lines)

    def read(self, path: Path) -> list[Table]:
        text = text_head(path.read_bytes())
        lines = pl.Series("text", text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        lines = lines.filter(lines.str.strip_chars() != "")
        bad = lines.filter(~lines.str.contains(f"^(?:{_BARE.pattern})$"))
        if bad.len():
            raise FormatError(f"{path}: not one number a line (line {bad[0][:60]!r} holds more)")
        if lines.len() < MIN_LINES:
            raise FormatError(f"{path}: {lines.len()} numbers, fewer than {MIN_LINES}: no curve")
        values = lines.to_frame().select(to_float(pl.col("text"))).to_series().to_numpy()
        n = values.size
        frame = long_table(np.arange(n, dtype=np.int64), [None] * n, [_name_of(path)] * n, values)
        return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta={"step.from": "order", "metric.from": "the file's name"})]
