"""MLflow's SQL tracking store, read with SQL: `mlflow.db` (SQLite, MLflow's default since
3.7), `sqlite:///path/mlflow.db`, or `postgresql://...` (with psycopg or psycopg2 installed).

mlflow is not needed: four tables hold what a post-mortem reads (`runs`, `experiments`,
`tags`, `metrics`; schema in `mlflow/store/tracking/dbmodels/models.py`). Reading them
with one query each is faster than MLflow's client, which asks for one metric history at a
time (benchmarks/bench_mlflow.py). The database is opened read-only.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import polars as pl

from ..errors import FormatError, InputError
from ..storage import is_sql_uri, pointed_uri
from .base import Importer, Table
from .sqlite_files import connect_read_only
from .mlflow_runs import (POINT_SCHEMA, SQLITE_MAGIC, RunInfo, Selection, has_mlflow_tables, split_selection,
                          tables_of, warn_skipped)



def sqlite_path(uri: str) -> Path:
    """`sqlite:///rel.db` and `sqlite:////abs.db` (SQLAlchemy's spelling) → the file."""
    rest = uri.split("://", 1)[1]
    return Path(unquote(rest[1:] if rest.startswith("/") else rest))


def connect(target: str | Path) -> tuple[Any, str]:
    """A DB-API connection and its placeholder; SQLite files open read-only."""
    if isinstance(target, Path) or target.lower().startswith("sqlite"):
        path = target if isinstance(target, Path) else sqlite_path(target)
        if not path.is_file():
            raise InputError(path, "no such MLflow database file")
        try:
            return connect_read_only(path), "?"
        except sqlite3.Error as exc:
            raise FormatError(path, f"cannot open the SQLite database ({exc})") from exc
    parts = urlsplit(target)
    dsn = target.replace(parts.scheme + "://", "postgresql://", 1)
    for module in ("psycopg", "psycopg2"):
        try:
            driver = __import__(module)
        except ImportError:
            continue
        try:
            return driver.connect(dsn), "%s"
        except Exception as exc:  # noqa: BLE001 - the driver's own error class
            raise InputError(_safe(target), f"cannot connect ({type(exc).__name__})") from exc
    raise InputError(_safe(target), "reading a PostgreSQL MLflow store needs psycopg: pip install 'psycopg[binary]'")


def _safe(uri: str) -> str:
    """The URI without its password, for messages."""
    parts = urlsplit(uri)
    if parts.password:
        return uri.replace(f":{parts.password}@", ":***@", 1)
    return uri


def read_store(con: Any, mark: str, sel: Selection, source: str) -> list[Table]:
    cur = con.cursor()
    try:
        cur.execute("SELECT r.run_uuid, r.name, r.experiment_id, e.name, r.start_time, r.status, "
                    "r.lifecycle_stage, e.lifecycle_stage FROM runs r "
                    "LEFT JOIN experiments e ON e.experiment_id = r.experiment_id")
        rows = cur.fetchall()
    except Exception as exc:  # noqa: BLE001 - sqlite3 / psycopg errors
        raise FormatError(source, f"not an MLflow tracking database ({str(exc).splitlines()[0]})") from exc
    known = {str(r[2]) for r in rows} | {r[3] for r in rows if r[3]}
    unknown = [e for e in sel.experiments if e not in known]
    if unknown:
        raise InputError(source, f"no experiment named {', '.join(unknown)} with runs in this MLflow database "
                                 f"(it has: {', '.join(sorted({str(r[3]) for r in rows}))})")
    runs: list[RunInfo] = []
    deleted = 0
    for run_id, name, exp_id, exp_name, start, status, stage, exp_stage in rows:
        if not sel.wants_run(run_id) or not sel.wants_experiment(str(exp_id), exp_name):
            continue
        if "deleted" in (stage, exp_stage):
            deleted += 1
            continue
        runs.append(RunInfo(run_id=run_id, name=name, experiment_id=str(exp_id), experiment=exp_name,
                            start_time=start, status=status))
    warn_skipped(source, deleted)
    if not runs:
        return []
    by_id = {r.run_id: r for r in runs}
    cur.execute("SELECT run_uuid, key, value FROM tags WHERE key IN ('mlflow.runName', 'mlflow.parentRunId')")
    for run_id, key, value in cur.fetchall():
        info = by_id.get(run_id)
        if info is None:
            continue
        if key == "mlflow.parentRunId":
            info.parent_id = value
        elif not info.name:
            info.name = value
    cur.execute("SELECT run_uuid, key, value FROM params")
    for run_id, key, value in cur.fetchall():
        if run_id in by_id and value is not None:
            by_id[run_id].params[key] = value
    query = "SELECT run_uuid, key, value, timestamp, step, is_nan FROM metrics"
    args: list[str] = []
    if sel.run_ids or sel.experiments:
        args = list(by_id)
        query += f" WHERE run_uuid IN ({', '.join([mark] * len(args))})"
    cur.execute(query, args)
    schema = {**POINT_SCHEMA, "is_nan": pl.Int64}  # 0/1 in SQLite, a boolean in PostgreSQL
    points = pl.DataFrame(cur.fetchall(), schema=schema, orient="row", strict=False)
    points = points.with_columns(pl.col("is_nan").cast(pl.Boolean))
    return tables_of(points, runs, lambda r: f"{source}#{r.run_id}", "mlflow-db")


class MlflowDatabaseImporter(Importer):
    """An MLflow tracking database: a SQLite file found on disk, or a database URI."""

    name = "mlflow-db"
    looks_for = "MLflow tracking databases (mlflow.db, sqlite:///..., postgresql://...)"

    def claims(self, path: Path, head: bytes) -> bool:
        uri = pointed_uri(path, head)
        if uri is not None:
            return is_sql_uri(uri)
        return head.startswith(SQLITE_MAGIC) and has_mlflow_tables(path)

    def read(self, path: Path | str) -> list[Table]:
        target: Path | str
        path = pointed_uri(Path(path)) or path
        if isinstance(path, str) and is_sql_uri(path):
            uri, sel = split_selection(path)
            target = sqlite_path(uri) if uri.lower().startswith("sqlite") else uri
        else:
            target, sel = Path(path), Selection()
        source = str(target) if isinstance(target, Path) else _safe(target)
        con, mark = connect(target)
        try:
            return read_store(con, mark, sel, source)
        finally:
            con.close()
