"""One event seen on several metrics of a run is one finding, on the main one.

Detection and segmentation models log a total and its components, GANs and RLHF several
losses, a NaN shows in the loss, the grad norm and the next eval loss, and six eval sets
turn up together when a model overfits. Each detector
judges one series, so the same event comes back once per tag; a reader wants it once, on
the run's main loss, with the other metrics that moved (and by how much) in its evidence.
A component that spikes while most of the others stay calm is another event (one data
source, one head) and keeps its own finding; an fp16 loss-scale collapse around an event
is that event's cause, not a second alarm.
"""
from __future__ import annotations

import math

import numpy as np

from ..frame import SIDE_ROLES
from ..model.finding import SEVERITY_RANK, Finding
from .base import RunContext, Series
from .stats import median_interval

GROUPED_KINDS = ("nan", "divergence", "spike", "oscillation", "excursion", "overfitting", "repeated_data")
"""Kinds one event can show as on several metrics, in the order a group's leader is chosen."""
ABSORBS = {
    "nan": ("nan", "spike", "divergence", "excursion", "oscillation"),
    "divergence": ("divergence", "excursion"),
    "spike": ("spike", "excursion"),
    "oscillation": ("oscillation", "spike", "excursion"),
    "excursion": ("excursion",),
    "overfitting": ("overfitting",),
    "repeated_data": ("repeated_data",),
}
"""What a leader of each kind takes in from the other metrics: the blow-up before a NaN on a
component, the swings of one oscillation on every loss, a spike on each sub-loss."""
ROLE_ORDER = {"loss": 0, "eval_loss": 1, "grad_norm": 2, **{role: 3 for role in SIDE_ROLES}}
"""Roles whose findings join an event, leaders first (only NaN is reported on `other` metrics)."""
MOVED_RATIO = 1.2
"""A component counts as moved with a spike when its peak is this far above its own baseline."""
MESSAGE_NAMES = 6


def group_events(findings: list[Finding], ctx: RunContext) -> list[Finding]:
    """Fold findings on other metrics that repeat an event into the event's leading finding."""
    cands = [f for f in findings if f.kind in GROUPED_KINDS and f.metric is not None
             and ctx.roles.get(f.metric) in ROLE_ORDER and f.anchor_step is not None]
    if not cands:
        return findings
    main, main_eval = ctx.main("loss"), ctx.main("eval_loss")
    main_metric = main.metric if main is not None else None
    main_eval_metric = main_eval.metric if main_eval is not None else None
    leaders = sorted(cands, key=lambda f: (f.metric != main_metric, f.metric != main_eval_metric,
                                           ROLE_ORDER[ctx.roles[f.metric]],
                                           GROUPED_KINDS.index(f.kind), -SEVERITY_RANK[f.severity],
                                           -(f.magnitude or 0.0)))
    absorbed: set[int] = set()
    for k, lead in enumerate(leaders):
        if id(lead) in absorbed:
            continue
        # a lead takes in only what ranks below it: a note never swallows the event it notes
        members = [f for f in leaders[k + 1:] if id(f) not in absorbed and f.metric != lead.metric
                   and _same_event(lead, f, ctx)]
        if lead.kind == "spike":
            evals = [f for f in members if _seen_at_evaluation(lead, f, ctx)]
            same = [f for f in members if not _seen_at_evaluation(lead, f, ctx)]
            members = _unless_few_components(lead, same, ctx, main_metric) + evals
        if not members:
            if lead.kind == "spike":
                _note_moved(lead, [], ctx)
            continue
        absorbed.update(id(f) for f in members)
        _fold(lead, members, ctx)
    kept = [f for f in findings if id(f) not in absorbed]
    _scale_collapse_is_a_cause(kept, ctx)
    if main is not None:
        _components_that_rebalanced(kept, ctx, main)
    return kept


