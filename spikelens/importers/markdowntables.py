"""A training journal kept by hand in Markdown: prose, then pipe tables of a counter and its measures.

    | Step | AverageReturn | Status |
    |------|--------------|--------|
    | 150  | -699.43      | Initial |
    | 3150 | -545.31      | **Best so far** |

    | Milestone | AverageReturn |
    |-----------|---------------|
    | Step 500  | -740.17       |
    | Step 5000 | **-459.02** (Final, Best) |

A person reads each table with a counter column (`Step`, `Epoch`, `Iteration`, ...; or cells that name
the counter, `Step 500`) as a curve per numeric column, its emphasis (`**x**`, `` `x` ``) and trailing
notes (`(Final, Best)`) aside. Tables without a counter (settings, checkpoints by name) are no curve.
Each table is a launch of its own (a second table of the same measure is a later listing, often a new run).

Only a file named on its own is read so (`claims_named`): a folder's README is never taken for a log.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import FormatError
from . import decoding
from .base import Importer, Table, long_table
from .csvlogs import read_bytes

_COUNTER = r"(?:global[_ ]?)?(?:step|steps|epoch|epochs|iter|iters|iteration|iterations|episode|episodes|round|rounds|update|updates|timesteps?|generation|gen)"
_COUNTER_HEAD = re.compile(rf"(?i){_COUNTER}")
_COUNTER_CELL = re.compile(rf"(?i)({_COUNTER})\s*#?\s*(\d[\d,]*)")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
_NUMBER = re.compile(r"^([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*%?(?:\s*\(.*\))?\s*$")
_DECOR = re.compile(r"[*_`~]")
MIN_ROWS = 3
"""Fewer counted rows in the whole file are no curve."""
_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".log", ""})


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def _plain(cell: str) -> str:
    return _DECOR.sub("", cell).strip()


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """The pipe tables of a Markdown text: (header cells, rows of cells), in order."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out = []
    i = 0
    while i + 1 < len(lines):
        if "|" in lines[i] and _RULE.match(lines[i + 1]):
            head = [_plain(c) for c in _cells(lines[i])]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                cells = _cells(lines[j])
                rows.append((cells + [""] * len(head))[:len(head)])
                j += 1
            out.append((head, rows))
            i = j
        else:
            i += 1
    return out


def _number(cell: str) -> float | None:
    m = _NUMBER.match(_plain(cell))
    return float(m.group(1).replace(",", "")) if m else None


def counted(head: list[str], rows: list[list[str]]) -> tuple[list[int], dict[str, list[tuple[int, float]]]] | None:
    """A table's counter values and its numeric columns' (row, value) pairs, when a column counts
    the rows (by its header, or by cells naming the counter, `Step 500`); else None."""
    col, steps = None, []
    for k, name in enumerate(head):
        if _COUNTER_HEAD.fullmatch(name):
            vals = [_number(r[k]) for r in rows]
            if rows and all(v is not None and float(v).is_integer() for v in vals):
                col, steps = k, [int(v) for v in vals]
                break
    if col is None:
        for k in range(len(head)):
            found = [_COUNTER_CELL.fullmatch(_plain(r[k])) for r in rows]
            if rows and all(found):
                col, steps = k, [int(m.group(2).replace(",", "")) for m in found]
                break
    if col is None:
        return None
    series = {}
    for k, name in enumerate(head):
        if k == col or not name:
            continue
        pairs = [(i, v) for i, r in enumerate(rows) if (v := _number(r[k])) is not None]
        if pairs and len(pairs) * 2 >= len(rows):
            series[name] = pairs
    return (steps, series) if series else None


def read_text(path: Path) -> str:
    return decoding.text_head(read_bytes(path))  # a one-line error naming the file when it cannot be read


class MarkdownTableImporter(Importer):
    """A hand-kept Markdown journal of pipe tables with a counter column (named on its own)."""

    name = "markdown_tables"
    looks_for = "Markdown pipe tables with a step/epoch column (a training journal kept by hand)"

    def claims(self, path: Path, head: bytes) -> bool:
        return False  # a folder's walk never takes a README for a log

    def claims_named(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in _SUFFIXES or b"|" not in head or b"\0" in head[:1024]:
            return False
        text = decoding.text_head(head)
        found = [c for h, r in tables(text) if (c := counted(h, r)) is not None]
        return sum(len(s) for s, _ in found) >= MIN_ROWS

    def read(self, path: Path) -> list[Table]:
        found = [c for h, r in tables(read_text(path)) if (c := counted(h, r)) is not None]
        if sum(len(s) for s, _ in found) < MIN_ROWS:
            raise FormatError(path, f"its Markdown tables hold fewer than {MIN_ROWS} counted rows")
        out = []
        for k, (steps, series) in enumerate(found):
            parts = [long_table(np.asarray([steps[i] for i, _ in pairs], dtype=np.int64), [None] * len(pairs),
                                [name] * len(pairs), np.asarray([v for _, v in pairs], dtype=np.float64))
                     for name, pairs in series.items()]
            out.append(Table(frame=pl.concat(parts), source=path, format=self.name, run_key=str(path),
                             segment_key=f"{path}#table{k + 1}",
                             meta={"step.from": "the table's counter column", "metric.from": "the table's header"}))
        return out
