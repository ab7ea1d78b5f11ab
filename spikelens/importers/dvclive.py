"""DVCLive run folders: `dvclive/plots/metrics/**/<name>.tsv` (+ `metrics.json`, `params.yaml`).

`Live.log_metric("train/loss", v)` appends a row to `plots/metrics/train/loss.tsv`: a
tab-separated file with a header `timestamp<TAB>step<TAB>loss` (DVCLive 2-3; older
versions and the HF callback's early releases wrote `step<TAB>loss` only), where the
timestamp is in milliseconds and `step` is DVCLive's own counter (`next_step()`), not
always the trainer's optimizer step. A metric's key is its path below `plots/metrics`
without `.tsv`, so `loss.tsv` and `train/loss.tsv` stay two metrics. `metrics.json`
holds the last values only and is not read; `params.yaml` is kept as run metadata when
it is flat `key: value` text. One folder is one run and one launch (a resumed DVCLive
run, `Live(resume=True)`, appends to the same files and is split by the step going back).
DVCLive 0.x wrote the same files straight into its folder (`<dir>/<name>.tsv`, each headed by its own
name): that folder is one run too, not a run a file.
"""
from __future__ import annotations

from pathlib import Path

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import TABLE_SCHEMA, Importer, Table
from .csvlogs import decode, read_bytes, read_string_frame, separator_of, split_fields, to_long
from .mlflow import read_meta_yaml

METRICS_DIR = ("plots", "metrics")
TIMESTAMP_MS = "timestamp"


def metrics_dir(run: Path) -> Path:
    return run.joinpath(*METRICS_DIR)


def inside_metrics(path: Path) -> bool:
    """Is this DVCLive's own `plots/metrics` folder (passed as the path to read)?"""
    return path.name == METRICS_DIR[1] and path.parent.name == METRICS_DIR[0]


def read_tsv(path: Path, key: str) -> pl.DataFrame:
    """One DVCLive metric file → long rows named `key` (the value column is the last one)."""
    text = decode(path, read_bytes(path))
    if not text.strip():
        diagnostics.warn(f"{path}: empty metric file, no data")
        return pl.DataFrame(schema=TABLE_SCHEMA)
    parsed = read_string_frame(path, text)
    keys = {c: c.strip().strip('"').strip().lower() for c in parsed.frame.columns}
    named = [c for c in parsed.frame.columns if keys[c] and not keys[c].startswith("unnamed:")
             and (parsed.frame.height == 0 or parsed.frame.get_column(c).null_count() < parsed.frame.height)]
    # (a trailing separator's column is empty)
    frame = parsed.frame.select(named).rename({c: keys[c] for c in named})  # `STEP`, `"step"`: DVCLive's names
    cols = frame.columns
    if "step" not in cols or len(cols) < 2:
        raise FormatError(path, f"not a DVCLive metric file (header {', '.join(cols)}; expected step and a value)")
    values = [c for c in cols if c not in ("step", TIMESTAMP_MS)]
    value_col = values[-1] if values else cols[-1]  # the metric's own column, wherever the writer put it
    frame = frame.select([c for c in cols if c in ("step", TIMESTAMP_MS, value_col)])
    long = to_long(path, frame, parsed.sep, step_col="step", wall_col=None, drop=(TIMESTAMP_MS,))
    if TIMESTAMP_MS in cols:  # milliseconds, unlike the seconds `to_long` expects of a wall column
        wall = frame.select(pl.col(TIMESTAMP_MS).cast(pl.Float64, strict=False) / 1000.0).to_series()
        steps = frame.select(pl.col("step").cast(pl.Int64, strict=False)).to_series()
        stamps = pl.DataFrame({"step": steps, "wall": wall}).drop_nulls("step").unique("step", keep="last")
        long = long.join(stamps, on="step", how="left", maintain_order="left").with_columns(
            wall_time=pl.coalesce("wall", "wall_time")).drop("wall")
    return long.with_columns(metric=pl.lit(key)).select([pl.col(c).cast(t) for c, t in TABLE_SCHEMA.items()])


FLAT_MAX_FILES = 256


