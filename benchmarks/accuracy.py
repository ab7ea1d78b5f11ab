"""Accuracy on every labelled suite beside the project, side by side, in one command.

    python benchmarks/accuracy.py [--shared ../shared] [--json out.json] [--cmd spikelens]

1. `real2/` and `real3/` (real runs with hand labels) through `real2/score.py`: events found,
   loud findings matching no event, echoes, clean runs kept quiet, files not read;
2. `bench/public/` (the labelled scenario suite) through `bench/score.py`: micro F1 over
   every scored kind (plateau and overfitting included), loud false alarms and echoes;
3. `real/` (the first real corpus, whose labels are descriptive): no loud finding on its
   clean runs, every NaN run found, each labelled blip named by some finding (any severity),
   and the build-nanogpt shard shift at 5864 found in the unshuffled runs when their folder
   is analysed together.

The suites are read where they lie (never copied); the scorers run `spikelens analyze` as a
user would. Skips a suite that is not there. Takes ~5 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOUD = ("warning", "error")


def run_scorer(args: list[str]) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "score.json"
        proc = subprocess.run([sys.executable, *args, "--out", str(out)], capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
            return None
        return json.loads(out.read_text())


def analyze_json(cmd: str, paths: list[Path]) -> list[dict]:
    proc = subprocess.run([*cmd.split(), "analyze", *map(str, paths), "--format", "json"], capture_output=True, text=True)
    try:
        return json.loads(proc.stdout).get("runs", [])
    except ValueError:
        return []


def _anchors(f: dict) -> list[int]:
    return [f[k] for k in ("peak_step", "start_step", "resume_step") if f.get(k) is not None]


def real_files(real: Path) -> dict[str, list[Path]]:
    """Run id → its files, from the README's run table (`| id | file, file | ...`)."""
    out = {}
    for line in (real / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[0] and not cells[0].startswith(("run", "---")):
            files = [real / f.strip() for f in cells[1].split(",") if f.strip()]
            if files and all(f.exists() for f in files):
                out[cells[0]] = files
    return out


def score_real(real: Path, cmd: str) -> dict:
    labels = json.loads((real / "labels.json").read_text())
    files = real_files(real)
    tally = {"clean_runs": 0, "clean_quiet": 0, "nan_runs": 0, "nan_found": 0, "blips": 0, "blips_named": 0,
             "unread": 0, "lines": []}
    for rid, events in labels.items():
        if rid not in files:
            continue
        paths = files[rid]
        runs = analyze_json(cmd, paths if len(paths) == 1 else [Path(os.path.commonpath(paths))])
        if not runs:
            tally["unread"] += 1
            tally["lines"].append(f"{rid}: not read")
            continue
        fs = [f for r in runs for f in r.get("findings", [])]
        kinds = {e["kind"] for e in events}
        if "clean" in kinds and not kinds & {"spike", "nan", "level_shift", "plateau", "divergence_val"}:
            tally["clean_runs"] += 1
            loud = [f for f in fs if f.get("severity") in LOUD and f.get("kind") != "ended_early"]
            if loud:
                tally["lines"].append(f"{rid}: clean run, loud: " + "; ".join(f"{f['kind']}@{f.get('start_step')}" for f in loud))
            else:
                tally["clean_quiet"] += 1
        if "nan" in kinds:
            tally["nan_runs"] += 1
            if any(f.get("kind") == "nan" for f in fs):
                tally["nan_found"] += 1
            else:
                tally["lines"].append(f"{rid}: NaN run, no nan finding")
        for e in events:
            if e["kind"] != "spike" or e.get("step_start") is None:
                continue
            tally["blips"] += 1
            tol = max(3, 0.005 * max((x for f in fs for x in _anchors(f)), default=1))
            named = any(abs(x - e["step_start"]) <= tol for f in fs for x in _anchors(f)) or any(
                str(e["step_start"]) in json.dumps(f.get("evidence", {})) for f in fs)
            tally["blips_named"] += named
            if not named:
                tally["lines"].append(f"{rid}: blip at {e['step_start']} not named")
    shifts = score_shared_shift(real, cmd)
    tally.update(shifts)
    return tally


def score_shared_shift(real: Path, cmd: str, step: int = 5864, tol: int = 100) -> dict:
    folder = real / "buildnanogpt_agndm"
    if not folder.is_dir():
        return {}
    runs = analyze_json(cmd, [folder])
    found = 0
    unshuffled = [r for r in runs if "shuffled" not in r["run"]]
    for r in unshuffled:
        if any(f.get("kind") == "level_shift" and any(abs(x - step) <= tol for x in _anchors(f)) for f in r["findings"]):
            found += 1
    return {"shard_shift_runs": len(unshuffled), "shard_shift_found": found}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--cmd", default="spikelens")
    ap.add_argument("--json", default=None)
    ap.add_argument("--show", action="store_true", help="list every miss and loud finding")
    a = ap.parse_args()
    shared = Path(a.shared)
    t0 = time.perf_counter()
    results: dict[str, dict | None] = {}
    for name in ("real2", "real3"):
        root = shared / name
        if (root / "labels.json").exists():
            results[name] = run_scorer([str(shared / "real2" / "score.py"), "--root", str(root), "--cmd", a.cmd])
    bench = shared / "bench" / "public"
    if bench.is_dir():
        results["bench"] = run_scorer([str(shared / "bench" / "score.py"), str(bench), "--cmd", a.cmd])
    if (shared / "real" / "labels.json").exists():
        results["real"] = score_real(shared / "real", a.cmd)
    print(f"{'suite':8s} {'found':>10s} {'loud false':>11s} {'echoes':>7s} {'clean quiet':>12s} {'errors':>7s}  notes")
    for name in ("real2", "real3"):
        r = results.get(name)
        if r:
            t = r["totals"]
            pct = 100 * t["found"] / max(t["events"], 1)
            print(f"{name:8s} {t['found']:>4d}/{t['events']:<3d}{pct:3.0f}% {t['loud_false']:>11d} {t['loud_echo']:>7d} "
                  f"{t['clean_quiet']:>6d}/{t['clean_runs']:<5d} {t['errors']:>7d}")
    b = results.get("bench")
    if b:
        m = b["micro"]
        kinds = ", ".join(f"{k['kind']} {k['f1']:.2f}" for k in b["per_kind"])
        print(f"{'bench':8s} {'F1 %.3f' % m['f1']:>10s} {b['loud_false_alarms']['total']:>11d} "
              f"{b['loud_echoes']['total']:>7d} {b['clean_runs'] - b['clean_runs_with_false_alarms']:>6d}/"
              f"{b['clean_runs']:<5d} {'-':>7s}  {kinds}")
    r = results.get("real")
    if r:
        print(f"{'real':8s} {'':>10s} {'':>11s} {'':>7s} {r['clean_quiet']:>6d}/{r['clean_runs']:<5d} {r['unread']:>7d}  "
              f"NaN runs {r['nan_found']}/{r['nan_runs']}, blips named {r['blips_named']}/{r['blips']}, "
              f"shard shift {r.get('shard_shift_found', '-')}/{r.get('shard_shift_runs', '-')}")
    if a.show:
        for name in ("real2", "real3"):
            if results.get(name):
                print(f"\n{name}:\n  " + "\n  ".join(results[name]["lines"]))
        if results.get("real"):
            print("\nreal:\n  " + "\n  ".join(results["real"]["lines"]))
    print(f"({time.perf_counter() - t0:.0f} s)")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