def _components_that_rebalanced(findings: list[Finding], ctx: RunContext, main: Series) -> None:
    """A component that steps up for good while the total does not move is the loss terms
    sharing the total differently (a box-regression loss that grows as the proposals
    improve), not an instability: a note, not an alarm."""
    for f in findings:
        if (f.kind != "spike" or f.recovery != "none" or f.severity == "info" or f.metric == main.metric
                or ctx.roles.get(f.metric or "") != "loss" or f.peak_step is None):
            continue
        r = _rise(main, f, ctx)
        if r is None or r >= MOVED_RATIO:
            continue
        f.severity = "info"
        f.evidence["main_ratio"] = round(r, 3)
        f.message += f"; {main.label} did not move ({r:.2f}x): the loss terms rebalanced, the total is unaffected"


def _margin(f: Finding, ctx: RunContext) -> float:
    s = ctx.series.get(f.metric) if f.metric else None
    if s is None or not len(s):
        return 10.0
    span = float(s.step[-1] - s.step[0])
    return max(5 * median_interval(s.step), 0.01 * span)


def _window(lead: Finding, ctx: RunContext) -> tuple[float, float]:
    """Steps a repeat of the lead's event may sit at on another metric."""
    m = _margin(lead, ctx)
    if lead.kind == "nan":
        lo = min(lead.start_step, lead.evidence.get("blowup_start_step", lead.start_step))
        # a NaN that stays poisons every later point of every metric (the next eval loss too)
        return lo - m, (lead.end_step + m) if lead.end_step is not None else math.inf
    if lead.kind == "divergence":
        return lead.start_step - m, math.inf
    if lead.kind == "spike":
        return lead.start_step - m, lead.peak_step + m
    return lead.start_step - m, (lead.end_step if lead.end_step is not None else lead.anchor_step) + m


def _same_event(lead: Finding, f: Finding, ctx: RunContext) -> bool:
    if f.kind not in ABSORBS[lead.kind]:
        return False
    if lead.evidence.get("beside_train") and f.kind != "oscillation":
        return False  # a note on an evaluation's noise takes in only the other held-out curves' swings
    if _seen_at_evaluation(lead, f, ctx):
        m = _margin(lead, ctx)
        hi = lead.end_step if lead.end_step is not None else lead.peak_step
        return lead.start_step - m <= f.start_step <= hi + m
    if lead.kind != "nan" and ctx.roles.get(f.metric) != ctx.roles.get(lead.metric):
        return False  # only a NaN (and a spike, at the next evaluation) reaches from the loss into the eval losses
    lo, hi = _window(lead, ctx)
    if f.kind == "spike" and lead.kind == "spike":
        steps = [s for s in (f.peak_step, f.start_step) if s is not None]
        return any(lo <= s <= hi for s in steps)
    anchor = f.start_step if f.start_step is not None else f.anchor_step
    return lo <= anchor <= hi


def _seen_at_evaluation(lead: Finding, f: Finding, ctx: RunContext) -> bool:
    """Is `f` a spike of an eval loss that a spike of the training loss may carry? While the
    training loss is up (from its jump until it is back), the model evaluated is the worse one:
    an eval loss that rose then is the same event seen at an evaluation, not a second one (an
    eval loss that spikes while the training loss is calm keeps its own finding)."""
    return (lead.kind == "spike" and f.kind == "spike" and ctx.roles.get(lead.metric or "") == "loss"
            and ctx.roles.get(f.metric or "") == "eval_loss" and f.start_step is not None
            and lead.start_step is not None and (lead.end_step is not None or lead.peak_step is not None))


