"""Does a curve's event matter? What a senior engineer knows about a curve before alarming on it.

Each detector judges one series against its own noise, so it cannot know what the series
is. Some curves move by design, and their spikes, swings and climbs are notes, not alarms:

- an adversarial term (a discriminator's or a generator's loss) swings as the two networks
  trade the lead;
- the loss of a reinforcement learner chases moving targets (returns, Q-values,
  advantages): while the reward holds, its climbs are the returns growing, not a blow-up;
- a running average (`Loss_avg` beside `Loss`) restarts every epoch: its first points
  average a handful of batches and swing; the per-batch series is judged instead;
- a loss term that is a sliver of the total (under `MINOR_SHARE`, 2%, of it) while the total
  did not move changes nothing the training cares about;
- a loss that has fallen to almost nothing (its peak under `NEGLIGIBLE_SHARE` of where it
  started) multiplies on noise: a 100x 'spike' from 1e-5 is still ~0; and a training loss's jump
  from such a floor (its level under `NEGLIGIBLE_SHARE` of the start) among `FLOOR_PEERS` or more
  other one-step jumps at least half as large on a log scale (0.0007 -> 0.25 among many 20-400x
  jumps) is the floor's own noise, however large it is in the loss's units;

And what an engineer acts on is what the run is judged by, beyond its own noise:

- an event on one term or one eval set (not the run's main loss or main eval loss) is that
  term's: when the main curve shows an event at the same steps it is an echo of that one,
  otherwise the run did not feel it;
- a spike or excursion that came back and never reached `RECOVERED_LOUD` times its level is
  within what a training loss does (a harder stretch of data, an epoch boundary); a plateau the
  loss broke out of after less than `STALL_LOUD` of the run is a delay, not a failure;
- repeated data read off a dip and a jump back, with no relaunch in the log to cause it, is
  a guess the log does not back;
- a relaunch (a rollback, a step counter reset) is how the log was written; what it cost
  shows as an event on the loss after it, with the relaunch as its cause;
- a curve that spikes and comes back again and again (`SPIKE_POPULATION` spikes or more) tells
  one story many times: its largest loud spike is the alarm, naming the count; the rest are notes.

Each demoted finding keeps its numbers and says in its message why it is a note.
"""
from __future__ import annotations

import re

import numpy as np

from .base import RunContext, Series
from ..frame import is_adversarial  # one pattern for a GAN term's name, shared with role inference
from ..model.finding import Finding
from .stats import forward_median, rolling_median

CURVE_KINDS = ("spike", "oscillation", "excursion", "divergence", "plateau", "level_shift")
"""Kinds read off the shape of one curve; NaN, crashes, restarts and overfitting are not
about a curve's shape and are never demoted here."""
MINOR_SHARE = 0.02
"""A loss term whose level at the event is under this share of the total's is a minor term."""
TOTAL_MOVED = 1.2
"""...and the total counts as moved with it when it rose this far above its level before."""
NEGLIGIBLE_SHARE = 0.02
"""A spike whose peak is under this share of the loss's starting level is negligible."""
RECOVERED_LOUD = 2.0
"""A spike or excursion that came back is an alarm only when it reached this many times its level."""
STALL_LOUD = 0.25
"""A plateau the loss broke out of is an alarm only when it held this share of the run's steps."""
MAIN_KINDS = CURVE_KINDS + ("overfitting", "repeated_data")
"""Kinds that belong to one curve: on a term or a side eval set, the main curve decides."""
TWIN_KINDS = ("nan", "spike", "divergence", "oscillation", "excursion", "plateau", "overfitting", "repeated_data")
"""Events of the main curve a term's event at the same steps is an echo of (a level shift, open to
the end of the run, would claim every later event)."""
RELAUNCH_KINDS = ("resume_overlap", "step_reset")

_RUNNING = re.compile(r"^(?P<raw>.+?)[_\-. /]?(?:avg|average|running|running_mean|smoothed|ema)$", re.I)


