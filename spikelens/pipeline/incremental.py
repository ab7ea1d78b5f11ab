"""Incremental sweeps: a group of sources whose files have not changed since the last
sweep written to the same findings dataset is not read again; its reports come back
from the dataset, as they were before cross-run linking (which is redone over all).

A group's fingerprint is the size and modification time (ns) of every file it would
read (every file inside a folder source). A file of a local copy of object storage
(`storage.mirror`) is known by its URL: in the kept copy a sweep with a dataset uses
(`storage.kept_copies`), by the size and version (ETag) the listing gave, so neither
its download nor its analysis is repeated when it did not change; in a temporary copy
(fresh mtimes in every process), by its size and a digest of its bytes. An importer
may give its own per source (`fingerprint(path)`), and is used when it has one.

The kept reports are JSON of a fixed vocabulary, validated when read back
(`statejson`): a dataset is shared, so nothing in it is ever unpickled or run. A state
that does not load (damaged, older, planted) is a warning, and its group is read again.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from .. import findings_data
from ..discover import Source
from ..findings_data import GroupState
from ..model.report import RunReport
from ..storage import display, protocol, recorded, unmangle
from . import statejson


def group_key(group: list[Source]) -> str:
    return "\n".join(sorted(display(s.path) for s in group))


def fingerprint(group: list[Source]) -> str:
    """JSON of (path, size, mtime_ns or version) of every file the group reads, in a stable order."""
    out: list[Any] = []
    for src in sorted(group, key=lambda s: display(s.path)):
        own = getattr(src.importer, "fingerprint", None)
        shown = display(src.path)
        copied = shown != str(src.path) and "://" in shown
        out.append([shown, own(src.path) if own else _stat_all(src.path, by_content=copied)])
    return json.dumps(out)


def _stat_all(path: Path, by_content: bool = False) -> list[Any]:
    def one(p: str) -> list[Any]:
        st = os.stat(p)
        if not by_content:
            return [st.st_size, st.st_mtime_ns]
        listed = recorded(p)  # a kept copy: as listed, no read
        return list(listed) if listed else [st.st_size, _digest(p)]

    try:
        if not path.is_dir():
            return one(str(path))
        files = []
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames.sort()
            for name in sorted(filenames):
                p = os.path.join(dirpath, name)
                files.append([os.path.relpath(p, path), *one(p)])
        return files
    except OSError:
        return ["unreadable"]  # never equal to a readable fingerprint: read it (and warn) again


def _digest(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def settings(cfg: Any, detector_params: dict | None, roots: list[Path]) -> str:
    return findings_data.settings_key(_version(), repr(cfg), repr(sorted((detector_params or {}).items())),
                                      [_root_key(r) for r in roots])


def _root_key(root: Path) -> str:
    """A root as the settings know it: a URL as written (not resolved against the working
    folder, so a sweep started elsewhere still finds its dataset), a path resolved."""
    text = unmangle(str(root))
    return text if protocol(text) else str(root.resolve())


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("spikelens")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


STATE_SLICE = 1024
"""Kept states turned into Python objects (and, with a spool, written there) this many at a time."""


def previous(path: Path | None, settings_key: str, spool: Any = None) -> tuple[Any, Any]:
    """The groups a previous sweep kept in the dataset under the same settings (their
    states loaded and validated: one that does not load is left out, with one warning),
    and the hash of each run's rows as written. With a `spool`, each state's bytes and its
    decoded reports wait there, and both maps are SQLite tables of its folder (`Kept`): a
    sweep of 10^5 reused runs holds none of them."""
    if path is None or not path.exists():
        return {}, {}
    groups: Any = {} if spool is None else Kept(spool, "kept", settings_key)
    hashes: Any = {} if spool is None else Kept(spool, "hashes", settings_key)
    bad: list[str] = []
    try:
        _read_kept(path, settings_key, spool, groups, hashes, bad)
    except findings_data.Damaged:  # warned: nothing of it is used, as when it was read whole
        return {}, {}
    if spool is not None:
        groups.done()
        hashes.done()
    if bad:
        from .. import diagnostics

        diagnostics.warn(f"{path}: {len(bad)} kept state(s) could not be loaded ({bad[0]}); those runs are read "
                         "again")
    return groups, hashes


def _read_kept(path: Path, settings_key: str, spool: Any, groups: Any, hashes: Any, bad: list[str]) -> None:
    """`previous`' pass over the dataset, a slice at a time."""
    st = settings_key  # every kept state's, as filtered: one string held, not a copy a group
    for table in findings_data.read_slices(path, ["row", "run", "group_key", "fingerprint", "settings", "state",
                                                  "rows_hash"], STATE_SLICE):
        table = table.filter(pl.col("row") == "run")
        for run, digest in zip(table.get_column("run").to_list(), table.get_column("rows_hash").to_list()):
            if digest:
                hashes[run] = digest
        table = table.filter(pl.col("state").is_not_null() & (pl.col("settings") == settings_key))
        rows = (zip(*(part.get_column(c).to_list() for c in ("group_key", "fingerprint", "state")))
                for part in table.iter_slices(STATE_SLICE))  # a slice's states as Python objects at a time
        for key, fp, state in (row for part in rows for row in part):
            try:
                restored = statejson.loads(state)
            except statejson.StateError as exc:
                bad.append(f"{exc}")
                continue
            if isinstance(key, str) and isinstance(fp, str):
                if spool is None:
                    groups[key] = GroupState(key, fp, st, state, restored)
                else:
                    kept = GroupState(key, fp, st, state).spooled(spool)
                    kept.restored = _Spooled(spool.append(restored))
                    groups[key] = kept
        del table


