"""`spikelens analyze` and `spikelens explain` from the command line.

End-to-end tests write llm.c stdout logs into a tmp folder with the project's own
text-log writer (fixtures/writers/textlogs.py) and run the real CLI in a subprocess;
option wiring is checked in-process against a hand-built report.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, main_in_process, run_cli, tree_hashes
from report_cases import sample_report

sys.path.insert(0, str(FIXTURES))
from writers._curves import clean_run, plant_spike  # noqa: E402
from writers.textlogs import llmc_step_line  # noqa: E402

SPIKE_AT, NAN_AT, N = 900, 1200, 1500


def _write_log(path: Path, run: dict, nan_from: int | None = None) -> None:
    lines = []
    for i, s in enumerate(run["step"]):
        loss = float("nan") if nan_from is not None and s >= nan_from else float(run["loss"][i])
        norm = float("nan") if nan_from is not None and s >= nan_from else float(run["grad_norm"][i])
        lines.append(llmc_step_line(int(s) + 1, N, loss, norm, float(run["lr"][i]), 100.0))
    path.parent.mkdir(parents=True)
    path.write_text("".join(lines))


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("logs")
    _write_log(root / "spiky" / "train.log", plant_spike(clean_run(N, seed=11), SPIKE_AT, height=3.0, recover=40))
    _write_log(root / "dead" / "train.log", clean_run(N, seed=12), nan_from=NAN_AT)
    _write_log(root / "calm" / "train.log", clean_run(N, seed=13))
    return root


@pytest.fixture(scope="module")
def analyzed(logs, tmp_path_factory):
    """One JSON run with --html and --plot, checked by several tests."""
    out = tmp_path_factory.mktemp("out")
    before = tree_hashes(logs)
    proc = run_cli("analyze", logs, "--format", "json", "--html", out / "r.html", "--plot", out / "plots")
    return proc, out, before


def _runs(report: dict) -> dict[str, dict]:
    return {Path(r["sources"][0]).parent.name: r for r in report["runs"]}


def test_json_report_on_real_layouts(analyzed):
    proc, _, _ = analyzed
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # stdout holds only the JSON
    assert report["schema"] == "spikelens.report/1" and report["command"] == "analyze"
    runs = _runs(report)
    assert set(runs) == {"spiky", "dead", "calm"}
    spikes = [f for f in runs["spiky"]["findings"] if f["kind"] == "spike"]
    assert spikes and abs(spikes[0]["peak_step"] - (SPIKE_AT + 1)) <= 2
    nans = [f for f in runs["dead"]["findings"] if f["kind"] == "nan"]
    assert nans and min(f["start_step"] for f in nans) == NAN_AT + 1
    assert not [f for f in runs["calm"]["findings"] if f["severity"] != "info"]


def test_html_and_plots_are_written_and_inputs_untouched(analyzed, logs):
    proc, out, before = analyzed
    assert proc.returncode == 0
    page = (out / "r.html").read_text()
    assert page.count('<script type="application/json" id="chart-') == 3  # one chart payload per run
    pngs = sorted((out / "plots").glob("*.png"))
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert sum("--" not in p.name for p in pngs) == 3  # one picture per run
    assert any("--spike-" in p.name for p in pngs) and any("--nan-" in p.name for p in pngs)  # one per finding
    assert tree_hashes(logs) == before
    assert f"wrote {len(pngs)} plot(s)" in proc.stderr


# The next tests run the real entry point in this process (`main_in_process`): a process
# start each is CI time; the analysis above and the tests "from a shell" run real processes.

def test_terminal_and_markdown(logs, capsys):
    code, out, err = main_in_process(capsys, "analyze", logs / "dead", logs / "spiky")
    assert code == 0, err
    assert f"NaN at step {NAN_AT + 1}" in out
    assert "spike" in out and "try" in out
    code, out, err = main_in_process(capsys, "analyze", logs / "dead", "--format", "markdown", "--no-charts")
    assert code == 0
    assert out.startswith("# spikelens analyze: 1 run — 1 with errors")
    assert "```" not in out


def test_param_reaches_the_detectors(logs, capsys):
    code, out, err = main_in_process(capsys, "analyze", logs / "spiky", "-f", "json", "--param", "spike.z_min=1e9",
                                     "--param", "spike.min_ratio=1000")
    assert code == 0, err
    kinds = [f["kind"] for r in json.loads(out)["runs"] for f in r["findings"]]
    assert "spike" not in kinds


def test_role_override_reaches_the_report(logs, capsys):
    # the run's only loss made `other`: nothing is left to check, so --allow-empty to see the report
    _, out, _ = main_in_process(capsys, "analyze", logs / "calm", "-f", "json", "--role", "train_loss=other", "-q",
                                "--allow-empty")
    report = json.loads(out)
    roles = report["runs"][0]["metrics"]
    assert roles.get("train_loss") == "other"
    name = report["runs"][0]["run"]
    assert any(w.startswith(f"{name}: no loss-like metric") for w in report["warnings"])


@pytest.mark.parametrize("args, needle", [
    (("analyze", "no/such/dir"), "no such file or folder"),
    (("analyze", ".", "--role", "loss=banana"), "unknown role 'banana'"),
    (("analyze", ".", "--role", "nonsense"), "expected TAG=ROLE"),
    (("analyze", ".", "--param", "spike.nope=1"), "has no parameter 'nope'"),
    (("analyze", ".", "--param", "wobble.x=1"), "no detector 'wobble'"),
    (("analyze", ".", "--param", "novalue"), "expected DETECTOR.NAME=VALUE"),
    (("analyze", ".", "--config", "missing.toml"), "config file not found"),
    (("explain", "wobble"), "unknown kind or cause 'wobble'"),
])
def test_user_mistakes_are_one_line_errors(args, needle, tmp_path, monkeypatch, capsys):
    """Through the real entry point `cli.main`, in process (a subprocess each is slow)."""
    from spikelens.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spikelens: error:") and needle in lines[0], err


def test_errors_from_a_shell(tmp_path):
    proc = run_cli("analyze", tmp_path / "missing")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"spikelens: error: {tmp_path / 'missing'}: no such file or folder"]
    proc = run_cli("analyze", tmp_path, "--format", "github")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "'github' is not one of" in proc.stderr


@pytest.mark.parametrize("command", ["analyze", "check"])
def test_a_reader_that_leaves_the_pipe_is_not_an_error(command, logs):
    """`spikelens analyze runs/ | head`: the report stops quietly with 141 (SIGPIPE's
    code), not 1, which `check` uses for "findings", and not a traceback."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "spikelens", command, str(logs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before it writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141
    assert "Traceback" not in err and "Broken pipe" not in err and "BrokenPipe" not in err


