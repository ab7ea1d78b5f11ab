"""A commented header whose names span several columns each (DeepXDE's `loss.dat`).

`# step, loss_train, loss_test, metrics_test` over rows of 13 numbers: the first name is the counter's
column; `loss_train` and `loss_test` name a block of component columns each (one per loss term, as many
in both: the same terms measured on two splits), and the names after them share what is left (none
when no metric is tracked). A person reads the blocks by lining the splits up: the width whose train
block and test block agree best column by column is the one. Each spanning name is read as the sum of
its block (what the tool itself plots as that loss) and each component as `name/k`. A header that
cannot be lined up so (no counter first, no two names of one measure, widths that do not divide) is
left to the other readers.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import FormatError
from .base import Importer, Table, long_table
from .decoding import text_head

_HEADER = re.compile(r"^[ \t]*#[ \t]*(?P<names>[A-Za-z_][\w.\-/]*(?:[ \t]*[, \t][ \t]*[A-Za-z_][\w.\-/]*)+)[ \t]*$")
_COUNTER = re.compile(r"(?i)step|steps|epoch|iter|iteration|global_step|episode")
_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))"
_ROW = re.compile(rf"[ \t]*{_NUM}(?:[ \t,]+{_NUM})*[ \t]*")
MIN_ROWS = 2


def _names(line: str) -> list[str] | None:
    m = _HEADER.match(line)
    return [n for n in re.split(r"[ \t]*,[ \t]*|[ \t]+", m["names"].strip()) if n] if m else None


def spans(names: list[str], width: int, rows: np.ndarray | None = None) -> list[int] | None:
    """How many columns each name spans (the counter 1), else None. The leading names of one measure
    (`loss_train`, `loss_test`: the same word before the split) span equal blocks; the names after them
    share the rest equally (none left is allowed). Of the widths that fit, the one whose blocks agree
    best over `rows` (the same terms on two splits) is taken."""
    if len(names) < 3 or not _COUNTER.fullmatch(names[0]) or width <= len(names):
        return None
    rest_names = names[1:]
    stem = rest_names[0].split("_")[0]
    g = next((k for k, n in enumerate(rest_names) if n.split("_")[0] != stem), len(rest_names))
    if g < 2:
        return None
    left, others = width - 1, len(rest_names) - g
    best, best_score = None, np.inf
    for b in range(left // g, 0, -1):
        rest = left - g * b
        if (others == 0 and rest) or (others and rest % others):
            continue
        if rows is None:
            return [1] + [b] * g + [rest // others if others else 0] * others
        a, c = rows[:, 1:1 + b], rows[:, 1 + b:1 + 2 * b]
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.nanmedian(np.abs(np.log(np.abs(a) / np.abs(c))))
        if np.isfinite(score) and score < best_score:
            best, best_score = [1] + [b] * g + [rest // others if others else 0] * others, score
    return best


class SpannedHeaderImporter(Importer):
    """A `#` header of fewer names than columns, its names spanning blocks of components."""

    name = "spanned-header"
    looks_for = "loss.dat-like tables: a # header whose names span several component columns each (DeepXDE)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in {".dat", ".txt", ".log", ".csv", ".tsv"} or b"\x00" in head[:1024]:
            return False
        lines = [ln for ln in text_head(head).splitlines() if ln.strip()][:6]
        names = _names(lines[0]) if lines else None
        if names is None or len(lines) < 2 or not all(_ROW.fullmatch(ln) for ln in lines[1:-1] or lines[1:]):
            return False
        width = len(re.findall(_NUM, lines[1]))
        return spans(names, width) is not None

    def read(self, path: Path) -> list[Table]:
        lines = [ln for ln in text_head(path.read_bytes()).splitlines() if ln.strip()]
        names = _names(lines[0]) or []
        body = pl.Series(lines[1:], dtype=pl.String)
        if not bool(body.str.contains(f"^(?:{_ROW.pattern})$").all()):
            raise FormatError(path, "a line under its header is not a row of numbers")
        fields = body.str.extract_all(_NUM)
        if fields.list.len().n_unique() != 1 or body.len() < MIN_ROWS:
            raise FormatError(path, "its rows do not all hold as many numbers")
        rows = np.array(fields.to_list(), dtype=float)
        widths = spans(names, rows.shape[1], rows)
        if widths is None:
            raise FormatError(path, f"its header's {len(names)} names cannot be lined up with {rows.shape[1]} columns")
        steps = rows[:, 0].astype(np.int64)
        n, at, parts = len(rows), 1, []
        for name, w in zip(names[1:], widths[1:]):
            block = rows[:, at:at + w]
            at += w
            if not w:
                continue
            parts.append(long_table(steps, [None] * n, [name] * n, block.sum(axis=1)))
            if w > 1:
                parts.extend(long_table(steps, [None] * n, [f"{name}/{k + 1}"] * n, block[:, k]) for k in range(w))
        return [Table(frame=pl.concat(parts), source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta={"step.from": f"the {names[0]} column",
                            "metric.from": "the commented header, each name over its block (summed)"})]
