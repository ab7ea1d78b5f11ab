"""A `spikelens check` baseline of 10^5 runs without holding it (issue 28): its entries on
disk past `HELD`, the file read an entry at a time and written in sorted order from an
external sort, so the parent's memory does not grow with the runs a baseline records.

`Entries` keeps the entries in order (a list up to `HELD`, then an SQLite table in a
private spool folder: looked up by (run, metric, kind) and by run name, suffixes too);
`read_document` parses a baseline's JSON a value at a time (any layout, not only ours);
`write_document` writes the bytes `json.dumps(doc, indent=1)` gives of the whole, an
entry at a time.
"""
from __future__ import annotations

import json
import os
import pickle
import re
from typing import Any, Callable, Iterable, Iterator, TextIO

HELD = 4096
"""Entries of a baseline kept in a list; past this, in an SQLite table on disk."""


class Entries:
    """A baseline's entries in the order given: held up to `HELD`, past that in an SQLite
    file of a private folder (`spool.Spool`'s, removed with it). Each entry is pickled there
    (this process's own file, as the spool's entries are) and indexed by (run, metric, kind)
    and by its run's name, forwards and reversed (the path-suffix matches of renamed runs)."""

    def __init__(self, held: int | None = None) -> None:
        self._held: list[Any] = []
        self._max = HELD if held is None else held
        self._db: Any = None
        self._n = 0
        self._in_tx = False

    @property
    def spilled(self) -> bool:
        return self._db is not None

    @property
    def folder(self) -> str:
        """The private folder the entries spilled into (for the files of a sort)."""
        return self._spool.folder

    def append(self, entry: Any) -> None:
        if self._db is None:
            self._held.append(entry)
            self._n = len(self._held)
            if self._n > self._max:
                self._spill()
            return
        if not self._in_tx:
            self._db.execute("BEGIN")
            self._in_tx = True
        run = _b(entry.run)
        self._cur.execute("INSERT INTO entries VALUES (?, ?, ?)",
                          (self._n, _key(entry.run, entry.metric, entry.kind),
                           pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)))
        self._cur.execute("INSERT OR IGNORE INTO runs VALUES (?, ?)", (run, _b(entry.run[::-1])))
        self._n += 1

    def extend(self, entries: Iterable[Any]) -> None:
        for e in entries:
            self.append(e)

    def _spill(self) -> None:
        import sqlite3

        from .spool import Spool

        try:
            spool = Spool(os.environ.get("SPIKELENS_SPOOL_DIR") or None)
        except OSError:
            self._max = float("inf")  # type: ignore[assignment]  # no private folder: held, as before
            return
        self._spool = spool
        self._db = sqlite3.connect(os.path.join(spool.folder, "baseline.sqlite"), isolation_level=None,
                                   check_same_thread=False)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-1024; "
            "CREATE TABLE entries (seq INTEGER PRIMARY KEY, key BLOB, data BLOB);"
            "CREATE INDEX by_key ON entries (key, seq);"
            "CREATE TABLE runs (run BLOB PRIMARY KEY, rev BLOB) WITHOUT ROWID;"
            "CREATE INDEX by_rev ON runs (rev);")
        self._cur = self._db.cursor()  # one cursor reused (a fresh one a statement lingers a while)
        self._matchers = 0
        held, self._held, self._n = self._held, [], 0
        for e in held:
            self.append(e)

    def _ready(self) -> None:
        if self._in_tx:
            self._db.execute("COMMIT")
            self._in_tx = False

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __getitem__(self, i: int) -> Any:
        if self._db is None:
            return self._held[i]
        self._ready()
        if i < 0:
            i += self._n
        row = self._cur.execute("SELECT data FROM entries WHERE seq = ?", (i,)).fetchone()
        if row is None:
            raise IndexError(i)
        return pickle.loads(row[0])

    def __iter__(self) -> Iterator[Any]:
        if self._db is None:
            yield from self._held
            return
        self._ready()
        for at in range(0, self._n, 1024):  # a block at a time: no cursor left open between blocks
            rows = self._db.execute("SELECT data FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq",
                                    (at, at + 1024)).fetchall()
            for (data,) in rows:
                yield pickle.loads(data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, Entries)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    # ------------------------------------------------------------ what matching asks (spilled)

    def pool(self, run: str | None, metric: str | None, kind: str) -> list[int]:
        """The positions of the entries recorded under (run, metric, kind), in order."""
        self._ready()
        if run is None:
            return []
        rows = self._cur.execute("SELECT seq FROM entries WHERE key = ? ORDER BY seq",
                                 (_key(run, metric, kind),)).fetchall()
        return [r[0] for r in rows]

    def has_run(self, name: str) -> bool:
        self._ready()
        return self._cur.execute("SELECT 1 FROM runs WHERE run = ?", (_b(name),)).fetchone() is not None

    def names(self) -> "_Names":
        """A matcher's view of the recorded run names: which are taken, and the current names
        matched by path suffix (its own tables, on disk)."""
        self._ready()
        self._matchers += 1
        return _Names(self, self._matchers)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._spool.close()
            self._db = None


