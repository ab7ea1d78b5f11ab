"""The gate's library side: selectors, thresholds, fast-spike allowance, precedence
(option > file > default) and the baseline, on hand-built reports."""
from __future__ import annotations

import json

import pytest

from spikelens.check import (BASELINE_SCHEMA, Baseline, BaselineEntry, Policy, baseline_from, build_policy,
                             evaluate, load_baseline, parse_kind_thresholds, parse_selectors, write_baseline)
from spikelens.model.finding import Finding
from spikelens.errors import ConfigError, InputError, UsageError
from spikelens.model.report import Report, RunReport


def finding(kind="spike", code="SL101", severity="warning", metric="train/loss", step=500, run="r",
            recovery=None) -> Finding:
    if kind == "spike" and recovery is None:
        recovery = "fast" if severity == "warning" else "none"
    return Finding(kind=kind, code=code, run=run, metric=metric, severity=severity, recovery=recovery,
                   message=f"{kind} on {metric} at {step}", start_step=step, peak_step=step)


def report(*findings: Finding, run="r", last_step=1000) -> Report:
    seg = [{"segment": 0, "source": f"{run}/metrics.csv", "first_step": 0, "last_step": last_step}]
    return Report(command="analyze", runs=[RunReport(run=run, sources=[f"{run}/metrics.csv"], segments=seg,
                                                     metrics={"train/loss": "loss"}, findings=list(findings))])


def statuses(result) -> list[str]:
    return [result.gate(f).status for r in result.report.runs for f in r.findings]


# ---------------------------------------------------------------- thresholds

@pytest.mark.parametrize("fail_on, severity, fails", [
    ("warning", "warning", True), ("warning", "info", False), ("warning", "error", True),
    ("error", "warning", False), ("error", "error", True), ("info", "info", True),
])
def test_fail_on_threshold(fail_on, severity, fails):
    f = finding(kind="oscillation", code="SL203", severity=severity)
    result = evaluate(report(f), Policy(fail_on=fail_on))
    assert result.gate(f).fails is fails
    assert result.exit_code() == (1 if fails else 0)
    assert result.exit_code(exit_zero=True) == 0


def test_nan_fails_below_fail_on_but_not_as_skipped_fp16_step():
    warn_nan = finding(kind="nan", code="SL201", severity="warning", metric="grad_norm")
    info_nan = finding(kind="nan", code="SL201", severity="info", metric="grad_norm", step=10)
    result = evaluate(report(warn_nan, info_nan), Policy(fail_on="error"))
    assert result.gate(warn_nan).fails and "always-fail nan" in result.gate(warn_nan).reason
    assert result.gate(info_nan).status == "below"
    assert evaluate(report(warn_nan), Policy(fail_on="error", always_fail=[])).passed


def test_fail_on_kind_is_the_most_specific_rule():
    osc = finding(kind="oscillation", code="SL203", severity="warning")
    nan = finding(kind="nan", code="SL201", severity="warning", step=900)
    spike = finding(severity="warning", step=300, recovery="slow")
    policy = Policy(fail_on_kind={"oscillation": "error", "SL2": "info", "nan": "error"})
    result = evaluate(report(osc, nan, spike), policy)
    assert result.gate(osc).status == "below"  # kind beats the SL2 prefix
    assert result.gate(nan).status == "below"  # explicit threshold beats always-fail
    assert result.gate(spike).fails  # untouched: global fail-on warning


# ---------------------------------------------------------------- selectors

def test_parse_selectors_normalises_and_rejects_unknown_kinds():
    assert parse_selectors("sl1, nan,ALL,SL201", "--select") == ["SL1", "nan", "ALL", "SL201"]
    assert parse_selectors("none", "--always-fail") == []
    with pytest.raises(UsageError, match="unknown selector 'spikes'"):
        parse_selectors("spikes", "--select")
    with pytest.raises(ConfigError):
        parse_selectors(["SL1", 3], "file", ConfigError)


