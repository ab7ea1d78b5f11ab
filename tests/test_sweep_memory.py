"""A spooled sweep's parent (issue 28): what it holds grows by a few hundred bytes a run, not
by a report a run; its outputs (JSON, concise, markdown, HTML) are written a run at a time;
its spool is removed whether the sweep ends well, fails or is interrupted.

The runs are made in memory (`fixtures/writers/_sweep_reports.py`), small and many (no files read, no worker processes): each a spike
at one of a few shared steps, so the cross-run links write a data cause on every run (the
worst case for what the parent holds)."""
from __future__ import annotations

import gc
import os
import sys
import tracemalloc
import weakref
from html.parser import HTMLParser
from pathlib import Path

import pytest

from spikelens.config import Config
from spikelens.pipeline import spool as spool_mod
from spikelens.pipeline import sweep
from spikelens.pipeline.runsummary import SpooledRuns
from spikelens.report.concise import write_concise
from spikelens.report.html import write_html
from spikelens.report.json_report import write_json
from spikelens.report.markdown import write_markdown

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from writers import _sweep_reports as sweep_reports  # noqa: E402  (the same runs as bench_sweep --synthetic)


def _fake_sweep(monkeypatch, n: int, fail_at: int | None = None, error: type[BaseException] = RuntimeError) -> None:
    monkeypatch.setattr(sweep, "source_groups", sweep_reports.groups(n))
    monkeypatch.setattr(sweep, "execute", sweep_reports.executor(fail_at, error))
    monkeypatch.setattr(sweep, "SPOOL_FROM", 2)
    monkeypatch.delenv(sweep.SPOOL_ENV, raising=False)


def _sweep(tmp_path: Path):
    (tmp_path / "logs").mkdir(parents=True, exist_ok=True)  # an empty log folder beside the spool's
    return sweep.analyze_roots([tmp_path / "logs"], Config(), keep_frames=False, spool=tmp_path / "spool")


def _parent_peak(monkeypatch, tmp_path: Path, n: int) -> tuple[int, int]:
    """tracemalloc's peak over the sweep and its JSON and concise outputs, and what the sweep
    still holds once it returns, over what was held before."""
    _fake_sweep(monkeypatch, n)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        report = _sweep(tmp_path)
        held = tracemalloc.get_traced_memory()[0] - base
        assert isinstance(report.runs, SpooledRuns) and len(report.runs) == n
        with open(os.devnull, "w") as sink:
            write_json(report, sink)
            write_concise(report, sink)
        return tracemalloc.get_traced_memory()[1] - base, held
    finally:
        tracemalloc.stop()


PEAK_PER_RUN = 500
"""Bytes a run the parent may grow by at its peak (sweep, links, JSON and concise outputs): the
arrays, the run's name and the outputs' order (~300 measured); a summary a run while the links
ran was ~1,300 (session 11), a report a run ~12,000 (session 9)."""
HELD_PER_RUN = 300
"""Bytes a run held once the sweep returns (~180 measured: name, places in the spool; was ~650)."""


def test_the_parent_grows_by_a_few_hundred_bytes_a_run(monkeypatch, tmp_path):
    # pathlib interns every run's folder name: held here, they are in the interpreter's table before the
    # sweeps, which would otherwise double it at some run count (~2 MB in one allocation, the suite's luck)
    names = [sys.intern(sweep_reports.run_name(i)) for i in range(300)]
    _parent_peak(monkeypatch, tmp_path / "warm", 10)  # first-use imports and caches are not the runs'
    small = _parent_peak(monkeypatch, tmp_path / "a", 60)
    large = _parent_peak(monkeypatch, tmp_path / "b", 300)
    del names
    peak, held = ((b - a) / 240 for a, b in zip(small, large))
    assert peak < PEAK_PER_RUN, f"{peak:.0f} bytes a run at the peak"
    assert held < HELD_PER_RUN, f"{held:.0f} bytes a run held"


