"""What every human-facing report leads with: one verdict per run and the summary
numbers (steps, points, final loss, counts by kind), computed once so the terminal,
markdown and HTML reports agree word for word.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any

from ..model.finding import SEVERITY_RANK, Finding
from ..coverage import guessed, has_loss
from ..model.report import LOSS_LIKE, RunReport

RESUME_KINDS = ("resume_overlap", "step_reset", "repeated_data", "step_gap", "wallclock_gap")
_RESUME_WORDS = {
    "resume_overlap": "resumed with rollback",
    "step_reset": "step counter reset",
    "repeated_data": "repeated data after resume",
    "step_gap": "step gap",
    "wallclock_gap": "wall-clock gap",
}


_OTHER_WORDS = {
    "excursion": "slow excursion",
    "overfitting": "overfitting after the eval minimum",
    "loss_scale_collapse": "loss scale collapsed",
    "lr_discontinuity": "learning rate jumped",
    "grad_norm_outlier": "gradient-norm outliers",
    "plateau": "plateau",
    "sudden_drop": "sudden drop",
    "throughput_drop": "throughput dropped",
    "step_time_rise": "step time rose",
    "stall": "stalled",
    "memory_growth": "memory grew",
    "rank_outlier": "one rank off the others",
}
"""Verdict words of the kinds that need attention only when a detector says so (not info)."""


def _step(f: Finding) -> str:
    s = f.anchor_step if f.kind not in ("nan", "divergence", "oscillation") else f.start_step
    return "?" if s is None else str(s)


def _where(f: Finding, run: RunReport) -> str:
    """' in METRIC' unless the metric is the run's main loss."""
    main = run.stats.get("main_metric")
    return "" if f.metric is None or f.metric == main else f" in {f.metric}"


def _steps_text(fs: list[Finding]) -> str:
    """'step 40', 'steps 40, 90', 'step 40 (3 times)': each step once, the first three."""
    counts = Counter(_step(f) for f in fs)
    named = [f"{s} ({n} times)" if n > 1 else s for s, n in list(counts.items())[:3]]
    more = f" and {len(counts) - 3} more" if len(counts) > 3 else ""
    return f"step{'s' if len(counts) > 1 else ''} {', '.join(named)}{more}"


def _order(f: Finding) -> int:
    s = f.start_step if f.start_step is not None else f.anchor_step
    return -1 if s is None else int(s)


def _first(fs: list[Finding], run: RunReport) -> Finding:
    """The finding a verdict names: on the run's main loss if there is one, else on
    another training loss, else an eval loss, else anything; the earliest of those."""
    main = run.stats.get("main_metric")
    rank = {"loss": 1, "eval_loss": 2}

    def key(f: Finding):
        prio = 0 if f.metric == main and main is not None else rank.get(run.metrics.get(f.metric or ""), 3)
        return (prio, _order(f))

    return min(fs, key=key)


_TOP = SEVERITY_RANK["error"] + 1
"""Never learned and what ended or ruined the run lead the verdict, whatever their severity."""


