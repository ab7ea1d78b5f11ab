"""W&B offline runs: `wandb/offline-run-<date>-<id>/run-<id>.wandb` (also online runs'
local copies `run-<date>-<id>/run-<id>.wandb`).

wandb >= 0.21 ships no reader for these files, so the framing is read here
(`leveldb_log`) and each record is decoded with wandb's own protobuf,
`wandb.proto.wandb_internal_pb2.Record` (formats README §2c, §2e).

- **History records → metrics.** The key is `".".join(nested_key)` or the older
  `key`; values are JSON text with bare `NaN`/`Infinity`/`-Infinity` (cast to float in
  one Polars pass; strings and booleans are not metrics and are dropped, a whole dict
  gives its numeric leaves as `key.sub`). The step is the step metric the run defined for
  every metric (`define_metric("*", step_metric="train/global_step")`: `wandb_axis`), else the
  `_step` item or `step.num`;
  `_timestamp` is the wall time; `_runtime`, `_timestamp` and `_step` themselves are
  not metrics.
- **One run, several launches.** The folder is claimed as a whole (so `files/output.log`
  is not read again by the text importer) and is one segment. Folders with the same
  run id are launches of one run (`run_key` = `wandb:<id>`, named by the display name
  or the id), ordered by the run record's start time, then folder name. An offline
  resume (`resume="allow"`) restarts `_step` at 0; that is kept as logged (the
  stitcher re-bases it).
- **Meta.** Per launch (table): `wandb.run_id`, `wandb.display_name`, `wandb.project`,
  `resume` (the run record's flag) and `branch_point` (rewind / fork:
  `{run, step, metric, kind}`, which the stitcher uses); per run: `wandb.launches`
  (folder, start time, resume, rows, first/last step, `step_restarted`, branch point
  of every launch) and `wandb.step_restarts`.
- **A launch without history rows** (it crashed before its first `log`) is an empty
  Table beside the run's other launches (a segment with 0 points); a run with no
  history rows at all is a warning and no run.

Damage: a truncated tail (a killed run) stops reading quietly; a bad chunk skips to the
next 32 KiB block; both become one warning naming the file and the counts. A file
without the `:W&B` header is a FormatError.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import TABLE_SCHEMA, Importer, Table
from .leveldb_log import LogDamage, has_header, read_records
from .wandb_axis import defined_axis, on_axis

SPECIAL = ("_step", "_runtime", "_timestamp")
_FILE = re.compile(r"^run-(?P<id>[^/]+)\.wandb$")
_FOLDER_DATE = re.compile(r"-(\d{8})_(\d{6})-")


def record_class():
    """`wandb_internal_pb2.Record`, imported without running `wandb/__init__`.

    Importing `wandb.proto` normally imports the whole SDK first (about 1.5 s); the
    generated modules need only `google.protobuf`. When wandb is not imported yet, a
    bare package stands in for `wandb` during the import and everything it added is
    removed again, so a later `import wandb` loads the real package (the protobuf
    classes are shared through the default descriptor pool).
    """
    if "wandb" in sys.modules:
        from wandb.proto import wandb_internal_pb2

        return wandb_internal_pb2.Record
    import importlib.util
    import types

    spec = importlib.util.find_spec("wandb")
    if spec is None or not spec.submodule_search_locations:
        raise FormatError(None, "reading .wandb files needs the wandb package (pip install wandb)")
    before = set(sys.modules)
    stub = types.ModuleType("wandb")
    stub.__path__ = list(spec.submodule_search_locations)
    sys.modules["wandb"] = stub
    try:
        from wandb.proto import wandb_internal_pb2

        return wandb_internal_pb2.Record
    except ImportError as exc:  # e.g. a protobuf major version this wandb has no code for
        raise FormatError(None, f"cannot decode .wandb records with the installed wandb/protobuf ({exc})") from None
    finally:
        for name in [m for m in sys.modules if m not in before and (m == "wandb" or m.startswith("wandb."))]:
            del sys.modules[name]


@dataclass
class WandbFile:
    """What one `.wandb` file holds for spikelens."""

    frame: pl.DataFrame
    run_id: str | None = None
    display_name: str | None = None
    project: str | None = None
    start_time: float | None = None
    resume: bool = False
    branch_point: dict[str, Any] | None = None
    rows: int = 0
    exit_code: int | None = None
    """The run's exit record's code (None: no exit record, a process killed before writing it)."""
    damage: LogDamage = field(default_factory=LogDamage)
    undecodable: int = 0
    step_metrics: dict[str, str] = field(default_factory=dict)
    """The run's `define_metric` step metrics: a metric's name or glob (`*`) -> the metric it is plotted on."""


def wandb_files(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder) if e.is_file() and _FILE.match(e.name))
    except OSError:
        return []


def run_id_from_name(path: Path) -> str:
    m = _FILE.match(path.name)
    return m.group("id") if m else path.stem


def _flatten(key: str, text: str, keys: list[str], texts: list[str]) -> None:
    """A dict value (older clients logged nested dicts whole): numeric leaves become
    `key.sub` metrics; media and histograms (`_type`) are skipped."""
    try:
        obj = json.loads(text)
    except ValueError:
        return
    stack = [(key, obj)]
    while stack:
        k, v = stack.pop()
        if isinstance(v, dict):
            if "_type" not in v:
                stack.extend((f"{k}.{sub}", x) for sub, x in reversed(list(v.items())))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            keys.append(k)
            texts.append(repr(float(v)))


def _history_values(history) -> tuple[list[str], list[str]]:
    keys, texts = [], []
    for item in history.item:
        nested = item.nested_key
        key = ".".join(nested) if nested else item.key
        text = item.value_json
        if not text:
            kind = item.WhichOneof("value")
            if kind == "number":
                text = repr(item.number)
            elif kind == "integer":
                text = str(item.integer)
            elif kind == "json":
                text = item.json
            else:
                continue
        if text[:1] == "{":
            _flatten(key, text, keys, texts)
            continue
        keys.append(key)
        texts.append(text)
    return keys, texts


def read_wandb_file(path: Path) -> WandbFile:
    """History points and run facts of one `.wandb` file (damage counted, not raised)."""
    try:
        with open(path, "rb") as fh:
            buf = fh.read()
    except OSError as exc:
        raise FormatError(path, f"cannot read ({exc.strerror or exc})") from None
    if not has_header(buf):
        raise FormatError(path, "not a W&B .wandb file (no ':W&B' header)")
    log = read_records(buf)
    out = WandbFile(frame=pl.DataFrame(schema=TABLE_SCHEMA), damage=log.damage)
    rows = HistoryRows()
    rows.decode(log.payloads, out)
    out.undecodable += rows.undecodable
    out.rows = len(rows.row_step)
    if rows.keys:
        out.frame = rows.frame(defined_axis(out.step_metrics))
    if out.start_time is None:
        out.start_time = rows.first_wall()
    return out


@dataclass
class HistoryRows:
    """History values of `.wandb` records in the making: one decoding loop for the whole-file
    reader and the live tail, which feeds it the records a poll added (`last_step` carries
    the implicit step across polls)."""

    row_of: list[int] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    row_step: list[int] = field(default_factory=list)
    row_wall: list[float | None] = field(default_factory=list)
    last_step: int = -1
    undecodable: int = 0

    def decode(self, payloads: list[bytes], out: WandbFile) -> None:
        """Add the history rows of `payloads`; the first run record fills `out`'s facts."""
        from google.protobuf.message import DecodeError

        rec = record_class()()
        parse = rec.ParseFromString
        which = rec.WhichOneof
        for payload in payloads:
            try:
                parse(payload)
            except DecodeError:
                self.undecodable += 1
                continue
            kind = which("record_type")
            if kind == "history":
                self._add(rec.history)
            elif kind == "run" and out.run_id is None:
                _run_facts(rec.run, out)
            elif kind == "exit":
                out.exit_code = int(rec.exit.exit_code)
            elif kind == "metric" and rec.metric.step_metric:
                out.step_metrics[rec.metric.glob_name or rec.metric.name] = rec.metric.step_metric

    def _add(self, history: Any) -> None:
        k, t = _history_values(history)
        special = {kk: tt for kk, tt in zip(k, t) if kk in SPECIAL}
        step = _int(special.get("_step"))
        if step is None:
            step = history.step.num if history.HasField("step") else self.last_step + 1
        self.last_step = step
        row = len(self.row_step)
        self.row_step.append(step)
        self.row_wall.append(_float(special.get("_timestamp")))
        for kk, tt in zip(k, t):
            if kk not in SPECIAL:
                self.row_of.append(row)
                self.keys.append(kk)
                self.texts.append(tt)

    def first_wall(self) -> float | None:
        walls = [w for w in self.row_wall if w is not None]
        return min(walls) if walls else None

    def frame(self, axis: str | None = None) -> pl.DataFrame:
        """The rows as a long table, on `axis` (a defined step metric) where it holds the steps."""
        if not self.keys:
            return pl.DataFrame(schema=TABLE_SCHEMA)
        return history_frame(self.row_of, self.keys, self.texts, self.row_step, self.row_wall, axis)