def flat_metric_files(path: Path) -> list[Path] | None:
    """DVCLive 0.x's folder (`dvclive.init(path)`; `dvclive.log(name, v)` appends to `path/<name>.tsv`):
    two metric files or more, nothing else but its `.json`/`.yaml` summaries, each headed
    `[timestamp] step <its own name>`. One run, as the newer `plots/metrics` folder is; None otherwise."""
    try:
        entries = [p for p, _ in zip(path.iterdir(), range(FLAT_MAX_FILES + 1))]
    except OSError:
        return None
    tsvs = [p for p in entries if p.suffix == ".tsv" and p.is_file()]
    if not 2 <= len(tsvs) <= FLAT_MAX_FILES or any(p.is_dir() or p.suffix not in (".tsv", ".json", ".yaml", ".html")
                                                   for p in entries):
        return None
    for p in tsvs:
        try:
            with p.open("rb") as fh:
                head = fh.read(2048).decode("utf-8", "replace")
        except OSError:
            return None
        if not names_its_metric(_header_line(head), p.stem):
            return None
    return sorted(tsvs)


def _header_line(head: str) -> str:
    """A metric file's first line that is no `#` comment (a BOM left out)."""
    lines = head.lstrip("\ufeff").replace("\r", "\n").split("\n")
    return next((ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")), "")


def header_names(line: str) -> list[str]:
    """A metric file's header names, unquoted and lower case, as any writer lays it out (tabs or another
    separator, a trailing separator's empty name left out)."""
    names = [f.strip().strip('"').strip().lower() for f in split_fields(line, separator_of(line))]
    return [n for n in names if n]


def names_its_metric(line: str, name: str) -> bool:
    """Is this DVCLive 0.x's header of the metric `name`: `step` (and DVCLive's `timestamp`) and the metric's own
    name, in any order?"""
    names = header_names(line)
    return name.lower() in names and set(names) - {name.lower()} in ({"step"}, {TIMESTAMP_MS, "step"})


def flat_params(path: Path) -> dict[str, str]:
    """Top-level scalar `key: value` lines of `params.yaml` as run metadata (nested blocks skipped)."""
    return {f"param.{k}": v for k, v in read_meta_yaml(path).items() if len(v) <= 200}


class DvcLiveImporter(Importer):
    """A DVCLive output folder (`dvclive/` by default; any folder holding plots/metrics/*.tsv)."""

    name = "dvclive"
    looks_for = "DVCLive folders (dvclive/plots/metrics/**.tsv; DVCLive 0.x: <dir>/<metric>.tsv side by side)"
    claims_dirs = True

    def claims(self, path: Path, head: bytes) -> bool:
        if inside_metrics(path):  # the user passed `dvclive/plots/metrics` itself: still one run
            return any(path.rglob("*.tsv"))
        root = metrics_dir(path)
        if not root.is_dir():
            return flat_metric_files(path) is not None
        return (path / "metrics.json").is_file() or (path / "params.yaml").is_file() or path.name == "dvclive" \
            or any(root.rglob("*.tsv"))

    def read(self, path: Path) -> list[Table]:
        root = path if inside_metrics(path) else metrics_dir(path)
        if not root.is_dir():  # DVCLive 0.x: `<dir>/<metric>.tsv` side by side
            root = path
        files = sorted(p for p in root.rglob("*.tsv") if p.is_file())
        if not files:
            diagnostics.warn(f"{path}: DVCLive folder without metric files (plots/metrics/*.tsv)")
            return []
        parts: list[pl.DataFrame] = []
        for f in files:
            key = f.relative_to(root).with_suffix("").as_posix()
            try:
                parts.append(read_tsv(f, key))
            except FormatError as exc:
                diagnostics.warn(f"{exc} (skipped)")
        long = pl.concat(parts) if parts else pl.DataFrame(schema=TABLE_SCHEMA)
        if long.height == 0:
            diagnostics.warn(f"{path}: no numeric values found")
            return []
        # one file a metric: put the rows back in logging order (time stamps when written,
        # else the step; a stable sort keeps a file's own order among equal keys)
        order = "wall_time" if long.get_column("wall_time").null_count() == 0 else "step"
        long = long.sort(order, maintain_order=True)
        run = path.parent.parent if inside_metrics(path) else path  # named as its DVCLive folder
        return [Table(frame=long, source=path, format=self.name, run_key=str(run), segment_key=str(run),
                      meta=flat_params(run / "params.yaml"))]