def verdict(run: RunReport) -> str:
    """'never learned: ...', 'diverged at step 5540', 'NaN at step 3610', '2 spikes, both
    recovered fast', 'clean'. What cost the run most comes first: a run that never learned,
    then what ended or ruined it (NaN, a crash, a divergence, a spike it never came back
    from, in the order they happened), then a setting that is wrong, then the events it
    recovered from; notes (a one-point blip, a relaunch) after everything that needs
    attention; never 'clean' beside a finding that needs attention."""
    fs = run.findings
    by: dict[str, list[Finding]] = {}
    for f in fs:
        if _told(f):
            by.setdefault(f.kind, []).append(f)
    said: set[int] = set()

    def say(hits: list[Finding]) -> None:
        said.update(id(f) for f in hits)

    ruined = any(f.severity != "info" and (f.kind in ("nan", "divergence") or (f.kind == "ended_early" and
                 f.severity == "error") or (f.kind == "spike" and f.recovery == "none")) for f in fs)
    # a never-learned note (a held-out score that never rose) leads only when nothing ruined the run:
    # beside a NaN or a divergence it is their consequence, told on its card
    learned_not = [f for f in by.get("plateau", []) if f.severity != "info" or not ruined]
    # earlier runs appended to the log that never learned are how the log got here, not the run judged:
    # one clause beside the appended runs, however many there were
    earlier = _earlier_never_learned([f for f in learned_not if f.evidence.get("session") and (
        f.evidence.get("never_learned") or f.evidence.get("higher_is_better"))])  # (a score that stalled learned)
    learned_not = [f for f in learned_not if not f.evidence.get("session")]
    parts: list[tuple[int, str]] = [(_TOP, t) for t in _never_learned(learned_not, run)]
    never = bool(parts)

    def add(text: str, hits: list[Finding]) -> None:
        parts.append((max((SEVERITY_RANK[f.severity] for f in hits), default=0), text))

    say([f for f in by.get("plateau", []) if f.evidence.get("never_learned") or f.evidence.get("higher_is_better")])
    fatal: list[tuple[int, str]] = []
    nans = [f for f in by.get("nan", []) if f.severity != "info"]  # info: a skipped fp16 step
    if nans:
        f = _first(nans, run)
        from_start = "first_nonfinite_step" in f.evidence and "last_finite" not in f.evidence \
            and "blowup_start_step" not in f.evidence  # never finite: a setup bug, not an instability
        fatal.append((_order(f), f"NaN{_where(f, run)} from the first logged step ({_step(f)})" if from_start
                      else f"NaN{_where(f, run)} at step {_step(f)}"))
        say(nans)
    crashed = [f for f in by.get("ended_early", []) if f.severity == "error"]
    if crashed:  # a crash is the first thing the owner needs to know, after what led to it
        f = crashed[0]
        fatal.append((_order(f) if nans else -2, "crashed before logging any value" if f.evidence.get("values_logged") == 0
                      else f"crashed after step {f.start_step}"))
        say(crashed)
    stopped = [f for f in by.get("ended_early", []) if f.severity == "warning"]
    if "divergence" in by:
        f = _first(by["divergence"], run)
        cut = f.evidence.get("lr_cut_step")
        if f.severity != "error" and cut is not None and f.magnitude:
            fatal.append((_order(f), f"crept up {f.magnitude:.2f}x{_where(f, run)} from step {_step(f)} until "
                                     f"the LR cut at step {cut}"))
        else:  # a reward or a score falls: it collapsed
            word = "collapsed" if f.evidence.get("higher_is_better") else "diverged"
            fatal.append((_order(f), f"{word}{_where(f, run)} at step {_step(f)}"))
        say(by["divergence"])
    spikes = by.get("spike", [])
    stuck = [f for f in spikes if f.recovery == "none" and f.severity != "info"]
    if stuck:
        f = stuck[0]
        settled = f.evidence.get("settled_plateau") or {}
        chance = " (stuck at chance level)" if settled.get("reading") == "chance" else ""
        fatal.append((_order(f), f"spike at step {_step(f)} never recovered{chance}" if len(stuck) == 1 else
                      f"{len(stuck)} spikes never recovered (first at step {_step(f)}){chance}"))
        say(stuck)
    parts += [(_TOP, text) for _, text in sorted(fatal, key=lambda t: t[0])]
    for f in stopped:  # interrupted (Ctrl-C, a time limit): what the owner did, said as such
        add(f"interrupted after step {f.start_step}", [f])
    say(stopped)
    settings = [f for f in by.get("settings", []) if f.severity != "info" or f.evidence.get("drove")]
    for f in settings:  # one that drove an event is said with that event's weight: it is why
        text = (f"{f.evidence.get('setting', 'setting')} {number(f.evidence.get('value'))}"
                f"{' on every row' if f.evidence.get('rows') == f.evidence.get('of') else ''}")
        drove = f.evidence.get("drove")
        if drove:
            parts.append((SEVERITY_RANK.get(drove.get("severity"), 0), text))
        else:
            add(text, [f])
    say(settings)
    swings = [f for f in by.get("oscillation", []) if f.severity != "info"]  # a note's swings are its card's
    say(by.get("oscillation", []))
    if swings:
        f = _first(swings, run)
        end = f"–{f.end_step}" if f.end_step is not None else " onwards"
        add(f"oscillating{_where(f, run)} over steps {f.start_step}{end}", swings)
    shifts = [f for f in by.get("level_shift", []) if f.severity != "info" or not _where(f, run)]
    say(by.get("level_shift", []))  # a term's level shift is its card's note, not the run's verdict
    if shifts:
        by["level_shift"] = shifts
        f = shifts[0]
        add(f"level shift{_where(f, run)} at step {_step(f)}", by["level_shift"])
        say(by["level_shift"])
    back = [f for f in spikes if f.recovery != "none"]
    jumps = [f for f in back if f.evidence.get("bad_batch")]
    blips = [f for f in back if f.evidence.get("one_point") and not f.evidence.get("bad_batch")]
    back = [f for f in back if not f.evidence.get("one_point") and f.severity != "info"]  # a wander is a note
    for f in sorted(jumps, key=_order):
        add(_jumps(f, run), [f])
    if back:
        add(_recovered(back), back)
    if blips and not never:  # beside 'never learned' a blip that came back is filler
        add(f"1 one-point spike at step {_step(blips[0])}, back at the next point" if len(blips) == 1
            else f"{len(blips)} one-point spikes, each back at the next point", blips)
    say(spikes)
    before_resumes = len(parts)
    for kind in RESUME_KINDS:
        hits = by.get(kind, [])
        say(hits)
        if kind == "step_reset":
            appended = [f for f in hits if f.evidence.get("appended_runs")]
            hits = [f for f in hits if not f.evidence.get("appended_runs") and not f.evidence.get("killed_early")]
            for f in appended:
                add(f"{f.evidence['appended_runs']} runs appended to one log (each from step "
                    f"{f.extra.get('resume_step', _step(f))}; the last one is judged)", [f])
                if earlier:
                    add(earlier, [f])
                    earlier = ""
        if kind == "repeated_data":  # a log holding a run twice, or each step twice: said as such
            for f in [f for f in hits if f.evidence.get("replay")]:
                add(f"launch{'es' if len(f.evidence['replayed_launches']) > 1 else ''} "
                    f"{', '.join(str(n) for n in f.evidence['replayed_launches'])} replayed an earlier run "
                    f"value for value", [f])
            twice = [f for f in hits if f.evidence.get("written_twice")]
            if twice:
                add("each step written twice (two writers on one log)", twice)
            stale = [f for f in hits if f.evidence.get("printed_twice")]
            if stale:
                add(f"{stale[0].evidence['main_metric']} printed twice per value (a stale value)", stale)
            hits = [f for f in hits if not any(f.evidence.get(k) for k in ("replay", "written_twice", "printed_twice"))]
        if kind == "resume_overlap":
            hits = [f for f in hits if not f.evidence.get("appended_runs")]  # the step_reset says it
            scratch = [f for f in hits if f.evidence.get("from_scratch")]
            hits = [f for f in hits if not f.evidence.get("from_scratch")]
            if scratch:
                n = sum(int(f.evidence.get("restarts", 1)) for f in scratch)
                times = f" {n} times" if n > 1 else ""
                add(f"restarted from the beginning{times} (step {_step(scratch[0])})", scratch)
        if hits:
            add(f"{_RESUME_WORDS[kind]} at {_steps_text(hits)}", hits)
    if earlier:
        parts.append((0, earlier))
    counted = next((f for f in fs if f.evidence.get("empty_launches")), None)
    if counted is not None and len(parts) > before_resumes:  # alone, launches that logged nothing are a note
        add(f"{len(counted.evidence['empty_launches'])} of {counted.evidence.get('launch_count')} "
            f"launches logged nothing", [counted])
    for kind, words in _OTHER_WORDS.items():
        hits = [f for f in by.get(kind, []) if f.severity != "info" and id(f) not in said]
        frozen = [f for f in hits if kind == "plateau" and f.evidence.get("reading") == "frozen"]
        for f in frozen:  # the same value on every point: 'frozen', not a plateau to wait out
            add(f"{f.metric} frozen at {number(f.evidence.get('level'))} from step {f.start_step}", [f])
        hits = [f for f in hits if all(f is not z for z in frozen)]
        say(frozen)
        if hits:
            f = _first(hits, run)
            more = f" (+{len(hits) - 1} more)" if len(hits) > 1 else ""
            add(f"{words}{_where(f, run) if kind in ('plateau', 'sudden_drop', 'excursion') else ''} "
                f"at step {_step(f)}{more}", hits)
            say(hits)
    others = [f for f in fs if id(f) not in said and f.severity != "info"]
    if others:  # never 'clean' beside a warning: whatever needs attention is named
        kinds = sorted({f.kind for f in others})
        add(f"{len(others)} other finding{'s' if len(others) > 1 else ''} ({', '.join(kinds)})", others)
    if parts:  # what needs attention before the notes, each group in the order above
        return "; ".join(text for _, text in sorted(parts, key=lambda t: -t[0]))
    if not has_loss(run):  # nothing was judged: not "clean"
        return "no loss-like metric read: not checked"
    shape = next(iter(guessed(run).items()), None)
    if shape and run.metrics.get(shape[0]) == "other":  # a curve with no trend: only its NaN and ending judged
        return f"{shape[0]!r} has no steady trend: checked for non-finite values and how the run ended only"
    notes = sum(1 for f in fs if f.severity == "info")
    by = f", judged by {shape[0]!r} read as a {run.metrics[shape[0]]} from its trend" if shape else ""
    return "clean" + (f" ({notes} note{'s' if notes > 1 else ''}{by})" if notes else f" ({by[2:]})" if by else "")


