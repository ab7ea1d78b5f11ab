"""Ranks of one training, kept apart: the rank that went bad, the rank that is slower.

Ranks that log apart (a folder or file per rank: `rank_3/`, `rank3.log`, `worker-3`) are
read as runs of their own, so nothing averages them away. `link_ranks` puts such runs
back side by side after the sweep: a loss or grad-norm event on some ranks only names
them and the ranks that stayed within noise; a rank whose throughput or step time is
consistently worse than the others' gets a `rank_outlier` finding. Within one run,
`RankDetector` does the same for sources that carry a rank (several per-rank files read
as one run).
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np

from .base import Detector, RunContext
from ..model.finding import Cause, Finding

RANK = re.compile(r"(?:^|[/\\_.\-\[])(?:rank|worker|gpu|proc|default)[_\-]?(\d{1,5})(?=$|[/\\_.\-\]])", re.I)
"""A rank in a run's name or a source path: `rank_3`, `rank3.log`, `worker-3`, `[default3]`."""

EVENT_KINDS = ("spike", "nan", "divergence", "grad_norm_outlier", "excursion", "oscillation")
CODE = "SL506"
KIND = "rank_outlier"
SLOWER = 0.15
"""A rank this much slower than the median of the others (throughput or step time) is named."""


def rank_of(text: str) -> int | None:
    """The rank a name or path carries (the last one), else None."""
    found = RANK.findall(str(text))
    return int(found[-1]) if found else None


@dataclass(frozen=True, kw_only=True)
class RankDetector(Detector):
    """One rank of a distributed run that behaves unlike the others.

    Detects: a loss or grad-norm event (spike, NaN, divergence) on some ranks only, when
    ranks log apart (a folder or file per rank), named with the ranks that stayed within
    noise; a rank whose throughput is `slower` or more below (or step time above) the median
    of the others over the whole run.
    Why it matters: the ranks of a data-parallel run hold the same weights; one that spikes
    alone saw a bad batch in its shard, one that goes NaN or drifts alone computes wrongly
    (a failing GPU), and one slow rank holds every other rank back at each collective.
    Likely causes: a bad shard of the data read by that rank (`data`); a failing or
    throttled GPU, bad memory, a slow network link on that node (`hardware`).
    Evidence: the rank, the other ranks, the step, the ratio to the other ranks.
    """

    code = CODE
    kind = KIND
    roles = ()

    slower: float = SLOWER

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        """Ranks read as sources of one run: a rank slower than the others (events on
        ranks within a run are judged by `link_ranks` once runs are side by side)."""
        f = ctx.frame
        if f is None or "source" not in f.columns:
            return []
        import polars as pl

        # (through `select`: a constant `source` is not written out a row at a time, see frame.validate)
        sources = [str(s) for s in f.select(pl.col("source").unique()).to_series().to_list()]
        ranks = {s: rank_of(s) for s in sources}
        if len({r for r in ranks.values() if r is not None}) < 2:
            return []
        out = []
        for role, down in (("throughput", True), ("step_time", False)):
            main = ctx.main(role)
            if main is None:
                continue
            med = (f.filter(pl.col("metric") == main.metric).group_by("source")
                   .agg(pl.col("value").cast(pl.Float64).median()).rows())  # a Float32 column: in float64
            by_rank = {ranks[str(s)]: float(v) for s, v in med if ranks.get(str(s)) is not None and v is not None}
            hit = _slowest(by_rank, down, self.slower)
            if hit:
                out.append(_slow_finding(ctx.run, main.metric, role, hit))
        return out


def _slowest(by_rank: dict[int, float], down: bool, slower: float) -> dict[str, Any] | None:
    """The rank whose median rate is worst by `slower` or more against the others' median."""
    if len(by_rank) < 3:
        return None
    worst = (min if down else max)(by_rank, key=by_rank.get)
    others = float(np.median([v for r, v in by_rank.items() if r != worst]))
    if not others:
        return None
    gap = (others - by_rank[worst]) / abs(others) if down else (by_rank[worst] - others) / abs(others)
    if gap < slower:
        return None
    return {"rank": worst, "value": by_rank[worst], "others": others, "gap": gap, "n_ranks": len(by_rank)}


def _slow_finding(run: str, metric: str, role: str, hit: dict[str, Any]) -> Finding:
    what = "throughput" if role == "throughput" else "step time"
    msg = (f"rank {hit['rank']} is consistently {100 * hit['gap']:.0f}% slower than the other "
           f"{hit['n_ranks'] - 1} ranks ({metric} median {hit['value']:.4g} against {hit['others']:.4g}): "
           f"it holds every rank back at each collective")
    return Finding(kind=KIND, code=CODE, run=run, metric=metric, severity="warning", message=msg,
                   evidence={"rank": hit["rank"], "rank_median": hit["value"], "others_median": hit["others"],
                             "slower_percent": round(100 * hit["gap"], 2), "n_ranks": hit["n_ranks"], "of": what},
                   causes=[Cause("hardware", 0.6, f"only rank {hit['rank']} is slower: its GPU, node or link",
                                 {"rank": hit["rank"]})])


