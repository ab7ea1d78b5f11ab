"""Loss spikes: abrupt upward excursions far outside the local noise, and how they recovered."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .base import Detector, RunContext, Series
from .divergence import unless_its_terms_fell
from .signedjumps import signed_jump_finding, signed_jumps
from .significance import demote
from ..model.finding import Finding
from .stats import MAD_TO_SIGMA, forward_median, global_sigma, log_scale, noise_sigma, rolling_median


@dataclass(frozen=True, kw_only=True)
class SpikeDetector(Detector):
    """A loss spike and its recovery class.

    Detects: a logged loss that jumps far above its local trend (robust z on the
    log-loss against a trailing median, scaled by the local point-to-point noise) and
    by at least `min_ratio`; the rise from the last normal point to the peak is quick
    (`max_rise_points`), unlike a divergence.
    Why it matters: a spike costs the steps it takes to recover; one that never comes
    back wastes the rest of the run, and repeated spikes announce an unstable setup.
    Likely causes: a gradient explosion, an LR jump or the end of warm-up, fp16
    overflow, a bad batch, one data source, a resume that lost optimizer state.
    Evidence: peak value, pre-spike baseline, ratio, robust z, steps to recover,
    the pre-spike noise band.
    """

    code = "SL101"
    kind = "spike"
    roles = ("loss", "eval_loss", "kl", "grad_norm")
    """Training losses get the full test; eval losses and KL terms only the one-step jumps
    (`bad_batch_ratio`): their curves are too coarse or too wild for a noise model; a grad norm
    only its one-step jumps of `grad_spike_ratio` (a note: clipping may have absorbed them)."""

    window: int = 50
    """Points in the trailing baseline and noise windows."""
    z_min: float = 8.0
    """Robust z (residual / local noise sigma) a point must exceed."""
    min_ratio: float = 1.15
    """Peak / baseline ratio a spike must exceed (for positive losses)."""
    max_rise_points: int = 25
    """A rise slower than this many logged points is a trend, not a spike."""
    recovery_fast_steps: int = 250
    """Back inside the band within this many steps of the peak = `fast`."""
    recovery_smooth: int = 9
    """Points in the forward median that decides 'back inside the band'."""
    band_sigma: float = 3.0
    """Half-width of the pre-spike noise band, in sigmas of the smoothed loss."""
    min_band_ratio: float = 1.02
    """The band is never narrower than this ratio above the baseline."""
    tail_factor: float = 2.5
    """A one-point blip must also exceed this multiple of the largest z the run's own
    noise is expected to reach (see `expected_max_z`): heavy-tailed noise raises the bar."""
    blip_min_ratio: float = 1.3
    """A one-point blip under this ratio is summarised, never a spike: a single batch 20%
    above the trend is per-batch noise to a reader, whatever its z in a quiet run. A longer
    rise under it that came back (1.22x over 800 steps) is a note."""
    settled_back_ratio: float = 1.1
    """A spike that never re-entered its narrow band but whose last points (the last fifth after its
    peak) settled within this ratio of its level came back by the end: a 1.44x bump at an epoch whose
    loss ends 3% over where it was is the loss's wander, not a level it jumped to ..."""
    settled_back_max: float = 2.0
    """... and one that reached under this many times its level is a note, as a spike that came back
    under it is (`significance.RECOVERED_LOUD`); a larger one stays an alarm."""
    blip_points: int = 1
    """Events with this few points above `z_min` are judged as blips: they must also clear
    the run's own noise tail."""
    summary_z: float = 5.0
    summary_ratio: float = 1.2
    """One-point excursions above both (and not spikes) are counted in the outliers summary."""
    short_run_points: int = 100
    """Runs with fewer points (epochs, evals every few hundred steps) cannot tell a one-point
    blip from their own noise: there, one-point blips are summarised, never spikes."""
    max_isolated: int = 8
    """More one-point blips than this in a run are noise: keep the largest few."""
    keep_isolated: int = 3
    held_jump_ratio: float = 3.0
    """A one-point jump by this ratio or more that the curve never comes down from is a
    spike with recovery `none` even where no baseline can be formed (the first points of a
    run, runs of a few points): a multi-x jump that stays is not a blip."""
    held_ratio: float = 2.0
    """... provided every later point stays at least this ratio above the level before it."""
    held_min_after: int = 3
    """Points (the jump included) that must show the jump held."""
    dominant_min_outliers: int = 8
    """A run with at least this many one-point outliers has its own outlier distribution:"""
    dominant_factor: float = 2.5
    """the largest outlier whose excess (ratio - 1) is this many times that of the next
    largest, and"""
    dominant_min_ratio: float = 4.0
    """at least this ratio above its trend, stands outside that distribution: its own spike
    (one bad batch), not one more outlier."""
    bad_batch_ratio: float = 5.0
    """A single point this many times the level around it (the median of the points on
    both sides), with both neighbours back near that level, is a spike whatever the run's
    noise tail: per-batch noise does not multiply a loss fivefold for one step."""
    eval_jump_ratio: float = 3.0
    """The same for an eval loss, logged once an epoch or every few hundred steps: a
    held-out set does not triple its loss for one evaluation by noise (a val_loss of 7.4
    against 1.4 at one epoch)."""
    corroborated_ratio: float = 3.0
    grad_jump_ratio: float = 4.0
    """A one-step jump of `corroborated_ratio` x (not `bad_batch_ratio`) is a bad batch when the
    grad norm logged at that step is `grad_jump_ratio` x its trailing median: the gradient
    confirms what a 3.8x loss step alone could not (0.49 against 0.13, grad norm 9x)."""
    bad_batch_context: int = 5
    """Points on each side that set the level around a one-step jump."""
    bad_batch_z: float = 6.0
    """...and they are an alarm only where the largest stands this many sigmas out of the loss's own
    point-to-point moves (log; `_moves_sigma`, `_local_sigmas`), else a note listing them: a loss near
    zero moves by factors from batch to batch (a converged classifier's per-batch cross-entropy at
    0.002-0.03, where one hard batch gives 0.1: 15x its level, four of its own moves); the labelled bad
    batches and held-out jumps of the dev side stand at 8-1500 sigmas, those labelled noise at 2-7."""
    bad_batch_noise_factor: float = 2.0
    """...and the jump (in log) is at least this many times the run's own 99th-percentile
    one-point excursion: a run whose every tenth step doubles has no smooth steps to stand out from."""
    bad_batch_max_share: float = 0.02
    """More one-step jumps than this share of the points (and more than 5) may be the run's
    own noise rather than bad batches; they are, unless they stand apart from it (see
    `bad_batch_population`)."""
    bad_batch_population: float = 2.0
    """Many one-step jumps are a population of bad batches, not the tail of the run's noise,
    when upward one-point moves of half their size (in log) are at most this many times as
    many as they are: noise that throws 5x steps throws many more 2.2x ones, while an otherwise
    smooth run whose bad batches jump 9-45x has almost no moves in between. Jumps at a fixed
    period are the run's rhythm, not bad batches (`_periodic`)."""
    signed_jump_spreads: float = 10.0
    """A loss at or below zero somewhere (a policy-gradient objective, a -1 sentinel before its first real
    value) that rose for one step over both its neighbours by this many times the 10-90% spread of its
    other values is a spike, in runs of any length from five points (`signedjumps`): 96,264 in a loss
    that wanders over -900..600."""
    zero_crossing_spreads: float = 1.0
    """A curve with values at or below zero (an RL objective, a likelihood) has no ratio: a spike of
    it is loud only when its rise over its level is this many times the curve's 10-90% spread."""
    bad_batch_peers: int = 5
    """A one-step jump is the run's own heavy tail, not a bad batch, when more than this many other
    points (and more than `bad_batch_population` x the jumps at least as large) rose at least half as
    far over their level both in log and in the loss's own units: a behaviour-cloning loss on a noisy
    floor whose tenth batch jumps 5x throws a 190x among dozens of 10x-50x batches reaching as high;
    a loss near zero whose floor noise multiplies by 30x at 1e-5 has no peers in its own units."""
    resume_context: int = 5
    """At a launch boundary the trailing window mixes the earlier launch's whole descent in
    (a short per-epoch run falls fast): the level before a resume is the median of this many
    points right before it."""

    kl_jump_ratio: float = 100.0
    """A KL term (how far one policy update moved the policy) at this many times its own median
    over the run is an update far outside the run's normal steps: healthy PPO and GRPO runs'
    largest update stays within about ten times their median one, so two orders of magnitude is
    a policy that jumped, however noisy the KL is between (its size, not its noise, is the test)."""
    kl_local_ratio: float = 10.0
    """...and this many times the median of the `bad_batch_context` points on each side, so a KL
    that grew over training to a new level is not a jump."""
    kl_min_nats: float = 0.1
    """...and at least this KL (nats): an update that moved the policy by 1e-5 nats moved it by
    nothing, whatever its ratio to a median that is numerically zero (TRPO's KL sits at 1e-10)."""

    grad_spike_ratio: float = 10.0
    """A grad norm at this many times the level on both sides of it for one step, in a run whose other
    steps are smooth (`bad_batch_jumps`), is a gradient spike: one batch whose gradient was an order of
    magnitude off (engineers list these beside the loss). A note: clipping bounds the update it made,
    and the loss's own spike, when it reacted, is the event (it takes this one in, `grouping`)."""

    eval_burst_ratio: float = 2.0
    """An eval loss whose peak stands this many times its running level (the median of the
    `resume_context` evaluations before it) ..."""
    eval_burst_held: float = 1.5
    """... with at least two evaluations in a row at this many times that level (one evaluation
    alone is `eval_jump_ratio`'s) ..."""
    eval_burst_back: float = 1.25
    """... that came back within this ratio of the level later, is a spike of the held-out loss: a
    held-out set does not double over consecutive evaluations by noise, and overfitting, which
    also lifts it, does not come back."""
    eval_burst_giveback: float = 0.2
    """... and the rise gives back at least this share of what the eval loss had fallen from its
    first evaluations to that level: a loss near zero that doubles (0.0006 to 0.0015 after falling
    from 0.077) lost 1% of what the run had learned, a doubling only on a log scale."""
    eval_burst_noise: float = 4.0
    """The peak's excess (log) is also at least this many times the curve's own typical move between
    two evaluations: a small, noisy validation set that swings 2x up and down has no spikes."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        if series.role == "grad_norm":
            return grad_spikes(self, series, ctx)
        if series.role in ("loss", "eval_loss"):
            series = zeros_under_print(series)
        if series.role == "loss":
            found = with_bad_batches(self, series, ctx, spikes_of(self, series, ctx))
            for f in found:  # a jump that stayed while every term fell is a weight changing (divergence's rule)
                if f.kind == "spike" and f.recovery == "none" and f.severity != "info":
                    unless_its_terms_fell(f, ctx)
            return found
        if series.role == "kl":
            jumps = kl_jumps(self, series)
            if jumps.size:
                return [_kl_finding(self, series, ctx, jumps)]
        found = with_bad_batches(self, series, ctx, [])
        if series.role == "kl":
            for f in found:  # a KL is judged by its size (`kl_jump_ratio`): a jump over its neighbours alone is a note
                f.severity = "info"
                f.message += (f"; under {self.kl_jump_ratio:g}x the run's median update, within what a healthy "
                              f"policy-gradient run's largest updates reach: a note, no alarm")
            return found
        if series.role == "eval_loss":
            taken = {s for f in found for s in f.evidence.get("steps", [])}
            found += [f for f in eval_bursts(self, series, ctx)  # (the note of a population stays)
                      if f.kind != "spike" or not any(f.start_step <= s <= f.end_step for s in taken)]
        return found


def zeros_under_print(series: Series) -> Series:
    """A loss that fell to near zero and reads exactly 0 at some later points (`Loss: 0.0000`: under
    what the log prints) with those zeros at half its smallest printed value, so it is judged on its
    log as any positive loss: a 0 there is a loss too small to print, not a curve crossing zero, whose
    jumps would be weighed against the spread of its whole fall (a 1-shot fine-tune at 1e-4 whose one
    hard augmentation reads 0.25). Zeros before its first value (a term not yet switched on), a loss
    that goes negative, one mostly zeros, or one whose smallest printed value is over 1% of where it
    started keep their values."""
    _, value = series.finite()
    on = np.flatnonzero(value != 0)
    if value.size < 10 or not on.size or value.min() < 0:
        return series
    rest = value[on[0]:]
    zeros = np.count_nonzero(rest == 0)
    start = float(np.median(rest[:3]))
    low = float(rest[rest > 0].min())
    if zeros == 0 or zeros > 0.5 * rest.size or not low <= 0.01 * start:
        return series
    first = int(np.flatnonzero(np.isfinite(series.value) & (series.value != 0))[0])
    v = series.value.copy()
    later = np.arange(v.size) > first
    v[later & (v == 0)] = 0.5 * low
    return replace(series, value=v)


def grad_spikes(det: SpikeDetector, series: Series, ctx: RunContext) -> list[Finding]:
    """One note listing the grad norm's one-step jumps of `grad_spike_ratio` x the level around them,
    with what the loss did at the largest."""
    step, value = series.finite()
    idx = bad_batch_jumps(det, value, det.grad_spike_ratio)
    if idx.size == 0:
        return []
    f = _bad_batch_finding(det, series, ctx, step, value, idx)
    f.severity = "info"
    f.evidence["grad_spike"] = True
    loss = ctx.main("loss")
    moved = _value_around(loss, f.peak_step) if loss is not None else None
    if moved is not None:
        f.evidence["loss_ratio"] = round(moved, 3)
        f.message += (f"; {loss.label} {'moved with it' if moved >= det.blip_min_ratio else 'did not react'} "
                      f"({moved:.2f}x the level around that step)")
    f.message += ": a batch whose gradient was an order of magnitude off; clipping bounds the update it made"
    return [f]


def _value_around(s: Series, at: int, k: int = 5) -> float | None:
    """The series' value at step `at` over the median of the `k` points on each side of it."""
    st, v = s.finite()
    i = int(np.searchsorted(st, at))
    if i >= st.size or st[i] != at:
        return None
    around = np.concatenate([v[max(0, i - k):i], v[i + 1:i + 1 + k]])
    level = float(np.median(around)) if around.size else 0.0
    return float(v[i] / level) if level > 0 else None