SHOWN_NOTES = ("relaunch", "drove_event")
"""Why-notes (`evidence.note_because`) the verdict still names: a relaunch is how the run went; a
setting that drove an event is that event's cause."""


def _told(f: Finding) -> bool:
    """Is the finding the verdict's business? Not a note that significance or reconcile demoted
    (a term's event the main loss did not feel, an echo reported on the main loss, a wander under
    2x, repeated data with no relaunch): the card lists it, the verdict is about the run."""
    why = f.evidence.get("note_because")
    return f.severity != "info" or why is None or why in SHOWN_NOTES


def _never_learned(plateaus: list[Finding], run: RunReport | None, appended_note: bool = True) -> list[str]:
    """'never learned: loss at 0.6934 (ln 2, chance for 2 classes) over steps 10–2900' for a
    run stuck from its first logged point; 'never learned: env/reward never rose (...)'."""
    # one clause per reading: the metrics it holds for over the same steps together, and one metric
    # stuck at one level in several appended runs once, with their spans
    said: dict[tuple[str, str], list[str]] = {}
    appended = False
    for f in plateaus:
        ev = f.evidence
        span = f"{f.start_step}–{f.end_step}"
        if ev.get("higher_is_better"):
            how = f"never rose ({number(ev.get('level'))} over steps {{}})"
        elif ev.get("never_learned"):
            k = ev.get("chance_classes")
            at = f" (ln {k}, chance level)" if k else ""
            how = f"stayed at {number(ev.get('level'))}{at} over steps {{}}"
        else:
            continue
        said.setdefault((f.metric or "?", how), []).append(span)
        appended = appended or bool(ev.get("session"))
    joined: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (metric, how), spans in said.items():
        joined.setdefault((how, tuple(spans)), []).append(metric)
    out = []
    for (how, spans), metrics in joined.items():
        shown = list(dict.fromkeys(spans))
        where = spans[0] if len(spans) == 1 else f"{', '.join(shown[:3])}{' and more' if len(shown) > 3 else ''}" \
            + (f" (in {len(spans)} runs appended to one log)" if appended and appended_note else "")
        out.append(f"never learned: {', '.join(metrics)} {how.format(where)}")
    return out


