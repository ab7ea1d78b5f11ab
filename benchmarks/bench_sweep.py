"""A sweep: `spikelens analyze DIR --format json` over many runs, whole process.

    python benchmarks/bench_sweep.py [--runs 1000] [--steps 10000] [--repeats 1] [--quick]

Writes `--runs` runs of `--steps` steps each into a temp folder, one folder per run
holding a `metrics.csv` (`step,train/loss,lr,grad_norm`: 3 points a step, different
seed per run, a planted loss spike in each), then times the CLI over the folder in a
fresh process (workers: all cores, the default), and reads the JSON back to check that
every run was reported. Peak RSS is that of the largest process (the parent or a
worker).

`--parent-memory` measures the parent alone (issue 28: the sweep's parent must not grow
with the reports it holds): the CLI runs in a process that prints its own VmHWM (peak
RSS) and its RSS after imports at exit; workers are other processes. Run it at two sweep
sizes (`--runs 1000`, `--runs 10000`, small runs: `--steps 500`): the slope is the parent's
cost per run, and 10^5 runs is projected from it. The CLI spools a sweep of
`pipeline.sweep.SPOOL_FROM` groups or more (reports on disk, a summary of each run in the
parent); `PYTHONPATH` pointing at an older tree measures that tree.

`--synthetic` measures the parent's own Python objects (tracemalloc) in this process, over
`--runs` small runs made in memory (one spike each at one of five shared steps: the links
put a data cause on every run, the worst case), the discovery and the workers left out:
the sweep, then each of `--outputs` written to /dev/null. Fast enough for 10^5 runs. With
`--findings`, the sweep writes a findings dataset and a second sweep reuses every run from it
(`--findings-file`: the dataset is one Parquet file, not a folder). With `--baseline`, then
`spikelens check --update-baseline` (the gate, the baseline written, the gate again against it,
its JSON) and `spikelens check --baseline FILE` (the file read, the gate, its JSON), as the CLI
does them.

`--discovery` measures discovery alone, the real one (`discover.source_groups`, then one pass over
its groups, as the sweep hands them out), over `--runs` run folders of a two-line `metrics.csv`:
tracemalloc's peak and what is held once discovery returns, over what was held before (an
older tree returns a list, held until the sweep ends).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import _bench  # noqa: E402
from writers import _sweep_reports as sweep_reports  # noqa: E402  (the runs of tests/test_sweep_memory.py too)

TARGET_S = 60.0
"""1,000 runs of 10k steps under 60 s."""


def write_sweep(root: Path, n_runs: int, n_steps: int) -> int:
    """Every run's CSV; returns the bytes written."""
    total = 0
    for i in range(n_runs):
        total += _bench.write_csv_run(root / f"run_{i:04d}", n_steps, seed=i).stat().st_size
    return total


PARENT = _bench.analyze_in_process_script(
    "PARENT_MEMORY", "spikelens.cli, spikelens.cli.commands, spikelens.pipeline.sweep, spikelens.pipeline.run")
"""What a sweep imports anyway is loaded before the base is taken."""


def parent_memory(n_runs: int, n_steps: int) -> tuple[str, dict]:
    """The parent's own peak RSS over its RSS after imports, for one sweep."""
    with _bench.scratch("sweep-parent") as tmp:
        sweep = tmp / "sweep"
        write_sweep(sweep, n_runs, n_steps)
        load_before = _bench.load_avg()
        s = _bench.run_process([sys.executable, "-c", PARENT, str(sweep)], cwd=tmp)
    line = next(ln for ln in s.stderr.splitlines() if ln.startswith("PARENT_MEMORY"))
    fields = dict(kv.split("=") for kv in line.split()[1:])
    base, peak = int(fields["base"]), int(fields["peak"])
    report = json.loads(s.stdout)
    per_run = (peak - base) / n_runs
    text = (f"sweep parent: {n_runs:,} runs x {n_steps:,} steps; load avg before {load_before}, after "
            f"{_bench.load_avg()}\n  parent peak RSS {_bench.mb(peak)} MB, after imports {_bench.mb(base)} MB: "
            f"growth {_bench.mb(peak - base)} MB = {per_run / 1e3:.1f} KB a run; JSON report "
            f"{len(s.stdout) / 1e6:.1f} MB ({len(s.stdout) / n_runs / 1e3:.1f} KB a run); runs reported "
            f"{len(report['runs']):,}; wall {s.wall_s:.0f} s")
    return text, {"runs": n_runs, "steps": n_steps, "parent_base_mb": base / 1e6, "parent_peak_mb": peak / 1e6,
                  "parent_kb_per_run": per_run / 1e3, "json_mb": len(s.stdout) / 1e6}