def eval_bursts(det: SpikeDetector, series: Series, ctx: RunContext) -> list[Finding]:
    """Rises of an eval loss to `eval_burst_ratio` x its running level over two or more
    evaluations that came back (a detector's val box loss 2.4x for five epochs, then back)."""
    step, value = series.finite()
    n = value.size
    if n < 8 or not (value.min() > 0):
        return []
    y = np.log(value)
    level = rolling_median(y, det.resume_context, trailing_exclusive=True, min_samples=3)
    typical = global_sigma(y)
    held, out, i = np.log(det.eval_burst_held), [], 0
    while i < n - 2:
        lv = level[i]
        if not np.isfinite(lv) or y[i] - lv < held or y[i + 1] - lv < held:
            i += 1
            continue
        j = i + 1
        while j + 1 < n and y[j + 1] - lv >= held:
            j += 1
        peak = i + int(np.argmax(y[i:j + 1]))
        back = np.flatnonzero(y[j + 1:] - lv <= np.log(det.eval_burst_back))
        excess = y[peak] - lv
        learned = float(np.median(value[:3])) - float(np.exp(lv))
        gave_back = value[peak] - float(np.exp(lv)) >= det.eval_burst_giveback * learned
        if back.size and excess >= np.log(det.eval_burst_ratio) and excess >= det.eval_burst_noise * typical \
                and gave_back:
            end = j + 1 + int(back[0])
            out.append((i, peak, end, float(np.exp(lv)), float(excess)))
            i = end
        else:
            i = j + 1
    if not out:
        return []
    kept, noise = _bursts_above_their_population(det, y - level, out)
    found = [_eval_burst_finding(det, series, ctx, step, value, a, p, e, lv) for a, p, e, lv, _ in kept]
    if noise:
        found.append(_eval_noise_note(det, series, ctx, step, value, noise, y - level))
    return found


