"""Invariance benchmark for tables: a CSV/TSV log reads the same however the table is written.

usage: python benchmarks/realworld/perturb_tables.py [--sample N] [--seed S] [--only ID ...]
                                                     [--transforms T ...] [--max-lines N] [--show]

The table twin of `perturb.py` (whose reading and comparison it uses): for each dev run whose files are
all `.csv`/`.tsv`, every transformation below rewrites copies of its files in a temp folder (never the
cache) the way another writer would leave the same table (pandas' index column, `;` or tab delimiters,
every field quoted, `, ` separators, a trailing delimiter, CRLF, a BOM, an upper-case header, a comment
line first, the columns in another order), and the copy is read again: it reads the same when it has as
many runs, as many steps (within 2%) and the main loss's (step, value) pairs. Dev split only.
"""
from __future__ import annotations

import csv
import io
import os
import re
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CACHE  # noqa: E402
from perturb import _decode, _encode, bench  # noqa: E402
from perturb import reading as _reading  # noqa: E402

TABLE = {".csv", ".tsv"}
Rows = list[list[str]]


def _rows(text: str) -> tuple[Rows, str]:
    """The table's rows and its delimiter (sniffed among `,`, tab, `;`, `|`)."""
    head = "\n".join(text.splitlines()[:20])
    try:
        sep = csv.Sniffer().sniff(head, delimiters=",\t;|").delimiter
    except csv.Error:
        sep = "\t" if head.count("\t") > head.count(",") else ","
    return [r for r in csv.reader(io.StringIO(text), delimiter=sep)], sep


def _write(rows: Rows, sep: str = ",", quoting: int = csv.QUOTE_MINIMAL) -> str:
    out = io.StringIO()
    csv.writer(out, delimiter=sep, quoting=quoting, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _join(row: list[str], sep: str) -> str:
    """One row joined by `sep`, a field quoted where it holds the separator or a quote."""
    return sep.join(f'"{c.replace(chr(34), chr(34) * 2)}"' if sep.strip() in c or '"' in c else c for c in row)


def _index(rows: Rows) -> Rows:
    """pandas' `to_csv()` with its index: an unnamed first column counting the rows."""
    return [["", *rows[0]], *[[str(i), *r] for i, r in enumerate(rows[1:])]]


def _reversed(rows: Rows) -> Rows:
    return [list(reversed(r)) for r in rows]


def _upper(rows: Rows) -> Rows:
    return [[c.upper() for c in rows[0]], *rows[1:]]


REWRITES: dict[str, Callable[[Rows, str], str]] = {
    "semicolon": lambda rows, sep: _write(rows, ";"),
    "tab": lambda rows, sep: _write(rows, "\t"),
    "quoted": lambda rows, sep: _write(rows, sep, csv.QUOTE_ALL),
    "spaced": lambda rows, sep: "".join(_join(r, ", ") + "\n" for r in rows) if sep == "," else _write(rows, sep),
    "trailing": lambda rows, sep: "".join(_join(r, sep) + sep + "\n" for r in rows),
    "index": lambda rows, sep: _write(_index(rows), sep),
    "upper": lambda rows, sep: _write(_upper(rows), sep),
    "reversed": lambda rows, sep: _write(_reversed(rows), sep),
    "comment": lambda rows, sep: "# run started 2024-05-01 12:00:00, lr=0.001, seed 42\n" + _write(rows, sep),
}
BYTES: dict[str, Callable[[str], str]] = {"crlf": lambda t: t.replace("\n", "\r\n"), "bom": lambda t: "\ufeff" + t}
ALL = ["identity", *REWRITES, *BYTES]
HEADED = {"upper", "reversed"}
"""Rewrites a table without a header has no use for (it has no names; its columns' order is all a person has)."""
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))")


def rewrite(text: str, name: str) -> str | None:
    """The table rewritten by one writer's habit (`identity`: unchanged); the `#` lines above the table
    (SB3's monitor header) kept as they are; None where the rewrite has no use (`HEADED`)."""
    if name == "identity":
        return text
    if name in BYTES:
        return BYTES[name](text)
    lines = text.split("\n")
    k = next((i for i, ln in enumerate(lines) if not ln.startswith("#")), len(lines))
    rows, sep = _rows("\n".join(lines[k:]))
    rows = [r for r in rows if r]
    if rows and all(_NUMBER.fullmatch(c.strip()) for c in rows[0] if c.strip()):  # no header
        if name in HEADED:
            return None
        if name == "index":
            rows = [[str(i), *r] for i, r in enumerate(rows)]
            name = "identity_rows"
    body = _write(rows, sep) if name == "identity_rows" else REWRITES[name](rows, sep)
    return "".join(ln + "\n" for ln in lines[:k]) + (body if rows else "\n".join(lines[k:]))


def reading(paths: list[Path]) -> list[dict]:
    """`perturb.reading`, a NaN value kept as a token (NaN equals nothing, itself included)."""
    got = _reading(paths)
    for r in got:
        r["series"] = {m: {(s, "nan" if v != v else v) for s, v in pts} for m, pts in r["series"].items()}
    return got


def write_copy(run: dict, root: Path, name: str, max_lines: int, rewrite: Callable[[str, str], str | None] = None) \
        -> list[Path]:
    """The run's files, cut to `max_lines` and rewritten (by `rewrite`, this module's by default), under `root`;
    the paths to read ([] where the rewrite has no use for the run)."""
    rewrite = rewrite or globals()["rewrite"]
    files = [CACHE / f for f in run["files"]]
    base = files[0].parent if len(files) == 1 else Path(os.path.commonpath(files))
    for f in files:
        text, enc = _decode(f.read_bytes())
        head = "\n".join(text.replace("\r\n", "\n").split("\n")[:max_lines]).rstrip("\n") + "\n"
        dest = root / f.relative_to(base)
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = rewrite(head, name)
        if text is None:
            return []
        dest.write_bytes(_encode(text, enc))
    return [root / files[0].relative_to(base)] if len(files) == 1 else [root]


if __name__ == "__main__":
    raise SystemExit(bench("table", TABLE, [t for t in ALL if t != "identity"],
                           lambda run, root, name, n: write_copy(run, root, name, n, rewrite), reading, sample=0))
