"""Loud throughput / step-time / stall / memory / rank findings on real logs (#27).

Runs `spikelens analyze --format json` on each dev run of the real-world corpus (the rows
of benchmarks/realworld/manifest.*.jsonl whose split is "dev"; never the holdout, never
the labels) and on each folder given, one at a time with a timeout, and prints every
system finding and the loud (warning/error) ones per 10 runs.

    python benchmarks/bench_system_signals.py [--corpus ~/.cache/spikelens-realworld] [FOLDER ...]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SYSTEM = ("throughput_drop", "step_time_rise", "stall", "memory_growth", "rank_outlier")
HERE = Path(__file__).parent


def dev_runs(corpus: Path) -> list[Path]:
    out: list[Path] = []
    for manifest in sorted((HERE / "realworld").glob("manifest.*.jsonl")):
        for line in manifest.read_text().splitlines():
            row = json.loads(line)
            d = corpus / row["run"]
            if row.get("split") == "dev" and d.exists() and d not in out:
                out.append(d)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=Path.home() / ".cache" / "spikelens-realworld")
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    targets = dev_runs(args.corpus) + [d for f in args.folders for d in sorted(f.iterdir())]
    runs = loud = unread = 0
    for t in targets:
        try:
            p = subprocess.run([sys.executable, "-m", "spikelens", "analyze", str(t), "--format", "json"],
                               capture_output=True, text=True, timeout=args.timeout)
            rep = json.loads(p.stdout)
        except (subprocess.TimeoutExpired, json.JSONDecodeError):
            unread += 1
            continue
        for r in rep["runs"]:
            runs += 1
            for f in r["findings"]:
                causes = [c["cause"] for c in f.get("causes", [])]
                if f["kind"] in SYSTEM or {"out_of_memory", "slowdown"} & set(causes):
                    print(f"{f['severity']:8s} {f['kind']:16s} {t.name}/{r['run']}: {f['message'][:200]} {causes}")
                    loud += f["kind"] in SYSTEM and f["severity"] in ("warning", "error")
    print(f"{runs} runs read ({unread} folders unread), {loud} loud system findings, "
          f"{10 * loud / max(runs, 1):.2f} per 10 runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
