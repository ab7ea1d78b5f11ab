"""Every benchmark in one run, then the targets side by side.

    python benchmarks/run_all.py            # full sizes (~10 minutes on 2 busy cores)
    python benchmarks/run_all.py --quick    # everything scaled down (~30 s smoke test)
    python benchmarks/run_all.py --json numbers.json

1. TensorBoard import (`bench_tensorboard.py`): spikelens vs tbparse vs
   EventAccumulator on the same 250k- and 1M-point files;
2. analyze of one 1M-point run (`bench_analyze.py`): `pipeline.run.analyze_run` in memory and
   the whole `spikelens analyze FILE --format json` process;
3. a sweep of 1,000 runs of 10k steps (`bench_sweep.py`): the whole
   `spikelens analyze DIR --format json` process.

Inputs are written by the real writers into temp folders and removed afterwards.
The load average is printed next to every section: the numbers are only comparable
between runs made under a similar load.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402
import bench_analyze  # noqa: E402
import bench_sweep  # noqa: E402
import bench_tensorboard  # noqa: E402


def targets(tb: dict, an: dict, sw: dict, quick: bool) -> str:
    rows = []
    sizes = sorted(tb)
    small, large = sizes[0], sizes[-1]
    for n in sizes:
        sl, tp, ea = tb[n]["spikelens"], tb[n].get("tbparse"), tb[n].get("EventAccumulator")
        if tp:
            ratio = tp["process_s"] / sl["process_s"]
            rows.append([f"TB import {n:,} pts: spikelens vs tbparse (process)", ">= 10x" if n == small else "stated",
                         f"{ratio:.1f}x wall, {tp['cpu_s'] / sl['cpu_s']:.1f}x cpu",
                         _bench.verdict(ratio >= 10) if n == small else "-"])
        if ea:
            rows.append([f"TB import {n:,} pts: spikelens vs EventAccumulator", "stated",
                         f"{ea['process_s'] / sl['process_s']:.1f}x wall, {ea['cpu_s'] / sl['cpu_s']:.1f}x cpu", "-"])
        rows.append([f"TB import {n:,} pts: spikelens read rate", "stated",
                     f"{_bench.rate(n, sl['read_s'])} points/s ({sl['read_s']:.2f} s)", "-"])
        rows.append([f"TB import {n:,} pts: peak memory growth", "<= 3x triples",
                     f"{sl['growth_mb']:.0f} MB = {sl['growth_x_triples']:.1f}x",
                     _bench.verdict(sl["growth_x_triples"] <= 3)])
        if "net_growth_x_triples" in sl:
            rows.append([f"TB import {n:,} pts: same, less the fixed first-read cost ({sl['fixed_mb']:.0f} MB)",
                         "<= 3x triples", f"{sl['net_growth_x_triples']:.1f}x",
                         _bench.verdict(sl["net_growth_x_triples"] <= 3)])
    if large != small:
        a, b = tb[small]["spikelens"], tb[large]["spikelens"]
        slope = (b["growth_mb"] - a["growth_mb"]) * 1e6 / ((large - small) * _bench.TRIPLE_BYTES)
        rows.append([f"TB import: memory per extra point ({small:,} -> {large:,})", "<= 3x triples",
                     f"{slope:.1f}x", _bench.verdict(slope <= 3)])
    n = an["points"]
    rows.append([f"analyze_run, {n:,}-point run, in memory (warm)", "< 2 s",
                 f"{an['analyze_warm_s']:.2f} s (cold {an['analyze_cold_s']:.2f} s)",
                 _bench.verdict(an["analyze_warm_s"] < 2)])
    rows.append([f"spikelens analyze FILE ({n:,} pts), whole process", "< 2 s if read so",
                 f"{an['cli_process_s']:.2f} s (cpu {an['cli_cpu_s']:.2f} s)", _bench.verdict(an["cli_process_s"] < 2)])
    rows.append([f"sweep {sw['runs']:,} runs x {sw['steps']:,} steps, whole process", "< 60 s",
                 f"{sw['process_s']:.1f} s (cpu {sw['cpu_s']:.1f} s, all processes)",
                 _bench.verdict(sw["process_s"] < 60)])
    head = "Targets" + (" (--quick: sizes scaled down, verdicts are not the real targets)" if quick else "")
    return head + "\n" + _bench.table(["what", "target", "measured", "verdict"], rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="scale everything down (smoke test)")
    ap.add_argument("--repeats", type=int, default=None, help="fresh processes per measurement (default 3, quick 1)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["tensorboard", "analyze", "sweep"])
    ap.add_argument("--json", type=Path, help="also write every number to this file")
    args = ap.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    started = time.perf_counter()
    print(f"spikelens benchmarks: {_bench.machine()}; load avg {_bench.load_avg()}"
          f"{' (--quick)' if args.quick else ''}\n", flush=True)
    numbers: dict = {}
    if "tensorboard" not in args.skip:
        sizes = [20_000, 80_000] if args.quick else [250_000, 1_000_000]
        text, numbers["tensorboard"] = bench_tensorboard.run(sizes, repeats)
        print(text + "\n", flush=True)
    if "analyze" not in args.skip:
        text, numbers["analyze"] = bench_analyze.run(80_000 if args.quick else 1_000_000, repeats)
        print(text + "\n", flush=True)
    if "sweep" not in args.skip:
        runs, steps = (20, 1000) if args.quick else (1000, 10_000)
        text, numbers["sweep"] = bench_sweep.run(runs, steps, 1)
        print(text + "\n", flush=True)
    if not args.skip:
        print(targets(numbers["tensorboard"], numbers["analyze"], numbers["sweep"], args.quick))
    print(f"\ntotal {time.perf_counter() - started:.0f} s; load avg at the end {_bench.load_avg()}")
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
