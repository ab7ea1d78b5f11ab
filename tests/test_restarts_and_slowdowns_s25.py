"""Endings and restarts a senior engineer reads in a log (#25, session 25).

- A JSON list of per-episode records (`json.dump(records, f, indent=2)`, the list's index its only
  step) whose `episode` goes back to 0 holds several trainings appended to one file: they are appended
  runs, as a counter that restarts in a console log is; episodes that run on are one run, and an
  iteration counter that starts again each epoch is no new training.
- A step time that ends in a few points several times its pace (a CycleGAN `loss_log.txt` whose last
  launch ran 10x slower before it stopped) rose before the log stopped, however long the run; a last
  save or evaluation (one to three slow points) and a modest last rise stay silent.
- A logged step time that rose in stages (1x, then 1.8x, then 4x) starts where it first left its
  opening pace, not at the larger second step.
- Fine-tunes on sets of other sizes appended to one log (3 epochs in 70 steps, then 3 in 226) each
  finished: no launch died there, as one killed in its second epoch and launched again did.
- A results ledger's experiments that crashed midway (autoresearch's `crash` rows) are told; one that
  crashed last is how the ledger ended, told once.
- A usage error after the training's values (argparse refusing the job's next command) is a note; a
  traceback there is still a crash.
Fixtures are written as the writers write them.
"""
from __future__ import annotations

import json
import math

import numpy as np

from spikelens.api import analyze

LOUD = ("warning", "error")


def _findings(path, kind=None):
    return [f for r in analyze(str(path), jobs=1).runs for f in r.findings if kind is None or f.kind == kind]


def _episodes(path, sessions: list[int], *, seed: int = 3):
    """A trading agent's `training_log.json`: one record per episode, sessions appended to one list
    (the script loads the list, appends its episodes and dumps it again)."""
    rng = np.random.default_rng(seed)
    records, t = [], 0
    for n in sessions:
        for ep in range(n):
            records.append({"episode": ep, "timestamp": f"2025-08-16T{5 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}",
                            "net_profit": float(150 + 30 * rng.random()), "win_rate": float(0.4 + 0.1 * rng.random()),
                            "episode_return": float(0.02 + 0.004 * ep / n + 0.001 * rng.random()),
                            "policy_loss": float(0.8 * math.exp(-ep / 60) + 0.05 * rng.random())})
            t += 7
    path.write_text(json.dumps(records, indent=2))
    return path


def test_episode_counter_back_to_zero_in_a_json_list_starts_an_appended_run(tmp_path):
    log = _episodes(tmp_path / "training_log.json", [120, 120, 120])
    resets = _findings(log, "step_reset")
    assert len(resets) == 1 and resets[0].evidence["appended_runs"] == 3
    assert resets[0].start_step == 0 and resets[0].severity == "info"


def test_episodes_that_run_on_in_a_json_list_are_one_run(tmp_path):
    log = _episodes(tmp_path / "training_log.json", [360])
    assert not _findings(log, "step_reset") and not _findings(log, "resume_overlap")


def test_episodes_of_workers_writing_one_list_are_one_run(tmp_path):
    # four workers append their episodes as they finish: the counter steps back now and then, never to 0
    rng = np.random.default_rng(5)
    done = sorted((ep * 40 + rng.uniform(0, 60), ep, w) for w in range(4) for ep in range(90))
    records = [{"episode": ep, "worker": w, "episode_return": float(10 + ep * 0.5 + rng.normal(0, 2)),
                "policy_loss": float(0.5 * math.exp(-ep / 30) + 0.02 * rng.random())} for _, ep, w in done]
    log = tmp_path / "training_log.json"
    log.write_text(json.dumps(records, indent=2))
    assert not _findings(log, "step_reset") and not _findings(log, "resume_overlap")