def test_explain(capsys):
    code, out, _ = main_in_process(capsys, "explain", "fp16_overflow")
    assert code == 0
    assert "What to try" in out and "bf16" in out


def test_explain_lists_everything_and_takes_codes():
    from spikelens import cli

    cli._register()
    listing = CliRunner().invoke(cli.app, ["explain"], env={"COLUMNS": "120"})
    assert listing.exit_code == 0
    for name in ("spike", "resume_overlap", "grad_explosion", "warmup_end"):
        assert name in listing.stdout
    code = CliRunner().invoke(cli.app, ["explain", "SL101"], env={"COLUMNS": "120"})
    assert code.exit_code == 0 and "Loss spike" in code.stdout and "SL101" in code.stdout


# ---------------------------------------------------------------- option wiring, in process

@pytest.fixture
def cli_app(monkeypatch):
    """The Typer app with api.analyze replaced by one that records its arguments."""
    from spikelens import api, cli

    cli._register()
    seen: dict = {}

    def fake_analyze(*paths, config=None, detector_params=None, progress=None, keep_frames=True,
                     executor="local", findings=None, jobs=None, spool=False):
        seen.update(paths=paths, config=config, params=detector_params, progress=progress, executor=executor,
                    findings=findings, spool=spool)
        return sample_report()

    monkeypatch.setattr(api, "analyze", fake_analyze)
    return cli.app, seen


def test_config_and_command_line_merge(cli_app, tmp_path, monkeypatch):
    app, seen = cli_app
    (tmp_path / "spikelens.toml").write_text(
        '[roles]\n"my/ce" = "loss"\n[detectors.SL101]\nrecovery_fast_steps = 100\nwindow = 40\n')
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["analyze", ".", "-f", "json", "--role", "x/gn=grad_norm",
                                   "--param", "spike.recovery_fast_steps=500", "--param", "spike.z_min=6.5"])
    assert res.exit_code == 0, res.output
    assert seen["config"].roles == {"my/ce": "loss", "x/gn": "grad_norm"}
    assert seen["params"]["SL101"] == {"recovery_fast_steps": 500, "window": 40, "z_min": 6.5}
    assert seen["progress"] is None  # stderr is not a terminal here
    assert seen["spool"] is True  # the CLI spools a big sweep's reports (pipeline/spool.py)
    assert json.loads(res.stdout)["runs"][0]["run"] == "gpt-small-3"


def test_warnings_go_to_stderr_and_quiet_silences_them(cli_app):
    app, _ = cli_app
    res = CliRunner().invoke(app, ["analyze", ".", "-f", "json"])
    assert "truncated record at byte 4120" in res.stderr and "truncated" not in res.stdout.split('"warnings"')[0]
    json.loads(res.stdout)
    quiet = CliRunner().invoke(app, ["analyze", ".", "-f", "json", "-q"])
    assert quiet.stderr == ""


def test_verbose_logs_runs_on_stderr_and_shows_info_in_full(cli_app):
    app, _ = cli_app
    res = CliRunner().invoke(app, ["analyze", ".", "-v"])
    assert "analyzed 4 run(s)" in res.stderr
    assert " INFO " in res.stdout
    assert " INFO " not in CliRunner().invoke(app, ["analyze", "."]).stdout


def test_plot_dir_that_is_a_file_is_a_usage_error(cli_app, tmp_path):
    from spikelens.errors import UsageError

    app, _ = cli_app
    blocker = tmp_path / "plots"
    blocker.write_text("x")
    res = CliRunner().invoke(app, ["analyze", ".", "--plot", str(blocker)])
    assert isinstance(res.exception, UsageError) and "cannot write plots" in str(res.exception)


def test_parse_value():
    from spikelens.cli.analyze import parse_value

    assert parse_value("500") == 500 and parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value("fast") == "fast" and parse_value('"x"') == "x"
    assert math.isinf(parse_value("inf"))
