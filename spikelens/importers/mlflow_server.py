"""A live MLflow tracking server, read through its REST API: `http://host:5000` (every
active run), `--experiment NAME` / `--run-id ID` (carried as `?experiment=`/`?run=`), or a
link copied from the UI (`http://host:5000/#/experiments/3/runs/<id>`).

Endpoints (mlflow/server/handlers.py): `experiments/search` and `runs/search` (paged) list
the runs and their metric keys; `metrics/get-history` (paged, 25,000 points a page) gives
each metric's points, fetched four at a time in threads. Credentials come from MLflow's
own variables (`MLFLOW_TRACKING_TOKEN`, or `MLFLOW_TRACKING_USERNAME` and
`MLFLOW_TRACKING_PASSWORD`) and are never printed. Only the standard library is used.
"""
from __future__ import annotations

import base64
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Iterator
from urllib.parse import urlencode

import polars as pl

from ..errors import FormatError, InputError
from ..storage import is_server_url, pointed_uri
from .base import Importer, Table
from .mlflow_runs import POINT_SCHEMA, RunInfo, Selection, split_selection, tables_of, warn_skipped

if TYPE_CHECKING:
    from urllib.error import HTTPError

PAGE_POINTS = 25_000
PAGE_RUNS = 1_000
FETCH_THREADS = 4
TIMEOUT_S = 300
"""A page of 25,000 points takes MLflow's server seconds to gather (an offset query a page)."""


class Client:
    """The few REST calls a post-mortem needs."""

    def __init__(self, base: str):
        self.base = base.rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        elif user and password:
            self.headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def call(self, method: str, endpoint: str, body: dict | None = None, query: dict | None = None) -> dict:
        from urllib.error import HTTPError, URLError  # HTTP and TLS load when a server is asked, not
        from urllib.request import Request, urlopen  # when discovery merely passes this reader

        url = f"{self.base}/api/2.0/mlflow/{endpoint}"
        if query:
            url += "?" + urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        try:
            with urlopen(Request(url, data=data, headers=self.headers, method=method), timeout=TIMEOUT_S) as resp:
                return json.loads(resp.read())
        except HTTPError as exc:
            detail = _error_text(exc)
            if exc.code in (401, 403):
                raise InputError(self.base, f"the MLflow server refused access (HTTP {exc.code}); set "
                                            "MLFLOW_TRACKING_TOKEN or MLFLOW_TRACKING_USERNAME/PASSWORD") from exc
            if exc.code == 404 and endpoint != "runs/get":
                raise FormatError(self.base, "no MLflow REST API here (HTTP 404 on "
                                             f"/api/2.0/mlflow/{endpoint})") from exc
            raise InputError(self.base, f"MLflow server error on {endpoint} (HTTP {exc.code}{detail})") from exc
        except (URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise InputError(self.base, f"cannot reach the MLflow server ({reason})") from exc
        except json.JSONDecodeError as exc:
            raise FormatError(self.base, "the server's answer is not JSON: not an MLflow server?") from exc

    def pages(self, endpoint: str, body: dict, key: str) -> Iterator[dict]:
        token = None
        while True:
            answer = self.call("POST", endpoint, {**body, **({"page_token": token} if token else {})})
            yield from answer.get(key, [])
            token = answer.get("next_page_token")
            if not token:
                return

    def history(self, run_id: str, key: str) -> list[tuple]:
        rows: list[tuple] = []
        token = None
        while True:
            query = {"run_id": run_id, "metric_key": key, "max_results": PAGE_POINTS}
            if token:
                query["page_token"] = token
            answer = self.call("GET", "metrics/get-history", query=query)
            for m in answer.get("metrics", []):
                rows.append((run_id, key, float(m.get("value", "nan")), int(m.get("timestamp", 0)),
                             int(m.get("step", 0)), False))
            token = answer.get("next_page_token")
            if not token:
                return rows


def _error_text(exc: HTTPError) -> str:
    try:
        message = json.loads(exc.read()).get("message", "")
    except Exception:  # noqa: BLE001 - the body is only a detail for the message
        return ""
    return f": {message.splitlines()[0][:200]}" if message else ""


def list_runs(client: Client, sel: Selection) -> tuple[list[RunInfo], dict[str, list[str]], int]:
    """The selected active runs, their metric keys, and how many deleted ones were asked for."""
    experiments = {e["experiment_id"]: e.get("name") for e in
                   client.pages("experiments/search", {"max_results": PAGE_RUNS}, "experiments")}
    raw: list[dict] = []
    deleted = 0
    if sel.run_ids:
        for run_id in sel.run_ids:
            try:
                run = client.call("GET", "runs/get", query={"run_id": run_id})["run"]
            except InputError as exc:
                raise InputError(client.base, f"no run {run_id} on this MLflow server") from exc
            if run["info"].get("lifecycle_stage") == "deleted":
                deleted += 1
                continue
            raw.append(run)
    else:
        ids = [i for i, name in experiments.items() if sel.wants_experiment(i, name)]
        unknown = [e for e in sel.experiments if e not in ids and e not in {experiments[i] for i in ids}]
        if unknown:
            raise InputError(client.base, f"no experiment named {', '.join(unknown)} on this MLflow server "
                                          f"(it has: {', '.join(sorted(str(n) for n in experiments.values()))})")
        if ids:
            raw = list(client.pages("runs/search", {"experiment_ids": ids, "max_results": PAGE_RUNS}, "runs"))
    runs, keys = [], {}
    for run in raw:
        info = run.get("info", {})
        data = run.get("data", {})
        tags = {t["key"]: t.get("value") for t in data.get("tags", [])}
        run_id = info.get("run_id") or info.get("run_uuid")
        exp_id = str(info.get("experiment_id"))
        runs.append(RunInfo(run_id=run_id, name=info.get("run_name") or tags.get("mlflow.runName"),
                            experiment_id=exp_id, experiment=experiments.get(exp_id),
                            start_time=int(info.get("start_time") or 0), status=info.get("status"),
                            parent_id=tags.get("mlflow.parentRunId"),
                            params={p["key"]: p.get("value", "") for p in data.get("params", [])}))
        keys[run_id] = sorted({m["key"] for m in data.get("metrics", [])})
    return runs, keys, deleted


def read_server(uri: str) -> list[Table]:
    base, sel = split_selection(uri)
    client = Client(base)
    runs, keys, deleted = list_runs(client, sel)
    warn_skipped(base, deleted)
    jobs = [(r.run_id, k) for r in runs for k in keys.get(r.run_id, [])]
    with ThreadPoolExecutor(FETCH_THREADS) as pool:
        parts = list(pool.map(lambda job: client.history(*job), jobs))
    rows = [row for part in parts for row in part]
    points = pl.DataFrame(rows, schema=POINT_SCHEMA, orient="row")
    return tables_of(points, runs, lambda r: f"{base}/#/experiments/{r.experiment_id}/runs/{r.run_id}",
                     "mlflow-server")


class MlflowServerImporter(Importer):
    """A running MLflow tracking server, named by its http(s) URL."""

    name = "mlflow-server"
    looks_for = "MLflow tracking servers (http://host:5000)"

    def claims(self, path: Path, head: bytes) -> bool:
        uri = pointed_uri(path, head)
        return uri is not None and is_server_url(uri)

    def read(self, path: Path | str) -> list[Table]:
        uri = pointed_uri(Path(path)) or str(path)
        if not is_server_url(uri):
            raise FormatError(path, "not an MLflow server URL")
        return read_server(uri)
