"""`--format markdown`: a golden, and the escaping that keeps tables and text intact."""
from __future__ import annotations

import re

from report_cases import clean_run, sample_report, spiky_run
from spikelens.model.finding import Finding
from spikelens.report.markdown import escape, render_markdown
from spikelens.model.report import Report
from test_report_terminal import check_golden


def test_golden():
    check_golden("analyze.md", render_markdown(sample_report()))


def test_structure():
    md = render_markdown(sample_report())
    assert md.startswith("# spikelens analyze: 4 runs — 1 with errors, 2 with warnings, 1 clean\n")
    rows = [l for l in md.splitlines() if l.startswith("| ")]
    assert len(rows) == 1 + 4
    assert md.count("\n## ") == 4 + 1  # one section per run with findings, plus the warnings
    assert md.count("```text") == md.count("```") // 2 == 6  # one chart per finding needing attention
    assert "## Warnings while reading" in md and "truncated record at byte 4120" in md
    assert "- **grad_explosion** (80%): train/grad_norm rose 4.0x" in md


def _cells(row: str) -> list[str]:
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_table_survives_pipes_and_markup_in_names():
    run = spiky_run()
    run.run = "exp|a*b_<c>"
    run.findings[0].message = "loss | spiked *hard* at `step`"
    md = render_markdown(Report("analyze", [run, clean_run()]))
    rows = [l for l in md.splitlines() if l.startswith("| ")]
    assert all(len(_cells(r)) == 8 for r in rows)
    assert "exp\\|a\\*b\\_\\<c\\>" in md
    assert "loss \\| spiked \\*hard\\* at \\`step\\`" in md


def test_escape_keeps_snake_case_readable():
    assert escape("train/grad_norm") == "train/grad_norm"
    assert escape("_private_") == "\\_private\\_"


def test_empty_report():
    md = render_markdown(Report("analyze"))
    assert md == "# spikelens analyze: 0 runs, nothing to report\n"


def test_run_level_finding_without_metric():
    run = clean_run()
    run.findings.append(Finding(kind="step_gap", code="SL305", run=run.run, metric=None, severity="warning",
                                message="steps jump from 1200 to 1800", start_step=1200, end_step=1800))
    md = render_markdown(Report("analyze", [run]))
    assert "### 🟠 warning: step_gap (SL305), steps 1200–1800" in md
