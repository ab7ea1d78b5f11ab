"""Findings as data: a report written as one Parquet table a fleet is queried with.

One row per finding (`row = "finding"`: run, source, metric, kind, code, severity,
steps, magnitude, recovery, top cause, evidence as JSON) and one row per run
(`row = "run"`: formats, segments, steps, verdict), in one file or in a folder
partitioned by run (`run=NAME/part-<commit>.parquet`, hive style, which Polars and DuckDB
read back with the run column; the manifest `_spikelens_dataset.json` lists the committed
partitions). Run rows also keep what an incremental sweep needs (the fingerprint of the
run's files and its report before cross-run linking, as validated JSON: never pickle).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import quote

import polars as pl

from . import diagnostics, outputs
from .errors import InputError, UsageError
from .outputs import atomic_write, is_temp_name
from .model.finding import Finding, _clean
from .model.report import Report, RunReport

SCHEMA = {
    "row": pl.String, "run": pl.String, "source": pl.String, "metric": pl.String, "kind": pl.String,
    "code": pl.String, "severity": pl.String, "start_step": pl.Int64, "peak_step": pl.Int64,
    "end_step": pl.Int64, "magnitude": pl.Float64, "recovery": pl.String, "top_cause": pl.String,
    "top_cause_confidence": pl.Float64, "message": pl.String, "evidence": pl.String, "causes": pl.String,
    # run rows
    "formats": pl.List(pl.String), "sources": pl.List(pl.String), "segments": pl.Int64,
    "first_step": pl.Int64, "last_step": pl.Int64, "steps": pl.Int64, "points": pl.Int64,
    "verdict": pl.String, "findings": pl.Int64, "main_metric": pl.String,
    # incremental sweeps (run rows only)
    "group_key": pl.String, "fingerprint": pl.String, "settings": pl.String, "state": pl.Binary,
    "rows_hash": pl.String,
}
PART_FILE = "part-0.parquet"


@dataclass
class GroupState:
    """What a sweep keeps of one group of sources to skip it next time."""

    key: str
    fingerprint: str
    settings: str
    state: bytes
    """The group's reports (before cross-run linking) and warnings as JSON (pipeline.incremental)."""
    restored: Any = None
    """The decoded reports and warnings, once validated (previous sweeps only)."""
    where: Any = None
    """(spool, index) of `state` when it waits on disk (a spooled sweep); `state` is then empty."""

    def spooled(self, spool: Any) -> "GroupState":
        """This state with its bytes moved into a sweep's spool (pipeline.spool)."""
        return GroupState(self.key, self.fingerprint, self.settings, b"", where=(spool, spool.append(self.state)))

    def bare(self) -> "GroupState":
        """What is written of it (its bytes, not what was decoded from them), to be kept whole in a spool."""
        return GroupState(self.key, self.fingerprint, self.settings, self.data())

    def data(self) -> bytes:
        if self.where is None:
            return self.state
        spool, index = self.where
        return spool[index]


def is_folder(path: Path) -> bool:
    """A folder dataset: an existing folder, or a path not ending in .parquet."""
    return path.is_dir() or path.suffix.lower() != ".parquet"


CHUNK_RUNS = 256
"""Runs whose rows are built and written together (`row_chunks`): a sweep's rows are
never all in memory at once."""


def rows(report: Report, states: dict[str, tuple[GroupState, list[RunReport]]] | None = None) -> pl.DataFrame:
    """The table: each run's row, then its findings' rows. `states` maps a group key to
    its state and the reports of its runs (the state is written on the first run's row)."""
    chunks = list(row_chunks(report, states))
    return pl.concat(chunks) if chunks else pl.DataFrame(schema=SCHEMA)