def _unless_few_components(lead: Finding, members: list[Finding], ctx: RunContext,
                           main_metric: str | None) -> list[Finding]:
    """A spike on the main loss takes in the spikes of its terms at its step: a total that is
    larger than each of them is their sum, and its spike is theirs. Per-source losses that
    the main loss averages (it lies among them) are another matter: when only a few of
    them spiked and the rest stayed calm, those few are one data source's event and keep
    their own finding; when most moved, the whole model jumped."""
    if lead.metric != main_metric:
        return members
    if not any(f.kind == "spike" for f in members):
        return members
    others = _comparable(lead, ctx)
    if _is_a_sum(ctx.series[lead.metric], others):
        return members
    moved = [s for s in others if (_rise(s, lead, ctx) or 0.0) >= MOVED_RATIO]
    if len(moved) == len(others) or (len(moved) >= 2 and 2 * len(moved) >= len(others)):
        return members
    return [f for f in members if f.kind != "spike"]


def _is_a_sum(main: Series, others: list[Series]) -> bool:
    """Is the main loss larger than every other loss (a total of terms), rather than lying
    among them (an average over data sources)?"""
    levels = [_typical(s) for s in others]
    return bool(levels) and all(np.isfinite(levels)) and _typical(main) > max(levels)


def _typical(s: Series) -> float:
    v = s.value[np.isfinite(s.value)]
    return float(np.median(v)) if v.size else float("nan")


def _comparable(lead: Finding, ctx: RunContext) -> list[Series]:
    """The other training losses logged around the lead's step (not per-epoch aggregates
    logged on another axis)."""
    lo, hi = _window(lead, ctx)
    out = []
    for s in ctx.by_role("loss"):
        if s.metric == lead.metric or not len(s):
            continue
        a, b = np.searchsorted(s.step, [lo, hi])
        if b > a:
            out.append(s)
    return out


def _fold(lead: Finding, members: list[Finding], ctx: RunContext) -> None:
    main = ctx.main(ctx.roles.get(lead.metric or "", ""))
    if main is None or main.metric != lead.metric:  # on the main curve, its own severity: a total that
        rank = max(SEVERITY_RANK[f.severity] for f in [lead] + members)  # came back is not an error
        lead.severity = next(k for k, v in SEVERITY_RANK.items() if v == rank)  # because a term did not
    also = [{"metric": f.metric, "kind": f.kind, "step": f.anchor_step, "severity": f.severity,
             **({"ratio": float(f.magnitude)} if f.magnitude is not None and math.isfinite(f.magnitude) else {})}
            for f in sorted(members, key=lambda f: (f.anchor_step, f.metric))]
    lead.evidence["also_on"] = also
    if lead.kind == "spike":
        _note_moved(lead, [f for f in members if not _seen_at_evaluation(lead, f, ctx)], ctx)
        seen = [f for f in members if _seen_at_evaluation(lead, f, ctx)]
        if seen:
            lead.message += "; " + ", ".join(
                f"{f.metric} rose with it at the evaluation of step {f.start_step}"
                + (f" ({f.magnitude:.2f}x)" if f.magnitude is not None and math.isfinite(f.magnitude) else "")
                for f in seen[:MESSAGE_NAMES])
        return
    names = sorted({f.metric for f in members})
    what = "went non-finite too" if lead.kind == "nan" else f"showed the same {lead.kind}"
    shown = ", ".join(f"{a['metric']} (step {a['step']})" for a in also[:MESSAGE_NAMES])
    more = f" and {len(names) - MESSAGE_NAMES} more" if len(names) > MESSAGE_NAMES else ""
    lead.message += f"; {len(names)} other metric{'s' if len(names) > 1 else ''} {what}: {shown}{more}"


def _note_moved(lead: Finding, members: list[Finding], ctx: RunContext) -> None:
    """Put every other loss that moved with a spike (and by how much) in its evidence."""
    moved = []
    for s in _comparable(lead, ctx):
        r = _rise(s, lead, ctx)
        if r is not None and r >= MOVED_RATIO:
            moved.append({"metric": s.metric, "ratio": round(r, 3)})
    folded = {f.metric for f in members if f.kind == "spike"}
    for f in members:
        if f.kind == "spike" and f.magnitude is not None and all(m["metric"] != f.metric for m in moved):
            moved.append({"metric": f.metric, "ratio": round(float(f.magnitude), 3)})
    if not moved:
        return
    moved.sort(key=lambda m: -m["ratio"])
    lead.evidence["components_moved"] = moved
    if folded:
        shown = ", ".join(f"{m['metric']} {m['ratio']:.2f}x" for m in moved[:MESSAGE_NAMES])
        more = f" and {len(moved) - MESSAGE_NAMES} more" if len(moved) > MESSAGE_NAMES else ""
        lead.message += f"; {len(moved)} other loss{'es' if len(moved) > 1 else ''} moved with it: {shown}{more}"


