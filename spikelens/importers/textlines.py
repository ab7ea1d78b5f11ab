"""A text's lines as a frame: the one split every text reader and signal starts from (its own
module so the signals, which also read a file's tail, do not import the reader that uses them)."""
from __future__ import annotations

import polars as pl

_CUT = "\x00"
"""Appended to a last line that has no newline: a value running into the end of the
file may be cut short, and `END` in the regexes does not accept this character."""


def split_lines(text: str) -> pl.DataFrame:
    """`row` (read order), `line_no` (0-based, by newline) and `text`; a carriage return
    (progress bars) also ends a piece of a line."""
    cut = bool(text) and not text.endswith(("\n", "\r"))
    if cut:
        text += _CUT
    frame = (
        pl.DataFrame({"text": [text]})
        .select(pl.col("text").str.split("\n"))
        .explode("text")
        .with_row_index("line_no")
    )
    if "\r" not in text:  # no progress bars: a row is a line (saves a second split of every line)
        return frame.select(pl.col("line_no").cast(pl.Int64).alias("row"), pl.col("line_no").cast(pl.Int64), "text")
    frame = frame.with_columns(pl.col("text").str.split("\r")).explode("text").with_row_index("row")
    return frame.with_columns(pl.col("row").cast(pl.Int64), pl.col("line_no").cast(pl.Int64))