def history_frame(row_of: list[int], keys: list[str], texts: list[str], row_step: list[int],
                  row_wall: list[float | None], axis: str | None = None) -> pl.DataFrame:
    """Long table of the numeric history values (one Polars cast for all of them), stepped by `_step`
    or by the step metric `axis` the run defined (which is then the axis, no metric: `wandb_axis`)."""
    items = (
        pl.DataFrame({"row": row_of, "metric": keys, "text": texts},
                     schema={"row": pl.UInt32, "metric": pl.String, "text": pl.String})
        .with_columns(value=pl.col("text").str.strip_chars().cast(pl.Float64, strict=False))
        .filter(pl.col("value").is_not_null())
    )
    row = items.get_column("row")
    return on_axis(pl.DataFrame({
        "step": pl.Series(row_step, dtype=pl.Int64).gather(row),
        "wall_time": pl.Series(row_wall, dtype=pl.Float64).gather(row),
        "metric": items.get_column("metric"),
        "value": items.get_column("value"),
    }, schema=TABLE_SCHEMA), axis)


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(float(text))
    except (ValueError, OverflowError):
        return None


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _run_facts(run, out: WandbFile) -> None:
    out.run_id = run.run_id or None
    out.display_name = run.display_name or None
    out.project = run.project or None
    if run.HasField("start_time"):
        out.start_time = run.start_time.seconds + run.start_time.nanos / 1e9
    out.resume = bool(run.resume or run.resumed)
    if run.HasField("branch_point") and run.branch_point.run:
        bp = run.branch_point
        out.branch_point = {"run": bp.run, "step": bp.value, "metric": bp.metric or "_step",
                            "kind": "rewind" if bp.run == run.run_id else "fork"}


