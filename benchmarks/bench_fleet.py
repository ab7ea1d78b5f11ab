"""A fleet: many runs (CSV and TensorBoard mixed) through the one pipeline entry point,
on the local executor and on a local Ray instance, with a findings dataset and the
incremental re-runs it allows.

    python benchmarks/bench_fleet.py [--runs 2000] [--steps 10000] [--ray-workers 2]

Writes `--runs` runs of `--steps` steps: even runs a `metrics.csv` (3 points a step,
own seed), odd runs a TensorBoard event file (4 tags a step; 16 distinct files written
by TensorBoard's writer, copied round-robin: writing 10^4 event files event by event
takes longer than analysing them). Each measurement is a fresh process that calls
`spikelens.analyze(ROOT, keep_frames=False, executor=..., findings=...)` and renders the
JSON report (as `spikelens analyze ROOT --format json --findings F` does) and prints
its wall time, its own peak RSS (the parent: workers are separate processes) and the
CPU seconds of itself and of its worker processes. Then:

1. local, full, writing the findings dataset (a fresh one);
2. local, again with nothing changed (every run comes from the dataset);
3. local, again with 1% of the runs rewritten (new size and mtime);
4. ray, full, on a local instance of `--ray-workers` CPUs started by the process.

The projection for 10^5 runs on 16 Ray workers scales the measured per-run worker CPU
cost (1.) to 10^5 runs over 16 workers and adds the parent's per-run cost (reports
collected, runs linked, JSON written), which does not spread over workers.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {bench!r})
import _bench
t0 = time.perf_counter()
import spikelens
from spikelens.report.json_report import render_json
if {executor!r} == "ray":
    import ray
    ray.init(num_cpus={workers}, include_dashboard=False, log_to_driver=False)
    started = time.perf_counter()
else:
    started = t0
report = spikelens.analyze({root!r}, keep_frames=False, executor={executor!r}, findings={findings!r})
text = render_json(report)
wall = time.perf_counter() - t0
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"wall_s": wall, "analyze_s": time.perf_counter() - started, "runs": len(report.runs),
                   "parent_cpu_s": me.ru_utime + me.ru_stime, "worker_cpu_s": kids.ru_utime + kids.ru_stime,
                   "parent_peak": _bench.peak_rss(), "json_bytes": len(text),
                   "findings": sum(len(r.findings) for r in report.runs)}}))
"""


