"""Object storage: the project's fixtures uploaded to a real S3-compatible server (moto in
server mode on a free localhost port) analyse to the same report as the local folders, with
one LIST per prefix, no HEAD per file, and the report naming the URLs. A sweep that writes
a findings dataset keeps its copy in the cache folder and fetches only changed objects."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from spikelens import api, storage
from spikelens.discover import source_groups
from spikelens.errors import InputError
from spikelens.pipeline import incremental

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


# ------------------------------------------------------------------ kept copies (--findings)

KEPT = "kept/sweep"  # this section's own keys: the fixtures under runs/ stay as they are
KEPT_RUNS = ("run_a", "run_b", "run_c", "run_d")


def _csv(run: dict) -> bytes:
    lines = ["step,loss,grad_norm,lr"]
    cols = zip(run["step"], run["loss"], run["grad_norm"], run["lr"])
    lines += [f"{int(s)},{a:.6f},{b:.6f},{c:.8f}" for s, a, b, c in cols]
    return ("\n".join(lines) + "\n").encode()


def _curves():
    sys.path.insert(0, str(FIXTURES))
    from writers._curves import clean_run, plant_spike

    return clean_run, plant_spike


def _sweep(requests: Requests, url: str, *extra) -> tuple[dict, list[str], int]:
    """One `spikelens analyze URL --format json` process: its report, the object bodies it
    GET (paths, sorted) and its LIST requests."""
    requests.seen.clear()
    res = run_cli("analyze", url, "--format", "json", *extra)
    assert res.returncode == 0, res.stderr
    gets = sorted(r[1] for r in requests.seen if r[0] == "GET" and not r[2])
    assert not [r for r in requests.seen if r[0] == "HEAD"]
    return json.loads(res.stdout), gets, len(requests.lists())


def test_a_sweep_with_findings_fetches_only_new_or_changed_objects(s3, tmp_path, monkeypatch):
    import boto3

    requests, _ = s3
    clean_run, plant_spike = _curves()
    client = boto3.client("s3")
    for i, name in enumerate(KEPT_RUNS):
        client.put_object(Bucket=BUCKET, Key=f"{KEPT}/{name}/metrics.csv", Body=_csv(clean_run(1500, seed=i)))
    cache = tmp_path / "cache"
    monkeypatch.setenv(storage.CACHE_ENV, str(cache))
    url, data = f"s3://{BUCKET}/{KEPT}/", tmp_path / "fleet.parquet"
    body = [f"/{BUCKET}/{KEPT}/{name}/metrics.csv" for name in KEPT_RUNS]

    first, gets, lists = _sweep(requests, url, "--findings", data)
    assert (gets, lists) == (body, 1)
    assert sorted(r["run"] for r in first["runs"]) == list(KEPT_RUNS)
    assert all(s.startswith(url) for r in first["runs"] for s in r["sources"])  # named by URL, not the cache
    [copy] = (cache / "objects").iterdir()
    assert sorted(p.name for p in (copy / "sweep").iterdir()) == list(KEPT_RUNS)

    second, gets, lists = _sweep(requests, url, "--findings", data)
    assert (gets, lists) == ([], 1)  # the listing's ETags match the manifest: nothing fetched
    assert second == first

    changed = plant_spike(clean_run(1500, seed=1), 300, height=4.0)
    client.put_object(Bucket=BUCKET, Key=f"{KEPT}/run_b/metrics.csv", Body=_csv(changed))
    client.delete_object(Bucket=BUCKET, Key=f"{KEPT}/run_d/metrics.csv")
    third, gets, lists = _sweep(requests, url, "--findings", data)
    assert (gets, lists) == ([body[1]], 1)
    runs = {r["run"]: r for r in third["runs"]}
    assert sorted(runs) == ["run_a", "run_b", "run_c"]
    peaks = [f.get("peak_step") for f in runs["run_b"]["findings"]]
    assert 300 in peaks
    assert 300 not in [f.get("peak_step") for r in first["runs"] if r["run"] == "run_b" for f in r["findings"]]
    assert not (copy / "sweep" / "run_d").exists()
    full, _, _ = _sweep(requests, url)  # a temporary copy, everything read: the same report
    assert full == third

    # what the manifest does not vouch for is fetched again or deleted: a file cut short,
    # leftovers of a killed process (a partial download, a file of a run since deleted)
    (copy / "sweep" / "run_c" / "metrics.csv").write_bytes(b"step,loss\n")
    (copy / ".partial").mkdir(exist_ok=True)
    (copy / ".partial" / "0").write_bytes(b"half")
    (copy / "sweep" / "run_x").mkdir()
    (copy / "sweep" / "run_x" / "metrics.csv").write_bytes(_csv(clean_run(500, seed=7)))
    fourth, gets, _ = _sweep(requests, url, "--findings", data)
    assert gets == [body[2]] and fourth == third
    assert not (copy / ".partial").exists() and not (copy / "sweep" / "run_x").exists()

    # in this process too: files are fingerprinted by the ETag listed, not read
    requests.seen.clear()
    with storage.kept_copies():
        prints = [incremental.fingerprint(g) for g in source_groups([Path(url)])]
    assert len(prints) == 3 and all('"ETag:' in p for p in prints)
    assert [r for r in requests.seen if r[0] == "GET" and not r[2]] == []


def test_without_findings_nothing_is_kept(s3, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(storage.CACHE_ENV, str(cache))
    report, gets, _ = _sweep(s3[0], f"s3://{BUCKET}/runs/csv")
    assert report["runs"] and gets
    assert not cache.exists()


def test_an_unwritable_cache_is_a_one_line_error(s3, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    res = run_cli("analyze", f"s3://{BUCKET}/runs/csv", "--findings", tmp_path / "f.parquet",
                  env={storage.CACHE_ENV: str(blocker)})
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and storage.CACHE_ENV in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "f.parquet").exists()


def test_missing_credentials_are_a_one_line_error(s3, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL=s3[1]["AWS_ENDPOINT_URL"], AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none"))
    res = subprocess.run([sys.executable, "-m", "spikelens", "analyze", f"s3://{BUCKET}/runs/csv"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert f"s3://{BUCKET}/runs/csv" in res.stderr and "cannot list" in res.stderr


def test_a_url_root_keys_the_settings_as_written_wherever_the_sweep_starts(tmp_path, monkeypatch):
    from spikelens.config import Config

    keys = []
    for cwd in (tmp_path, tmp_path.parent):
        monkeypatch.chdir(cwd)
        keys.append(incremental.settings(Config(), None, [Path(f"s3://{BUCKET}/runs")]))
    assert keys[0] == keys[1]
    local = [incremental.settings(Config(), None, [Path("runs")]) for _ in (0,)]
    monkeypatch.chdir(tmp_path)
    assert incremental.settings(Config(), None, [Path("runs")]) != local[0]  # a relative path is resolved


def test_a_cache_inside_a_local_folder_analysed_beside_the_bucket_is_refused(s3, tmp_path):
    local = tmp_path / "logs"
    local.mkdir()
    res = run_cli("analyze", local, f"s3://{BUCKET}/runs/csv", "--findings", tmp_path / "f.parquet",
                  env={storage.CACHE_ENV: str(local / "cache")})
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "a folder being analysed" in res.stderr
    assert not (local / "cache").exists() and not (tmp_path / "f.parquet").exists()
