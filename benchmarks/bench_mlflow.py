"""Reading 10^6 metric points from an MLflow tracking database: spikelens's SQL reader
(`importers/mlflow_sql.py`, one query per table) against MLflow's own client
(`MlflowClient.get_metric_history` per run and metric, what `mlflow.search_runs` users do),
and, with --server, spikelens's REST reader against a live `mlflow server` on the same data.

The database is created by MLflow itself (schema, experiment, runs, tags through
`MlflowClient`); the 10^6 points are then inserted with sqlite3 in MLflow's own `metrics`
layout, because logging them through MLflow's store takes many minutes.

    python benchmarks/bench_mlflow.py                 # 10 runs x 4 metrics x 25,000 steps
    python benchmarks/bench_mlflow.py --steps 2500    # quick
    python benchmarks/bench_mlflow.py --server        # also the REST reader on a live server
"""
from __future__ import annotations

import argparse
import math
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METRICS = ("train/loss", "train/grad_norm", "train/lr", "eval/loss")


def make_db(path: Path, runs: int, steps: int) -> list[str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{path}")
    exp = client.create_experiment("bench")
    ids = [client.create_run(exp, run_name=f"run-{i}").info.run_id for i in range(runs)]
    con = sqlite3.connect(path)
    t0 = 1_714_550_400_000
    for run_id in ids:
        rows = ((m, 2.0 * math.exp(-s / 5000) + 0.01 * math.sin(s), t0 + s * 100, run_id, s, 0)
                for s in range(steps) for m in METRICS)
        con.executemany("INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?,?,?,?,?,?)",
                        rows)
        con.executemany("INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
                        "VALUES (?,?,?,?,?,?)", [(m, 0.0, t0 + (steps - 1) * 100, steps - 1, 0, run_id)
                                                for m in METRICS])
    con.commit()
    con.close()
    return ids


def read_sql(path: Path) -> int:
    from spikelens.importers.mlflow_sql import MlflowDatabaseImporter

    return sum(t.frame.height for t in MlflowDatabaseImporter().read(path))


def read_client(path: Path) -> int:
    """What a user of MLflow's client does: every run, every metric's full history, into a frame."""
    import polars as pl
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{path}")
    exps = [e.experiment_id for e in client.search_experiments()]
    total = 0
    for run in client.search_runs(exps, max_results=50_000):
        for key in run.data.metrics:
            hist = client.get_metric_history(run.info.run_id, key)
            frame = pl.DataFrame({"step": [m.step for m in hist], "wall_time": [m.timestamp / 1000 for m in hist],
                                  "value": [m.value for m in hist]})
            total += frame.height
    return total


def read_server(url: str) -> int:
    from spikelens.importers.mlflow_server import read_server as rest

    return sum(t.frame.height for t in rest(url))


def timed(fn, *args, repeat: int) -> tuple[float, float, int]:
    walls, cpus, n = [], [], 0
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        n = fn(*args)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), n


def start_server(db: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{db}",
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=db.parent)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/health", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("mlflow server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=25_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--server", action="store_true", help="also read through a live mlflow server")
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_ENABLE_ASYNC_LOGGING", "false")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "mlflow.db"
        t = time.perf_counter()
        make_db(db, args.runs, args.steps)
        points = args.runs * args.steps * len(METRICS)
        print(f"{points:,} points in {args.runs} runs ({db.stat().st_size / 1e6:.0f} MB), "
              f"made in {time.perf_counter() - t:.1f} s; load average {os.getloadavg()[0]:.1f}")
        print(f"{'reader':40} {'wall s':>8} {'cpu s':>8} {'points':>12} {'Mpoints/s':>10}", flush=True)

        def row(name: str, wall: float, cpu: float, n: int) -> None:
            print(f"{name:40} {wall:8.2f} {cpu:8.2f} {n:12,} {n / wall / 1e6:10.2f}", flush=True)

        row("spikelens SQL (sqlite3, one query)", *timed(read_sql, db, repeat=args.repeat))
        row("MLflow client (get_metric_history)", *timed(read_client, db, repeat=args.repeat))
        if args.server:
            proc, url = start_server(db)
            try:  # the server does the work here: cpu s is only this process's parsing
                row("spikelens REST (live mlflow server)", *timed(read_server, url, repeat=args.repeat))
            finally:
                proc.terminate()
                proc.wait(timeout=30)


if __name__ == "__main__":
    main()
