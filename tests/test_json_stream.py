"""`json_report.write_json` writes the very bytes of `render_json` (and its newline), a run
at a time: on real reports (findings, segments, warnings, non-ASCII, newlines inside
strings) and on an empty one."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

import spikelens
from spikelens.model.report import Report
from spikelens.report.json_report import render_json, write_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def report() -> Report:
    rep = spikelens.analyze(FIXTURES / "relaunches" / "keras_rerun", FIXTURES / "relaunches" / "hf_stopped",
                            keep_frames=False, jobs=1)
    rep.warnings = [*rep.warnings, "a warning\nover two lines, with \u00e9 and \"quotes\""]
    return rep


def streamed(rep: Report) -> str:
    out = io.StringIO()
    write_json(rep, out)
    return out.getvalue()


def test_the_same_bytes_as_render_json(report):
    assert len(report.runs) >= 2 and any(r.findings for r in report.runs)
    assert streamed(report) == render_json(report) + "\n"


def test_an_empty_report():
    rep = Report(command="analyze")
    assert streamed(rep) == render_json(rep) + "\n"
    rep.warnings = ["nothing read"]
    assert streamed(rep) == render_json(rep) + "\n"
