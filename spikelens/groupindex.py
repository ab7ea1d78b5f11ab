"""Discovery's groups of sources without holding them (issue 28): a sweep of 10^5 runs
found its sources, then kept every one (and every resolved path seen) in lists until the
last group was handed out, ~100-200 bytes a run in the sweep's parent.

Up to `SPILL` sources stay in memory, as before; past that they go to an SQLite file in a
private folder (`pipeline.spool.Spool`'s, in the folder discovery picks outside the logs:
`discover._spool_dir`; removed when closed, collected, at exit, on Ctrl-C or SIGTERM),
where SQLite's own indexes give the groups back in first-seen order, each group's sources
in walk order: the same groups, in the same order, as the lists gave. SQLite's page cache
(`CACHE_KB`) is all it keeps in memory. Where no such folder can be made, the sources stay
in memory (what discovery did before), never an error.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol

if TYPE_CHECKING:
    import sqlite3


class Source(Protocol):
    """What discovery adds (`discover.Source`; named here by its fields, so this module does not
    import discovery, which imports it)."""

    path: Path
    importer: Any
    group: str

SPILL = 2048
"""Sources held in memory before the index moves to disk (a few hundred KB at most)."""
CACHE_KB = 1024
"""SQLite's page cache, the on-disk index's memory whatever the number of sources."""

_SCHEMA = """
CREATE TABLE seen (real BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE source (seq INTEGER PRIMARY KEY, key BLOB NOT NULL, path BLOB NOT NULL, imp INTEGER NOT NULL);
CREATE INDEX source_key ON source (key, seq);
CREATE TABLE grp (key BLOB PRIMARY KEY, first INTEGER NOT NULL) WITHOUT ROWID;
CREATE UNIQUE INDEX grp_first ON grp (first);
"""
_GROUPS = ("SELECT g.first, g.key, s.path, s.imp FROM grp AS g INDEXED BY grp_first "
           "JOIN source AS s INDEXED BY source_key ON s.key = g.key ORDER BY g.first, s.seq")
"""Every source, its group's first-seen place first, then its own: both walks use an index, no sort."""


def _blob(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a file name's undecodable bytes too (surrogateescape)


class SourceGroups:
    """Sources added in walk order (`add`), once each by resolved path (`seen`); then the
    groups, sources sharing a group key, in the order their first source was found
    (`discover.groups`'s order). Sized, and iterable as often as asked."""

    def __init__(self, folder: Path | None = None) -> None:
        """`folder`: where the private folder is made past `SPILL` sources (None: always held)."""
        self._folder = folder
        self._seen: set[Path] = set()
        self._held: list[tuple[Source, Path]] = []  # in walk order, until they go to disk
        self._by_key: dict[str, list[Source]] = {}
        self._sources = 0
        self._groups = 0
        self._db: sqlite3.Connection | None = None
        self._cur: sqlite3.Cursor | None = None
        self._spool: Any = None
        self._importers: list[Any] = []  # the distinct importers (a few dozen), by their place here
        self._kind: Any = None  # the sources' class, to build them again as read back from disk
        self._done = False
        self._stay = False  # no private folder could be made: held in memory

    # ---------------------------------------------------------------- walking
    def seen(self, real: Path) -> bool:
        if self._db is None:
            return real in self._seen
        return self._cur.execute("SELECT 1 FROM seen WHERE real = ?", (_blob(str(real)),)).fetchone() is not None

    def add(self, source: Source, real: Path) -> None:
        self._kind = self._kind or type(source)
        if self._db is None:
            self._seen.add(real)
            self._held.append((source, real))
            group = self._by_key.get(source.group)
            if group is None:
                group = self._by_key[source.group] = []
                self._groups += 1
            group.append(source)
            self._sources += 1
            if self._sources > SPILL and not self._stay and self._folder is not None:
                self._spill()
            return
        self._insert(source, real)

    def _insert(self, source: Source, real: Path) -> None:
        db = self._cur  # one cursor reused: a fresh one a statement leaves a weak reference behind for a while
        key = _blob(source.group)
        db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (_blob(str(real)),))
        db.execute("INSERT INTO source VALUES (?, ?, ?, ?)",
                   (self._sources, key, os.fsencode(source.path), self._importer(source.importer)))
        self._groups += db.execute("INSERT OR IGNORE INTO grp VALUES (?, ?)", (key, self._sources)).rowcount
        self._sources += 1

    def _importer(self, imp: Any) -> int:
        for i, have in enumerate(self._importers):
            if have is imp:
                return i
        self._importers.append(imp)
        return len(self._importers) - 1

    def _spill(self) -> None:
        """Move what is held to disk; where no private folder can be made, keep holding it."""
        import sqlite3  # (only past the spill: reading one file must not load it)

        from .pipeline.spool import Spool

        try:
            spool = Spool(self._folder)
        except OSError:
            self._stay = True
            return
        try:
            db = sqlite3.connect(os.path.join(spool.folder, "groups.sqlite"), isolation_level=None,
                                 check_same_thread=False)
            db.executescript(f"PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE; "
                             f"PRAGMA cache_size=-{CACHE_KB}; {_SCHEMA} BEGIN;")
        except sqlite3.Error:
            spool.close()
            self._stay = True
            return
        self._spool, self._db, self._cur = spool, db, db.cursor()
        held = self._held
        self._held, self._by_key, self._seen, self._sources, self._groups = [], {}, set(), 0, 0
        for source, real in held:
            self._insert(source, real)

    def finish(self) -> "SourceGroups":
        """Done adding (the on-disk index committed)."""
        if self._db is not None and not self._done:
            self._db.execute("COMMIT")
        self._done = True
        self._seen, self._held = set(), []  # held: only the groups are read from here on
        return self

    # ---------------------------------------------------------------- reading
    def __len__(self) -> int:
        return self._groups

    def __bool__(self) -> bool:
        return self._groups > 0

    @property
    def on_disk(self) -> bool:
        return self._db is not None

    def __iter__(self) -> Iterator[list[Source]]:
        if self._db is None:
            yield from self._by_key.values()
            return
        group: list[Source] = []
        at = None
        for first, key, path, imp in self._db.execute(_GROUPS):
            if first != at:
                if group:
                    yield group
                group, at, name = [], first, key.decode("utf-8", "surrogatepass")
            group.append(self._kind(Path(os.fsdecode(path)), self._importers[imp], name))
        if group:
            yield group

    def close(self) -> None:
        """The on-disk index removed now (also when collected, or at exit)."""
        if self._db is not None:
            self._db.close()
        if self._spool is not None:
            self._spool.close()

    @property
    def folder(self) -> str | None:
        """The private folder of the on-disk index (None: in memory)."""
        return self._spool.folder if self._spool is not None else None

