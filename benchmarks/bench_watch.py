"""`spikelens watch`: what one poll costs, how late an alert comes, and many runs at once.

    python benchmarks/bench_watch.py [--points 1000000] [--runs 200] [--quick] [--json FILE]

Three measurements, each in this process on `live.watcher.Watcher` (what the CLI polls):

- poll cost: a TensorBoard event file of `--points` scalars (4 tags, written by
  TensorBoard's writer) is watched (first poll: reads and judges everything); then 100
  points (25 steps x 4 tags) are appended before each of `--repeats` polls, timed (median).
  Compared with `analyze_run` of the whole run in memory (what re-judging everything at
  every poll would cost) and with a whole `spikelens analyze FILE --format json` process.
  Target: a poll <= 5% of the in-memory analyze.
- detection latency: a run grows by 10 steps between polls (TensorBoard file), with one
  planted event per kind (a spike that comes back, a spike that stays, a NaN, a slow
  divergence); latency = the run's last step when the finding was told minus the step
  the event began (the NaN: its step; a spike: its peak).
- many runs: `--runs` runs (one event file each) grow by 20 steps x 4 tags between
  polls; CPU seconds and wall seconds a poll, as a share of a 30 s interval, and the
  process's resident memory.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

TARGET_SHARE = 0.05


def _appender(path: Path):
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.record_writer import RecordWriter

    fh = open(path, "ab")
    rec = RecordWriter(fh)

    def add(step: int, values: dict[str, float]) -> None:
        for tag, v in values.items():
            ev = Event(wall_time=_bench.T0 + 0.25 * step, step=step,
                       summary=Summary(value=[Summary.Value(tag=tag, simple_value=float(v))]))
            rec.write(ev.SerializeToString())

    def flush() -> None:
        fh.flush()

    return add, flush, fh


def _quiet_watcher(folder: Path, state: Path, **kw):
    from spikelens.live.watcher import Watcher

    events: list = []
    return Watcher([folder], state=state, on_event=events.append, on_warning=lambda _l: None, **kw), events


def poll_cost(root: Path, n_points: int, repeats: int) -> dict:
    import numpy as np

    from spikelens import api
    from spikelens.config import load_config
    from spikelens.pipeline.run import analyze_run

    folder = root / "big"
    path = _bench.write_event_file(folder, n_points)
    w, _ = _quiet_watcher(folder, root / "state-big")
    t = time.perf_counter()
    w.poll()
    first = time.perf_counter() - t
    add, flush, fh = _appender(path)
    step = n_points // 4
    rng = np.random.default_rng(1)
    times, cpus = [], []
    for _ in range(repeats):
        for _s in range(25):
            add(step, {"train/loss": 2.3 * float(np.exp(0.02 * rng.standard_normal())), "train/grad_norm": 0.45,
                       "train/lr": 1e-5, "train/loss_scale": 32768.0})
            step += 1
        flush()
        gc.collect()
        t, c = time.perf_counter(), time.process_time()
        w.poll()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    fh.close()
    (run,) = api.load_runs(path)
    cfg = load_config()
    analyze_run(run, cfg)  # warm
    full, full_cpu = [], []
    for _ in range(max(1, min(3, repeats))):
        t, c = time.perf_counter(), time.process_time()
        analyze_run(run, cfg)
        full.append(time.perf_counter() - t)
        full_cpu.append(time.process_time() - c)
    proc = _bench.repeat([sys.executable, "-m", "spikelens", "analyze", str(path), "--format", "json"], 1)
    poll = statistics.median(times)
    return {"points": n_points, "first_poll_s": first, "poll_s": poll, "poll_cpu_s": statistics.median(cpus),
            "poll_s_max": max(times), "analyze_run_s": statistics.median(full),
            "analyze_process_s": proc.wall_s,
            "analyze_run_cpu_s": statistics.median(full_cpu),
            "share_of_analyze_run": poll / statistics.median(full),
            "cpu_share_of_analyze_run": statistics.median(cpus) / statistics.median(full_cpu)}


def latency(root: Path) -> list[dict]:
    import numpy as np

    sys.path.insert(0, str(_bench.FIXTURES))
    from writers._curves import clean_run

    n = 3000
    out = []
    plans = {
        "spike (comes back)": ("spike", 1500),
        "spike (stays up)": ("held", 1500),
        "nan": ("nan", 1500),
        "divergence": ("divergence", 1500),
    }
    for label, (kind, at) in plans.items():
        run = clean_run(n_steps=n, seed=7)
        loss = run["loss"].copy()
        if kind == "spike":
            loss[at] *= 4.0
            loss[at + 1:at + 4] *= [2.0, 1.4, 1.1]
        elif kind == "held":
            loss[at:] *= 3.0
        elif kind == "nan":
            loss[at:] = np.nan
        elif kind == "divergence":
            loss[at:] *= np.exp(np.linspace(0, 1.2, n - at))
        folder = root / f"lat-{kind}"
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        folder.mkdir(parents=True)
        before = set(folder.iterdir())
        EventFileWriter(str(folder)).close()
        (path,) = set(folder.iterdir()) - before
        add, flush, fh = _appender(path)
        w, events = _quiet_watcher(folder, root / f"state-{kind}")
        told = None
        polls = first_poll = 0
        for s in range(n):
            add(s, {"train/loss": loss[s], "train/grad_norm": run["grad_norm"][s]})
            if (s + 1) % 10 == 0:
                flush()
                w.poll()
                polls += 1
                first_poll = first_poll or (polls if s >= at else 0)
                hit = [e for e in events if e.type == "finding" and e.finding.metric == "train/loss"
                       and e.finding.kind in ("spike", "nan", "divergence")]
                if hit:
                    told = hit[0]
                    break
        fh.close()
        out.append({"event": label, "began": at, "told_as": f"{told.finding.code} {told.finding.kind}" if told else None,
                    "told_at_step": told.seen_at if told else None,
                    "latency_steps": (told.seen_at - at) if told else None,
                    "polls_after": (polls - first_poll) if told else None})
    return out


def many_runs(root: Path, n_runs: int, polls: int, history: int) -> dict:
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder = root / "fleet"
    appenders = []
    for i in range(n_runs):
        d = folder / f"run{i:03d}"
        d.mkdir(parents=True)
        EventFileWriter(str(d)).close()
        appenders.append(_appender(next(d.iterdir())))
    curve = _bench.curves(history + polls * 20 + 10, seed=3)
    for add, flush, _ in appenders:
        for s in range(history):
            add(s, {"train/loss": curve["loss"][s], "train/grad_norm": curve["grad_norm"][s],
                    "train/lr": curve["lr"][s], "train/loss_scale": curve["loss_scale"][s]})
        flush()
    w, _ = _quiet_watcher(folder, root / "state-fleet")
    t = time.perf_counter()
    w.poll()
    first = time.perf_counter() - t
    walls, cpus = [], []
    step = history
    for _ in range(polls):
        for add, flush, _ in appenders:
            for s in range(step, step + 20):
                add(s, {"train/loss": curve["loss"][s], "train/grad_norm": curve["grad_norm"][s],
                        "train/lr": curve["lr"][s], "train/loss_scale": curve["loss_scale"][s]})
            flush()
        step += 20
        t, c = time.perf_counter(), time.process_time()
        w.poll()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    for _, _, fh in appenders:
        fh.close()
    return {"runs": n_runs, "points_per_run": (history + polls * 20) * 4, "first_poll_s": first,
            "poll_wall_s": statistics.median(walls), "poll_cpu_s": statistics.median(cpus),
            "cpu_share_at_30s": statistics.median(cpus) / 30.0, "rss_mb": _bench.rss_now() / 2**20,
            "peak_rss_mb": _bench.peak_rss() / 2**20}


def run(n_points: int, repeats: int, n_runs: int, polls: int, history: int) -> tuple[str, dict]:
    with _bench.scratch("watch") as root:
        cost = poll_cost(root, n_points, repeats)
        lat = latency(root)
        fleet = many_runs(root, n_runs, polls, history)
    lines = [
        f"poll cost, {cost['points']:,} points seen + 100 new: {cost['poll_s'] * 1000:.1f} ms "
        f"(cpu {cost['poll_cpu_s'] * 1000:.1f} ms, worst {cost['poll_s_max'] * 1000:.1f} ms); "
        f"analyze_run of the whole run {cost['analyze_run_s'] * 1000:.0f} ms (cpu {cost['analyze_run_cpu_s'] * 1000:.0f} ms); "
        f"share {cost['share_of_analyze_run']:.1%} wall, {cost['cpu_share_of_analyze_run']:.1%} cpu "
        f"(target <= {TARGET_SHARE:.0%}: {_bench.verdict(cost['cpu_share_of_analyze_run'] <= TARGET_SHARE)}); "
        f"first poll {cost['first_poll_s']:.2f} s",
        "",
        "a poll every 10 steps; 'polls later': polls after the first one that saw the event",
        _bench.table(["event", "began at", "told as", "told at step", "latency (steps)", "polls later"],
                     [[r["event"], str(r["began"]), str(r["told_as"]), str(r["told_at_step"]), str(r["latency_steps"]),
                       str(r["polls_after"])] for r in lat]),
        "",
        f"{fleet['runs']} runs watched ({fleet['points_per_run']:,} points each at the end): a poll of 80 new points "
        f"a run takes {fleet['poll_wall_s']:.2f} s wall, {fleet['poll_cpu_s']:.2f} s CPU "
        f"({fleet['cpu_share_at_30s']:.1%} of one core at --interval 30); first poll {fleet['first_poll_s']:.1f} s; "
        f"RSS {fleet['rss_mb']:.0f} MB (peak {fleet['peak_rss_mb']:.0f} MB)",
    ]
    if cost.get("analyze_process_s"):
        lines.insert(1, f"whole `spikelens analyze FILE --format json` process: {cost['analyze_process_s']:.2f} s")
    return "\n".join(lines), {"poll_cost": cost, "latency": lat, "many_runs": fleet}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--polls", type=int, default=5)
    p.add_argument("--history", type=int, default=2000, help="steps each of the many runs has before the polls")
    p.add_argument("--quick", action="store_true", help="100k points, 20 runs")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if args.quick:
        args.points, args.runs, args.repeats, args.polls = 100_000, 20, 3, 3
    return _bench.report(run, args, args.points, args.repeats, args.runs, args.polls, args.history)


if __name__ == "__main__":
    sys.exit(main())
