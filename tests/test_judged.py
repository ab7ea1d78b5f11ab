"""Runs nobody tuned the detectors to (issue 25): each mechanism on a run written in a real
format that must fire, and on its look-alike that must stay quiet; the verdict's order.
Fixtures: `fixtures/writers/judged.py`, written into the test's own folder."""
from __future__ import annotations

import sys

import pytest

import spikelens
from spikelens.model.finding import Finding
from spikelens.report.verdict import status, verdict

from conftest import FIXTURES, only_run as _run, loud as _loud

sys.path.insert(0, str(FIXTURES))
from writers import judged as j  # noqa: E402


# -- 1. magnitude-aware one-step spikes


def test_single_step_jumps_of_9_to_30x_in_a_smooth_run_are_one_spike_listing_them_as_bad_batches(tmp_path):
    run = _run(j.bad_batches(tmp_path, {1200: 12.0, 1900: 30.0, 2500: 9.0}))
    (spike,) = [f for f in run.findings if f.kind == "spike"]
    assert spike.severity == "warning" and spike.evidence["steps"] == [1200, 1900, 2500]
    assert spike.start_step == 1200 and spike.peak_step == 1900
    assert "bad_batch" == spike.causes[0].cause and "1200, 1900, 2500" in spike.causes[0].evidence
    assert not [f for f in run.findings if f.kind == "outliers"]
    assert verdict(run) == "3 bad batches at steps 1200, 1900, 2500 (one-step jumps of 8.9-30x)"


def test_one_tenfold_step_is_a_bad_batch_spike(tmp_path):
    run = _run(j.bad_batches(tmp_path, {1500: 10.0}))
    (spike,) = _loud(run)
    assert spike.kind == "spike" and spike.peak_step == 1500 and 9 < spike.magnitude < 11
    assert verdict(run).startswith("bad batch at step 1500")


def test_the_same_run_without_jumps_is_clean(tmp_path):
    run = _run(j.bad_batches(tmp_path, {}))
    assert _loud(run) == [] and verdict(run) == "clean"


def test_a_run_whose_own_noise_reaches_3x_has_no_bad_batch_finding(tmp_path):
    run = _run(j.heavy_noise(tmp_path))
    assert not [f for f in run.findings if f.evidence.get("bad_batch")]


def test_fivefold_jumps_on_every_twentieth_step_are_the_runs_noise_not_bad_batches(tmp_path):
    run = _run(j.bad_batches(tmp_path, {s: 6.0 for s in range(15, 3000, 20)}))
    assert not [f for f in run.findings if f.evidence.get("bad_batch")]


# -- 2. eval-loss events in short per-epoch runs


def test_a_val_loss_of_7_4_against_1_4_at_one_epoch_is_a_spike_on_val_loss(tmp_path):
    run = _run(j.keras_val_jump(tmp_path))
    (spike,) = _loud(run)
    assert spike.kind == "spike" and spike.metric == "val_loss" and spike.peak_step == 9
    assert 4.5 < spike.magnitude < 6 and "bad_batch" not in [c.cause for c in spike.causes]
    assert verdict(run) == "val_loss jumped 5.2x for one evaluation at step 9"


def test_a_high_first_evaluation_that_falls_is_not_a_jump(tmp_path):
    run = _run(j.keras_val_jump(tmp_path, jump=None, first_high=True))
    assert _loud(run) == [] and verdict(run) == "clean"


# -- 5. reinforcement learning


def test_a_reward_that_never_rises_is_never_learned_and_a_100x_kl_step_is_a_spike_with_its_update(tmp_path):
    run = _run(j.rl_run(tmp_path))
    plateau = next(f for f in run.findings if f.kind == "plateau")
    assert plateau.metric == "env/reward_mean" and plateau.severity == "warning" and plateau.start_step == 0
    kl = next(f for f in run.findings if f.kind == "spike")
    assert kl.metric == "objective/kl" and kl.peak_step == 300 and kl.magnitude > 50
    assert "env/reward_mean" in kl.message and kl.evidence["policy_update"]["reward"]["metric"] == "env/reward_mean"
    assert not [f for f in run.findings if f.metric == "ppo/loss/total" and f.kind == "plateau"]
    assert verdict(run).startswith("never learned: env/reward_mean never rose")


def test_a_reward_that_rises_and_accuracy_rising_are_not_findings(tmp_path):
    run = _run(j.rl_run(tmp_path, learning=True, kl_jump=None))
    assert _loud(run) == [] and verdict(run) == "clean"


# -- 6. stuck at chance from the first step


