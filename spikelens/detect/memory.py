"""Memory: a run whose memory grows step after step (a leak), or stands at its capacity,
and the out-of-memory crash that ends such a run (the cause of `ended_early`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import Detector, RunContext, Series
from .stats import rank_correlation
from ..frame import is_free_memory
from ..model.finding import Cause, Finding

OOM = re.compile(r"out of memory|OutOfMemoryError|RESOURCE_EXHAUSTED|\bOOM\b|oom[-_ ]kill|^\s*Killed\s*$"
                 r"|Cannot allocate memory|MemoryError", re.I)
"""An error line that says the run ran out of memory (CUDA, PyTorch, XLA/JAX, the kernel's OOM killer)."""

_PERCENT = re.compile(r"pct|percent|%|util|_frac|fraction|(?:^|[/._])memoryAllocated$", re.I)
"""A share of the device (`memory_pct`, `mem_util`; W&B's system `gpu.0.memoryAllocated` is one)."""
_NOT_SHARE = re.compile(r"utilization\.memory|memory[_ ]?utilization|mem(?:ory)?_?bandwidth", re.I)
"""nvidia-smi's `utilization.memory`: the share of time memory was read or written, not of its size."""
_TOTAL = re.compile(r"total|capacity|limit|(?:^|[/._])max_?(?:gpu_?)?mem(?:ory)?_?(?:avail|size)", re.I)
"""A memory metric that is the device's size (`mem_total`, `total_memory`, `gpu_capacity_gb`)."""
_FREE = re.compile(r"free|avail", re.I)


def is_percent(s: Series) -> bool:
    """A memory metric that is a share of the device (torchtitan's `memory: 29GiB(92.49%)`)."""
    _, v = s.finite()
    return (bool(_PERCENT.search(s.metric)) and not _NOT_SHARE.search(s.metric) and v.size > 0
            and float(v.max()) <= 100.0 and float(v.min()) >= 0.0)


@dataclass
class Share:
    """A memory metric as a share (%) of the device's capacity, as the log says it."""

    label: str
    metric: str
    step: np.ndarray
    percent: np.ndarray
    of: str
    """How the capacity is known: "logged share", "of <total metric>", "of <used> + <free>"."""


def capacity_shares(ctx: RunContext) -> list[Share]:
    """Every memory metric whose share of the capacity the log gives: a share logged as such
    (`memory_pct`), a used metric beside a logged total (`mem_used`/`mem_total`,
    `max_memory_allocated` beside `total_memory`) or beside the free memory (used + free).
    Never a guessed capacity: a run that logs no total has no share."""
    mem = [s for s in ctx.by_role("memory") if s.finite()[1].size]
    out = [Share(s.label, s.metric, s.finite()[0], _as_percent(s), "logged share") for s in mem if is_percent(s)]
    totals = [s for s in mem if _TOTAL.search(s.metric) and not is_percent(s) and _steady(s)]
    frees = [s for s in [*mem, *(s for s in ctx.series.values() if is_free_memory(s.metric))]
             if _FREE.search(s.metric) and not is_percent(s) and s not in totals and s.finite()[1].size]
    used = [s for s in mem if s not in totals and s not in frees and not is_percent(s)
            and not _NOT_SHARE.search(s.metric) and float(np.min(s.finite()[1])) >= 0]
    for u in used:
        step, v = u.finite()
        t = max(totals, key=lambda x: _common_prefix(x.metric, u.metric), default=None)
        if t is not None:
            cap = float(np.median(t.finite()[1]))
            if cap > 0 and float(np.max(v)) <= 1.05 * cap:  # same unit: never above the total
                out.append(Share(u.label, u.metric, step, 100 * v / cap, f"of {t.metric} ({cap:.4g})"))
                continue
        f = max(frees, key=lambda x: _common_prefix(x.metric, u.metric), default=None)
        if f is not None:
            fs, fv = f.finite()
            both, iu, jf = np.intersect1d(step, fs, return_indices=True)
            cap = v[iu] + fv[jf]
            if both.size and np.all(cap > 0):
                out.append(Share(u.label, u.metric, both, 100 * v[iu] / cap, f"of {u.metric} + {f.metric}"))
    return out


def _as_percent(s: Series) -> np.ndarray:
    """A logged share in percent: a fraction (`mem_frac` 0.98) times 100."""
    v = s.finite()[1]
    return 100 * v if re.search(r"frac", s.metric, re.I) and float(v.max()) <= 1.0 else v


def _steady(s: Series) -> bool:
    """A size: the same value (within 2%) at every point."""
    v = s.finite()[1]
    return bool(v.size and float(v.min()) > 0 and float(v.max()) <= 1.02 * float(v.min()))


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.lower(), b.lower()):
        if x != y:
            break
        n += 1
    return n


