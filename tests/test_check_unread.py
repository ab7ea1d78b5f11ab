"""A found log that gave no points fails `check` (exit 2, one line naming each log and
why), even beside a good run: a crashed job must not turn CI green. `analyze` keeps them
as warnings; a text log with a NUL tail (what a crash leaves) is read up to the tail and
named in a warning.

The good run is the project's `fixtures/check/clean` CSV; the broken files are written
here as a crashed job leaves them (the llm.c log is the fixture's own head).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, main_in_process

# no_workers: the four-run sweep is analysed in this process, not in spawned workers (CI time)
pytestmark = pytest.mark.usefixtures("in_empty_folder", "no_workers")


run = main_in_process


@pytest.fixture
def sweep(tmp_path) -> Path:
    root = tmp_path / "runs"
    (root / "good").mkdir(parents=True)
    shutil.copy(FIXTURES / "check" / "clean" / "metrics.csv", root / "good" / "metrics.csv")
    (root / "crashed").mkdir()
    head = (FIXTURES / "text" / "llmc_main" / "main.log").read_bytes()[:3000]
    (root / "crashed" / "main.log").write_bytes(head + b"\x00" * 4000)
    (root / "cut").mkdir()
    (root / "cut" / "trainer_state.json").write_text('{"log_history": [{"step": 1, "loss": 2.')
    (root / "header").mkdir()
    (root / "header" / "metrics.csv").write_text("step,train/loss\n")
    return root


def test_check_fails_on_every_log_it_could_not_read(capsys, sweep):
    code, out, err = run(capsys, "check", sweep)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert "2 log(s) found but not read" in line
    assert "header/metrics.csv: header only" in line
    assert "cut/trainer_state.json: damaged or truncated JSON" in line
    assert "good" not in line and "Traceback" not in err


def test_analyze_reads_what_it_can_and_warns(capsys, sweep):
    code, out, err = run(capsys, "analyze", sweep, "--format", "json")
    assert code in (0, 1)
    report = json.loads(out)
    runs = {r["run"]: r for r in report["runs"]}
    assert "good" in runs and "crashed" in runs  # the NUL-tailed log is read up to its tail
    assert runs["crashed"]["points"] > 0
    warnings = report["warnings"]
    assert any("crashed/main.log" in w and "4000 NUL byte(s)" in w for w in warnings), warnings
    assert sum("nothing was read from it" in w for w in warnings) == 2, warnings


def test_allow_empty_judges_what_was_read(capsys, sweep):
    code, out, _ = run(capsys, "check", sweep, "--allow-empty", "--format", "json")
    assert code in (0, 1)
    assert {r["run"] for r in json.loads(out)["runs"]} >= {"good", "crashed"}


def test_a_clean_sweep_still_passes(capsys, sweep):
    for name in ("cut", "header"):
        shutil.rmtree(sweep / name)
    (sweep / "crashed" / "main.log").unlink()
    assert run(capsys, "check", sweep, "-q")[0] == 0


def test_an_empty_launch_beside_data_is_no_failure(capsys, tmp_path):
    """A launch that logged nothing, in a run that has data, is shown in the timeline."""
    src = FIXTURES / "empty_launches"
    case = next(p for p in sorted(src.iterdir()) if p.is_dir())
    shutil.copytree(case, tmp_path / case.name)
    code, out, err = run(capsys, "check", tmp_path / case.name, "--format", "json")
    assert code in (0, 1), err
    assert "not read" not in err


def test_a_log_that_crashed_before_its_first_step_is_named(capsys, sweep):
    """Its readable lines match no reader: without the NUL tail it is any text file, with it
    it is a crashed job's log, and check must not pass over it."""
    for name in ("cut", "header"):
        shutil.rmtree(sweep / name)
    (sweep / "crashed" / "main.log").write_bytes(b"using device cuda\nloading shards\n" + b"\x00" * 3000)
    code, _, err = run(capsys, "check", sweep)
    assert code == 2
    assert "crashed/main.log: a text log with NUL bytes" in err and len(err.strip().splitlines()) == 1
    (sweep / "crashed" / "main.log").write_bytes(b"\x00" * 8192)  # a log that got no byte before the crash
    code, _, err = run(capsys, "check", sweep)
    assert code == 2 and "crashed/main.log: a text log with NUL bytes" in err
    (sweep / "crashed" / "main.log").write_bytes(b"using device cuda\nloading shards\n")  # notes, no crash
    assert run(capsys, "check", sweep, "-q")[0] == 0
