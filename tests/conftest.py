"""Shared test helpers: where fixtures live, a CLI runner that keeps stdout and stderr apart,
and what every importer test does: read runs with their warnings, list a copy without writing into it."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import settings as _hypothesis_settings

# CI must be reproducible: the same examples on every run (locally, examples vary and
# keep exploring; a failure prints the example to replay).
_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    _hypothesis_settings.load_profile("ci")

from spikelens import api, diagnostics

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def run_cli(*args: str, cwd: str | os.PathLike | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m spikelens ARGS` in a subprocess, as a user's shell would."""
    return subprocess.run([sys.executable, "-m", "spikelens", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)


@pytest.fixture
def cli():
    return run_cli


def main_in_process(capsys, *args) -> tuple[int, str, str]:
    """The real entry point, in this process; (exit code, stdout, stderr)."""
    from spikelens import cli as entry

    with pytest.raises(SystemExit) as exc:
        entry.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def no_workers(monkeypatch):
    """A sweep run in this process (`main_in_process`, `api.analyze`) analyses its groups here
    instead of in spawned worker processes: each worker imports spikelens afresh, which is
    most of a small sweep's time (CI time). For tests about what is reported, not about the
    fan-out; the workers are tested where the fan-out is the point (test_executors)."""
    from spikelens.pipeline import executors

    monkeypatch.setattr(executors, "MIN_GROUPS_FOR_WORKERS", 10**9)


@pytest.fixture
def no_user_patterns():
    """Text logs read by the built-in patterns only (no `[tool.spikelens.patterns]` of the
    machine's working folder), the user patterns reset afterwards."""
    from spikelens.importers.textlogs import set_user_patterns

    set_user_patterns({})
    yield
    set_user_patterns(None)


@pytest.fixture
def in_empty_folder(tmp_path, monkeypatch):
    """An empty working folder: the project's own pyproject.toml plays no part."""
    monkeypatch.chdir(tmp_path)


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under root (tests check that input folders are never written)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def written_hashes(root: Path) -> dict[str, str]:
    """`tree_hashes` for comparing what a fixture writer writes: a Parquet file is hashed by
    its schema and rows, not its bytes, which carry the writing pyarrow's version
    (`created_by`) and change with it (mlflow pins pyarrow below the newest)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        if p.suffix == ".parquet":
            table = pl.read_parquet(p)
            data = (repr(table.schema) + repr(table.rows())).encode()
        else:
            data = p.read_bytes()
        out[str(p.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def ls_without_writing(src: Path, tmp_path: Path, *parts: str) -> list[dict]:
    """`spikelens ls --format json` over a copy of the fixture folder SRC (only PARTS of it when
    given), checking that it exits 0 and leaves its input untouched; the runs it lists."""
    tree = tmp_path / src.name
    shutil.copytree(src, tree)
    before = tree_hashes(tree)
    res = run_cli("ls", *([tree / part for part in parts] or [tree]), "--format", "json")
    assert res.returncode == 0, res.stderr
    assert tree_hashes(tree) == before
    return json.loads(res.stdout)["runs"]


def load(*paths: Path):
    """`api.load_runs(*paths)` and the warnings it gave: (runs, warning lines)."""
    with diagnostics.collecting() as diag:
        runs = api.load_runs(*paths)
    return runs, diag.lines


def analyzed_run(path: Path):
    """The report of the one run under `path` (`api.analyze`), its warnings collected."""
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return run


def only_run(root: Path):
    """The report of the one run under `root`, analysed in this process (`jobs=1`)."""
    (run,) = api.analyze(root, jobs=1).runs
    return run


def plateaus_read(run, metric: str, reading: str) -> list:
    """A run's plateau findings on `metric` that read it one way (`never` learned, at `chance`)."""
    return [f for f in run.findings if f.kind == "plateau" and f.metric == metric
            and f.evidence.get("reading") == reading]


def loud(run) -> list:
    """A run's findings that are warnings or errors (what alarms a user)."""
    return [f for f in run.findings if f.severity in ("warning", "error")]


def write_csv(path: Path, header: list[str], rows) -> Path:
    """A CSV file with `header` and `rows`, its folder made first."""
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def keras_csv(path: Path, rows: dict) -> Path:
    """What `keras.callbacks.CSVLogger` writes: `epoch` (from 0) then the sorted keys, `repr`
    floats; `rows` maps each key to its per-epoch values."""
    keys = sorted(rows)
    return write_csv(path, ["epoch", *keys],
                     ([i, *(repr(float(rows[k][i])) for k in keys)] for i in range(len(rows[keys[0]]))))


def metric(run, name: str) -> pl.DataFrame:
    """The rows of one metric in a run's long frame, in read order."""
    return run.frame.filter(pl.col("metric") == name)


def read_text_log(tmp_path: Path, name: str, lines: list[str]):
    """The text reader's frame and meta of a console log written from `lines`."""
    from spikelens.importers.textlogs import TextLogImporter

    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with diagnostics.collecting():
        (table,) = TextLogImporter().read(path)
    return table.frame, table.meta


def curve(frame: pl.DataFrame, metric: str) -> list[tuple[int, float]]:
    """(step, value) of one metric of a long frame."""
    return frame.filter(pl.col("metric") == metric).select("step", "value").rows()


def polars_rolling_median(x, window: int, center: bool = False, exclusive: bool = False, min_samples: int = 1):
    """Polars' own rolling median: the reference `detect.stats.rolling_median` must equal."""
    import numpy as np

    window = max(1, min(int(window), x.size))
    s = pl.Series(x, dtype=pl.Float64)
    if exclusive:
        s = s.shift(1)
    return s.rolling_median(window_size=window, min_samples=min(min_samples, window), center=center) \
        .to_numpy().astype(np.float64)
