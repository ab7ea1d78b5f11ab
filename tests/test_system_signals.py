"""Beyond the loss (#27): throughput, step time, stalls, memory, out-of-memory crashes and
the rank that went bad, on logs written here in the formats trainers print."""
from __future__ import annotations

import math
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from spikelens.api import analyze

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))
from writers.nanochat import write_nanochat  # noqa: E402

T0 = datetime(2025, 1, 1, 10, 0, 0, tzinfo=timezone.utc)
LOUD = ("warning", "error")
SYSTEM = ("throughput_drop", "step_time_rise", "stall", "memory_growth", "rank_outlier")


def _titan(path: Path, n: int = 400, *, tps_at=None, mem=None, gaps=None, tail: str = "", seed: int = 0,
           spike: int | None = None) -> Path:
    """A torchtitan console log: `step: N  loss: X  memory: GiB(%)  tps: N  tflops  mfu`,
    behind torchrun's `[rank0]:` tag and the logger's time stamp."""
    rng = np.random.default_rng(seed)
    t = T0
    lines = []
    for s in range(1, n + 1):
        t += timedelta(seconds=(gaps or {}).get(s, 1.0 + rng.normal(0, 0.02)))
        loss = 3 + 5 * math.exp(-s / 50) + rng.normal(0, 0.05) + (27.0 if s == spike else 0.0)
        tps = 7233 * (tps_at(s) if tps_at else 1.0) * (1 + rng.normal(0, 0.02))
        gib = mem(s) if mem else 29.0
        lines.append(f"[rank0]:[titan] {t:%Y-%m-%d %H:%M:%S},000 - root - INFO - step: {s:2d}  loss: {loss:7.4f}  "
                     f"memory: {gib:5.2f}GiB({100 * gib / 31.35:.2f}%)  tps: {int(tps):,}  tflops: 4.92  mfu: 1.58%")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + tail)
    return path


def _findings(path: Path, kind: str | None = None):
    rep = analyze(str(path), jobs=1)
    out = [(r.run, f) for r in rep.runs for f in r.findings]
    return [f for _, f in out if kind is None or f.kind == kind]


def test_tps_drop_of_40_percent_is_found_at_its_step(tmp_path):
    log = _titan(tmp_path / "tt" / "train.log", tps_at=lambda s: 0.6 if s >= 250 else 1.0)
    found = _findings(log, "throughput_drop")
    assert len(found) == 1, found
    f = found[0]
    assert f.metric == "tps" and abs(f.start_step - 250) <= 2
    assert f.severity == "warning" and 35 <= f.evidence["change_percent"] <= 45 and f.evidence["lasted"]


def test_memory_climbing_to_99_percent_then_cuda_oom_is_ended_early_out_of_memory(tmp_path):
    tb = ("[rank0]: Traceback (most recent call last):\n"
          '[rank0]:   File "train.py", line 212, in <module>\n'
          "[rank0]:     loss.backward()\n"
          "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
          "capacity of 31.35 GiB of which 120.00 MiB is free.\n")
    log = _titan(tmp_path / "oom" / "train.log", n=300, mem=lambda s: 18.0 + 13.0 * s / 300, tail=tb)
    every = _findings(log)
    ended = [f for f in every if f.kind == "ended_early"]
    assert len(ended) == 1 and ended[0].severity == "error"
    cause = ended[0].causes[0]
    assert cause.cause == "out_of_memory"
    assert cause.numbers["metric"] == "memory_pct" and cause.numbers["last"] > 97
    grow = [f for f in every if f.kind == "memory_growth"]
    assert len(grow) == 1 and grow[0].evidence["leak"] and grow[0].evidence["at_capacity"]


def test_a_crash_that_is_not_out_of_memory_gets_no_such_cause(tmp_path):
    tb = "[rank0]: Traceback (most recent call last):\n[rank0]: ValueError: bad shape\n"
    log = _titan(tmp_path / "crash" / "train.log", n=100, tail=tb)
    ended = _findings(log, "ended_early")
    assert ended and all(c.cause != "out_of_memory" for c in ended[0].causes)


