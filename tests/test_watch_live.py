"""`spikelens watch` against real writers in subprocesses (TensorBoard's EventFileWriter, a
nanoGPT text log written line by line, a W&B offline run), with a webhook receiver on
127.0.0.1 and an --exec command. Every wait is bounded.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from spikelens import api
from conftest import FIXTURES

WRITERS = Path(__file__).resolve().parent / "watch_writers.py"


class Receiver:
    """A webhook receiver: every POSTed JSON body; the first `fail` requests get a 500."""

    def __init__(self, fail: int = 0):
        self.bodies: list[dict] = []
        self.requests = 0
        self.fail = fail
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests += 1
                if outer.requests <= outer.fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                outer.bodies.append(json.loads(body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict]:
        end = time.monotonic() + timeout
        while len(self.bodies) < n and time.monotonic() < end:
            time.sleep(0.05)
        return self.bodies

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def start_watch(*args, env=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "spikelens", "watch", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def wait_started(proc: subprocess.Popen, timeout: float = 120.0) -> list[str]:
    """Lines of stderr up to the watch's 'watching' line (its imports can take a while)."""
    lines: list[str] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "watching" in line:
            return lines
    proc.kill()
    pytest.fail(f"watch did not start: {''.join(lines)}")


def writer(kind: str, out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "WANDB_SILENT": "true", "WANDB_MODE": "offline", "WANDB_DISABLE_GIT": "true"}
    return subprocess.Popen([sys.executable, str(WRITERS), kind, str(out), *extra], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_fail_on_warning_stops_at_a_planted_spike(tmp_path, receiver):
    """Done when: on a TensorBoard run being written, `watch --fail-on warning --interval
    0.5` exits 1 within two polls of the spike, prints it once, and the webhook receiver
    got exactly one JSON message for it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    marks = tmp_path / "marks"
    watch = start_watch(logs, "--fail-on", "warning", "--interval", "0.5", "--webhook", receiver.url,
                        "--state", tmp_path / "state")
    wait_started(watch)
    w = writer("tb", logs / "run", "--steps", "600", "--spike", "300", "--batch", "10", "--delay", "0.1",
               "--mark", str(marks))
    try:
        out, err = watch.communicate(timeout=180)
        ended = time.time()
    finally:
        w.kill()
        w.wait(timeout=30)
        watch.kill()
    assert watch.returncode == 1, err
    spike_lines = [ln for ln in out.splitlines() if "SL101" in ln]
    assert len(spike_lines) == 1 and "step 300" in spike_lines[0]
    assert "failed on: SL101" in err
    bodies = receiver.wait_for(1, timeout=5)
    time.sleep(0.3)
    assert len(receiver.bodies) == 1
    body = bodies[0]
    assert body["code"] == "SL101" and body["kind"] == "spike" and body["peak_step"] == 300
    assert "spiked" in body["text"] and body["event"] == "finding"
    # within two polls of the spike (and the 3 points that tell it from a one-point blip)
    # reaching the disk; the rest of the margin is the load of a shared test machine
    written = float(marks.read_text().split()[1])
    assert ended - written < 2 * 0.5 + 6.0
    assert body["seen_at_step"] - 303 <= 2 * 50 + 10  # 10 steps a flush, a flush every 0.1 s


def test_text_and_wandb_runs_written_while_watched(tmp_path, receiver):
    """A spike and a NaN in a text log written line by line and in a W&B offline run: each
    told once (stdout, the webhook, the --exec command), and what was told is what
    analyze says of the finished logs; SIGTERM ends the watch with a summary, exit 0."""
    logs = tmp_path / "logs"
    logs.mkdir()
    execd = tmp_path / "exec.jsonl"
    cmd = f"{sys.executable} -c \"import os,json;open({str(execd)!r},'a').write(json.dumps(" \
          "{k: os.environ[k] for k in ('SPIKELENS_CODE','SPIKELENS_RUN','SPIKELENS_STEP','SPIKELENS_MESSAGE')})" \
          "+chr(10))\""
    watch = start_watch(logs, "--interval", "0.3", "--webhook", receiver.url, "--exec", cmd,
                        "--state", tmp_path / "state")
    wait_started(watch)
    common = ("--steps", "400", "--spike", "200", "--nan", "330", "--batch", "20", "--delay", "0.05")
    writers = [writer("text", logs / "nanogpt", *common), writer("wandb", logs / "wb", *common)]
    try:
        for w in writers:
            assert w.wait(timeout=240) == 0, w.stderr.read()
        time.sleep(2.0)  # two polls or more after the last write
        watch.send_signal(signal.SIGTERM)
        out, err = watch.communicate(timeout=120)
    finally:
        for w in writers:
            w.kill()
        watch.kill()
    assert watch.returncode == 0, err
    assert "spikelens watch:" in err and "ended: stopped" in err
    told = [ln for ln in out.splitlines() if ln.startswith("SL")]
    codes = sorted((ln.split()[0], ln.split(" run ")[1].split()[0].rstrip(":")) for ln in told)
    assert len(codes) == len(set(codes))  # each once
    analyzed = api.analyze(logs)
    want = sorted((f.code, r.run) for r in analyzed.runs for f in r.findings)
    assert codes == want
    assert {c for c, _ in codes} >= {"SL101", "SL201"} and len({r for _, r in codes}) == 2
    bodies = receiver.wait_for(len(told))
    assert sorted((b["code"], b["run"]) for b in bodies) == want
    runs_exec = [json.loads(ln) for ln in execd.read_text().splitlines()]
    assert sorted((e["SPIKELENS_CODE"], e["SPIKELENS_RUN"]) for e in runs_exec) == want
    nan = next(e for e in runs_exec if e["SPIKELENS_CODE"] == "SL201")
    assert nan["SPIKELENS_STEP"] == "330" and nan["SPIKELENS_MESSAGE"]


def test_killed_and_restarted_watch_tells_nothing_again(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "check/nan", logs)
    state = tmp_path / "state"
    first = start_watch(logs, "--interval", "0.3", "--state", state)
    wait_started(first)
    seen = ""
    end = time.monotonic() + 120
    while "SL201" not in seen and time.monotonic() < end:
        line = first.stdout.readline()
        if not line:
            break
        seen += line
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert "SL201" in seen
    second = start_watch(logs, "--interval", "0.3", "--for", "2s", "--state", state)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert "SL201" not in out
    assert "ended: --for elapsed" in err
    assert sorted(p.name for p in logs.rglob("*")) == ["metrics.csv"]


def test_webhook_retries_until_the_receiver_answers(tmp_path):
    r = Receiver(fail=2)
    try:
        from spikelens.live.alerts import Webhook
        from spikelens.live.judge import Event
        from spikelens.model.finding import Finding

        hook = Webhook(r.url, backoff=0.05)
        f = Finding(kind="nan", code="SL201", run="r", metric="loss", severity="error", message="loss is NaN",
                    start_step=5)
        t0 = time.monotonic()
        hook.send(Event("finding", "r", f, "k"))
        assert time.monotonic() - t0 < 0.05  # never blocks the watch
        hook.close(wait=10)
        assert r.requests == 3 and len(r.bodies) == 1 and hook.sent == 1
        assert r.bodies[0]["text"].startswith("spikelens: [error] SL201 nan in run r")
    finally:
        r.close()


def test_callback_stops_the_trainer_at_a_spike(tmp_path):
    """The capture callbacks run the same judge in the loop: `watch="stop"` stops a
    Lightning trainer (`trainer.should_stop`) and an HF one (`control.should_training_stop`)
    just after a planted spike; "raise" raises FindingAlert; "capture" only records."""
    from types import SimpleNamespace as NS

    sys.path.insert(0, str(WRITERS.parent))
    from watch_writers import curve

    import inspect

    from spikelens.live.judge import FindingAlert
    from spikelens.replay import callbacks
    from spikelens.replay.callbacks import hf_callback, lightning_callback

    # the factories only add the library's base class (importing Lightning or transformers
    # takes a minute on a loaded machine): the classes they build on are driven directly
    for factory in (hf_callback, lightning_callback):
        assert {"watch", "fail_on", "judge_every"} <= set(inspect.signature(factory).parameters)
    lightning_callback = callbacks._LightningCapture  # noqa: N806
    hf_callback = callbacks._HFCapture  # noqa: N806

    step, loss, _ = curve(230, 200, None)

    def lightning(cb):
        tr = NS(global_step=0, should_stop=False, optimizers=None, gradient_clip_val=None)
        for i, s in enumerate(step.tolist()):
            tr.global_step = s  # (on_train_batch_start only takes RNG states for a replay: not needed here)
            cb.on_train_batch_end(tr, None, {"loss": float(loss[i])}, {"x": i}, i)
            if tr.should_stop:
                return s
        return None

    stopped = lightning(lightning_callback(tmp_path / "cap1", watch="stop", judge_every=10, factor=1e9))
    assert stopped is not None and 203 <= stopped <= 212
    with pytest.raises(FindingAlert) as exc:
        lightning(lightning_callback(tmp_path / "cap2", watch="raise", judge_every=10, factor=1e9))
    assert exc.value.event.finding.code == "SL101"
    cb = lightning_callback(tmp_path / "cap3", watch="capture", judge_every=10, factor=1e9)
    assert lightning(cb) is None and any(e.finding.code == "SL101" for e in cb.online.events)

    hf = hf_callback(tmp_path / "cap4", watch="stop", judge_every=10, factor=1e9)
    control = NS(should_training_stop=False)
    for i, s in enumerate(step.tolist()):
        hf._in_step = True
        hf._micro, hf._losses = [{"args": [], "kwargs": {}}], [float(loss[i])]
        hf.on_step_end(args=None, state=NS(global_step=s), control=control)
        if control.should_training_stop:
            break
    assert control.should_training_stop and 203 <= s <= 212
