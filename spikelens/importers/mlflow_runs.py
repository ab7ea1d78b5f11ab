"""What the MLflow database and server readers share: which runs a URI selects,
how stored values are restored, and one `Table` per run named as MLflow's UI names it.

MLflow's SQL store keeps a metric point as `(key, value, timestamp ms, step, is_nan)`:
NaN is stored as `value=0, is_nan=1` and ±inf as ±DBL_MAX (`sanitize_metric_value` in
`mlflow/store/tracking/sqlalchemy_store.py`); the server sends what the store gives back
(NaN restored, infinities still ±DBL_MAX). Both are restored here. A run resumed with
`start_run(run_id=...)` appends later points to the same run, so its points are put in
timestamp order and discovery finds the relaunch where the step goes back.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, urlencode, urlsplit

import polars as pl

from .. import diagnostics
from .base import TABLE_SCHEMA, Table

SQLITE_MAGIC = b"SQLite format 3\x00"
MLFLOW_TABLES = {"runs", "metrics", "experiments", "tags"}

DBL_MAX = sys.float_info.max
INF_FLOOR = 1.7976931348623e308
"""Values at least this large (in magnitude) were infinities before MLflow stored them."""

POINT_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String, "metric": pl.String, "value": pl.Float64,
    "timestamp": pl.Int64, "step": pl.Int64, "is_nan": pl.Boolean,
}


@dataclass
class Selection:
    """Which runs of a store to read: every active run, or those of some experiments
    (by name or id), or some run ids. Carried in the URI's query (`?experiment=X&run=ID`)
    so that it travels with the input through discovery."""

    experiments: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)

    def wants_experiment(self, exp_id: str, exp_name: str | None) -> bool:
        return not self.experiments or exp_id in self.experiments or (exp_name or "") in self.experiments

    def wants_run(self, run_id: str) -> bool:
        return not self.run_ids or run_id in self.run_ids


@dataclass
class RunInfo:
    """One MLflow run as the UI shows it."""

    run_id: str
    name: str | None
    experiment_id: str
    experiment: str | None = None
    start_time: int | None = None
    status: str | None = None
    parent_id: str | None = None
    params: dict[str, str] = field(default_factory=dict)


def split_selection(uri: str) -> tuple[str, Selection]:
    """`uri?experiment=a&run=b` → (uri without the query, Selection). The UI's own links
    (`.../#/experiments/3/runs/<id>`) select that experiment and run too."""
    parts = urlsplit(uri)
    query = parse_qs(parts.query)
    sel = Selection(experiments=query.get("experiment", []), run_ids=query.get("run", []))
    frag = [p for p in parts.fragment.split("/") if p]
    for kind, value in zip(frag, frag[1:]):
        if kind == "experiments" and value not in sel.experiments:
            sel.experiments.append(value)
        if kind == "runs" and value not in sel.run_ids:
            sel.run_ids.append(value)
    base = uri.split("#", 1)[0].split("?", 1)[0].rstrip("/") if "#" in uri or "?" in uri else uri
    return base, sel


def with_selection(uri: str, experiments: Iterable[str] = (), run_ids: Iterable[str] = ()) -> str:
    """Add `--experiment` / `--run-id` choices to an MLflow URI's query."""
    extra = [("experiment", e) for e in experiments] + [("run", r) for r in run_ids]
    if not extra:
        return uri
    head, hash_, fragment = uri.partition("#")  # textual: urlsplit would fold sqlite:////abs
    return f"{head}{'&' if '?' in head else '?'}{urlencode(extra)}{hash_}{fragment}"


def restore_values(points: pl.DataFrame) -> pl.DataFrame:
    """NaN from `is_nan`, ±inf from ±DBL_MAX."""
    v = pl.col("value")
    return points.with_columns(
        value=pl.when(pl.col("is_nan") | v.is_nan()).then(float("nan"))  # Polars sorts NaN above inf
        .when(v >= INF_FLOOR).then(float("inf"))
        .when(v <= -INF_FLOOR).then(float("-inf"))
        .otherwise(v)
    )


