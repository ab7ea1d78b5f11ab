"""MLflow file store runs: `mlruns/<experiment id>/<run id>/{meta.yaml, metrics/, params/}`.

A run folder (it has `meta.yaml` and `metrics/`) is one run. Every file under
`metrics/`, recursively, is one metric whose key is its relative path (`/` in a key
makes subfolders: `metrics/train/loss`; spaces stay: `metrics/eval acc`). Each line is
`<timestamp ms> <value> <step>`, or five fields with `<dataset name> <dataset digest>`
appended (the step is still the third field; MLflow's own reader says 0 there). Lines
of all metrics are put in timestamp order, which is the order they were logged, so a
resume that restarted the step (`start_run(run_id=...)`) becomes a second segment.
The display name is `run_name` from `meta.yaml` (or the `mlflow.runName` tag).

mlflow is not needed: the layout is plain text (see `mlflow/store/tracking/file_store.py`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from .. import diagnostics
from ..errors import InputError
from .base import TABLE_SCHEMA, Importer, Table, to_float


def read_meta_yaml(path: Path) -> dict[str, str]:
    """Top-level `key: value` scalars of an MLflow `meta.yaml` (flat; no YAML library needed)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for ln in text.splitlines():
        if not ln or ln[0] in " \t#-" or ":" not in ln:
            continue
        key, _, val = ln.partition(":")
        val = val.strip()
        if val in ("", "null", "~", "[]", "{}"):
            continue
        out[key.strip()] = val.strip("'\"")
    return out


def _small_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def metric_lines(run: Path) -> pl.DataFrame:
    """Every line of every metric file: `metric, file_no, line_no, text`."""
    root = run / "metrics"
    keys: list[str] = []
    texts: list[str] = []
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            raw = f.read_bytes()
        except OSError as exc:
            diagnostics.warn(f"{f}: cannot read ({exc.strerror or exc}); metric skipped")
            continue
        keys.append(f.relative_to(root).as_posix())
        texts.append(raw.decode("utf-8", errors="replace"))
    return (
        pl.DataFrame({"metric": keys, "text": texts}, schema={"metric": pl.String, "text": pl.String})
        .with_row_index("file_no")
        .with_columns(pl.col("text").str.replace_all("\r", "").str.split("\n"))
        .explode("text")
        .with_columns(line_no=pl.int_range(pl.len()).over("file_no"))
        .filter(pl.col("text").str.strip_chars().str.len_chars() > 0)
    )


def parse_metric_lines(run: Path, lines: pl.DataFrame) -> pl.DataFrame:
    """`ts value step [dataset_name dataset_digest]` lines → long table in logging order."""
    fields = pl.col("text").str.strip_chars().str.split(" ")
    parsed = lines.with_columns(n=fields.list.len(), f=fields).with_columns(
        # a file of `ts value` lines only (MLflow < 0.8, no steps): the line order is the step
        stepless=(pl.col("n") == 2).all().over("file_no"),
    ).with_columns(
        ts=pl.col("f").list.get(0, null_on_oob=True).cast(pl.Int64, strict=False),
        value=to_float(pl.col("f").list.get(1, null_on_oob=True)),
        step=pl.when(pl.col("stepless")).then(pl.int_range(pl.len()).over("file_no"))
        .otherwise(pl.col("f").list.get(2, null_on_oob=True).cast(pl.Int64, strict=False)),
    )
    ok = ((pl.col("n").is_in([3, 5]) | pl.col("stepless")) & pl.col("ts").is_not_null()
          & pl.col("value").is_not_null() & pl.col("step").is_not_null())
    bad = parsed.filter(~ok)
    if bad.height:
        first = bad.row(0, named=True)
        diagnostics.warn(f"{run}: {bad.height} metric line(s) that are not '<timestamp> <value> <step>' skipped, "
                         f"first in metrics/{first['metric']} line {first['line_no'] + 1}")
    stepless = parsed.filter(ok & pl.col("stepless")).select(pl.col("metric").unique()).to_series().to_list()
    if stepless:
        diagnostics.warn(f"{run}: metric(s) {', '.join(sorted(stepless))} have no steps (MLflow < 0.8); "
                         "their line order is used as the step")
    good = parsed.filter(ok).sort(["ts", "file_no", "line_no"], maintain_order=True)
    return good.select(
        pl.col("step"), (pl.col("ts").cast(pl.Float64) / 1000.0).alias("wall_time"), pl.col("metric"), pl.col("value"),
    ).select([pl.col(c).cast(t) for c, t in TABLE_SCHEMA.items()])


class MlflowRunImporter(Importer):
    """One run folder of an MLflow file store (`mlruns/`)."""

    name = "mlflow"
    looks_for = "MLflow file-store runs (mlruns/<experiment>/<run>/meta.yaml + metrics/)"
    claims_dirs = True

    def claims(self, path: Path, head: bytes) -> bool:
        return (path / "meta.yaml").is_file() and (path / "metrics").is_dir()

    def read(self, path: Path) -> list[Table]:
        if not (path / "metrics").is_dir():
            raise InputError(path, "not an MLflow run folder (no metrics/)")
        meta_file = read_meta_yaml(path / "meta.yaml")
        lines = metric_lines(path)
        if lines.height == 0:
            diagnostics.warn(f"{path}: MLflow run without metric values")
            return []
        long = parse_metric_lines(path, lines)
        name = meta_file.get("run_name") or _small_text(path / "tags" / "mlflow.runName") or None
        meta: dict[str, Any] = {"mlflow.run_id": meta_file.get("run_id", path.name)}
        exp = read_meta_yaml(path.parent / "meta.yaml").get("name")
        if exp:
            meta["mlflow.experiment"] = exp
        if meta_file.get("lifecycle_stage") == "deleted":
            diagnostics.warn(f"{path}: this MLflow run is marked deleted")
        params = path / "params"
        if params.is_dir():
            for p in sorted(q for q in params.rglob("*") if q.is_file()):
                value = _small_text(p)
                if value is not None and len(value) <= 200:
                    meta[f"param.{p.relative_to(params).as_posix()}"] = value
        try:
            start = int(meta_file.get("start_time", "0"))
        except ValueError:
            start = 0
        return [Table(frame=long, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      order=(start,), run_name=name, meta=meta)]
