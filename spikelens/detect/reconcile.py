"""One event, one finding: fold findings that describe the same event into the main one.

Detectors run independently, so the swings of an oscillation also look like spikes,
the blow-up before a NaN looks like a spike, and the jump back after repeated data
looks like a spike that never recovered. The contract wants each event reported once:
this folds the repeats on one metric; `grouping` then folds one event seen on several.
"""
from __future__ import annotations

import numpy as np

from .base import RunContext
from .grouping import group_events, setting_is_a_cause
from .significance import weigh
from .echoes import spikes_at_placed_relaunches
from .stayed import jumps_that_stayed
from .throughput import untrained_slowdowns
from ..model.finding import EVENT_KINDS, Finding
from .stats import first_and_last_thirds, global_sigma, median_interval


def reconcile(findings: list[Finding], ctx: RunContext) -> list[Finding]:
    # a NaN of a launch a later one replaced (`nonfinite`) is no event of the live timeline: kept as it is
    replaced = [f for f in findings if f.evidence.get("replaced_launch")]
    findings = [f for f in findings if not f.evidence.get("replaced_launch")]
    drop: set[int] = set()
    by_kind: dict[str, list[Finding]] = {}
    for f in findings:
        by_kind.setdefault(f.kind, []).append(f)

    def interval(metric: str | None) -> float:
        s = ctx.series.get(metric) if metric else None
        return median_interval(s.step) if s is not None else 1.0

    for osc in by_kind.get("oscillation", []):
        if osc.evidence.get("beside_train"):
            continue  # a note on an evaluation's noise: a spike of that eval loss stands on its own
        margin = max(10 * interval(osc.metric), 0.1 * ((osc.end_step or osc.start_step) - osc.start_step))
        folded = [f for f in by_kind.get("spike", []) if f.metric == osc.metric and f.peak_step is not None
                  and osc.start_step - margin <= f.peak_step <= (osc.end_step or f.peak_step) + margin
                  and not _beyond_the_swings(f, osc)
                  # (a loud spike inside a noiseless curve's oscillation, `oscillation.NOISELESS_SHARE`, stands on
                  # its own: such a curve has no swings but its jumps; the oscillation summarises, not explains them)
                  and not (osc.evidence.get("noiseless") and f.severity != "info")]
        for f in folded:
            drop.add(id(f))
        if folded:
            osc.evidence["spikes_inside"] = len(folded)

    for p in by_kind.get("plateau", []):
        # a loss that 'stopped improving' while something loud happened to it over the same steps (it swung,
        # ran away, re-saw its data): that event is what those steps did, told by its own finding; the note
        # would tell it again as a rest. A 'stopped' note stands only on a stretch where nothing else did
        # (a spike that came back is a blip on the level, not what the stretch did).
        if p.evidence.get("reading") == "stopped" and (any(
                f is not p and f.metric == p.metric and f.severity != "info" and f.start_step is not None
                and not (f.kind == "spike" and f.recovery != "none")
                and p.start_step - 10 * interval(p.metric) <= f.start_step <= (p.end_step or f.start_step)
                for f in findings) or _overfit_over(p, findings)):
            drop.add(id(p))

    for nan in by_kind.get("nan", []):
        margin = 10 * interval(nan.metric)
        lo = nan.evidence.get("blowup_start_step", nan.start_step)
        for f in by_kind.get("spike", []) + by_kind.get("divergence", []):
            if f.metric != nan.metric or f.evidence.get("before_nan"):
                continue  # (a stretch trained far above its level before the NaN: its own event, detect.prenan)
            anchor = f.peak_step if f.kind == "spike" else f.start_step
            if anchor is None:
                continue
            near = min(lo, nan.start_step) - margin <= anchor <= nan.start_step
            if f.kind == "divergence":
                s = ctx.series.get(nan.metric)
                span = (s.step[-1] - s.step[0]) if s is not None and len(s) else 0
                near = anchor >= nan.start_step - 0.1 * span
            if near and f.kind == "divergence" and _rose_from_the_start(f, nan, ctx):
                _note_before_nan(f, nan)
                continue
            if near:
                drop.add(id(f))
                nan.evidence.setdefault("folded", []).append(f"{f.kind} at step {anchor}")

    for div in by_kind.get("divergence", []):
        _fold_swing_into_runaway(div, by_kind.get("spike", []), ctx, drop)
    for gs in [f for f in by_kind.get("spike", []) if f.evidence.get("grad_spike")]:
        _grad_spike_out_of_outliers(gs, by_kind.get("grad_norm_outlier", []), drop)

    for rep in by_kind.get("repeated_data", []):
        margin = 10 * interval(rep.metric)
        for f in by_kind.get("spike", []) + by_kind.get("level_shift", []):
            near = [s for s in (f.anchor_step, f.start_step) if s is not None]  # the jump back starts the spike
            if rep.end_step is not None and f.metric == rep.metric and near \
                    and min(abs(s - rep.end_step) for s in near) <= margin:
                drop.add(id(f))
                rep.evidence.setdefault("folded", []).append(f"{f.kind} at step {f.anchor_step}")
    # a level shift inside another event is that event seen through a wide window
    for ls in by_kind.get("level_shift", []):
        margin = 20 * interval(ls.metric)
        for f in findings:
            if f is ls or f.kind not in _PRIMARY or f.start_step is None:
                continue
            if f.metric not in (ls.metric, None) and f.kind not in ("repeated_data",):
                continue
            hi = f.end_step if f.end_step is not None else max(f.start_step, f.peak_step or f.start_step)
            if f.kind in ("spike", "nan") and f.end_step is None:
                hi = float("inf")
            if f.start_step - margin <= ls.start_step <= hi + margin:
                drop.add(id(ls))
                break
    # after a loss ran away below zero nothing on it is training: its later swings are the runaway's
    # (and, when it is the run's total, those of every other term: the optimizer chases the runaway)
    main = ctx.main("loss")
    for div in by_kind.get("divergence", []):
        if not div.evidence.get("unbounded_below"):
            continue
        whole = main is not None and div.metric == main.metric
        for f in findings:
            on = f.metric == div.metric or (whole and ctx.roles.get(f.metric or "") == "loss")
            if whole and f is not div and f.kind == "divergence" and f.evidence.get("unbounded_below") \
                    and id(f) not in drop:
                drop.add(id(f))  # the term that ran away with the total: one event, on the total
                div.evidence.setdefault("also_on", []).append(
                    {"metric": f.metric, "kind": f.kind, "step": f.start_step, "severity": f.severity})
                div.message += f"; {f.metric} ran away with it from step {f.start_step}"
                continue
            if on and f.kind in RUNAWAY_FOLDS and (f.anchor_step or 0) >= div.start_step:
                drop.add(id(f))
                div.evidence.setdefault("folded", []).append(f"{f.kind} at step {f.anchor_step}")
    by_kind["plateau"] = _one_flat_reward_reading(by_kind.get("plateau", []), drop)
    for plateau in by_kind.get("plateau", []):
        _fold_frozen(plateau, by_kind.get("plateau", []), ctx, drop)
        _fold_into_never_learned(plateau, findings, ctx, drop)
        if id(plateau) not in drop:
            _fold_into_blowup(plateau, by_kind.get("spike", []), ctx, drop)
    # a slow excursion that another event of the same loss covers is that event, smoothed
    for ex in by_kind.get("excursion", []):
        if any(f.kind in EVENT_KINDS and f.metric == ex.metric and _overlaps(f, ex) for f in findings):
            drop.add(id(ex))
    teeth = by_kind.get("excursion", []) + [f for f in by_kind.get("spike", []) if f.recovery in ("fast", "slow")
                                            and not f.evidence.get("bad_batch") and not f.evidence.get("one_point")]
    findings = findings + _sawtooth(teeth, findings, ctx, drop)
    # what the curve is decides whether its event is an alarm (after grouping: the lead judged)
    findings = weigh(group_events([f for f in findings if id(f) not in drop], ctx), ctx)
    spikes_at_placed_relaunches(findings)  # a jump where a re-based relaunch starts is its echo
    untrained_slowdowns(findings, ctx)  # a rate with nothing of training beside it is no alarm
    findings += jumps_that_stayed(findings, ctx)  # after weighing: a loud jump that stayed names the divergence
    setting_is_a_cause(findings, ctx)  # after weighing: only an event that stayed loud takes the setting in
    _break_that_cost(findings, ctx)
    for f in findings + replaced:
        plain_numbers(f)
    return findings + replaced


