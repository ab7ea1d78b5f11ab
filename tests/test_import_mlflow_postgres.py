"""MLflow's SQL store on PostgreSQL: the same runs written by the real `mlflow` package into a
real PostgreSQL server (initdb + pg_ctl on a free localhost port, in a temporary folder)
read through the same SQL as SQLite, with psycopg, to the same findings as the CSVs."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from spikelens import api

from test_import_mlflow_db import findings_by_run, write_csvs, write_runs

pytest.importorskip("psycopg")


def pg_bin(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


def as_postgres(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the `postgres` user then."""
    if os.geteuid() != 0:
        return cmd
    return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(f"'{c}'" for c in cmd)]


@pytest.fixture(scope="module")
def postgres():
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL is not installed (.ci/run installs it)")
    root = Path(tempfile.mkdtemp(prefix="spikelens-pg-"))  # pytest's root-only tmp is closed to `postgres`
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = root / "data"
    subprocess.run(as_postgres([initdb, "-D", str(data), "-A", "trust", "-U", "postgres"]), check=True,
                   capture_output=True, timeout=120)
    subprocess.run(as_postgres([pg_ctl, "-D", str(data), "-l", str(root / "log"), "-w", "-o",
                                f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"]),
                   check=True, capture_output=True, timeout=120)
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_postgres([pg_ctl, "-D", str(data), "-m", "fast", "stop"]), capture_output=True,
                       timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def test_postgres_store_analyses_like_the_csvs(postgres, tmp_path):
    ids = write_runs(postgres)
    from_pg = findings_by_run(api.analyze(postgres, jobs=1))
    assert set(from_pg) == {"spiky", "nan-run", "resumed"}
    assert from_pg == findings_by_run(api.analyze(str(write_csvs(tmp_path / "csv")), jobs=1))
    frame = api.load(f"{postgres}?run={ids['nan-run']}")
    assert set(frame["run"].unique()) == {"nan-run"}
    assert frame["value"].is_nan().sum() == 10 and frame["value"].is_infinite().sum() == 1
    runs = {r["run"]: r for r in api.discover(postgres)}
    assert len(runs["resumed"]["segments"]) == 2 and runs["spiky"]["meta"]["mlflow.parent_run"] == "sweep"


def test_a_wrong_password_is_one_line_and_never_shown(postgres):
    from conftest import run_cli

    port = postgres.rsplit(":", 1)[1].split("/")[0]
    res = run_cli("analyze", f"postgresql://nobody:s3cret@127.0.0.1:{port}/nodb")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "s3cret" not in res.stdout + res.stderr
