"""`spikelens watch`: what it tells while logs grow is what `analyze` says of the finished
logs; each finding once; records cut by a poll wait; truncation and rotation are warnings.

Recorded runs (fixtures written by the real writers) are copied into a watched folder a
random number of bytes at a time (TFRecord records, .wandb chunks and lines cut anywhere)
and polled after every write.
"""
from __future__ import annotations

import json
import random
import shutil
import warnings
from pathlib import Path

import sys

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))

from spikelens import api  # noqa: E402
from spikelens.live.judge import PROVISIONAL_KINDS  # noqa: E402
from spikelens.live.watcher import Watcher  # noqa: E402

from conftest import FIXTURES  # noqa: E402


def key(f) -> tuple:
    step = f.start_step if f.start_step is not None else f.anchor_step
    return (f.code, f.kind, f.metric, None if f.kind in PROVISIONAL_KINDS else step)


def replay(src: Path, dest: Path, state: Path, *, chunk: int, context: int = 20_000, seed: int = 0):
    """Copy `src` (a file or folder) into `dest` a random 1..chunk bytes at a time, polling
    a watcher after each write; returns (live events, end-of-watch events, watcher)."""
    files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
    base = src.parent if src.is_file() else src
    events: list = []
    lines: list[str] = []
    w = Watcher([dest], state=state, on_event=events.append, on_warning=lines.append, context=context)
    rng = random.Random(seed)
    for f in files:
        data = f.read_bytes()
        out = dest / f.relative_to(base)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "wb") as fh:
            i = 0
            while i < len(data):
                k = rng.randint(1, chunk)
                fh.write(data[i:i + k])
                fh.flush()
                i += k
                w.poll()
    w.poll()
    live = list(events)
    end = w.finish()
    return live, end, w, lines


def settled(live: list) -> set:
    """Keys told live and not withdrawn by the last live word on them."""
    last: dict = {}
    for ev in live:
        if ev.type in ("finding", "withdrawn"):
            last[key(ev.finding)] = ev.type
    return {k for k, t in last.items() if t == "finding"}


REPLAYED = ["check/spike_fast", "check/nan", "tensorboard/restart", "resumes/csv_repeated", "resumes/tb_rollback",
            "text/nanogpt", "jsonl/detectron2", "csv/lightning", "hf/run_checkpoints", "example/gpt-small-nan"]