def weigh(findings: list[Finding], ctx: RunContext) -> list[Finding]:
    """Demote to notes the loud curve findings on series whose movement does not mean what
    it would on a training loss; each says why."""
    for f in findings:
        if f.severity == "info":
            continue
        if f.kind == "plateau" and f.evidence.get("reading") == "frozen":
            why = _frozen_while_rewarded(f, ctx)
            if why:
                demote(f, "reward_rose", why)
                continue
        if f.kind in RELAUNCH_KINDS:
            demote(f, "relaunch", _relaunch(f))
            continue
        if f.metric is None or ctx.roles.get(f.metric) not in ("loss", "eval_loss"):
            continue
        series = ctx.series.get(f.metric)
        if series is None or not len(series):
            continue
        reasons = (_adversarial, _actor_objective, _too_late, _running_average, _average_restart, _reinforcement, _minor_term,
                   _negligible, _floor_noise,
                   _rounding, _small_recovered, _short_stall) if f.kind in CURVE_KINDS else ()
        if f.kind == "repeated_data":
            reasons = (_no_relaunch,)
        for reason in reasons + ((_not_main,) if f.kind in MAIN_KINDS else ()):
            why = reason(f, series, ctx) if reason is not _not_main else _not_main(f, series, ctx, findings)
            if why:
                demote(f, reason.__name__.lstrip("_"), why)
                break
    one_alarm_per_population(findings)
    return findings


def demote(f: Finding, because: str, why: str) -> None:
    """Make `f` a note: `because` names the reason in its evidence, `why` is said after its message."""
    f.severity = "info"
    f.evidence["note_because"] = because
    f.message += f"; {why}"


def _adversarial(f: Finding, series: Series, ctx: RunContext) -> str | None:
    if not is_adversarial(f.metric or ""):
        return None
    return ("an adversarial term (a discriminator's or generator's loss) swings as the two networks trade the "
            "lead: not a training failure on its own; judge the outputs (samples, FID) or the task loss")


_ACTOR = re.compile(r"(?:^|[/_\-. ])(?:actor|policy|policy[_\-]?gradient|pg)[/_\-. ]?loss|^(?:.*[/_\-. ])?a[_\-]?loss$|loss[/_\-. ]?(?:actor|policy)$", re.I)
"""An actor's or a policy's loss by its name (`actor_loss`, `ALoss` beside a critic's `CLoss`,
`loss/policy`); not a policy-gradient total such as SB3's `train/loss`, which holds the value loss."""


AFTER_POINTS = 5
"""Points after a spike's peak a 'never came back' needs: the fewest the spike detector forms a level from."""