class WandbOfflineRunImporter(Importer):
    """A W&B run folder holding `run-<id>.wandb` (offline or synced)."""

    name = "wandb_offline"
    looks_for = "W&B offline runs (wandb/offline-run-*/run-*.wandb)"
    claims_dirs = True

    def claims(self, path: Path, head: bytes) -> bool:
        return bool(wandb_files(path))

    def _files(self, path: Path) -> list[Path]:
        return wandb_files(path) if path.is_dir() else [path]

    def group_key(self, path: Path) -> str:
        files = self._files(path)
        return "wandb:" + (run_id_from_name(files[0]) if files else path.name)

    def read(self, path: Path) -> list[Table]:
        return self.read_many([path])

    def read_many(self, paths: list[Path]) -> list[Table]:
        tables: list[Table] = []
        launches: list[dict[str, Any]] = []
        errors: list[FormatError] = []
        ended: dict[int, tuple[str, int | None] | None] = {}
        for unit in paths:
            files = self._files(unit)
            for f in files:
                try:
                    wf = read_wandb_file(f)
                except FormatError as exc:
                    errors.append(exc)
                    continue
                folder = f.parent
                self._warn(f, wf)
                run_id = wf.run_id or run_id_from_name(f)
                segment = str(folder) if len(files) == 1 else str(f)
                launch = {"folder": folder.name, "run_id": run_id, "start_time": wf.start_time,
                          "resume": wf.resume, "rows": wf.rows,
                          "first_step": wf.frame.get_column("step").min() if wf.frame.height else None,
                          "last_step": wf.frame.get_column("step").max() if wf.frame.height else None}
                if wf.branch_point:
                    launch["branch_point"] = wf.branch_point
                launches.append(launch)
                if wf.frame.height == 0:  # a launch that logged nothing: kept if its run has data
                    tables.append(Table(frame=pl.DataFrame(schema=TABLE_SCHEMA), source=f, format=self.name,
                                        run_key=f"wandb:{run_id}", segment_key=segment,
                                        order=(wf.start_time or _folder_time(folder), folder.name),
                                        run_name=wf.display_name or run_id,
                                        start_time=wf.start_time or _folder_time(folder) or None))
                    continue
                meta: dict[str, Any] = {"wandb.run_id": run_id}
                for key in ("display_name", "project"):
                    if getattr(wf, key):
                        meta[f"wandb.{key}"] = getattr(wf, key)
                if wf.branch_point:  # the stitcher lets this launch take over after branch_point["step"]
                    meta["branch_point"] = wf.branch_point
                if wf.resume:
                    meta["resume"] = True
                tables.append(Table(frame=wf.frame, source=f, format=self.name, run_key=f"wandb:{run_id}",
                                    segment_key=segment, order=(wf.start_time or _folder_time(folder), folder.name),
                                    run_name=wf.display_name or run_id, meta=meta, start_time=wf.start_time))
                ended[id(tables[-1])] = _exit_error(folder, wf.exit_code)
        if errors and not launches:
            raise errors[0]
        for exc in errors:
            diagnostics.warn(f"{exc} (skipped)")
        with_data = {t.run_key for t in tables if t.frame.height}
        for t in tables:
            if t.run_key not in with_data:
                diagnostics.warn(f"{t.source}: W&B run file without history values")
        tables = [t for t in tables if t.run_key in with_data]
        _note_launches(tables, launches)
        _note_exit(tables, ended)
        return tables

    @staticmethod
    def _warn(path: Path, wf: WandbFile) -> None:
        problems = [wf.damage.describe()] if wf.damage.any else []
        if wf.undecodable:
            problems.append(f"{wf.undecodable} record(s) that are not W&B records skipped")
        if problems:
            diagnostics.warn(f"{path}: damaged .wandb file: {'; '.join(problems)}; {wf.rows} history row(s) kept")