def _grad_spike_out_of_outliers(spike: Finding, outliers: list[Finding], drop: set[int]) -> None:
    """The grad norm's one-step spikes are listed once, in the spike note: the outlier note keeps the
    other outliers (and is dropped when it held only those)."""
    steps = set(spike.evidence.get("steps", []))
    for o in outliers:
        if o.metric != spike.metric or id(o) in drop:
            continue
        listed = o.evidence.get("steps", [])
        left = [s for s in listed if s not in steps]
        if not left:
            drop.add(id(o))
            continue
        if len(left) < len(listed):
            o.evidence["steps"] = left
            o.evidence["count"] = max(int(o.evidence.get("count", len(listed))) - (len(listed) - len(left)), len(left))
            o.message += f"; the one-step spikes at {', '.join(str(s) for s in sorted(steps)[:5])} are noted apart"


ROSE_BEFORE_NAN = 5
"""Finite points a loss must have climbed from its first logged step before it went NaN for the climb to
be told beside the NaN: a run that never learned and rose from the start (an LR with no warm-up) is a
divergence of its own, its setup wrong from step one; a blow-up after a descent is the NaN's onset."""


def _rose_from_the_start(div: Finding, nan: Finding, ctx: RunContext) -> bool:
    """A divergence that began at the loss's first logged point and held `ROSE_BEFORE_NAN` finite
    points before the NaN."""
    s = ctx.series.get(div.metric) if div.metric else None
    if s is None or not len(s) or div.start_step is None or nan.start_step is None:
        return False
    step, _ = s.finite()
    if not step.size or div.start_step > step[0]:
        return False
    return int(np.count_nonzero((step >= div.start_step) & (step < nan.start_step))) >= ROSE_BEFORE_NAN