def test_every_output_reads_the_runs_back_one_at_a_time(monkeypatch, tmp_path):
    """No output holds more than the run it writes (and the one before, until it is let go)."""
    _fake_sweep(monkeypatch, 80)
    report = _sweep(tmp_path)
    alive, most = [0], [0]
    table = type(report.runs.table)
    real_full = table.full

    def gone() -> None:
        alive[0] -= 1

    def full(self, k):
        rep = real_full(self, k)
        alive[0] += 1
        weakref.finalize(rep, gone)
        most[0] = max(most[0], alive[0])
        return rep

    monkeypatch.setattr(table, "full", full)
    with open(os.devnull, "w") as sink:
        for write in (write_json, write_concise, write_markdown, write_html):
            most[0] = 0
            write(report, sink)
            assert 1 <= most[0] <= 2, (write.__name__, most[0])
    # `check`: the gate counts in one pass, then each output checks the runs as it reads them back
    from spikelens.check import Policy, evaluate
    from spikelens.cli.check import write_markdown_check
    from spikelens.report.github import write_github
    from spikelens.report.json_report import write_check_json
    from spikelens.report.junit import write_junit

    most[0] = 0
    result = evaluate(report, Policy(fail_on="info"))
    assert result.n_failed == 80 and result.runs_failing == 80 and most[0] <= 2
    assert isinstance(result.report.runs, SpooledRuns) and len(result.report.runs) == 80
    with open(os.devnull, "w") as sink:
        for write in (write_check_json, write_junit, write_github, write_markdown_check):
            most[0] = 0
            write(result, sink)
            assert 1 <= most[0] <= 2, (write.__name__, most[0])
            assert len(result.gates) <= 2  # the gates of the runs alive, not of every run
        most[0] = 0
        write_concise(result.report, sink)
        assert 1 <= most[0] <= 2


class _Balance(HTMLParser):
    """Checks that every element opened is closed, in order (void elements aside)."""

    VOID = {"meta", "link", "input", "br", "img", "hr"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.ids += [v for k, v in attrs if k == "id"]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_the_page_of_many_runs_is_well_formed(monkeypatch, tmp_path):
    _fake_sweep(monkeypatch, 700)  # past MAX_CHARTED_RUNS: runs with findings get sections, at most MAX_SECTIONS
    report = _sweep(tmp_path)
    out = tmp_path / "page.html"
    with out.open("w", encoding="utf-8") as fh:
        write_html(report, fh, scratch=tmp_path)
    page = out.read_text(encoding="utf-8")
    parser = _Balance()
    parser.feed(page)
    parser.close()
    assert parser.stack == []
    assert len(parser.ids) == len(set(parser.ids))  # every id once
    assert page.count("<tr data-run=") == 700 and page.count('<section class="run"') == 400
    assert page.count('type="application/json" id="chart-') == 400
    assert "700 runs" in page and "5 other run(s)" not in page  # the links' causes reached the page
    assert "analysed with it spiked at the same step" in page
    assert sorted(os.listdir(tmp_path)) == ["logs", "page.html", "spool"]  # the charts' data file is gone


def test_the_spool_is_made_where_asked_and_removed_after_use(monkeypatch, tmp_path):
    _fake_sweep(monkeypatch, 50)
    report = _sweep(tmp_path)
    folder = report.runs.spool.folder
    assert Path(folder).parent == tmp_path / "spool" and os.path.isdir(folder)
    del report
    gc.collect()
    assert not os.path.exists(folder) and os.listdir(tmp_path / "spool") == []


def test_the_spool_folder_may_be_named_by_the_user(monkeypatch, tmp_path):
    _fake_sweep(monkeypatch, 50)
    monkeypatch.setenv(sweep.SPOOL_ENV, str(tmp_path / "named"))
    report = _sweep(tmp_path)
    assert Path(report.runs.spool.folder).parent == tmp_path / "named"
    report.runs.spool.close()
    assert os.listdir(tmp_path / "named") == []


def test_a_spool_is_never_made_in_the_logs(monkeypatch, tmp_path):
    from spikelens.errors import OutputOverlap

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "train.log").write_text("")
    _fake_sweep(monkeypatch, 50)
    # beside an output that is beside the logs: the system's temporary folder instead
    report = sweep.analyze_roots([logs], Config(), keep_frames=False, spool=logs)
    assert not Path(report.runs.spool.folder).is_relative_to(logs)
    report.runs.spool.close()
    monkeypatch.setenv(sweep.SPOOL_ENV, str(logs / "spool"))  # named by the user: refused, one line
    with pytest.raises(OutputOverlap, match="inside the logs"):
        sweep.analyze_roots([logs], Config(), keep_frames=False, spool=True)
    assert os.listdir(logs) == ["train.log"]


