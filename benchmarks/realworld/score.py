"""Score spikelens on the real-log corpus: read rate with the main loss, events found, loud alarms.

usage: python benchmarks/realworld/score.py [--split dev|holdout|all] [--cmd spikelens] [--show]
                                            [--out FILE] [--only RUN_ID ...] [--jobs N]

Read rate: of the runs a person can read (`readable` in the labels), how many spikelens reads with
the labelled main loss among its metrics, and how many with it chosen as the run's main metric;
every other run is listed with why (the command's last stderr line, or the metrics it did find).
A metric spikelens renames by design (an unnamed YOLO column, SB3 monitor `r`) counts by MAIN_RENAMES.
Events: a labelled event is found by a finding of an allowed kind anchored within 5% of the run's
span (or 3 steps) of the labelled step, or whose span holds it. A loud finding (warning/error) that
matches no labelled event of any kind is a false alarm; one near another labelled event is an echo.
The held-aside side (`--split holdout`) is for the end of a session only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CACHE, labelled_runs  # noqa: E402

# The finding kinds that may stand for a labelled kind (the tool's words are wider than the labels').
ALIAS = {
    "spike": {"spike"}, "nan": {"nan"}, "divergence": {"divergence"}, "oscillation": {"oscillation"},
    "plateau": {"plateau", "never_learned"}, "never_learned": {"plateau", "never_learned"},
    "overfitting": {"overfitting"}, "resume_overlap": {"resume_overlap"}, "step_reset": {"step_reset"},
    "repeated_data": {"repeated_data"}, "crash": {"ended_early"},
    "throughput_drop": {"throughput_drop"}, "step_time_rise": {"step_time_rise"}, "stall": {"stall"},
    "memory_growth": {"memory_growth"},
}
LOUD = ("warning", "error")

# Labels name the main loss as the file shows it; where spikelens names it on purpose (an unnamed
# column, a one-letter key), these are the names that stand for it. Every entry is a rename the
# reader makes by design, checked by value on a corpus file when it was added.
MAIN_RENAMES = {
    r"total \(col \d+; unnamed in file\)": ("train/loss",),  # YOLOv5/v7 results.txt: box+obj+cls
    r"r": ("episode/reward",),  # SB3 monitor.csv: the episode return
    r"train": ("train_loss",),  # build-nanogpt log.txt `N train 3.21`: the record kind is the name
    r"trl": ("train_loss",),  # llm.c `s:0 trl:11.01 lr:... norm:...`: llm.c's abbreviation of the train loss
}
# Labels that name the main loss by its key and a note on where it sits: `loss (Train)` (the `loss=` of
# the lines tagged Train), `loss (column 2)` (a file without a header: the reader names the column by its
# number), `loss (single column)` (the file's only series), `train loss (first list)`. The key, the
# column's number, or the run's only metric is what stands for it.
NOTED = re.compile(r"(?P<key>[^()]+?) \((?P<note>[^()]*)\)(?:,.*)?")
COLUMN = re.compile(r"col(?:umn)? (?P<n>\d+)", re.IGNORECASE)
# A note that places the value by position (`single column`, `second number of each pair`, `after the
# underscore`) says the file names no key: the run's only series stands for it.
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
POSITIONAL = re.compile(r"single column|number|pair|after the|only (?:series|value)", re.IGNORECASE)
# A label that quotes the key with the word or sign joining it to its value (`loss is`, `loss =`).
COPULA = re.compile(r"(?P<key>.+?)\s*(?:\bis|\bwas|=|:)\s*")
# A headerless file's value column is named `<file>_column<N>` by the reader: the file's name is its key;
READER_COLUMN = re.compile(r"_col(?:umn)?\d+$|_(?:pct|percent|ms|sec|gib|mib)$")  # and the unit it appends
SINGLE = "\x00the run's only metric"


def main_names(label: str | None) -> tuple[str, ...]:
    """The metric names that count as the labelled main loss."""
    if label is None:
        return ()
    quoted = COPULA.fullmatch(label)  # `loss is` of MindSpore's `loss is 2.30`: the key is before the copula
    if quoted:
        return (label, quoted["key"])
    renamed = next((names for pat, names in MAIN_RENAMES.items() if re.fullmatch(pat, label)), ())
    if renamed:
        return (label, *renamed)
    noted = NOTED.fullmatch(label)
    if noted is None:
        return (label,)
    column = COLUMN.search(noted["note"])
    n = column["n"] if column else next((str(i + 1) for i, w in enumerate(ORDINALS)
                                         if re.search(rf"\b{w} col", noted["note"], re.I)), None)
    if n:
        return (label, f"column{n}", f"col{n}")
    if POSITIONAL.search(noted["note"]):
        return (label, noted["key"], SINGLE)
    return (label, noted["key"])


def norm(name: str) -> str:
    """Compared names: lower case, letters and digits; the reader writes `validation`/`valid` as `val`."""
    # letters of any script count (`награда`, `损失`): a label in the log's own language names its metric
    return re.sub(r"[\W_]", "", re.sub(r"(?<![a-z])valid(?:ation)?(?![a-z])", "val", str(name).lower()))


def same_metric(label: str, metric: str) -> bool:
    a = norm(label)
    plural = {a, a + "s", a + "es"}  # `loss` of a file named losses.txt
    return bool(a) and any(b and (b in plural or b.endswith(a) or a.endswith(b))
                           for b in {norm(metric), norm(READER_COLUMN.sub("", str(metric)))})


def anchors(f: dict) -> list[int]:
    return [f[k] for k in ("peak_step", "start_step", "resume_step", "end_step") if f.get(k) is not None]


def in_epochs(run: dict) -> bool:
    """Labels counted in epochs (the label's `step_key` names the epoch) while the run may log steps."""
    return "epoch" in str(run.get("step_key") or "").lower()


def epoch_near(f: dict, at: float, end: float | None) -> bool:
    """Whether a finding's epoch (its evidence says the epoch in progress at its anchor, and at its
    start and end for a span) is within 5% (at least one epoch) of a label counted in epochs."""
    ev = f.get("evidence") or {}
    tol = max(0.05 * max(at, end or 0), 1)
    lo, hi = ev.get("epoch_start"), ev.get("epoch_end")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo - tol <= at <= hi + tol:
        return True
    return isinstance(ev.get("epoch"), (int, float)) and abs(ev["epoch"] - at) <= tol


def covers_half(lo: float | None, hi: float | None, at: float | None, end: float | None) -> bool:
    """Whether a finding's span [lo, hi] covers at least half of a labelled span [at, end]: a plateau
    "from step 52 to the end" is the labelled never-learned run of steps 0 to the end, whatever the
    detector took as its first settled point (start tolerances alone miss that on long spans)."""
    if None in (lo, hi, at, end) or end <= at:
        return False
    return min(hi, end) - max(lo, at) >= 0.5 * (end - at)


def span_covers(f: dict, at: float | None, end: float | None, epochs: bool) -> bool:
    """`covers_half` in steps, or in epochs for a label counted in epochs (the finding's epoch span)."""
    ev = f.get("evidence") or {}
    return covers_half(f.get("start_step"), f.get("end_step"), at, end) or (
        epochs and covers_half(ev.get("epoch_start"), ev.get("epoch_end"), at, end))


def run_spikelens(cmd: list[str], run: dict, extra: tuple[str, ...] = ()) -> tuple[dict | None, str]:
    """The JSON report of `analyze` on a run's files (their folder when several), and the last
    line of stderr; `extra` options are passed on (calibrate.py's `--param`)."""
    files = [str(CACHE / f) for f in run["files"]]
    paths = files if len(files) == 1 else [os.path.commonpath(files)]
    try:
        p = subprocess.run([*cmd, "analyze", *paths, "--format", "json", *extra], capture_output=True, text=True,
                           timeout=600)
    except subprocess.TimeoutExpired:
        return None, "timed out after 600 s"
    err = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    try:
        return json.loads(p.stdout), (err[-1] if err else "")
    except json.JSONDecodeError:
        return None, f"rc={p.returncode} {err[-1][:200] if err else ''}"


def judge(run: dict, report: dict | None, why: str) -> dict:
    out = {"id": run["id"], "tool": run.get("tool"), "readable": run.get("readable", True), "lines": []}
    runs = (report or {}).get("runs", [])
    main = run.get("main_loss")
    metrics = [m for r in runs for m in r.get("metrics", {})]
    names = main_names(main)
    only = len(set(metrics)) == 1 and SINGLE in names  # `loss (single column)`: the file's one series
    out["read"] = bool(runs) and (main is None or only or any(same_metric(n, m) for n in names for m in metrics))
    out["main"] = bool(runs) and (main is None or only or any(same_metric(n, (r.get("stats") or {}).get("main_metric") or "")
                                                      for n in names for r in runs))
    if out["readable"] and not out["read"]:
        reason = why if not runs else f"main loss {main!r} not among {sorted(metrics)[:12]}"
        out["lines"].append(f"{run['id']} ({run.get('tool')}): NOT READ: {reason}")
    fs = [f for r in runs for f in r.get("findings", [])]
    steps = [x for f in fs for x in anchors(f)]
    span = max(steps) if steps else max(run.get("n_steps") or 1, 1)
    # A crash labelled without a step (the run died before logging one) is matched by any crash finding.
    events = [e for e in run.get("events", []) if e.get("kind") in ALIAS
              and (e.get("step") is not None or e.get("kind") == "crash")]
    out["events"] = []
    matched = set()
    epochs, by_epoch = in_epochs(run), 0
    for e in events:
        tol = max(0.05 * max(span, e.get("end_step") or 0, e.get("step") or 0), 3)
        hit = None
        for i, f in enumerate(fs):
            if f.get("kind") not in ALIAS[e["kind"]]:
                continue
            lo, hi = f.get("start_step"), f.get("end_step")
            if (e["kind"] == "crash" and f.get("kind") == "ended_early") or \
                    (lo is not None and hi is not None and lo - tol <= e["step"] <= hi + tol) or \
                    any(abs(x - e["step"]) <= tol for x in anchors(f)) or \
                    span_covers(f, e.get("step"), e.get("end_step"), epochs):
                hit = i
                break
            if epochs and e.get("step") is not None and epoch_near(f, e["step"], e.get("end_step")):
                hit = i
                by_epoch += 1
                break
        out["events"].append((e["kind"], e.get("confidence"), hit is not None))
        if hit is None:
            out["lines"].append(f"{run['id']}: MISSED {e['kind']} {e.get('metric')} @{e['step']} ({e.get('confidence')})")
        else:
            matched.add(hit)
    labelled = [(e.get("step"), e.get("end_step")) for e in run.get("events", [])
                if e.get("kind") != "clean" and e.get("step") is not None]
    out["loud"] = out["false"] = out["echo"] = 0
    for i, f in enumerate(fs):
        if f.get("severity") not in LOUD:
            continue
        out["loud"] += 1
        if i in matched:
            continue
        tol = max(0.05 * span, 3)
        near = any(any(abs(x - s) <= tol for x in anchors(f)) or
                   (f.get("start_step") is not None and f.get("end_step") is not None
                    and f["start_step"] - tol <= s <= f["end_step"] + tol)
                   or (epochs and epoch_near(f, s, end)) or span_covers(f, s, end, epochs) for s, end in labelled)
        if near:
            out["echo"] += 1
        else:
            out["false"] += 1
            out["lines"].append(f"{run['id']}: LOUD-FALSE {f.get('kind')} {f.get('metric')} @{f.get('start_step')}: "
                                f"{(f.get('message') or '')[:140]}")
    out["by_epoch"] = by_epoch
    out["clean"] = not events and not any(e.get("kind") not in ("clean", "level_shift") for e in run.get("events", []))
    out["clean_quiet"] = out["clean"] and not any(f.get("severity") in LOUD for f in fs)
    return out


def summarise(name: str, results: list[dict]) -> dict:
    readable = [r for r in results if r["readable"]]
    per_kind: dict[str, list[int]] = {}
    high = [0, 0]
    for r in results:
        for kind, conf, found in r["events"]:
            k = per_kind.setdefault(kind, [0, 0])
            k[0] += found
            k[1] += 1
            if conf == "high":
                high[0] += found
                high[1] += 1
    clean = [r for r in results if r["clean"]]
    false = sum(r["false"] for r in results)
    tot = {
        "runs": len(results), "readable": len(readable),
        "read_with_main_loss": sum(r["read"] for r in readable),
        "main_loss_chosen": sum(r["main"] for r in readable),
        "events_found": sum(v[0] for v in per_kind.values()), "events": sum(v[1] for v in per_kind.values()),
        "high_found": high[0], "high": high[1],
        "loud": sum(r["loud"] for r in results), "loud_false": false, "loud_echo": sum(r["echo"] for r in results),
        "clean_runs": len(clean), "clean_quiet": sum(r["clean_quiet"] for r in clean),
        "loud_on_clean_per_10": round(10 * sum(r["loud"] for r in clean) / max(len(clean), 1), 2),
        "loud_false_per_10_runs": round(10 * false / max(len(results), 1), 2),
        "per_kind": per_kind, "found_by_epoch": sum(r.get("by_epoch", 0) for r in results),
    }
    pct = 100 * tot["read_with_main_loss"] / max(tot["readable"], 1)
    print(f"{name}: {tot['runs']} runs; read with main loss {tot['read_with_main_loss']}/{tot['readable']} "
          f"({pct:.1f}%), chosen as main {tot['main_loss_chosen']}; events found {tot['events_found']}/{tot['events']} "
          f"(high confidence {tot['high_found']}/{tot['high']}); loud {tot['loud']}: {tot['loud_false']} matching no "
          f"event ({tot['loud_false_per_10_runs']} per 10 runs), {tot['loud_echo']} echoes; clean runs quiet "
          f"{tot['clean_quiet']}/{tot['clean_runs']} ({tot['loud_on_clean_per_10']} loud per 10 clean runs); "
          f"{tot['found_by_epoch']} found by the epoch at a finding (labels counted in epochs)")
    for k, (f, n) in sorted(per_kind.items()):
        print(f"  {k:16s} found {f}/{n}")
    return tot


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev", choices=("dev", "holdout", "all"))
    ap.add_argument("--cmd", default="spikelens")
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reports", metavar="DIR", help="keep each run's report (and why it failed) as DIR/<run>.json")
    ap.add_argument("--from-reports", metavar="DIR", help="judge the reports kept in DIR instead of running spikelens "
                    "(to score the same reports with another version of this judge)")
    a = ap.parse_args()
    runs = [r for r in labelled_runs(a.split) if not a.only or r["id"] in a.only]
    # a run whose files the cache lacks (rebuild.py could not get them), or whose kept report is absent, is left out
    absent = [r for r in runs if not ((Path(a.from_reports) / f"{r['id']}.json").exists() if a.from_reports
                                      else all((CACHE / f).exists() for f in r["files"]))]
    if absent:
        print(f"{len(absent)} of {len(runs)} runs left out: "
              f"{'no kept report' if a.from_reports else f'files not in {CACHE} (run rebuild.py)'}", file=sys.stderr)
        runs = [r for r in runs if r not in absent]
    cmd = shlex.split(a.cmd)

    def one(run: dict) -> dict:
        if a.from_reports:
            kept = json.loads((Path(a.from_reports) / f"{run['id']}.json").read_text())
            return judge(run, kept["report"], kept["why"])
        report, why = run_spikelens(cmd, run)
        if a.reports:
            Path(a.reports).mkdir(parents=True, exist_ok=True)
            (Path(a.reports) / f"{run['id']}.json").write_text(json.dumps({"report": report, "why": why}))
        return judge(run, report, why)

    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(one, runs))
    if a.show:
        for r in results:
            for line in r["lines"]:
                print(line)
    by_split: dict[str, list[dict]] = {}
    for run, res in zip(runs, results):
        by_split.setdefault(run["split"], []).append(res)
    summary = {s: summarise(s, rs) for s, rs in sorted(by_split.items())}
    if a.out:
        Path(a.out).write_text(json.dumps({"summary": summary, "results": results}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
