"""A file of lists of numbers as a program prints them: `f.write(str(losses))` writes
`[2.31, 2.10, ...]`, `print(np.array(losses))` `[2.31 2.10 ...]`, maybe wrapped over lines, maybe
after a name (`train_loss = [...]`, `val_loss: [...]`).

A person reads each list as one curve, its i-th number the i-th point: the step is the place in
the list. A list is named by the name before it, else by the file (`loss.txt` holds the loss; a
second unnamed list is `loss_list2`, as the second column of a row is `loss_column2`), so a file
whose name says nothing (`data.txt`) and whose lists are unnamed is not claimed. Text other than
lists, their names and the commas between them is not this format (the text reader says why it
cannot read it).
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