def _spool_folders(monkeypatch) -> list[str]:
    """The folder of every spool the test makes, in order (a spy on `Spool.__init__`)."""
    made: list[str] = []
    real = spool_mod.Spool.__init__

    def init(self, where=None):
        real(self, where)
        made.append(self.folder)

    monkeypatch.setattr(spool_mod.Spool, "__init__", init)
    return made


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_the_spool_is_removed_when_the_sweep_fails_or_is_interrupted(monkeypatch, tmp_path, error):
    made = _spool_folders(monkeypatch)
    _fake_sweep(monkeypatch, 50, fail_at=30, error=error)
    with pytest.raises(error):
        _sweep(tmp_path)
    assert len(made) == 1 and not os.path.exists(made[0])  # at once, not when the traceback is let go
    assert os.listdir(tmp_path / "spool") == []


def test_the_cli_keeps_the_spool_beside_the_html_and_removes_it(tmp_path, monkeypatch, capsys, no_workers,
                                                               in_empty_folder):
    """`analyze --html out/page.html`: the reports, frames and all, wait next to the page (not in
    a small /tmp), never in the logs, and nothing is left of them afterwards."""
    import csv

    from conftest import main_in_process

    logs = tmp_path / "logs"
    for k in range(3):
        (logs / f"r{k}").mkdir(parents=True)
        with (logs / f"r{k}" / "metrics.csv").open("w", newline="") as fh:
            csv.writer(fh).writerows([["step", "train_loss"]] + [[s, 2.0 - s / 200 + 0.01 * ((s * 7 + k) % 5)]
                                                                 for s in range(120)])
    made = _spool_folders(monkeypatch)
    monkeypatch.setattr(sweep, "SPOOL_FROM", 0)
    monkeypatch.delenv(sweep.SPOOL_ENV, raising=False)
    code, out, _ = main_in_process(capsys, "analyze", logs, "--html", tmp_path / "out" / "page.html",
                                   "--format", "concise", "-q")
    assert code in (0, None)
    assert len(made) == 1 and Path(made[0]).parent == tmp_path / "out"
    gc.collect()
    assert sorted(os.listdir(tmp_path / "out")) == ["page.html"]
    assert sorted(p.name for p in logs.rglob("*")) == ["metrics.csv"] * 3 + ["r0", "r1", "r2"]


def _alive(cls: type) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is cls)


def test_a_findings_sweep_holds_no_group_state_nor_decoded_report_a_run(monkeypatch, tmp_path):
    """--findings: each group's kept state waits in the spool (its runs' summaries say where), and
    a second sweep's reused reports are decoded into the spool, not held until their turn."""
    from spikelens import findings_data
    from spikelens.model.report import RunReport
    from spikelens.pipeline import incremental

    n = 24
    _fake_sweep(monkeypatch, n)
    monkeypatch.setattr(incremental, "group_key", sweep_reports.group_key)
    monkeypatch.setattr(incremental, "fingerprint", sweep_reports.fingerprint)
    seen: dict[str, int] = {}
    real_write, real_restore = findings_data.write, incremental.restore

    def write(*args, **kwargs):
        seen["states while written"] = _alive(findings_data.GroupState)
        return real_write(*args, **kwargs)

    def restore(state):
        seen.setdefault("reports at the first reuse", _alive(RunReport))
        return real_restore(state)

    monkeypatch.setattr(findings_data, "write", write)
    monkeypatch.setattr(incremental, "restore", restore)
    data = tmp_path / "findings.parquet"  # one file: a folder dataset writes a partition a run
    first = sweep.analyze_roots([tmp_path / "logs"], Config(), keep_frames=False, spool=tmp_path / "spool",
                                findings=data)
    first_json = _json_of(first)
    del first
    gc.collect()
    again = sweep.analyze_roots([tmp_path / "logs"], Config(), keep_frames=False, spool=tmp_path / "spool",
                                findings=data)
    assert _json_of(again) == first_json  # every run came back from the dataset, the same
    assert seen["states while written"] <= 2, seen  # was one a group (24)
    assert seen["reports at the first reuse"] <= 2, seen  # was every decoded report (24)


def _json_of(report) -> str:
    import io

    out = io.StringIO()
    write_json(report, out)
    return out.getvalue()


