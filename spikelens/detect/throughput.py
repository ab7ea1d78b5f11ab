"""How fast the run went: a throughput that fell for good, a step time that rose for good,
and a stall (no step for far longer than the run's usual step time).

Judged on medians of many points, never on one: a checkpoint save or an evaluation slows
one step, which moves no median; the first steps (compilation, warm-up, caches filling)
are left out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from .stats import rank_correlation
from ..model.finding import Cause, Finding
from .trained import logged_training


@dataclass
class Shift:
    """A sustained change of a rate: where it starts and the levels either side."""

    index: int
    before: float
    after: float
    rest: float
    """Median from the change to the end of the run (the change lasted when this is near `after`)."""

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else float("nan")


def sustained_shift(value: np.ndarray, *, down: bool, min_change: float, warmup: float = 0.1,
                    min_points: int = 30, noise_k: float = 4.0) -> Shift | None:
    """The largest change of level by `min_change` or more (a fall when `down`), judged on
    medians of windows of W points either side (W a tenth of the run, at least 5), beyond
    `noise_k` times the run's own point-to-point spread, after the first `warmup` of the
    points; None when there is none."""
    v = value[np.isfinite(value)]
    n = v.size
    if n < min_points:
        return None
    skip = max(5, int(warmup * n))
    v = v[skip:]
    w = max(5, v.size // 10)
    if v.size < 2 * w:
        return None
    # medians of the W points before / after each candidate cut (one vectorised pass)
    win = np.lib.stride_tricks.sliding_window_view(v, w)
    med = np.median(win, axis=1)          # med[i] = median(v[i:i+w])
    cuts = np.arange(w, v.size - w + 1)
    before, after = med[cuts - w], med[cuts]
    with np.errstate(divide="ignore", invalid="ignore"):
        change = (before - after) / np.abs(before) if down else (after - before) / np.abs(before)
    change = np.where(np.isfinite(change), change, 0.0)
    i = int(np.argmax(change))
    if change[i] < min_change:
        return None
    cut = int(cuts[i])
    spread = float(np.median(np.abs(np.diff(v[:cut])))) if cut > 2 else 0.0
    if abs(after[i] - before[i]) < noise_k * spread:
        return None
    # the cut at the first point of the new level: the best two-level fit near it
    lo, hi = max(1, cut - w), min(v.size - 1, cut + w)
    cands = np.arange(lo, hi + 1)
    pre = np.concatenate([[0.0], np.cumsum(np.abs(v - before[i]))])
    post = np.concatenate([[0.0], np.cumsum(np.abs(v - after[i]))])
    cost = (pre[cands] - pre[lo - 1 if lo > 0 else 0]) + (post[hi + 1] - post[cands])
    cut = int(cands[np.argmin(cost)])
    return Shift(index=skip + cut, before=float(before[i]), after=float(after[i]),
                 rest=float(np.median(v[cut:])))


@dataclass(frozen=True, kw_only=True)
class ThroughputDropDetector(Detector):
    """Throughput that fell and stayed down.

    Detects: the run's throughput (tokens/s, samples/s, tps, MFU, TFLOPs) falling by
    `min_drop` or more, judged on medians of a tenth of the run either side of the change,
    after the first tenth (warm-up, compilation); a single slow step (a checkpoint save, an
    evaluation) moves no median and is never a finding; a note when a logged setting that sizes
    a step's work (batch size, sequence length) moved at the same step (a new regime).
    Why it matters: a run that slows by 40% costs 40% more GPU hours for every step left, and
    a slowdown often comes before a loss event (a stalled data loader, a throttled or failing node).
    Likely causes: a slow or failing node or GPU (thermal throttling, ECC errors), a data
    loader that fell behind (remote storage, a larger shard), a network link degrading, memory
    pressure (allocator retries), another job sharing the machine.
    Evidence: the step of the change, the median before and after, the change in percent,
    the other throughput metrics that fell with it, the median to the end of the run.
    """

    code = "SL502"
    kind = "throughput_drop"
    roles = ()

    min_drop: float = 0.25
    """Smallest sustained fall, as a share of the level before."""
    min_points: int = 50
    """Fewest logged points of a throughput metric to judge it (fewer cannot tell a lasting
    change from a restarted progress bar's running average)."""

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        return _rate_finding(self, ctx, "throughput", down=True, min_change=self.min_drop,
                             min_points=self.min_points)


@dataclass(frozen=True, kw_only=True)
class StepTimeRiseDetector(Detector):
    """Step time that rose and stayed up.

    Detects: the time a step takes (`dt`, `elapsed time per iteration`, `step_time`) rising by
    `min_rise` or more, judged as the throughput drop is (medians, warm-up left out, single
    slow steps ignored); not told when the run also logs a throughput that did not fall (the
    step got longer because it does more: a batch-size or sequence-length ramp), and a note
    when a logged setting that sizes the step's work moved at the same step.
    Why it matters: the same as a throughput drop: every later step costs more, and a
    slowdown often announces a failing node or a starved data loader.
    Likely causes: a slow or failing node, a data loader that fell behind, a network link
    degrading, memory pressure, another job on the machine.
    Evidence: the step of the change, the median step time before and after, the rise in percent,
    the setting that changed with it (`work_changed`).
    """

    code = "SL503"
    kind = "step_time_rise"
    roles = ()

    min_rise: float = 0.33
    """Smallest sustained rise, as a share of the level before (1/0.75: a 25% slower run)."""
    min_points: int = 50

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        out = _rate_finding(self, ctx, "step_time", down=False, min_change=self.min_rise, min_points=self.min_points)
        for f in out:  # a logged step time climbs in stages too (a Keras bar's running average)
            _rose_in_stages(f, next(s for s in ctx.by_role("step_time") if s.metric == f.metric), self.min_rise)
        out = (out or _drift_finding(self, ctx, "step_time", self.min_points)
               or _final_rise(self, ctx, self.min_rise, self.min_points))
        if not out and not ctx.by_role("step_time"):
            clocks = clock_durations(ctx, self.min_points)
            if clocks is not None:
                out = (_rate_finding(self, clocks, "step_time", down=False, min_change=self.min_rise,
                                     min_points=self.min_points)
                       or _final_rise(self, clocks, self.min_rise, self.min_points))
                for f in out:
                    _rose_in_stages(f, clocks.series[f.metric], self.min_rise)
        if out and _throughput_held(ctx, out[0].start_step, self.min_points):
            return []
        return out


CLOCK_SCALE = "per-step difference"


def clock_durations(ctx: RunContext, min_points: int) -> RunContext | None:
    """The run seen with each clock it logs (a bare time that never goes down: `time_min`, the minutes
    since the start printed each epoch) turned into the durations it holds: its difference from one
    logged point to the next, per step (`Series.scale` says so), with role `step_time`. A slowdown
    shows in a clock only as a steeper slope; its differences show it as a step time that rose.
    None when the run logs no such clock. A clock that restarts (a relaunch) keeps only its forward
    differences; a running average is no clock (it goes down) and is not differenced here."""
    from ..frame import is_bare_time

    made: dict[str, Series] = {}
    for m, s in ctx.series.items():
        if ctx.roles.get(m) != "other" or not is_bare_time(m):
            continue
        step, v = s.finite()
        if v.size < min_points + 1 or not cumulative(v):
            continue
        dstep, dv = np.diff(step), np.diff(v)
        ok = (dstep > 0) & (dv >= 0)
        if ok.sum() < min_points:
            continue
        made[m] = Series(metric=m, role="step_time", step=step[1:][ok], value=dv[ok] / dstep[ok], scale=CLOCK_SCALE)
    if not made:
        return None
    return RunContext(run=ctx.run, roles={**ctx.roles, **{m: "step_time" for m in made}},
                      series={**ctx.series, **made}, segment_starts=ctx.segment_starts, frame=ctx.frame)


def _rose_in_stages(f: Finding, s: Series, min_rise: float) -> None:
    """A step time that had already risen before the change found (a slowdown in stages: 0.13, then
    0.22, then 0.32 minutes an epoch) starts where it first left its opening level: the finding's
    start moves there and the message says so. The opening level is the median of the first
    twentieth (at least 5 points); the first rise is where a run of that many points' median first
    stands `min_rise`/2 above it."""
    step, v = s.finite()
    k = max(5, v.size // 20)
    before = f.evidence.get("before")
    if v.size < 4 * k or not before:
        return
    start = float(np.median(v[:k]))
    if start <= 0 or before < start * (1 + min_rise / 2):
        return
    med = np.median(np.lib.stride_tricks.sliding_window_view(v, k), axis=1)
    above = np.flatnonzero(med >= start * (1 + min_rise / 2))
    if above.size == 0:
        return
    at = int(step[above[0] + k // 2])  # a window's median turns when half its points are past the change
    if at >= (f.start_step or 0):
        return
    f.message += (f"; it had already risen from {start:.4g} (its first {k} points) from step {at}: "
                  f"a slowdown in stages, {f.evidence.get('median_to_end', before) / start:.1f}x its opening pace by the end")
    f.evidence["first_rise_step"], f.evidence["opening_level"] = at, start
    f.start_step = at


DRIFT_BLOCKS = 10
DRIFT_RATIO = 1.5
"""A step time whose last tenth's median is this many times its first's (after the warm-up), the
tenths' medians in order: every stretch of the run slower than the one before."""


def steady_rise(v: np.ndarray, *, blocks: int = DRIFT_BLOCKS, ratio: float = DRIFT_RATIO) -> tuple[float, float] | None:
    """The first and last block medians of a rate that grew steadily, not by one change: the medians of
    `blocks` equal stretches after the warm-up rank-correlate with their order at 0.9 or more (one
    stretch out of order at most) and the last is `ratio` times the first. None otherwise."""
    v = v[np.isfinite(v)]
    v = v[spans_skip(v.size):]
    if v.size < 2 * blocks:
        return None
    med = np.array([np.median(b) for b in np.array_split(v, blocks)])
    if med[0] <= 0 or med[-1] < ratio * med[0] or rank_correlation(med) < 0.9:
        return None
    return float(med[0]), float(med[-1])


def _drift_finding(det: Detector, ctx: RunContext, role: str, min_points: int) -> list[Finding]:
    """A step time that crept up over the run (a leak, a growing buffer, a cache or a log that grows
    with each step): no single change for `sustained_shift` to find, each tenth slower than the last."""
    for s in ctx.by_role(role):
        step, v = s.finite()
        if v.size < min_points or np.mean(np.diff(v) >= 0) >= 0.98:
            continue  # a clock (it never goes down, `cumulative` or not) rises steadily by construction
        rise = steady_rise(v)
        if rise is None:
            continue
        first, last = rise
        at = int(step[0])  # a creep has no one step where it starts: the run's first
        pct = 100 * (last / first - 1)
        msg = (f"{s.label} rose steadily by {pct:.0f}% from step {at} to the end (median {first:.4g} over the first "
               f"tenth after the warm-up, {last:.4g} over the last, each tenth slower than the one before): a slowdown that grew "
               f"with the run, not one change")
        return [Finding(kind=det.kind, code=det.code, run=ctx.run, metric=s.metric, severity="warning",
                        message=msg, start_step=at, end_step=None, magnitude=last / first,
                        evidence={"before": first, "after": last, "change_percent": round(pct, 2),
                                  "median_to_end": last, "lasted": True, "steady": True})]
    return []


def _final_rise(det: Detector, ctx: RunContext, min_rise: float, min_points: int) -> list[Finding]:
    """A step time that rose in the last stretch before the log stops (a node failing before a kill):
    shorter than the tenth `sustained_shift` needs after a change. Told when the final points, at least
    a fortieth of the run and 5, all lie `min_rise` above the median before them and beyond its noise,
    (a last evaluation or save is one or two slow points, never a fortieth of the run), or the last
    `FINAL_FEW` or more all lie `FINAL_SEVERAL` times above it."""
    for s in ctx.by_role("step_time"):
        step, v = s.finite()
        if v.size < min_points or np.all(v == v[0]) or cumulative(v):
            continue
        skip = spans_skip(v.size)
        k = max(5, (v.size - skip) // 40)
        body = v[skip:]
        base = float(np.median(body[: body.size - k]))
        if base <= 0:
            continue
        n_tail = _trailing(body >= base * (1 + min_rise))
        several = _trailing(body >= base * FINAL_SEVERAL)
        if n_tail < k and several >= FINAL_FEW:
            n_tail = several  # a few last points several times slower (a node failing) are as plain as many
        elif n_tail < k:
            continue
        if n_tail > body.size // 10:
            continue  # a longer rise is the sustained shift's to judge
        pre = body[: body.size - n_tail]
        spread = float(np.median(np.abs(np.diff(pre)))) if pre.size > 2 else 0.0
        tail = body[body.size - n_tail:]
        if float(np.min(tail)) - base < 4.0 * spread:
            continue
        at = int(step[v.size - n_tail])
        last = float(np.median(tail))
        pct = 100 * (last / base - 1)
        msg = (f"{s.label} rose {pct:.0f}% over the last {n_tail} points before the log stops (from step {at}: "
               f"median {last:.4g} against {base:.4g} before), a slowdown the run ended in")
        return [Finding(kind=det.kind, code=det.code, run=ctx.run, metric=s.metric, severity="warning",
                        message=msg, start_step=at, end_step=None, magnitude=float(last / base),
                        evidence={"before": base, "after": last, "change_percent": round(pct, 2),
                                  "median_to_end": last, "lasted": True, "final_stretch": n_tail, "also_on": []})]
    return []


FINAL_SEVERAL = 3.0
FINAL_FEW = 5
"""A step time that ends `FINAL_FEW` points or more in a row at `FINAL_SEVERAL` times its pace or more
rose before the log stopped, however long the run: no save or evaluation makes five steps in a row 3x
slower, and a fortieth of a long run may be more points than a dying launch got to log."""


def _trailing(flags: np.ndarray) -> int:
    """How many of the last values in a row are True."""
    return int(np.argmin(flags[::-1])) if not flags.all() else int(flags.size)


def cumulative(v: np.ndarray) -> bool:
    """Values that never go down and grow tenfold: a clock or a count since the start."""
    d = np.diff(v)
    return bool(d.size and np.mean(d >= 0) >= 0.98 and v[-1] > 10 * max(abs(v[0]), 1e-12))


def _throughput_held(ctx: RunContext, step: int | None, min_points: int) -> bool:
    """The run logs a throughput that did not fall where the step time rose."""
    for s in ctx.by_role("throughput"):
        v = s.finite()[1]
        if v.size < min_points or np.all(v == v[0]) or cumulative(v):
            continue  # a constant printed every step (a configured MFU) or a count measures nothing
        if sustained_shift(s.value, down=True, min_change=0.15, min_points=min_points) is None:
            return True
    return False


def _rate_finding(det: Detector, ctx: RunContext, role: str, *, down: bool, min_change: float,
                  min_points: int) -> list[Finding]:
    """One finding for the run: the series of the role with the largest sustained change,
    the others that changed with it in `also_on`."""
    found: list[tuple[Series, Shift]] = []
    for s in ctx.by_role(role):
        step, v = s.finite()
        if v.size < min_points or np.all(v == v[0]) or cumulative(v):
            continue  # a clock or a count since the start (`train/time_ms`) is no rate
        sh = sustained_shift(v, down=down, min_change=min_change, min_points=min_points)
        if sh is not None:
            found.append((s, sh))
    if not found:
        return []
    size = (lambda x: 1 - x[1].ratio) if down else (lambda x: x[1].ratio - 1)
    found.sort(key=size, reverse=True)
    s, sh = found[0]
    step, vals = s.finite()
    at = int(step[sh.index])
    pct = 100 * abs(sh.ratio - 1)
    half = 0.5 * min_change
    lasted = (sh.rest <= sh.before * (1 - half)) if down else (sh.rest >= sh.before * (1 + half))
    tail = vals[sh.index:]
    recovering = tail.size > 5 and (rank_correlation(tail) if down else -rank_correlation(tail)) >= 0.8
    lasted = lasted and not recovering  # climbing steadily back (a progress bar's running average restarting)
    spans = slow_spans(vals, sh, down=down)
    # came back: at its pace again for as long as a stretch must last (half a tenth of the run)
    came_back = bool(spans) and vals.size - spans[-1][1] >= max(5, (vals.size - spans_skip(vals.size)) // 20)
    if spans and not came_back:
        spans[-1] = (spans[-1][0], vals.size)
    what = "fell" if down else "rose"
    first, end = (int(step[spans[0][0]]), int(step[spans[-1][1]]) if came_back else None) if spans else (at, None)
    if came_back:  # slow stretches the run came back from: a contention, a throttled or shared node
        lasted = False
        stretches = ", ".join(f"{int(step[a])}-{int(step[b - 1])}" for a, b in spans)
        share = sum(b - a for a, b in spans) / max(1, vals.size - spans_skip(vals.size))
        msg = (f"{s.label} {what} {pct:.0f}% (median {sh.before:.4g} at its usual pace, {sh.after:.4g} when slow) "
               f"over {len(spans)} stretch{'es' if len(spans) > 1 else ''} (steps {stretches}; {100 * share:.0f}% of "
               f"the run after its warm-up), back to its pace at step {end}")
    else:
        share = 0.0
        # the stretch that lasted to the end starts the finding (the fitted change when it lies in it)
        first = at if not spans or sh.index >= spans[-1][0] - (spans[-1][1] - spans[-1][0]) // 4 \
            else int(step[spans[-1][0]])
        msg = (f"{s.label} {what} {pct:.0f}% at step {first} (median {sh.before:.4g} before, {sh.after:.4g} after)"
               + (" and stayed there to the end" if lasted else f"; the median to the end is {sh.rest:.4g}"))
        if len(spans) > 1:
            msg += f", after {len(spans) - 1} slow stretch{'es' if len(spans) > 2 else ''} it came back from"
        end = None
    at = first
    work = work_changed(ctx, step, at)
    if work:  # the step does more (or less) work: a new regime of the run, not a slowdown
        msg += (f"; {work['metric']} changed from {work['before']:.4g} to {work['after']:.4g} at step {work['step']}: "
                f"each step does other work from there, a new regime rather than a slowdown")
    slow = _slow_rank(ctx, role, down)
    if slow:
        msg += f"; {slow['text']}"
    ev = {"before": sh.before, "after": sh.after, "change_percent": round(pct, 2), "median_to_end": sh.rest,
          "lasted": bool(lasted), "also_on": [{"metric": o.metric, "step": int(o.finite()[0][x.index]),
                                                "change_percent": round(100 * abs(x.ratio - 1), 2)}
                                               for o, x in found[1:]]}
    if slow:
        ev["slow_rank"] = slow["rank"]
    if work:
        ev["work_changed"] = work
    if came_back:
        ev["slow_stretches"] = [[int(step[a]), int(step[b - 1])] for a, b in spans]
        ev["slow_share"] = round(share, 3)
    climbing = came_back and all((rank_correlation(vals[a:b]) if down else -rank_correlation(vals[a:b])) >= 0.8
                                 for a, b in spans)  # a running average climbing back, each time
    own = own_pace(vals, step, sh, spans, down=down) or (_clock_alternates(ctx, at) if down else None)
    if own and own["reading"] == "started_there" and not came_back:
        msg = (f"{s.label} {'fell' if down else 'rose'} back at step {at} to the pace it ran at from its warm-up on "
               f"(median {sh.after:.4g}, after a faster stretch at {sh.before:.4g}): its own pace; a faster stretch "
               f"came and ended, nothing slowed down")
    elif own:
        msg += f"; {own['text']}"
    if own:
        ev["own_pace"] = own["reading"]
    loud = (lasted or (share >= SLOW_SHARE and not climbing)) and not work and not own
    return [Finding(kind=det.kind, code=det.code, run=ctx.run, metric=s.metric,
                    severity="warning" if loud else "info", message=msg, start_step=at, end_step=end,
                    magnitude=float(sh.ratio), evidence=ev)]


def own_pace(v: np.ndarray, step: np.ndarray, sh: Shift, spans: list[tuple[int, int]], *,
             down: bool) -> dict | None:
    """Why the slow pace is the run's own, not a slowdown, when the run says so:
    - it ran at it from its warm-up on (its first slow stretch starts where the warm-up ends):
      a pace a run starts at is its pace; a faster stretch later that ended (cached data, a
      neighbour that left the machine) is the exception, and the return to the pace it started
      at is no drop;
    - its steps alternate between the two paces: `ALTERNATING` or more of the steps inside the
      slow stretches still ran at the fast pace (beyond the geometric middle of the two levels).
      A run that slowed has nearly every step slow (noise crosses the middle rarely); one whose
      steps keep jumping between the paces shares its machine, and only the mix moved.
    None when neither holds."""
    if not spans:
        return None
    lo, hi = sorted((sh.before, sh.after))
    mid = float(np.sqrt(lo * hi)) if lo > 0 else 0.5 * (lo + hi)
    skip = spans_skip(v.size)
    if spans[0][0] <= skip:
        pace = float(np.median(v[spans[0][0]:spans[0][1]]))
        return {"reading": "started_there",
                "text": f"the run ran at this pace from its warm-up on (median {pace:.4g} over steps "
                        f"{int(step[spans[0][0]])}-{int(step[spans[0][1] - 1])}): its own pace; a faster stretch "
                        f"came and ended, nothing slowed down"}
    inside = np.concatenate([v[a:b] for a, b in spans])
    inside = inside[np.isfinite(inside)]
    fast = float(np.mean(inside > mid if down else inside < mid)) if inside.size else 0.0
    if fast >= ALTERNATING:
        return {"reading": "alternating",
                "text": f"{100 * fast:.0f}% of the steps inside the slow stretches still ran at the fast pace: the "
                        f"steps alternate between two paces (a shared or contended machine) and only their mix "
                        f"changed, not the pace of the run"}
    return None


def _clock_alternates(ctx: RunContext, at: int) -> dict | None:
    """The run's step time alternates between two paces over the steps where its throughput fell:
    one clock read twice (a throughput printed as a running mean of the same steps, nanoGPT's
    `mfu`, smooths the alternation the step time shows), so the drop is that alternation."""
    for s in ctx.by_role("step_time"):
        step, v = s.finite()
        if v.size < 50 or np.all(v == v[0]) or cumulative(v):
            continue
        sh = sustained_shift(v, down=False, min_change=0.15)
        if sh is None:
            continue
        spans = slow_spans(v, sh, down=False)
        own = own_pace(v, step, sh, spans, down=False)
        if own and own["reading"] == "alternating" and any(step[a] <= at <= step[b - 1] for a, b in spans):
            return {"reading": "alternating",
                    "text": f"{s.label} alternates between two paces over the same steps ({own['text'].split(':')[0]}): "
                            f"one clock read twice, the mix of fast and slow steps changed, not the pace of the run"}
    return None


ALTERNATING = 0.25
"""Share of the steps inside slow stretches at the fast pace from which the steps alternate
between two paces (one in four; a run that slowed keeps a few percent there, its noise)."""

SLOW_SHARE = 1 / 3
"""Slow stretches the run came back from are a warning when they hold this share of the run
after its warm-up (a third of its GPU time spent at the slow pace), a note otherwise."""


def spans_skip(n: int, warmup: float = 0.1) -> int:
    """The warm-up points `sustained_shift` leaves out of a series of n points."""
    return max(5, int(warmup * n))


def slow_spans(v: np.ndarray, sh: Shift, *, down: bool) -> list[tuple[int, int]]:
    """Index spans (end exclusive) after the warm-up where the rate stands at the slow level of
    `sh`: medians of blocks of a fortieth of the run beyond the (geometric) middle of the two
    levels, in runs of at least a twentieth of the points (one slow step, an eval or a
    checkpoint save, moves no block's median)."""
    skip = spans_skip(v.size)
    x = v[skip:]
    w = max(5, x.size // 10)
    size = max(1, w // 4)
    nb = -(-x.size // size)
    padded = np.full(nb * size, np.nan)
    padded[:x.size] = x
    med = np.nanmedian(padded.reshape(nb, size), axis=1)
    lo, hi = sorted((sh.before, sh.after))
    mid = float(np.sqrt(lo * hi)) if lo > 0 else 0.5 * (lo + hi)
    slow = np.concatenate([[0], (med < mid if down else med > mid).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(slow))
    out = []
    for a, b in zip(edges[::2], edges[1::2]):
        i0, i1 = skip + int(a) * size, min(v.size, skip + int(b) * size)
        if i1 - i0 >= w / 2:
            out.append((i0, i1))
    return out


WORK = re.compile(r"batch|seq(?:uence)?[\s_\-]?len|seqlen|(?:^|[/_\-. ])seq(?:$|[/_\-. ])|tokens?[\s_\-]?per"
                  r"|num[\s_\-]?tokens|context|ctx[\s_\-]?len|micro|accum|resolution|img[\s_\-]?size|imgsz"
                  r"|input[\s_\-]?size|image[\s_\-]?size|crop[\s_\-]?size|frames|profil", re.I)
"""A logged setting that sizes the work of a step (batch size, sequence length, tokens per
step, image size, accumulation) or says a profiler is on."""


def work_changed(ctx: RunContext, step: np.ndarray, at: int, min_change: float = 0.1) -> dict | None:
    """A setting that sizes a step's work (`WORK`: global batch size, sequence length, ...)
    logged as a few levels, never a count since the start, whose level moved by `min_change`
    or more across `at` (medians of up to a tenth of the run's points either side); None otherwise."""
    w = max(5, step.size // 10)
    i = int(np.searchsorted(step, at))
    lo, hi = int(step[max(0, i - w)]), int(step[min(step.size - 1, i + w)])
    for m, s in ctx.series.items():
        if ctx.roles.get(m) != "other" or not WORK.search(m):
            continue
        st, v = s.finite()
        if v.size < 4 or cumulative(v) or np.unique(v).size > max(10, v.size // 20):
            continue  # a count since the start (consumed samples) or a measured value, not a setting
        before, after = v[(st >= lo) & (st < at)], v[(st >= at) & (st <= hi)]
        if not before.size or not after.size:
            continue
        b, a = float(np.median(before)), float(np.median(after))
        if b and abs(a - b) / abs(b) >= min_change or (not b and a):
            near = (st >= lo) & (st <= hi)
            moved = st[near][1:][np.diff(v[near]) != 0]
            return {"metric": m, "before": b, "after": a, "step": int(moved[0]) if moved.size else int(at)}
    return None


def _slow_rank(ctx: RunContext, role: str, down: bool) -> dict | None:
    """A rank consistently slower than the others, when ranks log apart (see `ranks`)."""
    from .ranks import slow_rank

    return slow_rank(ctx, role, down)


@dataclass(frozen=True, kw_only=True)
class StallDetector(Detector):
    """The run stopped stepping for far longer than a step takes.

    Detects: a pause between two logged steps of one launch, from the wall time the writer
    recorded (or the log's own clock: time stamps on its lines), `factor` times the run's
    usual time a logged step and at least `min_seconds`, and `others` times longer than any
    pause the run makes again and again (evaluations, checkpoint saves every N steps are the
    run's routine). Pauses between launches are the resume findings' (`wallclock_gap`).
    Why it matters: a stalled run holds its GPUs and makes no progress; a hang in a
    collective (one rank waiting for another) or on storage often ends in a timeout crash.
    Likely causes: a hung NCCL collective (a rank died or is far behind), blocked storage
    (a checkpoint write or a data read on a network file system), a preempted or suspended
    node, a debugger breakpoint.
    Evidence: the steps either side, the pause in seconds, the usual time between logged steps.
    """

    code = "SL504"
    kind = "stall"
    roles = ()

    factor: float = 20.0
    """A pause this many times the usual time between logged steps (per logged step)."""
    min_seconds: float = 120.0
    """Shortest pause told, whatever the step time."""
    others: float = 3.0
    """How many times longer than the longest pause of the run's routine."""
    warn_seconds: float = 1800.0
    """A pause this long is a warning; shorter ones are info (a slow checkpoint write)."""
    session_seconds: float = 6 * 3600.0
    """A pause longer than this is info again: no job waits that long (collective timeouts are
    minutes), so it is most often a later session appended to the log whose counter went on
    (a notebook's runs, a script started again next day), not a hang."""

    step_time_factor: float = 20.0
    """Without a clock: a logged step time this many times the run's median is a pause."""

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        s = _timed_series(ctx)
        if s is None:
            return self._from_step_time(ctx)
        seg = _segments(ctx, s)
        ok = np.isfinite(s.wall_time)
        step, wall = s.step, s.wall_time  # (arrays of the run's length: copied only where some are dropped)
        if not ok.all():
            step, wall, seg = step[ok], wall[ok], seg[ok]
        if step.size < 20:
            return []
        same = seg[1:] == seg[:-1]  # the gaps within one launch
        del seg
        dt, ds = np.diff(wall), np.diff(step).astype(np.float64)
        same &= (ds > 0) & (dt >= 0)
        if not same.all():
            dt, ds = dt[same], ds[same]
        if dt.size < 10:
            return []
        usual = float(np.median(dt / ds))
        per_gap = usual * ds
        big = dt > np.maximum(self.factor * per_gap, self.min_seconds)
        if not big.any():
            return []
        at = np.flatnonzero(same)  # each gap's first point
        out = []
        for k in np.flatnonzero(big):
            # the routine: the longest pause among the rest, once the largest few are put aside
            rest = np.sort(dt[~big])[::-1]
            routine = float(rest[0]) if rest.size else 0.0
            repeats = np.sum(dt >= 0.5 * dt[k]) >= 3  # a pause the run makes again and again
            if repeats or dt[k] < self.others * routine:
                continue
            i = int(at[k])
            gap = float(dt[k])
            sev = "warning" if self.warn_seconds <= gap <= self.session_seconds else "info"
            msg = (f"no step for {_duration(gap)} between steps {int(step[i])} and {int(step[i + 1])} "
                   f"(a logged step usually takes {_duration(float(per_gap[k]))})")
            if gap > self.session_seconds:
                msg += ": longer than a job waits, most likely a later session appended to the log"
            out.append(Finding(kind=self.kind, code=self.code, run=ctx.run, metric=s.metric, severity=sev,
                               message=msg, start_step=int(step[i]), end_step=int(step[i + 1]),
                               magnitude=gap / float(per_gap[k]) if per_gap[k] > 0 else None,
                               evidence={"seconds": gap, "usual_seconds": float(per_gap[k]),
                                         "routine_pause_seconds": routine, "from": "wall_time"}))
        return out


    def _from_step_time(self, ctx: RunContext) -> list[Finding]:
        """Pauses a run without a clock shows in its logged step time (`ms/batch` averaged over
        the last N batches): an interval whose step time is `step_time_factor` times the run's
        median held a pause the steps alone cannot explain. Each launch's first interval is
        warm-up (compilation, caches) and is left out; pauses at regular spacing (an evaluation
        inside every Nth interval) are the run's routine."""
        s = ctx.main("step_time")
        if s is None:
            return []
        step, v = s.finite()
        keep = v > 0
        step, v = step[keep], v[keep]
        if v.size < 20:
            return []
        seg = _segments(ctx, s)[np.flatnonzero(np.isfinite(s.value))[keep]] if len(s) else np.zeros(0, np.int64)
        first = np.r_[True, seg[1:] != seg[:-1]] if seg.size == v.size else np.r_[True, np.zeros(v.size - 1, bool)]
        usual = float(np.median(v))
        big = (v >= self.step_time_factor * usual) & ~first
        if not big.any() or big.mean() > 0.05:
            return []
        idx = np.flatnonzero(big)
        episodes = np.split(idx, np.flatnonzero(np.diff(idx) > 10) + 1)  # pauses a few intervals apart: one episode
        if len(episodes) >= 3:
            gaps = np.diff([int(step[e[0]]) for e in episodes]).astype(np.float64)
            if gaps.min() >= 0.8 * gaps.max():
                return []  # evenly spaced: the run's routine (an evaluation or a save every N steps)
        out = []
        for e in episodes:
            i, j = int(e[0]), int(e[-1])
            peak = float(v[e].max())
            msg = (f"{s.label} reached {peak:.4g} between steps {int(step[i - 1])} and {int(step[j])}, "
                   f"{peak / usual:.0f}x its usual {usual:.4g}: the run stopped stepping for a while "
                   f"(no clock in the log to say how long)")
            out.append(Finding(kind=self.kind, code=self.code, run=ctx.run, metric=s.metric, severity="info",
                               message=msg, start_step=int(step[i - 1]), end_step=int(step[j]),
                               magnitude=peak / usual,
                               evidence={"peak_step_time": peak, "usual_step_time": usual,
                                         "intervals": int(e.size), "from": "step_time"}))
        return out


def _timed_series(ctx: RunContext) -> Series | None:
    """The series that says when training steps happened: the main loss, with its wall time
    (a run without a loss has no training steps to wait for: a launcher's log read line by line)."""
    s = ctx.main("loss")
    if s is None or s.wall_time is None or not np.isfinite(s.wall_time).any():
        return None
    v = s.finite()[1]
    if v.size and bool(np.all(v == np.round(v))):
        return None  # whole numbers only: a count or a size (`dist_world_size`) taken for a loss, no training step
    if np.nanmax(s.wall_time) - np.nanmin(s.wall_time) <= 0:
        return None
    return s


def _segments(ctx: RunContext, s: Series) -> np.ndarray:
    """The launch each point of `s` came from (all 0 when unknown)."""
    f = ctx.frame
    if f is None or "segment" not in f.columns:
        return np.zeros(len(s), dtype=np.int64)
    one = f.get_column("segment")
    if f.height and one.min() == one.max():  # one launch (most runs): no filter and group-by of the frame
        return np.full(len(s), int(one[0]), dtype=np.int64)
    import polars as pl

    part = f.filter((pl.col("metric") == s.metric) & pl.col("value").is_not_null())
    if "superseded" in part.columns:
        part = part.filter(~pl.col("superseded"))
    seg = part.group_by("step").agg(pl.col("segment").max()).sort("step")
    idx = np.searchsorted(seg.get_column("step").to_numpy(), s.step)
    idx = np.clip(idx, 0, max(seg.height - 1, 0))
    return seg.get_column("segment").to_numpy().astype(np.int64)[idx] if seg.height else np.zeros(len(s), np.int64)


def _duration(sec: float) -> str:
    if sec >= 3600:
        return f"{sec / 3600:.1f} h"
    if sec >= 120:
        return f"{sec / 60:.0f} min"
    if sec >= 1:
        return f"{sec:.1f} s"
    return f"{1000 * sec:.0f} ms"


SLOWDOWN_KINDS = ("throughput_drop", "step_time_rise", "stall")


def untrained_slowdowns(findings: list[Finding], ctx: RunContext) -> None:
    """A slowdown in a log where nothing of training is logged (no loss, reward, score, gradient or
    learning rate: only a data-preparation bar's `159.47sample/s` or a download's rate) is told as a
    note, not an alarm: nothing says the rate is the training's, nor that the run trained at all."""
    if logged_training({m: ctx.roles.get(m, "other") for m in ctx.series}):
        return
    for f in findings:
        if f.kind in SLOWDOWN_KINDS and f.severity == "warning":
            f.severity = "info"
            f.evidence["no_training_logged"] = True
            f.message += "; nothing of training is logged beside it (a data-preparation pass?)"


def slowdown(f: Finding, ctx: RunContext, every: list[Finding]) -> Cause | None:
    """A loss event right after (or in) a slowdown of the run: a data loader that fell
    behind, or a slow or failing node."""
    if f.kind not in ("spike", "nan", "divergence") or f.metric is None:
        return None
    at = f.start_step if f.start_step is not None else f.peak_step
    s = ctx.series.get(f.metric)
    if at is None or s is None or len(s) < 2:
        return None
    tol = 20 * float(np.median(np.diff(s.step))) if len(s) > 1 else 20.0
    for o in every:
        if o.kind not in SLOWDOWN_KINDS or o.start_step is None:
            continue
        lag = at - o.start_step
        if 0 <= lag <= tol or (o.end_step is not None and o.start_step <= at <= o.end_step):
            return Cause("slowdown", 0.55,
                         f"{o.message.split(';')[0]}, {int(lag)} steps before the loss event: a data loader "
                         f"that fell behind or a slow node",
                         {"slowdown_kind": o.kind, "slowdown_step": int(o.start_step), "lag_steps": int(lag)})
    return None
