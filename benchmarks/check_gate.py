"""Does `spikelens check` (default policy) gate the bench as it should? (not part of the tests)

    python benchmarks/check_gate.py [BENCH_DIR] [--all]

Runs `spikelens check` the way a CI job would, from inside each scenario folder on the
paths its labels.json names, and prints the exit code next to the one expected: 0 for
`clean*` families, 1 for `nan`, `divergence` and `spike_none`. With --all, the other families are
run too and shown without an expectation. Exits 1 when an expectation is missed (exit
code 2, an input error, is a miss); skips (exit 0) when the bench is not there.
Scenarios run one at a time, each in its own process (CPU is shared).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "bench" / "public"
EXPECTED = {"clean": 0, "nan": 1, "divergence": 1, "spike_none": 1}


def expected_exit(family: str) -> int | None:
    """0 for every clean family (clean_plain, clean_step_decay, ...), 1 for the fatal ones."""
    return 0 if family.startswith("clean") else EXPECTED.get(family)


def run_check(folder: Path, labels: dict) -> tuple[int, str, float]:
    cmd = [sys.executable, "-m", "spikelens", "check", *labels["paths"], "--format", "json", "-q"]
    if labels.get("command") == "stitch":
        cmd.append("--stitch")
    started = time.perf_counter()
    res = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if res.returncode == 2:
        return 2, res.stderr.strip().splitlines()[-1][:120] if res.stderr.strip() else "exit 2", elapsed
    try:
        data = json.loads(res.stdout)
        failing = sorted({f"{f['code']} {f['kind']}" for r in data["runs"] for f in r["findings"]
                          if f["gate"]["fails"]})
        why = ", ".join(failing) or "-"
    except (json.JSONDecodeError, KeyError):
        why = "unreadable JSON"
    return res.returncode, why, elapsed


def main(argv: list[str]) -> int:
    bench = Path(next((a for a in argv if not a.startswith("--")), DEFAULT))
    every = "--all" in argv
    if not bench.is_dir():
        print(f"no bench at {bench}; skipping")
        return 0
    misses, tally = 0, Counter()
    for folder in sorted(p for p in bench.iterdir() if (p / "labels.json").is_file()):
        labels = json.loads((folder / "labels.json").read_text())
        expected = expected_exit(labels["family"])
        if expected is None and not every:
            continue
        code, why, elapsed = run_check(folder, labels)
        ok = expected is None or code == expected
        misses += not ok
        tally[(labels["family"], code)] += 1
        mark = " " if expected is None else ("ok" if ok else "MISS")
        want = "-" if expected is None else str(expected)
        print(f"{mark:4} {folder.name:42} exit {code:>2} (want {want})  {elapsed:5.1f}s  {why}")
    print()
    for (family, code), n in sorted(tally.items()):
        print(f"{family:24} exit {code:>2}: {n}")
    print(f"\n{misses} miss(es)")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
