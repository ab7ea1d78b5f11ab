"""The command line a CI job can trust: nothing read is no pass, help text shows what was
written, names do not depend on the folder passed, advice names the steps, and the small
things (version, formats, quiet mode, output folders, stderr) behave like ruff or pytest.

The runs are the project's own `fixtures/check` CSVs (fixtures/writers/check.py), copied
into layouts built here; broken files are written here as a crashed job leaves them.
"""
from __future__ import annotations

import json
import re
import shutil
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import spikelens
from conftest import FIXTURES, main_in_process
from spikelens import cli
from spikelens.cli.helptext import plain_help
from spikelens.explain import catalog

CHECK_RUNS = FIXTURES / "check"

pytestmark = pytest.mark.usefixtures("in_empty_folder")


run = main_in_process


@pytest.fixture
def crashed(tmp_path) -> Path:
    """What a job that died before logging leaves: a header-only CSV, a truncated trainer_state.json."""
    root = tmp_path / "crashed"
    (root / "a").mkdir(parents=True)
    (root / "a" / "metrics.csv").write_text("step,train/loss\n")
    (root / "b").mkdir()
    (root / "b" / "trainer_state.json").write_text('{"log_history": [{"step": 1, "loss": 2.')
    return root


def copy_run(name: str, to: Path) -> Path:
    to.mkdir(parents=True, exist_ok=True)
    shutil.copy(CHECK_RUNS / name / "metrics.csv", to / "metrics.csv")
    return to


# ---------------------------------------------------------------- nothing read is no pass

@pytest.mark.parametrize("command", ["check", "analyze"])
def test_nothing_read_exits_2_with_one_line(capsys, crashed, command):
    code, out, err = run(capsys, command, crashed)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "nothing could be read" in lines[0]
    assert "metrics.csv: header only" in lines[0] and "trainer_state.json: damaged or truncated" in lines[0]
    assert "Traceback" not in err


def test_allow_empty_keeps_the_old_pass(capsys, crashed):
    code, out, err = run(capsys, "check", crashed, "--allow-empty", "--format", "json")
    assert code == 0
    assert json.loads(out)["runs"] == []


@pytest.mark.parametrize("name, code", [("clean", 0), ("nan", 1)])
def test_a_good_run_still_passes_and_a_nan_run_fails(capsys, name, code):
    assert run(capsys, "check", CHECK_RUNS / name, "-q")[0] == code


