"""A W&B run whose integration defined a step metric (HF's `train/global_step`, Lightning's
`trainer/global_step`) is read on that step, as its users read it in the W&B UI, not on `_step`
(which counts `log` calls). Runs written by the real wandb client, offline, at test time."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import FIXTURES
from spikelens import api

sys.path.insert(0, str(FIXTURES))
from writers._curves import clean_run, plant_spike  # noqa: E402
from writers.wandb_offline import _settings, offline_wandb  # noqa: E402

EVERY, EVAL_EVERY, N = 10, 200, 120  # a train row every 10 optimizer steps, an eval row every 200
SPIKE_AT = 70  # the train row (of N) that holds a spike


def _write(out: Path, axis: str | None, *, glob: bool = True, fractional: bool = False) -> Path:
    """An HF-Trainer-like run: train rows with the loss and the global step, eval rows in between
    (one `_step` each); `axis` defined as the step metric of `*` (or of each metric by name)."""
    curve = plant_spike(clean_run(n_steps=N, seed=5, warmup=10), SPIKE_AT, height=4.0, recover=8)
    name = axis or "train/global_step"
    with offline_wandb() as (wandb, tmp):
        run = wandb.init(project="p", settings=_settings(wandb), id="stepax01")
        if axis:
            run.define_metric(axis)
            if glob:
                run.define_metric("*", step_metric=axis, step_sync=True)
            else:
                for m in ("train/loss", "train/learning_rate", "eval/loss"):
                    run.define_metric(m, step_metric=axis)
        for i in range(N):
            step = (i + 1) * EVERY
            counter = step / 1000 if fractional else step
            run.log({"train/loss": float(curve["loss"][i]), "train/learning_rate": float(curve["lr"][i]),
                     name: counter})
            if step % EVAL_EVERY == 0:
                run.log({"eval/loss": float(curve["loss"][i]) * 1.1, name: counter})
        run.finish()
        wandb.teardown()  # the service writes the last records as it shuts down
        (folder,) = (tmp / "wandb").glob("offline-run-*")
        dest = out / "wandb" / folder.name
        shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("logs", "tmp", "*.log"))
    return dest


def _steps(run, metric: str) -> list[int]:
    return run.frame.filter(pl.col("metric") == metric).sort("seq").get_column("step").to_list()


def test_a_run_is_read_on_the_global_step_its_integration_defined(tmp_path):
    (run,) = api.load_runs(_write(tmp_path, "train/global_step"))
    assert _steps(run, "train/loss") == [(i + 1) * EVERY for i in range(N)]
    assert _steps(run, "eval/loss") == list(range(EVAL_EVERY, N * EVERY + 1, EVAL_EVERY))
    assert "train/global_step" not in set(run.frame.get_column("metric").cast(pl.String))  # the axis, not a curve


def test_lightning_global_step_defined_metric_by_metric(tmp_path):
    (run,) = api.load_runs(_write(tmp_path, "trainer/global_step", glob=False))
    assert _steps(run, "train/loss") == [(i + 1) * EVERY for i in range(N)]
    assert _steps(run, "eval/loss")[-1] == N * EVERY


def test_findings_name_the_defined_step(tmp_path):
    report = api.analyze(_write(tmp_path, "train/global_step"))
    spikes = [f for r in report.runs for f in r.findings if f.kind == "spike"]
    assert spikes and spikes[0].peak_step == (SPIKE_AT + 1) * EVERY


def test_without_a_defined_step_or_with_an_epoch_fraction_the_step_is_wandb_s(tmp_path):
    (plain,) = api.load_runs(_write(tmp_path / "plain", None))
    (frac,) = api.load_runs(_write(tmp_path / "frac", "train/epoch", fractional=True))
    for run in (plain, frac):
        steps = _steps(run, "train/loss")
        assert steps[0] == 0 and len(steps) == N and np.all(np.diff(steps) >= 1)
        evals_before_last = (N * EVERY) // EVAL_EVERY - 1
        assert steps[-1] == N - 1 + evals_before_last  # one `_step` per `log` call


def _history_rows(axis: str) -> list[dict]:
    """`run.scan_history()` rows of an HF-like run: a train row per 10 optimizer steps with `axis`, an eval
    row after every 200 (one `_step` per row, `_runtime`/`_timestamp` beside)."""
    curve = clean_run(n_steps=N, seed=6, warmup=10)
    rows, t = [], 1_780_000_000.0
    for i in range(N):
        step = (i + 1) * EVERY
        rows.append({"train/loss": float(curve["loss"][i]), axis: step, "_step": len(rows), "_runtime": i,
                     "_timestamp": t + i})
        if step % EVAL_EVERY == 0:
            rows.append({"eval/loss": float(curve["loss"][i]) * 1.1, axis: step, "_step": len(rows),
                         "_runtime": i, "_timestamp": t + i})
    return rows


def test_history_dumps_of_an_integration_run_are_read_on_its_global_step(tmp_path):
    import json

    import pandas as pd

    rows = _history_rows("trainer/global_step")
    (tmp_path / "jsonl").mkdir()
    with open(tmp_path / "jsonl" / "scan_history.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    frame = pd.DataFrame(rows)  # what run.history() returns (sparse keys: NaN)
    (tmp_path / "csv").mkdir()
    frame.to_csv(tmp_path / "csv" / "history.csv")
    (tmp_path / "parquet").mkdir()
    frame.to_parquet(tmp_path / "parquet" / "history.parquet")
    for path in (tmp_path / "jsonl" / "scan_history.jsonl", tmp_path / "csv" / "history.csv",
                 tmp_path / "parquet" / "history.parquet"):
        (run,) = api.load_runs(path)
        assert _steps(run, "train/loss") == [(i + 1) * EVERY for i in range(N)], path.name
        assert _steps(run, "eval/loss") == list(range(EVAL_EVERY, N * EVERY + 1, EVAL_EVERY)), path.name


def test_a_dump_beside_its_config_is_read_on_the_step_metric_the_config_records(tmp_path):
    import json

    yaml = pytest.importorskip("yaml")
    rows = _history_rows("optim_step")
    (tmp_path / "files").mkdir()
    with open(tmp_path / "history.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    (run,) = api.load_runs(tmp_path / "history.jsonl")
    assert _steps(run, "train/loss")[:3] == [0, 1, 2]  # no definition: W&B's own `_step`
    # the `_wandb.m` list a run's config.yaml keeps: each metric with the index (from 1) of its step metric
    config = {"_wandb": {"desc": None, "value": {"cli_version": "0.16.6", "m": [
        {1: "optim_step", 6: [3]}, {1: "train/loss", 5: 1, 6: [1, 3]}, {1: "eval/loss", 5: 1, 6: [1, 3]}]}}}
    (tmp_path / "files" / "config.yaml").write_text(yaml.safe_dump(config))
    (run,) = api.load_runs(tmp_path / "history.jsonl")
    assert _steps(run, "train/loss") == [(i + 1) * EVERY for i in range(N)]
