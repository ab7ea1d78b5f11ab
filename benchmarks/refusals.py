"""Does every refusal name its reason? A check over the dev runs of the real corpus that are not
read, or read without their labelled main loss.

    python benchmarks/refusals.py [--score FILE.json] [--only RUN ...] [--jobs 2]

For each such run (from a `score.py --out` JSON of the dev side, else every dev run), `spikelens
analyze FILES --format json` is run and its stderr and report's warnings are searched, file by file:
a file that gave no run must be named in one line with a reason (not the bare "no training logs
found"); a run read without a loss-like metric must be named by the report's coverage note. Prints
one line a run: `named` (every unread file and lossless run is named with why) or `SILENT` (with
what is missing). Only `--split dev` runs are ever looked at.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "realworld"))
from corpus import CACHE, labelled_runs  # noqa: E402

BARE = "no training logs found (spikelens ls"
"""The refusal that names no reason (what this check is against)."""


def check(run: dict, cmd: list[str]) -> tuple[str, str]:
    files = [CACHE / f for f in run["files"]]
    paths = [str(f) for f in files] if len(files) == 1 else [os.path.commonpath([str(f) for f in files])]
    p = subprocess.run([*cmd, "analyze", *paths, "--format", "json"], capture_output=True, text=True, timeout=600)
    said = [ln for ln in p.stderr.splitlines() if ln.strip()]
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        report = {}
    said += report.get("warnings", [])
    read = {Path(s).resolve() for r in report.get("runs", []) for s in r.get("sources", [])}
    missing = []
    for f in files:
        if f.resolve() in read or any(Path(s) in f.resolve().parents for s in read) or any(r in f.parents for r in read):
            continue
        named = [ln for ln in said if (f.name in ln or str(f) in ln or (len(files) == 1 and paths[0] in ln))
                 and BARE not in ln]
        if not named and not any(str(f.parent) in ln and "looked at" in ln for ln in said):
            missing.append(f"{f.name}: not read, not named with a reason")
    for r in report.get("runs", []):
        roles = set((r.get("metrics") or {}).values())
        crashed = any(f.get("kind") == "ended_early" and f.get("severity") == "error" for f in r.get("findings", []))
        if crashed:  # the crash is the run's verdict (SL306), named with its error line
            continue
        if not roles & {"loss", "eval_loss", "reward"} and not any("no loss-like metric" in ln and r["run"] in ln
                                                                     for ln in said):
            missing.append(f"{r['run']}: read without a loss, not said")
    why = next((ln for ln in said if "error" in ln or "nothing" in ln or "not read" in ln or "no loss" in ln),
               said[-1] if said else "")
    if not missing and not why:
        why = f"read: {len(report.get('runs', []))} run(s), nothing to name"
    return ("SILENT" if missing else "named"), ("; ".join(missing) + " | " if missing else "") + why[:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--score", help="a score.py --out JSON of the dev side: check its runs not read")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--cmd", default="spikelens")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    runs = {r["id"]: r for r in labelled_runs("dev")}
    if a.only:
        ids = [i for i in a.only if i in runs]
    elif a.score:
        results = json.loads(Path(a.score).read_text())["results"]
        ids = [r["id"] for r in results if r["id"] in runs and not r.get("read")]
    else:
        ids = list(runs)
    with ThreadPoolExecutor(a.jobs) as pool:
        out = list(pool.map(lambda i: (i, *check(runs[i], a.cmd.split())), ids))
    for run_id, verdict, why in out:
        print(f"{verdict:6}  {run_id}: {why}")
    silent = sum(1 for _, v, _ in out if v == "SILENT")
    print(f"{len(out)} runs not read or read without the main loss: {len(out) - silent} named with a reason, "
          f"{silent} silent")
    return 1 if silent else 0


if __name__ == "__main__":
    sys.exit(main())
