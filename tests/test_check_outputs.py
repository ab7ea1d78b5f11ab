"""GitHub annotations and JUnit XML from hand-built results: escaping, levels, and text
that would break a naive writer (newlines, `%`, `:`/`,` in properties, XML specials,
control characters)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

from spikelens.check import Baseline, BaselineEntry, Policy, evaluate
from spikelens.report.github import annotation_file, escape_data, escape_property, render_github
from spikelens.report.junit import render_junit
from test_check_policy import finding, report

LINE = re.compile(r"^::(error|warning|notice) file=([^,:]+),title=([^,:]+)::([^\r\n]+)$")


def test_escaping_follows_actions_core():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"


def test_levels_follow_the_gate_then_the_severity(tmp_path):
    fails = finding(kind="oscillation", code="SL203", severity="warning", step=100)
    below = finding(kind="level_shift", code="SL204", severity="info", step=200)
    known = finding(kind="nan", code="SL201", severity="error", step=300)
    allowed = finding(step=400)
    base = Baseline(entries=[BaselineEntry(run="r", metric="train/loss", kind="nan", code="SL201", step=300)])
    result = evaluate(report(fails, below, known, allowed), Policy(max_fast_spikes=1, fail_on_kind={"spike": "info"}),
                      base)
    lines = render_github(result, cwd=tmp_path).splitlines()
    levels = [LINE.match(line).group(1) for line in lines]
    assert levels == ["error", "notice", "warning"]  # the baselined NaN is left out; the allowed spike warns
    assert all(LINE.match(line).group(2) == "r/metrics.csv" for line in lines)


def test_annotation_survives_hostile_text(tmp_path):
    f = finding(kind="oscillation", code="SL203", metric="loss:a,b", run="run,1")
    f.message = "swings 100%\nsecond line"
    r = report(f, run="run,1")
    (line,) = render_github(evaluate(r), cwd=tmp_path).splitlines()
    m = LINE.match(line)
    assert m, line
    assert "loss%3Aa%2Cb" in m.group(3) and m.group(2) == "run%2C1/metrics.csv"
    assert "100%25%0Asecond line" in m.group(4)


def test_annotation_file_is_relative_to_the_workspace(tmp_path):
    log = tmp_path / "runs" / "a" / "events.out"
    log.parent.mkdir(parents=True)
    log.write_text("x")
    r = report(run="a").runs[0]
    r.sources = [str(log)]
    assert annotation_file(r, cwd=tmp_path) == "runs/a/events.out"
    assert annotation_file(r, cwd=tmp_path / "elsewhere") == str(log)
    r.sources = []
    assert annotation_file(r, cwd=tmp_path) is None


def test_junit_parses_back_with_awkward_text():
    bad = finding(kind="divergence", code="SL202", severity="error", run="a&<b>")
    bad.message = 'loss "rose" <fast> & kept\x00 rising'
    ok = finding(kind="level_shift", code="SL204", severity="info", run="c", step=50)
    both = report(bad, run="a&<b>")
    both.runs += report(ok, run="c").runs
    stamp = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    xml = render_junit(evaluate(both), elapsed=2.0, timestamp=stamp)
    root = ET.fromstring(xml.encode("utf-8"))
    suite = root.find("testsuite")
    assert suite.get("timestamp") == "2026-01-02T03:04:05+00:00" and suite.get("time") == "2.000"
    a, c = suite.findall("testcase")
    assert a.get("name") == "a&<b>" and c.get("name") == "c"
    failure = a.find("failure")
    assert failure.get("type") == "SL202" and "1 finding fails" in failure.get("message")
    assert 'loss "rose" <fast> & kept\ufffd rising' in failure.text
    assert c.find("failure") is None and "SL204 level_shift" in c.find("system-out").text
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["fail_on"] == "warning" and props["always_fail"] == '["nan"]'