def row_chunks(report: Report, states: dict[str, tuple[GroupState, list[Any]]] | None = None,
               runs_per_chunk: int = CHUNK_RUNS) -> Iterator[pl.DataFrame]:
    """The table of `rows`, `runs_per_chunk` runs at a time (a run's rows are in one chunk)."""
    states = states or {}
    first_run_of = {id(runs[0]): st for st, runs in states.values() if runs}
    group_of = {id(r): st.key for st, runs in states.values() for r in runs}
    out: list[dict[str, Any]] = []
    # a spooled sweep's runs are read back one at a time, its table saying where each group's state lies
    spool = getattr(report.runs, "spool", None)
    for i, r in enumerate(report.runs, 1):
        at = report.runs.state_at(i - 1) if spool is not None else None
        if at is not None:
            st = spool[at if at >= 0 else ~at]
            key, st = st.key, (st if at >= 0 else None)
        else:
            st, key = first_run_of.get(id(r)), group_of.get(id(r))
        out.append(_run_row(r, key, st))
        out.extend(_finding_row(r, f) for f in r.findings)
        if i % runs_per_chunk == 0:
            yield pl.DataFrame(out, schema=SCHEMA, orient="row")
            out = []
    if out:
        yield pl.DataFrame(out, schema=SCHEMA, orient="row")


def _run_row(r: RunReport, group: str | None, st: GroupState | None) -> dict[str, Any]:
    s = r.stats
    first, last = s.get("first_step"), s.get("last_step")
    worst = r.worst()
    return {
        "row": "run", "run": r.run, "formats": list(r.formats), "sources": list(r.sources),
        "segments": len(r.segments), "first_step": first, "last_step": last,
        "steps": None if first is None else last - first + 1, "points": r.points,
        "verdict": "ok" if worst in (None, "info") else worst, "findings": len(r.findings),
        "main_metric": s.get("main_metric"), "group_key": group,
        "fingerprint": st.fingerprint if st else None, "settings": st.settings if st else None,
        "state": st.data() if st else None,
    }


def _finding_row(r: RunReport, f: Finding) -> dict[str, Any]:
    top = f.causes[0] if f.causes else None  # the order the report gives them
    return {
        "row": "finding", "run": r.run, "source": source_of(r, f.anchor_step), "metric": f.metric,
        "kind": f.kind, "code": f.code, "severity": f.severity, "start_step": _int(f.start_step),
        "peak_step": _int(f.peak_step), "end_step": _int(f.end_step), "magnitude": _float(f.magnitude),
        "recovery": f.recovery, "top_cause": top.cause if top else None,
        "top_cause_confidence": float(top.confidence) if top else None, "message": f.message,
        "evidence": json.dumps(_clean({**f.evidence, **f.extra}), sort_keys=True),
        "causes": json.dumps([c.to_json() for c in f.causes]),
    }


def source_of(r: RunReport, step: int | None) -> str | None:
    """The file that logged a step: the latest launch (segment) whose steps cover it."""
    if len(r.sources) == 1 or step is None:
        return r.sources[0] if len(r.sources) == 1 else None
    best = None
    for seg in r.segments:
        lo, hi = seg.get("first_step"), seg.get("last_step")
        if lo is not None and hi is not None and lo <= step <= hi:
            best = seg.get("source")
    return best


def _int(x: Any) -> int | None:
    return None if x is None else int(x)


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


def write(path: Path, table: pl.DataFrame | Iterable[pl.DataFrame], old_hashes: dict[str, str] | None = None) -> None:
    """Write the table (or its chunks, `row_chunks`, a run's rows in one) to a file, or to a
    folder partitioned by run, atomically; in a folder, a run whose rows hash as they did
    (`old_hashes`, read from it before) is not written again, and runs no longer in the
    table lose the partition this dataset wrote."""
    chunks = [table] if isinstance(table, pl.DataFrame) else table
    try:
        if is_folder(path):
            _write_folder(path, chunks, old_hashes or {})
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(table, pl.DataFrame):
                atomic_write(path, table.write_parquet)
            else:
                atomic_write(path, lambda tmp: _write_chunks(tmp, chunks))
    except OSError as exc:
        raise UsageError(f"{path}: cannot write findings ({exc.strerror or exc})") from None


# ---------------------------------------------------------------- the folder dataset
#
# DIR/_spikelens_dataset.json (the manifest) lists the partition file of every run; it is
# written last, in one rename, so a dataset is always the last committed sweep whole.
# Partitions of a sweep are new files (`run=NAME/part-<commit>.parquet`), never written
# over the committed ones; DIR/.spikelens-pending.json names the commit under way and the
# files it replaces, so the leftovers of a killed sweep are known as spikelens' own and
# removed by the next one. Nothing the manifest or the journal does not name is removed.