def _bursts_above_their_population(det: SpikeDetector, rise: np.ndarray, bursts: list[tuple]) -> tuple[list, list]:
    """(standing out, the rest): an eval-loss rise is an event only where it stands out from the
    other evaluations. Noise that lifts some evaluations to 3x their running level lifts many more
    to half that (in log): a rise that at least `bad_batch_population` x as many other evaluations
    (outside every rise) reach half of is one of a population, the series' own noise (a small or
    varied held-out set, an eval loss logged per batch or on a dense axis), never an event of its own;
    a held-out set that jumped once has almost nothing in between. Each rise is weighed with the
    ones at least as large: noise that throws k rises this large throws over 2k half as large."""
    rise = np.nan_to_num(rise, nan=0.0)
    inside = np.zeros(rise.size, dtype=bool)
    for a, _, e, _, _ in bursts:
        inside[a:e] = True
    others = rise[~inside]
    kept, noise = [], []
    for b in bursts:
        half = int(np.count_nonzero(others >= 0.5 * b[4]))
        as_large = sum(1 for o in bursts if o[4] >= b[4])  # this rise and the larger ones
        (noise if half > det.bad_batch_population * as_large else kept).append(b)
    return kept, noise


def _eval_noise_note(det: SpikeDetector, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray,
                     noise: list[tuple], rise: np.ndarray) -> Finding:
    """One note for a population of eval-loss rises of similar size: their count, their range, the
    largest, and how many other evaluations rose half as far."""
    ratios = np.array([np.exp(b[4]) for b in noise])
    top = int(np.argmax(ratios))
    smallest = float(np.log(ratios.min()))
    half = int(np.count_nonzero(np.nan_to_num(rise, nan=0.0) >= 0.5 * smallest))
    peaks = [int(step[b[1]]) for b in noise]
    many = len(noise) > 1
    return Finding(
        kind="outliers", code=det.code, run=ctx.run, metric=series.metric, severity="info",
        message=(f"{series.label} rose {ratios.min():.2f}-{ratios.max():.2f}x above its running level "
                 f"{len(noise)} time{'s' if many else ''} (largest at step {peaks[top]}), each back within a few "
                 f"evaluations, and {half} evaluations rose at least half as far (in log): a population of rises "
                 f"is the evaluation's own noise (a small or varied held-out set, a loss logged per eval batch), "
                 f"not {'events' if many else 'an event'}") if many or half else
                f"{series.label} rose {ratios[0]:.2f}x above its running level at step {peaks[0]}: the evaluation's noise",
        start_step=int(step[noise[0][0]]), peak_step=peaks[top], end_step=int(step[noise[-1][2]]),
        magnitude=float(ratios[top]),
        evidence={"count": len(noise), "largest_ratio": float(ratios[top]), "steps": peaks[:50],
                  "half_size_rises": half, "eval_noise": True})


def _eval_burst_finding(det: SpikeDetector, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray,
                        start: int, peak: int, end: int, level: float) -> Finding:
    ratio = float(value[peak] / level)
    evals = end - start
    message = (f"{series.label} rose to {ratio:.2f}x its running level at step {int(step[peak])} ({value[peak]:.4g} "
               f"vs {level:.4g} before), above it for {evals} evaluations from step {int(step[start])}, and was back "
               f"by step {int(step[end])}: the model was worse on the held-out set for that stretch (an LR too high "
               f"for that stage, a bad stretch of training data), then recovered")
    return Finding(
        kind="spike", code=det.code, run=ctx.run, metric=series.metric, severity="warning", message=message,
        start_step=int(step[start]), peak_step=int(step[peak]), end_step=int(step[end]),
        recovery="fast" if evals <= det.resume_context else "slow", magnitude=ratio,
        evidence={"peak_value": float(value[peak]), "baseline": level, "ratio": ratio, "evaluations": int(evals),
                  "recovery_steps": int(step[end] - step[peak]), "one_point": False, "points": int(evals)})


def kl_jumps(det: SpikeDetector, series: Series) -> np.ndarray:
    """Indices of the points of a KL series at `kl_jump_ratio` x its median over the run and
    `kl_local_ratio` x the median of its neighbours (a KL may touch or dip below zero: SB3's
    approx_kl is -1e-8 at times, so no log is taken)."""
    _, value = series.finite()
    if value.size < 10:
        return np.empty(0, dtype=np.int64)
    typical = float(np.median(value))
    if not typical > 0:
        return np.empty(0, dtype=np.int64)
    k = det.bad_batch_context
    idx = np.flatnonzero(value >= det.kl_jump_ratio * typical)
    idx = idx[idx > 0]  # the first point has no level before it to jump from (a VAE's KL starts high)
    local = np.array([np.median(np.concatenate([value[max(0, i - k):i], value[i + 1:i + 1 + k]])) for i in idx])
    return idx[(value[idx] >= det.kl_local_ratio * np.maximum(local, typical)) & (value[idx] >= det.kl_min_nats)]


def _kl_finding(det: SpikeDetector, series: Series, ctx: RunContext, idx: np.ndarray) -> Finding:
    step, value = series.finite()
    typical = float(np.median(value))
    ratios = value[idx] / typical
    top = int(np.argmax(ratios))
    named = [int(step[i]) for i in idx]
    order = np.argsort(-ratios, kind="stable")
    listed = ", ".join(f"{named[i]} ({value[idx[i]]:.4g}, {ratios[i]:.0f}x)" for i in order[:8])
    more = f" and {len(named) - 8} more" if len(named) > 8 else ""
    many = len(named) > 1
    message = (f"{series.label} was {ratios.min():.0f}-{ratios.max():.0f}x its median ({typical:.3g}) at "
               f"{len(named)} updates: {listed}{more}" if many else
               f"{series.label} was {ratios[0]:.0f}x its median at step {named[0]} ({value[idx[0]]:.4g} vs "
               f"{typical:.3g})")
    message += (": policy updates two orders of magnitude beyond the run's normal step (a learning rate or "
                "clip range too large for the policy, unnormalised advantages, a reference policy out of step)")
    context = _policy_context(ctx, [named[top]])
    if context:
        message += f"; at step {named[top]}: " + context.pop("text")
    peak = int(idx[top])
    return Finding(
        kind="spike", code=det.code, run=ctx.run, metric=series.metric, severity="warning", message=message,
        start_step=named[0], peak_step=int(step[peak]), end_step=named[-1], recovery="fast",
        magnitude=float(ratios[top]),
        # listed step by step as the one-update jumps are (`bad_batch`): the verdict and the remedy name them
        evidence={"kl_jump": True, "bad_batch": True, "one_point": True, "steps": named, "ratios": [float(r) for r in ratios], "median": typical,
                  "peak_value": float(value[peak]), "baseline": typical, "ratio": float(ratios[top]),
                  "points": int(idx.size), **context})