def test_a_run_at_ln2_for_2900_steps_with_inf_grad_norms_is_one_never_learned_finding(tmp_path):
    run = _run(j.chance_run(tmp_path))
    (only,) = _loud(run)
    assert only.kind == "plateau" and only.severity == "warning" and only.evidence["never_learned"]
    assert only.evidence["chance_classes"] == 2
    assert only.evidence["grad_norm_nonfinite"]["points"] == 290
    assert not [f for f in run.findings if f.kind in ("spike", "oscillation", "outliers", "nan")]
    assert verdict(run) == "never learned: loss stayed at 0.6934 (ln 2, chance level) over steps 10–2900"


# -- 7. severities and settings


def test_a_1_2x_creep_that_the_lr_cut_ended_is_a_warning_said_as_a_creep(tmp_path):
    run = _run(j.creep_then_lr_cut(tmp_path))
    (div,) = [f for f in run.findings if f.kind == "divergence"]
    assert div.severity == "warning" and div.evidence["lr_cut_step"] == 2000
    assert verdict(run).startswith("crept up 1.1") and "until the LR cut at step 2000" in verdict(run)


def test_an_lr_of_5_on_every_row_is_a_settings_warning_with_the_numbers(tmp_path):
    run = _run(j.lr_five(tmp_path))
    (f,) = [f for f in run.findings if f.kind == "settings"]
    assert f.severity == "warning" and f.evidence["value"] == 5.0 and f.evidence["rows"] == f.evidence["of"] == 200
    assert "learning_rate 5 on every row" in verdict(run)


# -- 7. verdict order (findings built by hand)


def _f(kind, severity="warning", metric="loss", **kw) -> Finding:
    return Finding(kind=kind, code="SL000", run="r", metric=metric, severity=severity, message=kind, **kw)


def _report(*findings):
    from spikelens.model.report import RunReport

    return RunReport(run="r", sources=[], segments=[], metrics={"loss": "loss", "gn": "grad_norm", "val": "eval_loss"},
                     findings=list(findings), stats={"main_metric": "loss", "last_value": 1.0})


@pytest.mark.parametrize("findings, expected", [
    ((_f("spike", start_step=10, peak_step=12, end_step=40, recovery="fast"),
      _f("plateau", "error", start_step=0, end_step=2900, evidence={"never_learned": True, "level": 0.693,
                                                                    "chance_classes": 2})),
     "never learned: loss stayed at 0.693 (ln 2, chance level) over steps 0–2900; "
     "1 spike at step 12, recovered fast (28 steps)"),
    ((_f("spike", start_step=10, peak_step=12, end_step=40, recovery="fast"),
      _f("nan", "error", start_step=500)), "NaN at step 500; 1 spike at step 12, recovered fast (28 steps)"),
    ((_f("nan", "error", start_step=500), _f("ended_early", "error", metric=None, start_step=520)),
     "NaN at step 500; crashed after step 520"),
    ((_f("settings", evidence={"setting": "learning_rate", "value": 5.0, "rows": 10, "of": 10}),
      _f("spike", start_step=10, peak_step=12, end_step=40, recovery="fast")),
     "learning_rate 5 on every row; 1 spike at step 12, recovered fast (28 steps)"),
    ((_f("ended_early", "warning", metric=None, start_step=520),), "interrupted after step 520"),
    ((_f("nan", "error", start_step=1, evidence={"first_nonfinite_step": 1, "nonfinite_points": 902}),
      _f("ended_early", "error", metric=None, start_step=902)),
     "NaN from the first logged step (1); crashed after step 902"),
    ((_f("spike", "error", start_step=3, peak_step=3, recovery="none",
         evidence={"settled_plateau": {"reading": "chance", "level": 10.37, "chance_classes": 32000}}),
      _f("settings", evidence={"setting": "learning_rate", "value": 5.0, "rows": 40, "of": 40}),
      _f("plateau", "info", start_step=4, end_step=40, evidence={"note_because": "settled_level", "reading": "chance"})),
     "spike at step 3 never recovered (stuck at chance level); learning_rate 5 on every row"),
    ((_f("spike", "info", metric="val", start_step=300, peak_step=310, recovery="none",
         evidence={"note_because": "not_main"}),
      _f("oscillation", "info", metric="val", start_step=100, end_step=400, evidence={"note_because": "not_main"}),
      _f("repeated_data", "info", start_step=50, end_step=90, evidence={"note_because": "no_relaunch"}),
      _f("resume_overlap", "info", metric=None, start_step=200, end_step=260, extra={"resume_step": 200},
         evidence={"note_because": "relaunch"})),
     "resumed with rollback at step 200"),
])
def test_the_verdict_leads_with_what_cost_the_run_most(findings, expected):
    assert verdict(_report(*findings)) == expected


def test_never_clean_beside_a_warning():
    for kind in ("ended_early", "grad_norm_outlier", "settings", "wobble", "nan"):
        run = _report(_f(kind, "warning", start_step=3))
        assert status(run) == "warning" and not verdict(run).startswith("clean"), kind


# -- 4. same-step links across runs analysed together


