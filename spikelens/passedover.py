"""Why a file no reader took was not read, in one clause a user can act on.

When nothing under the paths is a log, "no training logs found" alone leaves the user
guessing: the file may be empty, binary, a table without numbers, a config, or a log whose
lines the readers do not know (then which lines held numbers, so a pattern can be written
for them). This module looks at such a file once, by its content, and says which.
It judges only files no importer claimed; the readers say their own refusals.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from .importers import decoding
from .importers.base import kind_suffix

HEAD_BYTES = 1024 * 1024
"""The head looked at: enough lines to tell a log's shape; a file is never read whole here."""
LOGLIKE_SUFFIXES = frozenset({".log", ".txt", ".out", ".err", ".csv", ".tsv", ".json", ".jsonl", ".yaml", ".yml", ".dat", ""})
"""Files a folder's "nothing found" names with their reason: what a user may have meant as a
log (a folder's images, checkpoints and code are not)."""
_NOT_LOGS = frozenset({".py", ".ipynb", ".md", ".rst", ".html", ".sh", ".cfg", ".ini", ".toml", ".png", ".jpg", ".jpeg",
                       ".gif", ".svg", ".pdf", ".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".onnx", ".h5", ".hdf5",
                       ".npy", ".npz", ".pkl", ".pickle", ".zip", ".gz", ".tar", ".tgz", ".bz2", ".xz", ".whl", ".so"})
"""Extensions that say a file is code, an image, a model or an archive: never meant as a log."""


def looks_loglike(path: Path) -> bool:
    """May the user have meant this file as a log? Its extension says so (`.log`, `.csv`, ...), or says
    nothing a reader knows (`model.hist`, `score.data`) and its first lines are text holding numbers."""
    suffix = kind_suffix(path)
    if suffix in LOGLIKE_SUFFIXES:
        return True
    if suffix in _NOT_LOGS or suffix.startswith(".events") or path.name.startswith("."):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(2048)
    except OSError:
        return False
    if not head.strip() or decoding.looks_binary(head):
        return False
    lines = decoding.text_head(head).splitlines()[:20]
    return sum(1 for ln in lines if _NUMBER.search(ln)) >= 3


_DIGITS = re.compile(r"\d+")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])|\b(?:nan|inf)\b", re.I)


def reason(path: Path) -> str:
    """Why `path` (a file no reader claimed) holds nothing spikelens reads."""
    try:
        return _reason(path)
    except Exception:  # noqa: BLE001 - the reason is a courtesy: it never turns a refusal into a traceback
        return "no reader knows its layout"


def _reason(path: Path) -> str:
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if size == 0:
        return "the file is empty"
    if not head.replace(b"\x00", b"").strip():
        return ("it holds only NUL bytes (what a job killed while writing leaves)" if b"\x00" in head
                else "it holds only white space")
    head = decoding.past_zeros(path, head)
    if decoding.looks_binary(head):
        return "binary data in no format a reader knows"
    text = decoding.text_head(head)
    if not text.strip():
        return "no readable text in it (bytes that are not UTF-8 or UTF-16)"
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _json_reason(text, whole=size <= HEAD_BYTES)
    if suffix in (".csv", ".tsv"):
        return _table_reason(path, text, "\t" if suffix == ".tsv" else ",")
    return _lines_reason(path, text, whole=size <= HEAD_BYTES)