def display_names(runs: list[RunInfo]) -> dict[str, str]:
    """The UI's run names (`runs.name`, else the `mlflow.runName` tag, else the id);
    a name two runs share gets its experiment, then its id, so reports keep them apart."""
    base = {r.run_id: r.name or r.run_id for r in runs}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    out = {}
    for r in runs:
        name = base[r.run_id]
        if counts[name] > 1:
            name = f"{r.experiment or r.experiment_id}/{name} ({r.run_id[:8]})"
        out[r.run_id] = name
    return out


def tables_of(points: pl.DataFrame, runs: list[RunInfo], source_of: Callable[[RunInfo], str],
              fmt: str) -> list[Table]:
    """One table per run that has metric points, in logging (timestamp) order; each run's
    source is `source_of(run)` (the database and run id, or the run's page on the server)."""
    if points.height == 0:
        return []
    points = restore_values(points).sort(["run_id", "timestamp", "metric", "step"], maintain_order=True)
    names = display_names(runs)
    by_id = {r.run_id: r for r in runs}
    tables = []
    for (run_id,), part in points.partition_by("run_id", as_dict=True, maintain_order=True).items():
        info = by_id.get(run_id)
        if info is None:
            continue
        frame = part.select(
            pl.col("step"), (pl.col("timestamp").cast(pl.Float64) / 1000.0).alias("wall_time"),
            pl.col("metric"), pl.col("value"),
        ).select([pl.col(c).cast(t) for c, t in TABLE_SCHEMA.items()])
        meta: dict[str, Any] = {"mlflow.run_id": run_id, "mlflow.experiment_id": info.experiment_id}
        if info.experiment:
            meta["mlflow.experiment"] = info.experiment
        if info.status:
            meta["mlflow.status"] = info.status
        if info.parent_id:
            meta["mlflow.parent_run_id"] = info.parent_id
            parent = by_id.get(info.parent_id)
            meta["mlflow.parent_run"] = names.get(info.parent_id) if parent else info.parent_id
        meta.update({f"param.{k}": v for k, v in info.params.items() if len(v) <= 200})
        key = source_of(info)
        tables.append(Table(frame=frame, source=key, format=fmt, run_key=key, segment_key=key,
                            order=(info.start_time or 0,), run_name=names[run_id], meta=meta))
    return tables


def warn_skipped(source: str, deleted: int) -> None:
    if deleted:
        diagnostics.warn(f"{source}: {deleted} deleted MLflow run(s) skipped (the UI hides them too)")


def has_mlflow_tables(path: Path) -> bool:
    """A SQLite file with MLflow's tables (a tracking database, not any SQLite file)."""
    from .sqlite_files import table_names  # SQLite loads when a database is looked into, not with the CLI

    return MLFLOW_TABLES <= table_names(path)


def select_in(paths: Iterable[Any], experiments: Iterable[str], run_ids: Iterable[str]) -> list[Any]:
    """Apply `--experiment` / `--run-id` to the MLflow inputs among `paths` (a database file
    becomes its `sqlite:///` URI); a UsageError when there is none to apply them to."""
    import os

    from ..errors import UsageError
    from ..storage import is_mlflow_uri, unmangle

    experiments, run_ids = list(experiments), list(run_ids)
    if not experiments and not run_ids:
        return list(paths)
    out, applied = [], False
    for p in paths:
        text = unmangle(os.fspath(p))
        if not is_mlflow_uri(text) and os.path.isfile(text):
            from pathlib import Path

            from .base import read_head

            if read_head(Path(text)).startswith(SQLITE_MAGIC) and has_mlflow_tables(Path(text)):
                text = "sqlite:///" + os.path.abspath(text)
        if is_mlflow_uri(text):
            out.append(with_selection(text, experiments, run_ids))
            applied = True
        else:
            out.append(p)
    if not applied:
        raise UsageError("--experiment and --run-id select runs of an MLflow database or server; "
                         "no such input among the paths (mlflow.db, sqlite:///..., http://host:5000)")
    return out
