"""MLflow's database and server: runs written by the real `mlflow` package into a SQLite
database and into a real `mlflow server` (started here on a free localhost port) analyse to
the same findings as the same metrics in CSV; NaN and ±inf survive; run names are MLflow's."""
from __future__ import annotations

import csv
import hashlib
import math
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from spikelens import api
from spikelens.errors import InputError

from conftest import run_cli

mlflow = pytest.importorskip("mlflow")  # the test extra installs it; the readers never need it

T0 = 1_700_000_000_000  # ms


def loss_at(step: int, spike: int | None = None, phase: float = 0.0) -> float:
    """A smooth decaying loss with deterministic wiggle (and a 6x spike)."""
    v = 2.0 * math.exp(-step / 120.0) + 0.2 + 0.01 * math.sin(step * 0.7 + phase)
    return v * 6.0 if step == spike else v


def launches() -> dict[str, list[list[tuple[int, dict[str, float]]]]]:
    """Each run: its launches, each a list of (step, {metric: value}) in logging order."""
    spiky = [[(s, {"loss": loss_at(s, spike=180), "lr": 1e-3}) for s in range(400)]]
    # its own wiggle: runs of one folder with the same first and last loss count as one training
    # written twice (explain/mirrors.py)
    nan_run = [[(s, {"loss": loss_at(s, phase=1.0) if not 250 <= s < 260 else float("nan"),
                     "grad_norm": float("inf") if s == 250 else 1.0 + 0.01 * (s % 7)}) for s in range(400)]]
    resumed = [[(s, {"loss": loss_at(s)}) for s in range(300)],
               [(s, {"loss": loss_at(s) * 1.001}) for s in range(200, 450)]]
    return {"spiky": spiky, "nan-run": nan_run, "resumed": resumed}