def _lines_reason(path: Path, text: str, whole: bool) -> str:
    """A text file: no number on any line, the line sniff's reason (which lines held
    numbers and why none is read), or too few lines with numbers to tell a log."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not whole:
        lines = lines[:-1]
    numeric = [i for i, line in enumerate(lines) if _NUMBER.search(line)]
    filled = sum(1 for line in lines if line.strip())
    if not numeric:
        return f"none of its {filled} line{'s' if filled != 1 else ''} holds a number (banners or prose only)"
    from .importers.linerecords import sniff

    verdict = sniff(text, whole, named=True)
    if verdict is not None and verdict.reason:
        return verdict.reason
    return (f"{len(numeric)} of its {filled} lines hold numbers, in no layout a reader knows (no key "
            f"names them on lines that repeat); {_commonest(lines, numeric)}")


def _commonest(lines: list[str], numeric: list[int]) -> str:
    """The commonest shape of numbered line (its digits as 0): the one a pattern would be written for."""
    shapes = Counter(_DIGITS.sub("0", lines[i]) for i in numeric)
    shape, count = shapes.most_common(1)[0]
    first = next(i for i in numeric if _DIGITS.sub("0", lines[i]) == shape)
    return f"the commonest, {count} line{'s' if count != 1 else ''} like line {first + 1}: {_snippet(lines[first])!r}"


def numbered_lines(path: Path) -> str:
    """How many lines of the file's head hold numbers, and the commonest of them (for a file read
    as a console log in which no line held a keyed number)."""
    with open(path, "rb") as fh:
        text = decoding.text_head(fh.read(HEAD_BYTES))
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    numeric = [i for i, line in enumerate(lines) if _NUMBER.search(line)]
    if not numeric:
        return "no line holds a number"
    return f"{len(numeric)} lines hold numbers; {_commonest(lines, numeric)}"


def _json_reason(text: str, whole: bool) -> str:
    """A JSON file: not JSON, or JSON that holds no series of numbers a reader knows."""
    if not whole:
        return "JSON larger than 1 MiB that no reader knows (not a history of metrics)"
    try:
        data = json.loads(text)
    except ValueError as exc:
        if "\n{" in text.strip():
            return f"not one JSON document ({str(exc).split(':')[0]}) and not JSON lines a reader knows"
        return f"not valid JSON ({str(exc).split(':')[0]})"
    if isinstance(data, dict):
        keys = ", ".join(list(map(str, data))[:6]) + (", ..." if len(data) > 6 else "")
        series = [k for k, v in data.items() if isinstance(v, list) and len(v) > 1
                  and all(isinstance(x, (int, float)) for x in v[:50])]
        if series:
            return (f"a JSON object whose lists of numbers ({', '.join(map(str, series[:4]))}) no reader takes "
                    f"for a history (their lengths differ, or no metric name is known)")
        return f"a JSON object ({keys}) that holds no series of numbers: a config or a summary, not a log"
    if isinstance(data, list):
        if data and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in data[:200]):
            return (f"a JSON list of {len(data)} items, all numbers, that nothing names: the file's name names no measure "
                    f"(a loss, an accuracy, a reward); rename it for what it holds (`losses.json`)")
        keys = sorted({str(k) for x in data[:50] if isinstance(x, dict) for k in x})
        if keys:
            return (f"a JSON list of {len(data)} items, records (keys {', '.join(keys[:6])}{', ...' if len(keys) > 6 else ''}) "
                    f"with no step key and no loss named in its first record")
        return f"a JSON list of {len(data)} items with no step or metric a reader knows"
    return "a single JSON value, not a log"


def _table_reason(path: Path, text: str, sep: str) -> str:
    """A CSV/TSV file: its columns, and that none holds numbers (or which do); a table with no header
    says that nothing names its columns."""
    rows = [r for r in text.replace("\r\n", "\n").split("\n") if r.strip()]
    header = [c.strip().strip('"') for c in rows[0].split(sep)] if rows else []
    if len(rows) > 1 and header and all(_is_number(c) for c in header):
        return (f"a table of {len(header)} numeric column{'s' if len(header) != 1 else ''} with no header: nothing names "
                f"them, and the file's name ({path.stem!r}) names no measure (a loss, an accuracy, a reward)")
    body = [r.split(sep) for r in rows[1:200]]
    numeric = [name for k, name in enumerate(header)
               if body and sum(1 for cells in body if k < len(cells) and _is_number(cells[k])) >= 0.5 * len(body)]
    shown_cols = ", ".join(header[:6]) + (", ..." if len(header) > 6 else "")
    if not body:
        return f"a table with a header ({shown_cols}) and no rows"
    from .importers.csvlogs import looks_like_runs_table

    if looks_like_runs_table(header):
        return (f"a table of runs, one row a configuration (columns {shown_cols}), not one run's curve: "
                f"no step column, and its columns name settings or trial parameters")
    if not numeric:
        return f"a table of {len(body)}+ rows whose columns ({shown_cols}) hold no numbers"
    return (f"a table whose numeric columns ({', '.join(numeric[:6])}) no CSV reader takes for a log "
            f"(no step column, and no metric name it knows)")


def _is_number(cell: str) -> bool:
    try:
        float(cell.strip().strip('"'))
        return True
    except ValueError:
        return False


def _snippet(line: str, width: int = 80) -> str:
    return " ".join(line.split())[:width]
