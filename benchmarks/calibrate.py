"""Fit detector thresholds on the real corpus's dev side, against a stated target: at most one
loud finding per 10 clean runs and one loud false alarm per 10 runs, and recall on labelled events
as high as that allows.

    python benchmarks/calibrate.py [--cmd spikelens] [--jobs 2] [--only RUN ...]
                                   [--sweep spike.bad_batch_ratio=3,5,8] [--sweep ...] [--show]
                                   [--refit] [--out FILE] [--from-reports DIR ...]

Runs `spikelens analyze` on every run of `benchmarks/realworld/` whose side is `dev` (the held-aside
side is never opened, run on or printed here: it is scored once, at the end, by the lead with
`realworld/score.py --split holdout`), scores each as `realworld/score.py` does, and prints per
finding kind: recall on labelled events (high-confidence apart), loud findings per 10 clean runs,
loud findings that match no labelled event, and notes (info findings) per 10 clean runs (a note is no
alarm, but a reading that writes one on most clean runs says little). `--from-reports DIR` judges the
reports `realworld/score.py --reports DIR` kept instead of running spikelens (several DIRs: one block
each, so a before and an after are read side by side without re-running either). With `--sweep DETECTOR.PARAM=v1,v2,...` it re-runs
with each value passed as `--param` (the same override a user gives) and prints one block per value,
so the trade-off of a threshold is read off the dev side. `--refit` then picks, for each swept
parameter, the value that finds the most events (high-confidence first) among those that meet the
target (the fewest loud findings on clean runs when none does) and prints them as the
`[tool.spikelens.detectors]` table a user or `config.py` takes; with `--refit` and no `--sweep`, the
thresholds in `REFIT` are swept (each value is one pass over the dev side: minutes; a value equal to
the detector's default reuses the defaults' pass).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "realworld"))
from corpus import labelled_runs  # noqa: E402
from score import ALIAS, LOUD, judge, run_spikelens  # noqa: E402

TARGET_LOUD_PER_10_CLEAN = 1.0
TARGET_LOUD_FALSE_PER_10_RUNS = 1.0
REFIT = (
    "overfitting.loud_rise=0.1,0.25",
    "oscillation.min_amp_ratio=3,4",
    "spike.settled_back_ratio=1.1,1.05,1.2",
    "divergence.creep_min_ratio=1.02,1.04",
    "divergence.collapse_share=0.3,0.4",
)
"""The thresholds `--refit` sweeps when no `--sweep` is given (the first value is the default): the
detector thresholds that decide loudness once `detect/significance.py` has made notes of what moves
by design (the rise that makes overfitting a warning, the swing that makes an oscillation one), and
those that decide what is found at all: how near its level a spike must come back to have recovered
(a spike read as never back hides the next one in its wake), the smallest certain rise that is a
creep, the share of its gain (and of its level) a reward must lose to have collapsed."""


def dev_runs(only: list[str] | None) -> list[dict]:
    """The dev side only: `labelled_runs` recomputes each run's side from its repository."""
    runs = [r for r in labelled_runs("dev") if r.get("split") == "dev"]
    return [r for r in runs if not only or r["id"] in only]


def score(runs: list[dict], cmd: list[str], jobs: int) -> list[tuple[dict, dict, dict | None]]:
    def one(run: dict):
        report, why = run_spikelens(cmd, run)
        return run, judge(run, report, why), report

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, runs))


def kept(runs: list[dict], folder: Path) -> list[tuple[dict, dict, dict | None]]:
    """The dev runs whose report `realworld/score.py --reports` kept in `folder`, judged as `score` does
    (a run without a kept report is left out, as the scorer leaves out a run whose files are absent)."""
    out = []
    for run in runs:
        path = folder / f"{run['id']}.json"
        if path.exists():
            k = json.loads(path.read_text())
            out.append((run, judge(run, k["report"], k["why"]), k["report"]))
    return out


