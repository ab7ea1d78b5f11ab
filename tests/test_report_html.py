"""The HTML page as written: self-contained, runs by severity, every finding linked,
chart payloads that keep every extreme, everything from the logs escaped. (What a
browser makes of it: test_report_html_browser.py.)"""
from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import numpy as np
import polars as pl
import pytest

from report_cases import clean_run, frame, nan_run, resumed_run, sample_report, spiky_run
from spikelens.model.finding import Finding
from spikelens.model.report import Report, RunReport
from spikelens.report import html as html_mod
from spikelens.report.chart_data import run_chart
from spikelens.report.decimate import keep_extremes, keep_in_windows
from spikelens.report.html import render_html


class _Collect(HTMLParser):
    VOID = {"meta", "img", "br", "link", "hr", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.attrs, self.errors, self.scripts = [], [], [], []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.attrs.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append([dict(attrs), ""])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1][1] += data

    def handle_endtag(self, tag):
        self._in_script = False
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


def _parse(page: str) -> _Collect:
    p = _Collect()
    p.feed(page)
    p.close()
    return p


def _payloads(page: str) -> dict[int, dict]:
    return {int(a["id"].split("-")[1]): json.loads(text) for a, text in _parse(page).scripts
            if a.get("type") == "application/json"}


def _decode(enc: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(enc["b"]), {"i4": "<i4", "f8": "<f8", "f4": "<f4"}[enc["t"]])


def test_page_is_self_contained_with_the_library_once():
    page = render_html(sample_report())
    p = _parse(page)
    assert not p.errors and not p.stack
    assert not re.search(r"""(src|href)=["'](https?:)?//""", page)  # nothing fetched at view time
    assert not any("src" in a for t, a in p.attrs if t == "script")
    assert page.count("var uPlot=") == 1 and page.count("The MIT License") == 1  # embedded once, licence kept
    assert len(_payloads(page)) == 4  # one chart payload per run


def test_summary_lists_runs_by_severity_and_links_every_finding():
    page = render_html(sample_report())
    rows = re.findall(r'<tr data-run="(\d+)" data-sev="(\w+)"[^>]*data-name="([^"]*)"', page)
    assert [(sev, name) for _, sev, name in rows] == [("error", "llama-fp16"), ("warning", "bert-resume"),
                                                      ("warning", "gpt-small-3"), ("ok", "clean-baseline")]
    # every finding that needs attention is a chip in the summary pointing at its card
    for run in sample_report().runs:
        major = [f for f in run.findings if f.severity != "info"]
        i = next(i for i, sev, name in rows if name == run.run)
        chips = re.findall(rf'data-goto="(f{i}-\d+)"', page.split("</table>")[0])
        assert len(chips) == len(major)
        for fid in chips:
            assert f'<article class="finding ' in page and f'id="{fid}"' in page


def test_counts_by_kind_and_filter_options():
    page = render_html(sample_report())
    kinds = re.findall(r'<button class="kind" data-kind="(\w+)">', page)
    assert kinds[:3] == ["nan", "divergence", "spike"]  # errors first, then by count
    row = re.search(r'data-kind="spike">spike</button></td><td>.*?</td><td class="num">(\d+)</td>'
                    r'<td class="num">(\d+)</td>', page)
    assert row.groups() == ("3", "2")  # 3 spikes in 2 runs
    assert '<select id="f-sev" autocomplete="off">' in page and '<option value="spike">spike</option>' in page


def test_cards_carry_message_evidence_causes_and_advice():
    page = render_html(sample_report())
    assert "diverged at step 3500; NaN at step 3610" in page
    assert "<b>grad_explosion</b> (80%)" in page
    assert "<th>recovery steps</th><td>56</td>" in page
    assert page.count('<article class="finding ') == 6  # the six findings that need attention
    assert 'class="notes"' in page  # info notes folded apart
    assert "truncated record at byte 4120" in page