def write_fleet(root: Path, n_runs: int, n_steps: int) -> int:
    tb_sources = []
    with _bench.scratch("tb") as tmp:
        for k in range(min(16, (n_runs + 1) // 2)):
            tb_sources.append(_bench.write_event_file(tmp / f"tb{k}", 4 * n_steps, seed=1000 + k))
        total = 0
        for i in range(n_runs):
            folder = root / f"run_{i:05d}"
            if i % 2 == 0:
                total += _bench.write_csv_run(folder, n_steps, seed=i).stat().st_size
            else:
                src = tb_sources[(i // 2) % len(tb_sources)]
                folder.mkdir(parents=True)
                total += shutil.copy2(src, folder / src.name) and (folder / src.name).stat().st_size
    return total


def measure(root: Path, executor: str, findings: Path | None, workers: int = 2) -> dict:
    """One fresh process; its figures are also printed at once (a long run keeps what it measured)."""
    code = CHILD.format(bench=str(Path(__file__).parent), executor=executor, workers=workers, root=str(root),
                        findings=str(findings) if findings else None)
    s = _bench.run_process([sys.executable, "-c", code], timeout=7200)
    if s.rc != 0:
        raise RuntimeError(s.stderr[-2000:])
    print(f"  {executor}{' + findings' if findings else ''}: {json.dumps(s.json())}", file=sys.stderr, flush=True)
    return s.json()


def change(root: Path, share: float, n_steps: int) -> int:
    """Rewrite `share` of the CSV runs with another seed (new size and mtime)."""
    runs = sorted(root.glob("run_*/metrics.csv"))
    step = max(1, round(1 / share / 2))  # CSV runs are half the runs
    changed = 0
    for k, path in enumerate(runs):
        if k % step == 0:
            _bench.write_csv_run(path.parent, n_steps, seed=10_000 + k)
            changed += 1
    return changed


def run(n_runs: int, n_steps: int, workers: int, skip_ray: bool) -> tuple[str, dict]:
    numbers: dict = {"runs": n_runs, "steps": n_steps}
    with _bench.scratch("fleet") as tmp:
        root = tmp / "fleet"
        t = time.perf_counter()
        size = write_fleet(root, n_runs, n_steps)
        numbers["written_s"] = time.perf_counter() - t
        print(f"  written: {size / 1e6:.0f} MB in {numbers['written_s']:.0f} s", file=sys.stderr, flush=True)
        data = tmp / "findings.parquet"
        numbers["full"] = full = measure(root, "local", data)
        numbers["unchanged"] = measure(root, "local", data)
        numbers["changed_runs"] = change(root, 0.01, n_steps)
        numbers["one_percent"] = measure(root, "local", data)
        numbers["dataset_mb"] = data.stat().st_size / 1e6
        if not skip_ray:
            numbers["ray"] = measure(root, "ray", None, workers)
    per_run_worker = full["worker_cpu_s"] / n_runs
    per_run_parent = full["parent_cpu_s"] / n_runs
    projected = 1e5 * per_run_worker / 16 + 1e5 * per_run_parent
    numbers["projected_1e5_16_workers_s"] = projected
    rows = [
        ["local, full (+ findings dataset)", f"{full['wall_s']:.1f}", _bench.mb(full["parent_peak"]),
         f"parent {full['parent_cpu_s']:.1f} s, workers {full['worker_cpu_s']:.1f} s"],
        ["local, nothing changed", f"{numbers['unchanged']['wall_s']:.1f}", _bench.mb(numbers["unchanged"]["parent_peak"]),
         f"{100 * numbers['unchanged']['wall_s'] / full['wall_s']:.1f}% of full"],
        [f"local, 1% changed ({numbers['changed_runs']} runs)", f"{numbers['one_percent']['wall_s']:.1f}",
         _bench.mb(numbers["one_percent"]["parent_peak"]),
         f"{100 * numbers['one_percent']['wall_s'] / full['wall_s']:.1f}% of full"],
    ]
    if "ray" in numbers:
        r = numbers["ray"]
        # the projection's formula at this size and worker count, against the real Ray run
        numbers["projected_ray_s"] = same = n_runs * per_run_worker / workers + n_runs * per_run_parent
        rows.append([f"ray, full, local instance of {workers} CPUs", f"{r['wall_s']:.1f}", _bench.mb(r["parent_peak"]),
                     f"of which analysis {r['analyze_s']:.1f} s (the rest: ray.init); projected {same:.0f} s"])
    text = "\n".join([
        f"fleet: {n_runs:,} runs x {n_steps:,} steps (half CSV, half TensorBoard; {size / 1e6:.0f} MB); "
        f"load avg {_bench.load_avg()}",
        _bench.table(["measurement", "wall s", "parent peak MB", "notes"], rows),
        f"runs reported: {full['runs']:,}; findings {full['findings']:,}; dataset {numbers['dataset_mb']:.1f} MB",
        f"per run: worker CPU {per_run_worker * 1e3:.0f} ms, parent CPU {per_run_parent * 1e3:.1f} ms; "
        f"projected 10^5 runs on 16 Ray workers: {projected:.0f} s ({projected / 60:.1f} min)",
    ])
    return text, numbers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--ray-workers", type=int, default=2)
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    return _bench.report(run, args, args.runs, args.steps, args.ray_workers, args.skip_ray)


if __name__ == "__main__":
    sys.exit(main())
