"""A line redrawn with `\\r`, read as a terminal shows it: the last redraw wins.

A progress bar (tqdm) writes each update as `\\r` and the whole line again, and `\\n` only when it
closes; a captured console keeps every redraw on one physical line, and the reader cuts it at each
`\\r`. A person reads what the terminal shows, the last redraw, so two kinds of redraw that a later
one on the same physical line overwrites are no records:

- a bar alone (`Training:  42%|####  | 420/1000 [01:02<01:26,  6.70it/s]`: its values are only its
  speed), over which a message was printed (`tqdm.write`, a logger's line after the bar's `\\r`), not its
  own next redraw (the bar's speed at each step is a step time);
- a table's row printed as a bar's description (YOLOv5/v7's `  0/299  3.41G  0.08  ...  640:  42%|`),
  redrawn at every batch with the running means: the epoch's row is its last redraw, as the
  trainer's own `results.txt` has it (one row an epoch, not a row a batch whose count restarts).

Redraws of any other record (Keras' `12/100 [===>...] - loss: 0.51`, a bar whose postfix holds the
loss) are each read, as before.
"""
from __future__ import annotations

from typing import Iterable

import polars as pl

from .lineprefix import BAR as _TQDM

BAR = rf"{_TQDM}|\d{{1,3}}%\s*[━─╸╺█▏▎▍▌▋▊▉#=\-]{{3,}}"
"""A progress bar on a line: tqdm's (`42%|####  |`) or one drawn with rules (Ultralytics' `33% ━━━━`, which
`decoding` turns into `33% ----`)."""


def overwritten(lines: pl.DataFrame, bar_kinds: Iterable[int], table_sids: Iterable[int]) -> pl.Expr | None:
    """True for the segments of `lines` (`row`, `line_no`, `kind`, `_sid`, `total`: the text of the
    counter's total or null, in file order) that a later segment of their physical line overwrites and
    that are no records (see the module doc); None when no physical line holds two segments. A bar
    is overwritten by a message, not by its own next redraw (the same total: a bar's speed at each
    step stays a step time)."""
    if lines.height < 2 or lines.get_column("line_no").n_unique() == lines.height:
        return None
    later = pl.col("row") < pl.col("row").max().over("line_no")
    total = pl.col("total").fill_null("")
    redrawn_bar = total.shift(-1).over("line_no").fill_null("") == total
    bar = pl.col("kind").is_in(list(bar_kinds)) & ~(redrawn_bar & (total != ""))
    row = pl.col("_sid").is_in(list(table_sids)) & (pl.col("kind") == pl.col("kind").last().over("line_no"))
    return later & (bar | row)