def test_chart_payload_keeps_segments_superseded_and_nan_apart():
    run = resumed_run()
    fids = {id(f): f"f0-{j}" for j, f in enumerate(run.findings)}
    chart = run_chart(run, fids)
    assert chart["segments"] == [2000.0]
    loss = chart["panels"][0]["series"][0]
    old = _decode(loss["superseded"]["x"])
    assert old.min() >= 2000 and old.max() <= 2199 and loss["superseded"]["n"] == 200
    spike = next(v for v in chart["findings"] if v["kind"] == "spike")
    assert spike["lo"] < 2005 <= 2043 < spike["hi"] and (spike["x0"], spike["x1"]) == (2005, 2043)
    overview = _decode(loss["live"]["x"])
    detail = _decode(loss["live"]["detail"]["x"])  # the extra points inside the spike's window
    assert 1000 < overview.size <= 2 * 700 + 2 and not np.isin(detail, overview).any()
    assert spike["lo"] <= detail.min() and detail.max() <= spike["hi"]
    assert set(range(1990, 2060)) <= set(overview) | set(detail)  # every step around the spike
    resume = next(v for v in chart["findings"] if v["kind"] == "resume_overlap")
    assert resume["line"] and resume["x0"] == 2000

    nan = run_chart(nan_run(), {})
    titles = [p["title"] for p in nan["panels"]]
    assert titles == ["loss", "grad norm", "learning rate", "loss scale"]
    bad = nan["panels"][0]["series"][0]["bad"]
    assert bad[0] == 3610 and len(bad) == 390  # every NaN step marked, none drawn as a value
    assert np.isfinite(_decode(nan["panels"][0]["series"][0]["live"]["y"])).all()


def test_one_step_spike_in_a_million_points_survives_decimation():
    rng = np.random.default_rng(0)
    step = np.arange(1_000_000, dtype=np.int64)
    value = 2.0 + 0.01 * rng.standard_normal(step.size)
    value[612_345] = 9.0
    value[800_001] = -3.0
    keep = keep_extremes(step, value, 700)
    assert keep.size <= 2 * 700 + 2
    assert 612_345 in keep and 800_001 in keep and keep[0] == 0 and keep[-1] == step.size - 1
    near = keep_in_windows(step, value, [(612_000, 612_700)], 1000)
    assert np.array_equal(near, np.arange(612_000, 612_701))  # a window smaller than its budget is whole


def test_whole_run_payload_of_a_long_run_is_small_and_sharp_at_the_finding():
    n = 1_000_000
    step = np.arange(n, dtype=np.int64)
    loss = 2.0 + 0.02 * np.random.default_rng(1).standard_normal(n)
    loss[400_000] = 11.0
    f = frame("long", "long.csv", {"loss": (step, loss)})
    spike = Finding(kind="spike", code="SL101", run="long", metric="loss", severity="warning",
                    message="one step", start_step=400_000, peak_step=400_000, end_step=400_001)
    run = RunReport(run="long", sources=["long.csv"], segments=[{"first_step": 0, "last_step": n - 1}],
                    metrics={"loss": "loss"}, findings=[spike], points=n, frame=f,
                    stats={"main_metric": "loss", "first_step": 0, "last_step": n - 1})
    chart = run_chart(run, {id(spike): "f0-0"})
    live = chart["panels"][0]["series"][0]["live"]
    ys = _decode(live["y"])
    assert live["n"] <= 2 * 700 + 2 and ys.max() == pytest.approx(11.0)  # the overview keeps the spike
    assert live["detail"]["n"] <= 2 * 250 and 399_990 < _decode(live["detail"]["x"]).mean() < 400_010
    assert len(json.dumps(chart)) < 40_000


