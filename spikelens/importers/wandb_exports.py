"""Weights & Biases data that left W&B as files: chart CSVs, history dumps, legacy run folders.

- **Chart CSV** (`wandb_export_*.csv`, the web UI's "Download CSV" of a panel): the
  first column is the x-axis (`Step`, or a custom x such as `epoch`), then
  `<display name> - <metric>` with `__MIN`/`__MAX` bucket bounds (ignored). Several
  runs share a file and one run spreads over several files, so the files of one
  folder are read together and joined by display name: run key
  `wandb-export:<folder>:<name>`, one segment per run. The name is split on the LAST
  `" - "` (display names may contain it). A chart holds chart data, not history: an
  export that looks sampled (exactly 500 rows, bucket bounds that differ, uneven step
  spacing) is read with a warning.
- **History dumps** (`run.history()` / `run.scan_history()` saved as CSV, Parquet or
  JSONL): `_step`, `_runtime`, `_timestamp` and the metrics; JSONL lines may hold bare
  `NaN`/`Infinity` (read by `json.loads`); nested dicts become dotted keys. A
  `run_id` column (`api.runs().histories()`) splits the file into runs. A run whose
  integration defined a step metric (its `config.yaml`, or HF's `train/global_step` and
  Lightning's `trainer/global_step` in the dump) is read on that step (`wandb_axis`).
- **Legacy run folder** (wandb < 0.10): `wandb-history.jsonl` beside
  `wandb-summary.json` / `config.yaml`; the folder is the run.

Offline `.wandb` files are another importer's job.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import TABLE_SCHEMA, Importer, Table
from .scalarreprs import SPELLED_TEXT, spelled_values
from .wandb_axis import config_definitions, history_axis, on_axis
from .csvlogs import (PANDAS_INDEX_COLUMNS, decode, head_lines, looks_binary, read_bytes, read_string_frame,
                      separator_of, split_fields, to_long)

SAMPLED_ROWS = 500
"""`run.history()` and chart exports return this many points by default."""
STEP_AXES = ("step", "_step", "global_step", "trainer/global_step")
_BOUND = re.compile(r"__(MIN|MAX)$")
HISTORY_SKIP = ("_step", "_runtime", "_timestamp")
INDEX_COLUMNS = (*PANDAS_INDEX_COLUMNS, "index")


# ------------------------------------------------------------------ chart CSV


def split_header(col: str) -> tuple[str, str, str | None] | None:
    """`"<run> - <metric>[__MIN|__MAX]"` → (run, metric, bound); None if not that shape."""
    bound = None
    m = _BOUND.search(col)
    if m:
        bound, col = m.group(1), col[: m.start()]
    run, sep, metric = col.rpartition(" - ")
    if not sep or not run.strip() or not metric.strip():
        return None
    return run.strip(), metric.strip(), bound


def is_chart_header(fields: list[str]) -> bool:
    rest = [f for f in fields[1:] if f.strip()]
    return bool(rest) and all(split_header(f) is not None for f in rest)


class WandbChartCsvImporter(Importer):
    """CSV downloaded from a W&B chart panel."""

    name = "wandb_chart_csv"
    looks_for = "wandb_export_*.csv (W&B chart CSV: Step, '<run> - <metric>' columns)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv" or looks_binary(head):
            return False
        lines = head_lines(path, head, 1)
        if not lines:
            return False
        fields = split_fields(lines[0], separator_of(lines[0]))
        return len(fields) >= 2 and is_chart_header(fields)

    def group_key(self, path: Path) -> str:
        return f"wandb-export:{path.parent}"

    def read(self, path: Path) -> list[Table]:
        text = decode(path, read_bytes(path))
        parsed = read_string_frame(path, text)
        frame = parsed.frame
        if frame.height == 0:
            diagnostics.warn(f"{path}: header only, no data rows")
            return []
        x = frame.columns[0]
        runs: dict[str, dict[str, str]] = {}
        bounds: list[tuple[str, str]] = []
        for col in frame.columns[1:]:
            parts = split_header(col)
            if parts is None:
                continue
            run, metric, bound = parts
            if bound is None:
                runs.setdefault(run, {})[metric] = col
            else:
                bounds.append((col, col[: -len("__" + bound)]))
        self._warn_sampled(path, frame, x, bounds)
        folder = path.parent
        tables = []
        for run, metrics in runs.items():
            sub, step_col = self._run_frame(path, frame, x, metrics)
            long = to_long(path, sub, parsed.sep, step_col=step_col)
            key = f"wandb-export:{folder}:{run}"
            tables.append(Table(frame=long, source=path, format=self.name, run_key=key, segment_key=key,
                                run_name=run, meta={"wandb.display_name": run}))
        return tables

    @staticmethod
    def _run_frame(path: Path, frame: pl.DataFrame, x: str, metrics: dict[str, str]) -> tuple[pl.DataFrame, str | None]:
        """One run's columns, renamed to the metric names, with the column that gives its step."""
        if x.strip().lower() in STEP_AXES:
            cols, step_col = {x: pl.col(x)}, x
        elif "_step" in metrics:  # custom x-axis: the run's own `_step` triplet gives the step
            cols, step_col = {"_step": pl.col(metrics.pop("_step")), x: pl.col(x)}, "_step"
        else:
            diagnostics.warn(f"{path}: x-axis {x!r} is not the step and the export has no '_step' column; "
                             f"{x!r} is used as the step")
            cols, step_col = {x: pl.col(x)}, x
        sub = frame.select(**cols, **{m: pl.col(c) for m, c in metrics.items() if m not in cols})
        # a run has a row only where one of its cells is filled (exports share the x column)
        return sub.filter(pl.any_horizontal([pl.col(m).is_not_null() for m in sub.columns[1:]] or [pl.lit(True)])), step_col

    @staticmethod
    def _warn_sampled(path: Path, frame: pl.DataFrame, x: str, bounds: list[tuple[str, str]]) -> None:
        reasons = []
        if frame.height == SAMPLED_ROWS:
            reasons.append(f"exactly {SAMPLED_ROWS} rows")
        pairs = [(b, v) for b, v in bounds if v in frame.columns]
        if pairs:
            differ = frame.select(pl.sum_horizontal(
                [(pl.col(b).cast(pl.Float64, strict=False) != pl.col(v).cast(pl.Float64, strict=False)).fill_null(False)
                 for b, v in pairs]).sum()).item()
            if differ:
                reasons.append(f"{differ} bucket bound(s) differ from the value")
        if any(_uneven(frame, x, v) for v in {v for _, v in pairs} or frame.columns[1:2]):
            reasons.append("uneven step spacing")
        if reasons:
            diagnostics.warn(f"{path}: looks like a sampled chart export ({', '.join(reasons)}); spikes between "
                             f"points may be missing — export full history with run.scan_history()")