def _outputs(report, tmp_path: Path) -> dict[str, str]:
    import io

    outs = {}
    for write in (write_json, write_concise, write_markdown, write_html):
        buf = io.StringIO()
        write(report, buf)
        outs[write.__name__] = buf.getvalue()
    outs["warnings"] = "\n".join(report.warnings)
    outs.update(_check_outputs(report))
    return outs


def _check_outputs(report) -> dict[str, str]:
    """`spikelens check`'s outputs of the report: its JSON, JUnit, GitHub annotations, markdown
    and concise lines, under a policy that lets a fast spike pass and a baseline that absorbs
    a few findings (one recorded under a shorter name: matched by path suffix)."""
    import io
    from datetime import datetime, timezone

    from spikelens.check import Baseline, BaselineEntry, Policy, evaluate
    from spikelens.cli.check import write_markdown_check
    from spikelens.report.github import write_github
    from spikelens.report.json_report import write_check_json
    from spikelens.report.junit import write_junit

    entries = [BaselineEntry(run="g0/run", metric="train/loss", kind="spike", code="SL101", step=101),
               BaselineEntry(run="sweep-7", metric="train/loss", kind="outliers", code="SL101", step=None),
               BaselineEntry(run="solo_3", metric="train/loss", kind="level_shift", code="SL304", step=251)]
    outs = {}
    for name, policy, baseline in (("default", Policy(), None),
                                   ("baseline", Policy(fail_on="info", max_fast_spikes=1, ignore=["plateau"]),
                                    Baseline(entries=entries, path="b.json"))):
        result = evaluate(report, policy, baseline)
        writers = {"json": lambda out: write_check_json(result, out, 1),
                   "junit": lambda out: write_junit(result, out, elapsed=1.5,
                                                    timestamp=datetime(2026, 1, 2, tzinfo=timezone.utc)),
                   "github": lambda out: write_github(result, out, Path("/sweep")),
                   "markdown": lambda out: write_markdown_check(result, out, charts=False),
                   "concise": lambda out: write_concise(result.report, out)}
        for what, write in writers.items():
            buf = io.StringIO()
            write(buf)
            outs[f"check {name} {what}"] = buf.getvalue()
        outs[f"check {name} numbers"] = repr((result.counts(), result.n_failed, result.runs_failing,
                                              result.filtered_out, result.exit_code()))
    return outs


@pytest.mark.parametrize("n", [2, 3, 40])
def test_the_spooled_cross_run_work_gives_what_the_held_reports_give(monkeypatch, tmp_path, n):
    """Mirrors, names and links worked out on the spool's arrays and records: every output the
    same as a sweep that held its reports and linked them (`explain.crossrun` on reports)."""
    monkeypatch.setattr(sweep, "source_groups", sweep_reports.groups(n))
    monkeypatch.setattr(sweep, "execute", sweep_reports.executor(make=sweep_reports.linked_report))
    monkeypatch.delenv(sweep.SPOOL_ENV, raising=False)
    monkeypatch.setattr(sweep, "SPOOL_FROM", 10**9)
    held = _sweep(tmp_path / "held")
    monkeypatch.setattr(sweep, "SPOOL_FROM", 2)
    spooled = _sweep(tmp_path / "spooled")
    assert isinstance(spooled.runs, SpooledRuns) and isinstance(held.runs, list)
    a, b = _outputs(held, tmp_path), _outputs(spooled, tmp_path)
    for what in a:
        assert a[what] == b[what], what
    if n == 40:  # the sweep did give the links work: renames, a mirror, causes, promoted outliers
        names = [r.run for r in held.runs]
        assert "g0/run" in names and "display name" not in names and "team/sweep-7" in names
        assert len(held.runs) == 39 and "same curves" in a["warnings"]
        assert "spiked at the same steps" in a["write_json"] and "the same step as in" in a["write_json"]
        assert "shifted up at the same step" in a["write_json"]
        assert '"status": "baselined"' in a["check baseline json"] and '"status": "allowed"' in a["check baseline json"]
        assert "<failure" in a["check default junit"] and "::error file=" in a["check default github"]