def slow_rank(ctx: RunContext, role: str, down: bool) -> dict[str, Any] | None:
    """For the throughput findings: a rank consistently slower, as text and number."""
    hits = [f for f in RankDetector().detect_run(ctx) if f.evidence.get("of") == (
        "throughput" if role == "throughput" else "step time")]
    if not hits:
        return None
    ev = hits[0].evidence
    return {"rank": ev["rank"], "text": f"rank {ev['rank']} is {ev['slower_percent']:.0f}% slower than the others"}


# ------------------------------------------------------------------ runs side by side

def link_ranks(report: Any, tolerance_steps: int = 2) -> None:
    """Runs that are ranks of one training (same folder, a rank in their name): name the
    ranks of an event seen on some only, and a rank consistently slower than the others."""
    for group in _rank_groups(report.runs).values():
        if len(group) < 2:
            continue
        n = len(group)
        events = [(r, rep, f) for r, rep in group.items() for f in rep.findings
                  if f.kind in EVENT_KINDS and (f.peak_step if f.peak_step is not None else f.start_step) is not None]
        for r, rep, f in events:
            at = f.peak_step if f.peak_step is not None else f.start_step
            on = sorted({r2 for r2, _, g in events if g.kind == f.kind and _near(g, at, tolerance_steps)
                         and _same_role(rep, f, g, group[r2])})
            if len(on) > n // 2:
                continue  # most ranks: the model's event, not a rank's
            calm = sorted(set(group) - set(on))
            _name_ranks(f, on, calm, at)
        _slow_ranks(group)


def _rank_groups(runs: list) -> dict[str, dict[int, Any]]:
    groups: dict[str, dict[int, Any]] = defaultdict(dict)
    for rep in runs:
        src = rep.sources[0] if rep.sources else rep.run
        r = rank_of(str(PurePath(src).parent.name)) if rank_of(rep.run) is None else rank_of(rep.run)
        if r is None:
            r = rank_of(str(src))
        if r is None:
            continue
        parent = str(PurePath(src).parent)
        if rank_of(PurePath(src).parent.name) is not None:
            parent = str(PurePath(src).parent.parent)
        groups[parent].setdefault(r, rep)
    return groups


rank_groups = _rank_groups
"""The ranks of one training among runs analysed together: {parent folder: {rank: run}}."""


def _near(g: Finding, at: int, tol: int) -> bool:
    s = g.peak_step if g.peak_step is not None else g.start_step
    return s is not None and abs(int(s) - int(at)) <= tol


def _same_role(rep: Any, f: Finding, g: Finding, rep2: Any) -> bool:
    return rep.metrics.get(f.metric or "") == rep2.metrics.get(g.metric or "")


def _name_ranks(f: Finding, on: list[int], calm: list[int], at: int) -> None:
    who = f"rank {on[0]} alone" if len(on) == 1 else "ranks " + ", ".join(str(r) for r in on)
    verb = {"spike": "spiked", "nan": "went NaN", "divergence": "diverged"}.get(f.kind, f"had a {f.kind}")
    size = f" {f.magnitude:.1f}x" if f.kind == "spike" and f.magnitude else ""
    f.message = (f"{who} {verb}{size} at step {at}; the other {len(calm)} ranks stayed within noise. "
                 + f.message)
    f.evidence["ranks"] = {"on": on, "calm": calm}
    lasting = f.kind in ("nan", "divergence") or f.recovery == "none"
    if lasting:
        c = Cause("hardware", 0.7, f"{who} {verb} while the other ranks, holding the same weights, did not: "
                  "that rank computes wrongly (a failing GPU, bad memory)", {"ranks": on})
    else:
        c = Cause("data", 0.75, f"{who} {verb} at step {at} and came back; the other ranks did not: a bad "
                  "batch in that rank's shard of the data", {"ranks": on})
    f.causes = [c] + [x for x in f.causes if x.cause != c.cause]


def _slow_ranks(group: dict[int, Any]) -> None:
    for role, down in (("throughput", True), ("step_time", False)):
        med: dict[int, float] = {}
        metric = None
        for r, rep in group.items():
            m = rep.stats.get("rates", {}).get(role) if isinstance(rep.stats, dict) else None
            if m:
                metric, med[r] = m["metric"], float(m["median"])
        hit = _slowest(med, down, SLOWER) if metric else None
        if hit:
            rep = group[hit["rank"]]
            rep.findings.append(_slow_finding(rep.run, metric, role, hit))