def _too_late(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """A spike that 'never came back' at the end of the log: with fewer than `AFTER_POINTS` points
    after its peak there is no level after it to have come back to (a run killed two steps after a
    jump, a log cut mid-epoch); the jump is listed, the recovery unknown."""
    if f.kind != "spike" or f.recovery != "none" or f.peak_step is None:
        return None
    step = series.finite()[0]
    after = int(step.size - np.searchsorted(step, f.peak_step, side="right"))
    if after >= AFTER_POINTS:
        return None
    return (f"the log ends {after} point{'s' if after != 1 else ''} after it: too soon to tell whether it came "
            f"back; the last steps before the end, a note")


def _actor_objective(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """An actor's loss is the negated value the critic gives its actions (-Q in DDPG, TD3, SAC) or
    a policy-gradient surrogate: it climbs and jumps as the critic's estimates move, and is not a loss
    that must fall; the run is judged by its return."""
    if not _ACTOR.search(series.metric):
        return None
    return (f"{series.metric} is an actor's (policy's) loss, the negated value the critic gives its actions: it "
            f"moves with the critic's estimates and is not a loss that must fall; judge the run by its return")


def running_average_of(metric: str, ctx: RunContext) -> Series | None:
    """The per-batch series a running average `X_avg` is taken of, when the run logs it too."""
    m = _RUNNING.match(metric)
    raw = ctx.series.get(m.group("raw")) if m else None
    return raw if raw is not None and len(raw) and ctx.roles.get(raw.metric) == ctx.roles.get(metric) else None


def _running_average(f: Finding, series: Series, ctx: RunContext) -> str | None:
    if f.kind not in ("spike", "oscillation", "excursion", "level_shift"):
        return None  # a divergence or a plateau of an average is the curve's own
    raw = running_average_of(series.metric, ctx)
    if raw is None:
        return None
    return (f"{series.metric} is a running average of {raw.metric}, restarted each epoch: its first points "
            f"average a handful of batches and swing; {raw.metric} itself is judged per batch")


RESTART_SMOOTHER = 4.0
"""A curve is a long running mean before a jump when it moved at most a quarter as much per point as
it does in the points after it (a mean over a whole epoch against one over a handful of batches)."""


def _average_restart(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """A spike at the first point of a running mean restarted at an epoch boundary (MXNet's
    Speedometer, an `AverageMeter` printed since the epoch began): the point before averaged the
    whole last epoch, this one a handful of batches, so it swings by the batches' own spread; the
    points after give the jump back as the mean fills. Read as such when the curve was far
    smoother before the jump than after it, and the batches each later point adds to the mean
    (backed out of the means, the first one counting one batch or one logging interval) are
    ordinary: none negative, none over `RECOVERED_LOUD` times the level before. A bad stretch gives
    itself away: the means after it imply more batches far above the level (a spike that decays
    over several points), a bad batch deep inside a mean barely moves the next ones, and a one-point
    blip of a per-batch loss implies a negative batch (no mean falls that fast)."""
    if f.kind != "spike" or f.recovery not in ("fast", "slow") or f.peak_step is None:
        return None
    step, v = series.finite()
    i = int(np.searchsorted(step, f.peak_step))
    if i < 6 or i + 5 > step.size or step[i] != f.peak_step or not (v[max(0, i - 10):i + 5] > 0).all():
        return None
    if _epoch_boundary(ctx, int(step[i - 1]), f.peak_step) is False:
        return None  # the run logs its epoch, and no epoch began at the jump: no mean restarted there
    before, after, at = v[max(0, i - 10):i], v[i:i + 5], step[i:i + 5].astype(np.float64)
    level = float(np.median(before))
    moved_before = float(np.median(np.abs(np.diff(np.log(before)))))
    moved_after = float(np.median(np.abs(np.diff(np.log(after[1:])))))
    if not after[0] > after[1] or not RESTART_SMOOTHER * moved_before < moved_after:
        return None
    gap = float(np.median(np.diff(step[max(0, i - 10):i + 5])))
    for first in (1.0, gap):  # printed at the epoch's first batch, or after its first logging interval
        n = first + (at - at[0])  # the batches each mean holds
        added = (n[1:] * after[1:] - n[:-1] * after[:-1]) / np.diff(n)
        if (added >= 0).all() and float(added.max()) <= RECOVERED_LOUD * level:
            return (f"a running mean restarting: {series.metric} moved {100 * moved_before:.2g}% a point before "
                    f"the jump (a mean over many batches) and {100 * moved_after:.2g}% a point after it, and the "
                    f"batches the next points add sit at {float(np.median(added)):.4g} against {level:.4g} "
                    f"before: the first point of a new epoch's mean averages a handful of batches; the "
                    f"averaging window, not the loss")
    return None


def _epoch_boundary(ctx: RunContext, before: int, at: int) -> bool | None:
    """Whether an epoch began after step `before` and by step `at` (its whole part grew, or the
    counter started again), by the epoch the run logs (`epoch`, `train/epoch`); None where it logs
    none."""
    epoch = next((s for m, s in ctx.series.items() if m.rsplit("/", 1)[-1].lower() == "epoch"), None)
    if epoch is None:
        return None
    step, value = epoch.finite()
    j, k = int(np.searchsorted(step, before, side="right")) - 1, int(np.searchsorted(step, at, side="right")) - 1
    if j < 0 or k < 0:
        return None
    return bool(np.floor(value[k]) != np.floor(value[j]) or value[k] < value[j])


def _reinforcement(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """A loss event of a run that learns from a reward, while the reward did not fall."""
    reward = ctx.main("reward")
    if reward is None or ctx.roles.get(series.metric) != "loss" or f.start_step is None:
        return None
    step, value = reward.finite()
    if step.size < 5:
        return None
    end = f.end_step if f.end_step is not None else int(step[-1])
    before = value[step < f.start_step]
    during = value[(step >= f.start_step) & (step <= end)]
    if before.size >= 3 and during.size:
        tail = before[-max(3, before.size // 5):]
        d = np.diff(value)
        noise = 1.4826 * float(np.median(np.abs(d - np.median(d)))) if d.size else 0.0
        spread = max(abs(float(np.median(tail))) * 0.05, 2.0 * noise)
        if float(np.median(during)) < float(np.median(tail)) - spread:
            return None  # the reward fell with it: the loss event is the policy getting worse
    return (f"the run learns from a reward ({reward.metric} did not fall around it): a reinforcement "
            f"learner's loss chases moving targets (returns, Q-values, advantages) and is judged by its reward")


def _minor_term(f: Finding, series: Series, ctx: RunContext) -> str | None:
    total = ctx.main("loss")
    if total is None or total.metric == series.metric or ctx.roles.get(series.metric) != "loss" \
            or f.start_step is None:
        return None
    tstep, tval = total.finite()
    sstep, sval = series.finite()
    tpos = tval[tval > 0]
    if sval.size and tpos.size >= 10:
        floor = float(np.min(np.convolve(tpos, np.ones(5) / 5, mode="valid")))  # its lowest 5-point mean
        top = float(np.max(sval))
        if 0 < top < MINOR_SHARE * floor:  # at its largest a sliver of the total at its smallest (any x-axis)
            return (f"{series.metric} is a minor term ({top:.3g} at most, under {100 * MINOR_SHARE:g}% of "
                    f"{total.metric} at its lowest, {floor:.4g}): it cannot move the training")
    lo = f.start_step
    hi = f.end_step if f.end_step is not None else int(max(sstep[-1], tstep[-1]))
    t_before = tval[tstep < lo][-20:]
    t_during = tval[(tstep >= lo) & (tstep <= hi)]
    s_during = sval[(sstep >= lo) & (sstep <= hi)]
    if t_before.size < 3 or t_during.size == 0 or s_during.size == 0:
        return None
    level = float(np.median(t_before))
    if not level > 0:
        return None
    top = float(np.max(s_during))
    k = max(1, min(5, t_during.size))
    t_top = float(np.max(np.convolve(t_during, np.ones(k) / k, mode="valid")))
    if top >= MINOR_SHARE * level or t_top >= TOTAL_MOVED * level:
        return None
    return (f"{series.metric} is a minor term ({top:.3g} at most, {100 * top / level:.1f}% of {total.metric} "
            f"{level:.4g}), and {total.metric} did not move: the training is unaffected")


def _negligible(f: Finding, series: Series, ctx: RunContext) -> str | None:
    if f.kind not in ("spike", "excursion", "oscillation"):
        return None
    step, value = series.finite()
    if step.size < 20 or value.min() < 0:  # (a loss may reach 0)
        return None
    # measured against where this log's loss started, wherever the log starts: a log that picks a
    # run up late starts at a level already reached, which only makes the test stricter
    start = float(np.median(value[:max(3, step.size // 50)]))
    lo, hi = f.start_step, f.end_step if f.end_step is not None else int(step[-1])
    during = value[(step >= (lo if lo is not None else step[0])) & (step <= hi)]
    if not during.size or not start > 0:
        return None
    top = float(during.max())
    if top >= NEGLIGIBLE_SHARE * start:
        return None
    return (f"at most {top:.3g}, {100 * top / start:.2g}% of where {series.metric} started ({start:.4g}): a loss "
            f"this near zero multiplies on noise; negligible in absolute terms")


FLOOR_PEERS = 5
"""A one-step jump from a loss at its floor is its noise when at least this many other points jumped
at least half as far on a log scale."""
FLOOR_CONTEXT = 5
"""Points on each side that set the level a point jumped from (the spike detector's `bad_batch_context`)."""


def _floor_noise(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """A jump of one or two steps of a training loss at its floor (the level it jumped from under
    `NEGLIGIBLE_SHARE` of where the loss started) that `FLOOR_PEERS` or more other points matched at
    least half way on a log scale:
    near zero a loss multiplies on small absolute moves, so one such jump among many alike is the floor's
    noise (a 0.0007 loss that jumps to 0.25 among dozens of 20-400x batches). Ratios are compared, never
    sizes in the loss's units, which near zero only say which batch happened to be the hardest. A jump
    that stands alone (109x where the others stay under 5x) keeps its alarm."""
    brief = f.evidence.get("one_point") or f.evidence.get("bad_batch") or (f.evidence.get("points") or 3) <= 2
    if f.kind != "spike" or not brief or ctx.roles.get(series.metric) != "loss":
        return None  # (an eval set is the same every time: its jumps are the model's, not the batches')
    ratio, level = f.evidence.get("ratio"), f.evidence.get("baseline")
    step, value = series.finite()
    if ratio is None or level is None or not ratio > 1 or step.size < 20 or not (value > 0).all():
        return None
    start = float(np.median(value[:max(3, step.size // 50)]))
    if not level < NEGLIGIBLE_SHARE * start:
        return None
    jumps = _one_step_jumps(np.log(value), FLOOR_CONTEXT)
    alike = int(np.count_nonzero((jumps >= 0.5 * np.log(ratio)) & (step != f.peak_step)))
    if alike < FLOOR_PEERS:
        return None
    return (f"the loss sits at its floor ({level:.3g}, {100 * level / start:.2g}% of where {series.metric} started, "
            f"{start:.4g}) and {alike} other points jumped at least half as far on a log scale: one of many alike, "
            f"the floor's noise (a loss this near zero multiplies on small absolute moves), not a bad batch")


def _one_step_jumps(y: np.ndarray, k: int) -> np.ndarray:
    """Each point's rise (log) over the higher of the medians of the `k` points before and after it."""
    before = rolling_median(y, k, trailing_exclusive=True, min_samples=1)
    after = np.concatenate([forward_median(y, k)[1:], [np.nan]])
    return np.nan_to_num(y - np.fmax(before, after), nan=0.0)


ROUNDING_UNITS = 20
"""A spike whose peak is within this many units of the log's last printed digit is rounding."""


def _rounding(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """A spike of a loss printed so near zero that its peak is a few units of the last printed
    digit (0.0001 -> 0.001 at four decimals): the ratio measures the rounding, not the loss."""
    peak = f.evidence.get("peak_value")
    if f.kind != "spike" or f.magnitude is None or not isinstance(peak, (int, float)) or not np.isfinite(peak):
        return None
    head = series.finite()[1][:4096]
    levels = np.unique(head)  # sorted and distinct: every difference is a positive step
    if levels.size < 3:
        return None
    unit = float(np.diff(levels).min())
    on_grid = np.allclose(head / unit, np.round(head / unit), rtol=0, atol=1e-3)
    if not on_grid or peak > ROUNDING_UNITS * unit:
        return None
    return (f"its peak {peak:.3g} is {peak / unit:.0f} units of the {unit:.2g} the log prints values in: "
            f"the ratio measures the rounding of a loss this near zero")


def _small_recovered(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """A spike or an excursion that came back without reaching `RECOVERED_LOUD` times its level."""
    came_back = (f.kind == "spike" and f.recovery in ("fast", "slow")) or (f.kind == "excursion" and f.end_step is not None)
    if not came_back or f.magnitude is None or not f.magnitude < RECOVERED_LOUD:
        return None
    return (f"it came back and reached {f.magnitude:.2f}x at most: within what a training loss does "
            f"(a harder stretch of data, an epoch boundary), no alarm under {RECOVERED_LOUD:g}x")


SPIKE_POPULATION = 8
"""A curve with this many spikes that came back (the spike detector's `max_isolated`) spikes as a habit."""
SPIKE_HABIT = 20
"""A curve with this many spikes that came back spikes as its normal behaviour (per-batch noise of a
heavy-tailed data stream): even its largest is a note, unless it dwarfs the next largest
(`HABIT_DOMINANT` x its excess), an event outside that habit."""
HABIT_DOMINANT = 2.5


def one_alarm_per_population(findings: list[Finding]) -> None:
    """A curve that spikes again and again and comes back each time (a running mean restarting every
    epoch, a component that jumps at every hard stretch, an unstable setup) is one story told many
    times: the largest loud spike stays the alarm and names how many there were; the other loud ones
    are notes that point at it, each still listed at its own step."""
    by_metric: dict[str, list[Finding]] = {}
    for f in findings:  # (an excursion that came back is a spike seen through a smoothing window)
        came_back = f.recovery in ("fast", "slow") if f.kind == "spike" else f.kind == "excursion" and f.end_step is not None
        if came_back and f.metric and f.magnitude is not None and not f.evidence.get("bad_batch"):
            by_metric.setdefault(f.metric, []).append(f)
    for metric, spikes in by_metric.items():
        loud = [f for f in spikes if f.severity != "info"]
        if len(spikes) < SPIKE_POPULATION or len(loud) < 2:
            continue
        lead = max(loud, key=lambda f: f.magnitude)
        low, high = min(f.magnitude for f in spikes), max(f.magnitude for f in spikes)
        second = max((f.magnitude for f in spikes if f is not lead), default=1.0)
        if len(spikes) >= SPIKE_HABIT and lead.magnitude - 1.0 < HABIT_DOMINANT * (second - 1.0):
            for f in loud:
                demote(f, "spiking_habit", f"one of {len(spikes)} spikes of {metric} that came back ({low:.2f}-"
                                            f"{high:.2f}x): spiking is this curve's normal behaviour (per-batch "
                                            f"noise), none stands apart from the others")
            for f in findings:  # its swings are the same per-batch noise, seen through a window
                if f.kind == "oscillation" and f.metric == metric and f.severity != "info":
                    demote(f, "spiking_habit", f"{metric} spiked and came back {len(spikes)} times: its swings "
                                                f"are its per-batch noise (a heavy-tailed or mixed data stream), "
                                                f"not an optimizer bouncing")
            continue
        lead.evidence["spikes_on_curve"] = len(spikes)
        lead.message += (f"; one of {len(spikes)} spikes of {metric} that came back ({low:.2f}-{high:.2f}x, "
                         f"the {len(loud) - 1} other loud ones are notes that point here)")
        for f in loud:
            if f is not lead:
                demote(f, "one_of_many", f"one of {len(spikes)} spikes of {metric} that came back: the alarm is the "
                                          f"largest, at step {lead.peak_step}")


def _short_stall(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """A plateau the loss broke out of by itself, after a stretch short against the whole run."""
    if f.kind != "plateau" or f.evidence.get("reading") != "breakthrough" or f.end_step is None \
            or f.start_step is None or not len(series):
        return None
    span = float(series.step[-1] - series.step[0])
    share = (f.end_step - f.start_step) / span if span > 0 else 1.0
    if share >= STALL_LOUD:
        return None
    return (f"it broke out by itself after {100 * share:.0f}% of the run: a delay, not a failure "
            f"(an alarm from {100 * STALL_LOUD:g}% of the run)")


def _frozen_while_rewarded(f: Finding, ctx: RunContext) -> str | None:
    """A series frozen at one value says 'nothing is being updated' only if the run agrees: a
    policy whose reward rose over the frozen stretch was updated; what stood still is a part
    that is fixed by design (the exploration noise of a policy whose std is not learned)."""
    reward = ctx.main("reward")
    if reward is None or f.metric == reward.metric or f.start_step is None:
        return None
    step, value = reward.finite()
    hi = f.end_step if f.end_step is not None else int(step[-1]) if step.size else f.start_step
    v = value[(step >= f.start_step) & (step <= hi)]
    if v.size < 10:
        return None
    k = max(3, v.size // 5)
    first, last = v[:k], v[-k:]
    if not float(np.median(last)) > float(np.quantile(first, 0.9)):  # most of the end above nearly all the start
        return None
    return (f"{reward.metric} rose over the same steps ({float(np.median(first)):.4g} -> {float(np.median(last)):.4g}): "
            f"the policy was updated; a value fixed by design (an exploration noise that is not learned), a note")


def _no_relaunch(f: Finding, series: Series, ctx: RunContext) -> str | None:
    """Repeated data read off the curve alone, with no relaunch at its start that would restart the data."""
    if f.evidence.get("resume_boundary", True):
        return None
    return ("no relaunch in the log at its start that would restart the data loader: a dip and a jump back this "
            "far apart is also the curve's own wander; worth a look only if the run was restarted outside this log")


def _relaunch(f: Finding) -> str:
    return ("a relaunch is how the log was written, not a training failure: what it cost shows as an event on "
            "the loss after it, with the relaunch as its cause")


def _not_main(f: Finding, series: Series, ctx: RunContext, findings: list[Finding]) -> str | None:
    """An event on a term or a side eval set: an echo of the main curve's event at the same steps,
    or one the run as a whole did not feel."""
    if f.evidence.get("term_of"):
        return None  # a head at chance inside a total that fell: the main curve hides it by design (termchance)
    role = ctx.roles.get(series.metric)
    main = ctx.main(role) if role else None
    if main is None or main.metric == series.metric or f.start_step is None:
        return None
    lo, hi = f.span() or (f.start_step, f.start_step)
    pad = 0.02 * float(max(main.step[-1] - main.step[0], 1)) if len(main) else 0.0
    twin = next((o for o in findings if o is not f and o.metric == main.metric and o.kind in TWIN_KINDS
                 and not o.evidence.get("beside_train")  # a note on the evaluation's noise claims no event
                 and o.span() is not None and o.span()[0] - pad <= hi and o.span()[1] + pad >= lo), None)
    if twin is not None:
        twin.evidence.setdefault("echoes", []).append(
            {"metric": f.metric, "kind": f.kind, "step": f.anchor_step, "severity": f.severity})
        return (f"the same steps as the {twin.kind} of {main.metric}, the run's main "
                f"{'eval ' if role == 'eval_loss' else ''}loss, at step {twin.anchor_step}: reported there")
    what = "eval loss" if role == "eval_loss" else "loss"
    moved = next((a for a in f.evidence.get("also_on", []) if a.get("metric") == main.metric), None)
    if moved is not None:  # the cause must agree with the message: it lists the main curve among those that moved
        ratio = moved.get("ratio")
        by = f" ({ratio:.3g}x)" if isinstance(ratio, (int, float)) else ""
        return (f"{main.metric}, the run's main {what}, moved with it{by} but too little to be an event of its own: "
                f"this {f.kind} is {series.metric}'s, not the run's")
    return (f"{main.metric}, the run's main {what}, shows no event there: this {f.kind} is {series.metric}'s "
            f"alone, not the run's")