def _earlier_never_learned(plateaus: list[Finding]) -> str:
    """'never learned in 12 of the 56 runs appended to this log (val_acc, val_F1; steps 1–10)': one
    clause for every earlier appended run that never learned, whatever their levels; where they all
    tell one story it is told ('...: train_loss stayed at 1.386 (ln 4, chance level) over steps 0–11')."""
    if not plateaus:
        return ""
    sessions = [f.evidence["session"] for f in plateaus]
    runs = {s.get("index") for s in sessions}
    of = max((s.get("of") or 0 for s in sessions), default=0)
    among = f" of the {of} runs appended to this log" if of else " earlier runs appended to this log"
    lo = min(f.start_step for f in plateaus if f.start_step is not None) \
        if any(f.start_step is not None for f in plateaus) else None
    hi = max(f.end_step for f in plateaus if f.end_step is not None) \
        if any(f.end_step is not None for f in plateaus) else None
    steps = f"{lo}–{hi}" if lo is not None and hi is not None else None
    told = _never_learned(plateaus, None, appended_note=False)
    if len(told) == 1 and steps:  # one metric, one reading: say it
        return f"never learned in {len(runs)}{among}: {told[0].removeprefix('never learned: ')}"
    metrics = list(dict.fromkeys(f.metric or "?" for f in plateaus))
    return (f"never learned in {len(runs)}{among} ({', '.join(metrics[:3])}"
            f"{f' and {len(metrics) - 3} more' if len(metrics) > 3 else ''}{f'; steps {steps}' if steps else ''})")