def _note_before_nan(div: Finding, nan: Finding) -> None:
    """The climb from the first step is told as a note beside the NaN, which keeps the alarm."""
    div.severity = "info"
    div.end_step = min(div.end_step if div.end_step is not None else nan.start_step, nan.start_step)
    div.evidence.update(before_nan=True, nan_step=nan.start_step, from_first_step=True)
    div.message += (f"; it rose from its first logged step and went non-finite at step {nan.start_step}: the setup "
                    f"was wrong from the start (the NaN finding holds the alarm)")
    nan.evidence.setdefault("preceded_by", []).append(f"divergence from step {div.start_step}")


BAD_BATCH_SWINGS = 10.0
"""A one-step jump (a bad batch) this many times the oscillation's typical swing (both in log) is not
one of its swings."""


def _one_flat_reward_reading(plateaus: list[Finding], drop: set[int]) -> list[Finding]:
    """A reward the plateau detector read as flat from its first point to its last is one finding:
    another detector's never-learned reading of the same reward (one that fell back to its start,
    `divergence`; one that barely rose or was never earned, `objective`) tells that plateau again.
    Those readings are dropped here (not by one detector calling another); the plateaus left."""
    flat = {p.metric for p in plateaus if p.evidence.get("reward_flat")}
    again = [p for p in plateaus if p.metric in flat and not p.evidence.get("reward_flat")
             and p.evidence.get("never_learned") and p.evidence.get("higher_is_better")]
    drop.update(id(p) for p in again)
    return [p for p in plateaus if p not in again]


def _overfit_over(p: Finding, findings: list[Finding]) -> bool:
    """Whether a loud overfitting finding (on any held-out metric) overlaps a 'stopped improving' note: a
    training loss that flattened while its held-out score turned is the overfitting's picture, told once."""
    return any(
        f.kind == "overfitting" and f.severity != "info" and f.start_step is not None
        and f.start_step <= (p.end_step if p.end_step is not None else f.start_step)
        and (f.end_step if f.end_step is not None else f.start_step) >= p.start_step
        for f in findings)


def _beyond_the_swings(spike: Finding, osc: Finding) -> bool:
    """A bad batch inside an oscillation is its own event when its jump dwarfs the oscillation's
    swings: a loss swinging 7% around its trend does not jump 33x for one step as one more swing; nor
    does it jump 75x in one logged step and stay up (a GAN loss at 1.0 reading 76 and then 5-8): a swing
    comes back, a jump that never did is no swing."""
    amp, ratio = osc.evidence.get("amplitude"), spike.magnitude
    one_step = spike.evidence.get("bad_batch") or (spike.recovery == "none" and spike.peak_step is not None
                                                   and spike.start_step == spike.peak_step)
    if not one_step or not isinstance(amp, float) or not ratio or ratio <= 1:
        return False
    return float(np.log(ratio)) > BAD_BATCH_SWINGS * amp