def test_steady_run_is_silent(tmp_path):
    log = _titan(tmp_path / "steady" / "train.log", n=600, seed=3)
    assert [f for f in _findings(log) if f.kind in SYSTEM] == []


def _nanochat(path: Path, n: int, slow: dict[int, float], pauses: dict[int, float]) -> Path:
    """`slow` steps take longer (an eval, a checkpoint save); `pauses` add wall time before a step."""
    return write_nanochat(path, n, lambda s, rng: slow.get(s, 1.0), seed=1, pauses=pauses)


def test_eval_every_500_steps_and_a_checkpoint_save_are_silent(tmp_path):
    evals = {s: 6.0 for s in range(500, 3001, 500)}
    pauses = {s + 1: 45.0 for s in range(500, 3001, 500)}  # the eval loop between two step lines
    slow = {**evals, 1750: 20.0}
    pauses[1751] = 240.0  # a checkpoint save: 4 minutes once
    log = _nanochat(tmp_path / "nc" / "train.log", 3000, slow, pauses)
    found = _findings(log)
    assert not [f for f in found if f.kind in SYSTEM and f.severity in LOUD], found
    assert not [f for f in found if f.kind in ("throughput_drop", "step_time_rise")]


def test_a_long_stall_is_found_between_its_steps(tmp_path):
    log = _nanochat(tmp_path / "stall" / "train.log", 600, {}, {401: 3600.0})
    stalls = _findings(log, "stall")
    assert len(stalls) == 1
    s = stalls[0]
    assert (s.start_step, s.end_step) == (400, 401) and s.severity == "warning"
    assert s.evidence["seconds"] > 3500


def test_a_pause_of_days_is_a_later_session_noted_not_a_stall_warning(tmp_path):
    log = _nanochat(tmp_path / "days" / "train.log", 600, {}, {401: 40 * 3600.0})  # 40 h: no job waits this long
    (s,) = _findings(log, "stall")
    assert s.severity == "info" and "later session" in s.message and (s.start_step, s.end_step) == (400, 401)


def test_step_time_rise_without_throughput_is_found(tmp_path):
    """nanochat's dt alone (tok/sec dropped from the line): the step time doubles at 300."""
    log = _nanochat(tmp_path / "dt" / "train.log", 600, {s: 2.0 for s in range(300, 601)}, {})
    text = log.read_text().splitlines()
    log.write_text("\n".join(ln.replace(" | tok/sec:", " | tokps:").split(" | tokps:")[0] for ln in text) + "\n")
    rise = _findings(log, "step_time_rise")
    assert len(rise) == 1 and abs(rise[0].start_step - 300) <= 2 and rise[0].severity == "warning"


def test_a_spike_right_after_a_slowdown_names_it(tmp_path):
    log = _titan(tmp_path / "slow" / "train.log", tps_at=lambda s: 0.5 if s >= 250 else 1.0, spike=255)
    spikes = [f for f in _findings(log, "spike") if f.peak_step == 255]
    assert spikes, _findings(log)
    assert "slowdown" in [c.cause for c in spikes[0].causes]


def _rank_folders(root: Path, bad_rank: int, bad_step: int, slow_rank: int | None = None) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    rng = np.random.default_rng(7)
    for r in range(8):
        w = SummaryWriter(str(root / f"rank_{r}"))
        for s in range(0, 2000, 10):
            v = 3 + math.exp(-s / 300) + rng.normal(0, 0.02)
            if r == bad_rank and s == bad_step:
                v *= 8
            w.add_scalar("train/loss", v, s, walltime=1.7e9 + s)
            tps = 7000 * (0.75 if r == slow_rank else 1.0) * (1 + rng.normal(0, 0.01))
            w.add_scalar("train/tps", tps, s, walltime=1.7e9 + s)
        w.close()
    return root