def _jumps(f: Finding, run: RunReport) -> str:
    """'bad batches at steps 1200, 1900, 2500 (one-step jumps of 8.9-30x)' or 'val_loss
    jumped 5.2x at one evaluation (step 9)'."""
    steps = f.evidence.get("steps") or [f.peak_step]
    ratios = f.evidence.get("ratios") or [f.magnitude or 0]
    size = f"{min(ratios):.1f}x" if len(ratios) == 1 else f"{min(ratios):.1f}-{max(ratios):.0f}x"
    shown = ", ".join(str(s) for s in steps[:5]) + (f" and {len(steps) - 5} more" if len(steps) > 5 else "")
    role = run.metrics.get(f.metric or "")
    if role == "loss":
        what = "bad batch" if len(steps) == 1 else f"{len(steps)} bad batches"
        return f"{what}{_where(f, run)} at step{'s' if len(steps) > 1 else ''} {shown} (one-step jump{'s' if len(steps) > 1 else ''} of {size})"
    unit = "one evaluation" if role == "eval_loss" else "one update"
    return f"{f.metric} jumped {size} for {unit} at step{'s' if len(steps) > 1 else ''} {shown}"


def _recovered(spikes: list[Finding]) -> str:
    """'1 spike at step 6135, recovered fast (16 steps)' or '3 spikes: 2 recovered fast, 1 slow'."""
    def cls(f: Finding) -> str:
        return f.recovery or "fast"

    if len(spikes) == 1:
        f = spikes[0]
        took = f.evidence.get("recovery_steps")
        if took is None and f.end_step is not None and f.peak_step is not None:
            took = f.end_step - f.peak_step
        tail = f" ({took:g} step{'s' if took != 1 else ''})" if isinstance(took, (int, float)) else ""
        return f"1 spike at step {_step(f)}, recovered {cls(f)}{tail}"
    counts = Counter(cls(f) for f in spikes)
    if len(counts) == 1:
        (c, n), = counts.items()
        both = "both" if n == 2 else "all"
        return f"{n} spikes, {both} recovered {c}"
    detail = ", ".join(f"{counts[c]} {c}" for c in ("fast", "slow") if counts[c])
    return f"{len(spikes)} spikes recovered: {detail}"


def status(run: RunReport) -> str:
    """`error`, `warning` or `ok` (info findings alone leave a run ok)."""
    worst = run.worst()
    return "ok" if worst in (None, "info") else worst


def kind_counts(run: RunReport) -> dict[str, int]:
    """Findings per kind, worst kinds first, then by name."""
    counts = Counter(f.kind for f in run.findings)
    worst = {}
    for f in run.findings:
        worst[f.kind] = max(worst.get(f.kind, 0), SEVERITY_RANK[f.severity])
    return {k: counts[k] for k in sorted(counts, key=lambda k: (-worst[k], k))}