def _bad_batch_beyond_its_noise(spike: Finding, s) -> bool:
    """A one-step jump (a bad batch) whose size (log) is `BAD_BATCH_SWINGS` x the curve's own
    point-to-point noise is no part of a flat level's noise: a loss flat at 6.9 within 2% that reads
    66,000 for one step had a bad batch, whatever else the run did."""
    if spike.kind != "spike" or not spike.evidence.get("bad_batch") or not spike.magnitude or spike.magnitude <= 1:
        return False
    _, v = s.finite()
    if v.size < 3 or not (v > 0).all():
        return False
    return float(np.log(spike.magnitude)) > BAD_BATCH_SWINGS * global_sigma(np.log(v))


def plain_numbers(f: Finding) -> None:
    """A finding leaves the judge holding Python numbers, not NumPy scalars: a library user
    compares, serialises and prints its evidence as any dict (`json.dumps` refuses an
    `np.bool_` or an `np.float32`; repr prints `np.float64(2.1)`)."""
    f.evidence = _plain(f.evidence)
    f.extra = _plain(f.extra)
    if f.magnitude is not None:
        f.magnitude = float(f.magnitude)


def _plain(x):
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x


BREAK_MOVE = 5.0
"""An eval curve's move at a loss spike is the spike's cost when it is this many times the curve's
median move between evaluations (and most of its fall)."""


def _break_that_cost(findings: list[Finding], ctx: RunContext) -> None:
    """Overfitting is a slow rise of the held-out loss while training improves; a held-out curve
    that fell in one evaluation, at the step the training loss jumped, and did not come back is
    that jump's cost: one event, the spike, loud whatever its ratio (it cost progress), with the
    eval curve's fall in its evidence; the 'overfitting' that read it is folded into it."""
    main = ctx.main("loss")
    if main is None:
        return
    spikes = [f for f in findings if f.kind == "spike" and f.metric == main.metric and f.peak_step is not None]
    for over in [f for f in findings if f.kind == "overfitting" and f.severity != "info" and f.metric]:
        s = ctx.series.get(over.metric)
        if s is None or len(s) < 5:
            continue
        step, value = s.finite()
        worse = -np.diff(value) if ctx.roles.get(s.metric) in ("accuracy", "reward") else np.diff(value)
        if worse.size < 4:
            continue
        j = int(np.argmax(worse))
        typical = float(np.median(np.abs(worse)))
        best = over.start_step if over.start_step is not None else int(step[0])
        fall = float(worse[(step[1:] > best)].sum()) if (step[1:] > best).any() else 0.0
        if not worse[j] > BREAK_MOVE * typical or not worse[j] >= 0.5 * fall:
            continue
        at = int(step[j + 1])
        gap = max(int(step[j + 1] - step[j]), 1)
        spike = next((f for f in spikes if f.start_step is not None and f.start_step - gap <= at <= f.peak_step + gap),
                     None)
        if spike is None:
            continue
        over.severity = "info"
        over.evidence["note_because"] = "break_cost"
        over.message += f"; its fall came in one evaluation, at the jump of {main.metric} at step {spike.peak_step}: reported there"
        before, after = float(value[j]), float(value[j + 1])
        spike.evidence["cost"] = {"metric": s.metric, "step": at, "before": before, "after": after,
                                  "end": float(value[-1])}
        spike.message += (f"; it cost progress: {s.metric} went from {before:.4g} to {after:.4g} at step {at} "
                          f"and ended at {float(value[-1]):.4g}")
        if spike.severity == "info":
            spike.severity = "warning"
            spike.evidence.pop("note_because", None)


RUNAWAY_FOLDS = ("spike", "oscillation", "excursion", "level_shift", "plateau", "outliers", "repeated_data")
FOLDED_BY_NEVER_LEARNED = ("spike", "oscillation", "outliers", "excursion", "level_shift", "divergence")


