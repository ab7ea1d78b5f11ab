"""The order a senior engineer writes a verdict in (issue 25): never learned, then what ended or
ruined the run (NaN, crash, divergence, a spike it never came back from, in the order they
happened), a wrong setting beside the event it drove, then what it recovered from, notes last;
never 'clean' beside a finding that needs attention."""
from __future__ import annotations

import itertools

import pytest

from spikelens.model.finding import Finding
from spikelens.model.report import RunReport
from spikelens.report.verdict import verdict


def _run(*findings: Finding) -> RunReport:
    return RunReport(run="r", sources=[], segments=[], metrics={"loss": "loss", "val_loss": "eval_loss"},
                     findings=list(findings), stats={"main_metric": "loss"})


def _f(kind: str, severity: str = "warning", metric: str | None = "loss", **kw) -> Finding:
    return Finding(kind=kind, code="SL000", run="r", metric=metric, severity=severity, message=kind, **kw)


NEVER = _f("plateau", start_step=0, end_step=2900,
           evidence={"never_learned": True, "reading": "chance", "level": 0.6931, "chance_classes": 2})
NAN = _f("nan", "error", start_step=3610, peak_step=3610)
CRASH = _f("ended_early", "error", metric=None, start_step=3700)
DIV = _f("divergence", "error", start_step=3500)
SPIKE = _f("spike", start_step=100, peak_step=101, end_step=130, recovery="fast", magnitude=3.0)
BLIP = _f("spike", "info", start_step=7, peak_step=7, end_step=8, recovery="fast", evidence={"one_point": True})


@pytest.mark.parametrize("order", list(itertools.permutations([NEVER, NAN, DIV, SPIKE, BLIP])))
def test_never_learned_then_what_ruined_the_run_then_spikes_whatever_the_input_order(order):
    # a one-point blip that came back is filler beside 'never learned': not said
    assert verdict(_run(*order)) == (
        "never learned: loss stayed at 0.6931 (ln 2, chance level) over steps 0–2900; diverged at step 3500; "
        "NaN at step 3610; 1 spike at step 101, recovered fast (29 steps)")


def test_without_never_learned_the_blip_is_said_last():
    assert verdict(_run(BLIP, SPIKE, DIV)) == ("diverged at step 3500; 1 spike at step 101, recovered fast (29 steps); "
                                               "1 one-point spike at step 7, back at the next point")


def test_a_held_out_score_that_never_rose_is_a_note_beside_a_nan_and_leads_when_alone():
    wer = _f("plateau", "info", metric="eval_wer", start_step=132, end_step=2640,
             evidence={"reading": "never", "higher_is_better": True, "held_out": True, "level": 92.91})
    assert verdict(_run(wer, NAN)) == "NaN at step 3610"
    assert verdict(_run(wer)).startswith("never learned: eval_wer never rose")


def test_swings_that_are_notes_stay_on_their_card():
    calm = _f("oscillation", "info", start_step=354, end_step=500)
    assert verdict(_run(calm)) == "clean (1 note)"
    assert verdict(_run(calm, _f("overfitting", metric="val_loss", start_step=30))) == \
        "overfitting after the eval minimum at step 30"


def test_a_frozen_series_is_said_as_frozen():
    frozen = _f("plateau", metric="loss/entropy_loss", start_step=0, end_step=98304,
                evidence={"reading": "frozen", "level": -0.349651})
    assert verdict(_run(frozen)) == "loss/entropy_loss frozen at -0.3497 from step 0"


def test_a_crash_is_said_after_the_nan_that_led_to_it_and_first_when_alone():
    assert verdict(_run(CRASH, NAN)) == "NaN at step 3610; crashed after step 3700"
    assert verdict(_run(SPIKE, CRASH)) == "crashed after step 3700; 1 spike at step 101, recovered fast (29 steps)"


def test_a_setting_that_drove_an_event_is_named_right_after_it_with_its_weight():
    spike = _f("spike", "error", start_step=3, peak_step=3, recovery="none")
    lr = _f("settings", "info", metric="learning_rate", start_step=1,
            evidence={"setting": "learning_rate", "value": 5.0, "rows": 40, "of": 40, "note_because": "drove_event",
                      "drove": {"kind": "spike", "metric": "loss", "step": 3, "severity": "error"}})
    assert verdict(_run(SPIKE, lr, spike)) == ("spike at step 3 never recovered; learning_rate 5 on every row; "
                                               "1 spike at step 101, recovered fast (29 steps)")


@pytest.mark.parametrize("kind", ["plateau", "excursion", "overfitting", "stall", "memory_growth", "wobble",
                                  "level_shift", "oscillation", "settings", "ended_early"])
def test_never_clean_beside_a_warning(kind):
    text = verdict(_run(_f(kind, start_step=50, end_step=60, evidence={"setting": "lr", "value": 1.0})))
    assert text and not text.startswith("clean") and "clean" not in text


def test_notes_alone_are_clean_with_their_count():
    assert verdict(_run(BLIP, _f("noise", "info"))) == "1 one-point spike at step 7, back at the next point"
    assert verdict(_run(_f("noise", "info"), _f("outliers", "info"))) == "clean (2 notes)"
