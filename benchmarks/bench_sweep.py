"""A sweep: `spikelens analyze DIR --format json` over many runs, whole process.

    python benchmarks/bench_sweep.py [--runs 1000] [--steps 10000] [--repeats 1] [--quick]

Writes `--runs` runs of `--steps` steps each into a temp folder, one folder per run
holding a `metrics.csv` (`step,train/loss,lr,grad_norm`: 3 points a step, different
seed per run, a planted loss spike in each), then times the CLI over the folder in a
fresh process (workers: all cores, the default), and reads the JSON back to check that
every run was reported. Peak RSS is that of the largest process (the parent or a
worker).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

TARGET_S = 60.0
"""1,000 runs of 10k steps under 60 s."""


def write_sweep(root: Path, n_runs: int, n_steps: int) -> int:
    """Every run's CSV; returns the bytes written."""
    total = 0
    for i in range(n_runs):
        total += _bench.write_csv_run(root / f"run_{i:04d}", n_steps, seed=i).stat().st_size
    return total


def run(n_runs: int, n_steps: int, repeats: int) -> tuple[str, dict]:
    with _bench.scratch("sweep") as tmp:
        sweep = tmp / "sweep"
        t = time.perf_counter()
        size = write_sweep(sweep, n_runs, n_steps)
        wrote = time.perf_counter() - t
        load_before = _bench.load_avg()
        m = _bench.repeat([sys.executable, "-m", "spikelens", "analyze", str(sweep), "--format", "json"],
                          repeats, cwd=tmp)
    reports = [json.loads(s.stdout) for s in m.samples]
    runs = {len(r["runs"]) for r in reports}
    points = sum(r["points"] for r in reports[0]["runs"])
    with_findings = sum(1 for r in reports[0]["runs"] if r["findings"])
    tracebacks = sum("Traceback" in s.stderr for s in m.samples)
    ok = m.wall_s < TARGET_S
    lines = [
        f"sweep: {n_runs:,} runs x {n_steps:,} steps (CSV, {size / 1e6:.0f} MB, written in {wrote:.1f} s); "
        f"load avg before {load_before}, after {_bench.load_avg()}",
        _bench.table(
            ["measurement", "seconds", "notes"],
            [["spikelens analyze DIR --format json", f"{m.wall_s:.1f}",
              f"whole process, median of {repeats}; cpu {m.cpu_s:.1f} s (all processes); "
              f"peak RSS {_bench.mb(m.maxrss_bytes)} MB (largest process)"],
             ["  per run", f"{m.wall_s / n_runs * 1e3:.0f} ms", f"{_bench.rate(points, m.wall_s)} points/s overall"]]),
        f"runs reported: {sorted(runs)} of {n_runs:,}; points {points:,}; runs with findings {with_findings:,}; "
        f"tracebacks on stderr: {tracebacks}",
        f"Target: {n_runs:,} runs x {n_steps:,} steps < {TARGET_S:.0f} s: {_bench.verdict(ok)} ({m.wall_s:.1f} s)",
    ]
    numbers = {"runs": n_runs, "steps": n_steps, "process_s": m.wall_s, "cpu_s": m.cpu_s,
               "peak_rss_mb": m.maxrss_bytes / 1e6, "points": points, "runs_reported": sorted(runs),
               "runs_with_findings": with_findings}
    return "\n".join(lines), numbers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="20 runs of 1,000 steps (smoke test)")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    n_runs = args.runs or (20 if args.quick else 1000)
    n_steps = args.steps or (1000 if args.quick else 10_000)
    repeats = args.repeats or 1
    return _bench.report(run, args, n_runs, n_steps, repeats)


if __name__ == "__main__":
    sys.exit(main())