def test_the_page_of_a_huge_sweep_lists_the_worst_runs_and_counts_the_rest(monkeypatch, tmp_path):
    import re

    from spikelens.report import html as html_mod

    monkeypatch.setattr(html_mod, "MAX_ROWS", 12)  # a sweep past the page's rows, in miniature
    monkeypatch.setattr(sweep, "source_groups", sweep_reports.groups(60))
    monkeypatch.setattr(sweep, "execute", sweep_reports.executor(make=sweep_reports.linked_report))
    monkeypatch.setattr(sweep, "SPOOL_FROM", 2)
    monkeypatch.delenv(sweep.SPOOL_ENV, raising=False)
    report = _sweep(tmp_path)
    import io

    buf = io.StringIO()
    write_html(report, buf)
    page = buf.getvalue()
    rows = re.findall(r'<tr data-run="\d+" data-sev="(\w+)"[^>]*data-name="([^"]*)"', page)
    states = {r.run: html_mod.status(r) for r in report.runs}
    worst = sorted(states, key=lambda name: (html_mod.STATUS_ORDER[states[name]], name))[:12]
    assert [name for _, name in rows] == [w.lower() for w in worst]  # the worst twelve, in page order
    ok = sum(st == "ok" for st in states.values())
    assert 0 < ok < len(states) - 12  # clean runs are among the ones left out
    note = f"This page lists the 12 worst of {len(states)} runs"
    assert note in page and f"the other {len(states) - 12} ({len(states) - 12 - ok} with warnings, {ok} clean)" in page
    assert f"<h1>spikelens analyze: {len(states)} runs</h1>" in page
    parser = _Balance()
    parser.feed(page)
    parser.close()
    assert parser.stack == []


def _junit_whole_tree(result, elapsed, timestamp) -> str:
    """JUnit as one ElementTree, indented and written whole (how `render_junit` wrote it before
    it wrote a test case at a time): the document the streamed one must equal."""
    import json
    import xml.etree.ElementTree as ET

    from spikelens.report.junit import _x, finding_line

    runs = result.report.runs
    failing = {r.run: [g for g in result.run_gates(r) if g.fails] for r in runs}
    common = {"tests": str(len(runs)), "failures": str(sum(1 for r in runs if failing[r.run])), "errors": "0",
              "time": f"{elapsed:.3f}"}
    root = ET.Element("testsuites", {"name": "spikelens check", **common})
    suite = ET.SubElement(root, "testsuite", {"name": "spikelens check", **common, "skipped": "0",
                                              "timestamp": timestamp.replace(microsecond=0).isoformat()})
    props = ET.SubElement(suite, "properties")
    for key, value in result.policy.to_json().items():
        if key != "origins":
            ET.SubElement(props, "property", name=key, value=_x(value if isinstance(value, str) else json.dumps(value)))
    for run in runs:
        attrs = {"classname": "spikelens.check", "name": _x(run.run), "time": f"{elapsed / len(runs):.3f}"}
        if run.sources:
            attrs["file"] = _x(run.sources[0])
        case = ET.SubElement(suite, "testcase", attrs)
        bad = failing[run.run]
        if bad:
            summary = f"{len(bad)} finding{'s fail' if len(bad) != 1 else ' fails'} the check: {bad[0].finding.message}"
            summary += f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            failure = ET.SubElement(case, "failure", message=_x(summary), type=_x(" ".join(sorted({g.finding.code for g in bad}))))
            failure.text = _x("\n".join(finding_line(g) for g in bad))
        rest = [g for g in result.run_gates(run) if not g.fails]
        if rest:
            ET.SubElement(case, "system-out").text = _x("\n".join(finding_line(g) for g in rest))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