def test_past_the_limit_only_runs_with_findings_get_a_section(monkeypatch):
    monkeypatch.setattr(html_mod, "MAX_CHARTED_RUNS", 2)
    page = render_html(sample_report())
    sections = re.findall(r'<section class="run" id="run-(\d+)"[^>]*data-sev="(\w+)"', page)
    assert [sev for _, sev in sections] == ["error", "warning", "warning"]
    assert len(re.findall(r"<tr data-run=", page)) == 4  # the summary still lists every run
    assert "1 clean run is listed above only" in page
    assert 'href="#run-3"' not in page
    monkeypatch.setattr(html_mod, "MAX_SECTIONS", 1)
    page = render_html(sample_report())
    assert re.findall(r'<section class="run" id="run-(\d+)"', page) == ["0"]  # the error run
    assert "1 clean run and 2 runs with findings past the first 1 are listed above only" in page


def test_everything_from_the_logs_is_escaped():
    run = spiky_run()
    run.run = '<script>alert("x")</script>'
    run.findings[0].message = "loss <b>spiked</b> & fell"
    evil = "</script><b>loss"
    run.frame = run.frame.with_columns(pl.col("metric").replace("train/loss", evil))
    run.metrics = {evil if m == "train/loss" else m: r for m, r in run.metrics.items()}
    page = render_html(Report("analyze", [run]))
    p = _parse(page)
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "loss &lt;b&gt;spiked&lt;/b&gt; &amp; fell" in page
    assert not p.errors
    assert _payloads(page)[0]["panels"][0]["series"][0]["name"] == evil  # the JSON survived inside its <script>


def test_run_without_frame_or_metrics_renders():
    bare = RunReport(run="bare", sources=["x.log"], segments=[], metrics={})
    page = render_html(Report("analyze", [bare, clean_run()]))
    assert _payloads(page)[1]["panels"] == [] or _payloads(page)[0]["panels"] == []
    assert render_html(Report("analyze", [])).count("<section") == 0


def test_evidence_reads_as_text_with_no_raw_none_or_placeholders():
    f = Finding(kind="nan", code="SL201", run="r", metric="loss", severity="error", message="loss became NaN",
                start_step=10, evidence={"finite_again_step": None, "robust_z": None, "first_bad": 10,
                                         "others": [{"metric": "grad_norm", "step": 9}, {"metric": "lr", "step": 10}],
                                         "window": {"from": 1, "to": 9, "note": None}, "ratios": [1.5, 2.25]})
    rows = dict(html_mod.evidence_rows(f))
    assert "finite again step" not in rows and "robust z" not in rows  # nothing measured: no row
    assert rows["others"] == "metric grad_norm, step 9; metric lr, step 10"
    assert rows["window"] == "from 1, to 9" and rows["ratios"] == "1.5, 2.25" and rows["first bad"] == "10"
    page = render_html(Report(command="analyze", runs=[RunReport(run="r", sources=["r.log"], segments=[],
                                                                 metrics={}, findings=[f])]))
    tables = re.findall(r'<table class="evidence">.*?</table>', page)
    assert tables and ">None<" not in page and not any("…" in t or "None" in t for t in tables)


def _final_title(page: str) -> str:
    return re.search(r'<th class="num" title="[^"]*">(final [^<]+)</th>', page).group(1)


def test_column_titles_say_what_they_show_and_smoothing_follows_the_noise():
    run = spiky_run()
    page = render_html(Report(command="analyze", runs=[run]))
    assert _final_title(page) == "final loss" and '<span class="label">train/loss</span>' in page
    ppl = spiky_run()
    ppl.metrics["train/loss"] = "perplexity"  # a run whose main metric is a perplexity says so
    assert _final_title(render_html(Report("analyze", [ppl]))) == "final perplexity"
    mixed = render_html(Report("analyze", [ppl, clean_run()]))
    assert _final_title(mixed) == "final value"  # mixed roles: each cell names its metric
    heads = re.findall(r"<th[^>]*>([^<]+)</th>", page.split("</thead>")[0])
    assert heads == ["run", "status", "verdict", "findings", "steps", "points read", "final loss", "log format"]
    from spikelens.report.chart_data import default_smoothing
    loss = run.frame.filter(pl.col("metric") == "train/loss").sort("step").get_column("value").to_numpy()
    assert run_chart(run, {})["smooth"] == default_smoothing(loss)  # the page starts from the run's own
    rng = np.random.default_rng(0)
    trend = 2 + np.exp(-np.arange(2000) / 500)
    assert default_smoothing(trend) == 0.0  # a smooth curve is drawn as it is
    noisy = trend + rng.normal(0, 0.4, 2000)  # batch-size-4 noise
    assert default_smoothing(noisy) >= 0.85 and default_smoothing(noisy[:10]) == 0.0


