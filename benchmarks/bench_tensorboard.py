"""TensorBoard import: spikelens vs tbparse vs TensorBoard's EventAccumulator, same file.

    python benchmarks/bench_tensorboard.py [--points 250000 1000000] [--repeats 3] [--quick]

For each size, one event file (4 tags, one `simple_value` per event, written by
TensorBoard's own writer into a temp folder) is read by each reader in a fresh
process, `--repeats` times; the table shows medians of:

- process s / cpu s: the whole process (interpreter start, imports, read), as a user
  waits for it; CPU seconds are steadier than wall seconds on a shared machine;
- read s: the read alone, timed inside the process; points/s comes from it;
- peak MB: the process's peak RSS (VmHWM, read by the process itself: `os.wait4`'s
  `ru_maxrss` would include the benchmark parent's size at fork); growth: peak RSS
  minus the RSS just before reading (after the reader's imports), also as a multiple
  of the points held as float64 triples (24 bytes a point).

Readers: `spikelens.load(FILE)` (the long frame), tbparse
`SummaryReader(FILE, event_types={'scalars'}).scalars`, and
`EventAccumulator(FILE, size_guidance={'scalars': 0})` + `Reload()` + `Scalars(tag)`
for every tag. Every reader must return the same number of points.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

READERS = ("spikelens", "tbparse", "EventAccumulator")
SPEEDUP_TARGET = 12.0
"""spikelens at least 12x faster than tbparse (whole process, wall) on 250k points (issue 28; 10x before)."""
MEMORY_TARGET = 3.0
"""Peak memory growth at most 3x the points as float64 triples."""


# ------------------------------------------------------------------ child side


def _child(reader: str, path: str) -> None:
    """Import the reader, then read the file once; print one JSON line."""
    if reader == "spikelens":
        import spikelens
        import spikelens.importers.registry  # noqa: F401  (imported by load() on first use)
        import spikelens.importers.tensorboard  # noqa: F401  (the lazy registry imports it on first use)

        def read() -> int:
            return spikelens.load(path).height
    elif reader == "tbparse":
        from tbparse import SummaryReader

        def read() -> int:
            return len(SummaryReader(path, pivot=False, event_types={"scalars"}).scalars)
    elif reader == "EventAccumulator":
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        def read() -> int:
            acc = EventAccumulator(path, size_guidance={"scalars": 0})
            acc.Reload()
            return sum(len(acc.Scalars(tag)) for tag in acc.Tags()["scalars"])
    else:
        raise SystemExit(f"unknown reader {reader!r}")
    before = _bench.rss_now()
    started = time.perf_counter()
    points = read()
    read_s = time.perf_counter() - started
    print(json.dumps({"points": points, "read_s": read_s, "rss_before": before, "peak_rss": _bench.peak_rss()}))


# ------------------------------------------------------------------ parent side


def measure(path: Path, repeats: int, readers=READERS) -> dict[str, _bench.Measured]:
    out = {}
    for reader in readers:
        out[reader] = _bench.repeat([sys.executable, __file__, "--child", reader, str(path)], repeats,
                                    cwd=path.parent)
    return out


def report(n_points: int, path: Path, results: dict[str, _bench.Measured], repeats: int,
           load_before: str, tags: int = len(_bench.TB_TAGS), label: str = "TensorBoard import") -> tuple[str, dict]:
    """The side-by-side table for one file, and the numbers behind it."""
    base = results["spikelens"]
    rows, numbers = [], {}
    for reader, m in results.items():
        points = {s.json()["points"] for s in m.samples}
        read_s = m.median_of("read_s")
        growth = statistics.median([s.json()["peak_rss"] - s.json()["rss_before"] for s in m.samples])
        peak = statistics.median([s.json()["peak_rss"] for s in m.samples])  # the child's own (VmHWM)
        numbers[reader] = {"points": sorted(points), "process_s": m.wall_s, "cpu_s": m.cpu_s, "read_s": read_s,
                           "peak_rss_mb": peak / 1e6, "growth_mb": growth / 1e6,
                           "growth_x_triples": growth / (n_points * _bench.TRIPLE_BYTES)}
        rows.append([reader, f"{m.wall_s:.2f}", f"{m.cpu_s:.2f}", f"{read_s:.2f}", _bench.rate(n_points, read_s),
                     _bench.mb(peak), f"{_bench.mb(growth)} ({growth / (n_points * _bench.TRIPLE_BYTES):.1f}x)",
                     f"{m.wall_s / base.wall_s:.1f}x", f"{m.cpu_s / base.cpu_s:.1f}x",
                     ",".join(f"{p:,}" for p in sorted(points))])
    title = (f"{label}: {n_points:,} points ({tags} tags x {n_points // tags:,} "
             f"steps, {path.stat().st_size / 1e6:.1f} MB file), median of {repeats}, fresh process each; "
             f"load avg before {load_before}, after {_bench.load_avg()}")
    text = title + "\n" + _bench.table(
        ["reader", "process s", "cpu s", "read s", "points/s", "peak MB", "growth MB (x triples)",
         "wall vs spikelens", "cpu vs spikelens", "points"], rows)
    return text, numbers


def summary(numbers_by_size: dict[int, dict]) -> list[str]:
    """Target lines: speed-up over tbparse, memory growth."""
    lines = []
    for n, numbers in numbers_by_size.items():
        sl, tb = numbers["spikelens"], numbers.get("tbparse")
        if tb:
            ratio = tb["process_s"] / sl["process_s"]
            cpu_ratio = tb["cpu_s"] / sl["cpu_s"]
            target = f"target >= {SPEEDUP_TARGET:.0f}x: {_bench.verdict(ratio >= SPEEDUP_TARGET)}" \
                if n == 250_000 else "(ratio stated, no target)"
            lines.append(f"  {n:>9,} points: spikelens vs tbparse, whole process {ratio:.1f}x wall, "
                         f"{cpu_ratio:.1f}x cpu   {target}")
        lines.append(f"  {n:>9,} points: spikelens peak memory growth {sl['growth_mb']:.0f} MB = "
                     f"{sl['growth_x_triples']:.1f}x the float64 triples ({n * _bench.TRIPLE_BYTES / 1e6:.0f} MB)   "
                     f"target <= {MEMORY_TARGET:.0f}x: {_bench.verdict(sl['growth_x_triples'] <= MEMORY_TARGET)}")
        if "net_growth_x_triples" in sl:
            net = sl["net_growth_x_triples"]
            lines.append(f"  {n:>9,} points: the same less the fixed first-read cost ({sl['fixed_mb']:.0f} MB) = "
                         f"{net:.1f}x   target <= {MEMORY_TARGET:.0f}x: {_bench.verdict(net <= MEMORY_TARGET)}")
    return lines


FIXED_POINTS = 100
"""A file this small measures what the first read costs whatever the size."""


def fixed_cost(tmp: Path, repeats: int) -> float:
    """Peak RSS growth (bytes) of spikelens reading a 100-point file in a fresh process:
    the first Polars expression sets up its engine (~8 MB here), the first read imports
    what it needs; none of it grows with the points."""
    path = _bench.write_event_file(tmp / "fixed", FIXED_POINTS)
    m = measure(path, repeats, ("spikelens",))["spikelens"]
    return statistics.median([s.json()["peak_rss"] - s.json()["rss_before"] for s in m.samples])


WIDE_TAGS = 100
"""The wide file: 4 tags plus this many per-layer tags, every step (as LLM runs log)."""


def run(sizes: list[int], repeats: int, readers=READERS) -> tuple[str, dict]:
    """Generate, measure and report every size, then the smallest size again as a wide
    file (104 tags a step); inputs are removed afterwards."""
    parts, numbers = [], {}
    with _bench.scratch("tb") as tmp:
        fixed = fixed_cost(tmp, repeats)
        parts.append(f"Fixed cost of a first read (spikelens, {FIXED_POINTS}-point file, fresh process, "
                     f"median of {repeats}): peak RSS growth {_bench.mb(fixed)} MB")
        for n in sizes:
            started = time.perf_counter()
            path = _bench.write_event_file(tmp / f"points_{n}", n)
            wrote = time.perf_counter() - started
            load_before = _bench.load_avg()
            results = measure(path, repeats, readers)
            text, numbers[n] = report(n, path, results, repeats, load_before)
            sl = numbers[n]["spikelens"]
            sl["fixed_mb"] = fixed / 1e6
            sl["net_growth_x_triples"] = max(sl["growth_mb"] * 1e6 - fixed, 0) / (n * _bench.TRIPLE_BYTES)
            parts.append(f"{text}\n(input written by TensorBoard's writer in {wrote:.1f} s)")
            counts = {tuple(v["points"]) for v in numbers[n].values()}
            if len(counts) != 1:
                parts.append(f"!! readers disagree on the number of points: {numbers[n]}")
        n = sizes[0]
        path = _bench.write_event_file(tmp / f"wide_{n}", n, extra_tags=WIDE_TAGS)
        load_before = _bench.load_avg()
        tags = len(_bench.TB_TAGS) + WIDE_TAGS
        text, wide = report(n, path, measure(path, repeats, readers), repeats, load_before, tags=tags,
                            label="TensorBoard import, wide file")
        parts.append(text)
        if "tbparse" in wide:
            parts.append(f"wide file: spikelens vs tbparse, whole process "
                         f"{wide['tbparse']['process_s'] / wide['spikelens']['process_s']:.1f}x (stated, no target)")
    parts.append("Targets:\n" + "\n".join(summary(numbers)))
    return "\n\n".join(parts), numbers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, nargs="+", default=None, help="file sizes in points")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    ap.add_argument("--quick", action="store_true", help="small files, one repeat (smoke test)")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    ap.add_argument("--child", nargs=2, metavar=("READER", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    sizes = args.points or ([20_000, 80_000] if args.quick else [250_000, 1_000_000])
    repeats = args.repeats or (1 if args.quick else 3)
    return _bench.report(run, args, sizes, repeats, args.readers)


if __name__ == "__main__":
    sys.exit(main())