@pytest.mark.parametrize("n", [0, 1, 40])
def test_check_json_and_junit_written_a_run_at_a_time_are_the_whole_documents(monkeypatch, tmp_path, n):
    """`check`'s JSON and JUnit, written run by run, are the bytes of the whole document made at once
    (`json.dumps` of the report's dict; one ElementTree indented), fields and escapes alike."""
    import io
    import json
    from datetime import datetime, timezone

    from spikelens.check import Policy, evaluate
    from spikelens.model.report import Report
    from spikelens.report.json_report import check_report_dict, write_check_json
    from spikelens.report.junit import write_junit

    monkeypatch.setattr(sweep, "source_groups", sweep_reports.groups(n))
    monkeypatch.setattr(sweep, "execute", sweep_reports.executor(make=sweep_reports.linked_report))
    monkeypatch.setattr(sweep, "SPOOL_FROM", 10**9)
    report = _sweep(tmp_path) if n else Report(command="analyze")
    if n:
        report.runs[0].run = 'odd <"name"> & \x01 tab\there'  # escapes XML and JSON must agree on
    stamp = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=timezone.utc)
    for policy in (Policy(), Policy(fail_on="info", max_fast_spikes=1)):
        result = evaluate(report, policy)
        buf = io.StringIO()
        write_check_json(result, buf, 1)
        assert buf.getvalue() == json.dumps(check_report_dict(result, 1), indent=1, allow_nan=False) + "\n"
        buf = io.StringIO()
        write_junit(result, buf, elapsed=2.25, timestamp=stamp)
        assert buf.getvalue() == _junit_whole_tree(result, 2.25, stamp)


def test_pairs_sorted_on_disk_come_out_as_sorted_gives_them(monkeypatch, tmp_path):
    """Chunks sorted, written, merged a few at a time (two rounds here): the order `sorted` gives,
    ties by position; nothing left in the folder."""
    import random

    from spikelens.pipeline import extsort

    monkeypatch.setattr(extsort, "CHUNK", 7)
    monkeypatch.setattr(extsort, "FAN_IN", 3)
    monkeypatch.setattr(extsort, "BATCH", 2)
    rng = random.Random(5)
    keys = [rng.choice(["b/run", "a/run", "run_\udcff", "é", "", "a"]) for _ in range(200)]  # ties, odd names
    pairs = [(k, i) for i, k in enumerate(keys)]
    assert list(extsort.sorted_pairs(iter(pairs), str(tmp_path))) == sorted(pairs)
    assert [i for _, i in extsort.sorted_pairs(iter(pairs), str(tmp_path))] == sorted(range(200), key=keys.__getitem__)
    assert list(extsort.sorted_pairs(iter(pairs[:5]), str(tmp_path))) == sorted(pairs[:5])  # one chunk: no file
    assert os.listdir(tmp_path) == []