def near_capacity(sh: Share, capacity: float, *, warmup: float = 0.1, share: float = 0.1,
                  min_points: int = 5) -> dict[str, Any] | None:
    """The longest stretch (after the first `warmup` of the points) where the share stands at
    `capacity` % or more (a median of 5 points, so one dip does not cut it), when it holds
    `share` of the points or more (half that when it lasts to the end) and `min_points` or more;
    None otherwise."""
    n = sh.percent.size
    skip = max(1, int(warmup * n))
    step, pct = sh.step[skip:], sh.percent[skip:]
    if pct.size < min_points:
        return None
    k = min(5, pct.size)
    smooth = np.median(np.lib.stride_tricks.sliding_window_view(np.pad(pct, (k // 2, k - 1 - k // 2), mode="edge"), k),
                       axis=1)
    hot = np.concatenate([[0], (smooth >= capacity).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(hot))
    if edges.size == 0:
        return None
    starts, ends = edges[::2], edges[1::2]
    i = int(np.argmax(ends - starts))
    a, b = int(starts[i]), int(ends[i])
    at_end = b == pct.size
    if b - a < max(min_points, (share / 2 if at_end else share) * pct.size):
        return None  # the run's last stretch (before a crash, most often) needs half as many points
    return {"from_step": int(step[a]), "to_step": int(step[b - 1]), "points": b - a,
            "median_percent": float(np.median(pct[a:b])), "at_end": at_end}


@dataclass(frozen=True, kw_only=True)
class MemoryGrowthDetector(Detector):
    """Memory that keeps growing, or stands at the device's capacity.

    Detects: a memory metric rising steadily over most of the run (after its first tenth, a
    rank correlation of `min_trend` or more with the step, no single jump making most of the
    rise) by `min_growth` of its level or more (a leak); memory standing at `capacity_percent`
    or more of the device for a sustained stretch (a tenth of the run or more), where the log
    gives the capacity: a share (`memory: 29GiB(99.1%)`), a total beside the used memory
    (`mem_used`/`mem_total`, `max_memory_allocated` beside `total_memory`) or the free memory.
    Why it matters: a leak ends in an out-of-memory crash, hours into the run; a run at its
    capacity crashes at the first longer batch or fragmented allocation.
    Likely causes: tensors kept alive across steps (a loss summed without `.item()` or
    `.detach()`, a list of outputs kept for logging), a cache that grows (torch.compile
    recompiling for new shapes), fragmentation, a batch size or sequence length too large for the device.
    Evidence: the first and last level, the growth in percent, the trend's rank correlation,
    the share of capacity, the steps it stood there and how the capacity is known.
    """

    code = "SL505"
    kind = "memory_growth"
    roles = ()

    min_growth: float = 0.2
    """Smallest rise from the level after warm-up to the last, as a share of the first."""
    min_trend: float = 0.9
    """Rank correlation with the step that makes a rise steady."""
    capacity_percent: float = 97.0
    """A share of the device's memory at or above which the run stands at its capacity."""
    min_points: int = 20

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        mem = [s for s in ctx.by_role("memory") if s.finite()[1].size >= self.min_points]
        grown = [(s, memory_trend(s)) for s in mem]
        grown = [(s, tr) for s, tr in grown if tr["growth"] >= self.min_growth and tr["trend"] >= self.min_trend
                 and tr["largest_jump_share"] < 0.5]
        full = [(sh, near_capacity(sh, self.capacity_percent)) for sh in capacity_shares(ctx)
                if sh.percent.size >= self.min_points]
        full = sorted([(sh, st) for sh, st in full if st is not None], key=lambda x: -x[1]["median_percent"])
        if not grown and not full:
            return []
        parts = []
        if grown:
            s, tr = max(grown, key=lambda x: x[1]["growth"])
            parts.append(f"{s.label} grew {100 * tr['growth']:.0f}% step after step, from {tr['first']:.4g} at step "
                         f"{tr['first_step']} to {tr['last']:.4g} at step {tr['last_step']}: a leak ends in an "
                         f"out-of-memory crash")
            metric, first_step, last_step = s.metric, int(tr["first_step"]), int(tr["last_step"])
            ev: dict[str, Any] = {**tr}
        else:
            sh, st = full[0]
            metric, first_step, last_step = sh.metric, st["from_step"], st["to_step"]
            ev = {"growth": 0.0}
        ev.update({"leak": bool(grown), "at_capacity": bool(full)})
        if full:
            sh, st = full[0]
            how = "" if sh.of == "logged share" else f" ({sh.of})"
            until = "to the end" if st["at_end"] else f"to step {st['to_step']}"
            parts.append(f"{sh.label} stands at {st['median_percent']:.1f}% of the device's memory{how} from step "
                         f"{st['from_step']} {until}: at its capacity, the first longer batch or fragmented "
                         f"allocation runs out of memory")
            ev.update({"capacity_metric": sh.metric, "capacity_percent": round(st["median_percent"], 2),
                       "capacity_from": sh.of, "capacity_steps": [st["from_step"], st["to_step"]]})
        return [Finding(kind=self.kind, code=self.code, run=ctx.run, metric=metric, severity="warning",
                        message="; ".join(parts), start_step=first_step, end_step=last_step,
                        magnitude=1 + float(ev.get("growth", 0.0)), evidence=ev)]


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


OOM_GROWTH = 1.5
"""How many times its first logged value a memory metric must end at, before an out-of-memory
crash, for its rise to be told in a run too short for the leak test."""


def grew_before_oom(run: str, frame, roles: dict[str, str], ended: Finding | None,
                    min_points: int = MemoryGrowthDetector.min_points) -> Finding | None:
    """SL505 for a run that crashed out of memory (the `ended_early` error says so) after a memory
    metric rose to `OOM_GROWTH` times its first value or more, when it logged too few points for
    the leak test (a ZeRO-3 run at 25 GB after its first step, 50 GB after its second, then out of
    memory). A warning: the crash is the error; this is what led to it, in numbers."""
    import polars as pl

    if ended is None or ended.severity != "error" or not OOM.search(str(ended.evidence.get("error_line") or "")):
        return None
    best = None
    for metric in (m for m, r in roles.items() if r == "memory" and not _TOTAL.search(m) and not _FREE.search(m)):
        pts = (frame.filter((pl.col("metric") == metric) & ~pl.col("superseded") & pl.col("value").is_finite())
               .sort("step", "seq"))
        if not 2 <= pts.height < min_points:
            continue
        v, st = pts.get_column("value").to_numpy().astype(np.float64, copy=False), pts.get_column("step").to_numpy()
        if v[0] > 0 and v[-1] >= OOM_GROWTH * v[0] and v[-1] >= v.max() * 0.999 and (best is None or v[-1] / v[0] > best[0]):
            best = (float(v[-1] / v[0]), metric, int(st[0]), int(st[-1]), float(v[0]), float(v[-1]))
    if best is None:
        return None
    ratio, metric, a, b, first, last = best
    msg = (f"{metric} grew {ratio:.2g}x, from {first:.4g} at step {a} to {last:.4g} at step {b}, and the run then "
           f"ran out of memory")
    return Finding(kind="memory_growth", code="SL505", run=run, metric=metric, severity="warning", message=msg,
                   start_step=a, end_step=b, magnitude=ratio,
                   evidence={"first": first, "last": last, "growth": ratio - 1, "first_step": a, "last_step": b,
                             "before_oom": True, "leak": False, "at_capacity": False,
                             "error_line": str(ended.evidence.get("error_line"))})

