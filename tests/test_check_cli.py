"""`spikelens check` end to end on the runs of `fixtures/check` (written by
`fixtures/writers/check.py`): exit codes, config precedence, baseline round trip, and
every output read back by a parser (JSON schema, XML, regex)."""
from __future__ import annotations

import json
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest

from conftest import FIXTURES, run_cli, tree_hashes
from spikelens import cli

sys.path.insert(0, str(FIXTURES))
from writers import check as runs_writer  # noqa: E402

RUNS = FIXTURES / "check"
SCHEMA = json.loads(resources.files("spikelens.report").joinpath("schema.json").read_text(encoding="utf-8"))
GITHUB_LINE = re.compile(r"^::(?P<level>error|warning|notice) (?:file=(?P<file>[^,:]+),)?title=(?P<title>[^,:]+)"
                         r"::(?P<message>[^\r\n]+)$")


def check(capsys, *args, cwd=None, monkeypatch=None) -> tuple[int, str, str]:
    """Run the CLI in this process (fast); returns exit code, stdout, stderr."""
    if cwd is not None:
        monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def check_json(capsys, *args, **kw) -> tuple[int, dict]:
    code, out, err = check(capsys, *args, "--format", "json", **kw)
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    return code, data


@pytest.fixture(autouse=True)
def no_config_from_the_repo(tmp_path, monkeypatch, no_workers):
    """Run from an empty folder so the project's own pyproject.toml plays no part; the five
    runs are checked in this process, not in spawned workers (conftest.no_workers)."""
    monkeypatch.chdir(tmp_path)


# ---------------------------------------------------------------- exit codes

@pytest.mark.parametrize("run, code", [("clean", 0), ("spike_fast", 1), ("spike_none", 1), ("nan", 1)])
def test_default_policy_exit_codes(capsys, run, code):
    got, data = check_json(capsys, RUNS / run)
    assert got == code == data["check"]["exit_code"]
    assert data["check"]["passed"] is (code == 0)
    assert data["check"]["failed"] == sum(f["gate"]["fails"] for r in data["runs"] for f in r["findings"])


def test_fail_on_error_lets_warnings_pass_but_not_nan_or_stuck_spikes(capsys):
    code, data = check_json(capsys, RUNS, "--fail-on", "error")
    failing = {r["run"] for r in data["check"]["runs"] if not r["passed"]}
    assert code == 1 and failing == {"nan", "spike_none"}


def test_exit_zero_reports_but_passes(capsys):
    code, data = check_json(capsys, RUNS / "nan", "--exit-zero")
    assert code == 0 and data["check"]["exit_code"] == 0
    assert data["check"]["passed"] is False and data["check"]["failed"] >= 1


def test_max_fast_spikes_option(capsys):
    assert check(capsys, RUNS / "spikes_fast2", "--max-fast-spikes", "1", "-q")[0] == 1
    code, data = check_json(capsys, RUNS / "spikes_fast2", "--max-fast-spikes", "2")
    assert code == 0 and data["check"]["counts"]["allowed"] == len(runs_writer.TWO_FAST_SPIKE_STEPS)


def test_select_and_ignore_options(capsys):
    code, data = check_json(capsys, RUNS, "--select", "nan")
    assert code == 1 and {f["kind"] for r in data["runs"] for f in r["findings"]} == {"nan"}
    code, data = check_json(capsys, RUNS, "--ignore", "SL1,nan")
    assert code == 0 and data["check"]["filtered_out"] > 0
    assert data["check"]["policy"]["ignore"] == ["SL1", "nan"]


@pytest.mark.parametrize("args, problem", [
    (["missing-folder"], "no such file or folder"),
    ([RUNS / "clean", "--fail-on", "fatal"], "fatal"),
    ([RUNS / "clean", "--select", "spikes"], "unknown selector 'spikes'"),
    ([RUNS / "clean", "--baseline", "nope.json"], "baseline file not found"),
    ([RUNS / "clean", "--update-baseline"], "--update-baseline needs a file"),
    ([RUNS / "clean", "--fail-on-kind", "spike"], "expected KIND=SEVERITY"),
    ([RUNS / "clean", "--max-fast-spikes", "-1"], "--max-fast-spikes"),
])
def test_usage_and_input_errors_exit_2_with_one_line(capsys, args, problem):
    code, out, err = check(capsys, *args)
    assert code == 2 and out == ""
    assert problem in err and "Traceback" not in err
    said = [line for line in err.splitlines() if line.strip() and not line.startswith(("Usage:", "Try "))]
    assert len(said) == 1, err  # one error line (click adds its usage hint before it)


