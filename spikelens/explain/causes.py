"""Cause rules: evidence in the other metrics of the run → a cause with a checkable sentence.

Each rule looks at one finding and the run's companion series (grad norm, LR, loss
scale, sibling losses, segment starts) and returns a `Cause` or None. Confidence is a
plain score for ordering, not a calibrated probability.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..detect.base import RunContext
from ..model.finding import Cause, Finding
from ..detect.stats import halvings
from .evidence import before, between, finite_median, interval
from ..detect.memory import out_of_memory
from ..detect.throughput import slowdown

Rule = Callable[[Finding, RunContext, list[Finding]], "Cause | None"]
EXPLAINED_KINDS = ("spike", "nan", "divergence", "oscillation", "excursion")


def _anchor(f: Finding) -> int | None:
    return f.start_step if f.start_step is not None else f.peak_step


def grad_explosion(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """The gradient norm climbs over several logged steps before the loss moves."""
    g = ctx.main("grad_norm")
    start = _anchor(f)
    if g is None or start is None or f.metric == g.metric:
        return None
    steps, vals = before(g, start, 10)
    _, ref = before(g, int(steps[0]) if steps.size else start, 50)
    base = finite_median(ref)
    if steps.size < 2 or not np.isfinite(base) or base <= 0:
        return None
    ratios = vals / base
    elevated = np.isfinite(ratios) & (ratios > 2.0)
    if elevated.sum() < 2 or np.nanmax(np.where(np.isfinite(ratios), ratios, np.nan)) < 3.0:
        return None
    first = int(steps[np.argmax(elevated)])
    peak_ratio = float(np.nanmax(np.where(np.isfinite(ratios), ratios, np.nan)))
    n = int(elevated.sum())
    return Cause("grad_explosion", min(0.95, 0.6 + 0.07 * n),
                 f"{g.label} rose {peak_ratio:.1f}x above its median {base:.3g} over the {n} logged steps "
                 f"before the loss moved (from step {first} to {int(steps[-1])})",
                 {"grad_metric": g.metric, "ratio": peak_ratio, "elevated_points": n, "first_step": first,
                  "baseline": base})


def lr_jump(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """The learning rate jumps up just before (or at) the event."""
    lr = ctx.main("lr")
    start = _anchor(f)
    if lr is None or start is None:
        return None
    k = 5
    peak = f.peak_step if f.peak_step is not None else start
    steps, vals = between(lr, start - int(k * interval(lr)), peak)
    _, prev = before(lr, int(steps[0]) if steps.size else start, 1)
    if steps.size == 0 or prev.size == 0:
        return None
    seq = np.concatenate([prev, vals])
    with np.errstate(divide="ignore", invalid="ignore"):
        jumps = seq[1:] / seq[:-1]
    jumps = np.where(np.isfinite(jumps), jumps, 0)
    j = int(np.argmax(jumps))
    if jumps[j] < 1.3:
        return None
    at = int(steps[j])
    return Cause("lr_jump", min(0.95, 0.7 + 0.1 * np.log2(jumps[j])),
                 f"{lr.label} jumped {jumps[j]:.1f}x from {seq[j]:.3g} to {seq[j + 1]:.3g} at step {at}",
                 {"lr_metric": lr.metric, "ratio": float(jumps[j]), "step": at,
                  "before": float(seq[j]), "after": float(seq[j + 1])})


def warmup_end(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """The event comes shortly after warm-up ends and the LR reaches its peak."""
    lr = ctx.main("lr")
    start = _anchor(f)
    if lr is None or start is None or len(lr) < 10:
        return None
    v = lr.value
    finite = np.isfinite(v)
    head = max(5, int(0.4 * len(lr)))
    i_peak = int(np.nanargmax(np.where(finite[:head], v[:head], np.nan)))
    if i_peak < 3 or not (v[0] < 0.5 * v[i_peak]):
        return None
    rising = np.diff(v[: i_peak + 1])
    if np.mean(rising >= 0) < 0.9:
        return None  # not a ramp: a jump is lr_jump's business
    peak_step = int(lr.step[i_peak])
    warm = peak_step - int(lr.step[0])
    lo = peak_step - max(0.1 * warm, 2 * interval(lr))
    hi = peak_step + max(0.35 * warm, 10 * interval(lr))
    if not (lo <= start <= hi):
        return None
    return Cause("warmup_end", 0.75,
                 f"warm-up ended at step {peak_step} when {lr.label} reached its peak {v[i_peak]:.3g}; "
                 + (f"the loss left its band {start - peak_step} steps later" if start >= peak_step
                    else f"the loss left its band {peak_step - start} steps before, as {lr.label} neared it"),
                 {"lr_metric": lr.metric, "warmup_end_step": peak_step, "peak_lr": float(v[i_peak]),
                  "offset_steps": int(start - peak_step)})


def fp16_overflow(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """The loss scale halves repeatedly around the event (overflowing fp16 gradients)."""
    sc = ctx.main("loss_scale")
    start = _anchor(f)
    if sc is None or start is None:
        return None
    k = 10 * interval(sc)
    hi = (f.peak_step if f.peak_step is not None else start) + k
    steps, vals = between(sc, int(start - k), int(hi))
    _, prev = before(sc, int(steps[0]) if steps.size else start, 1)
    seq = np.concatenate([prev, vals])
    if seq.size < 3:
        return None
    count = int(halvings(seq).sum())
    if count < 2:
        return None
    drop = float(seq[0] / np.nanmin(seq)) if np.nanmin(seq) > 0 else float("inf")
    return Cause("fp16_overflow", min(0.97, 0.75 + 0.05 * count),
                 f"{sc.label} halved {count} times around the event ({seq[0]:.6g} → {np.nanmin(seq):.6g}, "
                 f"{drop:.0f}x): fp16 gradients overflowed and steps were skipped",
                 {"scale_metric": sc.metric, "halvings": count, "from": float(seq[0]),
                  "to": float(np.nanmin(seq))})


def bad_batch(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """A one-step spike with no precursor in grad norm or LR, gone at the next step."""
    if f.kind != "spike" or not f.evidence.get("one_point") or ctx.roles.get(f.metric or "") not in ("loss", None):
        return None  # a jump of an eval loss or a KL term is not a training batch's
    g = ctx.main("grad_norm")
    note = ""
    if g is not None and f.peak_step is not None:
        _, pre = before(g, f.peak_step, 6)
        _, at = between(g, f.peak_step, f.peak_step)
        base = finite_median(pre)
        if at.size and np.isfinite(base) and base > 0 and np.isfinite(at[0]):
            note = f"; {g.label} moved only at that step ({at[0] / base:.1f}x)"
    steps = f.evidence.get("steps") or [f.peak_step]
    if len(steps) > 1:
        shown = ", ".join(str(s) for s in steps[:8]) + (f" and {len(steps) - 8} more" if len(steps) > 8 else "")
        return Cause("bad_batch", 0.7,
                     f"{len(steps)} single logged points (steps {shown}), each back at the next with no "
                     f"precursor in grad norm or LR: look at the batches fed at those steps",
                     {"steps": list(steps), "ratio": f.magnitude})
    return Cause("bad_batch", 0.7 if f.evidence.get("bad_batch") else 0.6,
                 f"one logged point at step {f.peak_step} ({f.magnitude:.2f}x), back at the next with no "
                 f"precursor in grad norm or LR{note}: look at the batch fed at that step",
                 {"step": f.peak_step, "ratio": f.magnitude})


def data_source(f: Finding, ctx: RunContext, every: list[Finding]) -> Cause | None:
    """Only some per-source losses (or one component of a total) spike at this step: one
    dataset's or one loss term's problem."""
    if f.kind != "spike" or f.peak_step is None or f.metric is None or ctx.roles.get(f.metric) != "loss":
        return None  # a KL term or an eval loss is not one of the training losses a data source feeds
    siblings = [s for s in ctx.by_role("loss") if s.metric != f.metric and len(s)]
    if len(siblings) < 2:
        return None
    tol = 5 * interval(ctx.series[f.metric]) if f.metric in ctx.series else 5
    spiked, calm = [], []
    moved = {m.get("metric") for m in f.evidence.get("components_moved", ())}  # what the message says moved
    for s in siblings:
        near = np.abs(s.step - f.peak_step) <= tol
        if not near.any():
            continue  # logged on another axis (per epoch): no opinion
        # same event: peaks or starts together (in noise a multi-point spike's peak wanders)
        hit = s.metric in moved or any(o.kind == "spike" and s.metric in _metrics_of(o) and o.peak_step is not None
                  and (abs(o.peak_step - f.peak_step) <= tol
                       or (o.start_step is not None and f.start_step is not None
                           and abs(o.start_step - f.start_step) <= tol)) for o in every)
        (spiked if hit else calm).append(s.metric)
    if not calm or len(spiked) > len(calm):
        return None  # every loss, or most of them, moved: the model jumped, not one source
    main = ctx.main("loss")
    if not spiked:
        if main is None or main.metric == f.metric:
            return None
        return Cause("data", 0.8,
                     f"at step {f.peak_step} only {f.metric} spiked; {_names(calm)} stayed calm: one data "
                     f"source's batches or "
                     f"this loss term alone, not the optimizer",
                     {"spiked": [f.metric], "calm": sorted(calm)})
    return Cause("data", 0.85,
                 f"at step {f.peak_step} the spike is in {_names(spiked + [f.metric])} but not in "
                 f"{_names(calm)}: one data source's batches, not the optimizer",
                 {"spiked": sorted(spiked + [f.metric]), "calm": sorted(calm)})


def policy_update(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """A spike of a KL term (how far one update moved the policy from the one that collected the
    data, or from the reference model): the update was too large, whatever batch it was computed
    on; no data source or skipped batch explains a policy step."""
    if f.kind != "spike" or f.metric is None or ctx.roles.get(f.metric) != "kl":
        return None
    ev = f.evidence
    steps = ev.get("steps") or [f.peak_step]
    value, median = ev.get("peak_value"), ev.get("median", ev.get("baseline"))
    size = (f"{value:.4g} against a median of {median:.3g}" if isinstance(value, (int, float))
            and isinstance(median, (int, float)) else f"{f.magnitude:.0f}x its usual size")
    after = [f"{m['metric']} {m['at']:.4g} vs {m['before']:.4g} before"
             for m in (ev.get("policy_update") or {}).values() if isinstance(m, dict) and "at" in m]
    return Cause("policy_update", 0.8,
                 f"the policy update at step {f.peak_step} moved the policy {size}"
                 + (f" ({len(steps)} such updates)" if len(steps) > 1 else "")
                 + (f"; {'; '.join(after)}" if after else "")
                 + ": a step too large for the policy (learning rate, clip range, advantage scale), "
                   "not a bad batch",
                 {"steps": list(steps), "ratio": f.magnitude})


def _names(metrics: list[str], shown: int = 6) -> str:
    """'a, b, c' or 'a, b, c, d, e, f and 24 more': a sentence a person reads, not a dump."""
    more = f" and {len(metrics) - shown} more" if len(metrics) > shown else ""
    return ", ".join(metrics[:shown]) + more


def _metrics_of(f: Finding) -> set[str | None]:
    """The metric a finding is on and those it took in (one event seen on several losses)."""
    return {f.metric} | {a.get("metric") for a in f.evidence.get("also_on", ())}


def resume(f: Finding, ctx: RunContext, _all: list[Finding]) -> Cause | None:
    """The event sits right after a resume boundary."""
    start = _anchor(f)
    if start is None or not ctx.segment_starts:
        return None
    s = ctx.series.get(f.metric) if f.metric else None
    k = 10 * (interval(s) if s is not None else 1)
    hits = [b for b in ctx.segment_starts if b - k <= start <= b + k]
    if not hits:
        return None
    b = hits[0]
    if ctx.roles.get(f.metric or "") in ("eval_loss", "accuracy") and not _train_moved(f, ctx, _all, start, k):
        return None  # state a resume failed to restore shows in the training loss first: a held-out-only event is not it
    return Cause("resume", 0.9,
                 f"the run was resumed at step {b} and the loss left its band {start - b:+d} steps later: "
                 f"optimizer or data-loader state may not have been restored",
                 {"resume_step": int(b), "offset_steps": int(start - b)})


def _train_moved(f: Finding, ctx: RunContext, every: list[Finding], start: int, k: float) -> bool:
    """Whether the run's training loss had an event of its own near a held-out curve's event."""
    main = ctx.main("loss")
    return main is not None and any(
        g is not f and g.metric == main.metric and g.kind in ("spike", "excursion", "divergence", "level_shift", "nan")
        and (a := _anchor(g)) is not None and abs(a - start) <= k for g in every)


def setting(f: Finding, ctx: RunContext, every: list[Finding]) -> Cause | None:
    """A wrong setting (the settings detector's warning: an LR far above any optimizer's range on
    most rows) was in force when the event began: the event is the setting's, not a batch's."""
    start = _anchor(f)
    if start is None:
        return None
    bad = [s for s in every if s.kind == "settings" and s.start_step is not None and s.start_step <= start
           and (s.severity != "info" or s.evidence.get("note_because") == "drove_event")]
    if not bad:
        return None
    s = min(bad, key=lambda s: s.start_step)
    ev = s.evidence
    value, rows, of = ev.get("value"), ev.get("rows"), ev.get("of")
    shown = f"{value:.4g}" if isinstance(value, (int, float)) else str(value)
    return Cause("setting", 0.95,
                 f"{s.metric} was {shown} on {rows} of {of} logged rows from step {s.start_step}, before the "
                 f"event: the setting drove it, not a batch",
                 {"setting": ev.get("setting"), "metric": s.metric, "value": value, "rows": rows, "of": of,
                  "from_step": s.start_step})


RULES: tuple[Rule, ...] = (setting, fp16_overflow, lr_jump, resume, grad_explosion, data_source, warmup_end, bad_batch,
                           policy_update, slowdown)
KIND_RULES: dict[str, tuple[Rule, ...]] = {"ended_early": (out_of_memory,), "plateau": (setting,)}
"""Rules for run-level kinds the event rules do not read (an out-of-memory crash)."""
