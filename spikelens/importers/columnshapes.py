"""What a headerless table's columns are, told by their shape when nothing names them.

`f.write(f"{epoch} {loss:.6f}\\n")` into `history.txt`, `np.savetxt('log.txt', np.c_[epochs, losses])`:
no header, and a file name that says no measure. A person still reads it: the first column counts
the rows (whole numbers that rise), and the positive column that falls over the run beside it is
what training lowers, the loss. Only that one column is named (`history_loss_column2`: the file,
the role its shape gave it, its place as a person counts); the others keep their place names.
A table with no counter, or no such column, is refused with that reason: its numbers may be
anything (features, predictions), and guessing would judge a file that is no training log. A fall is
both large (a fifth at least, first twentieth to last tenth) and steady (rank correlation with the
row order at most -0.5), so a noisy flat column is not taken for one.
"""
from __future__ import annotations

import numpy as np
import polars as pl

FALL = 1.2
"""How much a loss falls over a run at least: its first twentieth's median over its last tenth's."""
TREND = -0.5
"""And how steadily: its rank correlation with the row order at most this (noise alone is near 0)."""
MIN_ROWS = 10


def leading_column(rows: list[list[str]]) -> np.ndarray | None:
    """The first column of rows of two numbers or more, all as wide, when it is whole numbers
    (where a person looks for the counter); else None."""
    if len(rows) < 2 or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
        return None
    try:
        first = np.array([float(r[0]) for r in rows])
    except ValueError:
        return None
    return first if bool(np.all(first % 1 == 0)) else None


def counted_rows(rows: list[list[str]]) -> bool:
    """Rows of two numbers or more, all as wide, led by whole numbers that never go down and rise
    (the counter a person reads first): a table its shape may name."""
    first = leading_column(rows)
    if first is None:
        return False
    d = np.diff(first)
    return bool(np.all(d >= 0) and np.any(d > 0))


def falling_column(cols: pl.DataFrame) -> str | None:
    """The first column (in place order) of finite positive values that falls over the rows as a loss
    does: its first twentieth's median at least FALL times its last tenth's, and its rank correlation
    with the row order at most TREND (a steady fall, not noise); None when no column falls so."""
    if cols.height < MIN_ROWS:
        return None
    head = cols.head(max(cols.height // 20, 3)).median().row(0)
    tail = cols.tail(max(cols.height // 10, 3)).median().row(0)
    stats = cols.select(
        *[(pl.col(c).is_finite() & (pl.col(c) > 0)).all().alias(f"ok:{c}") for c in cols.columns],
        *[pl.corr(pl.col(c), pl.int_range(pl.len()), method="spearman").alias(f"r:{c}") for c in cols.columns],
    ).row(0, named=True)
    for name, h, t in zip(cols.columns, head, tail):
        r = stats[f"r:{name}"]
        if stats[f"ok:{name}"] and h is not None and t and h >= FALL * t and r is not None and r <= TREND:
            return name
    return None


def loss_name(stem: str, place: int) -> str:
    """`history_loss_column2`: the file's name, the role the column's shape gave it, its place."""
    return f"{stem}_loss_column{place}"


def unnamed_reason(rows: int, width: int, counted: bool) -> str:
    """Why a headerless table named by nothing was not read: one line a user can act on."""
    what = "no column falls as a loss does beside the counter" if counted else "no first column counts the rows"
    return (f"{rows} lines hold numbers but no key names their numbers ({width} a row, the file's name "
            f"names no measure, and {what}): add a header, or name the file for what it holds (loss.txt)")