class _Names:
    """`check._suffix_names` on disk: the recorded names taken (matched already) and each
    current name's recorded name where a path suffix gave it, as two tables of one matcher."""

    def __init__(self, entries: Entries, n: int) -> None:
        self.entries, self.cur = entries, entries._db.cursor()
        self.taken, self.renamed = f"taken_{n}", f"renamed_{n}"
        self.cur.execute(f"CREATE TABLE {self.taken} (run BLOB PRIMARY KEY) WITHOUT ROWID")
        self.cur.execute(f"CREATE TABLE {self.renamed} (name BLOB PRIMARY KEY, run BLOB) WITHOUT ROWID")

    def build(self, names: Callable[[], Iterable[str]]) -> "_Names":
        """`_suffix_names`' two passes over the current names."""
        self.cur.execute("BEGIN")
        for name in names():
            if self.entries.has_run(name):
                self.cur.execute(f"INSERT OR IGNORE INTO {self.taken} VALUES (?)", (_b(name),))
        for name in names():
            if self.entries.has_run(name) or self.get(name) is not None:
                continue
            near = self._near(name)
            if len(near) == 1:
                self.cur.execute(f"INSERT INTO {self.renamed} VALUES (?, ?)", (_b(name), near[0]))
                self.cur.execute(f"INSERT OR IGNORE INTO {self.taken} VALUES (?)", (near[0],))
        self.cur.execute("COMMIT")
        return self

    def _near(self, name: str) -> list[bytes]:
        """Untaken recorded names that are a path suffix of `name` (`name` ends with '/' + it),
        or of which `name` is one (it ends with '/' + `name`): up to two (one is all we use)."""
        found: list[bytes] = []
        for at in (m.start() for m in re.finditer("/", name)):
            short = _b(name[at + 1:])
            if self._untaken("SELECT run FROM runs WHERE run = ?", (short,), found):
                return found
        tail = _b(("/" + name)[::-1])
        self._untaken("SELECT run FROM runs WHERE rev >= ? AND rev < ?", (tail, tail + b"\xff"), found)
        return found

    def _untaken(self, sql: str, args: tuple, found: list[bytes]) -> bool:
        for (run,) in self.entries._db.execute(sql, args):
            if self.cur.execute(f"SELECT 1 FROM {self.taken} WHERE run = ?", (run,)).fetchone() is None:
                found.append(run)
                if len(found) > 1:
                    return True
        return False

    def get(self, name: str) -> str | None:
        row = self.cur.execute(f"SELECT run FROM {self.renamed} WHERE name = ?", (_b(name),)).fetchone()
        return None if row is None else row[0].decode("utf-8", "surrogatepass")


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _key(run: str, metric: str | None, kind: str) -> bytes:
    return json.dumps([run, metric, kind]).encode()


# ---------------------------------------------------------------- the file, a value at a time

class NotStreamed(ValueError):
    """The document is not one the streamed reader takes (a syntax error, a top level that is
    not an object, a key twice): read it whole, as before, for the same outcome or message."""


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
BLOCK = 1 << 16


class _Text:
    """A text file read a block at a time, parsed a JSON value at a time (`raw_decode`)."""

    def __init__(self, fh: TextIO) -> None:
        self.fh, self.buf, self.pos, self.eof = fh, "", 0, False

    def _more(self) -> bool:
        if self.eof:
            return False
        block = self.fh.read(BLOCK)
        if not block:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + block
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character but white space ('' at the end)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def take(self, char: str) -> None:
        if self.peek() != char:
            raise NotStreamed(f"expected {char!r}")
        self.pos += 1

    def closes(self, close: str) -> bool:
        """After a member of an array or object: True at its closing `close`, False at a ','."""
        sep = self.peek()
        self.pos += 1
        if sep == close:
            return True
        if sep != ",":
            raise NotStreamed(f"expected ',' or '{close}'")
        return False

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated string")
                if cut and self._more():
                    continue
                raise NotStreamed(str(exc)) from None
            if end == len(self.buf) and self._more():
                continue  # a number or literal may go on in the next block
            self.pos = end
            return obj


LIST = object()
"""`read_document`'s value of the streamed key when it was a list (its items came before)."""


def read_document(fh: TextIO, streamed: str) -> Iterator[tuple[str, Any]]:
    """A JSON object's members in order, as ("key", (name, value)); the members of the list
    under `streamed` come one at a time as ("item", value), then ("key", (streamed, LIST)).
    Anything else than one object with distinct keys raises NotStreamed."""
    t = _Text(fh)
    t.take("{")
    seen: set[str] = set()
    if t.peek() == "}":
        t.pos += 1
    else:
        while True:
            if t.peek() != '"':
                raise NotStreamed("expected a key")
            key = t.value()
            if key in seen:
                raise NotStreamed(f"{key!r} twice")
            seen.add(key)
            t.take(":")
            if key == streamed and t.peek() == "[":
                t.pos += 1
                if t.peek() == "]":
                    t.pos += 1
                else:
                    while True:
                        yield "item", t.value()
                        if t.closes("]"):
                            break
                yield "key", (key, LIST)
            else:
                yield "key", (key, t.value())
            if t.closes("}"):
                break
    if t.peek() != "":
        raise NotStreamed("extra data")


def write_document(fh: TextIO, head: dict[str, Any], key: str, items: Iterable[Any]) -> None:
    """`json.dumps({**head, key: list(items)}, indent=1, allow_nan=False)` written an item
    at a time (`key` last)."""
    fh.write("{")
    for name, value in head.items():
        fh.write(f"\n {json.dumps(name)}: {_nested(value, 1)},")
    fh.write(f"\n {json.dumps(key)}: [")
    sep = "\n  "
    for item in items:
        fh.write(sep + _nested(item, 2))
        sep = ",\n  "
    fh.write("]" if sep == "\n  " else "\n ]")
    fh.write("\n}")


def _nested(value: Any, level: int) -> str:
    """`value` as json.dumps(indent=1) writes it `level` deep in a document."""
    return json.dumps(value, indent=1, allow_nan=False).replace("\n", "\n" + " " * level)