def write_runs(tracking_uri: str) -> dict[str, str]:
    """Log the runs with mlflow (nested under a parent, one resumed by run id); names → ids."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(tracking_uri)
    client = MlflowClient(tracking_uri)
    mlflow.set_experiment("spikelens-bench")
    ids = {}
    with mlflow.start_run(run_name="sweep") as parent:
        ids["sweep"] = parent.info.run_id
        for name, parts in launches().items():
            with mlflow.start_run(run_name=name, nested=True) as run:
                ids[name] = run.info.run_id
                _log(client, run.info.run_id, parts[0], T0, Metric)
    # a resume: the same run id, logging from step 200 again, later
    for name, parts in launches().items():
        for i, part in enumerate(parts[1:], start=1):
            with mlflow.start_run(run_id=ids[name]):
                _log(client, ids[name], part, T0 + i * 10_000_000, Metric)
    return ids


def _log(client, run_id, part, t0, Metric) -> None:
    metrics = [Metric(key, value, t0 + 1000 * i, step) for i, (step, values) in enumerate(part)
               for key, value in values.items()]
    for at in range(0, len(metrics), 900):  # log_batch takes at most 1000 metrics
        client.log_batch(run_id, metrics=metrics[at:at + 900])


def write_csvs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, parts in launches().items():
        keys = sorted({k for part in parts for _, v in part for k in v})
        with open(folder / f"{name}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["step", *keys])
            for part in parts:
                for step, values in part:
                    w.writerow([step, *(repr(values[k]) for k in keys)])
    return folder


def findings_by_run(report) -> dict[str, list[tuple]]:
    out = {}
    for r in report.runs:
        name = r.run.removesuffix(".csv")
        out[name] = sorted((f.kind, f.code, f.metric, f.start_step, f.peak_step, f.end_step, f.severity)
                           for f in r.findings)
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow_db")
    db = root / "mlflow.db"
    ids = write_runs(f"sqlite:///{db}")
    return db, ids, write_csvs(root / "csv")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow_server")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{root / 'backend.db'}",
         "--default-artifact-root", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("mlflow server did not start")
                time.sleep(0.5)
        ids = write_runs(url)
        yield url, ids
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_database_analyses_like_the_same_metrics_in_csv(written):
    db, _, csvs = written
    from_db = findings_by_run(api.analyze(str(db), jobs=1))
    from_csv = findings_by_run(api.analyze(str(csvs), jobs=1))
    assert set(from_db) == {"spiky", "nan-run", "resumed"}  # the parent logged nothing
    assert from_db == from_csv
    kinds = {run: {f[0] for f in fs} for run, fs in from_db.items()}
    assert "spike" in kinds["spiky"] and "nan" in kinds["nan-run"] and "resume_overlap" in kinds["resumed"]


def test_nan_and_inf_are_restored_and_steps_and_times_kept(written):
    db, _, _ = written
    frame = api.load(f"sqlite:///{db}")
    nan_run = frame.filter(frame["run"] == "nan-run")
    loss = nan_run.filter(nan_run["metric"] == "loss").sort("step")
    assert loss["value"].is_nan().sum() == 10 and loss["step"].to_list() == list(range(400))
    grad = nan_run.filter(nan_run["metric"] == "grad_norm")
    assert grad.filter(grad["step"] == 250)["value"].item() == float("inf")
    assert loss["wall_time"].min() == T0 / 1000 and loss["wall_time"].max() == (T0 + 399_000) / 1000


def test_run_names_parents_and_resume_segments_are_mlflows(written):
    from mlflow.tracking import MlflowClient

    db, ids, _ = written
    client = MlflowClient(f"sqlite:///{db}")
    ui_names = {r.info.run_id: r.info.run_name for r in client.search_runs([r.info.experiment_id for r in
                [client.get_run(ids["spiky"])]])}
    runs = {r["run"]: r for r in api.discover(str(db))}
    assert {ui_names[r["meta"]["mlflow.run_id"]] for r in runs.values()} == set(runs)
    assert all(r["meta"]["mlflow.parent_run"] == "sweep" for r in runs.values())
    assert all(r["meta"]["mlflow.experiment"] == "spikelens-bench" for r in runs.values())
    assert len(runs["resumed"]["segments"]) == 2 and len(runs["spiky"]["segments"]) == 1


def test_experiment_and_run_id_select_runs(written):
    db, ids, _ = written
    assert [r["run"] for r in api.discover(f"sqlite:///{db}?run={ids['spiky']}")] == ["spiky"]
    assert len(api.discover(f"sqlite:///{db}?experiment=spikelens-bench")) == 3
    res = run_cli("analyze", db, "--run-id", ids["resumed"], "--format", "json")
    assert res.returncode == 0, res.stderr
    assert '"run": "resumed"' in res.stdout and '"run": "spiky"' not in res.stdout
    res = run_cli("analyze", db, "--experiment", "nope")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "no experiment named nope" in res.stderr


def test_the_database_is_opened_read_only(written):
    db, _, _ = written
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    listing = sorted(p.name for p in db.parent.iterdir())
    api.analyze(str(db), jobs=1)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in db.parent.iterdir()) == listing


def test_live_server_analyses_like_the_database_and_csv(server, written):
    url, ids = server
    _, _, csvs = written
    from_server = findings_by_run(api.analyze(url, jobs=1))
    assert from_server == findings_by_run(api.analyze(str(csvs), jobs=1))
    frame = api.load(url)
    assert frame.filter(frame["run"] == "nan-run")["value"].is_nan().sum() == 10
    runs = {r["run"]: r for r in api.discover(url)}
    assert runs["resumed"]["sources"] == [f"{url}/#/experiments/{runs['resumed']['meta']['mlflow.experiment_id']}"
                                          f"/runs/{ids['resumed']}"]
    res = run_cli("analyze", url, "--experiment", "spikelens-bench", "--run-id", ids["nan-run"], "--format", "json")
    assert res.returncode == 0, res.stderr
    assert '"run": "nan-run"' in res.stdout and '"run": "resumed"' not in res.stdout


def test_bad_inputs_are_one_line_errors(tmp_path, written):
    db, _, _ = written
    port = free_port()
    for args in (("analyze", f"http://127.0.0.1:{port}"), ("analyze", f"sqlite:///{tmp_path / 'missing.db'}"),
                 ("analyze", tmp_path, "--run-id", "abc")):
        res = run_cli(*args)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    not_mlflow = tmp_path / "other.db"
    con = sqlite3.connect(not_mlflow)
    con.execute("CREATE TABLE runs (x INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="no training logs found"):
        api.load(str(not_mlflow))
    with pytest.raises(InputError, match="not an MLflow tracking database"):
        api.load(f"sqlite:///{not_mlflow}")


def test_password_in_a_database_url_is_never_shown():
    res = run_cli("analyze", "postgresql://user:s3cret@127.0.0.1:1/mlflow")
    assert res.returncode == 2 and "s3cret" not in res.stderr + res.stdout