def test_runs_side_by_side_with_bad_batches_at_the_same_steps_are_linked_with_steps_and_runs(tmp_path):
    for name, seed in (("lr1e-4", 0), ("lr3e-4", 1), ("lr1e-3", 2)):
        j.bad_batches(tmp_path / name, {700: 11.0, 2100: 14.0} if name != "lr1e-3" else {1500: 12.0}, seed=seed)
    runs = {r.run: r for r in spikelens.analyze(tmp_path, jobs=1).runs}
    a = next(f for f in runs["lr1e-4"].findings if f.kind == "spike")
    data = a.causes[0]
    assert data.cause == "data" and data.numbers["steps"] == [700, 2100] and data.numbers["runs"] == ["lr3e-4"]
    assert "700, 2100" in data.evidence and "lr3e-4" in data.evidence
    alone = next(f for f in runs["lr1e-3"].findings if f.kind == "spike")
    assert "data" not in [c.cause for c in alone.causes]


# -- 3. restarts inside one file


def _resumes(run):
    return [f for f in run.findings if f.kind in ("resume_overlap", "step_reset")]


def _appended(run):
    (f,) = [f for f in _resumes(run) if f.kind == "step_reset"]
    (relogged,) = [f for f in _resumes(run) if f.kind == "resume_overlap"]
    assert relogged.evidence["appended_runs"] and relogged.severity == "info"
    return f


def test_a_sweep_of_four_runs_appended_to_one_file_is_one_finding_listing_them(tmp_path):
    run = _run(j.appended_runs(tmp_path, 4))
    f = _appended(run)
    assert f.evidence["appended_runs"] == 4 and f.evidence["launches"] == [1, 2, 3] and len(run.segments) == 4
    assert "launches 2–4" in f.message and f.severity == "info"


def test_a_script_run_twice_into_one_file_is_a_new_run_not_a_rollback(tmp_path):
    run = _run(j.appended_runs(tmp_path, 2))
    f = _appended(run)
    assert f.extra["resume_step"] == 1 and f.evidence["reached_steps"] == [120] and f.severity == "info"
    assert verdict(run).startswith("2 runs appended to one log (each from step 1")


def test_a_first_attempt_killed_after_one_step_that_the_relaunch_relogged_is_named(tmp_path):
    run = _run(j.appended_runs(tmp_path, 1, killed_first=True))
    (f,) = [f for f in _resumes(run) if f.kind == "resume_overlap"]
    assert f.evidence["killed_at_start"] and f.extra["resume_step"] == 1
    assert f.severity == "info" and [s["last_step"] for s in run.segments] == [1, 120]
    # the counter went back to the run's first step: a restart from scratch, as an engineer reads it
    (reset,) = [f for f in _resumes(run) if f.kind == "step_reset"]
    assert reset.severity == "info" and reset.start_step == 1 and reset.evidence["killed_early"]


def test_one_launch_and_a_lightning_csv_with_epoch_in_train_and_val_rows_are_not_restarts(tmp_path):
    assert _resumes(_run(j.appended_runs(tmp_path / "one", 1))) == []
    run = _run(j.lightning_csv(tmp_path / "pl"))
    assert _resumes(run) == [] and len(run.segments) == 1


def test_a_loss_term_switched_on_after_sitting_at_zero_is_no_spike(tmp_path):
    """YOLOX adds its L1 loss for the last epochs: the term logs exactly 0 until then. Its first
    values are the term switching on, not a spike of 'x times' a level of 0."""
    import csv
    import json

    from conftest import run_cli

    path = tmp_path / "run" / "metrics.csv"
    path.parent.mkdir()
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", "train/loss", "train/l1_loss"])
        for s in range(400):
            total = 3.0 * (0.995 ** s) + 1.0 + 0.01 * ((s * 37) % 7 - 3)
            l1 = 0.0 if s < 300 else 0.3 + 0.005 * ((s * 13) % 5)
            w.writerow([s, f"{total:.5f}", f"{l1:.4f}"])
    res = run_cli("analyze", path.parent, "--format", "json")
    assert res.returncode == 0, res.stderr
    findings = json.loads(res.stdout)["runs"][0]["findings"]
    assert not [f for f in findings if f["metric"] == "train/l1_loss" and f["kind"] == "spike"], findings


def test_a_reward_flat_over_a_few_dozen_noisy_points_is_only_a_note(tmp_path):
    """40 GRPO rewards whose step-to-step swing is as large as their level cannot tell a slow rise
    from noise: 'never rose' is a note, not a warning (a shared real run labelled clean)."""
    root = j.rl_run(tmp_path, kl_jump=None, steps=40)
    run = _run(root)
    flat = [f for f in run.findings if f.kind == "plateau" and f.metric == "env/reward_mean"]
    assert flat and all(f.severity == "info" for f in flat)
