"""Rows of bare numbers among a text log's other lines, read as the table they are.

A training loop that prints `print(epoch, i, loss.item())` (or logs it through `logging`, each line after
its `asctime - ` prefix) leaves a file a person reads at a glance even when the launcher's date lines, a
traceback, a learning-rate list or a relaunch's banner stand between the rows: the rows are the log, the
rest is its surroundings. When no key names any number of a text file, its lines of bare numbers of one
width (after a time stamp or a logger's prefix), with the epoch headers over them (`epoch 0 lr 0.0001`),
are read by the headerless-table rules (`barenumbers`): leading counters are the step, the first measured
number of a training log its loss. They must be most of the lines that hold numbers; the lines left out
are told in one warning.
"""
from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from . import lineprefix
from .barenumbers import MIN_LINES, _HEADER, _ROW, _width, BareNumbersImporter
from .base import Table
from .commentheader import header_names
from .csvlogs import stem_name as _name_of
from .decoding import decode_file
from .textlines import split_lines

MOST = 0.6
"""The share of the lines holding numbers the rows (and their epoch headers) must make up."""
LIMIT = 64 << 20
"""Files larger than this are not read whole for rows (a log this large names its numbers)."""
_PREFIX = re.compile(
    r"^[ \t]*\[?(?:\d{4}[-/]\d\d[-/]\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?\]?[ \t]*(?:\[?(?i:info|debug|warning|warn)\]?)?"
    r"[ \t]*(?:-|\||:)?[ \t]*")
"""A time stamp and perhaps a level before the message (`2022-05-09 19:29:18,641 - `, `[12:00:01] INFO | `)."""


def read(path: Path, keyed: int = 0) -> list[Table] | None:
    """The table of the rows of bare numbers among a text log's lines, None when they are not most of its
    numbered lines or fewer than MIN_LINES, or when no number of theirs is read as a loss or a score. `keyed`:
    the values its keyed lines gave (settings, times) that these rows are to replace: the rows must outnumber them."""
    try:
        if path.stat().st_size > LIMIT:
            return None
        text = decode_file(path, path.read_bytes())
    except OSError:
        return None
    every = split_lines(text)
    said = every.filter(pl.col("text").str.strip_chars() != "")
    said = said.with_columns(lineprefix.strip_series(said.get_column("text")).str.replace(_PREFIX.pattern, "").alias("said"))
    said = said.filter(pl.col("said").str.contains(r"\d"))
    numbered, at = said.get_column("said"), said.get_column("row")
    is_row = numbered.str.contains(f"^(?:{_ROW.pattern})$")
    rows = numbered.filter(is_row)
    if rows.len() < MIN_LINES:
        return None
    widths = rows.map_elements(_width, return_dtype=pl.Int64)
    width = widths.mode().sort()[-1]
    keep = is_row & numbered.map_elements(_width, return_dtype=pl.Int64).eq(width) | numbered.str.contains(_HEADER)
    if keep.sum() < MOST * numbered.len() or width < 2 and not numbered.filter(keep).str.contains(_HEADER).any() \
            and not _named_measure(path):
        return None  # one bare column among other lines is read only when a header or the file's name names it
    kept = numbered.filter(keep)
    if kept.len() <= keyed:
        return None
    header = _header_over(every, int(at.filter(keep)[0]), width) if is_row.filter(keep)[0] else None
    if header is not None:  # `Step\tTraining Loss` over the rows: the names a person reads them by
        kept = pl.concat([pl.Series(["# " + "\t".join(header)]), kept])
    try:
        with diagnostics.collecting() as diag:
            tables = BareNumbersImporter().read_lines(path, kept)
    except FormatError:
        return None
    for line in diag.lines:
        diagnostics.warn(line)
    data = at.filter(keep & ~numbered.str.contains(_HEADER))  # the rows' lines, headers left out
    for table in tables:
        table.meta.update(_signals(every, data, table))
    rows_read = kept.len() - (header is not None)
    left = numbered.len() - rows_read
    if left:
        diagnostics.warn(f"{path}: read its {rows_read} rows of bare numbers; {left} other line(s) with numbers "
                         f"(banners, tracebacks, other prints) left out")
    return tables


def _header_over(every: pl.DataFrame, first: int, width: int) -> list[str] | None:
    """The names on the line just above the first row (a notebook's copied `Step\tTraining Loss` table, a
    script's `print('epoch\tloss\tacc')` before its loop), when that line holds no digit and gives as many
    names as the rows hold numbers, one of them a measure; else None."""
    from ..frame import infer_roles

    above = every.filter((pl.col("row") < first) & (pl.col("text").str.strip_chars() != "")).tail(1)
    if not above.height:
        return None
    line = lineprefix.strip_series(above.get_column("text")).str.replace(_PREFIX.pattern, "")[0].strip()
    if re.search(r"\d", line) or not line:
        return None
    names = header_names("# " + line, width)
    if names is None or all(r == "other" for r in infer_roles(names).values()):
        return None
    return names


def _named_measure(path: Path) -> bool:
    """Whether the file's name names what its numbers measure (`loss.txt`, `train_loss.log`), as it does
    for a file of bare numbers alone: warnings or a traceback between them do not unname them."""
    from ..frame import infer_role

    return infer_role(_name_of(path)) != "other"


def _signals(every: pl.DataFrame, data: pl.Series, table: Table) -> dict:
    """What the log's other lines say about the run (a traceback before a relaunch, the error it ended
    with; `textsignals`), placed by the rows' lines: the first series' steps, one a row."""
    from . import textsignals
    from .linerecords import CONSOLE

    first = table.frame.filter(pl.col("metric") == table.frame.item(0, "metric")).get_column("step")
    steps = first if first.len() == data.len() else pl.Series(range(data.len()))
    rows = pl.DataFrame({"row": data.cast(pl.Int64), "step": steps.cast(pl.Int64)})
    return textsignals.signal_meta(every, CONSOLE, rows)