def synthetic(n_runs: int, outputs: list[str], findings: bool = False, findings_file: bool = False,
              baseline: bool = False, save: Path | None = None) -> tuple[str, dict]:
    """tracemalloc's peak over a spooled sweep of `n_runs` synthetic runs, then over each output.
    With `findings`, the sweep writes a findings dataset (`findings_file`: one Parquet file),
    then a second sweep reuses every run from it (`--findings` run twice over logs that did not
    change). With `baseline`, then `check --update-baseline` and `check --baseline FILE`; `save`:
    the folder their outputs (check JSON, the baseline) are copied to, for comparing trees."""
    import gc
    import os
    import tracemalloc

    from spikelens.config import Config
    from spikelens.pipeline import sweep

    writers = _writers(outputs)
    sweep.source_groups = sweep_reports.groups(n_runs)
    sweep.execute = sweep_reports.executor()
    if findings:
        from spikelens.pipeline import incremental

        incremental.group_key, incremental.fingerprint = sweep_reports.group_key, sweep_reports.fingerprint
    rows, numbers = [], {"runs": n_runs}
    with _bench.scratch("sweep-synthetic") as tmp:
        (tmp / "logs").mkdir()  # an empty log folder; the spool beside it
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        rss = _rss_stage()
        t = time.perf_counter()
        dataset = (tmp / ("findings.parquet" if findings_file else "findings")) if findings else None
        report = sweep.analyze_roots([tmp / "logs"], Config(), keep_frames=False, spool=tmp, findings=dataset)
        held, peak = (x - base for x in tracemalloc.get_traced_memory())
        what = "sweep (gather, mirrors, names, links)" + (", dataset written" if findings else "")
        rows.append([what, f"{peak / n_runs:,.0f}", f"{held / n_runs:,.0f}", f"{time.perf_counter() - t:.1f}", rss()])
        numbers["sweep"] = {"peak_bytes_per_run": peak / n_runs, "held_bytes_per_run": held / n_runs,
                            "rss_growth_mb": float(rows[-1][-1])}
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
        if findings:  # the same logs again: every run's report comes back from the dataset
            report.runs.spool.close()
            del report
            gc.collect()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            rss = _rss_stage()
            t = time.perf_counter()
            report = sweep.analyze_roots([tmp / "logs"], Config(), keep_frames=False, spool=tmp, findings=dataset)
            held, peak = (x - base for x in tracemalloc.get_traced_memory())
            rows.append(["second sweep, every run reused from the dataset", f"{peak / n_runs:,.0f}",
                         f"{held / n_runs:,.0f}", f"{time.perf_counter() - t:.1f}", rss()])
            numbers["reused"] = {"peak_bytes_per_run": peak / n_runs, "held_bytes_per_run": held / n_runs,
                                 "rss_growth_mb": float(rows[-1][-1])}
            print("  ".join(rows[-1]), file=sys.stderr, flush=True)
        for name in outputs:
            tracemalloc.reset_peak()
            rss = _rss_stage()
            t = time.perf_counter()
            with open(os.devnull, "w") as sink:
                writers[name](report, sink)
            peak = tracemalloc.get_traced_memory()[1] - base
            rows.append([f"  then --format/--html {name}", f"{peak / n_runs:,.0f}", "",
                         f"{time.perf_counter() - t:.1f}", rss()])
            print("  ".join(rows[-1]), file=sys.stderr, flush=True)  # a stage at a time: long sweeps
            numbers[name] = {"peak_bytes_per_run": peak / n_runs}
        for name, step in (_baseline_steps(tmp / "baseline.json") if baseline else ()):
            gc.collect()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            rss = _rss_stage()
            t = time.perf_counter()
            with open(save / f"{name.replace(' ', '_')}.json" if save else os.devnull, "w") as sink:
                step(report, sink)
            peak = tracemalloc.get_traced_memory()[1] - base
            rows.append([f"  then {name}", f"{peak / n_runs:,.0f}", "", f"{time.perf_counter() - t:.1f}", rss()])
            print("  ".join(rows[-1]), file=sys.stderr, flush=True)
            numbers[name] = {"peak_bytes_per_run": peak / n_runs, "rss_growth_mb": float(rows[-1][-1])}
        tracemalloc.stop()
        report.runs.spool.close()
        if save and baseline:
            import shutil

            shutil.copyfile(tmp / "baseline.json", save / "baseline.json")
    numbers["peak_rss_mb"] = _peak_rss() / 1e6
    text = (f"sweep parent, synthetic: {n_runs:,} runs in this process (tracemalloc; load avg {_bench.load_avg()}; "
            f"the process's peak RSS {numbers['peak_rss_mb']:.0f} MB)\n"
            + _bench.table(["stage", "peak B/run", "held after B/run", "seconds", "RSS peak growth MB"], rows))
    return text, numbers