def _rise(s: Series, lead: Finding, ctx: RunContext) -> float | None:
    """Peak over baseline of another loss at the lead's spike (its points before the spike
    starting against its highest point up to the spike's peak)."""
    m = _margin(lead, ctx)
    i0 = int(np.searchsorted(s.step, lead.start_step - 0.5 * m))
    i1 = int(np.searchsorted(s.step, lead.peak_step + m, side="right"))
    before = s.value[max(0, i0 - 20):i0]
    during = s.value[i0:i1]
    before, during = before[np.isfinite(before)], during[np.isfinite(during)]
    if before.size < 3 or not during.size:
        return None
    base = float(np.median(before))
    if base <= 0:
        return None
    return float(during.max() / base)


def _scale_collapse_is_a_cause(findings: list[Finding], ctx: RunContext) -> None:
    """A loss-scale collapse around a loss event is that event's fp16_overflow cause: keep it
    as a note and put it in the event's evidence."""
    events = [f for f in findings if f.kind in GROUPED_KINDS and ctx.roles.get(f.metric or "") == "loss"
              and f.severity != "info"]
    for col in findings:
        if col.kind != "loss_scale_collapse" or col.severity == "info" or col.start_step is None:
            continue
        m = _margin(col, ctx)
        lo, hi = col.start_step - m, (col.end_step if col.end_step is not None else col.start_step) + m
        for ev in events:
            a, b = _window(ev, ctx)
            if a <= hi and b >= lo:
                col.severity = "info"
                col.evidence["during"] = {"kind": ev.kind, "metric": ev.metric, "step": ev.anchor_step}
                col.message += f" (the fp16 overflow behind the {ev.kind} of {ev.metric} at step {ev.anchor_step})"
                ev.evidence["loss_scale_halvings"] = col.evidence.get("halvings")
                break


SETTING_DRIVES = ("nan", "divergence", "spike", "oscillation", "excursion", "plateau")
"""Loss events a wrong setting in force before them is taken to have driven."""


def setting_is_a_cause(findings: list[Finding], ctx: RunContext) -> None:
    """A wrong setting (an Adam LR of 5 on every row) and the loss event it drove are one root
    cause seen twice: the event is the alarm (what happened to the run), the setting is its
    cause, kept as a note that names the event and put in the event's evidence. A wrong
    setting with no loss event after it stays an alarm of its own."""
    events = sorted((f for f in findings if f.kind in SETTING_DRIVES and f.severity != "info"
                     and ctx.roles.get(f.metric or "") == "loss" and f.start_step is not None),
                    key=lambda f: (-SEVERITY_RANK[f.severity], f.start_step))
    for st in findings:
        if st.kind != "settings" or st.severity == "info" or st.start_step is None:
            continue
        ev = next((f for f in events if f.start_step >= st.start_step), None)
        if ev is None:
            continue
        st.evidence["drove"] = {"kind": ev.kind, "metric": ev.metric, "step": ev.anchor_step,
                                "severity": ev.severity}
        st.evidence["note_because"] = "drove_event"
        st.severity = "info"
        st.message += f"; it drove the {ev.kind} of {ev.metric} at step {ev.anchor_step}, reported there with it as the cause"
        ev.evidence["setting"] = {"metric": st.metric, "setting": st.evidence.get("setting"),
                                  "value": st.evidence.get("value")}