def per_kind(results: list[tuple[dict, dict, dict | None]]) -> dict[str, dict[str, int]]:
    """Per kind: labelled events and found, high-confidence apart; loud findings on clean runs;
    loud findings matching no event (from the scorer's lines)."""
    table: dict[str, Counter] = {}

    def row(kind: str) -> Counter:
        return table.setdefault(kind, Counter())

    for run, res, report in results:
        for kind, conf, found in res["events"]:
            r = row(kind)
            r["events"] += 1
            r["found"] += found
            if conf == "high":
                r["high"] += 1
                r["high_found"] += found
        if res["clean"]:
            for f in (f for r in (report or {}).get("runs", []) for f in r.get("findings", [])):
                row(f["kind"])["loud_on_clean" if f.get("severity") in LOUD else "notes_on_clean"] += 1
        for line in res["lines"]:
            if ": LOUD-FALSE " in line:
                row(line.split(": LOUD-FALSE ", 1)[1].split(" ", 1)[0])["loud_false"] += 1
    return {k: dict(v) for k, v in table.items()}


def report(name: str, results: list[tuple[dict, dict, dict | None]], show: bool) -> dict:
    kinds = per_kind(results)
    clean = sum(1 for _, res, _ in results if res["clean"])
    runs = len(results)
    if show:
        for _, res, _ in results:
            for line in res["lines"]:
                print("   ", line)
    print(f"{name}: {runs} dev runs, {clean} clean")
    print(f"  {'kind':16s} {'recall':>9s} {'high':>9s} {'loud/10 clean':>14s} {'loud, no event':>15s} "
          f"{'notes/10 clean':>15s}")
    total = Counter()
    for k in sorted(kinds, key=lambda k: (k not in ALIAS, k)):
        v = kinds[k]
        total.update(v)
        recall = f"{v.get('found', 0)}/{v['events']}" if v.get("events") else "-"
        high = f"{v.get('high_found', 0)}/{v['high']}" if v.get("high") else "-"
        per10 = 10 * v.get("loud_on_clean", 0) / max(clean, 1)
        notes10 = 10 * v.get("notes_on_clean", 0) / max(clean, 1)
        print(f"  {k:16s} {recall:>9s} {high:>9s} {per10:>14.2f} {v.get('loud_false', 0):>15d} {notes10:>15.2f}")
    per10 = 10 * total["loud_on_clean"] / max(clean, 1)
    false10 = 10 * total["loud_false"] / max(runs, 1)
    print(f"  {'all':16s} {total['found']}/{total['events']:<7d} {total['high_found']}/{total['high']:<7d} "
          f"{per10:>14.2f} {total['loud_false']:>15d}   target: <= {TARGET_LOUD_PER_10_CLEAN:g} loud per 10 clean"
          f"{'  MET' if per10 <= TARGET_LOUD_PER_10_CLEAN else '  NOT MET'}")
    print(f"  loud findings matching no event: {false10:.2f} per 10 runs   target: <= "
          f"{TARGET_LOUD_FALSE_PER_10_RUNS:g}{'  MET' if false10 <= TARGET_LOUD_FALSE_PER_10_RUNS else '  NOT MET'}")
    return {"runs": runs, "clean": clean, "kinds": kinds, "loud_per_10_clean": per10, "loud_false_per_10_runs": false10,
            "found": total["found"], "events": total["events"], "high_found": total["high_found"],
            "high": total["high"], "loud_false": total["loud_false"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cmd", default="spikelens")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--sweep", action="append", default=[], metavar="DETECTOR.PARAM=v1,v2,...")
    ap.add_argument("--show", action="store_true", help="print each missed event and false alarm (dev only)")
    ap.add_argument("--out", help="write the figures as JSON")
    ap.add_argument("--from-reports", nargs="+", metavar="DIR",
                    help="judge the reports kept by realworld/score.py --reports DIR (one block per DIR) "
                         "instead of running spikelens")
    ap.add_argument("--refit", action="store_true",
                    help="pick each swept parameter's best value against the target and print them")
    a = ap.parse_args()
    if a.refit and not a.sweep:
        a.sweep = list(REFIT)
    runs = dev_runs(a.only)
    if not runs:
        print("no dev runs labelled yet (benchmarks/realworld/labels.*.json)", file=sys.stderr)
        return 2
    if a.from_reports:
        if a.sweep or a.refit:
            print("--from-reports judges kept reports: it takes no --sweep or --refit", file=sys.stderr)
            return 2
        out = {d: report(d, kept(runs, Path(d)), a.show) for d in a.from_reports}
        if a.out:
            Path(a.out).write_text(json.dumps(out, indent=1))
        return 0
    cmd = shlex.split(a.cmd)
    out = {"baseline": report("defaults", score(runs, cmd, a.jobs), a.show)}
    for spec in a.sweep:
        param, _, values = spec.partition("=")
        if not values or "." not in param:
            print(f"--sweep {spec!r}: expected DETECTOR.PARAM=v1,v2,...", file=sys.stderr)
            return 2
        for v in values.split(","):
            name = f"{param}={v}"
            if _is_default(param, v):
                print(f"{name}: the default, scored above")
                out[name] = out["baseline"]
                continue
            out[name] = report(name, _swept(runs, cmd, name, a.jobs), a.show)
    if a.refit:
        out["refit"] = refit(out, a.sweep)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


def meets(fig: dict) -> bool:
    return (fig["loud_per_10_clean"] <= TARGET_LOUD_PER_10_CLEAN
            and fig["loud_false_per_10_runs"] <= TARGET_LOUD_FALSE_PER_10_RUNS)


def best(figures: dict[str, dict]) -> str:
    """The value that finds the most events (high-confidence first, then all, then fewer false
    alarms) among those meeting the target; the quietest on clean runs when none does."""
    ok = {v: f for v, f in figures.items() if meets(f)}
    if ok:
        return max(ok, key=lambda v: (ok[v]["high_found"], ok[v]["found"], -ok[v]["loud_false"]))
    return min(figures, key=lambda v: (figures[v]["loud_per_10_clean"], figures[v]["loud_false"], -figures[v]["found"]))


def refit(out: dict, sweeps: list[str]) -> dict[str, str]:
    """Each swept parameter's best value, printed as the settings table that applies them."""
    chosen: dict[str, str] = {}
    print("refit (dev side):")
    for spec in sweeps:
        param, _, values = spec.partition("=")
        figures = {v: out[f"{param}={v}"] for v in values.split(",")}
        v = best(figures)
        f = figures[v]
        chosen[param] = v
        print(f"  {param} = {v}: events {f['found']}/{f['events']} (high {f['high_found']}/{f['high']}), "
              f"{f['loud_per_10_clean']:.2f} loud per 10 clean runs, {f['loud_false_per_10_runs']:.2f} loud false "
              f"per 10 runs{'' if meets(f) else '  (no value meets the target: the quietest)'}")
    print("\n[tool.spikelens.detectors]")
    by_detector: dict[str, list[str]] = {}
    for param, v in chosen.items():
        det, _, name = param.partition(".")
        by_detector.setdefault(det, []).append(f"{name} = {v}")
    for det, items in by_detector.items():
        print(f"{det} = {{ {', '.join(items)} }}")
    return chosen


def _is_default(param: str, value: str) -> bool:
    """Is `value` the installed detector's default for `param` (DETECTOR.PARAM, kind or code)?"""
    try:
        from spikelens.detect.registry import DETECTORS
    except ImportError:
        return False
    det, _, name = param.partition(".")
    for cls in DETECTORS:
        if det in (cls.kind, cls.code) and name in cls.params():
            try:
                return float(getattr(cls(), name)) == float(value)
            except (TypeError, ValueError):
                return str(getattr(cls(), name)) == value
    return False


def _swept(runs: list[dict], cmd: list[str], param: str, jobs: int):
    """Score with one `--param` override: `analyze PATHS --format json --param X=v`."""
    def one(run: dict):
        rep, why = _run_with(cmd, run, param)
        return run, judge(run, rep, why), rep

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, runs))


def _run_with(cmd: list[str], run: dict, param: str):
    return run_spikelens(cmd, run, ("--param", param))


if __name__ == "__main__":
    raise SystemExit(main())