def discovery(n_runs: int) -> tuple[str, dict]:
    """tracemalloc's peak over discovery of `n_runs` small run folders and a pass over its groups."""
    import gc
    import importlib
    import tracemalloc

    discover = importlib.import_module("spikelens.discover")  # `spikelens.discover` is also a function
    with _bench.scratch("sweep-discovery") as tmp:
        logs = tmp / "logs"
        for i in range(n_runs):
            (logs / f"run_{i:06d}").mkdir(parents=True)
            (logs / f"run_{i:06d}" / "metrics.csv").write_text("step,train/loss\n0,2.5\n1,2.4\n")
        discover.source_groups([logs / "run_000000"])  # the readers' imports, not the runs'
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        t = time.perf_counter()
        found = discover.source_groups([logs])
        held = tracemalloc.get_traced_memory()[0] - base
        n = sum(len(g) for g in found)
        peak = tracemalloc.get_traced_memory()[1] - base
        seconds = time.perf_counter() - t
        tracemalloc.stop()
        if hasattr(found, "close"):
            found.close()
    assert n == n_runs, (n, n_runs)
    numbers = {"runs": n_runs, "peak_bytes_per_run": peak / n_runs, "held_bytes_per_run": held / n_runs,
               "seconds": seconds, "peak_rss_mb": _peak_rss() / 1e6}
    text = (f"discovery: {n_runs:,} run folders (tracemalloc; load avg {_bench.load_avg()}; the process's peak RSS "
            f"{numbers['peak_rss_mb']:.0f} MB)\n  peak {peak / n_runs:,.0f} B a run, held once it returns "
            f"{held / n_runs:,.0f} B a run, {seconds:.1f} s")
    return text, numbers