@pytest.mark.parametrize("name", REPLAYED)
def test_live_findings_are_analyzes_findings(tmp_path, name):
    """Told live (and not withdrawn) plus told at the end of the watch = analyze's findings
    on the finished logs; the end adds only what needs the end (never withdraws but a
    provisional divergence)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        size = sum(p.stat().st_size for p in (FIXTURES / name).rglob("*") if p.is_file())
        live, end, w, _ = replay(FIXTURES / name, tmp_path / "logs", tmp_path / "state", chunk=max(64, size // 8))
        analyzed = {key(f) for f in api.analyze(tmp_path / "logs").findings()}
    told_live = settled(live)
    at_end = {key(e.finding) for e in end if e.type == "finding"}
    withdrawn_at_end = {key(e.finding) for e in end if e.type == "withdrawn"}
    assert all(k[1] in PROVISIONAL_KINDS for k in withdrawn_at_end)
    assert (told_live - withdrawn_at_end) | at_end == analyzed
    assert not told_live & at_end
    told = [key(e.finding) for e in live + end if e.type == "finding"]
    assert len(told) - len(set(told)) <= sum(e.type == "withdrawn" for e in live)  # each told once (bar a withdrawal)
    assert w.summary.polls > 5


def test_event_findings_are_told_before_the_end(tmp_path):
    """A spike and a NaN are told while the file grows, not at the end of the watch."""
    live, end, _, _ = replay(FIXTURES / "example/gpt-small-nan", tmp_path / "logs", tmp_path / "state", chunk=30000)
    kinds = {e.finding.kind for e in live if e.type == "finding"}
    assert "nan" in kinds
    assert all(e.finding.kind not in ("nan",) for e in end)


def test_windowed_judgement_matches_the_whole_run(tmp_path):
    """With a context far shorter than the run the poll judges a trailing window only; the
    spikes and the NaN planted late in a long run are still told, and nothing else is."""
    import numpy as np

    from writers._curves import clean_run, plant_spike

    run = plant_spike(plant_spike(clean_run(n_steps=6000, seed=5), at=3000, height=3.0), at=5000, height=3.0)
    loss = run["loss"].copy()
    loss[5600] = np.nan
    src = tmp_path / "src" / "metrics.csv"
    src.parent.mkdir()
    src.write_text("step,loss,grad_norm\n" + "".join(f"{s},{v!r},{g!r}\n" for s, v, g in
                                                     zip(run["step"].tolist(), loss.tolist(), run["grad_norm"].tolist())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        live, end, w, _ = replay(src, tmp_path / "logs", tmp_path / "state", chunk=12000, context=1500)
        analyzed = {key(f) for f in api.analyze(tmp_path / "logs").findings()}
    told = settled(live)
    loss_events = {k for k in analyzed if k[1] in ("spike", "nan") and k[2] == "loss"}
    assert {k[1] for k in loss_events} == {"spike", "nan"}
    assert loss_events <= told
    assert told - {k for k in told if k[1] in PROVISIONAL_KINDS} <= analyzed
    points = next(iter(w.books.values())).points
    assert points > 3 * 1500  # the window was in use


def test_a_record_cut_by_the_poll_waits(tmp_path):
    """Half a TFRecord record is not read (and not counted as damage) until it is whole."""
    src = FIXTURES / "tensorboard/simple"
    event = next(p for p in src.iterdir() if "tfevents" in p.name)
    data = event.read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    out = logs / event.name
    lines: list[str] = []
    w = Watcher([logs], state=tmp_path / "state", on_warning=lines.append)
    cut = len(data) // 2
    out.write_bytes(data[:cut])
    w.poll()
    fol = next(iter(w.followers.values()))
    assert 0 < fol.tail.offset <= cut
    first = sum(b.points for b in w.books.values())
    with open(out, "ab") as fh:
        fh.write(data[cut:])
    w.poll()
    total = sum(b.points for b in w.books.values())
    assert fol.tail.offset == len(data)
    whole = api.load(event).height
    assert first < total == whole
    assert not any("damaged" in ln or "truncated" in ln for ln in lines)


def test_truncated_and_rotated_files_are_read_again_with_a_warning(tmp_path):
    src = (FIXTURES / "check/nan/metrics.csv").read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "metrics.csv"
    events: list = []
    lines: list[str] = []
    w = Watcher([logs], state=tmp_path / "state", on_event=events.append, on_warning=lines.append)
    log.write_bytes(src)
    w.poll()
    told = len([e for e in events if e.type == "finding"])
    assert told >= 1
    # truncated underneath: shorter than what was read
    log.write_bytes(src[: len(src) // 3])
    w.poll()
    assert any("truncated" in ln and "metrics.csv" in ln for ln in lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its last line is cut: the watch waits for it, a load warns
        assert next(iter(w.books.values())).points <= api.load(logs / "metrics.csv").height
    # rotated: moved away, a new file under the same name (a new inode)
    log.rename(tmp_path / "metrics.csv.1")
    log.write_bytes(src)
    w.poll()
    assert any("replaced" in ln for ln in lines)
    assert next(iter(w.books.values())).points == api.load(log).height
    assert len([e for e in events if e.type == "finding"]) == told  # nothing told twice


def test_restarted_watch_does_not_tell_again(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "check/nan", logs)
    state = tmp_path / "state"
    first: list = []
    Watcher([logs], state=state, on_event=first.append).poll()
    assert any(e.finding.kind == "nan" for e in first)
    ledger = json.loads((state / "state.json").read_text())
    assert ledger["schema"] == "spikelens.watch-state/1" and ledger["told"]
    again: list = []
    w = Watcher([logs], state=state, on_event=again.append)
    w.poll()
    w.finish()
    assert [e for e in again if e.type == "finding" and not e.at_end] == []
    assert sorted(p.name for p in logs.rglob("*")) == ["metrics.csv"]  # nothing written beside the logs


def test_state_inside_the_watched_folder_is_refused(tmp_path):
    from conftest import run_cli

    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "check/clean", logs)
    res = run_cli("watch", logs, "--state", logs / "state", "--for", "1s")
    assert res.returncode == 2
    assert "inside" in res.stderr and "Traceback" not in res.stderr
    assert not (logs / "state").exists()


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("10m", 600), ("1h30m", 5400), ("0.5", 0.5), ("2d", 172800)])
def test_durations(text, seconds):
    from spikelens.cli.watch import parse_duration

    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "10x", "5m-"])
def test_bad_durations(text):
    from spikelens.cli.watch import parse_duration
    from spikelens.errors import UsageError

    with pytest.raises(UsageError):
        parse_duration(text)


def test_python_api_watch(tmp_path):
    import spikelens

    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "check/nan", logs)
    seen: list = []
    summary = spikelens.watch(logs, interval=0.2, duration=0.5, state=tmp_path / "s1", on_event=seen.append)
    assert summary.exit_code == 0 and summary.stopped == "duration" and summary.polls >= 1
    assert [e.finding.code for e in seen if e.type == "finding"].count("SL201") == 1
    failed = spikelens.watch(logs, interval=0.2, duration=30, state=tmp_path / "s2", fail_on="error")
    assert failed.exit_code == 1 and failed.stopped == "fail-on" and failed.failed.finding.code == "SL201"


def test_terminal_shows_a_status_line_per_run(tmp_path):
    """With a terminal on stdout the watch draws a live table (run, last step, last value, findings)."""
    import os
    import pty
    import subprocess

    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "check/nan", logs / "a")
    shutil.copytree(FIXTURES / "check/clean", logs / "b")
    main, sub = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "spikelens", "watch", str(logs), "--interval", "0.3", "--for", "3s",
                             "--state", str(tmp_path / "state")], stdout=sub, stderr=subprocess.PIPE,
                            env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
    os.close(sub)
    chunks = []
    try:
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        proc.wait(timeout=120)
        os.close(main)
    screen = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0
    assert "last step" in screen and "findings" in screen
    assert "SL201" in screen
    assert "a" in screen and "b" in screen


def test_a_wandb_record_cut_by_the_poll_waits(tmp_path):
    """A .wandb file cut inside a record (and inside a 32 KiB block) is read up to its last
    whole record; the rest comes at the next poll, with no damage counted."""
    src = next((FIXTURES / "wandb/runs").rglob("*.wandb"))
    data = src.read_bytes()
    folder = tmp_path / "logs" / src.parent.name
    folder.mkdir(parents=True)
    out = folder / src.name
    lines: list[str] = []
    w = Watcher([tmp_path / "logs"], state=tmp_path / "state", on_warning=lines.append)
    cut = min(len(data) - 100, 32 * 1024 + 5000)
    out.write_bytes(data[:cut])
    w.poll()
    fol = next(f for f in w.followers.values() if hasattr(f, "tail"))
    assert 7 < fol.tail.offset < cut
    first = sum(b.points for b in w.books.values())
    with open(out, "ab") as fh:
        fh.write(data[cut:])
    w.poll()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = api.load(folder).height
    assert 0 < first < sum(b.points for b in w.books.values()) == whole
    assert not any("damaged" in ln or "truncated" in ln for ln in lines)


def test_lines_a_reader_refuses_are_skipped_once(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "log.jsonl"
    log.write_text('{"iteration": 1, "loss": 2.0}\n{"iteration": 2, "loss": 1.9}\n')
    lines: list[str] = []
    w = Watcher([logs], state=tmp_path / "state", on_warning=lines.append)
    w.poll()
    with open(log, "a") as fh:
        fh.write("garbage line\nnot json\n")
    w.poll()
    with open(log, "a") as fh:
        fh.write('{"iteration": 3, "loss": 1.8}\n')
    w.poll()
    assert len(lines) == 1 and str(log) in lines[0] and "skipped" in lines[0]
    assert next(iter(w.books.values())).points == 3


def test_runs_watched_together_are_linked_at_the_end(tmp_path):
    """A small level shift several runs share at one step is found by asking each run about
    that step (`link_runs`, as analyze links a sweep): the watch tells it at its end."""
    import csv

    import detector_cases as cases

    def write(path: Path, seed: int, pct: float, at: int = 3000) -> None:
        s, v = cases.clean(seed, n=6000, noise=0.005)["train/loss"]
        path.parent.mkdir(parents=True)
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["step", "train/loss"])
            w.writerows([int(a), repr(float(b))] for a, b in zip(s, v * (1 + (s >= at) * pct / 100)))

    logs = tmp_path / "logs"
    write(logs / "big" / "metrics.csv", 1, 3.0)
    write(logs / "wide" / "metrics.csv", 2, 3.0, at=3010)
    write(logs / "small" / "metrics.csv", 3, 1.0)
    events: list = []
    w = Watcher([logs], state=tmp_path / "state", on_event=events.append)
    w.poll()
    w.finish()
    told = {(e.run, *key(e.finding)) for e in events if e.type == "finding"}
    analyzed = {(r.run, *key(f)) for r in api.analyze(logs).runs for f in r.findings}
    assert told == analyzed
    assert {run for run, _, kind, *_ in told if kind == "level_shift"} == {"big", "wide", "small"}


@pytest.mark.parametrize("name", ["check/spike_fast", "example/gpt-small-nan", "resumes/tb_rollback"])
def test_live_analysis_is_analyze_run(name):
    """A poll's analysis (`analyze_live`) is `analyze_run` less the detectors told at the
    end: the same findings, causes and every other field for the rest."""
    from spikelens.config import load_config
    from spikelens.live.judge import END_KINDS, analyze_live
    from spikelens.pipeline.run import analyze_run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (run,) = api.load_runs(FIXTURES / name)
        cfg = load_config()
        full = [f.to_json() for f in analyze_run(run, cfg).findings if f.kind not in END_KINDS]
        live = [f.to_json() for f in analyze_live(run, cfg, None).findings if f.kind not in END_KINDS]
    assert live == full and full
