"""Open a user's SQLite file (an MLflow or Trackio database) without writing beside it.

`mode=ro` alone is not enough: a database in WAL mode (Trackio's, or any file a live
process is writing) makes SQLite create `<db>-shm` next to it, which is a write into the
user's log folder. A file with no `-wal` beside it is opened `immutable=1`. A file with a
non-empty `-wal` holds committed rows only there, which `immutable=1` would not see: it is
copied with its `-wal` into a private temporary folder and opened there, where SQLite
folds the WAL in.
"""
from __future__ import annotations

import shutil
import sqlite3
import tempfile
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _wal_of(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


class _CopyConnection(sqlite3.Connection):
    """A connection to a private copy: closing it (or losing it) removes the copy."""

    def close(self) -> None:
        super().close()
        shutil.rmtree(getattr(self, "copy_dir", ""), ignore_errors=True)


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that sees every committed row and writes nothing beside `path`."""
    wal = _wal_of(path)
    if wal.is_file() and wal.stat().st_size > 0:
        tmp = tempfile.mkdtemp(prefix="spikelens-sqlite-")
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        shutil.copyfile(wal, _wal_of(copy))
        con = sqlite3.connect(copy, factory=_CopyConnection)
        con.copy_dir = tmp
        weakref.finalize(con, shutil.rmtree, tmp, True)
        return con
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    con = connect_read_only(path)
    try:
        yield con
    finally:
        con.close()


def table_names(path: Path) -> set[str]:
    """Tables of a SQLite file (empty when it is not one)."""
    try:
        with read_only(path) as con:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except (sqlite3.Error, OSError):
        return set()
