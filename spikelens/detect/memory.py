"""Memory: a run whose memory grows step after step (a leak), or stands at its capacity,
and the out-of-memory crash that ends such a run (the cause of `ended_early`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import Detector, RunContext, Series
from .stats import rank_correlation
from ..model.finding import Cause, Finding

OOM = re.compile(r"out of memory|OutOfMemoryError|RESOURCE_EXHAUSTED|\bOOM\b|oom[-_ ]kill|^\s*Killed\s*$"
                 r"|Cannot allocate memory|MemoryError", re.I)
"""An error line that says the run ran out of memory (CUDA, PyTorch, XLA/JAX, the kernel's OOM killer)."""

_PERCENT = re.compile(r"pct|percent|%|util|_frac|fraction", re.I)


def is_percent(s: Series) -> bool:
    """A memory metric that is a share of the device (torchtitan's `memory: 29GiB(92.49%)`)."""
    _, v = s.finite()
    return bool(_PERCENT.search(s.metric)) and v.size > 0 and float(v.max()) <= 100.0 and float(v.min()) >= 0.0


@dataclass(frozen=True, kw_only=True)
class MemoryGrowthDetector(Detector):
    """Memory that keeps growing, or stands at the device's capacity.

    Detects: a memory metric rising steadily over most of the run (after its first tenth, a
    rank correlation of `min_trend` or more with the step, no single jump making most of the
    rise) by `min_growth` of its level or more (a leak); a memory share (`memory: 29GiB(99.1%)`)
    at `capacity_percent` or more over the last tenth of the run.
    Why it matters: a leak ends in an out-of-memory crash, hours into the run; a run at its
    capacity crashes at the first longer batch or fragmented allocation.
    Likely causes: tensors kept alive across steps (a loss summed without `.item()` or
    `.detach()`, a list of outputs kept for logging), a cache that grows (torch.compile
    recompiling for new shapes), fragmentation, a batch size or sequence length too large for the device.
    Evidence: the first and last level, the growth in percent, the trend's rank correlation,
    the last share of capacity.
    """

    code = "SL505"
    kind = "memory_growth"
    roles = ()

    min_growth: float = 0.2
    """Smallest rise from the level after warm-up to the last, as a share of the first."""
    min_trend: float = 0.9
    """Rank correlation with the step that makes a rise steady."""
    capacity_percent: float = 97.0
    min_points: int = 20

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        mem = [s for s in ctx.by_role("memory") if s.finite()[1].size >= self.min_points]
        grown = [(s, memory_trend(s)) for s in mem]
        grown = [(s, tr) for s, tr in grown if tr["growth"] >= self.min_growth and tr["trend"] >= self.min_trend
                 and tr["largest_jump_share"] < 0.5]
        full = [(s, memory_trend(s)) for s in mem if is_percent(s)]
        full = [(s, tr) for s, tr in full if tr["last"] >= self.capacity_percent]
        if not grown and not full:
            return []
        parts = []
        s, tr = max(grown, key=lambda x: x[1]["growth"]) if grown else full[0]
        if grown:
            parts.append(f"{s.label} grew {100 * tr['growth']:.0f}% step after step, from {tr['first']:.4g} at step "
                         f"{tr['first_step']} to {tr['last']:.4g} at step {tr['last_step']}: a leak ends in an "
                         f"out-of-memory crash")
        ev = {**tr, "leak": bool(grown), "at_capacity": bool(full)}
        if full:
            fs, ftr = full[0]
            parts.append(f"{fs.label} stands at {ftr['last']:.1f}% of the device at the end: at its capacity")
            ev["capacity_metric"], ev["capacity_percent"] = fs.metric, ftr["last"]
        return [Finding(kind=self.kind, code=self.code, run=ctx.run, metric=s.metric,
                        severity="warning" if grown else "info", message="; ".join(parts),
                        start_step=int(tr["first_step"]), end_step=int(tr["last_step"]),
                        magnitude=1 + tr["growth"], evidence=ev)]


def memory_trend(s: Series) -> dict[str, Any]:
    """The memory series after its first tenth: first and last level (medians of a twentieth),
    growth, rank correlation with the step, the largest single jump's share of the rise."""
    step, v = s.finite()
    skip = max(1, v.size // 10)
    step, v = step[skip:], v[skip:]
    k = max(1, v.size // 20)
    first, last = float(np.median(v[:k])), float(np.median(v[-k:]))
    rise = last - first
    jumps = np.diff(v)
    return {"first": first, "last": last, "first_step": int(step[0]), "last_step": int(step[-1]),
            "growth": rise / abs(first) if first else 0.0,
            "trend": rank_correlation(v) if v.size > 2 else 0.0,
            "largest_jump_share": float(jumps.max() / rise) if rise > 0 and jumps.size else 1.0}


def out_of_memory(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """An `ended_early` whose error line says out of memory, with the memory trend before it."""
    if f.kind != "ended_early":
        return None
    line = str(f.evidence.get("error_line") or "")
    if not OOM.search(line):
        return None
    numbers: dict[str, Any] = {"error_line": line}
    bare_kill = bool(re.match(r"^\s*Killed\s*$", line))  # the kernel's OOM killer, or another SIGKILL
    text = ("the process was killed (`Killed`: most often the kernel's OOM killer)" if bare_kill
            else "the run's last error says it ran out of memory")
    mem = sorted(ctx.by_role("memory"), key=lambda s: (is_percent(s), len(s)), reverse=True)
    mem = [s for s in mem if len(s) >= 3]
    if mem:
        s = mem[0]
        tr = memory_trend(s) if len(s) >= 10 else {"first": float(s.finite()[1][0]),
                                                        "last": float(s.finite()[1][-1])}
        numbers.update({"metric": s.metric, "first": tr["first"], "last": tr["last"]})
        unit = "%" if is_percent(s) else ""
        text += f"; {s.label} went from {tr['first']:.4g}{unit} to {tr['last']:.4g}{unit} before it"
    return Cause("out_of_memory", 0.7 if bare_kill else 0.95, text, numbers)