def with_bad_batches(det: SpikeDetector, series: Series, ctx: RunContext, found: list[Finding]) -> list[Finding]:
    """Single-step jumps of `bad_batch_ratio` or more become one spike finding listing their
    steps (cause `bad_batch`), taken out of the findings and the outliers summary that held
    them one by one."""
    step, value = series.finite()
    signed = signed_jumps(value, det.signed_jump_spreads) if series.role in ("loss", "eval_loss") else []
    if len(signed):  # (a curve at or below zero has no log ratio: `bad_batch_jumps` finds nothing on it)
        at = {int(s) for s in step[signed]}
        kept = [f for f in found if not (f.kind == "spike" and f.peak_step in at)]
        return kept + [signed_jump_finding(det.code, series, ctx, step, value, signed, det.signed_jump_spreads)]
    idx = bad_batch_jumps(det, value, det.eval_jump_ratio if series.role == "eval_loss" else det.bad_batch_ratio)
    if series.role == "loss" and det.corroborated_ratio < det.bad_batch_ratio:
        # the gradient's jump stands in for the margin over the run's own tail (1x it, not 2x)
        idx = np.union1d(idx, _corroborated(det, ctx, step, bad_batch_jumps(det, value, det.corroborated_ratio, 1.0)))
    # a jump the curve never came back from is no bad batch: the spike that never came back tells it
    stayed = [f.peak_step for f in found if f.kind == "spike" and f.recovery == "none"]
    if stayed and idx.size:
        idx = idx[~np.isin(step[idx], stayed)]
    if idx.size == 0:
        return found
    steps = {int(s) for s in step[idx]}
    kept, replaced = [], {}
    for f in found:
        if f.kind == "spike" and f.peak_step in steps and (f.evidence.get("one_point") or f.recovery != "none"):
            replaced.update(f.evidence)  # the same jump, reported below with its neighbours
            continue
        if f.kind == "outliers":
            left = [s for s in f.evidence.get("steps", []) if s not in steps]
            if not left:
                continue
            f.evidence["count"] = len(left)
            f.evidence["steps"] = left
            f.evidence["largest"] = [x for x in f.evidence.get("largest", []) if x["step"] not in steps]
        kept.append(f)
    jump = _bad_batch_finding(det, series, ctx, step, value, idx)
    jump.evidence = {**{k: v for k, v in replaced.items() if k not in ("one_point", "points")}, **jump.evidence}
    _within_its_moves(det, jump, value, idx)
    kept.append(jump)
    return kept


def _within_its_moves(det: SpikeDetector, f: Finding, value: np.ndarray, idx: np.ndarray) -> None:
    """A note, not an alarm, when no listed jump stands `bad_batch_z` sigmas out of the loss's own
    point-to-point moves (the run's and its neighbourhood's, the larger): the jumps are still listed,
    but a loss whose batches move by factors made them."""
    if f.severity == "info" or idx.size == 0 or not (value > 0).all():
        return
    y = np.log(value)
    k = det.bad_batch_context
    levels = np.array([np.median(np.concatenate([y[max(0, i - k):i], y[i + 1:i + 1 + k]])) for i in idx])
    sigma = np.maximum(_moves_sigma(y, idx), _local_sigmas(y, idx))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sigma > 0, (y[idx] - levels) / sigma, np.inf)
    top = int(np.argmax(z))
    f.evidence["moves_z"] = float(z[top]) if np.isfinite(z[top]) else None
    if z[top] >= det.bad_batch_z:
        return
    demote(f, "within_its_moves",
           f"the largest is {z[top]:.1f} sigmas of this loss's own point-to-point moves (it moves "
           f"{float(np.exp(sigma[top] * np.sqrt(2.0) / MAD_TO_SIGMA)):.2g}x from one point to the next), "
           f"under {det.bad_batch_z:g}: a loss near its floor multiplies on its noise, a note")


