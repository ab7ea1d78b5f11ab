"""TensorBoard event files (`events.out.tfevents.<unix>.<host>[.<pid>.<n>][.v2]`).

What is one run and one launch:

- All event files in one folder are one run (`run_key` = the folder). Files whose
  names were flattened with a prefix (`tb_logs__exp__events.out.tfevents...`, as
  collections of logs do) are keyed by folder + prefix, so two flattened runs in one
  folder stay two runs.
- Each file is one launch (segment), ordered by the unix time in its name, then the
  name. A restart writes a new file; TensorBoard reads them in name order too.
- `add_scalars("loss", {"train": ..})` writes child folders `loss_train/`, `loss_val/`
  from the same process. A child folder whose files share host and pid with a file
  of its parent folder belongs to the parent's run and to that file's segment; its
  tag `loss` becomes `loss/train` (the key is the folder name minus the main tag).
- Keras' callback writes `<run>/train/` and `<run>/validation/` with the same tags: both
  folders are one run (`<run>`), tags become `train/epoch_loss`, `validation/epoch_loss`,
  and the two files one process wrote (same host and pid) are one launch.
- SessionLog START steps (`SummaryWriter(purge_step=N)`) go to the file's
  `meta["purge_steps"]` for the stitcher; nothing is dropped here.

Reading is done by `tfrecord.RecordStream` (framing, CRC-32C, damage recovery, one
block of the file in memory at a time) and `tb_events.EventDecoder` (bulk NumPy
decoding of the common scalar layout, upb for the rest). Damage becomes one warning per file naming the file and the counts; an
empty or header-only file gives no points and no error (beside files with data it is a
launch that logged nothing: an empty Table, with the start time of its name); a file
that is not TFRecord at all is a FormatError.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import Importer, Table
from .tb_events import EventDecoder, EventScalars
from .tfrecord import RecordStream, first_record_ok

MARKER = "events.out.tfevents."
_NAME = re.compile(r"^(?P<prefix>.*?)events\.out\.tfevents\.(?P<ts>\d+)(?:\.(?P<rest>.*))?$")
_HOST_PID = re.compile(r"^(?P<host>.+)\.(?P<pid>\d+)\.(?P<n>\d+)(?P<suffix>\.[A-Za-z][^.]*)?$")


@dataclass(frozen=True)
class EventFileName:
    """The parts of an event file name that place it in a run."""

    prefix: str
    """Text before `events.out.tfevents` in flattened collections ('' normally)."""
    timestamp: int
    host: str
    pid: str | None
    """None for writers that leave it out (tensorboardX)."""

    @property
    def writer(self) -> tuple[str, str | None]:
        return self.host, self.pid


def parse_name(name: str) -> EventFileName | None:
    """Split `[prefix]events.out.tfevents.<unix>.<host>[.<pid>.<n>][.suffix]`; hosts may hold dots."""
    m = _NAME.match(name)
    if not m:
        return None
    rest = m.group("rest") or ""
    hp = _HOST_PID.match(rest)
    host, pid = (hp.group("host"), hp.group("pid")) if hp else (rest, None)
    return EventFileName(prefix=m.group("prefix").rstrip("_.-"), timestamp=int(m.group("ts")), host=host, pid=pid)


def _event_files(folder: Path) -> tuple[Path, ...]:
    """Event files directly in a folder (asked once per file during discovery, so cached
    per folder and modification time)."""
    try:
        mtime = folder.stat().st_mtime_ns
    except OSError:
        return ()
    return _list_event_files(str(folder), mtime)


@lru_cache(maxsize=512)
def _list_event_files(folder: str, mtime_ns: int) -> tuple[Path, ...]:
    try:
        return tuple(sorted(Path(e.path) for e in os.scandir(folder) if e.is_file() and "tfevents" in e.name))
    except OSError:
        return ()


def _same_writer(child: EventFileName, parent: EventFileName, child_folder: str) -> bool:
    if child.host != parent.host:
        return False
    if child.pid is not None and parent.pid is not None:
        return child.pid == parent.pid
    return "_" in child_folder  # no pid in the names: trust add_scalars' `<tag>_<key>` folder naming


def parent_file(path: Path) -> Path | None:
    """The file of the parent folder that wrote this `add_scalars` child file, if any:
    same host and pid, the latest one started no later than the child."""
    me = parse_name(path.name)
    if me is None or me.prefix:
        return None
    candidates = []
    for p in _event_files(path.parent.parent):
        other = parse_name(p.name)
        if other is not None and not other.prefix and _same_writer(me, other, path.parent.name):
            candidates.append((other.timestamp, p.name, p))
    if not candidates:
        return None
    candidates.sort()
    before = [c for c in candidates if c[0] <= me.timestamp]
    return (before[-1] if before else candidates[0])[2]


SPLIT_FOLDERS = ("train", "validation")
"""Keras' TensorBoard callback writes one run's training and validation scalars (with the
same tags, `epoch_loss`...) to these two sibling folders of the run's log folder."""


def keras_split(path: Path) -> bool:
    """Is this file in a `train/` or `validation/` folder whose sibling holds event files?"""
    folder = path.parent
    if folder.name not in SPLIT_FOLDERS:
        return False
    sibling = folder.parent / SPLIT_FOLDERS[1 - SPLIT_FOLDERS.index(folder.name)]
    return bool(_event_files(sibling))


def _split_owner(path: Path) -> Path:
    """The `train/` file the same process wrote beside this `validation/` file (one launch
    of the run), else the file itself."""
    me = parse_name(path.name)
    if path.parent.name == SPLIT_FOLDERS[0] or me is None or me.pid is None:
        return path
    for p in _event_files(path.parent.parent / SPLIT_FOLDERS[0]):
        other = parse_name(p.name)
        if other is not None and other.prefix == me.prefix and other.writer == me.writer:
            return p
    return path


