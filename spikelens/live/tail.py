"""Follow log files while they are written: the bytes appended since the last poll, cut
at the last whole record, decoded by the importers' own decoders.

One follower per file for the formats that grow at the end (TensorBoard event files,
`.wandb` files, CSV, JSON lines, text logs); one per group of sources for the rest
(`trainer_state.json` is rewritten whole, MLflow and the like are folders): those are
read again, whole, when a file of theirs changed size, time or inode.

A file that shrank, was replaced (a new inode: log rotation) or whose bytes before the
offset changed (rewritten in place) is read again from 0 with a warning; a file that
disappeared is forgotten with a warning.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from .. import diagnostics
from ..errors import SpikelensError
from ..frame import concat
from ..importers.base import TABLE_SCHEMA, Importer, Table, long_table

_PRINT = 16
"""Bytes before the offset remembered to notice a file rewritten in place."""


@dataclass
class Delta:
    """What one poll of one follower brought: new rows (as importer tables) and whether the
    rows it gave before are void (the file was truncated, replaced or rewritten)."""

    tables: list[Table]
    reset: bool = False


@dataclass
class FileTail:
    """Where reading one file stopped: a byte offset at a record boundary, and what the
    file looked like then (inode, size, time, the bytes just before the offset)."""

    path: Path
    offset: int = 0
    ino: int | None = None
    size: int = -1
    mtime: int = -1
    print_: bytes = b""

    def read_new(self, align: int = 1) -> tuple[bytes, int, str | None]:
        """(bytes from the offset, or from the block boundary before it when `align` > 1,
        to the end; the file offset of those bytes; why the file is read again from 0, or
        None). b"" when nothing changed."""
        st = os.stat(self.path)
        why = None
        if self.ino is not None and st.st_ino != self.ino:
            why = "replaced (a new file under the same name: rotated?)"
        elif st.st_size < self.offset:
            why = f"truncated ({st.st_size} bytes, {self.offset} were read)"
        elif (st.st_size, st.st_mtime_ns) == (self.size, self.mtime):
            return b"", self.offset, None
        with open(self.path, "rb") as fh:
            if why is None and self.offset and self.print_:
                fh.seek(self.offset - len(self.print_))
                if fh.read(len(self.print_)) != self.print_:
                    why = "rewritten in place"
            if why is not None:
                self.offset, self.print_ = 0, b""
            base = self.offset - self.offset % align
            fh.seek(base)
            data = fh.read(max(st.st_size - base, 0))
        self.ino, self.size, self.mtime = st.st_ino, st.st_size, st.st_mtime_ns
        return data, base, why

    def advance(self, data: bytes, base: int, end: int) -> None:
        """The records up to `end` (an offset into `data`) are read."""
        self.offset = base + end
        self.print_ = data[max(0, end - _PRINT):end]


class Follower:
    """Follows one file (or one group of sources read whole)."""

    paths: list[Path]

    def poll(self) -> Delta | None:
        raise NotImplementedError


class _FileFollower(Follower):
    align = 1

    def __init__(self, path: Path, importer: Importer):
        self.path = path
        self.paths = [path]
        self.importer = importer
        self.tail = FileTail(path)

    def poll(self) -> Delta | None:
        data, base, why = self.tail.read_new(self.align)
        if why:
            diagnostics.warn(f"{self.path}: {why}; read again from the start")
            self.restart()
        if not data:
            return Delta([], reset=True) if why else None
        tables = self.decode(data, base)
        if tables is None:
            return Delta([], reset=True) if why else None
        return Delta(tables, reset=bool(why))

    def restart(self) -> None:
        """Forget what the decoder carried over from the old bytes."""

    def decode(self, data: bytes, base: int) -> list[Table] | None:
        raise NotImplementedError


class TensorBoardFollower(_FileFollower):
    """Whole TFRecord records from the offset, decoded by the importer's EventDecoder; a
    record still being written waits (the scan counts it as a truncated tail)."""

    def __init__(self, path: Path, importer: Importer, plugins: dict[str, str]):
        super().__init__(path, importer)
        self.plugins = plugins  # tag -> plugin, shared by the files of one run (as read_many does)

    def decode(self, data: bytes, base: int) -> list[Table] | None:
        from ..importers.tb_events import decode_events
        from ..importers.tfrecord import FOOTER, scan

        records = scan(data)
        if not len(records):
            if base == 0 and not records.looks_like_tfrecord and len(data) >= 12:
                raise _NotThisFormat(self.path, "not a TensorBoard event file (no valid TFRecord record found)")
            return None
        end = int(records.starts[-1] + records.lengths[-1] + FOOTER)
        self.tail.advance(data, base, end)
        scalars = decode_events(data, records, self.plugins)
        if records.damage.lost_records:
            diagnostics.warn(f"{self.path}: damaged event file: {records.damage.describe()}")
        return [self.importer._table(self.path, scalars)]  # noqa: SLF001 - the importer's own table


class WandbFollower(_FileFollower):
    """Whole LevelDB-log records of a `.wandb` file from the offset (read from the block
    boundary before it: the framing is per 32 KiB block), decoded as `read_wandb_file`
    decodes them; a record still being written waits."""

    def __init__(self, path: Path, importer: Importer):
        from ..importers.leveldb_log import BLOCK

        super().__init__(path, importer)
        self.align = BLOCK
        self.restart()

    def restart(self) -> None:
        from ..importers.wandb_offline import WandbFile

        self.file = WandbFile(frame=pl.DataFrame(schema=TABLE_SCHEMA))
        self.last_step = -1

    def decode(self, data: bytes, base: int) -> list[Table] | None:
        from ..importers.leveldb_log import HEADER, has_header, read_records

        if base == 0 and not has_header(data):
            if len(data) >= len(HEADER):
                raise _NotThisFormat(self.path, "not a W&B .wandb file (no ':W&B' header)")
            return None
        log = read_records(data, start=max(self.tail.offset - base, len(HEADER)))
        if log.end <= self.tail.offset - base and not log.payloads:
            return None
        self.tail.advance(data, base, log.end)
        frame = self._history(log.payloads)
        return [self._table(frame)]

    def _history(self, payloads: list[bytes]) -> pl.DataFrame:
        """History rows of some records, decoded as `wandb_offline.read_wandb_file` does."""
        from ..importers.wandb_offline import HistoryRows

        rows = HistoryRows(last_step=self.last_step)
        rows.decode(payloads, self.file)
        self.last_step = rows.last_step
        if self.file.start_time is None:
            self.file.start_time = rows.first_wall()
        from ..importers.wandb_axis import defined_axis

        return rows.frame(defined_axis(self.file.step_metrics))

    def _table(self, frame: pl.DataFrame) -> Table:
        """The table `WandbOfflineRunImporter.read_many` would make of this file."""
        from ..importers.wandb_offline import _folder_time, run_id_from_name, wandb_files

        wf, folder = self.file, self.path.parent
        run_id = wf.run_id or run_id_from_name(self.path)
        one = len(wandb_files(folder)) <= 1
        meta: dict[str, Any] = {"wandb.run_id": run_id}
        for key in ("display_name", "project"):
            if getattr(wf, key):
                meta[f"wandb.{key}"] = getattr(wf, key)
        if wf.branch_point:
            meta["branch_point"] = wf.branch_point
        if wf.resume:
            meta["resume"] = True
        return Table(frame=frame, source=self.path, format="wandb_offline", run_key=f"wandb:{run_id}",
                     segment_key=str(folder) if one else str(self.path),
                     order=(wf.start_time or _folder_time(folder), folder.name),
                     run_name=wf.display_name or run_id, meta=meta, start_time=wf.start_time)


class LinesFollower(_FileFollower):
    """CSV, JSON lines and text logs: the whole lines appended (a last line without its
    newline waits), parsed by the importer: text logs by its line parser with the pattern
    sniffed once; CSV and JSON lines by the importer reading a view file that holds the
    header and the new lines (in the watch's own folder, never beside the log).

    A CSV without a step column numbers its rows: such a file is read again whole when it
    grows (its new rows cannot be numbered alone)."""

    def __init__(self, path: Path, importer: Importer, views: Path):
        super().__init__(path, importer)
        self.views = views
        self.header = b""
        self.pattern = None
        self.whole = False
        self.seen: tuple = ()

    def restart(self) -> None:
        self.header = b""

    def decode(self, data: bytes, base: int) -> list[Table] | None:
        end = data.rfind(b"\n") + 1
        if end == 0:
            return None
        chunk = data[:end]
        kind = self.importer.name
        if base == 0 and kind == "csv":
            first = chunk.split(b"\n", 1)[0] + b"\n"
            self.header, chunk = first, chunk[len(first):]
            if not self._has_step_column(first):
                self.whole = True
                return None
        self.tail.advance(data, base, end)  # lines that cannot be read are not read again
        try:
            if kind == "text":
                return self._text(chunk)
            return self._through_view(self.header + chunk) if chunk.strip() else []
        except SpikelensError as exc:
            diagnostics.warn(f"{exc} (the lines of bytes {base}..{base + end} skipped)")
            return []

    def poll(self) -> Delta | None:
        if self.whole:
            sig = _signature(self.path)
            if sig == self.seen:
                return None
            self.seen = sig
            return Delta(self.importer.read(self.path), reset=True)
        delta = super().poll()
        if self.whole:  # found out at this poll: a CSV without a step column
            self.seen = _signature(self.path)
            return Delta(self.importer.read(self.path), reset=True)
        return delta

    @staticmethod
    def _has_step_column(header: bytes) -> bool:
        from ..importers.csvlogs import LONG_NAME_COLUMNS, separator_of, split_fields, step_column

        line = header.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
        fields = [f.strip() for f in split_fields(line, separator_of(line))]
        return step_column(fields) is not None or bool({f.lower() for f in fields} & set(LONG_NAME_COLUMNS))

    def _text(self, chunk: bytes) -> list[Table]:
        from ..importers.textlogs import parse_lines, split_lines

        if self.pattern is None:
            self.pattern = self.importer.pattern_for(self.path)
            if self.pattern is None:
                return []
        rows, info = parse_lines(split_lines(chunk.decode("utf-8", errors="replace")), self.pattern)
        frame = long_table(rows.get_column("step"), rows.get_column("wall_time"), rows.get_column("metric"),
                           rows.get_column("value"))
        meta = {"pattern": self.pattern.name, **{k: v for k, v in info["signals"].items() if v is not None}}
        return [Table(frame=frame, source=self.path, format="text", run_key=str(self.path),
                      segment_key=str(self.path), meta=meta)]

    def _through_view(self, data: bytes) -> list[Table]:
        """The importer's own read of the new lines (a CSV's header in front), from a view
        file named as the log is (importers look at the suffix); tables placed as the
        importer places the real file."""
        from ..importers.csvlogs import hparams_plan, lightning_version

        self.views.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(dir=self.views))
        view = folder / self.path.name
        try:
            view.write_bytes(data)
            with diagnostics.collecting() as diag:
                try:
                    tables = self.importer.read(view)
                except SpikelensError as exc:  # named after the log, not the view
                    raise SpikelensError(str(exc).replace(str(view), str(self.path))) from None
        finally:
            view.unlink(missing_ok=True)
            folder.rmdir()
        for line in diag.lines:
            diagnostics.warn(line.replace(str(view), str(self.path)))
        version = lightning_version(self.path) if self.importer.name == "csv" else None
        out = []
        for t in tables:
            if version is not None:
                fmt, run_key, seg = "lightning_csv", str(self.path.parent.parent), str(self.path.parent)
                order: tuple = (version,)
                meta = hparams_plan(self.path.parent)
            else:
                fmt, run_key, seg, order, meta = t.format, str(self.path), str(self.path), (), t.meta
            out.append(replace(t, source=self.path, format=fmt, run_key=run_key, segment_key=seg, order=order,
                               meta=meta))
        return out


class WholeFollower(Follower):
    """A group read again whole, by its importer, when one of its files changed (size,
    time or inode): `trainer_state.json` is rewritten at every save, folders of other
    trackers are databases."""

    def __init__(self, paths: list[Path], importer: Importer):
        self.paths = paths
        self.importer = importer
        self.seen: tuple = ()

    def poll(self) -> Delta | None:
        sig = tuple(_signature(p) for p in self.paths)
        if sig == self.seen:
            return None
        self.seen = sig
        return Delta(self.importer.read_many(self.paths), reset=True)


def _signature(path: Path) -> tuple:
    try:
        if path.is_dir():
            return tuple(_signature(Path(e.path)) for e in sorted(os.scandir(path), key=lambda e: e.name)
                         if e.is_file())
        st = path.stat()
        return (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        return (str(path), None)


class _NotThisFormat(SpikelensError):
    def __init__(self, path: Path, problem: str):
        super().__init__(f"{path}: {problem}")


def followers_for(paths: list[Path], importer: Importer, views: Path, plugins: dict[str, str]) -> list[Follower]:
    """The followers of one group of sources (one importer): per file where the format
    grows at its end, one for the whole group otherwise."""
    from ..importers.csvlogs import CsvImporter
    from ..importers.jsonlines import JsonLinesImporter
    from ..importers.tensorboard import TensorBoardImporter
    from ..importers.textlogs import TextLogImporter
    from ..importers.wandb_offline import WandbOfflineRunImporter, wandb_files

    if isinstance(importer, TensorBoardImporter):
        return [TensorBoardFollower(p, importer, plugins) for p in paths]
    if isinstance(importer, WandbOfflineRunImporter):
        files = [f for p in paths for f in (wandb_files(p) if p.is_dir() else [p])]
        return [WandbFollower(f, importer) for f in files]
    if type(importer) in (CsvImporter, JsonLinesImporter, TextLogImporter):
        return [LinesFollower(p, importer, views) for p in paths]
    return [WholeFollower(paths, importer)]


def safe_poll(follower: Follower) -> Delta | None:
    """A follower's poll; a file that vanished or cannot be read is a warning, never a
    traceback (the next poll tries again)."""
    try:
        return follower.poll()
    except FileNotFoundError:
        return None
    except OSError as exc:
        diagnostics.warn(f"{follower.paths[0]}: cannot read ({exc.strerror or exc}); trying again at the next poll")
    except SpikelensError as exc:
        diagnostics.warn(f"{exc} (skipped)")
    except Exception as exc:  # noqa: BLE001 - a reader bug must not end the watch
        diagnostics.warn(f"{follower.paths[0]}: could not be read ({type(exc).__name__}: {exc}); "
                         "trying again at the next poll")
    return None


@dataclass
class SourceFrames:
    """The rows read so far from one table (one file, or one launch of a file)."""

    table: Table
    chunks: list[pl.DataFrame] = field(default_factory=list)
    rows: int = 0

    def add(self, t: Table) -> None:
        meta = dict(self.table.meta)
        for k, v in t.meta.items():
            if isinstance(v, list) and isinstance(meta.get(k), list):
                meta[k] = meta[k] + [x for x in v if x not in meta[k]]
            else:
                meta[k] = v
        self.table = replace(t, frame=self.table.frame, meta=meta)
        if t.frame.height:
            self.chunks.append(t.frame)
            self.rows += t.frame.height
            if len(self.chunks) > 32:
                self.chunks = [concat(self.chunks)]  # Float32 values beside Float64 ones: Float64 (frame.NARROW)

    def frame(self) -> pl.DataFrame:
        if not self.chunks:
            return pl.DataFrame(schema=TABLE_SCHEMA)
        return self.chunks[0] if len(self.chunks) == 1 else concat(self.chunks, rechunk=False)
