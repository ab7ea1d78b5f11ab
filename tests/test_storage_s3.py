"""Object storage: the project's fixtures uploaded to a real S3-compatible server (moto in
server mode on a free localhost port) analyse to the same report as the local folders, with
one LIST per prefix, no HEAD per file, and the report naming the URLs."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from spikelens import api, storage
from spikelens.errors import InputError

from conftest import FIXTURES, run_cli

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")

BUCKET = "spikelens-logs"
FOLDERS = ("resumes", "tensorboard", "mlflow", "csv")


class Requests:
    """Every request the S3 server answered: (method, path, query)."""

    def __init__(self, app):
        self.app, self.seen = app, []

    def __call__(self, environ, start_response):
        self.seen.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")))
        return self.app(environ, start_response)

    def lists(self):
        return [r for r in self.seen if r[0] == "GET" and "list-type=" in r[2]]


@pytest.fixture(scope="module")
def s3():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    requests = Requests(server._server.app)
    server._server.app = requests
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    keep = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        import boto3

        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        for folder in FOLDERS:
            for p in sorted((FIXTURES / folder).rglob("*")):
                if p.is_file():
                    client.upload_file(str(p), BUCKET, f"runs/{folder}/{p.relative_to(FIXTURES / folder).as_posix()}")
        yield requests, env
    finally:
        server.stop()
        for k, v in keep.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def normalised(report, local: Path, url: str) -> dict:
    """The JSON report with the local root written as the URL (the only thing that may differ)."""
    text = json.dumps(json.loads(_render(report)), sort_keys=True)
    return json.loads(text.replace(str(local.resolve()), url))


def _render(report) -> str:
    from spikelens.report.json_report import render_json

    return render_json(report)


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_bucket_prefix_gives_the_same_report_as_the_local_folder(s3, folder):
    requests, _ = s3
    url = f"s3://{BUCKET}/runs/{folder}"
    requests.seen.clear()
    remote = api.analyze(url, jobs=1)
    assert len(requests.lists()) == 1  # one recursive LIST for the prefix
    assert not [r for r in requests.seen if r[0] == "HEAD"]  # sizes come from the listing
    gets = [r for r in requests.seen if r[0] == "GET" and not r[2]]
    assert len(gets) == len({r[1] for r in gets})  # each file read once (one ranged read each here)
    local = api.analyze(str(FIXTURES / folder), jobs=1)
    assert [r.run for r in remote.runs] == [r.run for r in local.runs]
    assert normalised(remote, FIXTURES / folder, url) == normalised(local, FIXTURES / folder, url)
    assert all(s.startswith(url + "/") for r in remote.runs for s in r.sources)
    requests.seen.clear()
    api.discover(url + "/")  # the same prefix again, spelled with its slash: the copy is reused
    assert requests.seen == []


def test_the_cli_names_the_url_and_never_prints_credentials(s3):
    _, env = s3
    url = f"s3://{BUCKET}/runs/resumes/"
    res = run_cli("analyze", url, "--format", "json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["runs"] and all(s.startswith(f"s3://{BUCKET}/runs/resumes/") for r in report["runs"]
                                  for s in r["sources"])
    assert "/spikelens-remote-" not in res.stdout + res.stderr
    assert env["AWS_SECRET_ACCESS_KEY"] not in res.stdout + res.stderr
    res = run_cli("ls", f"s3://{BUCKET}/runs/resumes/tb_rollback/events.out.tfevents.1700000000.node-07.4101.0",
                  "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["runs"][0]["sources"] == [f"s3://{BUCKET}/runs/resumes/tb_rollback/"
                                                    "events.out.tfevents.1700000000.node-07.4101.0"]


def test_a_missing_prefix_or_bucket_is_a_one_line_error(s3):
    for url in (f"s3://{BUCKET}/no/such/prefix", "s3://no-such-bucket-here/runs"):
        res = run_cli("analyze", url)
        assert res.returncode == 2, res.stdout + res.stderr
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    with pytest.raises(InputError, match="no such file or folder"):
        api.load(f"s3://{BUCKET}/no/such/prefix")


def test_unknown_protocol_is_a_one_line_error():
    res = run_cli("analyze", "nosuchproto://bucket/runs")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_checkpoints_are_never_fetched_and_urls_hide_passwords():
    assert storage.safe_url("s3://key:secret@bucket/x") == "s3://key@bucket/x"
    assert storage.unmangle(str(Path("s3://bucket/runs"))) == "s3://bucket/runs"
    assert ".safetensors" in storage.NOT_LOGS and ".pt" in storage.NOT_LOGS