def test_static_page_says_so_for_the_script():
    assert '<html lang="en" data-static="1">' in render_html(sample_report(), static=True)
    assert "data-static" not in render_html(sample_report())


def test_every_metric_is_listed_and_the_undrawn_ones_embedded_decimated(monkeypatch):
    from report_cases import metrics_run

    from spikelens.report.chart_data import EXTRA_POINTS_PER_RUN, extra_chart, metric_parts

    run = metrics_run()
    page = render_html(Report("analyze", [run]))
    picker = re.search(r'<select class="add-metric".*?</select>', page).group(0)
    options = re.findall(r'<option value="([^"]+)"( disabled)?>([^<]*)</option>', picker)
    assert {v for v, _, _ in options} == set(run.metrics)  # every metric of the run
    drawn = {v for v, off, label in options if off and "drawn above" in label}
    assert drawn == {"train/loss", "train/grad_norm", "train/lr", "perf/tokens_per_sec"}
    addable = [v for v, off, _ in options if not off]
    assert addable[:2] == ["eval/accuracy", "rl/reward"]  # known roles first, then the rest in natural order
    assert addable[2:5] == ["layers/0/grad_norm", "layers/1/grad_norm", "layers/2/grad_norm"]
    more = json.loads(re.search(r'<script type="application/json" id="more-0">(.*?)</script>', page).group(1))
    assert [s["name"] for s in more["series"]] == addable
    assert sum(2 * len(s["live"]["x"]["b"]) // 3 // 4 for s in more["series"]) <= EXTRA_POINTS_PER_RUN * 1.05
    reward = next(s for s in more["series"] if s["name"] == "rl/reward")
    xs, ys = _decode(reward["live"]["x"]), _decode(reward["live"]["y"])
    raw = run.frame.filter(pl.col("metric") == "rl/reward").sort("step")
    assert ys.max() == pytest.approx(raw["value"].max(), rel=1e-6) and xs[0] == 0 and xs[-1] == 4999  # extremes kept
    _, left = extra_chart(run, metric_parts(run), budget=64)
    assert left == addable[2:]  # past the budget: listed, not embedded
    monkeypatch.setattr(html_mod, "EXTRA_POINTS_PER_RUN", 0)  # the page without the picker's data
    without = len(render_html(Report("analyze", [run])).encode())
    assert 0 < len(page.encode()) - without < 40_000  # 27 more metrics cost a bounded ~30 KB, not the raw points


def test_a_note_heading_the_verdict_gets_a_band_and_other_notes_do_not():
    from report_cases import metrics_run

    from spikelens.report.chart_data import heading_notes

    run = metrics_run()
    (plateau,) = run.findings
    assert heading_notes(run) == {id(plateau)}  # 'never learned: ...' is this note
    views = run_chart(run, {id(plateau): "f0-0"})["findings"]
    assert views[0]["heads"] is True
    assert heading_notes(clean_run()) == set()  # 'clean (1 note)': the note is counted, it heads nothing
    resumed = resumed_run()  # '... resumed at step 2000': its info resume_overlap is named
    assert heading_notes(resumed) == {id(f) for f in resumed.findings if f.kind == "resume_overlap"}
