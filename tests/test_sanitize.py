"""Read names cannot drive the terminal, and URLs do not show their secrets.

A run folder named with `ESC[2J` (clear screen) and an OSC 0 title, a metric named with
an OSC 8 link, a warning quoting log text with escapes: no ESC byte reaches any output
of `analyze` (terminal, markdown, JSON), `check`, `ls`. An MLflow URL with a password
and an object-storage URL with a signature: the error line names the URL without them.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from conftest import FIXTURES
from spikelens.sanitize import mask_url, mask_urls, printable

ESC_NAME = "run\x1b[2J\x1b]0;pwned\x07"
OSC_METRIC = "train/\x1b]8;;http://evil.example/\x1b\\loss\x1b]8;;\x1b\\"


def test_printable_drops_whole_sequences_and_controls():
    assert printable("a\x1b[2Jb") == "ab"
    assert printable("x\x1b]0;title\x07y") == "xy"
    assert printable("\x1b]8;;http://e/\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert printable("a\rb\x08c\x85d\x00e\x9b2Jf") == "abcdef"
    assert printable("two\nlines\tok") == "two\nlines\tok"
    assert printable("two\nlines", newlines=False) == "two lines"
    assert printable("plain ü 日本") == "plain ü 日本"


@pytest.mark.parametrize("url, shown", [
    ("http://alice:S3cretPw@host:5000", "http://alice@host:5000"),
    ("s3://bucket/x?secret=abc&region=eu", "s3://bucket/x?secret=***&region=eu"),
    ("https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F1&X-Amz-Signature=dead&X-Amz-Expires=60",
     "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Expires=60"),
    ("https://h/p?token=t&key=k&password=p&sig=s&page=2", "https://h/p?token=***&key=***&password=***&sig=***&page=2"),
    ("http://host:5000/#/experiments/1", "http://host:5000/#/experiments/1"),
])
def test_mask_url(url, shown):
    assert mask_url(url) == shown
    assert mask_urls(f"error: {url}: cannot reach it") == f"error: {shown}: cannot reach it"


def _cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spikelens", *map(str, args)], capture_output=True, cwd=cwd,
                          timeout=300)


@pytest.fixture
def hostile(tmp_path):
    """A CSV run in a folder named with escapes, one metric named with an OSC 8 link, and a
    damaged line whose text (with escapes) a warning quotes."""
    src = (FIXTURES / "check" / "nan" / "metrics.csv").read_text().splitlines()
    header = src[0].split(",")
    header[-1] = OSC_METRIC
    rows = [",".join(header), *src[1:]]
    run = tmp_path / ESC_NAME
    run.mkdir()
    (run / "metrics.csv").write_text("\n".join(rows) + "\n")
    log = tmp_path / "text\x1b[31m"
    log.mkdir()
    lines = (FIXTURES / "text" / "llmc_main" / "main.log").read_text().splitlines()
    lines.insert(40, "s:21 trl:\x1b[2J\x1b]0;owned\x07 garbage")
    (log / "main.log").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize("args", [
    ("analyze", "--no-charts"), ("analyze", "-f", "markdown"), ("analyze", "-f", "json"),
    ("check",), ("check", "-f", "json"), ("check", "-f", "markdown"), ("check", "-f", "github"), ("ls",),
])
def test_no_escape_reaches_any_output(hostile, args):
    cmd, *rest = args
    proc = _cli(cmd, hostile, *rest)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    out = proc.stdout + proc.stderr
    assert b"\x1b" not in out and b"\x07" not in out and b"\x9b" not in out
    assert b"Traceback" not in out
    text = out.decode()
    assert "run[2J" not in text and "pwned" not in text  # the whole sequence went, not just ESC
    if cmd != "ls":
        assert "train/loss" in text or "nan" in text.lower()
    if args[-1] == "json":
        json.loads(proc.stdout)


def test_no_escape_in_an_error_line(tmp_path):
    proc = _cli("analyze", tmp_path / "gone\x1b[2J\x1b]0;t\x07")
    assert proc.returncode == 2
    assert b"\x1b" not in proc.stderr and b"\x07" not in proc.stderr
    assert b"no such file" in proc.stderr


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_password_in_an_mlflow_url_is_never_printed():
    url = f"http://alice:S3cretPw@127.0.0.1:{_closed_port()}"
    proc = _cli("check", url)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "S3cretPw" not in err and "S3cretPw" not in proc.stdout.decode()
    assert "alice@127.0.0.1" in err and "Traceback" not in err


def test_an_object_storage_signature_is_never_printed():
    proc = _cli("check", "s3://bucket/x?secret=TopSecret1&X-Amz-Signature=deadbeef99")
    assert proc.returncode == 2
    both = (proc.stdout + proc.stderr).decode()
    assert "TopSecret1" not in both and "deadbeef99" not in both and "Traceback" not in both
    assert "s3://bucket/x" in both


def test_a_crash_line_quoted_in_a_finding_is_printable(tmp_path):
    """The last line of a crashed log (ended_early quotes it) with a bell and a backspace
    (terminal codes are dropped when the log is decoded): the finding's message, the
    evidence and `ls`'s metadata hold no control character."""
    lines = (FIXTURES / "text" / "llmc_main" / "main.log").read_text().splitlines()[:60]
    lines += ["Traceback (most recent call last):", '  File "train.py", line 1, in <module>',
              "RuntimeError: CUDA error: out of memory\x07\x08\x1b]0;t\x07 bye"]
    run = tmp_path / "crashed"
    run.mkdir()
    (run / "main.log").write_text("\n".join(lines) + "\n")
    for args in (("analyze", run, "-f", "json"), ("ls", run, "--format", "json")):
        proc = _cli(*args)
        assert proc.returncode in (0, 1), proc.stderr.decode()[-1000:]
        assert b"\x07" not in proc.stdout and b"\x08" not in proc.stdout and b"\x1b" not in proc.stdout
        text = proc.stdout.decode()
        assert "\\u0007" not in text and "\\u0008" not in text and "\\u001b" not in text
        if args[0] == "analyze":
            assert "CUDA error: out of memory" in text


def test_no_escape_reaches_the_html_report(hostile, tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"  # outside the logs read
    proc = _cli("analyze", hostile, "--html", out, "-q")
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    html = out.read_bytes()
    assert b"\x1b" not in html and b"\x07" not in html and b"\\u001b" not in html and b"pwned" not in html