def _cyclegan_log(path, slow: dict[int, float], *, epochs: int = 60, per_epoch: int = 13, seed: int = 7):
    """CycleGAN's `loss_log.txt`: a header per launch, then `(epoch: e, iters: i, time: t, data: d)` and
    the losses every 100 iterations; `slow` maps a line's place from the end (1 = last) to its time."""
    rng = np.random.default_rng(seed)
    lines = ["================ Training Loss (Wed Oct 30 10:43:06 2024) ================"]
    n = epochs * per_epoch
    k = 0
    for e in range(1, epochs + 1):
        for i in range(1, per_epoch + 1):
            k += 1
            t = slow.get(n - k + 1, 1.69 + 0.05 * rng.standard_normal())
            d = 9.4 if k == 1 else 0.001 + 0.001 * rng.random()
            cyc = 0.15 + 2.5 * math.exp(-k / 40) + 0.02 * rng.random()
            lines.append(f"(epoch: {e}, iters: {i * 100}, time: {t:.3f}, data: {d:.3f}) D_A: {0.2 + 0.05 * rng.random():.3f} "
                         f"G_A: {0.5 + 0.3 * rng.random():.3f} cycle_A: {cyc:.3f} idt_A: {0.5 * cyc:.3f} "
                         f"D_B: {0.2 + 0.05 * rng.random():.3f} G_B: {0.5 + 0.3 * rng.random():.3f} "
                         f"cycle_B: {cyc * 1.1:.3f} idt_B: {0.4 * cyc:.3f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_last_points_several_times_slower_before_the_log_stops_are_a_step_time_rise(tmp_path):
    # 780 lines; the last 6 at 17-26 s against 1.7 s: fewer than the fortieth (18) the final rise needed
    slow = {6: 17.2, 5: 16.7, 4: 25.7, 3: 24.3, 2: 21.5, 1: 24.1}
    rises = _findings(_cyclegan_log(tmp_path / "loss_log.txt", slow), "step_time_rise")
    assert len(rises) == 1 and rises[0].severity in LOUD and rises[0].metric == "time"
    assert rises[0].evidence["final_stretch"] == 6 and rises[0].evidence["after"] > 10 * rises[0].evidence["before"]


def test_a_last_save_or_a_modest_last_rise_stays_silent(tmp_path):
    (tmp_path / "saved").mkdir()
    (tmp_path / "modest").mkdir()
    # a checkpoint save and an evaluation at the end: three slow points
    assert not _findings(_cyclegan_log(tmp_path / "saved" / "loss_log.txt", {3: 30.0, 2: 28.0, 1: 31.0}),
                         "step_time_rise")
    # 2x over the last 6 points: fewer than a fortieth of the run, and not several times its pace
    assert not _findings(_cyclegan_log(tmp_path / "modest" / "loss_log.txt", {k: 3.4 for k in range(1, 7)}),
                         "step_time_rise")


def _step_time_log(path, pace):
    """A console log `step N | loss x | step_time_ms y` a step, as a hand-written loop prints it."""
    rng = np.random.default_rng(11)
    lines = [f"step {s} | loss {2.0 * math.exp(-s / 400) + 0.3 + 0.01 * rng.standard_normal():.4f} | "
             f"step_time_ms {pace(s) * (1 + 0.02 * rng.standard_normal()):.1f}" for s in range(1000)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_step_time_that_rose_in_stages_starts_where_it_left_its_opening_pace(tmp_path):
    log = _step_time_log(tmp_path / "train.log", lambda s: 100.0 if s < 400 else 180.0 if s < 700 else 400.0)
    (rise,) = _findings(log, "step_time_rise")
    assert rise.severity in LOUD and 380 <= rise.start_step <= 420
    assert "in stages" in rise.message


def test_a_step_time_that_rose_once_starts_at_its_one_change(tmp_path):
    log = _step_time_log(tmp_path / "train.log", lambda s: 100.0 if s < 700 else 400.0)
    (rise,) = _findings(log, "step_time_rise")
    assert 690 <= rise.start_step <= 710 and "in stages" not in rise.message


LEDGER_HEAD = "commit\tval_bpb\tmemory_gb\tnum_steps\tstatus\tdescription\n"


def _ledger(path, n, crashed):
    """autoresearch's `results.tsv`: a row an experiment; a crashed one logs zeros (`0.000000 ... crash`)."""
    rows = [f"c{i:06x}\t0.000000\t0.0\t0\tcrash\tMXFP8: kernel not found\n" if i in crashed else
            f"c{i:06x}\t{1.5 - 0.01 * i:.6f}\t5.5\t{600 + i}\t{'keep' if i % 2 else 'discard'}\ttry {i}\n"
            for i in range(n)]
    path.write_text(LEDGER_HEAD + "".join(rows))
    return path


def test_experiments_of_a_ledger_that_crashed_midway_are_told(tmp_path):
    (ended,) = _findings(_ledger(tmp_path / "results.tsv", 30, {9, 20}), "ended_early")
    assert ended.severity == "info" and ended.evidence["ledger_failed"] == [10, 21]
    assert (ended.start_step, ended.end_step) == (10, 21) and "2 experiments" in ended.message


def test_a_ledger_whose_last_experiment_crashed_tells_it_once(tmp_path):
    (ended,) = _findings(_ledger(tmp_path / "results.tsv", 12, {11}), "ended_early")
    assert ended.severity == "error" and "experiment 12: crash" in ended.message


def test_a_ledger_without_failures_is_quiet_about_endings(tmp_path):
    assert not _findings(_ledger(tmp_path / "results.tsv", 30, set()), "ended_early")


def _phase(lines, batches: int, epochs: int, rng, *, stop=None, every: int = 50):
    """One fine-tune of a script that runs several in turn, as its prints show: `  Epoch e, Batch b/N,
    Loss: x` every `every` batches and an epoch summary; `stop` (epoch, batch) kills it there."""
    k = 0
    for e in range(1, epochs + 1):
        for b in range(0, batches, every):
            if stop is not None and (e, b) >= stop:
                return
            lines.append(f"  Epoch {e}, Batch {b}/{batches}, Loss: {4.0 * math.exp(-k / 8) + 0.05 + 0.02 * rng.random():.4f}")
            k += 1
        lines.append(f"Epoch {e}: Train F1={0.5 + 0.1 * e:.3f}, Val F1={0.45 + 0.1 * e:.3f}, Val Acc={0.5 + 0.1 * e:.3f}")


def test_fine_tunes_on_sets_of_other_sizes_appended_to_one_log_did_not_die(tmp_path):
    # four fine-tunes of 3 epochs each, on sets of 438, 120, 260 and 90 batches: each finished its epochs
    rng, lines = np.random.default_rng(1), []
    for batches in (438, 120, 260, 90):
        _phase(lines, batches, 3, rng)
    (tmp_path / "train_log.txt").write_text("\n".join(lines) + "\n")
    assert _findings(tmp_path / "train_log.txt", "step_reset")  # the runs appended are told
    assert not _findings(tmp_path / "train_log.txt", "ended_early")


def test_a_run_killed_in_its_second_epoch_and_started_again_died_there(tmp_path):
    rng, lines = np.random.default_rng(1), []
    _phase(lines, 438, 3, rng, stop=(2, 200))
    _phase(lines, 438, 3, rng)  # the same run again: the same epoch at the same step
    (tmp_path / "train_log.txt").write_text("\n".join(lines) + "\n")
    (died,) = _findings(tmp_path / "train_log.txt", "ended_early")
    assert died.severity == "info" and died.evidence["launch_died"] and "launch 1 stopped" in died.message


def _console(path, tail: list[str]):
    """A job's stdout: a training loop's `step N | loss x` lines, then what the job printed last."""
    lines = [f"step {s} | loss {2.0 * math.exp(-s / 300) + 0.3:.4f}" for s in range(0, 1000, 10)]
    path.write_text("\n".join(lines + tail) + "\n")
    return path


def test_a_usage_error_after_training_is_a_note_not_a_crash(tmp_path):
    usage = ["usage: main.py [-h] {compile,run,test,measure-performance} ...",
             "main.py: error: unrecognized arguments: -ws 8"]  # the next command of the job script, refused
    (ended,) = _findings(_console(tmp_path / "slurm.out", usage), "ended_early")
    assert ended.severity == "info" and ended.evidence["usage_error"]


def test_a_traceback_after_training_is_still_a_crash(tmp_path):
    tb = ["Traceback (most recent call last):", '  File "main.py", line 88, in <module>',
          "    loss.backward()", "RuntimeError: CUDA error: an illegal memory access was encountered"]
    (ended,) = _findings(_console(tmp_path / "slurm.out", tb), "ended_early")
    assert ended.severity == "error" and "usage_error" not in ended.evidence