def owner_file(path: Path) -> Path | None:
    """The file whose launch (segment) this file belongs to when that is another file: an
    add_scalars child's parent file, or the `train/` file of a Keras `validation/` file."""
    if keras_split(path):
        owner = _split_owner(path)
        return owner if owner != path else None
    return parent_file(path)


def run_key_of(path: Path) -> str:
    """The run a file belongs to: its folder (the parent folder for an add_scalars child
    or a Keras `train/`/`validation/` folder), plus the flattened-name prefix when there
    is one."""
    name = parse_name(path.name)
    folder = path.parent
    if keras_split(path) or parent_file(path) is not None:
        folder = folder.parent
    if name is not None and name.prefix:
        return str(folder / name.prefix)
    return str(folder)


def child_metric(tag: str, folder_name: str) -> str:
    """`loss` in folder `loss_train` → `loss/train` (add_scalars: folder = main tag with
    '/' → '_', then '_', then the key)."""
    lead = tag.replace("/", "_") + "_"
    key = folder_name[len(lead):] if folder_name.startswith(lead) and len(folder_name) > len(lead) else folder_name
    return f"{tag}/{key}"


def _order(path: Path) -> tuple:
    name = parse_name(path.name)
    return (name.timestamp if name else 0, path.name)


class TensorBoardImporter(Importer):
    """TensorBoard / tensorboardX / PyTorch / TF event files."""

    name = "tensorboard"
    looks_for = "events.out.tfevents.* (TensorBoard event files)"

    def __init__(self, verify: bool | None = None, bulk: bool = True):
        self.verify = verify
        """CRC checks: None follows `tfrecord.verify_default()` (SPIKELENS_NO_VERIFY)."""
        self.bulk = bulk

    def claims(self, path: Path, head: bytes) -> bool:
        if "tfevents" in path.name:
            return True
        # renamed files: a valid first record that is the event file version header
        return first_record_ok(head) and b"brain.Event" in head[:64]

    def group_key(self, path: Path) -> str:
        return "tensorboard:" + run_key_of(path)

    def read(self, path: Path) -> list[Table]:
        return self.read_many([path])

    def read_many(self, paths: list[Path]) -> list[Table]:
        plugins: dict[str, str] = {}
        tables: list[Table] = []
        errors: list[FormatError] = []
        for path in sorted(paths, key=lambda p: (_order(owner_file(p) or p), str(p))):
            try:
                scalars = self.read_file(path, plugins)
            except FormatError as exc:
                errors.append(exc)
                continue
            tables.append(self._table(path, scalars))
        if errors and len(errors) == len(paths):
            raise errors[0]
        for exc in errors:
            diagnostics.warn(f"{exc} (skipped)")
        if not any(t.frame.height for t in tables):
            if tables and not errors and len(paths) > 1:
                diagnostics.warn(f"{run_key_of(paths[0])}: {len(paths)} event files, none holds a scalar value")
            return []  # nothing logged anywhere: no run, as before
        return tables  # header-only files of a run with data are its launches that logged nothing

    def read_file(self, path: Path, plugins: dict[str, str] | None = None) -> EventScalars:
        """Every scalar point of one event file (damage warned about, not raised). The file
        is read once, a block at a time: memory holds one block, not the file."""
        decoder = EventDecoder(plugins, bulk=self.bulk)
        try:
            with open(path, "rb") as fh:
                decoder.size_hint = os.fstat(fh.fileno()).st_size  # sizes the decoder's columns
                records = RecordStream(fh, size=decoder.size_hint, verify=self.verify)
                for block in records:
                    decoder.add(block.buf, block.starts, block.lengths)
        except OSError as exc:
            raise FormatError(path, f"cannot read ({exc.strerror or exc})") from None
        if not records.looks_like_tfrecord:
            raise FormatError(path, "not a TensorBoard event file (no valid TFRecord record found)")
        scalars = decoder.result()
        if records.records and scalars.undecodable == records.records:
            raise FormatError(path, "TFRecord file whose records are not TensorBoard events")
        problems = [records.damage.describe()] if records.damage.any else []
        if scalars.undecodable:
            problems.append(f"{scalars.undecodable} record(s) that are not events skipped")
        if problems:
            diagnostics.warn(f"{path}: damaged event file: {'; '.join(problems)}; "
                             f"{scalars.frame.height} value(s) from {records.records} good record(s) kept")
        return scalars

    def _table(self, path: Path, scalars: EventScalars) -> Table:
        frame = scalars.frame
        owner = owner_file(path)
        split = keras_split(path)
        if (split or owner is not None) and frame.height:
            tags = frame.get_column("metric").unique().to_list()
            names = ({t: f"{path.parent.name}/{t}" for t in tags} if split
                     else {t: child_metric(t, path.parent.name) for t in tags})
            frame = frame.with_columns(pl.col("metric").replace_strict(names, return_dtype=pl.Categorical))
        meta = {"purge_steps": list(scalars.purge_steps)} if scalars.purge_steps and frame.height else {}
        if not split and owner is None and (path.parent / "args.yaml").exists():  # an Ultralytics run
            from .ultralytics import tensorboard_plan  # the CSV readers it needs load only here

            meta.update(tensorboard_plan(path.parent, frame))
        name = parse_name((owner or path).name)
        return Table(frame=frame, source=path, format=self.name, run_key=run_key_of(path),
                     segment_key=str(owner or path), order=_order(owner or path), meta=meta,
                     start_time=float(name.timestamp) if name else None)
