"""SwanLab run logs: `swanlog/run-<date>-<id>/run-<id>.swanlab`.

SwanLab (0.7+) writes every record of a run to one binary file with the same framing as
W&B's `.wandb` (LevelDB-log chunks, plain zlib CRC-32; `swanlab/sdk/internal/core_python/
store`), behind the header `":SWL"`, uint16 0xE1D6, uint8 version. Each record is a
`swanlab.record.v1.Record` protobuf: `num` (1), `timestamp` (2) and one of `start` (10:
project 1, name 4, id 10, resume 11, started_at 12), `finish` (11: state 1, error 2),
`column` (12), `scalar` (13: key 1, step 2, timestamp 4, value 5 {number 1: double}),
`media` (14), `log` (16). Only the fields above are read, by number (see `protowire`).
A resumed run (`resume="must"`) writes a new folder with the same run id: those files
are one run, one launch each, in start order.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from . import protowire as pw
from .base import TABLE_SCHEMA, Importer, Table
from .leveldb_log import read_records

HEADER = b":SWL" + struct.pack("<H", 0xE1D6)
"""The first six bytes; the seventh is the format version."""
START, FINISH, SCALAR = 10, 11, 13
_NAME = re.compile(r"^run-(?P<id>[^.]+)\.swanlab$")


def run_id_of(path: Path) -> str:
    m = _NAME.match(path.name)
    return m.group("id") if m else path.stem


class SwanLabImporter(Importer):
    """One `.swanlab` record file; files with one run id are one run."""

    name = "swanlab"
    looks_for = "SwanLab run logs (swanlog/run-*/run-<id>.swanlab)"

    def claims(self, path: Path, head: bytes) -> bool:
        return head[:len(HEADER)] == HEADER

    def group_key(self, path: Path) -> str:
        return f"swanlab:{path.parent.parent}:{run_id_of(path)}"

    def read(self, path: Path) -> list[Table]:
        try:
            buf = path.read_bytes()
        except OSError as exc:
            raise FormatError(path, f"cannot read ({exc.strerror or exc})") from None
        if buf[:len(HEADER)] != HEADER:
            raise FormatError(path, "not a SwanLab log (no :SWL header)")
        records = read_records(buf)
        steps: list[int] = []
        walls: list[float | None] = []
        keys: list[str] = []
        values: list[float] = []
        meta: dict[str, object] = {}
        name: str | None = None
        started = 0.0
        bad = 0
        for payload in records.payloads:
            try:
                rec = pw.as_dict(payload)
                if SCALAR in rec:
                    s = pw.as_dict(rec[SCALAR])
                    value = pw.double(pw.as_dict(s.get(5, b"")).get(1)) if isinstance(s.get(5), bytes) else None
                    key, step = pw.text(s.get(1)), pw.signed(s.get(2, 0))
                    if key is None or value is None:
                        continue
                    keys.append(key)
                    steps.append(step or 0)
                    values.append(value)
                    walls.append(pw.timestamp(s.get(4)) or pw.timestamp(rec.get(2)))
                elif START in rec:
                    st = pw.as_dict(rec[START])
                    name = pw.text(st.get(4)) or name
                    started = pw.timestamp(st.get(12)) or started
                    if pw.text(st.get(1)):
                        meta["swanlab.project"] = pw.text(st.get(1))
                    if st.get(11):
                        meta["swanlab.resumed"] = True
                elif FINISH in rec:
                    fin = pw.as_dict(rec[FINISH])
                    error = pw.text(fin.get(2))
                    if error:
                        meta["swanlab.error"] = error.strip().splitlines()[-1][:300]
            except pw.WireError:
                bad += 1
        problems = [records.damage.describe()] if records.damage.any else []
        if bad:
            problems.append(f"{bad} record(s) that are not SwanLab records skipped")
        if problems:
            diagnostics.warn(f"{path}: damaged SwanLab log: {'; '.join(problems)}; {len(values)} value(s) kept")
        if not values:
            diagnostics.warn(f"{path}: SwanLab run without scalar values")
            return []
        frame = pl.DataFrame({"step": steps, "wall_time": walls, "metric": keys, "value": values}, schema=TABLE_SCHEMA)
        return [Table(frame=frame, source=path, format=self.name,
                      run_key=self.group_key(path), segment_key=str(path), order=(started, path.name),
                      run_name=name, meta=meta)]
