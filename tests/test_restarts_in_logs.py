"""Restarts told apart by what the log shows (#25): a rollback re-logs steps with the loss near
the level it had there (SL301, a warning); a relaunch of an attempt killed early re-logs its few
steps (SL301, a note); runs appended to one log start again from the first step with the loss
at its first level (SL302 `appended_runs`, a note listing them, however many). Files are written
here as the scripts that make them do: JSON lines appended by a training loop, a PPO
`progress.csv` opened in append mode, a console log of a sweep."""
from __future__ import annotations

import csv
import json
import math

import numpy as np

import spikelens
from spikelens.report.verdict import verdict


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _kinds(run, *names):
    return [f for f in run.findings if f.kind in names]


def _loss(step: int, seed: int = 0) -> float:
    """An LM curve from ln(50k) towards 2.1, with a little deterministic noise."""
    return 2.1 + 8.7 * math.exp(-step / 600) + 0.01 * math.sin(7.3 * step + seed)


def _jsonl(path, rows):
    with open(path, "a") as fh:  # each session appends, as `open(..., "a")` in a training loop does
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def _session(lo: int, hi: int, seed: int, every: int = 20):
    return [{"step": s, "loss": _loss(s, seed), "lr": 3e-4 * min(1.0, s / 500), "tokens": s * 524288}
            for s in range(lo, hi + 1, every)]


def test_jsonl_killed_attempts_and_a_rollback_to_a_checkpoint(tmp_path):
    """Attempt 1 logs step 20 and dies; attempt 2 logs 20 and 40 and dies; attempt 3 trains to
    7580; a resume from the 7500 checkpoint re-logs 7520-7580 (the step goes back once)."""
    path = tmp_path / "metrics.jsonl"
    _jsonl(path, _session(20, 20, 1))
    _jsonl(path, _session(20, 40, 2))
    _jsonl(path, _session(20, 7580, 3))
    _jsonl(path, _session(7520, 9000, 4))
    run = _run(path)
    killed, rollback = sorted(_kinds(run, "resume_overlap"), key=lambda f: f.start_step)
    assert killed.severity == "info" and killed.evidence["killed_early"] and killed.extra["resume_step"] == 20
    assert killed.evidence["restarts"] == 2 and "2 attempts stopped early" in killed.message
    assert rollback.severity == "info" and (rollback.extra["resume_step"], rollback.extra["rolled_back_from"]) == \
        (7520, 7580)
    (restart,) = _kinds(run, "step_reset")  # the note that the counter went back to the start, no reset warning
    assert restart.severity == "info" and restart.evidence["killed_early"] and restart.start_step == 20


def test_jsonl_with_every_line_written_twice_by_two_ranks_is_one_launch(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rows = _session(20, 4000, 5)
    _jsonl(path, [r for row in rows for r in (row, row)])
    run = _run(path)
    assert len(run.segments) == 1 and not _kinds(run, "resume_overlap", "step_reset")


def _progress(path, sessions):
    """A PPO script's `progress.csv` opened in append mode by each session (SB3's columns)."""
    cols = ["total timesteps", "ep_rew_mean", "value_loss", "policy_gradient_loss", "total_loss"]
    with open(path, "a", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for n_steps, updates, seed in sessions:
            rng = np.random.default_rng(seed)
            for k in range(1, updates + 1):
                t = k * n_steps
                w.writerow([t, -600 + 680 * (1 - math.exp(-t / 40_000)) + rng.normal(0, 5),
                            0.07 * math.exp(-t / 30_000) + 0.001, 0.01 * rng.normal(), 0.2 * math.exp(-t / 50_000)])


def test_ppo_progress_with_a_second_session_on_another_rollout_size_is_a_run_appended(tmp_path):
    path = tmp_path / "progress.csv"
    _progress(path, [(5120, 4, 1), (1280, 144, 2)])
    run = _run(path)
    (new,) = _kinds(run, "step_reset")
    assert new.evidence["appended_runs"] == 2 and new.severity == "info" and new.extra["resume_step"] == 1280
    assert not [f for f in _kinds(run, "resume_overlap") if f.severity != "info"]


def _sweep_log(path, runs: int, epochs: int = 10):
    """A course script training one model after another into one console log."""
    lines = []
    for k in range(runs):
        lines.append(f"== model {k}: lr={1e-3 * (k + 1):g}")
        for e in range(1, epochs + 1):
            lines.append(f"Epoch {e}/{epochs}: Loss = {3.4 + 0.05 * k - 0.6 * math.log(e) + 0.01 * math.sin(k + e):.4f}")
    path.write_text("\n".join(lines) + "\n")


def test_two_dozen_runs_appended_to_one_console_log_are_one_quiet_finding(tmp_path):
    path = tmp_path / "train_log.txt"
    _sweep_log(path, 24)
    run = _run(path)
    (new,) = _kinds(run, "step_reset")
    assert new.evidence["appended_runs"] == 24 and "launches 2–24" in new.message
    assert new.severity == "info" and not [f for f in run.findings if f.severity != "info"]
    assert verdict(run).startswith("24 runs appended to one log (each from step 1")


def test_one_console_run_is_not_a_restart(tmp_path):
    path = tmp_path / "train_log.txt"
    _sweep_log(path, 1)
    assert not _kinds(_run(path), "resume_overlap", "step_reset")