def test_select_and_ignore_ruff_style():
    spike = finding()
    nan = finding(kind="nan", code="SL201", severity="error", step=900)
    resume = finding(kind="resume_overlap", code="SL301", metric=None, step=400)
    r = report(spike, nan, resume)
    assert [f.kind for f in evaluate(r, Policy(select=["SL1", "nan"])).report.findings()] == ["spike", "nan"]
    assert [f.kind for f in evaluate(r, Policy(ignore=["SL3"])).report.findings()] == ["spike", "nan"]
    # the more specific selector wins; on a tie ignore wins
    assert [f.kind for f in evaluate(r, Policy(select=["SL201"], ignore=["SL2"])).report.findings()] == ["nan"]
    assert evaluate(r, Policy(select=["SL2"], ignore=["SL2"])).report.findings() == []
    result = evaluate(r, Policy(ignore=["ALL"]))
    assert result.filtered_out == 3 and result.passed
    assert r.runs[0].findings == [spike, nan, resume], "evaluate must not change the analysis report"


def test_metric_globs_keep_run_level_findings():
    loss = finding(metric="train/loss")
    grad = finding(kind="nan", code="SL201", metric="train/grad_norm", severity="warning")
    resume = finding(kind="step_reset", code="SL302", metric=None)
    r = report(loss, grad, resume)
    kept = evaluate(r, Policy(metrics=["*loss*"])).report.findings()
    assert [f.metric for f in kept] == ["train/loss", None]
    kept = evaluate(r, Policy(ignore_metrics=["train/grad*"])).report.findings()
    assert [f.metric for f in kept] == ["train/loss", None]


# ---------------------------------------------------------------- fast spikes

def test_max_fast_spikes_allows_up_to_n_per_run():
    fast = [finding(step=s) for s in (200, 600)]
    slow = finding(step=800, recovery="slow")
    assert statuses(evaluate(report(*fast), Policy(max_fast_spikes=0))) == ["fail", "fail"]
    assert statuses(evaluate(report(*fast), Policy(max_fast_spikes=2))) == ["allowed", "allowed"]
    over = evaluate(report(*fast), Policy(max_fast_spikes=1))
    assert statuses(over) == ["fail", "fail"] and "more than max-fast-spikes 1" in over.gate(fast[0]).reason
    with_slow = evaluate(report(*fast, slow), Policy(max_fast_spikes=5))
    assert statuses(with_slow) == ["allowed", "allowed", "fail"]


def test_fast_spike_allowance_is_per_run():
    a = report(finding(run="a", step=100), run="a")
    b = report(finding(run="b", step=100), finding(run="b", step=700), run="b")
    both = Report(command="analyze", runs=a.runs + b.runs)
    result = evaluate(both, Policy(max_fast_spikes=1))
    assert [x["passed"] for x in result.to_json()["runs"]] == [True, False]


# ---------------------------------------------------------------- precedence

def test_precedence_option_over_file_over_default(tmp_path):
    cfg = tmp_path / "pyproject.toml"
    file = {"fail-on": "error", "max-fast-spikes": 3, "select": ["SL1"], "fail-on-kind": {"oscillation": "info"}}
    default = build_policy({}, {})
    assert (default.fail_on, default.max_fast_spikes, default.always_fail) == ("warning", 0, ["nan"])
    assert set(default.origins.values()) == {"default"}
    from_file = build_policy(file, {}, config_path=cfg)
    assert (from_file.fail_on, from_file.max_fast_spikes, from_file.select) == ("error", 3, ["SL1"])
    assert from_file.origins["fail_on"] == "file" and from_file.origins["ignore"] == "default"
    both = build_policy(file, {"fail_on": "info", "select": "nan", "fail_on_kind": {"SL4": "error"}}, config_path=cfg)
    assert (both.fail_on, both.select, both.max_fast_spikes) == ("info", ["nan"], 3)
    assert both.fail_on_kind == {"oscillation": "info", "SL4": "error"}  # tables merge key by key
    assert both.origins["fail_on"] == "option" and both.origins["max_fast_spikes"] == "file"
    assert both.origins["fail_on_kind"] == "option+file"


def test_snake_case_file_keys_and_baseline_relative_to_config(tmp_path):
    cfg = tmp_path / "sub" / "spikelens.toml"
    policy = build_policy({"max_fast_spikes": 1, "baseline": "base.json"}, {}, config_path=cfg)
    assert policy.max_fast_spikes == 1
    assert policy.baseline == str(tmp_path / "sub" / "base.json")