def test_errors_in_a_real_process(tmp_path):
    res = run_cli("check", tmp_path / "absent", cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().count("\n") == 0 and "absent: no such file or folder" in res.stderr
    res = run_cli("check", RUNS / "spike_none", "--format", "github", cwd=tmp_path)
    assert res.returncode == 1 and res.stdout.startswith("::error ")
    assert "Traceback" not in res.stderr


def test_bad_config_file_exits_2(capsys, tmp_path, monkeypatch):
    (tmp_path / "spikelens.toml").write_text('[check]\nfail-on = "loud"\n')
    code, out, err = check(capsys, RUNS / "clean", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 2 and "spikelens.toml" in err and "fail-on" in err


# ---------------------------------------------------------------- precedence

def test_config_precedence_option_over_file_over_default(capsys, tmp_path, monkeypatch):
    run = RUNS / "spike_fast"  # one warning-level fast spike
    code, data = check_json(capsys, run)
    assert code == 1 and data["check"]["policy"]["origins"]["fail_on"] == "default"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.spikelens.check]\nfail-on = "error"\n')
    code, data = check_json(capsys, run, cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 0 and data["check"]["policy"]["origins"]["fail_on"] == "file"
    code, data = check_json(capsys, run, "--fail-on", "warning")
    assert code == 1 and data["check"]["policy"]["origins"]["fail_on"] == "option"


def test_explicit_config_file_and_fail_on_kind(capsys, tmp_path):
    cfg = tmp_path / "ci.toml"
    cfg.write_text('[tool.spikelens.check]\nmax-fast-spikes = 2\nfail-on-kind = { spike = "info" }\n')
    code, data = check_json(capsys, RUNS / "spikes_fast2", "--config", cfg)
    assert code == 0 and data["check"]["counts"]["allowed"] == 2  # the allowance still applies
    code, data = check_json(capsys, RUNS / "spike_none", "--config", cfg, "--fail-on-kind", "spike=error",
                            "--ignore", "plateau")
    assert data["check"]["policy"]["fail_on_kind"] == {"spike": "error"}
    assert data["check"]["policy"]["origins"]["fail_on_kind"] == "option+file"
    assert data["check"]["policy"]["max_fast_spikes"] == 2 and code == 1


# ---------------------------------------------------------------- baseline

def test_baseline_round_trip(capsys, tmp_path):
    logs = tmp_path / "logs" / "r"
    logs.parent.mkdir()
    shutil.copytree(RUNS / "spike_fast", logs)
    base = tmp_path / "ci" / "baseline.json"
    code, data = check_json(capsys, logs.parent, "--baseline", base, "--update-baseline")
    assert code == 0 and base.is_file()
    saved = json.loads(base.read_text())
    assert saved["schema"] == "spikelens.baseline/1"
    assert [(e["run"], e["kind"]) for e in saved["findings"]] == [("r", "spike")]
    assert data["check"]["counts"]["baselined"] == 1
    # same logs against the baseline: known findings pass
    code, data = check_json(capsys, logs.parent, "--baseline", base)
    assert code == 0 and data["check"]["baseline"]["matched"] == 1
    # the run goes on and turns NaN: only the new finding fails
    curves = runs_writer.curves("spike_fast")
    nan_from = int(curves["step"][-100])
    curves["loss"][curves["step"] >= nan_from] = float("nan")
    runs_writer._write(logs / "metrics.csv", curves)
    code, data = check_json(capsys, logs.parent, "--baseline", base)
    gates = [(f["kind"], f["gate"]["status"]) for r in data["runs"] for f in r["findings"]]
    assert code == 1 and ("spike", "baselined") in gates and ("nan", "fail") in gates
    assert data["check"]["failed"] == 1


def test_baseline_from_config_file(capsys, tmp_path, monkeypatch):
    (tmp_path / "spikelens.toml").write_text('[check]\nbaseline = "known.json"\n')
    code, out, err = check(capsys, RUNS / "spike_fast", "--update-baseline", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 0 and (tmp_path / "known.json").is_file()
    assert check(capsys, RUNS / "spike_fast")[0] == 0


# ---------------------------------------------------------------- outputs

def test_json_report_follows_the_schema_and_schema_can_fail(capsys):
    code, data = check_json(capsys, RUNS)
    assert data["schema"] == "spikelens.report/1" and data["command"] == "check"
    assert {r["run"] for r in data["runs"]} == set(runs_writer.RUNS)
    bad = json.loads(json.dumps(data))
    bad["runs"][0]["findings"] = [{**f, "severity": "fatal"} for r in data["runs"] for f in r["findings"]][:1]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
    del bad["runs"][0]["findings"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


def test_analyze_json_follows_the_same_schema(capsys):
    with pytest.raises(SystemExit):
        cli.main(["analyze", str(RUNS / "nan"), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    assert "check" not in data


def test_github_annotations(capsys, tmp_path, monkeypatch):
    shutil.copytree(RUNS, tmp_path / "runs")
    code, out, err = check(capsys, "runs", "--format", "github", cwd=tmp_path, monkeypatch=monkeypatch)
    _, data = check_json(capsys, "runs")
    lines = out.splitlines()
    assert code == 1 and lines
    parsed = [GITHUB_LINE.match(line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed) if not m]
    errors = [m for m in parsed if m["level"] == "error"]
    assert len(errors) == data["check"]["failed"]
    sources = {r["run"]: r["sources"][0] for r in data["runs"]}
    for m in errors:
        run = m["message"].split(":", 1)[0].removeprefix("run ")
        assert m["file"] == sources[run] == f"runs/{run}/metrics.csv"
    assert "check failed" in err


def test_junit_xml(capsys, tmp_path):
    report_file = tmp_path / "out" / "check.xml"
    code, data = check_json(capsys, RUNS, "--junit", report_file)
    root = ET.parse(report_file).getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert root.tag == "testsuites" and int(suite.get("tests")) == len(data["runs"]) == len(cases)
    failing_runs = {r["run"] for r in data["check"]["runs"] if not r["passed"]}
    assert int(suite.get("failures")) == int(root.get("failures")) == len(failing_runs)
    for case, run in zip(cases, data["runs"]):
        assert case.get("name") == run["run"] and case.get("file") == run["sources"][0]
        failure = case.find("failure")
        assert (failure is not None) == (run["run"] in failing_runs)
        for f in run["findings"]:
            if f["gate"]["fails"]:
                assert f["message"] in failure.text and f["code"] in failure.get("type")
            else:
                assert f["message"] in case.find("system-out").text


def test_markdown_format_and_summary_file(capsys, tmp_path):
    code, out, err = check(capsys, RUNS / "nan", "--format", "markdown", "--no-charts")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("## ❌ spikelens check failed")
    rows = [line for line in lines if re.match(r"^\| nan \| SL\d{3} \|", line)]
    assert rows and all(line.count(" | ") == 6 for line in rows)
    summary = tmp_path / "step_summary.md"
    summary.write_text("# earlier step\n")
    code, out, err = check(capsys, RUNS / "clean", "--summary", summary, "-q")
    text = summary.read_text()
    assert code == 0 and text.startswith("# earlier step\n")
    assert "## ✅ spikelens check passed" in text


def test_rich_output_names_the_failing_findings(capsys):
    code, out, err = check(capsys, RUNS / "spike_none", "--no-charts")
    assert code == 1
    assert "check failed: 1 finding" in out and "SL101 spike" in out


def test_input_folders_are_never_written(capsys, tmp_path):
    before = tree_hashes(RUNS)
    check(capsys, RUNS, "--junit", tmp_path / "j.xml", "--summary", tmp_path / "s.md",
          "--baseline", tmp_path / "b.json", "--update-baseline", "-q")
    check(capsys, RUNS, "--baseline", tmp_path / "b.json", "-q")
    assert tree_hashes(RUNS) == before


def test_stitch_checks_the_paths_as_one_run(capsys):
    code, data = check_json(capsys, RUNS / "clean", RUNS / "spike_fast", "--stitch")
    assert len(data["runs"]) == 1 and len(data["runs"][0]["segments"]) == 2
    assert code == data["check"]["exit_code"]
