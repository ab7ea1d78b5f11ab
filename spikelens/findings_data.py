"""Findings as data: a report written as one Parquet table a fleet is queried with.

One row per finding (`row = "finding"`: run, source, metric, kind, code, severity,
steps, magnitude, recovery, top cause, evidence as JSON) and one row per run
(`row = "run"`: formats, segments, steps, verdict), in one file or in a folder
partitioned by run (`run=NAME/part-0.parquet`, hive style, which Polars and DuckDB
read back with the run column). Run rows also keep what an incremental sweep needs
(the fingerprint of the run's files and its report before cross-run linking).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl

from .errors import InputError, UsageError
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
    """The group's reports (before cross-run linking) and warnings, pickled."""


def is_folder(path: Path) -> bool:
    """A folder dataset: an existing folder, or a path not ending in .parquet."""
    return path.is_dir() or path.suffix.lower() != ".parquet"


def rows(report: Report, states: dict[str, tuple[GroupState, list[RunReport]]] | None = None) -> pl.DataFrame:
    """The table: each run's row, then its findings' rows. `states` maps a group key to
    its state and the reports of its runs (the state is written on the first run's row)."""
    states = states or {}
    first_run_of = {id(runs[0]): st for st, runs in states.values() if runs}
    group_of = {id(r): st.key for st, runs in states.values() for r in runs}
    out: list[dict[str, Any]] = []
    for r in report.runs:
        st = first_run_of.get(id(r))
        out.append(_run_row(r, group_of.get(id(r)), st))
        out.extend(_finding_row(r, f) for f in r.findings)
    return pl.DataFrame(out, schema=SCHEMA, orient="row") if out else pl.DataFrame(schema=SCHEMA)


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
        "state": st.state if st else None,
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


def write(path: Path, table: pl.DataFrame, old_hashes: dict[str, str] | None = None) -> None:
    """Write the table to a file, or to a folder partitioned by run; in a folder, a run
    whose rows hash as they did (`old_hashes`, read from it before) is not written again,
    and runs no longer in the table lose their partition."""
    try:
        if is_folder(path):
            _write_folder(path, table, old_hashes or {})
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".findings-", suffix=".parquet", dir=path.parent)
            os.close(fd)
            table.write_parquet(tmp)
            os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write findings ({exc.strerror or exc})") from None


def _write_folder(root: Path, table: pl.DataFrame, old_hashes: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    wanted = {}
    for (run,), part in table.group_by("run", maintain_order=True):
        folder = root / f"run={quote(str(run), safe='')}"
        wanted[folder.name] = True
        digest = rows_hash(part)
        if old_hashes.get(run) == digest and (folder / PART_FILE).exists():
            continue
        folder.mkdir(exist_ok=True)
        part = part.with_columns(rows_hash=pl.when(pl.col("row") == "run").then(pl.lit(digest)))
        part.drop("run").write_parquet(folder / PART_FILE)
    for old in root.glob("run=*"):
        if old.name not in wanted and old.is_dir():
            shutil.rmtree(old)


def read(path: Path, columns: list[str] | None = None) -> pl.DataFrame:
    """The table as written (a folder's run column comes back from the partition names)."""
    try:
        if is_folder(path):
            parts = sorted(path.glob(f"run=*/{PART_FILE}"))
            if not parts:
                return pl.DataFrame(schema={k: SCHEMA[k] for k in columns or SCHEMA})
            lf = pl.scan_parquet(parts, hive_partitioning=True)
        else:
            lf = pl.scan_parquet(path)
        return lf.select(columns or list(SCHEMA)).collect()
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(path, f"cannot read the findings dataset ({str(exc).splitlines()[0]})") from None


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