def _fold_into_never_learned(plateau: Finding, findings: list[Finding], ctx: RunContext, drop: set[int]) -> None:
    """A run stuck at its first level from its first logged point to its last never
    learned: that is the finding; the spikes, swings and outliers inside the plateau are
    its noise, and a grad norm that was never finite is its likely cause, not alarms of
    their own; the verdict leads with it."""
    s = ctx.series.get(plateau.metric) if plateau.metric else None
    # (a loss frozen at one exact value from its first point never learned either: nothing was updated)
    if s is None or not len(s) or plateau.evidence.get("reading") not in ("chance", "never", "zero", "frozen") \
            or plateau.evidence.get("constant_term"):
        return  # (a loss frozen while the others moved is a constant the logger prints: the run was updated)
    first, last = int(s.step[0]), int(s.step[-1])
    span = max(last - first, 1)
    if first > 0.05 * max(last, 1) and first >= 100:
        return  # a log that starts late (a continuation): stuck now, not 'never learned'
    rose = _other_score_rose(ctx, plateau.metric) if plateau.evidence.get("held_out") else None
    if rose and plateau.severity != "info":  # (a GAN's steganalysis accuracy at chance while its PSNR rose)
        plateau.severity = "info"
        plateau.evidence["note_because"] = "other_score_rose"
        plateau.evidence.pop("never_learned", None)
        for claim in (": the model never learned", ": the model is not learning"):  # (the other score says otherwise)
            plateau.message = plateau.message.replace(claim, "")
        plateau.message += (f"; {rose[0]} rose {rose[1]:.0f}% over the run: the model learned, and this score is "
                            f"the one that did not show it (or an adversary it was meant to fool)")
        return
    if plateau.evidence.get("held_out") and plateau.severity == "info":
        fell = _eval_loss_fell(ctx)
        if fell:  # one held-out score stuck while the run's eval loss fell: that score's story, not the run's
            plateau.message += (f"; {fell[0]} fell {fell[1]:.0f}% over the run: the model learned, and this "
                                f"score is the one that did not show it")
            return
    if plateau.start_step is None or plateau.start_step - first > 0.05 * span \
            or (plateau.end_step is not None and last - plateau.end_step > 0.05 * span):
        return
    plateau.evidence["never_learned"] = True
    folded = []
    for f in findings:
        if f is plateau or id(f) in drop or f.evidence.get("from_first_step") or f.evidence.get("sank"):
            continue  # (a blow-up at the first step is what put the loss at that level: its cause, kept; a
            # reward that sank far below anything it had shown is an event of its own, not noise inside it)
        if f.kind in FOLDED_BY_NEVER_LEARNED and (f.metric == plateau.metric or _held_out_noise(f, plateau, ctx)):
            if plateau.severity == "info" and f.severity != "info":
                continue  # a note leads nothing: an alarm folded into it would vanish from the report
            if f.metric == plateau.metric and _bad_batch_beyond_its_noise(f, s):
                f.severity = "info"  # a bad batch in a run that never learned: listed, the plateau leads
                f.evidence["inside_never_learned"] = True
                f.message += "; inside the stretch where the run never learned (that is the finding that leads)"
                continue
            drop.add(id(f))
            folded.append(f"{f.kind} at step {f.anchor_step}")
        elif f.kind == "nan" and ctx.roles.get(f.metric or "") == "grad_norm" \
                and f.evidence.get("first_nonfinite_step") is not None \
                and f.evidence["first_nonfinite_step"] - first <= 0.05 * span:
            drop.add(id(f))
            bad, n = f.evidence.get("nonfinite_points"), f.evidence.get("points")
            plateau.evidence["grad_norm_nonfinite"] = {"metric": f.metric, "points": bad, "of": n}
            plateau.message += (f"; {f.metric} was non-finite on {bad} of its {n} logged steps from the first: "
                                f"no update reached the weights (overflowing fp16 gradients, a loss detached "
                                f"from the model, or every step skipped)")
    if folded:
        plateau.evidence["folded"] = folded
        plateau.message += f"; {len(folded)} smaller event{'s' if len(folded) > 1 else ''} inside it folded in"


EVAL_FELL = 0.1
"""An eval loss whose last third sits this share below its first third fell: the model learned."""


def _eval_loss_fell(ctx: RunContext) -> tuple[str, float] | None:
    """An eval loss of the run (five evaluations or more) whose last third's median sits `EVAL_FELL`
    or more below its first third's, as (its name, the fall in percent); None otherwise."""
    for m, s in ctx.series.items():
        if ctx.roles.get(m) != "eval_loss" or (ends := _first_and_last_thirds(s)) is None:
            continue
        a, b = ends
        if a > 0 and b <= (1 - EVAL_FELL) * a:
            return m, 100 * (1 - b / a)
    return None


def _first_and_last_thirds(s) -> tuple[float, float] | None:
    """Medians of a held-out curve's first and last thirds (five evaluations or more: fewer say
    nothing about a trend); None for a shorter curve."""
    v = s.finite()[1]
    return first_and_last_thirds(v) if v.size >= 5 else None