MANIFEST = "_spikelens_dataset.json"
PENDING = ".spikelens-pending.json"
LOCK = ".spikelens.lock"
MANIFEST_SCHEMA = "spikelens.findings-dataset/1"
_PART = re.compile(r"part-[0-9a-f]{12}\.parquet")
_FOLDER = re.compile(r"run=[^/\\]+")


@contextmanager
def locked(path: Path | None) -> Iterator[None]:
    """Hold the dataset's lock (DIR/.spikelens.lock, released when the process ends, even
    killed): sweeps into one folder dataset run one after the other. A single file needs
    none: each sweep replaces it whole."""
    if path is None or not is_folder(path):
        yield
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
        fh = open(path / LOCK, "a")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write findings ({exc.strerror or exc})") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # waits for a sweep under way (the report is the same either way)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_chunks(path: Path, chunks: Iterable[pl.DataFrame]) -> None:
    """One Parquet file, a row group per chunk (zstd, as Polars writes)."""
    import pyarrow.parquet as pq

    writer = None
    try:
        for chunk in chunks:
            arrow = chunk.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(str(path), arrow.schema, compression="zstd")
            writer.write_table(arrow)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:  # no run: the empty table, as `rows` gives it
        pl.DataFrame(schema=SCHEMA).write_parquet(path)