def _uneven(frame: pl.DataFrame, x: str, col: str) -> bool:
    """True when the x-values at which `col` has points are spaced unevenly (sampled
    charts pick points; a logged metric has one interval, give or take a few)."""
    steps = (frame.filter(pl.col(col).is_not_null() & (pl.col(col).str.strip_chars() != ""))
             .select(pl.col(x).cast(pl.Float64, strict=False)).to_series().drop_nulls())
    diffs = steps.diff().drop_nulls()
    if diffs.len() < 10:
        return False
    top = diffs.value_counts(sort=True)["count"][0]
    return diffs.n_unique() >= 3 and top < 0.9 * diffs.len()


# ------------------------------------------------------------------ history dumps


def flatten(row: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Dotted keys of nested dicts; W&B media objects (`{"_type": ...}`) are skipped."""
    for k, v in row.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            if "_type" in v:
                continue
            yield from flatten(v, key + ".")
        else:
            yield key, v


def parse_jsonl(path: Path, text: str) -> list[dict[str, Any]]:
    """Rows of a JSON-lines file (bare NaN/Infinity accepted); bad lines skipped with a warning."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    try:
        rows = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        rows, bad = [], []
        for i, ln in enumerate(lines):
            try:
                rows.append(json.loads(ln))
            except ValueError:
                bad.append(i)
        if bad:
            cut = " (the last line is cut short)" if bad == [len(lines) - 1] else ""
            diagnostics.warn(f"{path}: {len(bad)} line(s) that are not JSON skipped{cut}")
    objs = [r for r in rows if isinstance(r, dict)]
    if SPELLED_TEXT.search(text, 0, 1 << 20):  # values written as text (`"loss": "1.234"`, `"tensor(0.5)"`): numbers
        objs = [spelled_values(r) for r in objs]
    if len(objs) != len(rows):
        diagnostics.warn(f"{path}: {len(rows) - len(objs)} line(s) that are not JSON objects skipped")
    return objs


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def rows_to_long(path: Path, rows: list[dict[str, Any]], *, step_key: str = "_step", wall_key: str | None = "_timestamp",
                 skip: tuple[str, ...] = HISTORY_SKIP) -> pl.DataFrame:
    """History rows (`_step`, `_timestamp`, metrics) → long table in read order; other
    JSON-lines logs name their step and wall-time keys."""
    steps: list[int] = []
    walls: list[float | None] = []
    metrics: list[str] = []
    values: list[float] = []
    no_step = 0
    for i, row in enumerate(rows):
        step = row.get(step_key)
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            no_step += 1
            continue
        wall = _number(row.get(wall_key)) if wall_key else None
        if wall is not None and not math.isfinite(wall):
            wall = None
        for k, v in flatten(row):
            if k in skip or k == step_key or k == wall_key or k.startswith("_wandb"):
                continue
            x = _number(v)
            if x is None:
                continue
            steps.append(step)
            walls.append(wall)
            metrics.append(k)
            values.append(x)
    if no_step:
        diagnostics.warn(f"{path}: {no_step} row(s) without an integer {step_key} skipped")
    return pl.DataFrame({"step": steps, "wall_time": walls, "metric": metrics, "value": values}, schema=TABLE_SCHEMA)


def typed_to_long(frame: pl.DataFrame, *, step_key: str = "_step", wall_key: str | None = "_timestamp",
                  skip: tuple[str, ...] = HISTORY_SKIP) -> pl.DataFrame:
    """A typed wide frame (Parquet, clean JSON lines) → long table: numeric columns only,
    nested structs dotted."""
    while any(isinstance(t, pl.Struct) for t in frame.dtypes):
        for c, t in zip(frame.columns, frame.dtypes):
            if isinstance(t, pl.Struct):
                if any(f.name == "_type" for f in t.fields):
                    frame = frame.drop(c)
                else:
                    inner = frame.select(pl.col(c).struct.unnest()).rename(lambda n, c=c: f"{c}.{n}")
                    frame = frame.drop(c).hstack(inner)
                break
    numeric = [c for c, t in zip(frame.columns, frame.dtypes)
               if t.is_numeric() and c not in skip and c not in (step_key, wall_key) and not c.startswith("_wandb")]
    wall = pl.col(wall_key).cast(pl.Float64) if wall_key in frame.columns else pl.lit(None, pl.Float64)
    if not numeric:
        return pl.DataFrame(schema=TABLE_SCHEMA)
    k = len(numeric)
    long = (
        frame.select(step=pl.col(step_key).cast(pl.Int64, strict=False), wall_time=wall,
                     value=pl.concat_list([pl.col(c).cast(pl.Float64) for c in numeric]))
        .explode("value")
        .with_columns(metric=(pl.int_range(pl.len()) % k).replace_strict(list(range(k)), numeric, return_dtype=pl.String))
        .filter(pl.col("value").is_not_null() & pl.col("step").is_not_null())
    )
    return long.select([pl.col(c).cast(t) for c, t in TABLE_SCHEMA.items()])


def typed_jsonl(data: bytes, *, step_key: str = "_step", wall_key: str | None = "_timestamp") -> pl.DataFrame | None:
    """A JSON-lines history read by Polars' native reader, when that reads it exactly as
    the row-by-row path would: every line valid JSON (no bare NaN), `_step` integers, and
    every other column numeric, boolean, null or nested (strings only in `run_id`: a
    column mixing numbers and strings would lose its numbers). None otherwise."""
    import io

    try:
        frame = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None)
    except Exception:  # noqa: BLE001 - any parse problem: the row-by-row path reports it
        return None
    if frame.height == 0 or step_key not in frame.columns or not frame.schema[step_key].is_integer():
        return None
    for name, dtype in frame.schema.items():
        if name == "run_id" and dtype == pl.String:
            continue
        if not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Null) or isinstance(dtype, pl.Struct)):
            return None
    if wall_key and wall_key in frame.columns and frame.schema[wall_key].is_numeric():
        ts = pl.col(wall_key).cast(pl.Float64)
        frame = frame.with_columns(pl.when(ts.is_finite()).then(ts).alias(wall_key))
    return frame


