"""A log holding many appended runs gets one clause for its earlier runs that never learned,
beside the appended runs, not one 'never learned' per run and level at the head of the verdict
(#25: an xlm-r log of 56 appended fine-tunes read as twelve never-learned clauses)."""
from __future__ import annotations

from spikelens.model.finding import Finding
from spikelens.model.report import RunReport
from spikelens.report.verdict import verdict


def _run(*findings: Finding) -> RunReport:
    return RunReport(run="r", sources=[], segments=[], metrics={"loss": "loss", "val_acc": "accuracy"},
                     findings=list(findings), stats={"main_metric": "loss"})


def _earlier(index: int, metric: str, level: float) -> Finding:
    """An earlier run's never-learned plateau as sessions.py keeps it: a note naming its run."""
    return Finding(kind="plateau", code="SL205", run="r", metric=metric, severity="info",
                   message=f"run {index} of 9 appended to this log: {metric} never improved", start_step=1, end_step=10,
                   evidence={"reading": "never", "level": level, "higher_is_better": True, "never_learned": True,
                             "session": {"index": index, "of": 9, "first_step": 1, "last_step": 10,
                                         "severity_alone": "warning"}})


APPENDED = Finding(kind="step_reset", code="SL302", run="r", metric=None, severity="warning", message="reset",
                   start_step=1, evidence={"appended_runs": 9}, extra={"resume_step": 1})
OVERFIT = Finding(kind="overfitting", code="SL206", run="r", metric="val_loss", severity="warning",
                  message="overfitting", start_step=6, end_step=10)


def test_earlier_runs_that_never_learned_are_one_clause_beside_the_appended_runs():
    earlier = [_earlier(i, m, lv) for i, (m, lv) in enumerate([("val_acc", 0.849), ("val_acc", 0.853),
                                                                ("val_f1", 0.475), ("val_acc", 0.8535)], 1)]
    text = verdict(_run(*earlier, OVERFIT, APPENDED))
    assert text.count("never learned") == 1 and not text.startswith("never learned")
    assert "9 runs appended to one log (each from step 1; the last one is judged); never learned in 4 of the 9 runs " \
           "appended to this log (val_acc, val_f1; steps 1–10)" in text


def test_an_earlier_run_whose_score_stalled_or_did_not_show_learning_is_not_counted():
    stalled = Finding(kind="plateau", code="SL205", run="r", metric="val_f1", severity="info", message="stalled",
                      start_step=2, end_step=10, evidence={"reading": "stalled", "direction": "higher",
                                                          "session": {"index": 5, "of": 9, "first_step": 1,
                                                                      "last_step": 10}})
    text = verdict(_run(_earlier(1, "val_acc", 0.8), stalled, OVERFIT, APPENDED))
    assert "never learned in 1 of the 9 runs appended to this log: val_acc never rose (0.8 over steps 1–10)" in text


def test_without_a_step_reset_finding_the_clause_still_comes_once_after_the_run_judged():
    text = verdict(_run(_earlier(1, "val_acc", 0.8), _earlier(2, "val_acc", 0.81), OVERFIT))
    assert text.startswith("overfitting") and text.count("never learned in 2 of the 9 runs") == 1


def test_a_reward_that_fell_collapsed_rather_than_diverged():
    fell = Finding(kind="divergence", code="SL202", run="r", metric="reward", severity="warning", message="collapsed",
                   start_step=400, evidence={"higher_is_better": True})
    run = _run(fell)
    run.metrics["reward"] = "reward"
    assert verdict(run).startswith("collapsed") and "diverged" not in verdict(run)