def _other_score_rose(ctx: RunContext, but: str | None) -> tuple[str, float] | None:
    """Another higher-is-better held-out score of the run (five evaluations or more) whose last
    third's median sits `EVAL_FELL` or more above its first third's (the eval-loss bar, turned), as
    (its name, the rise in percent); None otherwise."""
    from . import scores

    for m, s in ctx.series.items():
        if m == but or ctx.roles.get(m) != "accuracy" or scores.direction(s) <= 0 \
                or (ends := _first_and_last_thirds(s)) is None:
            continue
        a, b = ends
        if a > 0 and b >= (1 + EVAL_FELL) * a:
            return m, 100 * (b / a - 1)
    return None


def _fold_swing_into_runaway(div: Finding, spikes: list[Finding], ctx: RunContext, drop: set[int]) -> None:
    """A spike of a loss at the onset of a runaway of the same loss (ending where it begins, or
    starting within a few logged steps of its start) is the runaway's first swing, as the blow-up before a NaN is the NaN's: one event, the divergence, with the swing in
    its evidence (an encoder loss that leapt 1000x, came back, and ran away from there)."""
    if div.start_step is None or div.metric is None:
        return
    s = ctx.series.get(div.metric)
    if s is None or not len(s):
        return
    margin = 10 * median_interval(s.step)  # as for the blow-up before a NaN
    swings = []
    for f in spikes:
        if f.metric != div.metric or id(f) in drop or f.start_step is None or f.start_step > div.start_step + margin:
            continue
        listed = f.evidence.get("steps")  # spikes listed step by step: one of them must be at the onset
        if listed and not any(abs(x - div.start_step) <= margin for x in listed):
            continue
        end = f.end_step if f.end_step is not None else float("inf")  # one that never came back runs on into it
        if f.end_step is None and _fell_back_before(f, div):
            _came_down_before(f, div)  # two events: the spike, then the turn
            continue
        if end >= div.start_step - margin:
            drop.add(id(f))
            div.evidence.setdefault("folded", []).append(f"{f.kind} at step {f.anchor_step}")
            swings.append(f)
    if swings:
        top = max(swings, key=lambda f: f.magnitude or 0.0)
        size = f" of {top.magnitude:.4g}x" if top.magnitude else ""
        div.message += f"; the spike{size} at step {top.anchor_step} was its first swing"


def _fell_back_before(spike: Finding, div: Finding) -> bool:
    """Whether a spike that 'never came back' (inside its narrow band) had come most of the way down
    (under half its jump, in log) by the point where the divergence's trend turned: a GAN loss at 1.0
    that read 76, came down to 1.7 and crept up from there to 5 over the rest of the run spiked and,
    later, diverged; one that stepped up and climbed on from there diverged once."""
    base, peak, turn = (spike.evidence.get("baseline"), spike.evidence.get("peak_value"),
                        div.evidence.get("turn_value"))
    if not all(isinstance(x, (int, float)) and x > 0 for x in (base, peak, turn)) or peak <= base \
            or div.start_step is None or spike.peak_step is None or div.start_step <= spike.peak_step:
        return False
    return float(np.log(turn / base)) < 0.5 * float(np.log(peak / base))


def _came_down_before(spike: Finding, div: Finding) -> None:
    """A spike that came most of the way down before a later divergence turned (`_fell_back_before`)
    recovered slowly; its 'never came back' (its level at the end) is the divergence's rise."""
    spike.recovery, spike.end_step = "slow", div.start_step
    spike.evidence["recovery_steps"] = div.start_step - (spike.peak_step or div.start_step)
    if spike.severity == "error":
        spike.severity = "warning"
    spike.evidence["came_down_to"] = {"value": div.evidence.get("turn_value"), "step": div.start_step}
    spike.message = spike.message.split(" and never came back")[0] + (
        f" and came most of the way down, to {div.evidence['turn_value']:.4g} by step {div.start_step}, where "
        f"the loss's trend turned up again (the divergence from there is its own finding)")