class WandbOfflineFileImporter(WandbOfflineRunImporter):
    """A `run-<id>.wandb` file named on its own (in a folder walk the folder importer
    claims the whole run folder first)."""

    claims_dirs = False

    def claims(self, path: Path, head: bytes) -> bool:
        # by name: a `.wandb` file without the header is then a FormatError, not "nothing found"
        return path.suffix == ".wandb" and (bool(_FILE.match(path.name)) or has_header(head))


def _folder_time(folder: Path) -> float:
    """Start time from `offline-run-YYYYMMDD_HHMMSS-<id>` when the file has none."""
    m = _FOLDER_DATE.search(folder.name)
    if not m:
        return 0.0
    from datetime import datetime, timezone

    try:
        return datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return 0.0


def _note_launches(tables: list[Table], launches: list[dict[str, Any]]) -> None:
    """Give every table of a run the same launch list (ordered by start time), and count
    the launches whose `_step` went back to or below the previous launch's last step."""
    by_run: dict[str, list[dict[str, Any]]] = {}
    for launch in launches:
        by_run.setdefault(launch["run_id"], []).append(launch)
    for run_id, items in by_run.items():
        items.sort(key=lambda x: (x["start_time"] or 0.0, x["folder"]))
        restarts = 0
        prev_last = None
        for launch in items:
            first = launch["first_step"]
            if prev_last is not None and first is not None and first <= prev_last and not launch.get("branch_point"):
                launch["step_restarted"] = True
                restarts += 1
            if launch["last_step"] is not None:
                prev_last = launch["last_step"]
        for t in tables:
            if t.run_key == f"wandb:{run_id}":
                t.meta["wandb.launches"] = items
                t.meta["wandb.step_restarts"] = restarts


def _exit_error(folder: Path, exit_code: int | None) -> tuple[str, int | None] | None:
    """How a launch ended, when it failed: the error its console log (`console_log`) ends
    in, unless its exit record says it exited cleanly (code 0, whatever the console printed).
    A non-zero code alone says too little (a notebook kernel's or a sweep agent's exit reads
    255 on runs that trained to the end), so it is no crash without the console's error."""
    if exit_code == 0:
        return None
    from .textsignals import tail_error

    console = console_log(folder)
    return tail_error(console) if console is not None else None


def console_log(folder: Path) -> Path | None:
    """The run's console log: `files/output.log` as the client writes it, or `output.log` beside the
    `.wandb` file in a copy that flattened the folder (a repository that kept a run's files in one
    place); None when there is none."""
    for where in (folder / "files" / "output.log", folder / "output.log"):
        if where.is_file():
            return where
    return None


def _note_exit(tables: list[Table], ended: dict[int, tuple[str, int | None] | None]) -> None:
    """The error a run ended in (`plan.error`, see `detect.ended`) goes on its last launch
    only: an earlier launch's failure was followed by another launch."""
    last: dict[str, Table] = {}
    for t in tables:
        if t.run_key not in last or (t.order or ()) >= (last[t.run_key].order or ()):
            last[t.run_key] = t
    for t in last.values():
        said = ended.get(id(t))
        if said is not None:
            t.meta["plan.error"] = said[0]
            if said[1] is not None:
                t.meta["plan.error_line_no"] = said[1]
