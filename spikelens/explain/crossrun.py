"""Runs analysed together: spikes or level shifts at the same step in several runs are
one data event.

Runs that share a data order see the same batch at the same step; a loss spike at
that step in all of them is the batch, not any one run's optimizer. A one-point
outlier that a single run would call noise becomes a spike when other runs have it at
the very same step. Likewise a level shift at the same step in several runs is a
boundary in the shared data (a new shard), and a run whose own shift there was too
small to report from a scan of every step is asked about that one step.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence

from ..model.finding import EVENT_KINDS, Cause, Finding
from ..detect.levels import LevelShiftDetector, shift_sentence
from ..detect.ranks import link_ranks
from ..model.report import Report, RunReport


def link_runs(report: Report, tolerance_steps: int = 2, *, ranks: bool = True,
              settled: Callable[[Finding], None] | None = None) -> None:
    """Add a `data` cause to spikes that occur at the same step in two or more runs,
    and promote one-point outliers shared by two or more runs to such spikes. The runs
    may be full reports or a sweep's summaries (pipeline.runsummary: its stubs are read
    as findings); `ranks=False` when the ranks were linked already (a spooled sweep links
    them on full reports, a group at a time). `settled(f)` is told of each finding whose
    data cause is final (a spooled sweep moves it to disk at once: a fleet linked at one
    step would otherwise hold a cause a run)."""
    if ranks:
        link_ranks(report)  # ranks of one training logged apart: the rank that went bad is named
    if len(report.runs) < 2:
        return
    _link_level_shifts(report, settled)
    _promote_shared_outliers(report)
    spikes = [(r.run, f) for r in report.runs for f in r.findings
              if f.kind == "spike" and f.peak_step is not None]
    if len({run for run, _ in spikes}) < 2:
        return
    runs_at: dict[int, set[str]] = defaultdict(set)  # a step's runs: a lookup per spike, not a scan of all
    for run, f in spikes:
        for step in _spike_steps(f):
            runs_at[step].add(run)
    around: dict[int, list[str]] = {}  # the runs within tolerance of a step, sorted once per step
    for run, f in spikes:
        shared = []
        for step in _spike_steps(f):
            if step not in around:
                near = range(step - tolerance_steps, step + tolerance_steps + 1)
                around[step] = sorted(set().union(*(runs_at.get(s, ()) for s in near)))
            if len(around[step]) >= 2:  # the run itself is among them
                shared.append(step)
        if not shared:
            continue
        # one step: its runs, sorted once for every run there (a fleet sharing a step is not copied per run)
        names = around[shared[0]] if len(shared) == 1 else sorted(set().union(*(around[s] for s in shared)))
        put_spike_cause(f, names, run, shared)
        if settled is not None:
            settled(f)


def put_spike_cause(f: Finding, names: Sequence[str], run: str, shared: list[int]) -> None:
    """The `data` cause of a spike at `shared` steps that other runs spiked at too (`names`:
    every run there, sorted, `run` among them; only its first `RUNS_NAMED + 1` are read, so a
    sweep's parent may pass those and the count, `pipeline.crosslinks`)."""
    at = ", ".join(str(s) for s in shared[:6]) + (f" and {len(shared) - 6} more" if len(shared) > 6 else "")
    word = "step" if len(shared) == 1 else "steps"
    _put_data_cause(f, names, run, shared[0], 0.92, lambda n, shown: (
        f"{n} other run(s) analysed with it spiked at the same {word} {at} "
        f"({shown}): runs sharing a data order saw the same batch"))
    f.causes[0].numbers["steps"] = shared


def _spike_steps(f: Finding) -> list[int]:
    """The steps a spike finding stands for: its peak, and each step of a finding that lists
    several one-step jumps (bad batches)."""
    steps = [int(s) for s in f.evidence.get("steps") or ()] if f.evidence.get("bad_batch") else []
    return steps or [int(f.peak_step)]


RUNS_NAMED = 20
"""Other runs a linked finding names in its evidence (with their count): in a fleet a bad
shard links thousands of runs, and every run naming every other is quadratic in size.
The findings dataset answers "which runs" for any number of them."""


def _put_data_cause(f: Finding, names: Sequence[str], own: str, step: int, confidence: float,
                    sentence: Callable[[int, str], str]) -> None:
    """Put a `data` cause first on `f`: `names` are every run linked, sorted (`own` among
    them); the sentence gets the number of the others and the first five of them."""
    named = [n for n in names[: RUNS_NAMED + 1] if n != own][:RUNS_NAMED]
    n_others = len(names) - 1
    shown = ", ".join(named[:5]) + (f" and {n_others - 5} more" if n_others > 5 else "")
    cause = Cause("data", confidence, sentence(n_others, shown), {"runs": named, "n_runs": n_others, "step": step})
    f.causes = [cause] + [c for c in f.causes if c.cause != "data"]


def _promote_shared_outliers(report: Report) -> None:
    """An outlier step (exact) among the largest few of a run, shared by two or more runs
    and by at least half the runs analysed together (chance coincidences in a sweep of
    noisy runs stay outliers)."""
    runs_at: dict[int, set[str]] = defaultdict(set)
    for r in report.runs:
        for f in r.findings:
            if f.kind == "spike" and f.peak_step is not None:
                runs_at[int(f.peak_step)].add(r.run)
            elif f.kind == "outliers":
                for item in f.evidence.get("largest", []):
                    runs_at[int(item["step"])].add(r.run)
    quorum = max(2, (len(report.runs) + 1) // 2)
    shared = {s for s, runs in runs_at.items() if len(runs) >= quorum}
    if not shared:
        return
    for r in report.runs:
        for f in [f for f in r.findings if f.kind == "outliers"]:
            ratios = {int(i["step"]): i.get("ratio") for i in f.evidence.get("largest", [])}
            for s in sorted(set(ratios) & shared):
                if any(o.kind == "spike" and o.peak_step == s for o in r.findings):
                    continue
                r.findings.append(_shared_spike(r, f, s, ratios.get(s), len(runs_at[s])))
        r.findings.sort(key=lambda f: (f.anchor_step if f.anchor_step is not None else -1, f.kind))


def _shared_spike(run: RunReport, outliers: Finding, step: int, ratio: float | None, n_runs: int) -> Finding:
    size = f" {ratio:.2f}x" if ratio else ""
    return Finding(
        kind="spike", code=outliers.code, run=run.run, metric=outliers.metric, severity="info",
        message=(f"{outliers.metric} spiked{size} for one point at step {step}, the same step as in "
                 f"{n_runs - 1} other run(s) analysed with it, and was back at the next"),
        start_step=step, peak_step=step, end_step=step, recovery="fast", magnitude=ratio,
        evidence={"one_point": True, "shared_by_runs": n_runs, "ratio": ratio})


def _link_level_shifts(report: Report, settled: Callable[[Finding], None] | None = None) -> None:
    """Level shifts in the same direction within a quarter window of each other in two
    runs (three when more than six runs are analysed together: chance meetings) are one
    data boundary: each gets a `data` cause, and every other run logging the same loss is
    asked whether it shifted there too (its own shift profile: one named step, the run's
    own noise as the bar)."""
    shifts = sorted(((f.start_step, r, f) for r in report.runs for f in r.findings
                     if f.kind == "level_shift" and f.start_step is not None and f.magnitude),
                    key=lambda x: x[0])
    quorum = 2 if len(report.runs) <= 6 else 3
    for up in (True, False):
        for cluster in _clusters([x for x in shifts if (x[2].magnitude > 1) == up]):
            if len({r.run for _, r, _ in cluster}) < quorum:
                continue
            at = int(sorted(s for s, _, _ in cluster)[len(cluster) // 2])
            members = [(r, f) for _, r, f in cluster]
            shifted = {r.run for r, _ in members}
            metrics = {f.metric for _, f in members}
            for r in report.runs:
                if r.run not in shifted and (f := _confirmed_shift(r, at, up, len(shifted), metrics)) is not None:
                    members.append((r, f))
            names = sorted({r.run for r, _ in members})
            for r, f in members:
                put_shift_cause(f, names, r.run, at, up)
                if f not in r.findings:
                    r.findings.append(f)
                    r.findings.sort(key=lambda g: (g.anchor_step if g.anchor_step is not None else -1, g.kind))
                if settled is not None:
                    settled(f)


def put_shift_cause(f: Finding, names: Sequence[str], run: str, at: int, up: bool) -> None:
    """The `data` cause of a level shift at step `at` that other runs shifted at too (`names`
    as for `put_spike_cause`)."""
    _put_data_cause(f, names, run, at, 0.85, lambda n, shown: (
        f"{n} other run(s) analysed with it shifted {'up' if up else 'down'} at the same "
        f"step (~{at}: {shown}): a boundary in a data order they share, e.g. a new shard"))


def _clusters(shifts: list) -> list[list]:
    """Consecutive (step, run, finding) within a quarter of the findings' window of each other."""
    out: list[list] = []
    for item in shifts:
        span = max(1.0, float(item[2].evidence.get("window_steps") or 0) / 4)
        if out and item[0] - out[-1][-1][0] <= span:
            out[-1].append(item)
        else:
            out.append([item])
    return out


def _confirmed_shift(run: RunReport, at: int, up: bool, n_shifted: int, metrics: set) -> Finding | None:
    """This run's own shift at step `at`, as a finding, when its profile of one of
    `metrics` shows one and no other event of the run covers that step."""
    prof = run.shift_profile
    if prof is None or prof.metric not in metrics or _covered(run, prof.metric, at):
        return None
    hit = prof.shift_at(at, up)
    if hit is None:
        return None
    pct = hit["shift_percent"]
    return Finding(
        kind=LevelShiftDetector.kind, code=LevelShiftDetector.code, run=run.run, metric=prof.metric, severity="info",
        message=(shift_sentence(prof.metric, up, pct, hit["step"], hit["before"], hit["after"])
                 + f", where {n_shifted} other run(s) analysed with it shifted too; too small to stand out on its own"),
        start_step=hit["step"], peak_step=hit["step"], magnitude=1 + pct / 100,
        evidence={**hit, "confirmed_by_runs": n_shifted})


def _covered(run: RunReport, metric: str, at: int) -> bool:
    """Is step `at` inside another event of this metric (a spike seen through a wide
    window is not a level shift)?"""
    return any(f.kind in EVENT_KINDS and f.metric == metric and (span := f.span()) is not None
               and span[0] <= at <= span[1] for f in run.findings)