def _is_history_header(fields: list[str]) -> bool:
    names = {f.strip() for f in fields}
    return "_step" in names and bool(names & {"_runtime", "_timestamp"})


class WandbHistoryImporter(Importer):
    """`run.history()` / `scan_history()` dumps saved as CSV, Parquet or JSON lines."""

    name = "wandb_history"
    looks_for = "W&B history dumps (*.csv/*.parquet/*.jsonl with _step and _runtime/_timestamp)"

    def claims(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix == ".csv" and not looks_binary(head):
            lines = head_lines(path, head, 1)
            return bool(lines) and _is_history_header(split_fields(lines[0], separator_of(lines[0])))
        if suffix in (".jsonl", ".ndjson"):
            lines = head_lines(path, head, 1)  # W&B writes _step last: read the whole first row
            return bool(lines) and lines[0].lstrip().startswith("{") and '"_step"' in lines[0]
        if suffix == ".parquet" and head.startswith(b"PAR1"):
            try:
                return "_step" in pl.read_parquet_schema(path)
            except Exception:  # noqa: BLE001 - a damaged footer: not ours to claim
                return False
        return False

    def read(self, path: Path) -> list[Table]:
        suffix = path.suffix.lower()
        defined = config_definitions(path.parent)  # the step metrics the run's `config.yaml` records
        if suffix == ".parquet":
            try:
                frame = pl.read_parquet(path)
            except Exception as exc:  # noqa: BLE001 - polars/arrow raise many kinds
                raise FormatError(path, f"unreadable Parquet ({str(exc).splitlines()[0]})") from None
            parts = self._split_runs(frame)
            longs = [(rid, typed_to_long(f)) for rid, f in parts]
            n_rows = frame.height
        elif suffix == ".csv":
            text = decode(path, read_bytes(path))
            parsed = read_string_frame(path, text)
            frame = parsed.frame
            axis = history_axis(frame.columns, defined)
            step_col = axis if axis in frame.columns else "_step"  # the table's own step column read as the step
            drop = tuple(c for c in frame.columns if c.strip().lower() in INDEX_COLUMNS
                         or c.strip() in ("_runtime", "_step") or c.strip().startswith("_wandb"))
            longs = [(rid, to_long(path, f.with_columns(pl.col(step_col).forward_fill().backward_fill()), parsed.sep,
                                   step_col=step_col, wall_col="_timestamp", drop=drop))
                     for rid, f in self._split_runs(frame)]
            n_rows = frame.height
        else:
            data = read_bytes(path)
            frame = typed_jsonl(data)
            if frame is not None:  # Polars' reader: the common, clean case
                parts = self._split_runs(frame)
                longs = [(rid, typed_to_long(f)) for rid, f in parts]
                n_rows = frame.height
                no_step = frame.get_column("_step").null_count()
                if no_step:
                    diagnostics.warn(f"{path}: {no_step} row(s) without an integer _step skipped")
            else:  # bare NaN, damaged lines, values of mixed types: row by row
                rows = parse_jsonl(path, decode(path, data))
                by_run: dict[str | None, list[dict[str, Any]]] = {}
                for r in rows:
                    by_run.setdefault(r.get("run_id") if isinstance(r.get("run_id"), str) else None, []).append(r)
                longs = [(rid, rows_to_long(path, rs)) for rid, rs in by_run.items()]
                n_rows = len(rows)
        if n_rows == 0:
            diagnostics.warn(f"{path}: no history rows")
            return []
        if n_rows == SAMPLED_ROWS:
            diagnostics.warn(f"{path}: exactly {SAMPLED_ROWS} rows, as run.history() returns by default: "
                             "probably sampled — dump run.scan_history() for every step")
        tables = []
        for rid, long in longs:
            long = on_axis(long, history_axis(long.get_column("metric").unique().to_list(), defined))
            key = f"{path}:{rid}" if rid is not None else str(path)
            tables.append(Table(frame=long, source=path, format=self.name, run_key=key, segment_key=key,
                                run_name=rid, meta={"wandb.run_id": rid} if rid else {}))
        return tables

    @staticmethod
    def _split_runs(frame: pl.DataFrame) -> list[tuple[str | None, pl.DataFrame]]:
        if "run_id" not in frame.columns:
            return [(None, frame)]
        out = []
        for (rid,), part in frame.group_by("run_id", maintain_order=True):
            out.append((None if rid is None else str(rid), part.drop("run_id")))
        return out


# ------------------------------------------------------------------ legacy run folders


def read_flat_yaml_values(path: Path) -> dict[str, str]:
    """`key: {desc, value}` pairs of a legacy `config.yaml`, scalar values only (no YAML library needed)."""
    out: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    key = None
    for ln in lines:
        if ln and not ln.startswith((" ", "\t", "#")) and ln.rstrip().endswith(":"):
            key = ln.rstrip()[:-1].strip()
        elif key and ln.strip().startswith("value:") and not key.startswith("_"):
            val = ln.strip()[len("value:"):].strip()
            if val:
                out[key] = val.strip("'\"")
    return out


class WandbLegacyRunImporter(Importer):
    """A wandb < 0.10 run folder (`wandb-history.jsonl` + `wandb-summary.json`/`config.yaml`)."""

    name = "wandb_legacy"
    looks_for = "legacy W&B run folders (wandb-history.jsonl)"
    claims_dirs = True

    def claims(self, path: Path, head: bytes) -> bool:
        return (path / "wandb-history.jsonl").is_file() and any(
            (path / n).is_file() for n in ("wandb-summary.json", "config.yaml", "wandb-metadata.json"))

    def read(self, path: Path) -> list[Table]:
        hist = path / "wandb-history.jsonl"
        text = decode(hist, read_bytes(hist))
        rows = parse_jsonl(hist, text)
        if not rows:
            diagnostics.warn(f"{hist}: no history rows")
            return []
        long = rows_to_long(hist, rows)
        long = on_axis(long, history_axis(long.get_column("metric").unique().to_list(), config_definitions(path)))
        meta: dict[str, Any] = {"wandb.run_id": path.name.rsplit("-", 1)[-1]}
        name = None
        try:
            md = json.loads((path / "wandb-metadata.json").read_text(encoding="utf-8"))
            name = md.get("name") if isinstance(md.get("name"), str) else None
            for k in ("project", "state", "startedAt"):
                if isinstance(md.get(k), str):
                    meta[f"wandb.{k}"] = md[k]
        except (OSError, ValueError, AttributeError):
            pass
        meta.update({f"config.{k}": v for k, v in read_flat_yaml_values(path / "config.yaml").items()})
        return [Table(frame=long, source=hist, format=self.name, run_key=str(path), segment_key=str(path),
                      run_name=name, meta=meta)]
