"""A file of lists of numbers as a program prints them: `f.write(str(losses))` writes
`[2.31, 2.10, ...]`, `print(np.array(losses))` `[2.31 2.10 ...]`, maybe wrapped over lines, maybe
after a name (`train_loss = [...]`, `val_loss: [...]`).

A person reads each list as one curve, its i-th number the i-th point: the step is the place in
the list. A list is named by the name before it, else by the file (`loss.txt` holds the loss; a
second unnamed list is `loss_list2`, as the second column of a row is `loss_column2`), so a file
whose name says nothing (`data.txt`) and whose lists are unnamed is not claimed. Text other than
lists, their names and the commas between them is not this format (the text reader says why it
cannot read it).

A plot's points exported as text are read the same way, each point's first number its step:
LaTeX/pgfplots coordinates `(0,1.05) (250,0.84)`, or a table's rows `0 1.05 \\ 250 0.84 \\` on one
line (`PointsImporter`).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import FormatError
from .barenumbers import MIN_LINES, SUFFIXES, _name_of
from .base import Importer, Table, long_table
from .decoding import decode_file, text_head

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))"
_NAME = r"(?:(?P<name>[A-Za-z_][\w./-]*|'[^'\n]{1,80}'|\"[^\"\n]{1,80}\")\s*[:=]\s*)?"
_LIST = re.compile(rf"{_NAME}(?:array\(|tensor\()?\[(?P<body>\s*(?:{_NUM}(?:\s*,\s*|\s+))*{_NUM}?\s*,?\s*)\]\)?")
_APART = re.compile(r"[\s,;]*")
_OPENS = re.compile(rf"\s*{_NAME}(?:array\(|tensor\()?\[\s*{_NUM}(?:(?:\s*,\s*|\s+){_NUM}){{2,}}"
                    rf"(?:\s*,?\s*\]|[\s,]*)")
"""A head that opens a list of three numbers or more, a name perhaps before it, the list closed or
going on to the head's end (a log line's `[0 12:30:01]` opens no list)."""


class NumberListsImporter(Importer):
    """Lists of numbers printed whole (`str(losses)`), one curve a list."""

    name = "number-lists"
    looks_for = "*.txt, *.log files holding printed lists of numbers ([2.31, 2.10, ...]), named by the file"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in SUFFIXES or not path.stem or b"\x00" in head[:1024]:
            return False
        text = text_head(head)
        first, closed, _ = text.partition("]")  # the first list, whole or to the head's end
        m = _OPENS.fullmatch(first + closed)
        if m is None:
            return False
        from ..frame import infer_role

        return m["name"] is not None or infer_role(_name_of(path)) != "other"

    def read(self, path: Path) -> list[Table]:
        text = decode_file(path, path.read_bytes())
        lists, at = [], 0
        for m in _LIST.finditer(text):
            if not _APART.fullmatch(text, at, m.start()):
                raise FormatError(path, f"text between its lists of numbers ({text[at:m.start()].strip()[:40]!r})")
            lists.append((m["name"], m["body"]))
            at = m.end()
        if not lists or not _APART.fullmatch(text, at, len(text)):
            raise FormatError(path, f"not lists of numbers only (at {text[at:at + 40].strip()!r})")
        name, parts, unnamed = _name_of(path), [], 0
        for key, body in lists:
            values = pl.Series(re.findall(_NUM, body)).cast(pl.Float64, strict=False).to_numpy() \
                if body.strip() else np.empty(0)
            if key is None:
                unnamed += 1
            if values.size < MIN_LINES:
                continue  # a score printed once, a shape: no curve
            metric = key.strip("'\"") if key is not None else name if unnamed == 1 else f"{name}_list{unnamed}"
            n = values.size
            parts.append(long_table(np.arange(n, dtype=np.int64), [None] * n, [metric] * n, values))
        if not parts:
            raise FormatError(path, f"its lists hold fewer than {MIN_LINES} numbers each: no curve")
        return [Table(frame=pl.concat(parts), source=path, format=self.name, run_key=str(path),
                      segment_key=str(path), meta={"step.from": "the place in the list",
                                                   "metric.from": "the list's name, else the file's name"})]


_PAIR = re.compile(rf"\(\s*(?P<x>{_NUM})\s*,\s*(?P<y>{_NUM})\s*\)|(?P<x2>{_NUM})[ \t]+(?P<y2>{_NUM})[ \t]*\\\\")
_PAIRS_APART = re.compile(r"[\s,;]*")
_ONE_PAIR = rf"\(\s*{_NUM}\s*,\s*{_NUM}\s*\)|{_NUM}[ \t]+{_NUM}[ \t]*\\\\"
_PAIRS_OPEN = re.compile(rf"\s*(?:\\addplot[^{{\n]*)?(?:coordinates\s*)?\{{?\s*(?:{_ONE_PAIR})[\s,;]*(?:{_ONE_PAIR})")
_PAIRS_WRAP = re.compile(r"^\s*(?:\\addplot[^{\n]*)?(?:coordinates\s*)?\{|\}\s*;?\s*$")


class PointsImporter(Importer):
    """A plot's points exported as text: `(x,y)` coordinates or `x y \\\\` rows, one curve."""

    name = "plot-points"
    looks_for = "*.txt files of a plot's points ((0,1.05) (250,0.84) or 0 1.05 \\\\ 250 0.84 \\\\), named by the file"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in SUFFIXES | {".tex", ".dat"} or not path.stem or b"\x00" in head[:1024]:
            return False
        if not _PAIRS_OPEN.match(text_head(head)):
            return False
        from ..frame import infer_role

        return infer_role(_name_of(path)) != "other"

    def read(self, path: Path) -> list[Table]:
        text = _PAIRS_WRAP.sub("", decode_file(path, path.read_bytes()))
        xs, ys, at = [], [], 0
        for m in _PAIR.finditer(text):
            if not _PAIRS_APART.fullmatch(text, at, m.start()):
                raise FormatError(path, f"text between its points ({text[at:m.start()].strip()[:40]!r})")
            xs.append(m["x"] or m["x2"])
            ys.append(m["y"] or m["y2"])
            at = m.end()
        if not _PAIRS_APART.fullmatch(text, at, len(text)):
            raise FormatError(path, f"not a plot's points only (at {text[at:at + 40].strip()!r})")
        if len(xs) < MIN_LINES:
            raise FormatError(path, f"{len(xs)} points, fewer than {MIN_LINES}: no curve")
        x = pl.Series(xs).cast(pl.Float64, strict=False)
        if x.null_count() or not bool((x % 1 == 0).all()):
            raise FormatError(path, "its points' first numbers are no whole steps")
        n = len(xs)
        frame = long_table(x.cast(pl.Int64).to_numpy(), [None] * n, [_name_of(path)] * n,
                           pl.Series(ys).cast(pl.Float64, strict=False).to_numpy())
        return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta={"step.from": "each point's first number", "metric.from": "the file's name"})]