def test_a_run_without_a_loss_is_named_not_dropped(capsys, tmp_path):
    copy_run("clean", tmp_path / "good")
    (tmp_path / "lr_only").mkdir()
    (tmp_path / "lr_only" / "metrics.csv").write_text("step,lr\n1,0.1\n2,0.1\n3,0.1\n")
    code, out, err = run(capsys, "check", tmp_path, "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert {r["run"] for r in report["runs"]} == {"good", "lr_only"}
    assert any(w.startswith("lr_only: no loss-like metric (lr)") for w in report["warnings"])
    # alone it is nothing read
    code, _, err = run(capsys, "analyze", tmp_path / "lr_only")
    assert code == 2 and "lr_only: no loss-like metric" in err
    code, out, _ = run(capsys, "analyze", tmp_path / "lr_only", "--allow-empty", "--no-charts")
    assert code == 0 and "no loss-like metric read" in out and "clean" not in out
    assert out.startswith("spikelens analyze: 1 run — 1 not checked (no loss)")


# ---------------------------------------------------------------- help text

def _commands():
    import typer.main

    cli._register()
    group = typer.main.get_command(cli.app)
    return group, sorted(group.commands.items())


_BRACKETED = re.compile(r"\[[^\]\[]+\]")


def test_every_help_shows_its_bracketed_text(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "3000")  # one line per paragraph: words are not split by wrapping
    group, commands = _commands()
    checked = 0
    for name, command in [("", group), *commands]:
        code, out, _ = run(capsys, *([name] if name else []), "--help")
        assert code == 0
        written = [command.help, *(getattr(p, "help", None) for p in command.params)]
        for text in written:
            for words in _BRACKETED.findall(plain_help(text)):
                assert words in out, f"`spikelens {name} --help` lost {words!r}"
                checked += 1
        assert "{" + "paths}" not in out.lower() and "<list[" not in out, f"{name}: typer placeholders"
    assert checked >= 8  # the check command alone writes several
    code, out, _ = run(capsys, "check", "--help")
    assert "[tool.spikelens.check]" in out and "[default: warning, or fail-on in the config]" in out
    assert "PATHS..." in out


# ---------------------------------------------------------------- version

def test_version_option_and_command(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"spikelens {metadata.version('spikelens')}"
    code, out, _ = run(capsys, "version")
    data = json.loads(out)
    assert data["spikelens"] == spikelens.__version__ == metadata.version("spikelens")
    assert data["libraries"]["polars"] == pl.__version__
    assert data["libraries"]["numpy"] == np.__version__
    assert "tensorboard" in data["readers"] and "csv" in data["readers"]


# ---------------------------------------------------------------- run names

@pytest.fixture
def three_runs(tmp_path) -> Path:
    """Three folders all called `run`, under top/sweep/; one has a fast spike."""
    for exp, name in (("a", "spike_fast"), ("b", "clean"), ("c", "clean")):
        copy_run(name, tmp_path / "top" / "sweep" / exp / "run")
    return tmp_path / "top"


def _names(capsys, *paths) -> list[str]:
    code, out, _ = run(capsys, "analyze", *paths, "--format", "json", "--no-charts")
    assert code == 0
    return sorted(r["run"] for r in json.loads(out)["runs"])


def test_names_are_unique_and_the_same_from_any_parent(capsys, three_runs):
    from_top = _names(capsys, three_runs)
    assert from_top == ["a/run", "b/run", "c/run"]
    assert _names(capsys, three_runs / "sweep") == from_top
    assert _names(capsys, *(three_runs / "sweep" / x for x in "abc")) == from_top
    code, out, _ = run(capsys, "ls", three_runs, "--format", "json")
    assert sorted(r["run"] for r in json.loads(out)["runs"]) == from_top
    assert sorted(spikelens.load(three_runs / "sweep").get_column("run").unique().cast(str)) == from_top


@pytest.mark.parametrize("written_from, checked_from", [("sweep/a", "."), (".", "sweep"), ("sweep", "sweep/a")])
def test_a_baseline_written_from_one_folder_matches_from_another(capsys, three_runs, tmp_path,
                                                                written_from, checked_from):
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", three_runs / "sweep" / "a")[0] == 1  # the spike fails without a baseline
    code, _, _ = run(capsys, "check", three_runs / written_from, "--baseline", baseline, "--update-baseline")
    assert code == 0 and json.loads(baseline.read_text())["findings"]
    code, out, _ = run(capsys, "check", three_runs / checked_from, "--baseline", baseline, "--format", "json")
    assert code == 0, out
    assert json.loads(out)["check"]["counts"]["baselined"] >= 1


# ---------------------------------------------------------------- advice from the evidence

_PLACEHOLDER_WORD = re.compile(r"\b(?:start|peak|end|resume)_step\b|[{}]")


def test_advice_names_the_finding_step(capsys):
    code, out, _ = run(capsys, "analyze", CHECK_RUNS / "nan", "--format", "markdown", "--no-charts")
    nan_step = re.search(r"NaN at step (\d+)", out)
    assert nan_step, out[:500]
    assert f"Resume from the last checkpoint before step {nan_step.group(1)}" in out
    assert "start_step" not in out


def test_no_catalog_text_shows_a_placeholder():
    from spikelens.model.finding import Finding

    finding = Finding(kind="divergence", code="SL201", run="r", metric="loss", severity="error", message="m",
                      start_step=1200, peak_step=1300, end_step=1400)
    bare = Finding(kind="divergence", code="SL201", run="r", metric="loss", severity="error", message="m")
    for entry in catalog.ENTRIES.values():
        for text in (entry.what, entry.why, entry.title):
            assert not _PLACEHOLDER_WORD.search(text), (entry.name, text)
        for tip in entry.tries:
            for filled in (catalog.advice(tip), catalog.advice(tip, finding), catalog.advice(tip, bare)):
                assert not _PLACEHOLDER_WORD.search(filled), (entry.name, filled)
    assert catalog.advice(catalog.get("divergence").tries[0], finding).endswith("before step 1200.")


# ---------------------------------------------------------------- formats and suggestions

def test_format_is_case_insensitive(capsys):
    code, out, _ = run(capsys, "analyze", CHECK_RUNS / "clean", "--format", "JSON")
    assert code == 0 and json.loads(out)["schema"] == "spikelens.report/1"
    code, out, _ = run(capsys, "check", CHECK_RUNS / "clean", "-f", "Markdown")
    assert code == 0 and out.startswith("## ")


def test_ls_honours_markdown_and_json_and_rejects_the_rest(capsys):
    code, out, _ = run(capsys, "ls", CHECK_RUNS, "--format", "markdown")
    assert code == 0
    assert "| run | format |" in out and "| nan | csv |" in out
    code, out, _ = run(capsys, "ls", CHECK_RUNS, "--format", "json")
    assert code == 0 and len(json.loads(out)["runs"]) == 5
    code, out, err = run(capsys, "ls", CHECK_RUNS, "--format", "github")
    assert code == 2 and out == "" and "github" in err


def test_explain_suggests_the_near_name(capsys):
    code, _, err = run(capsys, "explain", "spik")
    assert code == 2 and "did you mean 'spike'?" in err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- quiet mode

def test_quiet_prints_only_runs_with_problems_and_the_summary(capsys, tmp_path):
    for name in ("clean", "nan", "spike_fast"):
        copy_run(name, tmp_path / "sweep" / name)
    code, out, err = run(capsys, "analyze", tmp_path / "sweep", "-q")
    lines = out.strip().splitlines()
    assert code == 0 and err == ""
    assert len(lines) == 3, out
    assert lines[-1].startswith("spikelens analyze: 3 runs")
    assert {line.split(":")[0][2:] for line in lines[:-1]} == {"nan", "spike_fast"}
    code, out, _ = run(capsys, "check", tmp_path / "sweep", "-q")
    lines = out.strip().splitlines()
    assert code == 1 and len(lines) == 3 and lines[-1].startswith("check failed")
    _, quiet_json, _ = run(capsys, "check", tmp_path / "sweep", "-q", "--format", "json")
    _, loud_json, _ = run(capsys, "check", tmp_path / "sweep", "--format", "json")
    assert json.loads(quiet_json)["runs"] == json.loads(loud_json)["runs"]


# ---------------------------------------------------------------- stderr and output files

def test_warnings_keep_long_paths_on_one_line_without_a_terminal(capsys, tmp_path):
    deep = tmp_path / ("a_rather_long_experiment_folder_name_" * 3) / "attempt"
    deep.mkdir(parents=True)
    (deep / "metrics.csv").write_text("step,train/loss\n")
    copy_run("clean", tmp_path / "good")
    code, _, err = run(capsys, "analyze", tmp_path, "--format", "json")
    assert code == 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: ") and str(deep / "metrics.csv") in lines[0]


def test_export_into_a_missing_folder_is_an_error_unless_mkdir(capsys, tmp_path):
    target = tmp_path / "missing" / "dir" / "x.parquet"
    code, _, err = run(capsys, "export", CHECK_RUNS / "clean", "-o", target)
    assert code == 2 and f"{target.parent}: no such folder" in err
    assert not target.parent.exists()
    code, _, _ = run(capsys, "export", CHECK_RUNS / "clean", "-o", target, "--mkdir")
    assert code == 0 and pl.read_parquet(target).height > 0


# ---------------------------------------------------------------- library parity and numeric noise

def test_analyze_accepts_the_frame_load_returns_and_one_built_by_hand():
    from_files = spikelens.analyze(CHECK_RUNS / "nan", jobs=1)
    from_frame = spikelens.analyze(spikelens.load(CHECK_RUNS / "nan"))
    assert [(f.kind, f.metric, f.start_step) for f in from_frame.runs[0].findings] == \
           [(f.kind, f.metric, f.start_step) for f in from_files.runs[0].findings]
    frame = spikelens.load(CHECK_RUNS / "nan")
    by_hand = pl.DataFrame({"run": ["mine"] * frame.height,
                            "step": frame.get_column("step").to_list(),
                            "metric": frame.get_column("metric").cast(str).to_list(),
                            "value": frame.get_column("value").to_list()})
    report = spikelens.analyze(by_hand)
    assert report.runs[0].run == "mine"
    assert "nan" in {f.kind for f in report.runs[0].findings}
    with pytest.raises(spikelens.errors.UsageError, match="no column step"):
        spikelens.analyze(pl.DataFrame({"run": ["a"], "metric": ["loss"], "value": [1.0]}))


def _short(metric_values: dict[str, list[float]]) -> pl.DataFrame:
    return pl.concat([pl.DataFrame({"run": "short", "step": np.arange(len(v)) * 10, "metric": m,
                                    "value": np.asarray(v, dtype=float)}) for m, v in metric_values.items()])


EDGE_RUNS = {
    # a short W&B-like run whose eval loss reaches exactly 0 (a detector divided by its minimum)
    "eval_loss_reaches_zero": {"eval/loss": [1.0, 0.5, 0.0, 0.2, 0.4, 0.6, 0.8],
                               "train/loss": list(np.linspace(2.0, 0.5, 7))},
    "constant_loss": {"train/loss": [0.7] * 40},
    "all_zero_loss": {"train/loss": [0.0] * 40, "grad_norm": [0.0] * 40},
    "two_points": {"train/loss": [2.0, 1.0]},
    "inf_then_nan": {"train/loss": [2.0, 1.5, float("inf"), float("nan"), 1.0, 0.9]},
    "loss_crossing_zero": {"train/loss": list(np.linspace(1.0, -1.0, 30)), "lr": [0.0] * 30},
}


@pytest.mark.parametrize("name", sorted(EDGE_RUNS))
def test_edge_runs_raise_no_numpy_warning(name):
    """NumPy RuntimeWarnings (0/0, log of 0, mean of nothing) never reach the user."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = spikelens.analyze(_short(EDGE_RUNS[name]))
    assert report.runs and report.runs[0].run == "short"
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]


def test_unique_names_grow_only_where_paths_differ():
    from spikelens.naming import unique_names

    paths = [("x", "a", "m"), ("x", "a", "m"), ("y", "b", "m"), ("z", "c", "run"), ("w", "c", "run"), ("k", "solo")]
    names = unique_names(paths, [None, None, None, None, None, "named"])
    assert names == ["a/m", "a/m#2", "b/m", "z/c/run", "w/c/run", "named"]
    assert unique_names([("p", "a"), ("q", "b")], ["same", "same"]) == ["a/same", "b/same"]
