"""Check the text-log importer against the real logs in ../shared/real (not part of the tests).

    python benchmarks/check_real.py [REAL_DIR]

For every text log listed in `stats.json` it prints the pattern that claimed the file,
the unique steps of the primary metric found vs expected, the expected metrics that
are missing, non-finite points and segments found vs expected, and the load time.
Exits 1 when a log falls below 95% of the expected steps or misses a metric; skips
(exit 0) when the real logs are not there.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import polars as pl

from spikelens import diagnostics
from spikelens.discover import iter_runs
from spikelens.frame import infer_role

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "real"
TEXT_SUFFIXES = {".log", ".txt"}
RENAMED = {
    "norm": "grad_norm", "train": "train_loss", "val": "val_loss", "hella": "hellaswag",
    "learning rate": "lr", "loss scale": "loss_scale", "overflow_skip": "overflow_skips",
    "number of skipped iterations": "skipped_iterations", "number of nan iterations": "nan_iterations",
}
"""Names in stats.json → the names the importer emits."""


def check(entry: dict, real: Path) -> tuple[bool, str]:
    files = [real / f for f in entry["files"]]
    t0 = time.perf_counter()
    with diagnostics.collecting() as diag:
        runs = list(iter_runs(files))
    elapsed = time.perf_counter() - t0
    if len(runs) != 1:
        return False, f"{entry['id']:30s} expected 1 run, got {len(runs)}"
    run = runs[0]
    frame = run.frame
    primary = RENAMED.get(entry["primary"], entry["primary"])
    prim = frame.filter(pl.col("metric") == primary)
    found = prim.get_column("step").n_unique()
    expected = entry["n_unique_steps"]
    share = found / expected if expected else 1.0
    metrics = set(frame.get_column("metric").unique().to_list())
    missing = sorted(RENAMED.get(m, m) for m in entry["metrics"] if RENAMED.get(m, m) not in metrics)
    nonfinite = prim.filter(~pl.col("value").is_finite()).height
    roles = {m: infer_role(m) for m in sorted(metrics) if infer_role(m) != "other"}
    finite = prim.filter(pl.col("value").is_finite()).sort("step", maintain_order=True).select("step", "value")
    ends = [[finite.row(i)[0], round(finite.row(i)[1], 6)] for i in (0, -1)] if finite.height else [None, None]
    want_ends = (entry.get("first"), entry.get("last"))
    ends_ok = all(_same(got, want) for got, want in zip(ends, want_ends))
    other_axis = not ends_ok and all(_same(got, want, steps=False) for got, want in zip(ends, want_ends))
    ok = share >= 0.95 and not missing and (ends_ok or other_axis)
    line = (f"{'OK ' if ok else 'BAD'} {entry['id']:28s} [{run.meta.get('pattern')}] {primary}: "
            f"{found}/{expected} steps ({share:.1%}), non-finite {nonfinite}/{entry['nonfinite']}, "
            f"segments {len(run.segments)}/{entry['segments']}, {elapsed * 1000:.0f} ms")
    if other_axis:
        line += f"\n      note: same first/last values, steps on another axis: {ends} vs {list(want_ends)}"
    elif not ends_ok:
        line += f"\n      first/last finite point {ends} != expected {list(want_ends)}"
    if missing:
        line += f"\n      missing metrics: {missing}"
    line += f"\n      roles: {roles}"
    for w in diag.lines:
        line += f"\n      warning: {w[:160]}"
    return ok, line


def _same(got, want, steps: bool = True) -> bool:
    """Same [step, value] point (values to 1e-4 relative; `steps=False` compares values only)."""
    if want is None or got is None:
        return want is None and got is None
    return (got[0] == want[0] or not steps) and abs(got[1] - want[1]) <= 1e-4 * max(1.0, abs(want[1]))


def main(argv: list[str]) -> int:
    real = Path(argv[0]) if argv else DEFAULT
    stats_path = real / "stats.json"
    if not stats_path.is_file():
        print(f"skipped: {stats_path} not found")
        return 0
    entries = [e for e in json.loads(stats_path.read_text()) if all(Path(f).suffix in TEXT_SUFFIXES for f in e["files"])]
    bad = 0
    for entry in entries:
        ok, line = check(entry, real)
        bad += not ok
        print(line)
    print(f"{len(entries) - bad}/{len(entries)} text logs OK")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