def _writers(names: list[str]) -> dict:
    """Each output's writer, its module imported now (an import's objects are not the sweep's;
    an older tree has only `write_json`). `check` and `junit`: `spikelens check`'s JSON and
    JUnit (the gate evaluated, then written; an older tree renders them whole)."""
    from importlib import import_module

    where = {"json": "json_report", "concise": "concise", "markdown": "markdown", "html": "html"}
    out = {name: getattr(import_module(f"spikelens.report.{where[name]}"), f"write_{name}")
           for name in names if name in where}
    if "check" in names or "junit" in names:
        from spikelens.check import evaluate
        from spikelens.report import json_report, junit

        def check(report, sink):
            result = evaluate(report)
            if hasattr(json_report, "write_check_json"):
                json_report.write_check_json(result, sink, result.exit_code())
            else:  # an older tree: the whole document
                sink.write(json.dumps(json_report.check_report_dict(result, result.exit_code()), indent=1) + "\n")

        def junit_xml(report, sink):
            result = evaluate(report)
            if hasattr(junit, "write_junit"):
                junit.write_junit(result, sink)
            else:
                sink.write(junit.render_junit(result))

        out.update({k: v for k, v in (("check", check), ("junit", junit_xml)) if k in names})
    return out


def _baseline_steps(path: Path) -> list:
    """`spikelens check --update-baseline` then `check --baseline FILE` as the CLI runs them
    (after the sweep; the default policy), each writing the check JSON."""
    from spikelens.check import Policy, baseline_from, evaluate, load_baseline, write_baseline
    from spikelens.report.json_report import write_check_json

    def update(report, sink):
        policy = Policy(baseline=str(path))
        result = evaluate(report, policy, None)
        fresh = baseline_from(result.report)
        write_baseline(fresh, path)
        fresh.path = str(path)
        result = evaluate(report, policy, fresh)
        write_check_json(result, sink, 0)

    def check(report, sink):
        policy = Policy(baseline=str(path))
        result = evaluate(report, policy, load_baseline(path))
        write_check_json(result, sink, result.exit_code())

    return [("check --update-baseline", update), ("check --baseline FILE", check)]


def _rss_stage():
    """The process's peak RSS reset now (Linux `clear_refs` 5); a function giving its growth
    over the RSS of now, in MB, as text: what tracemalloc does not see (Polars', Arrow's and
    SQLite's own memory). '?' where /proc cannot reset it."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        start = _bench.rss_now()
    except OSError:
        return lambda: "?"
    return lambda: f"{(_peak_rss() - start) / 1e6:.1f}"


def _peak_rss() -> int:
    """This process's peak RSS in bytes (VmHWM), 0 where /proc has none."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


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
    ap.add_argument("--parent-memory", action="store_true",
                    help="measure the parent process's own peak memory instead (see the module doc)")
    ap.add_argument("--synthetic", action="store_true",
                    help="the parent's own objects (tracemalloc) over --runs small runs made in memory")
    ap.add_argument("--discovery", action="store_true",
                    help="discovery alone (the real one) over --runs small run folders (tracemalloc)")
    ap.add_argument("--findings", action="store_true",
                    help="with --synthetic: write a findings dataset, then sweep again reusing every run")
    ap.add_argument("--findings-file", action="store_true",
                    help="with --findings: the dataset is one Parquet file (findings.parquet), not a folder")
    ap.add_argument("--save", type=Path, help="with --baseline: copy the check outputs and the baseline here")
    ap.add_argument("--baseline", action="store_true",
                    help="with --synthetic: then check --update-baseline and check --baseline FILE")
    ap.add_argument("--outputs", default="concise",
                    help="with --synthetic: outputs written after the sweep, of json,concise,markdown,html,"
                         "check,junit (check: the gate and its JSON)")
    args = ap.parse_args(argv)
    n_runs = args.runs or (20 if args.quick else 1000)
    n_steps = args.steps or (1000 if args.quick else 10_000)
    repeats = args.repeats or 1
    if args.discovery:
        return _bench.report(discovery, args, n_runs)
    if args.synthetic:
        return _bench.report(synthetic, args, n_runs, [o for o in args.outputs.split(",") if o], args.findings,
                             args.findings_file, args.baseline, args.save)
    if args.parent_memory:
        return _bench.report(parent_memory, args, n_runs, n_steps)
    return _bench.report(run, args, n_runs, n_steps, repeats)


if __name__ == "__main__":
    sys.exit(main())
