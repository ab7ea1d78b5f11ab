"""What a headerless table's columns are, told by their shape when nothing names them.

`f.write(f"{epoch} {loss:.6f}\\n")` into `history.txt`, `np.savetxt('log.txt', np.c_[epochs, losses])`:
no header, and a file name that says no measure. A person still reads it: the first column counts
the rows (whole numbers that rise), and the positive column that falls over the run beside it is
what training lowers, the loss. Only that one column is named (`history_loss_column2`: the file,
the role its shape gave it, its place as a person counts); the others keep their place names.
A column of values bounded in [0, 1] or in [0, 100] that rises as steadily beside the counter is
what training raises, a score (`progress.csv` of `epoch,accuracy`: `progress_score_column2`).
A table with no counter, or no such column, is refused with that reason: its numbers may be
anything (features, predictions), and guessing would judge a file that is no training log. A fall is
both large (a fifth at least, first twentieth to last tenth) and steady (rank correlation with the
row order at most -0.5), so a noisy flat column is not taken for one; a rise the same (a twentieth
of its scale at least, rank correlation at least +0.5).
One number a line and nothing else, in a file whose name names nothing (`out.txt`), is read by the
same shapes (a curve in line order), but only where it stands alone: no other file in its folder looks
like a log (`alone`). Beside named logs such a file is a model's output as often as a curve (features,
predictions, a data set's column), so it is not read by guess there.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

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


def _ends(cols: pl.DataFrame) -> tuple[tuple, tuple]:
    """Each column's first twentieth's and last tenth's medians (three rows at least): where a run
    started and where it ended, as the shape tests compare them."""
    return cols.head(max(cols.height // 20, 3)).median().row(0), cols.tail(max(cols.height // 10, 3)).median().row(0)


def _trends(cols: pl.DataFrame) -> list[pl.Expr]:
    """Each column's rank correlation with the row order (`r:<column>`): a steady trend, not noise."""
    return [pl.corr(pl.col(c), pl.int_range(pl.len()), method="spearman").alias(f"r:{c}") for c in cols.columns]


def falling_column(cols: pl.DataFrame) -> str | None:
    """The first column (in place order) of finite positive values that falls over the rows as a loss
    does: its first twentieth's median at least FALL times its last tenth's, and its rank correlation
    with the row order at most TREND (a steady fall, not noise); None when no column falls so."""
    if cols.height < MIN_ROWS:
        return None
    head, tail = _ends(cols)
    stats = cols.select(
        *[(pl.col(c).is_finite() & (pl.col(c) > 0)).all().alias(f"ok:{c}") for c in cols.columns], *_trends(cols),
    ).row(0, named=True)
    for name, h, t in zip(cols.columns, head, tail):
        r = stats[f"r:{name}"]
        if stats[f"ok:{name}"] and h is not None and t and h >= FALL * t and r is not None and r <= TREND:
            return name
    return None


RISE = 0.05
"""How much a score rises over a run at least: a twentieth of its scale (0.05 of [0, 1], 5 of [0, 100])."""
STEADY = 10.0
"""A rise is steady too when it is this many times the median move from row to row (an accuracy that rose
then held for most of the run, its noise around the plateau hiding the trend from a rank correlation)."""
SCALES = (1.0, 100.0)
"""The bounds a score is written in: a fraction or a percentage."""


def rising_score(cols: pl.DataFrame) -> str | None:
    """The first column (in place order) of finite values within [0, 1] or [0, 100] that rises over the rows
    as a score does: its last tenth's median at least RISE of its scale over its first twentieth's, and its
    rank correlation with the row order at least -TREND or the rise STEADY times its typical move; None when
    no column rises so."""
    if cols.height < MIN_ROWS:
        return None
    head, tail = _ends(cols)
    stats = cols.select(
        *[pl.col(c).is_finite().all().alias(f"ok:{c}") for c in cols.columns],
        *[pl.col(c).min().alias(f"lo:{c}") for c in cols.columns],
        *[pl.col(c).max().alias(f"hi:{c}") for c in cols.columns],
        *_trends(cols),
        *[pl.col(c).diff().abs().median().alias(f"d:{c}") for c in cols.columns],
    ).row(0, named=True)
    for name, h, t in zip(cols.columns, head, tail):
        lo, hi, r, d = stats[f"lo:{name}"], stats[f"hi:{name}"], stats[f"r:{name}"], stats[f"d:{name}"]
        if not stats[f"ok:{name}"] or lo is None or lo < 0 or h is None or t is None or r is None:
            continue
        if r < -TREND and not (d is not None and t - h >= STEADY * d):  # (a rise then a long noisy plateau: steady too)
            continue
        scale = next((b for b in SCALES if hi <= b), None)
        if scale is not None and t - h >= RISE * scale:
            return name
    return None


def score_name(stem: str, place: int | None) -> str:
    """`progress_score_column2`: the file's name, the role the column's shape gave it, its place
    (`out_score` for a file of one column)."""
    return f"{stem}_score" if place is None else f"{stem}_score_column{place}"


_LOGLIKE = frozenset({".log", ".txt", ".out", ".err", ".csv", ".tsv", ".json", ".jsonl", ".dat", ".yaml", ".yml"})


def alone(path: Path) -> bool:
    """No other file in the path's folder looks like a log (by its extension): a file of unnamed numbers
    there is what the folder holds, not a side output beside the logs."""
    try:
        folder = path.parent
        return _loglike_count(str(folder), folder.stat().st_mtime_ns) <= 1
    except OSError:
        return False


@functools.lru_cache(maxsize=256)
def _loglike_count(folder: str, mtime_ns: int) -> int:
    """Log-like files in a folder (cached by its modification time: a walk asks once per folder)."""
    with os.scandir(folder) as entries:
        return sum(1 for e in entries if not e.name.startswith(".") and Path(e.name).suffix.lower() in _LOGLIKE
                   and e.is_file())


def loss_name(stem: str, place: int) -> str:
    """`history_loss_column2`: the file's name, the role the column's shape gave it, its place."""
    return f"{stem}_loss_column{place}"


def unnamed_reason(rows: int, width: int, counted: bool) -> str:
    """Why a headerless table named by nothing was not read: one line a user can act on."""
    what = ("no column falls as a loss does or rises as a score does beside the counter" if counted
            else "no first column counts the rows")
    return (f"{rows} lines hold numbers but no key names their numbers ({width} a row, the file's name "
            f"names no measure, and {what}): add a header, or name the file for what it holds (loss.txt)")


def one_column_reason(rows: int) -> str:
    """Why a file of one number a line named by nothing was not read by its shape."""
    return (f"{rows} numbers one a line, named by nothing, that neither fall as a loss does nor rise as a "
            f"score in [0, 1] or [0, 100] does: name the file for what it holds (loss.txt, reward.txt)")
