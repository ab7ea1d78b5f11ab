"""Requests and bytes for `spikelens analyze s3://bucket/prefix/` over a folder of 100 runs,
against a local S3-compatible server (moto in server mode) that counts what it is asked.

Each run is a TensorBoard event file (written by TensorBoard's writer) beside a checkpoint
(`model.pt`) and a small `hparams.yaml`, as a training job leaves them. Printed: LIST, HEAD
and GET requests, bytes asked for (from the GETs' Range headers) against the bytes of log
files and of the whole prefix, and the wall time of listing + copying, and of the whole analysis.
Then the same prefix swept with a findings dataset three times (first sweep; again, nothing
changed; again after one run's event file was overwritten): the copy kept in the cache
folder is brought up to date, so a re-run makes one LIST and fetches only changed objects.

    python benchmarks/bench_s3.py                   # 100 runs x 4,000 points
    python benchmarks/bench_s3.py --runs 20 --points 1000
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _bench  # noqa: E402

BUCKET = "spikelens-bench"
CHECKPOINT_BYTES = 2 << 20


class Counter:
    def __init__(self, app):
        self.app, self.requests, self.asked = app, [], 0

    def __call__(self, environ, start_response):
        method, query = environ["REQUEST_METHOD"], environ.get("QUERY_STRING", "")
        kind = "LIST" if method == "GET" and "list-type=" in query else method
        self.requests.append(kind)
        m = re.match(r"bytes=(\d+)-(\d*)", environ.get("HTTP_RANGE", ""))
        if kind == "GET" and m:
            self.asked += (int(m.group(2)) + 1 if m.group(2) else 0) - int(m.group(1))
        return self.app(environ, start_response)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--points", type=int, default=4_000)
    args = ap.parse_args()
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    counter = Counter(server._server.app)
    server._server.app = counter
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    try:
        import boto3

        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        log_bytes = all_bytes = 0
        with _bench.scratch("s3") as tmp:
            for i in range(args.runs):
                folder = tmp / "sweep" / f"run_{i:03d}"
                event = _bench.write_event_file(folder, args.points, seed=i)
                (folder / "model.pt").write_bytes(os.urandom(CHECKPOINT_BYTES))
                (folder / "hparams.yaml").write_text(f"lr: 0.001\nseed: {i}\n")
                log_bytes += event.stat().st_size
                for p in folder.iterdir():
                    all_bytes += p.stat().st_size
                    client.upload_file(str(p), BUCKET, f"sweep/{folder.name}/{p.name}")
                if i == 0:
                    changed_key = f"sweep/{folder.name}/{event.name}"
            replacement = _bench.write_event_file(tmp / "changed", args.points, seed=args.runs)
            changed_bytes = replacement.read_bytes()
        counter.requests.clear()
        from spikelens import api, storage

        url = f"s3://{BUCKET}/sweep/"
        t = time.perf_counter()
        storage.localize(url)  # list + copy (analyze below reuses the copy)
        copy = time.perf_counter() - t
        report = api.analyze(url, jobs=1)
        wall = time.perf_counter() - t
        counts = {k: counter.requests.count(k) for k in ("LIST", "HEAD", "GET")}
        print(f"{args.runs} runs, {len(report.runs)} analysed; load average {os.getloadavg()[0]:.1f}")
        print(f"requests: {counts['LIST']} LIST, {counts['HEAD']} HEAD, {counts['GET']} GET "
              f"({len(counter.requests)} in all)")
        print(f"bytes asked for: {counter.asked:,} (log files {log_bytes:,}; whole prefix {all_bytes:,}, "
              f"checkpoints never fetched)")
        print(f"analyze {url}: {wall:.2f} s wall, of which listing and copying {copy:.2f} s")
        with _bench.scratch("s3-kept") as kept:
            os.environ[storage.CACHE_ENV] = str(kept / "cache")
            for label in ("first", "again, nothing changed", "again, one run changed"):
                if label.endswith("one run changed"):
                    client.put_object(Bucket=BUCKET, Key=changed_key, Body=changed_bytes)
                counter.requests.clear()
                counter.asked = 0
                t = time.perf_counter()
                api.analyze(url, jobs=1, keep_frames=False, findings=kept / "fleet.parquet")
                wall = time.perf_counter() - t
                counts = {k: counter.requests.count(k) for k in ("LIST", "HEAD", "GET")}
                print(f"--findings sweep ({label}): {counts['LIST']} LIST, {counts['HEAD']} HEAD, "
                      f"{counts['GET']} GET, {counter.asked:,} bytes asked for, {wall:.2f} s wall")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