@pytest.mark.parametrize("table, message", [
    ({"fail-on": "fatal"}, "fail-on: expected one of info, warning, error"),
    ({"max-fast-spikes": -1}, "max-fast-spikes: expected a whole number"),
    ({"max-fast-spikes": True}, "max-fast-spikes: expected a whole number"),
    ({"fail_on_kind": {"spike": "loud"}}, "expected one of"),
    ({"selct": ["SL1"]}, "unknown key 'selct'"),
    ({"metrics": 3}, "expected a list of metric globs"),
])
def test_bad_file_values_name_the_file(tmp_path, table, message):
    cfg = tmp_path / "pyproject.toml"
    with pytest.raises(ConfigError, match=message) as err:
        build_policy(table, {}, config_path=cfg)
    assert str(cfg) in str(err.value) and "\n" not in str(err.value)


def test_bad_option_values_are_usage_errors():
    with pytest.raises(UsageError, match="--fail-on"):
        build_policy({}, {"fail_on": "loud"})
    with pytest.raises(UsageError, match="--fail-on-kind 'spike'"):
        parse_kind_thresholds(["spike"])
    assert parse_kind_thresholds([]) is None
    assert parse_kind_thresholds(["SL4=error", "oscillation = info"]) == {"SL4": "error", "oscillation": "info"}


# ---------------------------------------------------------------- baseline

def test_baseline_matches_by_run_metric_kind_and_window():
    old = report(finding(step=700), finding(kind="nan", code="SL201", severity="error", step=900))
    base = baseline_from(old)
    assert base.window(old.runs[0]) == 50.0  # 5% of 1000 steps beats the 20-step floor
    new = report(finding(step=690), finding(step=760), finding(kind="nan", code="SL201", severity="error", step=905),
                 finding(metric="eval/loss", step=700))
    result = evaluate(new, Policy(), base)
    # 690 is nearest to the recorded 700 and takes it; 760 is outside the window anyway; other metric is new
    assert statuses(result) == ["baselined", "fail", "baselined", "fail"]
    assert result.to_json()["baseline"]["matched"] == 2


def test_baseline_window_scales_with_the_run():
    base = Baseline(entries=[BaselineEntry(run="r", metric="train/loss", kind="spike", code="SL101", step=700)])
    assert statuses(evaluate(report(finding(step=800), last_step=1000), Policy(), base)) == ["fail"]
    assert statuses(evaluate(report(finding(step=800), last_step=4000), Policy(), base)) == ["baselined"]
    assert statuses(evaluate(report(finding(step=715), last_step=100), Policy(), base)) == ["baselined"]  # floor


def test_one_baseline_entry_absorbs_one_finding():
    base = Baseline(entries=[BaselineEntry(run="r", metric="train/loss", kind="spike", code="SL101", step=500)])
    result = evaluate(report(finding(step=510), finding(step=495)), Policy(), base)
    assert statuses(result) == ["fail", "baselined"]  # the nearer one is absorbed


def test_baseline_other_run_does_not_match():
    base = baseline_from(report(finding(step=500), run="a"))
    assert statuses(evaluate(report(finding(run="b", step=500), run="b"), Policy(), base)) == ["fail"]


def test_baseline_file_round_trip(tmp_path):
    old = report(finding(step=700), finding(kind="step_reset", code="SL302", metric=None, step=None))
    path = tmp_path / "b" / "baseline.json"
    write_baseline(baseline_from(old), path)
    data = json.loads(path.read_text())
    assert data["schema"] == BASELINE_SCHEMA and len(data["findings"]) == 2
    loaded = load_baseline(path)
    assert loaded.path == str(path) and [e.step for e in loaded.entries] == [None, 700]
    assert evaluate(old, Policy(), loaded).passed
    text = path.read_text()
    write_baseline(baseline_from(old), path)
    assert path.read_text() == text, "the baseline must be stable for review diffs"


@pytest.mark.parametrize("content, problem", [
    (None, "baseline file not found"),
    ("{not json", "cannot read the baseline"),
    ('{"schema": "spikelens.report/1", "runs": []}', "not a spikelens.baseline/1 file"),
    ('{"schema": "spikelens.baseline/1", "findings": [{"run": "r"}]}', "baseline finding 0 needs"),
    ('{"schema": "spikelens.baseline/1", "findings": [{"run": "r", "kind": "spike", "step": "7"}]}', "needs"),
])
def test_bad_baseline_files(tmp_path, content, problem):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=problem) as err:
        load_baseline(path)
    assert str(path) in str(err.value)