def test_disk_arrays_read_back_what_was_written(tmp_path):
    from spikelens.pipeline.spool import BUFFERED, Spool

    spool = Spool(tmp_path)
    one, two, names = spool.array(), spool.array(width=2), spool.strings()
    n = 2 * BUFFERED + 7  # past the buffer twice: rows on disk and in memory
    for i in range(n):
        one.append(i * 3)
        two.append((i, -i))
        names.append(f"run {i} \udc80")  # a file name's lone surrogate survives
    one[5], one[n - 1], two[BUFFERED + 1], names[3] = -1, -2, (7, 8), "renamed"
    assert len(one) == len(two) == len(names) == n
    assert one[5] == -1 and one[n - 1] == -2 and one[-2] == (n - 2) * 3 and two[BUFFERED + 1] == (7, 8)
    assert list(one)[:6] == [0, 3, 6, 9, 12, -1] and list(two)[-1] == (n - 1, 1 - n)
    assert names[3] == "renamed" and names[n - 1] == f"run {n - 1} \udc80" and len(list(names)) == n
    assert list(two.rows(2, 4)) == [(2, -2), (3, -3)]
    steps = spool.array(width=2)
    steps.extend((s // 3, k) for k, s in enumerate(range(3 * n)))  # each step three times, ascending
    assert [steps.first_at_least(v) for v in (-5, 0, 1, n - 1, n)] == [0, 0, 3, 3 * (n - 1), 3 * n]
    with pytest.raises(IndexError):
        one[n]
    spool.close()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("n", [0, 1, 7])
def test_the_manifest_written_an_entry_at_a_time_is_the_whole_document(tmp_path, n):
    import json

    from spikelens import findings_data

    parts = {f"run={name}": f"part-{k:012x}.parquet"
             for k, name in enumerate(["a", "b%2Fc", "é ü", "run\\x", '"q"', "z" * 40, "日本"][:n])}
    findings_data._write_manifest(tmp_path / "m.json", "0123456789ab", iter(parts.items()))
    whole = json.dumps({"schema": findings_data.MANIFEST_SCHEMA, "commit": "0123456789ab", "partitions": parts},
                       indent=1) + "\n"
    assert (tmp_path / "m.json").read_text(encoding="utf-8") == whole
    assert list(findings_data._entries(tmp_path / "m.json")) == list(parts.items())  # read back line by line


def _dataset_sweep(monkeypatch, tmp_path: Path, data: Path, n: int, changed: int | None = None) -> str:
    """A synthetic sweep writing (or reusing from) a folder dataset; run `changed` has a new fingerprint."""
    from spikelens.pipeline import incremental

    _fake_sweep(monkeypatch, n)
    monkeypatch.setattr(incremental, "group_key", sweep_reports.group_key)
    monkeypatch.setattr(incremental, "fingerprint",
                        lambda g: sweep_reports.fingerprint(g) + ("*" if g[0] == changed else ""))
    (tmp_path / "logs").mkdir(exist_ok=True)
    report = sweep.analyze_roots([tmp_path / "logs"], Config(), keep_frames=False, spool=tmp_path / "spool",
                                 findings=data)
    return _json_of(report)


def test_a_dataset_listing_on_disk_writes_and_cleans_as_one_held(monkeypatch, tmp_path):
    """Past `LISTING_HELD` partitions, a folder dataset's manifest is read an entry at a time into an
    SQLite table (`_Listing`), the journal and the manifest written an entry at a time: the same
    partitions, the same rows, the same reports, nothing left behind, as with the listing held."""
    import json

    from spikelens import findings_data

    def tree(data: Path) -> dict:
        listed = json.loads((data / findings_data.MANIFEST).read_text())["partitions"]
        files = sorted(p.relative_to(data).as_posix() for p in data.glob("run=*/*"))
        assert files == sorted(f"{k}/{v}" for k, v in listed.items())  # every file listed, every listed file there
        assert not (data / findings_data.PENDING).exists()
        return {k: v.split("-")[0] for k, v in listed.items()}

    out = {}
    for held in (10**6, 3):
        monkeypatch.setattr(findings_data, "LISTING_HELD", held)
        data = tmp_path / f"data{held}"
        first = _dataset_sweep(monkeypatch, tmp_path, data, 12)
        again = _dataset_sweep(monkeypatch, tmp_path, data, 12, changed=4)  # one partition rewritten
        fewer = _dataset_sweep(monkeypatch, tmp_path, data, 9)  # three runs gone: their partitions go
        out[held] = (first, again, fewer, tree(data), findings_data.read(data).sort("run", "row"))
        assert first == again and len(tree(data)) == 9
    assert out[3][:4] == out[10**6][:4] and out[3][4].equals(out[10**6][4])
    gc.collect()  # the reports' spools
    assert os.listdir(tmp_path / "spool") == []


@pytest.mark.parametrize("old_journal", [False, True])
def test_a_killed_commit_s_files_go_whichever_journal_names_them(monkeypatch, tmp_path, old_journal):
    """The next write removes what a killed commit left (its partitions, the ones it replaced
    once the manifest moved on), from a journal of JSON lines or of an older version's one document."""
    import json

    from spikelens import findings_data

    monkeypatch.setattr(findings_data, "LISTING_HELD", 2)
    data = tmp_path / "data"
    _dataset_sweep(monkeypatch, tmp_path, data, 6)
    listed = json.loads((data / findings_data.MANIFEST).read_text())["partitions"]
    killed = "0123456789ab"
    (data / "run=run_000001" / f"part-{killed}.parquet").write_bytes(b"PAR1 half")  # written, never listed
    (data / "run=run_000002" / "part-fedcba987654.parquet").write_bytes(b"PAR1")  # replaced by the killed commit
    (data / "run=gone").mkdir()
    (data / "run=gone" / "part-aaaaaaaaaaaa.parquet").write_bytes(b"PAR1")
    replaces = {**listed, "run=run_000002": "part-fedcba987654.parquet", "run=gone": "part-aaaaaaaaaaaa.parquet"}
    journal = data / findings_data.PENDING
    if old_journal:
        journal.write_text(json.dumps({"commit": killed, "replaces": replaces}))
    else:
        journal.write_text("".join(json.dumps(x) + "\n" for x in [{"commit": killed}, *replaces.items()]))
    findings_data._recover(data)
    assert not journal.exists() and not (data / "run=gone").exists()
    files = sorted(p.relative_to(data).as_posix() for p in data.glob("run=*/*"))
    assert files == sorted(f"{k}/{v}" for k, v in listed.items())