def _fold_frozen(plateau: Finding, plateaus: list[Finding], ctx: RunContext, drop: set[int]) -> None:
    """A curve that never learned (a reward that never rose, a loss stuck where it started or at
    chance, a score that never rose above zero) and a curve frozen at one exact value over the same
    steps are one event, a run that never learned: the never-learned plateau is the finding (what
    the run is judged by) and the frozen curve its evidence, one alarm rather than one per metric.
    A frozen loss beside a reward is the likely cause (nothing was being updated), so its message
    says why; a frozen score beside a stuck loss or on the same score is the same symptom."""
    ev = plateau.evidence
    role = ctx.roles.get(plateau.metric or "")
    never = ev.get("reading") == "never" and (ev.get("higher_is_better") or role == "loss")
    if id(plateau) in drop or plateau.start_step is None or not (never or (ev.get("reading") == "chance"
                                                                          and role == "loss")):
        return
    hi = plateau.end_step if plateau.end_step is not None else plateau.start_step
    for f in plateaus:
        fev = f.evidence
        if f is plateau or id(f) in drop or fev.get("reading") != "frozen" or f.start_step is None:
            continue
        if f.metric == plateau.metric and f.severity == "info" and fev.get("other_score_moved"):
            # the same score at zero while another score of the run rose: one class never right, not the
            # model; the frozen reading knows it and stays as the note, the plateau takes its severity
            plateau.severity = "info"
            ev["other_score_moved"] = fev["other_score_moved"]
            plateau.message += f"; {fev['other_score_moved']} rose meanwhile: one class or part never right, not the model"
            continue
        cause = role == "reward"  # a frozen curve beside a reward: nothing was updated
        if not cause and not fev.get("higher_is_better"):
            continue  # a frozen loss beside a stuck loss or score is its own finding
        f_end = f.end_step if f.end_step is not None else f.start_step
        # a cause spans most of what it explains; a symptom lies mostly inside the event
        span = hi - plateau.start_step if cause else f_end - f.start_step
        if min(hi, f_end) - max(plateau.start_step, f.start_step) < 0.5 * max(span, 1):
            continue  # frozen over another stretch: its own finding
        drop.add(id(f))
        ev.setdefault("folded", []).append(f"{f.kind} at step {f.anchor_step}")
        ev["frozen"] = {"metric": f.metric, "level": fev.get("level"), "start_step": f.start_step}
        level = fev.get("level")
        at = f" {level:.6g}" if isinstance(level, (int, float)) else " one value"
        if f.metric == plateau.metric:
            plateau.message += f"; it was exactly{at} at every evaluation"
        else:
            plateau.message += (f"; {f.metric} was exactly{at} over the same steps"
                                + (": nothing was being updated, which is why" if cause else ""))


def _held_out_noise(f: Finding, plateau: Finding, ctx: RunContext) -> bool:
    """A swing or spike of a held-out curve (an eval loss, an accuracy) inside a run that never
    learned: the model it measures learned nothing, so its moves are the evaluation's noise."""
    if f.kind not in ("oscillation", "spike", "excursion") or ctx.roles.get(f.metric or "") not in (
            "eval_loss", "accuracy") or f.start_step is None:
        return False
    hi = plateau.end_step if plateau.end_step is not None else f.start_step
    return plateau.start_step <= f.start_step <= hi


def _fold_into_blowup(plateau: Finding, spikes: list[Finding], ctx: RunContext, drop: set[int]) -> None:
    """A loss that jumped and never came back, then sat flat from right after the jump: the flat
    stretch is the level the spike settled on (often chance, after an LR far too high), one event:
    the spike carries it, the plateau stays as a note that points at the spike."""
    if plateau.start_step is None or plateau.evidence.get("never_learned"):
        return
    s = ctx.series.get(plateau.metric) if plateau.metric else None
    if s is None or not len(s):
        return
    margin = max(5 * median_interval(s.step), 0.05 * float(s.step[-1] - s.step[0]))
    for f in spikes:
        if f.metric != plateau.metric or f.recovery != "none" or f.peak_step is None or id(f) in drop:
            continue
        if f.peak_step <= plateau.start_step <= f.peak_step + margin:
            ev = plateau.evidence
            if plateau.severity != "info":
                plateau.severity = "info"
                ev["note_because"] = "settled_level"
                plateau.message += f"; the level the spike at step {f.peak_step} settled on, reported with it"
            k = ev.get("chance_classes")
            at = f" (ln {k}, chance level)" if k and ev.get("reading") == "chance" else ""
            level = ev.get("level")
            f.evidence["settled_plateau"] = {"start_step": plateau.start_step, "end_step": plateau.end_step,
                                             "level": level, "reading": ev.get("reading"), "chance_classes": k}
            where = f"{level:.4g}" if isinstance(level, (int, float)) else "one level"
            f.message += f"; it sat at {where}{at} from step {plateau.start_step} to the end"
            return


def _overlaps(f: Finding, ex: Finding) -> bool:
    span = f.span()
    return (span is not None and ex.start_step is not None and ex.end_step is not None
            and span[0] <= ex.end_step and span[1] >= ex.start_step)


_PRIMARY = ("spike", "nan", "divergence", "oscillation", "repeated_data", "resume_overlap", "step_reset")


