"""The verdict a report leads with, and the summary numbers beside it."""
from __future__ import annotations

import pytest

from report_cases import clean_run, nan_run, resumed_run, spiky_run
from spikelens.model.finding import Finding
from spikelens.model.report import RunReport
from spikelens.report.verdict import (counts_text, final_loss_text, kind_counts, segments_text, span_text,
                                      split_findings, status, steps_text, verdict)


def _run(*findings: Finding, main: str = "loss") -> RunReport:
    return RunReport(run="r", sources=[], segments=[], metrics={"loss": "loss", "val_loss": "eval_loss",
                                                                "grad_norm": "grad_norm"},
                     findings=list(findings), stats={"main_metric": main})


def _f(kind: str, severity: str = "warning", metric: str | None = "loss", **kw) -> Finding:
    return Finding(kind=kind, code="SL000", run="r", metric=metric, severity=severity, message=kind, **kw)


def test_sample_runs():
    assert verdict(spiky_run()) == "2 spikes recovered: 1 fast, 1 slow"
    assert verdict(nan_run()) == "diverged at step 3500; NaN at step 3610"
    assert verdict(clean_run()) == "clean (1 note)"
    assert verdict(resumed_run()) == ("1 spike at step 2005, recovered fast (38 steps); "
                                      "resumed with rollback at step 2000")


@pytest.mark.parametrize("findings, expected", [
    ((), "clean"),
    ((_f("nan", "error", start_step=3610, peak_step=3610),), "NaN at step 3610"),
    ((_f("divergence", "error", start_step=5540),), "diverged at step 5540"),
    ((_f("spike", start_step=10, peak_step=12, end_step=40, recovery="fast"),
      _f("spike", start_step=90, peak_step=91, end_step=99, recovery="fast")), "2 spikes, both recovered fast"),
    ((_f("spike", "error", start_step=10, peak_step=12, recovery="none"),), "spike at step 12 never recovered"),
    ((_f("spike", "info", start_step=7, peak_step=7, end_step=8, recovery="fast", evidence={"one_point": True}),),
     "1 one-point spike at step 7, back at the next point"),
    ((_f("oscillation", start_step=100, end_step=900),), "oscillating over steps 100–900"),
    ((_f("step_reset", "info", metric=None, extra={"resume_step": 3000}),), "step counter reset at step 3000"),
    ((_f("resume_overlap", metric=None, extra={"resume_step": 1}, evidence={"from_scratch": True}),
      _f("resume_overlap", metric=None, extra={"resume_step": 1}, evidence={"from_scratch": True}),
      _f("resume_overlap", metric=None, extra={"resume_step": 400})),
     "restarted from the beginning 2 times (step 1); resumed with rollback at step 400"),
    ((_f("resume_overlap", metric=None, extra={"resume_step": 40}),
      _f("resume_overlap", metric=None, extra={"resume_step": 40})), "resumed with rollback at step 40 (2 times)"),
    ((_f("plateau", "warning", start_step=5),), "plateau at step 5"),
    ((_f("excursion", "warning", start_step=1020, peak_step=1070, end_step=1160),), "slow excursion at step 1070"),
    ((_f("loss_scale_collapse", "warning", metric="scale", start_step=10, end_step=70),
      _f("loss_scale_collapse", "warning", metric="scale", start_step=900)), "loss scale collapsed at step 10 (+1 more)"),
    ((_f("wobble", "warning", start_step=5), _f("wobble", "error", start_step=9)), "2 other findings (wobble)"),
    ((_f("noise", "info"), _f("outliers", "info")), "clean (2 notes)"),
    # notes come after what needs attention: a one-point blip and a killed attempt's relaunch
    # (info) after a rollback warning; runs appended to one log are one note with their count
    ((_f("spike", "info", start_step=7, peak_step=7, end_step=8, recovery="fast", evidence={"one_point": True}),
      _f("resume_overlap", "info", metric=None, extra={"resume_step": 1}, evidence={"from_scratch": True}),
      _f("resume_overlap", metric=None, extra={"resume_step": 400})),
     "resumed with rollback at step 400; 1 one-point spike at step 7, back at the next point; "
     "restarted from the beginning (step 1)"),
    ((_f("step_reset", "info", metric=None, extra={"resume_step": 0}, evidence={"appended_runs": 20}),
      _f("resume_overlap", "info", metric=None, extra={"resume_step": 0},
         evidence={"from_scratch": True, "appended_runs": True})),
     "20 runs appended to one log (each from step 0; the last one is judged)"),
])
def test_verdicts(findings, expected):
    assert verdict(_run(*findings)) == expected


def test_verdict_names_the_main_loss_before_an_eval_loss_that_went_nan_first():
    run = _run(_f("nan", "error", metric="val_loss", start_step=0, peak_step=0),
               _f("nan", "error", metric="loss", start_step=1, peak_step=1))
    assert verdict(run) == "NaN at step 1"
    assert verdict(_run(_f("nan", "error", metric="val_loss", start_step=40))) == "NaN in val_loss at step 40"


def test_skipped_fp16_step_is_no_nan_verdict():
    assert verdict(_run(_f("nan", "info", metric="grad_norm", start_step=5, end_step=6))) == "clean (1 note)"


def test_status_and_counts():
    run = nan_run()
    assert status(run) == "error" and status(clean_run()) == "ok" and status(spiky_run()) == "warning"
    assert kind_counts(run) == {"divergence": 1, "nan": 2}
    assert counts_text(run) == "divergence, nan ×2"
    assert counts_text(_run()) == "—"
    assert final_loss_text(run) == "NaN"
    assert steps_text(run) == "0–3999"
    assert segments_text(resumed_run()) == "2 segments (resumed at step 2000)"


def test_split_findings_keeps_info_apart_in_step_order():
    major, notes = split_findings(spiky_run())
    assert [f.peak_step for f in major] == [3204, 5100]
    assert [f.kind for f in notes] == ["grad_norm_outlier"]


def test_span_text():
    assert span_text(_f("spike", start_step=3203, peak_step=3204, end_step=3260)) == "steps 3203–3260, peak 3204"
    assert span_text(_f("nan", start_step=10, peak_step=10)) == "from step 10"
    assert span_text(_f("resume_overlap", metric=None, extra={"resume_step": 2000, "rolled_back_from": 2199})) == \
        "at step 2000 (rolled back from 2199)"
    # after a step reset a boundary's start is the step as the file logs it: both are said
    reset = _f("step_reset", metric=None, start_step=0, evidence={"logged_first_step": 0},
               extra={"resume_step": 6, "rolled_back_from": 34})
    assert span_text(reset) == "at step 6 (logged as 0) (rolled back from 34)"