def _write_folder(root: Path, chunks: Iterable[pl.DataFrame], old_hashes: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    old = _manifest(root) or _Listing()  # read (and a damage warned) once
    _recover(root, old)
    commit = secrets.token_hex(6)
    outputs.atomic_write(root / PENDING, lambda tmp: _write_journal(tmp, commit, old.items()))

    def partitions() -> Iterator[tuple[str, str]]:
        """Each run's partition, written (or kept: its rows hash as before) as the table comes."""
        for (run,), part in (g for table in chunks for g in table.group_by("run", maintain_order=True)):
            folder = f"run={quote(str(run), safe='')}"
            digest = rows_hash(part)
            kept = old.get(folder)
            if kept and old_hashes.get(run) == digest and (root / folder / kept).is_file():
                yield folder, kept
                continue
            (root / folder).mkdir(exist_ok=True)
            part = part.with_columns(rows_hash=pl.when(pl.col("row") == "run").then(pl.lit(digest))).drop("run")
            name = f"part-{commit}.parquet"
            atomic_write(root / folder / name, part.write_parquet)
            yield folder, name

    # the manifest is written as the partitions are (its temporary file, renamed once all are): no list a run
    outputs.atomic_write(root / MANIFEST, lambda tmp: _write_manifest(tmp, commit, partitions()))
    old.close()
    _recover(root)  # the files this commit replaced


def _write_manifest(path: Path, commit: str, parts: Iterable[tuple[str, str]]) -> None:
    """The manifest's JSON, the bytes `json.dumps(..., indent=1)` gives of the whole dict
    (partitions in the order given), written an entry at a time."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f'{{\n "schema": {json.dumps(MANIFEST_SCHEMA)},\n "commit": {json.dumps(commit)},\n "partitions": {{')
        sep = "\n"
        for folder, name in parts:
            fh.write(f"{sep}  {json.dumps(folder)}: {json.dumps(name)}")
            sep = ",\n"
        fh.write("}\n}\n" if sep == "\n" else "\n }\n}\n")


def _manifest(root: Path) -> "_Listing | None":
    """{partition folder: file} of the committed dataset; None when there is none, or it
    is damaged (warned: the dataset is then rebuilt). Read an entry at a time (`_entries`)."""
    p = root / MANIFEST
    if not p.exists():
        return None
    listed = _Listing()
    try:
        for k, v in _entries(p):
            if _listed_ok(k, v):
                listed[k] = v
        return listed
    except (OSError, ValueError, KeyError, TypeError) as exc:
        listed.close()
        line = f"{p}: damaged findings dataset manifest ({_first_line(exc)}); the dataset is rebuilt"
        if line not in _WARNED:  # a sweep reads the manifest, then writes past it: one warning
            _WARNED.add(line)
            diagnostics.warn(line)
        return None


def _entries(path: Path) -> Iterator[tuple[Any, Any]]:
    """A manifest's partitions: line by line where it is laid out as `_write_manifest` writes it
    (a sweep of 10^5 runs is never one dict), else the whole document parsed and checked."""
    with open(path, encoding="utf-8") as fh:
        head = [fh.readline() for _ in range(4)]
        if (head[0] == "{\n" and head[1].startswith(' "schema": ') and head[2].startswith(' "commit": ')
                and head[3] == ' "partitions": {\n'):
            if json.loads(head[1][len(' "schema": '):].rstrip().rstrip(",")) != MANIFEST_SCHEMA:
                raise ValueError("not a spikelens dataset manifest")
            json.loads(head[2][len(' "commit": '):].rstrip().rstrip(","))
            for line in fh:
                if line == " }\n":
                    if fh.read() != "}\n":
                        raise ValueError("text after the partitions")
                    return
                if not line.startswith("  "):
                    raise ValueError("not a partition line")
                ((k, v),) = json.loads("{" + line.strip().rstrip(",") + "}").items()
                yield k, v
            raise ValueError("cut short")
        data = json.loads("".join(head) + fh.read())
    parts = data["partitions"]
    if data.get("schema") != MANIFEST_SCHEMA or not isinstance(parts, dict):
        raise ValueError("not a spikelens dataset manifest")
    yield from parts.items()


LISTING_HELD = 4096
"""Partitions of a manifest held in a dict; past this, in an SQLite table of a private folder."""


class _Listing:
    """A manifest's {folder: file}, in order, as a dict behaves (a key set again keeps its
    place, takes the new file): held up to `LISTING_HELD` entries, past that in an SQLite
    file of a private folder (`pipeline.spool.Spool`'s, removed with it), so that a dataset of
    10^5 runs is compared and cleaned without its listing in memory (issue 28)."""

    def __init__(self) -> None:
        self._held: dict[str, str] = {}
        self._db: Any = None
        self._spool: Any = None
        self._n = 0

    def __setitem__(self, folder: str, name: str) -> None:
        if self._db is None:
            self._held[folder] = name
            self._n = len(self._held)
            if self._n > LISTING_HELD:
                self._spill()
            return
        self._n += folder not in self
        self._cur.execute("INSERT INTO listing (folder, name) VALUES (?, ?) ON CONFLICT (folder) "
                          "DO UPDATE SET name = excluded.name", (_b(folder), _b(name)))

    def _spill(self) -> None:
        import sqlite3

        from .pipeline.spool import Spool

        try:
            spool = Spool(os.environ.get("SPIKELENS_SPOOL_DIR") or None)
        except OSError:
            return  # no private folder: held, as before
        self._spool = spool
        self._db = sqlite3.connect(os.path.join(spool.folder, "listing.sqlite"), isolation_level=None,
                                   check_same_thread=False)
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-1024; "
                               "CREATE TABLE listing (seq INTEGER PRIMARY KEY, folder BLOB UNIQUE, name BLOB);")
        self._cur = self._db.cursor()  # one cursor reused: a fresh one a statement leaves a weak reference a while
        held, self._held, self._n = self._held, {}, 0
        for folder, name in held.items():
            self[folder] = name

    def get(self, folder: str, default: Any = None) -> Any:
        if self._db is None:
            return self._held.get(folder, default)
        row = self._cur.execute("SELECT name FROM listing WHERE folder = ?", (_b(folder),)).fetchone()
        return default if row is None else row[0].decode("utf-8", "surrogatepass")

    def __contains__(self, folder: str) -> bool:
        return self.get(folder) is not None

    def items(self) -> Iterator[tuple[str, str]]:
        if self._db is None:
            yield from list(self._held.items())
            return
        for folder, name in self._db.execute("SELECT folder, name FROM listing ORDER BY seq"):
            yield folder.decode("utf-8", "surrogatepass"), name.decode("utf-8", "surrogatepass")

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._spool.close()


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _write_journal(path: Path, commit: str, replaces: Iterable[tuple[str, str]]) -> None:
    """The commit under way (a first line) and the partition files it replaces (a line each:
    [folder, file]), as JSON lines: read back an entry at a time (`_journal`)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"commit": commit}) + "\n")
        for folder, name in replaces:
            fh.write(json.dumps([folder, name]) + "\n")