SAWTOOTH_CYCLES = 3
SAWTOOTH_SPIKE_CYCLES = 4
SAWTOOTH_JITTER = 0.15
"""Excursions of one loss at this many starts or more (recovered spikes among them: 4), their
spacing within this share of its mean, are one periodic oscillation."""
SAWTOOTH_STOPPED = 2
"""A sawtooth with room for this many more cycles after its last one, none of which came, ended
with a phase of the schedule: the data order would have gone on repeating."""


def _sawtooth(excursions: list[Finding], findings: list[Finding], ctx: RunContext, drop: set[int]) -> list[Finding]:
    """A loss that climbs and falls back at a fixed period (every epoch of an unshuffled data
    order) is one oscillation with its period, not an excursion or a spike per cycle; a 'data
    restart' read off its first teeth is the same pattern."""
    by_metric: dict[str, list[Finding]] = {}
    for ex in excursions:
        if id(ex) not in drop and ex.start_step is not None and ex.end_step is not None:
            by_metric.setdefault(ex.metric or "", []).append(ex)
    out = []
    for metric, xs in by_metric.items():
        need = SAWTOOTH_SPIKE_CYCLES if any(f.kind == "spike" for f in xs) else SAWTOOTH_CYCLES
        if len(xs) < need:
            continue
        xs.sort(key=lambda f: f.start_step)
        gaps = np.diff([f.start_step for f in xs]).astype(float)
        if gaps.min() <= 0 or gaps.std() > SAWTOOTH_JITTER * gaps.mean():
            continue
        period = float(np.median(gaps))
        a, b = xs[0].start_step, max(f.end_step for f in xs)
        drop.update(id(f) for f in xs)
        folded = [f for f in findings if f.kind == "repeated_data" and f.metric == metric and f.start_step is not None
                  and a - 2 * period <= f.start_step <= b]
        drop.update(id(f) for f in folded)
        top = max(f.magnitude or 1.0 for f in xs)
        s = ctx.series.get(metric)
        last = int(s.step[-1]) if s is not None and len(s) else int(b)
        missing = int((last - b) // period)  # cycles that would have fit after the last one
        message = (f"{metric} climbs and falls back every {period:g} steps ({len(xs)} cycles from step {a} to {b}, "
                   f"up to {top:.2f}x its trend): a sawtooth at a fixed period, the mark of an unshuffled data "
                   f"order (the same hard batches at the same place in every epoch) or a periodic hook")
        restarts = _lr_restarts_at(ctx, [int(f.start_step) for f in xs], period)
        if missing >= SAWTOOTH_STOPPED:
            message += (f"; it stopped at step {b} while the run went on to step {last} (room for {missing} more "
                        f"cycles): a phase of the schedule (a reset every {period:g} steps while it lasted), not the "
                        f"data order, which repeats every epoch to the end; a note")
        elif restarts:
            message += (f"; {restarts} jumped back up at the start of every cycle: warm restarts of the schedule "
                        f"(SGDR, a cyclic LR), each costing a climb by design; a note")
        out.append(Finding(
            kind="oscillation", code="SL203", run=ctx.run, metric=metric,
            severity="info" if missing >= SAWTOOTH_STOPPED or restarts else "warning", message=message,
            start_step=int(a), end_step=int(b), magnitude=float(top),
            evidence={"periodic": True, "period_steps": period, "cycles": len(xs),
                      "cycle_starts": [int(f.start_step) for f in xs], "cycles_missing_after": missing,
                      "folded": [f"{f.kind} at step {f.anchor_step}" for f in folded],
                      **({"note_because": "schedule_phase"} if missing >= SAWTOOTH_STOPPED else {})}))
    return out


LR_RESTART = 2.0
"""A logged learning rate that rose this many times over its previous value restarted its schedule."""


def _lr_restarts_at(ctx: RunContext, starts: list[int], period: float) -> str | None:
    """The learning rate's name when it jumped back up (`LR_RESTART` x) within a tenth of a period
    before each of the cycle starts: the sawtooth is the schedule's warm restarts."""
    lr = ctx.main("lr")
    if lr is None:
        return None
    step, value = lr.finite()
    if step.size < 3:
        return None
    ups = step[1:][(value[1:] > 0) & (value[1:] >= LR_RESTART * value[:-1])]  # (from 0 at a cycle's end too)
    if ups.size == 0:
        return None
    near = [bool(np.any(np.abs(ups - a) <= max(0.1 * period, 1))) for a in starts]
    return lr.metric if all(near) else None
