"""Output fit for pipes and people: nothing wraps without a terminal (a run with a long name keeps
one line), `--format concise` is one parseable line per finding, and progress goes to a terminal's
stderr only (under -q too), never into a pipe."""
from __future__ import annotations

import json
import math
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import main_in_process, run_cli
from spikelens.report.concise import LINE

LONG = "a-sweep-member-with-a-very-long-descriptive-name_lr3e-4_bs512_warmup2000_seed1234_" \
       "dropout0.1_wd0.05_cosine_decay_to_10pct_run7"


def _write_run(folder: Path, *, spike_at: int | None, steps: int = 400) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder))
    for step in range(steps):
        loss = 4.0 * math.exp(-step / 150) + 1.0 + 0.01 * math.sin(step * 1.7)
        if spike_at is not None and spike_at <= step < spike_at + 4:
            loss *= 3.0
        writer.add_scalar("train/loss", loss, step)
    writer.close()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    _write_run(root / LONG, spike_at=250)
    _write_run(root / "short", spike_at=None)
    _write_run(root / "other", spike_at=120)
    return root


def test_piped_report_keeps_every_record_on_one_line(sweep):
    res = run_cli("analyze", sweep, env={"COLUMNS": ""})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert any(LONG in line for line in lines)  # the name is never folded
    verdicts = [line for line in lines if line.startswith("! ")]
    assert verdicts and all(LONG in v or ": " in v for v in verdicts)
    assert not any(line != line.rstrip() for line in lines)  # no padding to a phantom width


def test_quiet_is_one_line_per_run_listed_however_long_its_name(sweep):
    res = run_cli("analyze", sweep, "-q", env={"COLUMNS": "60"})
    lines = res.stdout.splitlines()
    listed = [line for line in lines if line.startswith(("! ", "✗ "))]
    assert len(listed) == 2, res.stdout  # the two runs with a spike
    assert any(line.startswith(f"! {LONG}: ") for line in listed)
    assert lines[-1].startswith("spikelens analyze: 3 runs")


def test_concise_lines_parse_and_match_the_json(sweep, capsys):
    # the real entry point in this process (a process start each is CI time): what is
    # checked is the lines' grammar and their match with the JSON, not the pipe
    code, concise, err = main_in_process(capsys, "analyze", sweep, "--format", "concise")
    assert code == 0, err
    data = json.loads(main_in_process(capsys, "analyze", sweep, "--format", "json")[1])
    lines = concise.splitlines()
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert len(lines) == sum(len(r["findings"]) for r in data["runs"])
    assert lines == sorted(lines, key=lambda s: (LINE.match(s)["path"], int(LINE.match(s)["step"])
                                                 if LINE.match(s)["step"] != "-" else -1, LINE.match(s)["code"]))
    spikes = [m for m in parsed if m["code"] == "SL101" and m["severity"] == "warning"]
    assert {Path(m["path"]).parent.name for m in spikes} == {LONG, "other"}
    steps = sorted(int(m["step"]) for m in spikes)  # each at the spike planted (4 steps from 120, 250)
    assert len(steps) == 2 and 120 <= steps[0] < 124 and 250 <= steps[1] < 254


def test_ls_in_a_pipe_keeps_names_whole(sweep):
    res = run_cli("ls", sweep)
    assert res.returncode == 0, res.stderr
    assert any(LONG in line for line in res.stdout.splitlines())


def _stderr_on_a_terminal(args: list[str]) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal and stdout on a pipe."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    proc = subprocess.Popen([sys.executable, "-m", "spikelens", *args], stdout=subprocess.PIPE, stderr=slave,
                            env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode()
    proc.wait(timeout=120)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("quiet", [False, True])
def test_progress_on_a_terminal_and_not_in_a_pipe(sweep, quiet):
    args = ["analyze", str(sweep), "--format", "json"] + (["-q"] if quiet else [])
    code, out, err = _stderr_on_a_terminal(args)
    err = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", err)  # the terminal's colours and cursor moves
    assert code == 0 and json.loads(out)["runs"]
    assert re.search(r"runs\s+\d+/3", err), err  # runs done of the total
    assert "points" in err and "ETA" in err
    piped = run_cli(*args)
    assert piped.stderr == ""  # nothing but warnings in a pipe, and there are none


def test_nothing_found_is_one_short_line_with_a_hint(tmp_path, capsys):
    code, _, err = main_in_process(capsys, "analyze", tmp_path)  # in process: CI time
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 200, err
    assert "no training logs found" in lines[0] and "spikelens ls --formats" in lines[0]


def test_ls_formats_lists_each_reader_once(capsys):
    data = json.loads(main_in_process(capsys, "ls", "--formats", "--format", "json")[1])
    names = [r["name"] for r in data["readers"]]
    assert len(names) == len(set(names)) and {"tensorboard", "text", "csv", "hf_trainer_state"} <= set(names)
    assert all(r["looks_for"] for r in data["readers"])
    code, _, err = main_in_process(capsys, "ls")
    assert code == 2 and "Traceback" not in err  # neither paths nor --formats: a usage error, not a traceback


def test_explain_lists_codes_beside_kinds_and_takes_any_code(capsys):
    table = main_in_process(capsys, "explain")[1]  # in process: CI time
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in table.splitlines() if line.count("│") >= 4}
    assert rows["spike"] == "SL101" and rows["nan"] == "SL201" and rows["ended_early"] == "SL306"
    assert rows["resume_overlap"] == "SL301" and rows["grad_explosion"] == ""
    assert main_in_process(capsys, "explain", "SL306")[1].startswith("Run ended early")


def test_shell_completion_completes_commands_and_options():
    env = {"_SPIKELENS_COMPLETE": "complete_bash", "COMP_WORDS": "spikelens analyze --form", "COMP_CWORD": "2"}
    assert run_cli(env=env).stdout.split() == ["--format"]
    env = {"_SPIKELENS_COMPLETE": "complete_bash", "COMP_WORDS": "spikelens sti", "COMP_CWORD": "1"}
    assert run_cli(env=env).stdout.split() == ["stitch"]
    assert "--install-completion" in run_cli("--help", env={"COLUMNS": "200"}).stdout
