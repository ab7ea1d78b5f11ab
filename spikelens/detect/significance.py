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
  started) multiplies on noise: a 100x 'spike' from 1e-5 is still ~0.

Each demoted finding keeps its numbers and says in its message why it is a note.
"""
from __future__ import annotations

import re

import numpy as np

from .base import RunContext, Series
from ..model.finding import Finding

CURVE_KINDS = ("spike", "oscillation", "excursion", "divergence", "plateau", "level_shift")
"""Kinds read off the shape of one curve; NaN, crashes, restarts and overfitting are not
about a curve's shape and are never demoted here."""
MINOR_SHARE = 0.02
"""A loss term whose level at the event is under this share of the total's is a minor term."""
TOTAL_MOVED = 1.2
"""...and the total counts as moved with it when it rose this far above its level before."""
NEGLIGIBLE_SHARE = 0.02
"""A spike whose peak is under this share of the loss's starting level is negligible."""

_ADVERSARIAL = re.compile(
    r"discrim|generator|(?:^|[^a-z])(?:gan|adv|adversarial)(?:$|[^a-z])|(?:^|[/_\-. ])(?:err|loss|l)_?[gd](?:$|[/_\-. ])"
    r"|(?:^|[/_\-. ])[gd]_(?:loss|gan|adv|fake|real|total)|(?:^|[/_\-. ])(?:d|g|disc|gen)_?loss(?:$|[/_\-. ])",
    re.I)
"""`D_loss`, `loss_G`, `errD`, `G_GAN`, `disc_loss`, `Discriminator Loss`, `adv_loss`."""
_RUNNING = re.compile(r"^(?P<raw>.+?)[_\-. /]?(?:avg|average|running|running_mean|smoothed|ema)$", re.I)


def weigh(findings: list[Finding], ctx: RunContext) -> list[Finding]:
    """Demote to notes the loud curve findings on series whose movement does not mean what
    it would on a training loss; each says why."""
    for f in findings:
        if f.severity == "info" or f.kind not in CURVE_KINDS or f.metric is None:
            continue
        if ctx.roles.get(f.metric) not in ("loss", "eval_loss"):
            continue
        series = ctx.series.get(f.metric)
        if series is None or not len(series):
            continue
        for reason in (_adversarial, _running_average, _reinforcement, _minor_term, _negligible):
            why = reason(f, series, ctx)
            if why:
                f.severity = "info"
                f.evidence["note_because"] = reason.__name__.lstrip("_")
                f.message += f"; {why}"
                break
    return findings


def is_adversarial(metric: str) -> bool:
    return bool(_ADVERSARIAL.search(metric))


def _adversarial(f: Finding, series: Series, ctx: RunContext) -> str | None:
    if not is_adversarial(f.metric or ""):
        return None
    return ("an adversarial term (a discriminator's or generator's loss) swings as the two networks trade the "
            "lead: not a training failure on its own; judge the outputs (samples, FID) or the task loss")


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
    if step.size < 20 or not value.min() > 0 or step[0] > 0.05 * max(step[-1], 1):
        return None
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
