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

import argparse
import csv
import io
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CACHE, labelled_runs  # noqa: E402
from perturb import _decode, _encode, same  # noqa: E402
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


def bench(kind: str, suffixes: set[str], transforms: list[str], rewrite: Callable[[str, str], str | None]) -> int:
    """The command line of an invariance benchmark over the dev runs whose files all end in `suffixes`: each
    transformation alone, the reading compared with the undecorated copy's (`perturb.same`)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=0, help="runs drawn at random (0: every run)")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--transforms", nargs="*", default=transforms)
    ap.add_argument("--max-lines", type=int, default=3000)
    ap.add_argument("--show", action="store_true", help="print why each broken run broke")
    a = ap.parse_args()
    runs = [r for r in labelled_runs("dev") if r.get("readable", True) and r["files"]
            and all(Path(f).suffix.lower() in suffixes for f in r["files"]) and all((CACHE / f).exists() for f in r["files"])
            and (not a.only or r["id"] in a.only)]
    if a.sample and not a.only:
        runs = sorted(random.Random(a.seed).sample(sorted(runs, key=lambda r: r["id"]), min(a.sample, len(runs))),
                      key=lambda r: r["id"])
    table = {t: {"before": 0, "after": 0, "broke": {}} for t in a.transforms}
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix=f"spikelens-perturb-{kind}-") as tmp:
        for i, run in enumerate(runs):
            try:
                base = reading(write_copy(run, Path(tmp) / run["id"] / "identity", "identity", a.max_lines, rewrite))
            except Exception as e:  # noqa: BLE001 - a run that fails to read today is no baseline
                base = []
                print(f"{run['id']}: baseline failed: {type(e).__name__}: {e}", file=sys.stderr)
            if not base or not any(b["main"] for b in base):
                continue
            for t in a.transforms:
                paths = write_copy(run, Path(tmp) / run["id"] / t, t, a.max_lines, rewrite)
                if not paths:
                    continue
                table[t]["before"] += 1
                try:
                    why = same(base, reading(paths))
                except Exception as e:  # noqa: BLE001 - a crash is an outcome the benchmark reports
                    why = f"{type(e).__name__}: {str(e)[:120]}"
                if why:
                    table[t]["broke"][run["id"]] = why
                else:
                    table[t]["after"] += 1
            shutil.rmtree(Path(tmp) / run["id"], ignore_errors=True)
            print(f"[{i + 1}/{len(runs)} {time.time() - t0:.0f}s] {run['id']}", file=sys.stderr)
    print(f"{len(runs)} dev {kind} runs (first {a.max_lines} lines), read before / read the same after:")
    for t, row in table.items():
        print(f"  {t:10s} {row['after']:4d}/{row['before']:<4d} broke: {' '.join(sorted(row['broke']))}")
        if a.show:
            for rid, why in sorted(row["broke"].items()):
                print(f"      {rid}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench("table", TABLE, [t for t in ALL if t != "identity"], rewrite))