def _journal(path: Path) -> tuple[str, Iterator[tuple[Any, Any]]]:
    """The journal's commit and the files it replaces (a journal of an older version, one JSON
    document with a `replaces` object, read whole); ("", nothing) when it does not read."""
    try:
        with open(path, encoding="utf-8") as fh:
            first = json.loads(fh.readline())
        commit = str(first["commit"])
        if "replaces" in first:
            return commit, iter(list(dict(first["replaces"]).items()))
    except (OSError, ValueError, KeyError, TypeError):
        return "", iter(())

    def replaced() -> Iterator[tuple[Any, Any]]:
        try:
            with open(path, encoding="utf-8") as fh:
                fh.readline()
                for line in fh:
                    pair = json.loads(line)
                    if isinstance(pair, list) and len(pair) == 2:
                        yield pair[0], pair[1]
        except (OSError, ValueError):  # a journal cut short: what was read
            return

    return commit, replaced()


_WARNED: set[str] = set()


def _listed_ok(folder: Any, name: Any) -> bool:
    """A manifest entry names a partition file of this dataset (never a path elsewhere)."""
    return (isinstance(folder, str) and isinstance(name, str) and _FOLDER.fullmatch(folder) is not None
            and folder not in ("run=.", "run=..") and _PART.fullmatch(name) is not None)


def _recover(root: Path, listed: Any = None) -> None:
    """Remove what an unfinished or finished commit left that the manifest (`listed`, read
    here when not given) does not list: the files the journal names as written or replaced
    by it, and temporary files. A partition folder and a journal entry at a time."""
    journal = root / PENDING
    if not journal.exists():
        return
    if listed is None:
        listed = _manifest(root) or _Listing()
    commit, replaced = _journal(journal)
    ours = f"part-{commit}.parquet" if re.fullmatch(r"[0-9a-f]{12}", commit) else None
    for entry in _run_folders(root):  # the partitions this commit wrote, and temporary files
        folder, files = entry.name, [f for f in os.scandir(entry.path) if f.is_file()]
        if not files:
            continue
        if ours is not None and listed.get(folder) != ours:
            (root / folder / ours).unlink(missing_ok=True)
        for f in files:
            if is_temp_name(f.name):
                Path(f.path).unlink(missing_ok=True)
        if ours is not None and folder not in listed:
            _rmdir_if_empty(root / folder)
    for folder, name in replaced:  # the partitions it replaced
        if _listed_ok(folder, name) and listed.get(folder) != name:
            (root / folder / name).unlink(missing_ok=True)
            if folder not in listed:
                _rmdir_if_empty(root / folder)
    journal.unlink(missing_ok=True)


def _run_folders(root: Path) -> Iterator[os.DirEntry]:
    """The partition folders (`run=*`) of a dataset, as the folder lists them."""
    try:
        with os.scandir(root) as it:
            for entry in it:
                if entry.name.startswith("run=") and entry.is_dir(follow_symlinks=False):
                    yield entry
    except OSError:
        return


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # holds something spikelens did not write, or is gone
        pass


def read(path: Path, columns: list[str] | None = None) -> pl.DataFrame:
    """The table as written (a folder's run column comes back from the partition names):
    only what the committed manifest lists. A damaged partition is left out with a
    warning (its runs are read again by the sweep, and the partition written anew)."""
    columns = columns or list(SCHEMA)
    empty = pl.DataFrame(schema={k: SCHEMA[k] for k in columns})
    if is_folder(path):
        listed = _manifest(path) if path.is_dir() else None
        return _read_files(path, [path / folder / name for folder, name in (listed.items() if listed else ())],
                           columns)
    try:
        return pl.scan_parquet(path).select(columns).collect()
    except pl.exceptions.ColumnNotFoundError:
        raise InputError(path, "not a spikelens findings dataset (other columns); choose another --findings "
                               "path") from None
    except (OSError, pl.exceptions.PolarsError) as exc:
        if not _looks_parquet(path):
            raise InputError(path, f"not a spikelens findings dataset ({_first_line(exc)}); choose another "
                                   "--findings path") from None
        diagnostics.warn(f"{path}: damaged findings dataset ({_first_line(exc)}); every run is read again and "
                         "the file written anew")
        return empty