def _corroborated(det: SpikeDetector, ctx: RunContext, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The jumps at whose step the run's grad norm also jumped `grad_jump_ratio` x its trailing
    median: the gradient says the batch was bad, so a smaller jump of the loss is one too."""
    grad = ctx.main("grad_norm")
    if idx.size == 0 or grad is None:
        return np.empty(0, dtype=np.int64)
    gs, gv = grad.finite()
    if gs.size < 20 or not (gv > 0).all():
        return np.empty(0, dtype=np.int64)
    base = rolling_median(gv, 20, trailing_exclusive=True, min_samples=5)
    at = np.searchsorted(gs, step[idx])
    ok = at < gs.size
    hit = np.zeros(idx.size, bool)
    hit[ok] = (gs[at[ok]] == step[idx][ok]) & (gv[at[ok]] >= det.grad_jump_ratio * np.nan_to_num(base[at[ok]], nan=np.inf))
    return idx[hit]


def bad_batch_jumps(det: SpikeDetector, value: np.ndarray, ratio: float, noise_factor: float | None = None) -> np.ndarray:
    """Indices of single-point jumps to `bad_batch_ratio` x the level on both sides of
    them (log scale; positive losses only), in a run whose other steps are smooth."""
    n = value.size
    if n < 4 or not (value.min() > 0):
        return np.empty(0, dtype=np.int64)
    y = np.log(value)
    k = det.bad_batch_context
    before = rolling_median(y, k, trailing_exclusive=True, min_samples=1)
    after = np.concatenate([forward_median(y, k)[1:], [np.nan]])
    ref = np.fmax(before, after)  # the higher side: a step up that stays is not a one-step jump
    ref = np.where(np.isfinite(ref), ref, np.nanmedian(y))
    jump = y - ref
    thr = np.log(ratio)
    hit = jump >= thr
    # a first point has no level before it; a last one has no step back, but a jump to `ratio` x the level
    # of the points before it is a spike all the same (a dev loss of 0.005 at the last epoch after 0.0007)
    hit[0] = False
    hit[-1] &= n > k
    if not hit.any():
        return np.empty(0, dtype=np.int64)
    # a neighbour is back when it carries under half of this jump (in log), never less room than half
    # the threshold: a 4000x step whose next point is 2.7x the level came down from it in one step
    back = np.maximum(jump, thr) / 2
    prev_ok = np.concatenate([[True], y[:-1] - ref[1:] < back[1:]])
    next_ok = np.concatenate([y[1:] - ref[:-1] < back[:-1], [True]])
    idx = np.flatnonzero(hit & prev_ok & next_ok)
    if idx.size == 0:
        return idx
    if idx.size > 5 and idx.size > det.bad_batch_max_share * n and (
            np.count_nonzero(jump[1:-1] >= thr / 2) > det.bad_batch_population * idx.size or _periodic(idx)):
        return np.empty(0, dtype=np.int64)  # the tail of the run's own noise, or its rhythm: not bad batches
    # the run's own upward one-point moves: a fast descent (the first steps, below the level before
    # them) is not noise a bad batch must stand above
    rest = np.delete(np.maximum(np.nan_to_num(jump, nan=0.0), 0.0), idx)
    tail = float(np.quantile(rest, noise_quantile(rest.size))) if rest.size >= 10 else 0.0
    factor = det.bad_batch_noise_factor if noise_factor is None else noise_factor
    idx = idx[jump[idx] >= factor * tail]
    if noise_factor is not None:
        return idx  # (a jump the gradient confirms needs no margin over the run's own tail)
    return idx[~_among_peers(det, value, ref, jump, idx)]


def _moves_sigma(y: np.ndarray, idx: np.ndarray) -> float:
    """The run's typical point-to-point move (log) as a sigma, leaving out the moves into and out of
    the jumps at `idx`: in a short run each jump's own two moves would set the scale it is judged on."""
    d = np.abs(np.diff(y))
    keep = np.ones(d.size, dtype=bool)
    keep[np.clip(np.concatenate([idx - 1, idx]), 0, d.size - 1)] = False
    d = d[keep & np.isfinite(d)]
    return float(np.median(d) * MAD_TO_SIGMA / np.sqrt(2.0)) if d.size else 0.0


LOCAL_MOVES = 25
"""Points on each side of a jump (or a 40th of the run, if more) whose moves set its local scale."""


def _local_sigmas(y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Each jump's neighbourhood's typical point-to-point move (log) as a sigma, its own two moves left out:
    a run at chance for most of its length and then memorising (per-batch losses 0.0004-0.27 at its end) is
    judged at its end by the moves of its end, not by the quiet plateau that makes up the run's median."""
    w = max(LOCAL_MOVES, y.size // 40)
    return np.array([_moves_sigma(y[max(0, i - w):i + w + 1], np.array([min(i, w)])) for i in idx], dtype=np.float64)


def _among_peers(det: SpikeDetector, value: np.ndarray, ref: np.ndarray, jump: np.ndarray,
                 idx: np.ndarray) -> np.ndarray:
    """Which jumps at `idx` have more peers than a bad batch has (`bad_batch_peers`): other points
    (the other jumps among them) that rose at least half as far over their level in log and in the
    loss's own units."""
    if idx.size == 0:
        return np.zeros(0, dtype=bool)
    excess = np.nan_to_num(value - np.exp(ref), nan=0.0)
    rise = np.nan_to_num(jump, nan=0.0)
    peers = np.array([np.count_nonzero((rise >= 0.5 * rise[i]) & (excess >= 0.5 * excess[i])) - 1 for i in idx])
    as_large = np.array([np.count_nonzero(rise[idx] >= rise[i]) for i in idx])
    return peers > np.maximum(det.bad_batch_peers, det.bad_batch_population * as_large)


def noise_quantile(points: int, tail: float = 0.99, left_out: int = 3) -> float:
    """The quantile of a run's own one-point moves that stands for its noise tail: the 99th
    percentile, leaving out at least its `left_out` largest moves. In a run of 50 epochs the 99th
    percentile is its largest other move, which a second bad batch below the jump ratio (3.6x
    beside a 5.8x) sets: the bar would then depend on how many bad batches the run had, not on its
    noise, and on its length (a run of 5,000 points leaves 50 moves above it)."""
    return min(tail, 1.0 - left_out / points)


def _periodic(idx: np.ndarray, share: float = 0.8) -> bool:
    """Jumps at a fixed period (most gaps between them the same): the run's own rhythm (a batch
    every N steps unlike the others, an accumulation or logging boundary), not bad batches, which
    fall where the data put them."""
    gaps = np.diff(idx)
    return gaps.size >= 3 and float(np.mean(gaps == np.median(gaps))) >= share


def _bad_batch_finding(det: SpikeDetector, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray,
                       idx: np.ndarray) -> Finding:
    y = np.log(value)
    k = det.bad_batch_context
    levels = np.array([np.median(np.concatenate([y[max(0, i - k):i], y[i + 1:i + 1 + k]])) for i in idx])
    ratios = np.exp(y[idx] - levels)
    top = int(np.argmax(ratios))
    peak = int(idx[top])
    named = [int(step[i]) for i in idx]
    first, last = int(idx[0]), int(idx[-1])
    end = min(last + 1, step.size - 1)
    what = {"eval_loss": ("one evaluation", "the evaluation set or the model saved then"),
            "kl": ("one policy update", "a policy update that moved far from the reference"),
            "grad_norm": ("one step", "a gradient spike")}
    unit, reading = what.get(series.role, ("one step", "a bad batch"))
    at_end = last == step.size - 1  # the run's last logged point: no point after it says whether it came back
    if idx.size == 1 and at_end:
        message = (f"{series.label} jumped {ratios[0]:.1f}x at its last logged point, step {named[0]} "
                   f"({value[peak]:.4g} vs {np.exp(levels[0]):.4g} before it): {reading}, or the start of a "
                   f"blow-up the log stops before showing; no point after it says whether it came back, a note")
    elif idx.size == 1:
        message = (f"{series.label} jumped {ratios[0]:.1f}x for {unit} at step {named[0]} "
                   f"({value[peak]:.4g} vs {np.exp(levels[0]):.4g} around it) and was back at the next: {reading}")
    else:
        listed = ", ".join(f"{s} ({r:.1f}x)" for s, r in list(zip(named, ratios))[:8])
        more = f" and {len(named) - 8} more" if len(named) > 8 else ""
        message = (f"{series.label} jumped {ratios.min():.1f}-{ratios.max():.1f}x for {unit} at {len(named)} "
                   f"steps: {listed}{more}; each was back at the next: "
                   + ("bad batches" if series.role == "loss" else reading)
                   + (f" (the last, at step {named[-1]}, is the run's last logged point)" if at_end else ""))
    context = _policy_context(ctx, named) if series.role == "kl" else {}
    if context:
        message += "; " + context.pop("text")
    return Finding(
        kind="spike", code=det.code, run=ctx.run, metric=series.metric, message=message,
        severity="info" if at_end and idx.size == 1 else "warning",  # (as `significance._too_late` judges a jump at the end)
        start_step=int(step[first]), peak_step=int(step[peak]), end_step=int(step[end]),
        recovery=None if at_end and idx.size == 1 else "fast", magnitude=float(ratios[top]),
        evidence={"one_point": True, "bad_batch": True, "steps": named, "ratios": [float(r) for r in ratios],
                  **({"at_last_point": True} if at_end else {}),
                  **({"note_because": "at_last_point"} if at_end and idx.size == 1 else {}),
                  "peak_value": float(value[peak]), "baseline": float(np.exp(levels[top])),
                  "ratio": float(ratios[top]), "recovery_steps": int(step[min(peak + 1, step.size - 1)] - step[peak]),
                  "points": int(idx.size), **context})


def _policy_context(ctx: RunContext, steps: list[int]) -> dict:
    """What the policy update at a KL jump did to the reward and the policy loss: the
    values at the step against the median of the ten logged before it."""
    parts, numbers = [], {}
    for role in ("reward", "loss", "entropy"):
        s = ctx.main(role)
        if s is None:
            continue
        st, v = s.finite()
        i = int(np.searchsorted(st, steps[0]))
        if i >= st.size or st[i] != steps[0] or i < 3:
            continue
        before = float(np.median(v[max(0, i - 10):i]))
        parts.append(f"{s.label} {v[i]:.4g} at that step vs {before:.4g} before")
        numbers[role] = {"metric": s.metric, "at": float(v[i]), "before": before}
    if not parts:
        return {}
    return {"text": "; ".join(parts), "policy_update": numbers}


def spikes_of(det: SpikeDetector, series: Series, ctx: RunContext) -> list[Finding]:
    step, value = series.finite()  # the series' own arrays when all are finite (no copies of the run's length)
    on = np.flatnonzero(value != 0)
    if on.size and on[0] >= 3:
        # a term that sat at exactly 0 was not being computed (a head frozen for the first epochs,
        # YOLOX's L1 loss): it is judged from the point it switched on
        step, value = step[on[0]:], value[on[0]:]
    n = step.size
    if n < 3:
        return []
    y, is_log = log_scale(value)
    sigma = noise_sigma(y, det.window)
    held = _held_jump(det, y, is_log, sigma)
    if n < 12:
        return [_finding(det, series, ctx, step, y, is_log, *held)] if held else []
    base = rolling_median(y, det.window, trailing_exclusive=True, min_samples=5)
    base, resumed = _resume_baseline(det, base, y, step, ctx.segment_starts)
    resid = y - base
    z = resid / sigma
    # a term that sat at exactly 0 was not being computed (YOLOX's L1 loss until its last epochs):
    # its first values are the term switching on, not a jump against a level of 0
    ratio_ok = (resid > np.log(det.min_ratio)) if is_log else (resid > (det.min_ratio - 1.0) * np.abs(base)) & (base != 0)
    cand = np.flatnonzero(np.isfinite(z) & (z > det.z_min) & ratio_ok)
    if cand.size == 0:
        return [_finding(det, series, ctx, step, y, is_log, *held)] if held else []
    fwd = forward_median(y, det.recovery_smooth)
    blip_z = max(det.z_min, det.tail_factor * expected_max_z(z))
    up = np.where(np.isfinite(resid) & (resid > 0), resid, 0.0)
    events = []
    in_tail: list[int] = []
    came_back_wide: set[int] = set()  # peaks whose curve came back only within `settled_back_ratio` of their level
    last_end = -1
    r0 = 0  # where the level the curve is judged on began: 0, or the point after a jump it never came back from
    k = 0
    while k < cand.size:
        i = int(cand[k])
        k += 1
        if i <= last_end:
            continue
        start = i
        while start > 0 and start > i - det.max_rise_points and np.isfinite(z[start - 1]) and z[start - 1] > 3.0:
            start -= 1
        if i - start >= det.max_rise_points - 1:
            continue  # a slow ramp: the divergence detector's business
        # the peak: highest point while the curve stays above the spike threshold
        j = i
        while j + 1 < n and (y[j + 1] - base[start]) > 0.5 * (y[i] - base[start]) and j + 1 - i < 10 * det.max_rise_points:
            j += 1
        peak = i + int(np.argmax(y[i:j + 1]))
        if start == i and start > 1 and not np.isfinite(base[start - 1]) and y[start - 1] > y[peak]:
            start = peak = start - 1  # the jump fell on a point too early for a trailing level: it began there
        level = base[start] if np.isfinite(base[start]) else y[max(start - 1, 0)]
        sig0 = sigma[start]
        smooth_sigma = sig0 * 1.2533 / np.sqrt(det.recovery_smooth)
        band = max(det.band_sigma * smooth_sigma, np.log(det.min_band_ratio) if is_log else 0.0)
        point_band = max(4.0 * sig0, band)
        end = _first_back(fwd, y, peak + 1, level + band, level + point_band)
        wide = end is None and is_log
        if wide:  # never back in its narrow band: back within `settled_back_ratio` of its level is back too
            settle = np.log(det.settled_back_ratio)
            end = _first_back(fwd, y, peak + 1, level + settle, level + max(point_band, settle))
            if end is not None:  # its peak is the highest point before it came back (a burst of bursts)
                peak += int(np.argmax(y[peak:end]))
        high = int(np.sum(z[start:(end if end is not None else n)] > det.z_min))
        small = y[peak] - level < np.log(det.blip_min_ratio) if is_log else False
        # a jump at a resume that is still up at the next point is the resume's (lost optimizer
        # state, a warm-up restarting), not per-batch noise, however short the run
        at_resume = start in resumed and end - peak > 1 if end is not None else False
        # a short run has no noise tail to measure, but it has its other points: a blip far above every
        # other rise of the curve over its level is not its noise (a 1.6x epoch in a run whose epochs
        # move 3%)
        short = n - r0 < det.short_run_points and not _above_all_others(det, up[r0:], peak - r0, y[peak] - level)
        # after a level change, what the new level does elsewhere is the yardstick (`_within_level`)
        within = r0 > 0 and _within_level(det, up, r0, start, end if end is not None else n, y[peak] - level)
        if end is not None and high <= det.blip_points and not at_resume \
                and (z[peak] < blip_z or small or short or within):
            last_end = end
            in_tail.append(peak)  # a one-point blip inside the run's own noise tail: summarised
            continue
        if within:
            last_end = end if end is not None else j  # the new level's own wander: no event
            continue
        events.append((start, peak, end, level, sig0, band, high))
        if wide and end is not None:
            came_back_wide.add(peak)
        last_end = end if end is not None else n
        if end is None and n - (peak + 1) >= 12:
            # the curve never came back: from here it is judged as a run of its own, on the new
            # level's own trailing level, noise and tail, not on statistics that reach back into
            # the level it left (a running mean that took one bad batch in at step 5 and another
            # at step 105; a noisy run that stepped up early)
            r0 = peak + 1
            base[r0:], resumed_r = _resume_baseline(det, rolling_median(y[r0:], det.window, trailing_exclusive=True,
                                                                       min_samples=5), y[r0:], step[r0:],
                                                    ctx.segment_starts)
            resumed = resumed | {r0 + b for b in resumed_r}
            sigma[r0:] = noise_sigma(y[r0:], det.window)
            resid[r0:] = y[r0:] - base[r0:]
            z[r0:] = resid[r0:] / sigma[r0:]
            up[r0:] = np.where(np.isfinite(resid[r0:]) & (resid[r0:] > 0), resid[r0:], 0.0)
            blip_z = max(det.z_min, det.tail_factor * expected_max_z(z[r0:]))
            ok = (resid[r0:] > np.log(det.min_ratio)) if is_log else \
                (resid[r0:] > (det.min_ratio - 1.0) * np.abs(base[r0:])) & (base[r0:] != 0)
            cand = r0 + np.flatnonzero(np.isfinite(z[r0:]) & (z[r0:] > det.z_min) & ok)
            k, last_end = 0, peak
    if held and not any(e[0] <= held[1] <= (e[2] if e[2] is not None else n) for e in events):
        events.insert(0, held)
    findings = []
    for start, peak, end, level, sig0, band, high in events:
        findings.append(_finding(det, series, ctx, step, y, is_log, start, peak, end, level, sig0, band, high,
                                 wide=peak in came_back_wide))
    _one_alarm_per_staircase(series, findings)
    _too_soon_to_tell(findings, int(step[-1]))
    findings, demoted = _limit_isolated(det, findings)
    reported = {f.peak_step for f in findings}
    outliers = _isolated_outliers(det, z, y, base, is_log, step, reported)
    # blips judged to be noise (by the tail test or by their number) always count, even
    # when a neighbour was not calm (a blip whose next point is still a little high)
    outliers = np.union1d(outliers, np.union1d(np.searchsorted(step, demoted), in_tail)).astype(np.int64)
    dominant = _dominant_outlier(det, outliers, y, base, is_log)
    if dominant is not None:
        outliers = outliers[outliers != dominant[0]]
        level = base[dominant[0]]
        band = max(det.band_sigma * sigma[dominant[0]] * 1.2533 / np.sqrt(det.recovery_smooth), np.log(det.min_band_ratio))
        spike = _finding(det, series, ctx, step, y, is_log, dominant[0], dominant[0], min(dominant[0] + 1, n - 1),
                         level, sigma[dominant[0]], band, 1)
        spike.evidence["next_largest_outlier_ratio"] = dominant[1]
        spike.evidence["outliers_in_run"] = int(outliers.size)
        findings.append(spike)
    if outliers.size:
        findings.append(_noise_summary(det, series, ctx, step, y, is_log, base, outliers, blip_z))
    return findings


def _one_alarm_per_staircase(series: Series, findings: list[Finding]) -> None:
    """A curve that steps up and never comes back, then steps up again from the level it settled
    at (a running mean taking in a second bad batch, runs appended without a counter reset, a run
    coming apart) tells one story: the first such jump is the alarm, the later ones are notes that
    name it, each still listed at its own step."""
    first = None
    for f in findings:
        if f.recovery != "none":
            continue
        if first is None:
            first = f
            continue
        f.severity = "info"
        f.evidence["after_unrecovered_step"] = first.peak_step
        f.message += (f"; {series.label} had already stepped up at step {first.peak_step} without coming back "
                      f"(the alarm is there)")


def _too_soon_to_tell(findings: list[Finding], last_step: int) -> None:
    """A spike that 'never came back' when the log ends sooner after its peak than the run's own
    spikes took to come back (a burst 14 iterations before the end of a run whose earlier bursts took
    100 and 300 to settle) may yet have come back: its recovery is unknown, a note. The run's own
    recoveries are the yardstick (`significance._too_late` asks five points of any run)."""
    took = [f.evidence["recovery_steps"] for f in findings if f.recovery in ("fast", "slow")
            and isinstance(f.evidence.get("recovery_steps"), int)]
    if not took:
        return
    for f in findings:
        left = last_step - (f.peak_step or last_step)
        if f.recovery == "none" and f.severity != "info" and left < max(took):
            demote(f, "too_soon_to_tell", f"the log ends {left} steps after its peak, sooner than the {max(took)} "
                                          f"steps this run's other spikes took to come back: too soon to tell, a note")


def _within_level(det: SpikeDetector, up: np.ndarray, r0: int, start: int, end: int, excess: float) -> bool:
    """After a level change (a jump the curve never came back from, at `r0`), a rise is the new
    level's own wander unless it stands `bad_batch_noise_factor` x above the 99th-percentile rise
    the new level makes elsewhere (its points outside this event): a run that stepped up and stayed
    noisy swings as far at its other points, a second bad batch in a running mean does not."""
    others = np.concatenate([up[r0:max(start - 1, r0)], up[min(end + 1, up.size):]])
    if others.size < 10:
        return False  # too little of the new level to know what it does
    return bool(excess < det.bad_batch_noise_factor * float(np.quantile(others, 0.99)))


def _above_all_others(det: SpikeDetector, up: np.ndarray, peak: int, excess: float) -> bool:
    """The rise at `peak` is `bad_batch_noise_factor` x the largest rise of any other point of the
    run over its trailing level (`up`): in a run too short for a tail estimate, the run's own
    largest excursion is the scale a one-point blip is judged on."""
    others = np.delete(up, [i for i in (peak - 1, peak, peak + 1) if 0 <= i < up.size])
    return bool(others.size) and excess >= det.bad_batch_noise_factor * float(others.max())


def _held_jump(det: SpikeDetector, y: np.ndarray, is_log: bool, sigma: np.ndarray) -> tuple | None:
    """The first one-point multi-x jump that the curve never comes down from, among the
    points the windowed test cannot judge (its baseline needs 5 points before, its noise
    12 points in all): an LR typo that destroys the model at step 2 of a 10-step fine-tune."""
    n = y.size
    if not is_log or n < det.held_min_after + 1:
        return None
    last = n - det.held_min_after if n < 12 else min(5, n - det.held_min_after)
    for i in range(1, last + 1):
        level = float(np.median(y[max(0, i - det.window):i]))
        if not (np.isfinite(level) and y[i] - y[i - 1] >= np.log(det.held_jump_ratio)
                and y[i] - level >= np.log(det.held_jump_ratio)):
            continue
        if np.min(y[i:]) - level < np.log(det.held_ratio):
            continue
        peak = i + int(np.argmax(y[i:i + det.max_rise_points]))
        band = np.log(det.min_band_ratio)
        return (i, peak, None, level, float(sigma[i - 1]), band, n - i)
    return None


def _resume_baseline(det: SpikeDetector, base: np.ndarray, y: np.ndarray, step: np.ndarray,
                     segment_starts: list[int]) -> tuple[np.ndarray, set[int]]:
    """At the first point of a resumed launch, the level is that of the last points before
    it, not a trailing window that reaches back into the earlier launch's descent.
    Returns the baseline and the indices where a launch took over."""
    if not segment_starts:
        return base, set()
    out = base.copy()
    resumed: set[int] = set()
    for s in segment_starts:
        b = int(np.searchsorted(step, s, side="left"))
        if det.resume_context <= b < y.size and np.isfinite(out[b]):
            out[b] = min(out[b], float(np.median(y[b - det.resume_context:b])))
            resumed.add(b)
    return out, resumed


def _dominant_outlier(det: SpikeDetector, outliers: np.ndarray, y: np.ndarray, base: np.ndarray,
                      is_log: bool) -> tuple[int, float] | None:
    """(index, next largest ratio) of a one-point outlier that stands far outside the run's
    own outlier distribution (several times the excess of the next largest): one bad batch
    worth its own finding, where the rest of the tail is per-batch noise."""
    if not is_log or outliers.size < det.dominant_min_outliers:
        return None
    ratios = np.exp(y[outliers] - base[outliers])
    order = np.argsort(-ratios, kind="stable")
    r1, r2 = float(ratios[order[0]]), float(ratios[order[1]])
    if r1 >= det.dominant_min_ratio and r1 - 1.0 >= det.dominant_factor * (r2 - 1.0):
        return int(outliers[order[0]]), r2
    return None


def _first_back(fwd: np.ndarray, y: np.ndarray, start: int, smooth_max: float, point_max: float) -> int | None:
    """First index ≥ start where the curve is back inside the band (smoothed and pointwise),
    searched in growing chunks so a long run is not rescanned for every spike."""
    n = y.size
    size = 256
    while start < n:
        stop = min(n, start + size)
        hit = np.flatnonzero((fwd[start:stop] <= smooth_max) & (y[start:stop] <= point_max))
        if hit.size:
            return int(start + hit[0])
        start, size = stop, size * 4
    return None


def expected_max_z(z: np.ndarray) -> float:
    """How far the run's own noise is expected to reach up over its length.

    A Hill-type tail estimate on the top 5% of the positive robust z (the tail index
    from the *median* log-excess, so a few real spikes among them barely move it),
    extrapolated to the largest of all points. Gaussian-like noise gives a small
    value; heavy-tailed per-batch noise a large one.
    """
    pos = np.sort(z[np.isfinite(z) & (z > 0)])
    if pos.size < 100:
        return 0.0
    k = max(30, int(0.05 * pos.size))
    u = pos[-k - 1]
    if u <= 0:
        return 0.0
    excess = np.log(pos[-k:] / u)
    med = float(np.median(excess))
    if med <= 0:
        return float(u)
    alpha = np.log(2.0) / med
    return float(u * k ** (1.0 / alpha))


def _finding(det, series, ctx, step, y, is_log, start, peak, end, level, sig0, band, high, wide=False) -> Finding:
    """`wide`: the curve never came back inside its narrow band, only within `settled_back_ratio` of
    its level (at `end`): recovered, a level a tenth above where it was (a loss that bursts 50x and comes
    back to 1.08x its level has recovered; calling it "never came back" hid the next burst in its wake)."""
    peak_step, start_step = int(step[peak]), int(step[start])
    base_value = float(np.exp(level)) if is_log else float(level)
    peak_value = float(np.exp(y[peak])) if is_log else float(y[peak])
    magnitude = peak_value / base_value if is_log and base_value > 0 else (y[peak] - level) / max(abs(level), 1e-12) + 1
    z = float((y[peak] - level) / sig0) if sig0 > 0 else float("inf")
    if end is None:
        recovery, end_step, took = "none", None, None
    else:
        end_step = int(step[end])
        took = end_step - peak_step
        recovery = "fast" if took <= det.recovery_fast_steps else "slow"
    one_point = end is not None and high <= 1 and end - peak <= 1
    severity = "error" if recovery == "none" else ("info" if one_point else "warning")
    if is_log and magnitude < det.blip_min_ratio:
        # a bump of a fifth that came back is the loss's own wander; one that stayed is a step in its
        # level the size of its wander (a detection loss 10.4 -> 12.5 -> 11.9), no failure: notes
        severity = "info"
    settled = None
    if recovery == "none":
        after = y[peak + 1:]
        settled = float(np.exp(np.median(after[-max(3, after.size // 5):]))) if after.size and is_log else None
        tail = (f" and never came back (settled at {settled:.4g} vs {base_value:.4g} before)"
                if settled is not None else " and never came back")
        if (settled is not None and det.blip_min_ratio <= magnitude < det.settled_back_max
                and settled <= det.settled_back_ratio * base_value):
            severity = "info"
            tail = (f" and settled back near its level by the end ({settled:.4g} vs {base_value:.4g} before): "
                    f"under {det.settled_back_max:g}x at its peak, the loss's own wander: a note")
    elif wide:
        tail = (f" and came back within {det.settled_back_ratio:g}x of its level by step {end_step} "
                f"({took} steps after its peak)")
        if is_log and magnitude < det.settled_back_max:
            severity = "info"
            tail = (f" and settled back near its level by step {end_step} (within {det.settled_back_ratio:g}x): "
                    f"under {det.settled_back_max:g}x at its peak, the loss's own wander: a note")
    elif one_point:
        tail = " for one logged point and was back at the next"
    else:
        tail = f" and recovered in {took} steps"
    message = f"{series.label} spiked {magnitude:.2f}x at step {peak_step} ({peak_value:.4g} vs {base_value:.4g} before){tail}"
    spread = None
    if not is_log:
        # a curve that crosses zero has no ratio (7.99x 'over' a level of -0.41 means nothing): its jump is
        # measured against its own spread, and one within it (a cumulative list starting again) is a note
        finite = y[np.isfinite(y)]
        spread = float(np.quantile(finite, 0.9) - np.quantile(finite, 0.1)) if finite.size else 0.0
        rise = peak_value - base_value
        message = (f"{series.label} jumped by {rise:.4g} at step {peak_step} ({peak_value:.4g} vs {base_value:.4g} "
                   f"before, {rise / spread:.2g}x the curve's own 10-90% spread of {spread:.4g}){tail}"
                   if spread > 0 else message)
        if spread > 0 and rise < det.zero_crossing_spreads * spread:
            severity = "info"
            message += (f"; a curve that crosses zero is judged by its spread, not by a ratio to a level near "
                        f"zero: a jump under {det.zero_crossing_spreads:g}x its spread, a note")
    if recovery == "none" and is_log and magnitude < det.blip_min_ratio:
        message += (f"; under {det.blip_min_ratio:g}x at its peak, a step in the loss's level no larger than its "
                    f"wander: a note")
    return Finding(
        kind="spike", code=det.code, run=ctx.run, metric=series.metric, severity=severity, message=message,
        start_step=start_step, peak_step=peak_step, end_step=end_step, recovery=recovery, magnitude=float(magnitude),
        evidence={"peak_value": peak_value, "baseline": base_value, "ratio": float(magnitude), "robust_z": z,
                  "recovery_steps": took, "band_upper": float(np.exp(level + band)) if is_log else float(level + band),
                  "one_point": bool(one_point), "points": int((end if end is not None else y.size) - start),
                  **({"spread": spread} if spread is not None else {}),
                  **({"settled": settled} if recovery == "none" and settled is not None else {})},
    )


def _isolated_outliers(det, z, y, base, is_log, step, reported) -> np.ndarray:
    """Indices of one-point excursions (above `summary_z` and `summary_ratio`, normal on
    both sides) that are not reported as spikes: the material of the outliers summary."""
    if not is_log or z.size < 3:
        return np.empty(0, dtype=np.int64)
    zz = np.nan_to_num(z, nan=0.0)
    calm_before = np.concatenate([[True], zz[:-1] < 3.0])
    calm_after = np.concatenate([zz[1:] < 3.0, [True]])
    hit = (zz >= det.summary_z) & ((y - base) >= np.log(det.summary_ratio)) & calm_before & calm_after
    idx = np.flatnonzero(hit)
    return idx[~np.isin(step[idx], list(reported))] if reported else idx


def _noise_summary(det, series, ctx, step, y, is_log, base, blips, blip_z) -> Finding:
    ratios = np.exp(y[blips] - base[blips]) if is_log else (y[blips] - base[blips])
    span = max(int(step[-1] - step[0]), 1)
    top = int(np.argmax(ratios))
    largest = np.argsort(-ratios, kind="stable")[:5]
    # a loss that can be zero or negative is judged on its own scale: the excess, not a ratio
    size = (lambda r: f"{r:.2f}x") if is_log else (lambda d: f"+{d:.3g} above its trend")
    named = ", ".join(f"{int(step[blips[i]])} ({size(ratios[i])})" for i in largest)
    many = len(blips) > 1
    return Finding(
        kind="outliers", code=det.code, run=ctx.run, metric=series.metric, severity="info",
        message=(f"{series.label} has {len(blips)} one-point outlier{'s' if many else ''} "
                 f"({len(blips) / span * 1000:.2g} per 1000 steps), each back at the next point; "
                 f"largest at step{'s' if many else ''} {named}: per-batch noise or single bad batches, "
                 f"not instability"),
        start_step=int(step[blips[0]]), peak_step=int(step[blips[top]]), end_step=int(step[blips[-1]]),
        magnitude=float(ratios[top]),
        evidence={"count": len(blips), "largest_ratio": float(ratios[top]), "per_1000_steps": len(blips) / span * 1000,
                  "blip_threshold_z": float(blip_z),
                  "largest": [{"step": int(step[blips[i]]), "ratio": float(ratios[i])} for i in largest],
                  "steps": [int(step[i]) for i in blips[:50]]})


def _limit_isolated(det: SpikeDetector, findings: list[Finding]) -> tuple[list[Finding], list[int]]:
    """Heavy-tailed per-batch noise makes many one-point blips: above `max_isolated` keep
    the largest few as spikes; the peak steps of the rest go to the outliers summary."""
    blips = [f for f in findings if f.evidence.get("one_point")]
    if len(blips) <= det.max_isolated:
        return findings, []
    keep = set(id(f) for f in sorted(blips, key=lambda f: -(f.magnitude or 0))[: det.keep_isolated])
    demoted = [int(f.peak_step) for f in blips if id(f) not in keep]
    return [f for f in findings if not f.evidence.get("one_point") or id(f) in keep], demoted
