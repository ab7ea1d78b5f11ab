"""Runs analysed together: spikes at the same step in several runs are one data event.

Runs that share a data order see the same batch at the same step; a loss spike at
that step in all of them is the batch, not any one run's optimizer. A one-point
outlier that a single run would call noise becomes a spike when other runs have it at
the very same step.
"""
from __future__ import annotations

from collections import defaultdict

from ..detect.finding import Cause, Finding
from ..report.model import Report, RunReport


def link_runs(report: Report, tolerance_steps: int = 2) -> None:
    """Add a `data` cause to spikes that occur at the same step in two or more runs,
    and promote one-point outliers shared by two or more runs to such spikes."""
    if len(report.runs) < 2:
        return
    _promote_shared_outliers(report)
    spikes = [(r.run, f) for r in report.runs for f in r.findings
              if f.kind == "spike" and f.peak_step is not None]
    if len({run for run, _ in spikes}) < 2:
        return
    for run, f in spikes:
        others = sorted({o_run for o_run, o in spikes
                         if o_run != run and abs(o.peak_step - f.peak_step) <= tolerance_steps})
        if not others:
            continue
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        cause = Cause("data", 0.92,
                      f"{len(others)} other run(s) analysed with it spiked at the same step {f.peak_step} "
                      f"({shown}): runs sharing a data order saw the same batch",
                      {"runs": others, "step": f.peak_step})
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
