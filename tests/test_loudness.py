"""What stays loud (`detect/significance.py`, issue 25): an alarm needs evidence beyond the run's
own noise and a consequence an engineer would act on. An event on one term that the main loss
did not feel, a recovered wander under 2x, repeated data with no relaunch to cause it and a
relaunch itself are notes; each loud look-alike still fires.
Fixtures: `fixtures/writers/loudness.py`, written into the test's own folder."""
from __future__ import annotations

import sys

import numpy as np

import spikelens
from spikelens.detect.base import RunContext, Series
from spikelens.detect.significance import weigh
from spikelens.model.finding import Finding

from conftest import FIXTURES, only_run as _run, loud as _loud

sys.path.insert(0, str(FIXTURES))
from writers import curve_kinds as ck  # noqa: E402
from writers import loudness as lw  # noqa: E402


def test_a_5x_climb_of_a_term_at_3_percent_of_the_total_is_the_terms_note(tmp_path):
    run = _run(lw.terms(tmp_path / "term"))
    assert _loud(run) == []
    (note,) = [f for f in run.findings if f.metric == "loss_weak"]
    assert note.evidence["note_because"] == "not_main" and note.magnitude > 4
    assert "total_loss, the run's main loss, shows no event there" in note.message


def test_the_same_climb_on_the_total_is_loud(tmp_path):
    (spike,) = _loud(_run(lw.terms(tmp_path / "total", on="total_loss")))
    assert spike.metric == "total_loss" and spike.kind == "spike" and spike.magnitude > 4


def test_a_1_6x_bump_that_came_back_is_a_note_and_a_2_5x_bump_is_loud(tmp_path):
    run = _run(ck.bump(tmp_path / "small", ratio=1.6))
    assert _loud(run) == []
    assert [f for f in run.findings if f.evidence.get("note_because") == "small_recovered"]
    assert _loud(_run(ck.bump(tmp_path / "big", ratio=2.5)))


def test_a_rollback_to_a_checkpoint_is_a_relaunch_note_that_the_verdict_still_names(tmp_path):
    from spikelens.report.verdict import status, verdict

    run = _run(lw.rollback(tmp_path))
    (back,) = [f for f in run.findings if f.kind == "resume_overlap"]
    assert back.severity == "info" and back.evidence["note_because"] == "relaunch"
    assert back.extra["resume_step"] == 800 and back.extra["rolled_back_from"] == 1199
    assert status(run) == "ok" and "resumed with rollback at step 800" in verdict(run)


def test_a_dip_and_jump_back_with_no_relaunch_is_a_repeated_data_note(tmp_path):
    run = _run(lw.undone_dip(tmp_path))
    (rep,) = [f for f in run.findings if f.kind == "repeated_data"]
    assert rep.severity == "info" and rep.evidence["note_because"] == "no_relaunch"
    assert (rep.start_step, rep.end_step) == (1000, 2000)


def _ctx() -> RunContext:
    step = np.arange(0, 1000, 10)
    s = {m: Series(m, r, step, np.linspace(2, 1, step.size)) for m, r in
         (("total_loss", "loss"), ("loss_ce", "loss"), ("val_loss", "eval_loss"), ("val_ce", "eval_loss"))}
    s["total_loss"].value = s["total_loss"].value + 3  # the largest: the total
    return RunContext(run="r", roles={m: x.role for m, x in s.items()}, series=s)


def _f(kind, metric, start, end=None, severity="warning", **kw):
    return Finding(kind=kind, code="SL000", run="r", metric=metric, severity=severity, message=kind,
                   start_step=start, end_step=end, **kw)


def test_a_term_diverging_inside_the_totals_spike_is_its_echo_and_the_main_events_stay_loud():
    spike = _f("spike", "total_loss", 400, 450, peak_step=420, recovery="fast", magnitude=4.0)
    div = _f("divergence", "loss_ce", 380, None, severity="error", magnitude=600.0)
    over = _f("overfitting", "val_loss", 300, 990, magnitude=1.3)
    side = _f("overfitting", "val_ce", 600, 990, magnitude=1.5)
    weigh([spike, div, over, side], _ctx())
    assert (spike.severity, over.severity) == ("warning", "warning")  # the main loss and the main eval loss
    assert div.severity == "info" and "the same steps as the spike of total_loss" in div.message
    assert spike.evidence["echoes"] == [{"metric": "loss_ce", "kind": "divergence", "step": 380, "severity": "error"}]
    assert side.severity == "info" and "val_loss" in side.message  # an echo of the main eval loss's overfitting


