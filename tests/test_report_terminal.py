"""The Rich terminal report, compared with goldens rendered into a fixed-width console.

Regenerate the goldens after an intended change with
`SPIKELENS_UPDATE_GOLDENS=1 pytest tests/test_report_terminal.py tests/test_report_markdown.py`
and read the diff before committing it.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from report_cases import clean_run, nan_run, sample_report, spiky_run
from spikelens.model.report import Report
from spikelens.report.terminal import render_terminal

GOLDEN = Path(__file__).parent / "golden"


def render(report: Report, width: int = 100, **kw) -> str:
    console = Console(width=width, record=True, color_system=None, force_terminal=False, file=open(os.devnull, "w"))
    render_terminal(report, console, **kw)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("SPIKELENS_UPDATE_GOLDENS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with SPIKELENS_UPDATE_GOLDENS=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name, width, verbose", [
    ("analyze_terminal_100.txt", 100, False),
    ("analyze_terminal_80.txt", 80, False),
    ("analyze_terminal_verbose_100.txt", 100, True),
])
def test_golden(name, width, verbose):
    check_golden(name, render(sample_report(), width, verbose=verbose))


def test_golden_no_runs():
    check_golden("analyze_terminal_empty.txt", render(Report(command="analyze")))


def test_rendering_is_deterministic_and_sorted_by_run():
    a = render(sample_report())
    rep = sample_report()
    rep.runs.reverse()
    assert render(rep) == a
    order = [a.index(f"\n{name}") for name in ("bert-resume", "clean-baseline", "gpt-small-3", "llama-fp16")]
    assert order == sorted(order)


def test_leads_with_the_verdicts_then_the_details():
    text = render(sample_report())
    table_end = text.index("✗ llama-fp16")
    assert text.index("diverged at step 3500") < table_end
    assert "1 with errors, 2 with warnings, 1 clean" in text.splitlines()[0]
    # every finding that needs attention is there with its causes and next steps
    assert "grad_explosion 80%" in text and "fp16_overflow 70%" in text
    assert text.count(" WARNING ") == 3 and text.count(" ERROR ") == 3
    assert "Train in bf16 instead of fp16" in text


def test_info_findings_are_one_line_notes_unless_verbose():
    quiet = render(Report("analyze", [spiky_run()]))
    loud = render(Report("analyze", [spiky_run()]), verbose=True)
    assert "• grad_norm_outlier  train/grad_norm reached" in quiet
    assert " INFO  grad_norm_outlier" in loud and " INFO " not in quiet


def test_no_chart_option_and_clean_runs_have_no_details():
    with_charts = render(Report("analyze", [spiky_run(), clean_run()]))
    without = render(Report("analyze", [spiky_run(), clean_run()]), charts=False)
    assert "┤" in with_charts and "┤" not in without
    assert "✓ clean-baseline: clean (1 note)" in with_charts


def test_tips_are_not_repeated_within_a_run():
    text = render(Report("analyze", [nan_run()]))
    assert text.count("Train in bf16 instead of fp16") == 1
    assert "as above" in text


def test_many_findings_are_capped_unless_verbose():
    from spikelens.model.finding import Finding
    from spikelens.report.terminal import MAX_DETAILED

    run = spiky_run()
    run.findings = [Finding(kind="spike", code="SL101", run=run.run, metric="train/loss", severity="warning",
                            message=f"spike number {i}", start_step=100 * i, peak_step=100 * i + 1,
                            end_step=100 * i + 5, recovery="fast") for i in range(1, MAX_DETAILED + 6)]
    text = render(Report("analyze", [run]), charts=False)
    assert text.count(" WARNING ") == MAX_DETAILED and "… and 5 more finding(s)" in text
    assert render(Report("analyze", [run]), charts=False, verbose=True).count(" WARNING ") == MAX_DETAILED + 5