def _read_files(path: Path, files: list[Path], columns: list[str]) -> pl.DataFrame:
    """Partitions of a folder dataset as one table; a damaged one left out with a warning."""
    empty = pl.DataFrame(schema={k: SCHEMA[k] for k in columns})
    if not files:
        return empty
    try:
        return pl.scan_parquet(files, hive_partitioning=True).select(columns).collect()
    except (OSError, pl.exceptions.PolarsError):
        pass  # find the damaged ones, keep the others
    good = []
    for f in files:
        try:
            good.append(pl.scan_parquet(f, hive_partitioning=True).select(columns).collect())
        except (OSError, pl.exceptions.PolarsError) as exc:
            diagnostics.warn(f"{f}: damaged findings partition ({_first_line(exc)}); its runs are read again "
                             "and it is written anew")
    return pl.concat(good, how="vertical_relaxed") if good else empty


def read_slices(path: Path, columns: list[str], files_per_slice: int) -> Iterator[pl.DataFrame]:
    """`read`'s table in parts: a folder's partitions `files_per_slice` at a time (the
    previous sweep's kept states of 10^5 runs are never one table in memory); a single
    file `files_per_slice` rows at a time, a row group read at a time (`_file_slices`). Damaged
    partitions are left out as `read` leaves them; a damaged file is `read`'s warning and
    nothing, or, found only part way, `Damaged` (what came before it is not to be used)."""
    if not is_folder(path):
        yield from _file_slices(path, columns, files_per_slice)
        return
    listed = _manifest(path) if path.is_dir() else None
    files: list[Path] = []
    for folder, name in (listed.items() if listed else ()):
        files.append(path / folder / name)
        if len(files) == files_per_slice:
            yield _read_files(path, files, columns)
            files = []
    if files:
        yield _read_files(path, files, columns)


class Damaged(Exception):
    """A single-file dataset found damaged part way through reading it (warned): the slices
    already read are to be dropped, as `read` would have dropped the whole table."""


def _file_slices(path: Path, columns: list[str], rows_per_slice: int) -> Iterator[pl.DataFrame]:
    """A single-file dataset's `columns`, `rows_per_slice` rows at a time (pyarrow reads a row
    group at a time; the sweep writes one a `CHUNK_RUNS` runs): a dataset of 10^5 runs is never
    one table in memory (issue 28). A file that does not open as one of ours is `read`'s,
    for the same error or warning."""
    import pyarrow.parquet as pq

    try:
        fh = pq.ParquetFile(path)
        names = set(fh.schema_arrow.names)
    except Exception:  # noqa: BLE001 - not Parquet, cut or damaged: read says which, as it did
        yield read(path, columns)
        return
    if not set(columns) <= names:
        fh.close()
        yield read(path, columns)  # the "other columns" error
        return
    empty = pl.DataFrame(schema={k: SCHEMA[k] for k in columns})
    read_any = False
    with fh:
        batches = fh.iter_batches(batch_size=rows_per_slice, columns=columns)
        while True:
            try:
                batch = next(batches, None)
                if batch is None:
                    break
                table = pl.from_arrow(batch)
            except Exception as exc:  # noqa: BLE001 - a damaged page: as `read` warns of it
                diagnostics.warn(f"{path}: damaged findings dataset ({_first_line(exc)}); every run is read "
                                 "again and the file written anew")
                if read_any:
                    raise Damaged(str(path)) from None
                yield empty
                return
            read_any = True
            yield table.select(columns).cast({k: SCHEMA[k] for k in columns})
    if not read_any:
        yield empty


def _looks_parquet(path: Path) -> bool:
    """Starts as a Parquet file does (a cut or damaged one of ours, not somebody's other file)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def rows_hash(part: pl.DataFrame) -> str:
    """A digest of one run's rows (its partition need not be written again when equal)."""
    h = hashlib.sha256()
    for col in part.drop("rows_hash").iter_columns():
        h.update(col.name.encode())
        h.update(repr(col.to_list()).encode())
    return h.hexdigest()[:16]


def settings_key(*parts: Any) -> str:
    """A short hash of what changes every report (version, config, detector parameters,
    roots): a previous sweep's reports are reused only under the same settings."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