def test_eight_rank_tensorboard_folders_name_the_rank_that_spiked_alone(tmp_path):
    root = _rank_folders(tmp_path / "run8", bad_rank=5, bad_step=1200, slow_rank=3)
    rep = analyze(str(root), jobs=1)
    by_run = {r.run: r for r in rep.runs}
    assert len(by_run) == 8
    spikes = [(r.run, f) for r in rep.runs for f in r.findings if f.kind == "spike"]
    assert [(run, f.peak_step) for run, f in spikes] == [("rank_5", 1200)]
    f = spikes[0][1]
    assert f.message.startswith("rank 5 alone spiked") and "the other 7 ranks stayed within noise" in f.message
    assert f.evidence["ranks"] == {"on": [5], "calm": [0, 1, 2, 3, 4, 6, 7]}
    assert f.causes[0].cause == "data"
    slow = [(r.run, f) for r in rep.runs for f in r.findings if f.kind == "rank_outlier"]
    assert [run for run, _ in slow] == ["rank_3"] and slow[0][1].evidence["rank"] == 3


def test_every_rank_spiking_is_the_model_not_one_rank(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    rng = np.random.default_rng(2)
    for r in range(4):
        w = SummaryWriter(str(tmp_path / "all" / f"rank{r}"))
        for s in range(0, 1000, 5):
            v = 3 + math.exp(-s / 300) + rng.normal(0, 0.02)
            w.add_scalar("loss", v * (8 if s == 600 else 1), s, walltime=1.7e9 + s)
        w.close()
    rep = analyze(str(tmp_path / "all"), jobs=1)
    spikes = [f for r in rep.runs for f in r.findings if f.kind == "spike"]
    assert len(spikes) == 4 and not any("ranks" in f.evidence for f in spikes)


@pytest.mark.parametrize("name,rank", [("rank_3", 3), ("logs/rank7.log", 7), ("worker-12/events", 12),
                                       ("run_2024", None), ("[default5]", 5), ("frank2", None)])
def test_rank_of_names(name, rank):
    from spikelens.detect.ranks import rank_of

    assert rank_of(name) == rank


def _ranked_text(path: Path, *, bad: int | None, echo: bool = False) -> Path:
    """torchrun --tee: every rank's torchtitan lines behind its `[rankN]:` tag, interleaved."""
    rng = np.random.default_rng(5)
    lines = []
    for s in range(1, 601):
        shared = 3 + 5 * math.exp(-s / 50) + rng.normal(0, 0.05)
        for r in range(8):
            v = shared if echo else 3 + 5 * math.exp(-s / 50) + rng.normal(0, 0.05)
            if r == bad and s == 400:
                v *= 8
            lines.append(f"[rank{r}]:[titan] 2025-01-01 10:{s // 60 % 60:02d}:{s % 60:02d},000 - root - INFO - "
                         f"step: {s:2d}  loss: {v:7.4f}  memory: 29.00GiB(92.50%)  tps: 7,000")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_rank_tagged_text_log_names_the_rank_that_spiked_alone(tmp_path):
    log = _ranked_text(tmp_path / "tee" / "train.log", bad=5)
    rep = analyze(str(log), jobs=1)
    assert sorted(r.run for r in rep.runs) == [f"train.log[rank{r}]" for r in range(8)]
    spikes = [(r.run, f) for r in rep.runs for f in r.findings if f.kind == "spike"]
    assert [(run, f.peak_step) for run, f in spikes] == [("train.log[rank5]", 400)]
    assert spikes[0][1].message.startswith("rank 5 alone spiked")
    assert spikes[0][1].evidence["ranks"]["calm"] == [0, 1, 2, 3, 4, 6, 7]


def test_ranks_echoing_the_same_values_stay_one_run(tmp_path):
    log = _ranked_text(tmp_path / "echo" / "train.log", bad=None, echo=True)
    rep = analyze(str(log), jobs=1)
    assert [r.run for r in rep.runs] == ["train.log"]


def test_html_chart_draws_throughput_and_memory_panels_with_the_finding(tmp_path):
    from spikelens.report.chart_data import run_chart

    log = _titan(tmp_path / "html" / "train.log", tps_at=lambda s: 0.6 if s >= 250 else 1.0)
    run = analyze(str(log), jobs=1).runs[0]
    ids = {id(f): f"f{i}" for i, f in enumerate(run.findings)}
    chart = run_chart(run, ids)
    titles = [p["title"] for p in chart["panels"]]
    assert titles == ["loss", "throughput", "memory"]
    drawn = {s["name"] for p in chart["panels"] if p["title"] == "throughput" for s in p["series"]}
    assert "tps" in drawn
    assert any(v["kind"] == "throughput_drop" and v["metric"] == "tps" and abs(v["x0"] - 250) <= 2
               for v in chart["findings"])


def test_a_cumulative_clock_is_no_step_time(tmp_path):
    """`train/time_ms` counting since the start (modded-nanogpt) grows for ever: no step-time rise."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "clock"))
    total = 0.0
    for s in range(0, 2000, 10):
        total += 330.0 * 10 * (3.0 if s > 1000 else 1.0)  # the clock, with the steps getting slower
        w.add_scalar("train/loss", 3 + math.exp(-s / 300), s, walltime=1.7e9 + total / 1000)
        w.add_scalar("train/time_ms", total, s, walltime=1.7e9 + total / 1000)
    w.close()
    assert _findings(tmp_path / "clock", "step_time_rise") == []


def test_a_running_average_climbing_back_is_not_a_lasting_drop(tmp_path):
    """A progress bar's it/s restarting with a new epoch: it falls, then climbs steadily back."""
    rate = lambda s: 1.0 if s < 200 else 0.5 + 0.4 * (s - 200) / 200  # noqa: E731
    log = _titan(tmp_path / "bar" / "train.log", tps_at=rate)
    loud = [f for f in _findings(log, "throughput_drop") if f.severity in LOUD]
    assert loud == []


def test_one_file_per_rank_a_rank_going_nan_alone_is_hardware(tmp_path):
    """rank0.log ... rank3.log side by side; rank 2's loss goes NaN at step 300 and stays."""
    rng = np.random.default_rng(4)
    for r in range(4):
        lines = []
        for s in range(1, 501):
            v = 2.5 + 4 * math.exp(-s / 100) + rng.normal(0, 0.03)
            if r == 2 and s >= 300:
                v = float("nan")
            lines.append(f"step {s:05d}/00500 ({s / 5:.2f}%) | loss: {v:.6f} | lrm: 1.00 | dt: 1140.00ms | "
                         f"tok/sec: 459,000 | mfu: 41.20 | total time: {s * 1.14 / 60:.2f}m")
        (tmp_path / "logs").mkdir(exist_ok=True)
        (tmp_path / "logs" / f"rank{r}.log").write_text("\n".join(lines) + "\n")
    rep = analyze(str(tmp_path / "logs"), jobs=1)
    nans = [(r.run, f) for r in rep.runs for f in r.findings if f.kind == "nan"]
    assert [run for run, _ in nans] == ["rank2.log"], nans
    f = nans[0][1]
    assert f.message.startswith("rank 2 alone went NaN") and f.causes[0].cause == "hardware"


def test_a_bare_killed_line_is_a_likely_oom_kill(tmp_path):
    log = _titan(tmp_path / "killed" / "train.log", n=120, tail="Killed\n")
    ended = _findings(log, "ended_early")
    assert ended and ended[0].causes and ended[0].causes[0].cause == "out_of_memory"
    assert ended[0].causes[0].confidence < 0.95 and "OOM killer" in ended[0].causes[0].evidence


def test_a_whole_number_count_taken_for_the_loss_has_no_stall(tmp_path):
    """A launcher's log whose only loss-like value is a count (2, 4 GPUs), launches days apart:
    its 'steps' are no training steps, so their gaps are no stall."""
    rows = ["step,timestamp,loss"] + [f"{s},{1.7e9 + 60 * s + (250000 if s > 30 else 0)},{2 if s < 40 else 4}"
                                      for s in range(60)]
    (tmp_path / "launch").mkdir()
    (tmp_path / "launch" / "launches.csv").write_text("\n".join(rows) + "\n")
    assert _findings(tmp_path / "launch" / "launches.csv", "stall") == []
    rows = rows[:1] + [r.replace(",2", ",2.5").replace(",4", ",4.5") for r in rows[1:]]
    (tmp_path / "launch" / "launches.csv").write_text("\n".join(rows) + "\n")
    assert len(_findings(tmp_path / "launch" / "launches.csv", "stall")) == 1  # the same pause on a real value


def _megatron(path: Path, *, gbs_after: int) -> Path:
    """Megatron-LM's iteration lines; the step time doubles at iteration 1500, where the
    global batch size moves from 256 to `gbs_after`."""
    rng = np.random.default_rng(8)
    lines = []
    for it in range(10, 3010, 10):
        gbs = 256 if it < 1500 else gbs_after
        ms = (520 if it < 1500 else 1040) * (1 + rng.normal(0, 0.02))
        loss = 2.5 + 4 * math.exp(-it / 400) + rng.normal(0, 0.02)
        lines.append(f" iteration     {it:4d}/    3000 | consumed samples:      {it * gbs:8d} | elapsed time per "
                     f"iteration (ms): {ms:.1f} | learning rate: 3.000E-04 | global batch size:   {gbs:3d} | lm loss: "
                     f"{loss:.6E} | loss scale: 1.0 | grad norm: 0.600 | number of skipped iterations:   0 |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_step_time_rise_where_the_batch_size_doubles_is_a_new_regime_not_a_slowdown(tmp_path):
    ramp = _findings(_megatron(tmp_path / "ramp" / "train.log", gbs_after=512), "step_time_rise")
    assert len(ramp) == 1 and ramp[0].severity == "info"
    assert ramp[0].evidence["work_changed"] == {"metric": "global batch size", "before": 256.0, "after": 512.0,
                                                "step": 1500}
    same = _findings(_megatron(tmp_path / "same" / "train.log", gbs_after=256), "step_time_rise")
    assert len(same) == 1 and same[0].severity == "warning" and "work_changed" not in same[0].evidence


def test_slow_stretches_the_run_came_back_from_are_named_with_their_steps(tmp_path):
    """Steps 2.5x slower over steps 300-499 and 700-899 (a shared node), at its pace between and
    after: one finding spanning them (tok/sec), not a drop that 'stayed there to the end'."""
    slow = {s: 2.5 for s in [*range(300, 500), *range(700, 900)]}
    rise = _findings(_nanochat(tmp_path / "busy" / "train.log", 1200, slow, {}), "throughput_drop")
    assert len(rise) == 1 and rise[0].severity == "warning", rise
    f = rise[0]
    (a, b), (c, d) = f.evidence["slow_stretches"]
    assert max(abs(a - 300), abs(b - 499), abs(c - 700), abs(d - 899)) <= 30
    assert (f.start_step, f.end_step) == (a, d + 1) and "stayed there" not in f.message and not f.evidence["lasted"]
    # the step time with it: the line's mfu, printed as the same 41.20 every step, is no throughput that held
    rise = _findings(tmp_path / "busy" / "train.log", "step_time_rise")
    assert len(rise) == 1 and rise[0].metric == "dt_ms" and rise[0].evidence["slow_stretches"] == [[a, b], [c, d]]


def test_one_short_slow_stretch_the_run_came_back_from_is_a_note(tmp_path):
    rise = _findings(_nanochat(tmp_path / "once" / "train.log", 1200, {s: 2.5 for s in range(500, 620)}, {}),
                     "throughput_drop")
    assert len(rise) == 1 and rise[0].severity == "info" and abs(rise[0].end_step - 620) <= 30
