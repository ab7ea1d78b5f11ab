"""Where a finding goes besides the terminal: a webhook and a command. Neither ever
holds the watch up: the webhook is posted by a background thread (retried with
backoff), the command is started and not waited for (reaped at later polls).

Each gets new findings only, one message each; the outcome of a finding told before
(a spike that came back) is printed, not sent again.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from .. import diagnostics
from .judge import Event


def slack_text(ev: Event) -> str:
    f = ev.finding
    return f"spikelens: [{f.severity}] {f.code} {f.kind} in run {ev.run}: {f.message}"


def payload(ev: Event) -> dict[str, Any]:
    """The JSON a webhook receives: Slack's `text`, and the finding as the JSON report
    writes it (with `run`, `event` and `key`)."""
    return {"text": slack_text(ev), **ev.to_json()}


class Webhook:
    """POSTs each finding as JSON from a daemon thread: a slow or failing receiver costs
    retries (`retries`, backoff doubling from `backoff` seconds), never the watch."""

    def __init__(self, url: str, *, retries: int = 5, backoff: float = 0.5, timeout: float = 10.0):
        self.url = url
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.sent = 0
        self.failed = 0
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="spikelens-webhook", daemon=True)
        self._thread.start()

    def send(self, ev: Event) -> None:
        self._queue.put(payload(ev))

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                self._queue.task_done()
                return
            self._post(body)
            self._queue.task_done()

    def _post(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        delay = self.backoff
        last = ""
        for attempt in range(self.retries):
            req = urllib.request.Request(self.url, data=data, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "User-Agent": "spikelens-watch"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the user's URL
                    resp.read()
                self.sent += 1
                return
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    break  # the receiver refuses this message: sending it again will not help
            except (urllib.error.URLError, OSError) as exc:
                last = str(getattr(exc, "reason", exc))
            if attempt + 1 < self.retries:
                time.sleep(delay)
                delay *= 2
        self.failed += 1
        diagnostics.warn(f"webhook {self.url}: a finding could not be delivered ({last})")

    def close(self, wait: float = 5.0) -> None:
        """Let the queue drain for at most `wait` seconds (the last findings of a watch
        that ends are still sent), then stop the thread."""
        self._queue.put(None)
        self._thread.join(wait)


class ExecHook:
    """Runs a shell command per finding with the finding in its environment:
    SPIKELENS_CODE, SPIKELENS_KIND, SPIKELENS_SEVERITY, SPIKELENS_RUN, SPIKELENS_METRIC,
    SPIKELENS_STEP, SPIKELENS_MESSAGE and SPIKELENS_FINDING_JSON. Started, not waited for."""

    def __init__(self, command: str):
        self.command = command
        self.running: list[subprocess.Popen] = []
        self.started = 0

    def send(self, ev: Event) -> None:
        f = ev.finding
        env = {**os.environ,
               "SPIKELENS_CODE": f.code, "SPIKELENS_KIND": f.kind, "SPIKELENS_SEVERITY": f.severity,
               "SPIKELENS_RUN": ev.run, "SPIKELENS_METRIC": f.metric or "",
               "SPIKELENS_STEP": "" if f.anchor_step is None else str(f.anchor_step),
               "SPIKELENS_MESSAGE": f.message, "SPIKELENS_FINDING_JSON": json.dumps(ev.to_json())}
        try:
            self.running.append(subprocess.Popen(self.command, shell=True, env=env,  # noqa: S602 - the user's command
                                                 stdin=subprocess.DEVNULL))
            self.started += 1
        except OSError as exc:
            diagnostics.warn(f"--exec {self.command!r} could not be started: {exc}")
        self.reap()

    def reap(self) -> None:
        still = []
        for p in self.running:
            code = p.poll()
            if code is None:
                still.append(p)
            elif code != 0:
                diagnostics.warn(f"--exec {self.command!r} exited with {code}")
        self.running = still

    def close(self, wait: float = 5.0) -> None:
        """Give running commands up to `wait` seconds to finish; they are left running after."""
        end = time.monotonic() + wait
        while self.running and time.monotonic() < end:
            self.reap()
            time.sleep(0.05)
