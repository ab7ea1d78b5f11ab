"""Large text logs: load time and peak memory of the text importer against Polars'
`read_csv` of the same values written as a CSV, in the same fresh process.

    python benchmarks/bench_textlogs.py [--lines 1000000] [--formats llmc megatron nanogpt]

For each format a log of N step lines is written (llm.c `train_gpt2` stdout: 6 values
a line; Megatron-LM: 8 values a line with a time stamp; nanoGPT: 3 values a line, with
an eval line every 1,000 iterations; torchtitan: 7 values a line with ANSI colour codes,
a rank tag and a time stamp, read by the general line-structure reader since no named
pattern claims it), plus a CSV holding the same values. One fresh
process per format then: imports spikelens and Polars and warms Polars up, reads the
CSV with `pl.read_csv` (time), reads the log with the text importer (time; peak RSS
growth over the RSS before it, from VmHWM, the CSV read having been freed), and
prints JSON. Memory growth is given as a multiple of the points as float64
(step, wall_time, value) triples, the yardstick of the other benchmarks.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import _bench

FORMATS = ("llmc", "megatron", "nanogpt", "torchtitan")


def write_log(fmt: str, n: int, folder: Path) -> tuple[Path, Path, int]:
    """(log, csv of the same values, points)."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    step = np.arange(1, n + 1)
    loss = 3 + 8 * np.exp(-step / (0.08 * n)) + 0.05 * rng.standard_normal(n)
    norm = 0.5 + np.abs(rng.standard_normal(n))
    lr = 6e-4 * np.minimum(1, step / 700)
    ms = 400 + 10 * rng.standard_normal(n)
    mfu = 40 + rng.standard_normal(n)
    df = pl.DataFrame({"step": step, "loss": loss.round(6), "norm": norm.round(4), "lr": lr, "ms": ms.round(2),
                       "mfu": mfu.round(1), "tok": (1.2e6 + 1e4 * rng.standard_normal(n)).round(0).astype(np.int64)})
    s = pl.col("step").cast(pl.String)
    lr_text = pl.col("lr").map_batches(lambda x: pl.Series([f"{v:.3E}" for v in x.to_list()]), return_dtype=pl.String)
    if fmt == "llmc":
        line = pl.format("step {}/{} | loss {} (+0.00z)| norm {} (+0.00z)| lr {} | {} ms | {}% bf16 MFU | {} tok/s",
                         s.str.pad_start(7), pl.lit(str(n)), "loss", "norm", lr_text, "ms", "mfu", "tok")
        values = df.select("step", "loss", "norm", "lr", "ms", "mfu", "tok")
        header = "+----------------------+\n| train_gpt2 benchmark |\n+----------------------+\n"
    elif fmt == "megatron":
        stamp = (pl.lit(1_714_550_400_000_000) + pl.col("step") * 400_000).cast(pl.Datetime("us")).dt.strftime(
            "%Y-%m-%d %H:%M:%S%.6f")
        line = pl.format(
            "[{}] iteration {}/ {} | consumed samples: {} | elapsed time per iteration (ms): {} | learning rate: {} | "
            "global batch size:    32 | lm loss: {} | loss scale: 65536.0 | grad norm: {} | "
            "number of skipped iterations:   0 | number of nan iterations:   0 |",
            stamp, s.str.pad_start(8), pl.lit(str(n).rjust(8)), pl.col("step") * 32, "ms", lr_text, "loss", "norm")
        values = df.select("step", "ms", "lr", "loss", "norm", samples=pl.col("step") * 32,
                           batch=pl.lit(32.0), scale=pl.lit(65536.0), skipped=pl.lit(0.0), nans=pl.lit(0.0))
        header = "using world size: 8\n------------------------ arguments ------------------------\n"
    elif fmt == "torchtitan":  # no named pattern: the general line-structure reader
        stamp = (pl.lit(1_735_732_800_000_000) + pl.col("step") * 400_000).cast(pl.Datetime("us")).dt.strftime(
            "%Y-%m-%d %H:%M:%S,%3f")
        mem = (29 + pl.col("norm") / 10).round(2)
        tps = pl.col("tok").map_batches(lambda x: pl.Series([f"{v // 100:,}" for v in x.to_list()]),
                                        return_dtype=pl.String)
        line = pl.format("\x1b[32m[rank0]:[titan] {} - root - INFO - \x1b[31mstep: {}  \x1b[32mloss: {}  "
                         "\x1b[33mgrad_norm: {}  \x1b[34mmemory: {}GiB({}%)  \x1b[35mtps: {}  "
                         "\x1b[36mtflops: {}  \x1b[35mmfu: {}%\x1b[39m",
                         stamp, s.str.pad_start(2), pl.col("loss").round(5), pl.col("norm").round(4), mem,
                         (mem / 80 * 100).round(2), tps, (pl.col("mfu") / 8).round(2), "mfu")
        values = df.select("step", "loss", "norm", mem=mem, mem_pct=(mem / 80 * 100).round(2),
                           tps=pl.col("tok") // 100, tflops=(pl.col("mfu") / 8).round(2), mfu="mfu")
        header = ("[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - Starting job: Llama 3 8B training\n"
                  f"[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - Training starts at step 1, "
                  f"total steps {n}\n")
    else:
        line = pl.format("iter {}: loss {}, time {}ms, mfu {}%", "step", "loss", "ms", "mfu")
        values = df.select("step", "loss", "ms", "mfu")
        header = "Overriding config with config/train_gpt2.py:\n"
    lines = df.select(line.alias("line")).get_column("line")
    log = folder / f"{fmt}_{n}.log"
    with open(log, "w") as fh:
        fh.write(header)
        for part in range(0, n, 100_000):
            fh.write("\n".join(lines.slice(part, 100_000).to_list()) + "\n")
    csv = folder / f"{fmt}_{n}.csv"
    values.write_csv(csv)
    return log, csv, values.height * (values.width - 1)


CHILD = r"""
import gc, json, resource, sys, time
from pathlib import Path
import polars as pl
sys.path.insert(0, {bench!r})
import _bench
from spikelens.importers.textlogs import TextLogImporter

log, csv = Path({log!r}), Path({csv!r})
imp = TextLogImporter()
imp.pattern_for(log) or imp.general_for(log)  # the sniff (discovery) is not the load
pl.DataFrame({{"a": [1.0]}}).select(pl.col("a") * 2)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t, c = time.perf_counter(), cpu(); values = pl.read_csv(csv); csv_s, csv_cpu = time.perf_counter() - t, cpu() - c
csv_points = values.height * (values.width - 1)
del values; gc.collect()
base = _bench.rss_now()
open('/proc/self/clear_refs', 'w').write('5')  # VmHWM := VmRSS: the peak of the read alone
t, c = time.perf_counter(), cpu(); tables = imp.read(log); read_s, read_cpu = time.perf_counter() - t, cpu() - c
peak = _bench.peak_rss()
print(json.dumps({{"csv_s": csv_s, "read_s": read_s, "csv_cpu": csv_cpu, "read_cpu": read_cpu, "points": sum(t.frame.height for t in tables),
                   "csv_points": csv_points, "growth": peak - base}}))
"""


def measure(log: Path, csv: Path, spikelens_from: str | None = None) -> dict:
    import os

    code = CHILD.format(bench=str(Path(__file__).parent), log=str(log), csv=str(csv))
    env = {**os.environ, "PYTHONPATH": spikelens_from} if spikelens_from else None
    # run outside the project: `python -c` puts the working folder first on sys.path, before
    # PYTHONPATH, so a run from the project root would measure this tree as "before" too
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=log.parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(n: int, formats: list[str], repeats: int, before: str | None = None) -> tuple[str, list[dict]]:
    rows, data, spread = [], [], []
    with tempfile.TemporaryDirectory(prefix="spikelens-textbench-") as tmp:
        for fmt in formats:
            log, csv, points = write_log(fmt, n, Path(tmp))
            for label, where in ([("before", before)] if before else []) + [("after" if before else "", None)]:
                runs = sorted((measure(log, csv, where) for _ in range(repeats)), key=lambda m: m["read_s"])
                m = runs[len(runs) // 2]
                m.update(format=fmt, lines=n, mb=log.stat().st_size / 1e6, label=label)
                ratios = [r["read_s"] / r["csv_s"] for r in runs]
                times = [r["growth"] / (r["points"] * _bench.TRIPLE_BYTES) for r in runs]
                spread.append(f"{fmt} {label}: ratio {min(ratios):.1f}-{max(ratios):.1f}x, "
                              f"peak growth {min(times):.1f}-{max(times):.1f}x the triples over {len(runs)} runs")
                data.append(m)
                rows.append([f"{fmt} {label}".strip(), f"{n:,}", f"{m['mb']:.0f}", f"{m['points']:,}", f"{m['read_s']:.2f}",
                             f"{m['csv_s']:.2f}", f"{m['read_s'] / m['csv_s']:.1f}x",
                             f"{m['read_cpu']:.1f} / {m['csv_cpu']:.1f}", _bench.mb(m["growth"]),
                             f"{m['growth'] / (m['points'] * _bench.TRIPLE_BYTES):.1f}x"])
    text = _bench.table(["format", "lines", "MB", "points", "load s", "read_csv s", "ratio", "CPU s load / csv",
                         "peak growth",
                         "x triples"], rows)
    return f"{text}\n(median of {repeats}; load average {_bench.load_avg()})\n" + "\n".join(spread), data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--formats", nargs="*", default=list(FORMATS), choices=FORMATS)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--before", metavar="DIR", help="also measure the spikelens package found in DIR (e.g. "
                                                      "`git archive OLD spikelens | tar -x -C DIR`)")
    args = ap.parse_args()
    text, _ = run(args.lines, args.formats, args.repeats, args.before)
    print(text)


if __name__ == "__main__":
    main()