def counts_text(run: RunReport) -> str:
    c = kind_counts(run)
    return ", ".join(k if n == 1 else f"{k} ×{n}" for k, n in c.items()) or "—"


def steps_text(run: RunReport) -> str:
    first, last = run.stats.get("first_step"), run.stats.get("last_step")
    if first is None and run.segments:
        firsts = [s.get("first_step") for s in run.segments if s.get("first_step") is not None]
        lasts = [s.get("last_step") for s in run.segments if s.get("last_step") is not None]
        first, last = (min(firsts) if firsts else None), (max(lasts) if lasts else None)
    if first is None or last is None:
        return "—"
    return f"{first}–{last}"


def number(x: Any) -> str:
    """A value as a person reads it: 4 significant digits, NaN and inf spelled out."""
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4g}"


def final_loss_text(run: RunReport) -> str:
    return number(run.stats.get("last_value"))


def final_value_text(run: RunReport) -> str:
    """The last value of the run's main metric, its role beside it where that is not a loss (an RL
    run judged by its return: '-9.73 reward'), for the tables whose column says 'final loss'."""
    role = run.main_role()
    text = final_loss_text(run)
    return f"{text} {role}" if role not in LOSS_LIKE and run.stats.get("last_value") is not None else text


def segments_text(run: RunReport) -> str:
    """'1 segment', '3 segments (resumed at steps 2000, 4000)' or, with launches that
    logged nothing, '17 segments (10 logged nothing; resumed at steps 1, 1)'."""
    n = len(run.segments)
    if n <= 1:
        return f"{n} segment" if n else "no segments"
    data = [s for s in run.segments if s.get("points", 1)]
    empty = sum(1 for s in run.segments if s.get("points", 1) == 0 and s.get("launch", "empty") == "empty")
    starts = [s.get("first_step") for s in data[1:]]
    starts_txt = ", ".join(str(s) for s in starts if s is not None)
    resumed = f"resumed at step{'s' if len(starts) > 1 else ''} {starts_txt}" if starts_txt else ""
    nothing = f"{empty} logged nothing" if empty else ""
    detail = "; ".join(t for t in (nothing, resumed) if t)
    return f"{n} segments ({detail})" if detail else f"{n} segments"


def split_findings(run: RunReport) -> tuple[list[Finding], list[Finding]]:
    """(findings that need attention, info notes), each in timeline order."""
    def key(f: Finding):
        s = f.anchor_step
        return (s if s is not None else -1, f.kind, f.metric or "")

    major = sorted((f for f in run.findings if f.severity != "info"), key=key)
    notes = sorted((f for f in run.findings if f.severity == "info"), key=key)
    return major, notes


def loss_story(run: RunReport) -> str:
    """'loss 10.2 → 2.41 (train/loss)' from the run's stats."""
    st = run.stats
    if "last_value" not in st:
        return ""
    return f"{st.get('main_metric', 'loss')} {number(st.get('first_value'))} → {number(st.get('last_value'))}"


def span_text(f: Finding) -> str:
    """Where a finding sits: 'steps 6133–6151, peak 6135', 'from step 5540', 'at step 3000'."""
    start, peak, end = f.start_step, f.peak_step, f.end_step
    resumed = f.extra.get("resume_step")
    if None not in (resumed, start) and start != resumed and start == f.evidence.get("logged_first_step"):
        # a launch boundary after a step reset: its start is the step as logged; say both
        back = f.extra.get("rolled_back_from")
        return f"at step {resumed} (logged as {start})" + (f" (rolled back from {back})" if back is not None else "")
    if start is None and peak is None:
        at = f.extra.get("resume_step", end)
        text = "" if at is None else f"at step {at}"
        back = f.extra.get("rolled_back_from")
        return text + (f" (rolled back from {back})" if back is not None else "")
    if start is None:
        return f"at step {peak}"
    if end is None:
        text = f"from step {start}"
    elif end == start:
        text = f"at step {start}"
    else:
        text = f"steps {start}–{end}"
    if peak is not None and peak != start:
        text += f", peak {peak}"
    return text