class Kept:
    """A previous sweep's kept states by group key (`GroupState`s whose bytes and decoded
    reports wait in the spool), or its rows' hashes by run, as an SQLite table in the spool's
    private folder: looked up by key, none held (issue 28). A key set twice keeps the last."""

    def __init__(self, spool: Any, name: str, settings_key: str) -> None:
        import sqlite3

        self.spool, self.name, self.settings, self.n = spool, name, settings_key, 0
        self.db = sqlite3.connect(os.path.join(spool.folder, f"{name}.sqlite"), isolation_level=None,
                                  check_same_thread=False)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-1024; "
                              "CREATE TABLE kept (key BLOB PRIMARY KEY, a BLOB, b INTEGER, c INTEGER) "
                              "WITHOUT ROWID; BEGIN;")
        self.cur = self.db.cursor()  # one cursor reused: a fresh one a statement leaves a weak reference a while

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(value, GroupState):
            row = (_blob(key), _blob(value.fingerprint), value.where[1], int(value.restored))
        else:
            row = (_blob(key), _blob(value), None, None)
        self.cur.execute("INSERT OR REPLACE INTO kept VALUES (?, ?, ?, ?)", row)

    def done(self) -> None:
        self.db.execute("COMMIT")
        self.n = self.db.execute("SELECT count(*) FROM kept").fetchone()[0]

    def get(self, key: str, default: Any = None) -> Any:
        row = self.cur.execute("SELECT a, b, c FROM kept WHERE key = ?", (_blob(key),)).fetchone()
        if row is None:
            return default
        a = row[0].decode("utf-8", "surrogatepass")
        if row[1] is None:
            return a
        kept = GroupState(key, a, self.settings, b"", where=(self.spool, row[1]))
        kept.restored = _Spooled(row[2])
        return kept

    def pop(self, key: str) -> Any:
        kept = self.get(key)
        if kept is None:
            raise KeyError(key)
        return kept

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0


def _blob(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def keep(key: str, fp: str, settings_key: str, reports: list[RunReport], warnings: list[str]) -> GroupState | None:
    """A group's state to write (None: it holds a value the state cannot spell, so the
    group is read again next time); frames are never kept (plots read the files again)."""
    try:
        data = statejson.dumps(reports, warnings)
    except (TypeError, ValueError):
        return None
    return GroupState(key, fp, settings_key, data)


def restore(state: GroupState) -> tuple[list[RunReport], list[str]]:
    """The reports and warnings `previous` loaded (fresh copies are not needed: each
    sweep loads its own)."""
    if state.restored is None:
        state.restored = statejson.loads(state.data())
    if isinstance(state.restored, _Spooled):
        spool, _ = state.where
        state.restored = spool[state.restored]
    reports, warnings = state.restored
    return reports, warnings


class _Spooled(int):
    """The spool index of a state's decoded reports (`previous` with a spool)."""