def test_a_side_eval_losss_overfitting_that_lists_the_main_eval_loss_as_moved_never_says_it_showed_nothing():
    side = _f("overfitting", "val_ce", 600, 990, magnitude=1.3, evidence={"also_on": [
        {"metric": "val_loss", "kind": "overfitting", "step": 640, "severity": "warning", "ratio": 1.04}]})
    alone = _f("overfitting", "val_ce", 600, 990, magnitude=1.3)
    weigh([side], _ctx()), weigh([alone], _ctx())
    assert side.severity == "info" and side.evidence["note_because"] == "not_main"
    assert "val_loss, the run's main eval loss, moved with it (1.04x)" in side.message
    assert "shows no event there" not in side.message
    assert "val_loss, the run's main eval loss, shows no event there" in alone.message


def test_nan_and_crashes_are_never_demoted():
    nan = _f("nan", "loss_ce", 500, None, severity="error")
    crash = _f("ended_early", None, 900, 900, severity="error")
    weigh([nan, crash], _ctx())
    assert (nan.severity, crash.severity) == ("error", "error")


def test_an_lr_of_5_that_blew_the_loss_up_to_chance_is_the_settings_event_with_no_batches_to_skip(tmp_path):
    from spikelens.explain.catalog import next_steps
    from spikelens.report.verdict import verdict

    run = _run(lw.lr_blowup(tmp_path / "lr5"))
    (spike,) = [f for f in run.findings if f.kind == "spike"]
    assert spike.severity == "error" and spike.causes[0].cause == "setting" and "remedy" not in spike.evidence
    assert spike.evidence["settled_plateau"]["reading"] == "chance"
    assert not any("skip" in t.lower() and "batch" in t.lower() and "no batch" not in t for t in next_steps(spike))
    (flat,) = [f for f in run.findings if f.kind == "plateau"]
    assert flat.severity == "info" and flat.evidence["note_because"] == "settled_level"
    # one root cause, one alarm: the setting is the spike's cause, a note the verdict still names
    (lr,) = [f for f in run.findings if f.kind == "settings"]
    assert lr.severity == "info" and lr.evidence["drove"]["kind"] == "spike" and len(_loud(run)) == 1
    assert verdict(run) == "spike at step 3 never recovered (stuck at chance level); learning_rate 5 on every row"
    settings = next(f for f in run.findings if f.kind == "settings")
    assert not any("loss scaling" in t for t in next_steps(settings))  # the LR's advice, not fp16's


def test_the_same_blow_up_at_a_sane_lr_keeps_its_skip_remedy(tmp_path):
    run = _run(lw.lr_blowup(tmp_path / "sane", lr=2e-5))
    (spike,) = [f for f in run.findings if f.kind == "spike"]
    assert not [c for c in spike.causes if c.cause == "setting"] and spike.evidence["remedy"]["skip_batches"]


def test_a_plateau_the_loss_broke_out_of_after_15_percent_of_the_run_is_a_delay_and_after_40_an_alarm():
    short = _f("plateau", "total_loss", 210, 360, evidence={"reading": "breakthrough"})
    long = _f("plateau", "total_loss", 100, 500, evidence={"reading": "breakthrough"})
    stuck = _f("plateau", "total_loss", 0, 990, evidence={"reading": "chance"})
    weigh([short], _ctx()), weigh([long], _ctx()), weigh([stuck], _ctx())
    assert short.severity == "info" and short.evidence["note_because"] == "short_stall" and "delay" in short.message
    assert (long.severity, stuck.severity) == ("warning", "warning")


def _printed_log(path, level: float, jump_at: int, jump: float, decimals: int = 4, n: int = 400):
    """A console log from step 140000 on (no start to compare with), values printed at `decimals`,
    with a three-point jump to `jump` times the level at `jump_at`."""
    rng = np.random.default_rng(3)
    lines = []
    for i in range(n):
        value = level * (1 + 0.3 * rng.standard_normal()) if not jump_at <= i < jump_at + 3 else level * jump
        lines.append(f"step {140000 + 10 * i} | loss {max(value, 0):.{decimals}f} | lr 2.0e-05")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_jump_of_a_few_printed_units_near_zero_is_rounding_and_a_real_jump_stays_loud(tmp_path):
    near_zero = spikelens.analyze(_printed_log(tmp_path / "a" / "train.log", 0.0002, 200, 8.0), jobs=1).runs[0]
    spikes = [f for f in near_zero.findings if f.kind == "spike"]
    assert spikes and _loud(near_zero) == []
    assert any(f.evidence.get("note_because") == "rounding" and "units of the 0.0001" in f.message for f in spikes)
    real = spikelens.analyze(_printed_log(tmp_path / "b" / "train.log", 0.5, 200, 8.0), jobs=1).runs[0]
    assert [f.kind for f in _loud(real)] == ["spike"]
