"""Plateaus: stretches where the model is not learning, judged against the run's own
progress and noise, not against a fixed percentage.

A flat stretch alone is not a plateau: a converged fine-tune, the slow tail of a long
run and a continuation that starts late are all flat-looking and healthy. A stretch is
a plateau when something says the model should have been learning there:

- it sits at a chance level, ln(k) for a plausible number of classes or a vocabulary
  (the model predicts the uniform distribution), and does not move within its noise;
- it broke out later: the loss barely moved over the stretch and then fell many times
  as far in as many points (a plateau seen in retrospect), without an LR drop there;
- it never left its first level: a run that starts at step 0 and is flat within its
  noise from its first points to its last.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import priorchance, progress, scores, termchance, tokenchance
from .base import Detector, RunContext, Series, is_running_best
from ..frame import is_adversarial, is_eval, is_reinforcement
from ..model.finding import Finding
from .stats import MAD_TO_SIGMA
from .turns import MEMORISED_FALL, never_improved, turned_from_best
from .twins import stuck_beside_twin

CHANCE_CLASSES = (2, 3, 4, 5, 10, 100, 1000)
"""Class counts a classifier's chance level is checked against (ln k). Others are not:
ln k for k from 6 up is so dense that a converged loss would often sit near one."""
CHANCE_VOCABS = (21128, 30522, 32000, 32100, 32768, 49152, 50257, 50304, 51865, 65024, 65536,
                 100277, 128000, 128256, 151643, 151936, 152064, 250002, 256000)
"""Vocabulary sizes of common tokenizers (BERT, LLaMA, T5, GPT-2, Whisper, Falcon, Qwen,
LLaMA-3, XLM-R, Gemma): a language model predicting uniformly sits at ln(vocab)."""

MAX_POINTS = 600
"""Longer series are judged on the medians of at most this many blocks: a plateau
spans a share of the run, and block medians carry the slow wander that point-to-point
noise misses."""


REWARD_POINTS_FOR_WARNING = 100
"""Logged rewards a 'never learned' warning needs; fewer make it a note."""


@dataclass(frozen=True, kw_only=True)
class PlateauDetector(Detector):
    """A stretch where the training loss is not learning.

    Detects: on the run's main training loss (judged on at most 600 block medians):
    a stretch of at least `min_share` of the run that does not move within its own
    noise (median of its first third against its last, robust z < `max_z`) and sits
    at a chance level ln(k) (k classes or a tokenizer's vocabulary, within
    `chance_tolerance`); or a stretch of at least `min_break_share` of the run that
    moved less than 1/`break_ratio` of what the next as many points fell (at least
    `min_break_fall` in log), with no LR drop at the break, no LR warm-up over the
    stretch, and a level no worse than the run had already reached (a loss recovering
    from a spike is not stuck); or a run that starts at step 0 and is flat within its
    noise from start to end. A flat stretch at another level after an early fall is a
    converged loss, not a plateau; the slow tail of a long run moves far beyond its
    noise; a continuation that starts late is judged only against chance levels.
    Also: a language model's loss still near the uniform level of its vocabulary after
    100 points (`tokenchance`); another loss term at ln k for the whole run while the
    total fell (`termchance`: a head that never learned).
    Why it matters: compute spent on steps that teach the model nothing; stuck at
    chance is usually a setup bug, a late breakthrough says the stuck stretch could
    have been avoided.
    Likely causes: LR far too low or zero, frozen parameters (requires_grad off, an
    optimizer over the wrong parameter list), labels disconnected from inputs, a loss
    not connected to the model output, a blow-up that left the model predicting
    uniformly; before a breakthrough, a saddle or a too-low LR.
    Evidence: the stretch (start, end, points), its level and movement in percent,
    robust z of the movement, the chance level matched, the fall after a breakthrough.
    """

    code = "SL205"
    kind = "plateau"
    roles = ("loss", "reward", "accuracy", "other", "entropy", "eval_loss")
    """A run that logs a reward (reinforcement learning) is judged by its reward: its policy
    loss is not expected to fall. Held-out scores (an eval accuracy, a dice, a WER) are judged
    once per run (see `scores.held_out_scores`)."""

    min_points: int = 5
    """Fewest logged points in a plateau stretch."""
    min_share: float = 0.25
    """A chance-level or never-learned plateau covers at least this share of the run."""
    max_z: float = 3.0
    """A stretch is flat when its movement is under this many standard errors."""
    chance_tolerance: float = 0.02
    """Relative distance of the level to ln(k) that still counts as chance (a model at
    chance is rarely exactly uniform: real binary runs sit at 0.69-0.70)."""
    chance_spread: float = 0.05
    """...and its points spread less than this (robust, log) around their level: a uniform prediction's
    cross-entropy is ln(k) on every batch whatever the batch holds (a model stuck at chance logs
    10.3970 step after step, an N-BEATS epoch loss 2% apart); a loss whose batches spread 10-60% around
    a median that happens to be ln(k) (a diffusion MSE at 0.69) predicts per input: not at chance."""
    max_chance_move: float = 0.01
    """...and a stretch at chance moves less than this (log, about 1%) from its first
    third to its last."""
    min_break_share: float = 0.08
    min_break_fall: float = 0.2
    """The fall after a breakthrough, in log units (about 18%)."""
    break_ratio: float = 8.0
    """The fall after the stretch is at least this many times the stretch's own movement."""
    min_abrupt_fall: float = 0.5
    """A stretch from the run's first tenth that then fell this much (log, about 40%) broke out of a
    plateau however abruptly it fell: a step down at an epoch boundary (a new pass over a small set)
    comes after learning began, not from the level the model started at (a transformer at 10.5 for
    a quarter of its run, then 10.4 -> 5.4 within an epoch)."""
    max_stuck_move: float = 0.08
    """A stuck stretch moves less than this in log (about 8%), whatever falls after it."""
    min_run_share: float = 0.25
    """...and at least this share of the run's whole (log) fall: a breakthrough is a large
    part of what the run learned, not an epoch boundary's or an LR step's drop."""
    min_run_points: int = 8
    min_reward_points: int = 10
    """Fewest logged rewards judged for 'never rose' (17 evaluations of a PPO run that stayed
    at 28-65 say it; under `REWARD_POINTS_FOR_WARNING` it is a note)."""
    zero_level: float = 1e-12
    zero_share: float = 0.5
    """A main loss under `zero_level` (0, or a denormal such as 1.7e-35) on this share of its
    points, and of its first tenth, never had a training signal."""
    max_blind_fall: float = 0.25
    """'Never learned' needs a test that could have seen learning: the smallest fall (log,
    about 22%) its noise lets it tell from flat must be under this. Two hundred batches of
    a loss that swings 70% batch to batch (blind to a 34% fall), or 50 single-batch losses
    that swing 20% (blind to 24%), cannot tell a slow start from no learning."""

    min_never_points: int = 12
    """Fewest points (after block medians) a 'never left its first level' reading needs: 12 epochs
    flat within 2% from the first say it (an AlphaZero policy loss at 2.25 over 16 epochs)."""
    max_never_move: float = 0.015
    """...and a movement under this (log, about 1.5%) from its first third to its last is immaterial
    however precise the points are (a linear probe's epoch loss from 1.045 to 1.032 over 50 epochs)."""

    min_view_points: int = 4
    min_view_fall: float = 0.1
    min_view_order: float = 0.6
    """A flat loss is no 'never learned' (a note) while another view of the same training logged from
    the start (its per-epoch average, the held-out loss; at least `min_view_points` points) fell this much
    in log (about 10%, first point to the median of its last third), in order: the rank correlation of its
    points with time at or below -`min_view_order`."""

    min_few_points: int = 3
    loud_few_points: int = 4
    max_few_move: float = 0.02
    """A run of fewer than `min_run_points` points is judged only at chance: from `min_few_points`
    points all at ln(k) that moved less than this (log, about 2%) from the first to the last; a warning
    from `loud_few_points`."""

    min_frozen_points: int = 20
    min_frozen_share: float = 0.25
    """A loss (or a policy's entropy) exactly the same on its last points, this many in a row
    and this share of the run, is frozen."""
    max_frozen_quantum: float = 0.01
    """...when the log resolves it to 1% of its level or finer (0.0138 printed to 4 decimals is
    0.7%; a loss printed as 0.25 could sit there by rounding)."""
    max_floor_share: float = 1e-6
    """A value frozen under this share of where the curve began is a loss that reached zero at the
    float's floor (1.8 -> 7.9e-31), a finished fit, not a model that stopped being updated."""
    min_stall_share: float = 0.5
    """A score that stopped improving for at least this share of its points (after it had
    improved) is a note: the steps after it bought nothing on that score."""
    min_train_fall: float = 0.3
    """...for a held-out score, while the training loss still fell this much in log (about
    26%) over the same steps: the model kept fitting the training set and nothing of it
    reached the held-out set (a converged run's last epochs move its loss far less)."""
    min_score_train_fall: float = 0.1
    """A held-out score at zero or chance is its own finding only while the training loss fell
    this much (log) over the run; otherwise the training loss's own plateau is the finding."""
    min_frozen_evals: int = 3
    """An accuracy exactly the same at this many evaluations or more, at 1/k, is one answer for every
    input..."""
    loud_frozen_evals: int = 5
    """...a warning from this many, with a finite training loss that fell `min_score_train_fall`
    (fewer, or a loss that went NaN: a note)."""
    min_chance_share: float = 0.1
    """A held-out accuracy at 1/k from its first evaluation over this share of them (and five)
    sat at chance."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        if series.role in ("loss", "other"):
            twin = self._stuck_twin(series, ctx)
            if twin is not None:
                return [twin]
            term = self._term_at_chance(series, ctx) if series.role == "loss" else None
            if term is not None:
                return [term]
        if series.role == "reward":
            if series is not ctx.main("reward"):
                return []
            if is_eval(series.metric) and ctx.main("loss") is not None and not is_reinforcement(ctx.roles):
                return []  # a supervised run's held-out score named like one (`val/symmetry_scores/1`): no return
            return self._reward_flat(series, ctx) or self._reward_stalled(series, ctx)
        if series.role in ("accuracy", "other"):
            frozen = self._frozen_at_chance(series, ctx)
            if frozen is not None:
                return [frozen]
            return self._held_out(series, ctx) if scores.direction(series) else []
        if series.role == "eval_loss":
            return self._eval_loss_stalled(series, ctx)
        if series.role == "entropy":
            frozen = self._frozen(series, ctx) if series is ctx.main("entropy") else None
            return [frozen] if frozen is not None else []
        if series is not scores.judged_loss(ctx):
            return []
        if _running_best_of(series, ctx):
            return []  # a best-so-far column (min_loss) holds while the curve it tracks moves: its story
        frozen = self._frozen(series, ctx)
        if frozen is not None:
            return [frozen]
        if ctx.main("reward") is not None:
            return []
        step, value = _usable(series)
        if step.size < self.min_run_points:
            few = self._few_at_chance(series, ctx, step, value)
            return [few] if few is not None else []
        zero = self._numerically_zero(series, ctx, step, value)
        if zero is not None:
            return [zero]
        s, y, is_log = _compressed(step, value)
        m = y.size
        chance = self._at_chance(s, y, is_log, m)
        if chance is not None and (not_chance(chance["chance"], series, ctx, step, value, self.chance_tolerance)
                                   or _spread_past_chance(value[step >= s[chance["a"]]], self.chance_spread)):
            chance = None
        found = chance or self._broke_out(s, y, is_log, m, ctx) or self._never_learned(s, y, is_log, m)
        if found is None:
            vocab = self._vocab_chance(series, ctx, step, value)
            if vocab is not None:
                return [vocab]
            prior = priorchance.at_prior(series, ctx, value) if _from_the_start(ctx, step) else None
            if prior is not None:
                return [self._prior_finding(series, ctx, step, prior)]
            stopped = self._stopped(series, ctx, s, y, is_log) if _from_the_start(ctx, step) else None
            return [stopped] if stopped is not None else []
        if not found.get("above_start") and not _began_at_chance(y, is_log, found, self.chance_tolerance):
            found["a"] = _settled_from(y, found["a"], found["b"])
        out = self._finding(series, ctx, s, y, is_log, found)
        rose = scores.accuracy_rose(ctx) if found["how"] == "never" else None
        if rose and out.severity != "info":  # the flat loss does not say what the model learned
            out.severity = "info"
            out.message += (f"; but {rose[0]} rose from {rose[1]:.4g} to {rose[2]:.4g}: the model learned what it "
                            f"measures (a loss whose targets move, or too noisy to show it), a note")
            out.evidence["note_because"] = "accuracy_rose"
        fell = self._other_view_fell(series, ctx) if found["how"] == "never" and out.severity != "info" else None
        if fell:  # a steady fall of the same training seen with less noise: learning the noisy curve hides
            out.severity = "info"
            out.message = out.message.removesuffix(": the model is not learning")
            out.message += (f"; but {fell[0]} fell steadily from {fell[1]:.4g} to {fell[2]:.4g} "
                            f"({-np.expm1(-fell[3]) * 100:.0f}%): the model learned, more slowly than {series.label}'s "
                            f"noise shows, a note")
            out.evidence["note_because"] = "other_view_fell"
            out.evidence["other_view"] = fell[0]
        return [out]

    def _prior_finding(self, series: Series, ctx: RunContext, step: np.ndarray, prior: dict) -> Finding:
        """A binary classifier whose loss fell from ln 2 only to the entropy of its class prior (`priorchance`)."""
        share = prior["share"]
        msg = (f"{series.label} fell from ln(2) only to {prior['level']:.4g} and held there to the end: "
               f"{prior['entropy']:.4g} is the entropy of a {share:.0%}/{1 - share:.0%} class prior, and "
               f"{prior['accuracy']} sat at {share:.3g}, the majority class's share: the model learned the base rate "
               f"and nothing of its inputs (it predicts the larger class)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                       evidence={"reading": "prior", "level": prior["level"], "prior_entropy": prior["entropy"],
                                 "majority_share": share, "accuracy": prior["accuracy"], "chance_classes": 2})

    def _stopped(self, series: Series, ctx: RunContext, s: np.ndarray, y: np.ndarray, is_log: bool) -> Finding | None:
        """The loss fell early and then made no material progress for at least `min_stall_share` of
        the run (`progress.stopped_from`): a note, since a run left going after it converged looks the
        same; the LR at the plateau's start is named when it had decayed to a floor."""
        hit = progress.stopped_from(s, y, self.min_stall_share, is_log)
        if hit is None:
            return None
        a = hit["a"]
        start, end = int(s[a]), int(s[-1])
        share = (s[-1] - s[a]) / max(s[-1] - s[0], 1)
        level = float(np.exp(hit["level"])) if is_log else hit["level"]
        if is_log:
            rest, total = -np.expm1(-hit["rest"]) * 100, -np.expm1(-hit["total"]) * 100
            moves = f"it moved {-rest:+.1f}% to the end ({share:.0%} of the run), against the {total:.0f}% it fell before"
        else:  # a loss read on its values (one that goes negative): its moves in its own units
            rest, total = hit["rest"], hit["total"]
            moves = (f"it moved {-rest:+.3g} to the end ({share:.0%} of the run), against the {total:.3g} it fell "
                     f"before")
        lr = _lr_floor(ctx, start)
        msg = (f"{series.label} stopped improving at step {start}: from {level:.4g} there {moves}"
               + (f"; the learning rate had decayed to {lr[0]:.3g}, {lr[1]:.1%} of its peak" if lr else "")
               + ": the steps after it bought almost nothing (converged, or stuck on a plateau)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="info",
                       message=msg, start_step=start, end_step=end,
                       evidence={"reading": "stopped", "level": level, "points": int(y.size - a),
                                 **({"moved_percent": float(-rest), "run_fall_percent": float(total)} if is_log
                                    else {"moved": float(-rest), "run_fall": float(total)}),
                                 "rest_share": float(hit["rest"] / hit["total"]), "share": float(share),
                                 "chance_classes": None, **({"lr_at_start": lr[0]} if lr else {})})

    def _vocab_chance(self, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray) -> Finding | None:
        """A loss logged from the start that began at a tokenizer's uniform level and stayed near it
        (`tokenchance.stayed_at_vocab_chance`): a language model that learned not even its tokens'
        frequencies. Not for a total of logged terms, nor when an accuracy rose or another view of
        the same loss fell steadily (the model learned what they show)."""
        hit = tokenchance.stayed_at_vocab_chance(value, CHANCE_VOCABS) if _from_the_start(ctx, step) else None
        if hit is None or _terms_of(series, ctx) or scores.accuracy_rose(ctx) or self._other_view_fell(series, ctx):
            return None
        level = (f"above {hit['chance']:.4g}, the uniform level over the largest tokenizer vocabulary "
                 f"({max(CHANCE_VOCABS):,} tokens): worse than guessing every token uniformly" if hit["above"] else
                 f"{(hit['end'] / hit['chance'] - 1) * 100:+.0f}% from {hit['chance']:.4g}, where it started: "
                 f"ln V, the uniform guess over a vocabulary of about {np.exp(hit['chance']):,.0f} tokens")
        msg = (f"{series.label} stayed at a language model's chance level: {hit['start']:.4g} over its first points, "
               f"{hit['end']:.4g} over its last fifth ({hit['points']} points to step {int(step[-1])}), {level}; "
               f"token frequencies alone take a language model several nats below it within its first hundred "
               f"steps: the model is not learning (a broken loss or objective, labels not aligned with the "
               f"inputs, a learning rate far too low)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                       evidence={"reading": "vocab_chance", "level": hit["end"], "first_level": hit["start"],
                                 "chance_level": hit["chance"], "above_chance": hit["above"],
                                 "points": hit["points"], "chance_classes": None})

    def _other_view_fell(self, series: Series, ctx: RunContext) -> tuple[str, float, float, float] | None:
        """Another view of the same training (the loss's per-epoch average, the run's main held-out loss),
        logged from the start, that fell steadily by `min_view_fall` or more: (its name, first value, last
        level, fall in log). A per-batch loss that swings 20% hides a 16% fall its epoch averages show in
        order (0.434, 0.357, 0.353, 0.341, 0.344): the model learned, however flat the noisy curve looks.
        Another loss term is no such view (a capsule net's reconstruction loss falls while its classifier
        learns nothing): a training loss counts only under the same name but for how it was aggregated."""
        held = ctx.main("eval_loss")
        views = [o for o in ctx.by_role("loss") if view_name(o.metric) == view_name(series.metric)]
        for other in sorted(views, key=lambda o: o.metric) + ([held] if held is not None else []):
            if other is series or not len(other):
                continue
            st, v = other.finite()
            if v.size < self.min_view_points or not (v > 0).all() or not _from_the_start(ctx, st):
                continue
            y = np.log(v)
            third = max(1, y.size // 3)
            fall = float(y[0] - np.median(y[-third:]))
            order = -float(np.corrcoef(np.arange(y.size), np.argsort(np.argsort(y)))[0, 1]) if np.ptp(y) else 0.0
            if fall >= self.min_view_fall and order >= self.min_view_order:
                return other.label, float(v[0]), float(np.exp(np.median(y[-third:]))), fall
        return None

    def _stuck_twin(self, series: Series, ctx: RunContext) -> Finding | None:
        """A term that never moved while its twin (the same term for the model's other direction or
        branch, `twins.twin_of`) fell to under half: one path of the model never learned. Once per
        run, on the first such term by name."""
        first = _stuck_twins(ctx)
        if not first or first[0] != series.metric:
            return None
        hit = first[1]
        msg = (f"{series.label} never learned: {hit['first']:.4g} at its start, {hit['level']:.4g} at its end "
               f"({hit['points']} points) while its twin {hit['twin']} fell from {hit['twin_first']:.4g} to "
               f"{hit['twin_last']:.4g}: the steps reached one path of the model and not the other (a saturated "
               f"loss, a branch whose gradients are cut or whose inputs are wrong)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=hit["start"], end_step=hit["end"],
                       evidence={"reading": "never", "level": hit["level"], "points": hit["points"],
                                 "twin": hit["twin"], "twin_first": hit["twin_first"], "twin_last": hit["twin_last"],
                                 "chance_classes": None})

    def _term_at_chance(self, series: Series, ctx: RunContext) -> Finding | None:
        """Another training loss of the run that sat at ln k from its start to its end while the judged
        loss fell (`termchance.term_at_chance`): one head of the model never learned, hidden in a total
        that fell. Once per run, on the first such term by name."""
        hit = _terms_at_chance(ctx)
        if not hit or hit[0] != series.metric:
            return None
        h, total = hit[1], scores.judged_loss(ctx)
        msg = (f"{series.label} sat at chance for the whole run: {h['first']:.4g} over its first third, {h['last']:.4g} "
               f"over its last ({h['points']} points to step {h['end']}), ln({h['k']}) = {np.log(h['k']):.4g}, the "
               f"level of a uniform guess over {h['k']} outcomes, while {total.label} fell from {h['total_first']:.4g} "
               f"to {h['total_last']:.4g}: the rest of the model learned and this head did not (its targets or "
               f"labels not reaching it, a loss weight of zero, a head detached from the features)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=h["start"], end_step=h["end"],
                       evidence={"reading": "chance", "level": h["level"], "points": h["points"], "chance_classes": h["k"],
                                 "term_of": total.metric, "total_first": h["total_first"],
                                 "total_last": h["total_last"]})

    def _few_at_chance(self, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray) -> Finding | None:
        """A run of a few points (`min_few_points` up to `min_run_points`) logged from the start whose
        points, from the first (or the second: an untrained first epoch above chance), all sit at one
        chance level ln(k) and never fell (`max_few_move`): a BERT fine-tune at 0.6957, 0.6926, 0.6918,
        0.6912 over its four epochs never left ln 2, however few points say so. A note under
        `loud_few_points`."""
        if value.size < self.min_few_points or not (value > 0).all() or not _from_the_start(ctx, step):
            return None
        for a in (0, 1):
            v = value[a:]
            if v.size < self.min_few_points or (a and value[0] < np.max(v)):
                break  # (a first point under the rest is a start that rose, not an untrained one above chance)
            k = _few_chance(v, self.chance_tolerance, self.max_few_move)
            if k is None or not_chance(k, series, ctx, step, value, self.chance_tolerance):
                continue
            s, y, is_log = _compressed(step, value)
            moved = float(np.log(v[0]) - np.log(v[-1]))
            out = self._finding(series, ctx, s, y, is_log, {"how": "chance", "a": a, "b": y.size, "z": 0.0,
                                                              "moved": moved, "chance": k, "few": True})
            if v.size < self.loud_few_points:
                out.severity = "info"
            return out
        return None

    def _reward_flat(self, series: Series, ctx: RunContext) -> list[Finding]:
        """A reward that never rose: from its first points to its last, no rise beyond its
        noise and one level throughout (a run of a reinforcement learner that learned nothing)."""
        step, value = series.finite()
        if step.size < self.min_reward_points or not _from_the_start(ctx, step):
            return []
        s, y = _blocks(step, value.astype(np.float64))  # on its own scale: a reward may be negative
        z, fall = _movement(y)
        quantum = _resolution(value)
        if abs(fall) < quantum:
            z = 0.0  # the medians of values that repeat moved by less than one step between them: no move
        d = np.diff(y)
        point_sigma = MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2.0)
        # values printed to one step (0.0971-0.0975 on 615 tables) give block medians two steps apart by rounding
        # alone (and the half step an even block's median falls on), while a rolling mean's repeated values leave
        # no point-to-point noise to allow for it
        if -z > self.max_z or not _steady(y, max(point_sigma, 2.5 * quantum)):
            return []  # it rose, or it wandered between levels
        level = float(np.median(y))
        within = f"less than the {quantum:.3g} between its values" if quantum > abs(fall) else "within its noise"
        msg = (f"{series.label} never rose: {level:.4g} from step {int(s[0])} to the end (moved "
               f"{-fall:+.3g}, {within}): "
               # a fitness or a reward model's score has no policy: name what the run trains
               + ("the policy is not learning" if is_reinforcement(ctx.roles) else "the model is not learning what it scores"))
        # a few dozen rewards cannot tell a slow rise from their noise (a GRPO run logs 40): a note
        severity = "warning" if step.size >= REWARD_POINTS_FOR_WARNING else "info"
        return [Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity=severity,
                        message=msg, start_step=int(s[0]), end_step=int(s[-1]),
                        evidence={"reading": "never", "level": level, "moved": float(-fall), "robust_z": float(-z),
                                  "points": int(s.size), "higher_is_better": True, "reward_flat": True})]

    def _frozen(self, series: Series, ctx: RunContext) -> Finding | None:
        """The same value logged over and over to the end of the run (at least `min_frozen_share`
        of the points and `min_frozen_points` in a row), at a resolution finer than
        `max_frozen_quantum` of its level: nothing is being updated (an LR decayed to zero, frozen
        parameters, a policy whose entropy never changes), however the run was logged."""
        step, v = series.finite()
        n = v.size
        if n < self.min_frozen_points:
            return None
        same = v[1:] == v[:-1]
        if not same[-1]:
            return None
        a = n - 1 - int(np.argmax(~same[::-1])) if not same.all() else 0  # the first point of the last run
        length = n - a
        if length < max(self.min_frozen_points, self.min_frozen_share * n):
            return None
        diffs = np.abs(np.diff(np.unique(v)))
        quantum = float(diffs[diffs > 0].min()) if (diffs > 0).any() else 0.0
        level = abs(float(v[-1]))
        if level == 0 or (quantum and quantum > self.max_frozen_quantum * level):
            return None  # a value at zero (another reading) or printed too coarsely to tell
        start = float(np.max(np.abs(v[:max(1, n // 10)])))
        if level < self.max_floor_share * start:
            return None  # fell to the float's floor: fitted to zero, not frozen
        which = f"all its {length} logged points" if a == 0 else f"every one of its last {length} logged points"
        moving = _moving_sibling(series, ctx, int(step[a]), self.max_frozen_quantum) if series.role == "loss" else None
        if moving is not None:
            name, spread = moving
            msg = (f"{series.label} was exactly {v[-1]:.6g} on {which}, from step {int(step[a])} to the end, while "
                   f"{name}, another training loss of the run, moved {100 * spread:.0f}% over the same steps: the "
                   f"model was being updated; a constant the logger prints (an unused head, a placeholder, an "
                   f"average of a flag), a note")
        else:
            msg = (f"{series.label} was exactly {v[-1]:.6g} on {which}, from step {int(step[a])} to the end: nothing is "
                   f"being updated (a learning rate decayed to zero, frozen parameters, an optimizer over the wrong "
                   f"parameters, a policy that never changes)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric,
                       severity="info" if moving else "warning",
                       message=msg, start_step=int(step[a]), end_step=int(step[-1]),
                       evidence={"reading": "frozen", "level": float(v[-1]), "points": int(length),
                                 "moved_percent": 0.0, "chance_classes": None,
                                 **({"constant_term": True, "note_because": "siblings_moved",
                                     "moving_loss": moving[0]} if moving else {})})

    def _frozen_at_chance(self, series: Series, ctx: RunContext) -> Finding | None:
        """An accuracy logged with exactly the same value at every one of its evaluations (at least
        `min_frozen_evals`), at a chance level 1/k (`scores.frozen_chance`): the model gives one answer
        whatever the input (weights gone NaN, a head that outputs a constant). Once per run, on the
        first such accuracy by name; a note when the training loss is not finite (the NaN is the
        event, this is what it did) or with few evaluations; nothing when the training loss stood
        still (its own plateau is the finding, and names the accuracy)."""
        found = [s for s in ctx.series.values() if s.role == "accuracy" and scores.frozen_chance(s, self.min_frozen_evals)]
        if not found or series is not min(found, key=lambda s: s.metric):
            return None
        step, v = series.finite()
        k = scores.frozen_chance(series, self.min_frozen_evals)
        train = scores.judged_loss(ctx)
        broken = train is not None and not np.isfinite(train.value).all()
        msg = (f"{series.label} was exactly {v[0]:.4g} at all {v.size} evaluations from step {int(step[0])} to "
               f"{int(step[-1])}: chance accuracy for {k} classes, one answer whatever the input"
               + (f" ({train.label} is not finite: the weights it left predict one class)" if broken else
                  ": the model never learned (a head that outputs a constant, labels the model cannot see)"))
        fell = _log_change(train, int(train.step[0]), int(train.step[-1])) if train is not None and not broken else None
        if train is not None and not broken and (fell is None or fell > -self.min_score_train_fall):
            return None  # a training loss that stood still has its own plateau, which names this accuracy
        loud = fell is not None and v.size >= self.loud_frozen_evals
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric,
                       severity="warning" if loud else "info", message=msg,
                       start_step=_run_start(ctx, int(step[0])), end_step=int(step[-1]),
                       evidence={"reading": "chance", "level": float(v[0]), "points": int(v.size),
                                 "chance_classes": k, "frozen": True, "higher_is_better": True})

    def _reward_stalled(self, series: Series, ctx: RunContext) -> list[Finding]:
        """A reward that rose and then stopped improving for the rest of the run (at least
        `min_stall_share` of it): a note, since a converged policy looks the same."""
        step, value = series.finite()
        if step.size < self.min_reward_points:
            return []
        s, y = _blocks(step, value.astype(np.float64))
        a = scores.stalled_from(y, self.min_stall_share)
        if a is None:
            return []
        return [self._stall_finding(series, ctx, s, y, a, "")]

    def _held_out(self, series: Series, ctx: RunContext) -> list[Finding]:
        """Held-out scores, judged once per run (on the first of them): one that never rose
        above zero, one that sat at a chance accuracy from its first evaluation, one that
        stopped improving while the training loss still fell; the first reading that holds."""
        train = scores.judged_loss(ctx)
        train = train if train is not None and train.role == "loss" else None
        held = scores.held_out_scores(ctx, train)
        if not held or series is not held[0]:
            return []
        if train is not None:
            fell = _log_change(train, int(train.step[0]), int(train.step[-1]))
            if fell is None or abs(fell) < self.min_score_train_fall:
                return []  # the training loss stood still too: its own plateau is the finding
        for s in held:
            if scores.never_above_zero(s) and not _ranked_hits(s):
                return [self._zero_score(s, ctx)]
        late = []  # a score that sat at chance and broke out late (a note) may still stall after it
        for s in held:
            found = self._chance_score(s, ctx)
            if found is not None and found.severity != "info":
                return [found]
            if found is not None and not late:
                late = [found]
        for s in held:
            found = self._score_never_improved(s, ctx) if not late else None
            if found is not None:
                return [found]
        if train is None:
            return late  # (a stall needs the training loss that kept falling beside it)
        for s in held:
            if turned_from_best(s, train) is not None:
                continue  # it fell from its best while the training loss fell: overfitting's
            st, y = scores.oriented(s)
            st, y = _blocks(st, y)
            a = scores.stalled_from(y, self.min_stall_share)
            if a is None:
                continue
            fell = _log_change(train, int(st[a]), int(st[-1]))
            if fell is not None and fell <= -self.min_train_fall:
                note = f" while {train.label} still fell {-np.expm1(fell) * 100:.0f}%"
                return late + [self._stall_finding(s, ctx, st, y, a, note)]
        return late

    def _eval_loss_stalled(self, series: Series, ctx: RunContext) -> list[Finding]:
        """The main eval loss held one level for at least `min_stall_share` of its evaluations
        (after it had fallen) while the training loss still fell `min_train_fall` over the same
        steps: the model kept fitting its training set and none of it reached the held-out set (a
        note; an eval loss that turned up from its best is overfitting's). One that never improved on
        its first evaluations while the training loss fell a little is a note too (`turns.never_improved`;
        with a fall of `turns.MEMORISED_FALL` or more, overfitting's). A run that logs no training loss gets the note on the
        eval loss's stall alone, as a reward's."""
        train = ctx.main("loss")
        if series is not ctx.main("eval_loss"):
            return []
        frozen = self._frozen_eval(series, ctx, train)
        if frozen is not None:
            return [frozen]
        step, v = series.finite()
        if v.size < self.min_reward_points or v.min() <= 0 or turned_from_best(series, train) is not None:
            return []
        flat = never_improved(series, train) if scores.from_the_start(step, ctx) else None
        if flat is not None and flat["train_change"] > -MEMORISED_FALL:  # (a larger fall: overfitting's)
            return [self._eval_never_improved(series, ctx, flat, train)]
        st, y = _blocks(step, -v.astype(np.float64))  # turned so that higher is better (shown on its own scale)
        # judged on its log: a loss that fell from 2.1 to 0.27 and on to 0.19 still learns 30%, which is
        # under a twentieth of what it gained on its own scale
        a = scores.stalled_from(_blocks(step, -np.log(v))[1], self.min_stall_share)
        if a is None:
            return []
        if train is None:  # a run that logs only its eval loss: it is the run's curve, a stall as a reward's
            return [self._stall_finding(series, ctx, st, y, a, "")]
        fell = _log_change(train, int(st[a]), int(st[-1]))
        if fell is None or fell > -self.min_train_fall:
            return []  # the training loss converged too: a finished run
        note = f" while {train.label} still fell {-np.expm1(fell) * 100:.0f}%"
        return [self._stall_finding(series, ctx, st, y, a, note)]

    def _frozen_eval(self, series: Series, ctx: RunContext, train: Series | None) -> Finding | None:
        """The main eval loss exactly the same at every one of its last evaluations (`_frozen`'s test) while
        the training loss still moved: the model it evaluates no longer changed (weights no longer
        updated, an LR at zero, a stale checkpoint evaluated), and each training batch differs. A note:
        the log cannot tell which."""
        frozen = self._frozen(series, ctx) if train is not None and train.metric != series.metric else None
        if frozen is None:
            return None
        tst, tv = train.finite()
        tv = tv[tst >= frozen.start_step]
        if tv.size < 2 or float(np.ptp(tv)) <= self.max_frozen_quantum * abs(float(np.median(tv))):
            return None  # the training loss stood still too: its own finding
        ev = frozen.evidence
        frozen.severity = "info"
        frozen.message = (f"{series.label} was exactly {ev['level']:.6g} at every one of its last {ev['points']} "
                          f"evaluations, from step {frozen.start_step} to the end, while {train.label} still moved "
                          f"batch to batch: the model evaluated no longer changed (weights no longer updated: an LR "
                          f"at zero, frozen parameters, a stale checkpoint evaluated)")
        ev["held_out"] = True
        return frozen

    def _eval_never_improved(self, series: Series, ctx: RunContext, flat: dict, train: Series) -> Finding:
        """The main eval loss never got better than its first evaluations while the training loss
        fell a little (`turns.never_improved`): a note; what the steps taught did not generalise."""
        msg = (f"{series.label} never improved: {flat['first_value']:.4g} over its first evaluations, "
               f"{flat['last_value']:.4g} over its last ({flat['evals']} evaluations from step {flat['first_step']}, "
               f"within its noise) while {train.label} fell {-np.expm1(flat['train_change']) * 100:.0f}%: nothing the "
               f"run learned reached the held-out set")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="info", message=msg,
                       start_step=_run_start(ctx, flat["first_step"]), end_step=flat["last_step"],
                       evidence={"reading": "never", "level": flat["last_value"], "points": flat["evals"],
                                 "held_out": True, "direction": "lower", "train_change_log": flat["train_change"]})

    def _score_never_improved(self, s: Series, ctx: RunContext) -> Finding | None:
        """A held-out score evaluated from the start of the run (`min_reward_points` times or
        more) that never improved beyond its noise from its first third to its last and held one
        level: the run taught the model nothing it could show on that set (a note: a model that
        starts good looks the same)."""
        step, y = scores.oriented(s)
        if y.size < self.min_reward_points or not scores.from_the_start(step, ctx):
            return None
        z, fall = _movement(y)
        if -z > self.max_z or not _steady(y, self.max_stuck_move * max(abs(float(np.median(y))), 1e-9)):
            return None
        sign = scores.direction(s)
        level = float(np.median(y)) * sign
        msg = (f"{s.label} never improved: {level:.4g} from its first evaluation at step {int(step[0])} to its last "
               f"at step {int(step[-1])} ({y.size} evaluations, within its noise): nothing the run learned showed on "
               f"that set")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=s.metric, severity="info", message=msg,
                       start_step=_run_start(ctx, int(step[0])), end_step=int(step[-1]),
                       evidence={"reading": "never", "level": level, "points": int(y.size), "held_out": True,
                                 "direction": "higher" if sign > 0 else "lower", "robust_z": float(-z)})

    def _zero_score(self, s: Series, ctx: RunContext) -> Finding:
        step, v = s.finite()
        shown = ", ".join(f"{x:.3g}" for x in v[:6]) + (", ..." if v.size > 6 else "")
        msg = (f"{s.label} never rose above zero: {shown} at all {v.size} evaluations from step {int(step[0])} to "
               f"{int(step[-1])}: the model never got an answer right on that set (labels or classes mapped wrong "
               f"for evaluation, an empty target, a metric fed the wrong output)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=s.metric, severity="warning",
                       message=msg, start_step=_run_start(ctx, int(step[0])), end_step=int(step[-1]),
                       evidence={"reading": "never", "level": float(np.median(v)), "points": int(v.size),
                                 "higher_is_better": True, "held_out": True, "first_evaluation": int(step[0])})

    def _chance_score(self, s: Series, ctx: RunContext) -> Finding | None:
        """An accuracy at 1/k from its first evaluation over at least `min_chance_share` of
        them (and 3): to the end, the model never learned; else it broke out late (a note)."""
        step, v = s.finite()
        need = max(5, int(np.ceil(self.min_chance_share * v.size)))
        if v.size < 5 or scores.chance_accuracy(s, v[:need]) is None:
            return None
        b = need
        while b < v.size and scores.chance_accuracy(s, v[:b + 1]) is not None:
            b += 1
        k = scores.chance_accuracy(s, v[:b])
        if (outcomes := _untrained_outcomes(ctx)) is not None and MORE_OUTCOMES * k <= outcomes <= MAX_CLASSES:
            return None  # the untrained model's loss counts many more classes: 1/k is not its chance
        level = float(np.median(v[:b]))
        whole = b == v.size
        span = f"from step {int(step[0])} to {'the end' if whole else f'step {int(step[b - 1])}'}"
        msg = (f"{s.label} sat at {level:.4g} {span} ({b} evaluations): chance accuracy for {k} classes"
               + (": the model never learned" if whole else
                  f", then rose to {float(np.max(v[b:])):.4g}: it learned only after a long stretch at chance"))
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=s.metric,
                       severity="warning" if whole else "info", message=msg,
                       start_step=_run_start(ctx, int(step[0])) if whole else int(step[0]),
                       end_step=int(step[b - 1]),
                       evidence={"reading": "chance", "level": level, "points": int(b), "chance_classes": k,
                                 "held_out": True, **({"higher_is_better": True} if whole else {})})

    def _stall_finding(self, s: Series, ctx: RunContext, st: np.ndarray, y: np.ndarray, a: int,
                       note: str) -> Finding:
        sign = scores.direction(s) or (-1 if s.role == "eval_loss" else 1)  # (an eval loss is judged negated)
        level = float(np.median(y[a:])) * sign
        best = float(np.max(y)) * sign
        share = (st[-1] - st[a]) / max(st[-1] - st[0], 1)
        msg = (f"{s.label} stopped improving at step {int(st[a])}: {level:.4g} from there to the end "
               f"({share:.0%} of the run, best {best:.4g}, within its noise){note}: the steps after it bought "
               f"nothing on this score (converged, or stuck on a plateau)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=s.metric, severity="info",
                       message=msg, start_step=int(st[a]), end_step=int(st[-1]),
                       evidence={"reading": "stalled", "level": level, "best": best, "points": int(y.size - a),
                                 "direction": "higher" if sign > 0 else "lower"})

    def _numerically_zero(self, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray) -> Finding | None:
        """A training loss that is 0 or denormal (under `zero_level`) on most logged steps from
        its first: no training signal (a loss that underflows in fp16, a mask that drops every
        target); a loss never sits at 0 from step 1."""
        zero = np.abs(value) < self.zero_level
        head = zero[:max(3, value.size // 10)]
        if zero.mean() < self.zero_share or head.mean() < self.zero_share or step[0] > 0.05 * max(step[-1], 1):
            return None
        shown = ", ".join(f"{v:.3g}" for v in value[:4])
        fitted = _fitted_every_batch(ctx, step[zero])
        if fitted is not None:  # the loss is zero because every training example is right: no fault of the signal
            return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="info",
                           message=(f"{series.label} printed 0 on {int(zero.sum())} of its {value.size} logged steps "
                                    f"({shown}, ...) while {fitted} read 100%: the model fits every training batch "
                                    f"(memorised); judge it by its held-out curves"),
                           start_step=int(step[zero][0]), end_step=int(step[-1]),
                           evidence={"reading": "memorised", "level": 0.0, "zero_points": int(zero.sum()),
                                     "points": int(value.size), "accuracy": fitted})
        msg = (f"{series.label} was numerically zero on {int(zero.sum())} of its {value.size} logged steps from the "
               f"first ({shown}, ...): no training signal (a loss that underflows in fp16, a mask that drops every "
               f"target, a loss detached from the model)")
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=int(step[0]), end_step=int(step[-1]),
                       evidence={"reading": "zero", "level": float(np.median(value)), "moved_percent": 0.0,
                                 "zero_points": int(zero.sum()), "points": int(value.size), "chance_classes": None})

    def _blind(self, y: np.ndarray) -> bool:
        """Is the smallest fall this stretch's noise lets `_movement` tell from flat over
        `max_blind_fall`?"""
        z, moved = _movement(y)
        return bool(moved) and self.max_z * abs(moved / z) > self.max_blind_fall

    # -- the three readings
    def _at_chance(self, s, y, is_log, m):
        """Earliest start from which the loss stays flat at ln(k) to the end."""
        min_len = max(self.min_points, int(np.ceil(self.min_share * m)))
        for a in range(0, m - min_len + 1, max(1, m // 60)):
            z, moved = _movement(y[a:])
            if abs(moved) > self.max_chance_move:
                continue
            k = _sits_at_chance(y[a:], is_log, self.chance_tolerance, early=a <= m // 10)
            # a steady drift beyond its noise is still chance while every point from the run's first tenth on stays
            # in ln k's band (0.6985 -> 0.6890 over 18 epochs: significant, and 0.7% at the level of a coin); a
            # converged tail that drifts near some ln k after a fall is no model stuck at chance
            if k is not None and (abs(z) <= self.max_z
                                  or (a <= m // 10 and _inside_chance(y[a:], is_log, k, self.chance_tolerance))):
                return {"how": "chance", "a": a, "b": m, "z": z, "moved": moved, "chance": k}
        return None

    def _broke_out(self, s, y, is_log, m, ctx):
        """The longest stretch that barely moved and was followed by a large fall: stretch
        lengths from the whole run down, break points a tenth of a length apart, the
        medians of all of one length's windows in one vectorised call."""
        min_len = max(self.min_points, int(np.ceil(self.min_break_share * m)))
        early = max(1, m // 10)  # the run's progress after its first tenth (an init transient is not progress)
        total = float(np.median(y[early:early + max(1, m // 20)])) - float(np.min(_smooth(y, max(3, m // 20))))
        epochs = _epoch_starts(ctx, m)
        lengths = sorted({int(round(min_len * 1.12 ** i)) for i in range(200) if min_len * 1.12 ** i <= m - 3},
                         reverse=True)
        for length in lengths:
            k = max(1, length // 3)
            # a break with a sixth of the stretch left to the end still counts, its fall measured to the end: a
            # run stuck at chance for 85% of it that broke out in its last epochs (a memorising classifier)
            b = np.arange(length, m - max(3, length // 6) + 1, max(1, length // 10))
            if b.size == 0:
                continue
            first = _window_medians(y, b - length, k)
            end = _window_medians(y, b - k, k)
            after = np.empty(b.size)
            full = b + length <= m
            after[full] = _window_medians(y, b[full] + length // 2, length - length // 2)
            for i in np.flatnonzero(~full):  # the last breaks: the fall is measured to the end of the run
                after[i] = np.median(y[b[i] + (m - b[i]) // 2:])
            moved, fall = first - end, end - after
            ok = (fall >= max(self.min_break_fall, self.min_run_share * total)) & (np.abs(moved) * self.break_ratio <= fall) \
                & (np.abs(moved) <= self.max_stuck_move)
            for i in np.flatnonzero(ok):
                bi, ai = int(b[i]), int(b[i]) - length
                if (_abrupt(y, s, bi, length, fall[i], epochs) and not (ai <= early and fall[i] >= self.min_abrupt_fall)) \
                        or not _steady(y[ai:bi], min(self.max_stuck_move, 2 * fall[i] / self.break_ratio)):
                    continue
                if not _no_better_before(y, ai, bi) or _lr_explains(ctx, s[ai], s[bi], s[min(m - 1, bi + length)]):
                    continue
                if self._blind(y[ai:bi]):
                    continue  # too noisy to call the stretch stuck (per-batch losses swinging 50%)
                return {"how": "breakthrough", "a": ai, "b": bi, "z": _movement(y[ai:bi])[0], "moved": float(moved[i]),
                        "fall": float(fall[i]),
                        "chance": _sits_at_chance(y[ai:bi], is_log, self.chance_tolerance, early=ai <= m // 10)}
        return None

    def _never_learned(self, s, y, is_log, m):
        if m < self.min_never_points or not is_log or not _from_the_start(None, s):
            return None  # too few points, a loss around zero, or a continuation (flat may be converged)
        z, moved = _movement(y)
        if (y[1:] > y[0]).all() and abs(z) <= self.max_z:  # (a steady climb is a divergence's)
            # every later point above the first: a flat level would put about half of them below
            # it, however noisy the run (a probe whose loss went from 2.35 to about 3.0)
            return {"how": "never", "a": 0, "b": m, "z": z, "moved": moved, "chance": None, "above_start": True}
        if not _immaterial(z, moved, self.max_z, self.max_never_move):
            return None
        if self._blind(y):
            return None  # so noisy or short that a learning run's fall would hide in it: no verdict
        if not _steady(y, self.max_stuck_move):
            return None  # it wanders between levels: an oscillation or a drift, not one flat level
        if moved > self.max_stuck_move and _rank_fall_z(y) > self.max_z:
            return None  # a material fall in rank order over all its points: learning, however noisy each is
        first = y[:max(3, m // 20)]
        early_z, early_fall = _movement(np.concatenate([first, y[-len(first):]]))
        if abs(early_z) > self.max_z and abs(early_fall) > self.max_stuck_move:
            return None  # an early fall, however short: the model learned, then converged
        return {"how": "never", "a": 0, "b": m, "z": z, "moved": moved, "chance": None}

    def _finding(self, series: Series, ctx: RunContext, s, y, is_log, f) -> Finding:
        a, b = f["a"], f["b"]
        start, end = int(s[a]), int(s[b - 1])
        level = _level(y[a:b], is_log)
        pct = (np.expm1(-f["moved"]) if is_log else -f["moved"] / abs(level)) * 100
        k = f["chance"]
        chance = f"{level:.4g} is ln({k}), chance level for {k} {'tokens' if k > 1000 else 'classes'}" if k else ""
        span = f"from step {start} to {'the end' if b == y.size else f'step {end}'}"
        if f["how"] == "chance":
            within = (f"on all {b - a} of its points" if f.get("few") else "within its noise" if abs(f["z"]) <= self.max_z
                      else f"a drift with every point within {self.chance_tolerance:.0%} of ln({k})")
            msg = (f"{series.label} sat at {level:.4g} {span} (moved {pct:+.1f}%, {within}): {chance}; "
                   f"the model is not learning")
        elif f["how"] == "breakthrough":
            drop = -np.expm1(-f["fall"]) * 100 if is_log else f["fall"]
            msg = (f"{series.label} was stuck near {level:.4g} {span} (moved {pct:+.1f}%) and then fell "
                   + (f"{drop:.0f}%" if is_log else f"by {drop:.4g}")
                   + (" in as many steps" if b + (b - a) <= y.size else " by the end of the run")
                   + f": a plateau it broke out of late" + (f"; {chance}" if k else ""))
        elif f.get("above_start"):
            msg = (f"{series.label} never went below its first logged value ({float(np.exp(y[0]) if is_log else y[0]):.4g} "
                   f"at step {int(s[0])}): all {b - a - 1} later points to {'the end' if b == y.size else f'step {end}'} stayed "
                   f"above it (median {level:.4g}): "
                   f"the model is not learning")
        else:
            within = "within its noise" if abs(f["z"]) <= self.max_z else "beyond its noise but immaterial"
            msg = (f"{series.label} never left its first level: {level:.4g} {span} (moved {pct:+.1f}%, {within}): "
                   f"the model is not learning")
        # every point above the first is a strong test but a noisy one's level is unknown: a note
        severity = "info" if f.get("above_start") else "warning"
        return Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity=severity,
                       message=msg, start_step=start, end_step=end,
                       evidence={"reading": f["how"], "level": level, "moved_percent": float(pct),
                                 "robust_z": float(f["z"]), "chance_classes": k, "points": int(b - a),
                                 "breakthrough_fall_log": f.get("fall")})


LR_FLOOR_SHARE = 0.05
"""An LR under this share of its peak at a plateau's start had decayed to its floor."""


def _lr_floor(ctx: RunContext, step: int) -> tuple[float, float] | None:
    """(the LR at `step`, its share of the run's peak LR) when it was under `LR_FLOOR_SHARE` of it."""
    lr = ctx.main("lr")
    if lr is None:
        return None
    st, v = lr.positive()
    if v.size < 2:
        return None
    at = float(v[max(0, min(int(np.searchsorted(st, step, side="right")) - 1, v.size - 1))])
    peak = float(v.max())
    return (at, at / peak) if at < LR_FLOOR_SHARE * peak else None


def _stuck_twins(ctx: RunContext) -> tuple[str, dict] | None:
    """The first term by name that never moved beside its falling twin, with its numbers: judged once
    per run (every loss and other term asks), kept on the run's context."""
    memo = ctx.__dict__.get("_stuck_twin_memo")
    if memo is None:
        hits = ((m, stuck_beside_twin(s, ctx)) for m, s in sorted(ctx.series.items())
                if s.role in ("loss", "other"))
        memo = ctx.__dict__["_stuck_twin_memo"] = next(((m, h) for m, h in hits if h is not None), ())
    return memo or None


def _terms_at_chance(ctx: RunContext) -> tuple[str, dict] | None:
    """The first training loss by name, other than the judged one, that sat at chance while the judged
    loss fell (`termchance.term_at_chance`), with its numbers: judged once per run, kept on the run's
    context. Not in adversarial or reinforcement runs (a balanced discriminator sits at ln 4 by design,
    a policy's terms are no cross-entropies to learn down), nor for a running best."""
    memo = ctx.__dict__.get("_term_chance_memo")
    if memo is None:
        total = scores.judged_loss(ctx)
        memo = ()
        if total is not None and total.role == "loss" and not is_reinforcement(ctx.roles) \
                and not any(is_adversarial(m) for m in ctx.series):
            for m, s in sorted(ctx.series.items()):
                if s.role != "loss" or s is total or is_running_best(m) or not len(s) \
                        or not _from_the_start(ctx, s.finite()[0]):
                    continue
                hit = termchance.term_at_chance(s, total)
                if hit is not None:
                    memo = (m, hit)
                    break
        ctx.__dict__["_term_chance_memo"] = memo
    return memo or None


SUM_TOLERANCE = 0.02
"""A loss is the sum of its logged terms when they add up to it within this share, point by point."""
TERM_SHARE = 0.1
"""...and at least two of them hold this share of it: a sum of parts, not one cross-entropy."""


def not_chance(k: int, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray,
               tolerance: float) -> str | None:
    """Why a loss sitting at ln(k) is not at chance, if the run says so: ln(k) is the level of one
    cross-entropy over k outcomes, and
    - a classifier has one class count: a run that started at ln(k0), its untrained level, and
      learned down to ln(k) for a smaller k counts k0 classes (an ImageNet run from 6.91 that
      learned down to 4.6 is not at ln(100)); a run that started lower (a fine-tune) and blew up
      to ln(k) may well sit at chance;
    - a total of several logged terms is not one cross-entropy (a YOLO loss, giou + conf + cls,
      that happens to sit at 1.10 is not at ln 3)."""
    first = _from_the_start(ctx, step)
    if first:
        ks = {chance_classes(float(x), tolerance) for x in value[:3]}  # the untrained model's first losses,
        k0 = ks.pop() if len(ks) == 1 else None  # each at the same ln(k0) (not a first step that blew up)
        if k0 is not None and k0 > k:  # (a fine-tune starts below chance and may blow up to it)
            return f"it started at ln({k0}), its untrained level: a model over {k0} outcomes"
    parts = _terms_of(series, ctx)
    if parts:
        return f"{series.metric} is the sum of {', '.join(parts)}: not one cross-entropy"
    beat = scores.beats_chance(ctx, k)
    if beat:
        return f"{beat[0]} rose to {beat[1]:.3g}, well above the 1/{k} a model at chance scores"
    return None


MORE_OUTCOMES = 4
"""A training loss that starts at ln(k0) with k0 this many times k or more says the model chooses among
k0 outcomes: an accuracy near 1/k is not its chance (a badly initialised binary model starts at most a
little above ln 2, not at ln 8)."""


MAX_CLASSES = 1000
"""...a classifier's: a training loss that starts above ln(1000) is no cross-entropy over classes an
accuracy counts (a GAN's or a regression's total, a language model's tokens): it says nothing of 1/k."""


def _untrained_outcomes(ctx: RunContext) -> float | None:
    """exp of the run's training loss at its first points (the untrained model's level, ln of the number
    of outcomes it chooses among for one cross-entropy); None when the log starts late, the loss is a
    sum of logged terms or not positive."""
    train = ctx.main("loss")
    if train is None:
        return None
    step, value = train.finite()
    if step.size < 3 or not _from_the_start(ctx, step) or float(np.min(value[:3])) <= 0 or _terms_of(train, ctx):
        return None
    return float(np.exp(np.median(value[:3])))


def _spread_past_chance(value: np.ndarray, spread: float) -> bool:
    """The points of a stretch at ln(k) spread beyond `spread` (the MAD of their log, as sigma)."""
    v = value[np.isfinite(value) & (value > 0)]
    if v.size < 5:
        return False
    y = np.log(v)
    return MAD_TO_SIGMA * float(np.median(np.abs(y - np.median(y)))) > spread


def _from_the_start(ctx: RunContext | None, step: np.ndarray) -> bool:
    """Does the log start where the run started (not a continuation picked up late)? Its first step
    within 5% of its last (or under 100), or within one and a half of its own logging intervals: a
    value logged every 1,000 steps, or an episode's return logged when the episode ends, has its first
    point one interval in (a Pong agent's first return at frame 968 of 14,008)."""
    if not step.size:
        return False
    if not (step[0] > 0.05 * max(step[-1], 1) and step[0] >= 100):
        return True
    gaps = np.diff(step)
    return bool(gaps.size) and step[0] <= 1.5 * float(np.median(gaps))


def _terms_of(total: Series, ctx: RunContext) -> list[str]:
    """The logged loss terms `total` is the sum of (at the steps all of them share), when at least
    two of them hold `TERM_SHARE` of it; [] when it is not a sum of what the run logs."""
    tstep, tval = total.finite()
    terms = []
    for other in ctx.by_role("loss"):
        if other.metric == total.metric or not len(other):
            continue
        ostep, oval = other.finite()
        common, ti, oi = np.intersect1d(tstep, ostep, return_indices=True)
        if common.size >= 0.9 * tstep.size and common.size >= 5 and float(np.median(oval[oi])) < float(np.median(tval[ti])):
            terms.append((other.metric, ostep, oval))
    if len(terms) < 2:
        return []
    shared = tstep
    for _, ostep, _ in terms:
        shared = np.intersect1d(shared, ostep)
    if shared.size < 5:
        return []
    pick = lambda st, v: v[np.searchsorted(st, shared)]  # noqa: E731 (steps are sorted in a Series)
    tot = pick(tstep, tval)
    parts = np.array([pick(st, v) for _, st, v in terms])
    if not (tot > 0).all() or float(np.median(np.abs(parts.sum(axis=0) / tot - 1))) > SUM_TOLERANCE:
        return []
    shares = np.median(parts / tot, axis=1)
    if int((shares >= TERM_SHARE).sum()) < 2:
        return []
    return [name for (name, _, _), share in zip(terms, shares) if share >= TERM_SHARE]


def _run_start(ctx: RunContext, first_eval: int) -> int:
    """Where a run that never learned starts: its first logged step (a held-out score's first
    evaluation comes after steps that taught the model nothing either)."""
    firsts = [int(s.step[0]) for s in ctx.series.values() if len(s)]
    return min([first_eval, *firsts])


def _log_change(series: Series, start: int, end: int) -> float | None:
    """Change of log(series) from around `start` to around `end` (the medians of the first and
    last fifth of the points between them); None without two positive points there."""
    step, v = series.finite()
    keep = (step >= start) & (step <= end) & (v > 0)
    seg = np.log(v[keep])
    if seg.size < 2:
        return None
    k = max(1, seg.size // 5)
    return float(np.median(seg[-k:]) - np.median(seg[:k]))


def _running_best_of(series: Series, ctx: RunContext) -> str | None:
    """The curve `series` keeps the best-so-far of, when it is one: `series` never turned back
    (monotone over its whole log), ends on a value held over its last points, and that value is
    one another curve of the run took before moving on past where the hold began. A `min_loss` column stands still while no new best comes, which
    is the tracked curve's story (its plateau or its overfitting), not a model left un-updated."""
    step, v = series.finite()
    d = np.diff(v)
    if v.size < 3 or d[-1] != 0 or not ((d <= 0).all() or (d >= 0).all()):
        return None
    held, start = float(v[-1]), int(step[int(np.flatnonzero(d != 0)[-1]) + 1]) if (d != 0).any() else int(step[0])
    for other in ctx.series.values():
        if other.metric == series.metric or not len(other):
            continue
        st, w = other.finite()
        after = w[st > start]
        if after.size >= 2 and np.ptp(after) > 0 and np.isclose(w, held, rtol=1e-7, atol=0.0).any():
            return other.metric
    return None


def _moving_sibling(series: Series, ctx: RunContext, start: int, quantum: float) -> tuple[str, float] | None:
    """Another training loss of the run that moved over the steps `series` sat frozen from `start`:
    its values there spread over more than `quantum` of their median (beyond a last printed digit), as
    (its name, the spread as a share). A loss frozen while its siblings move is a constant of the
    logging, since an update that moved them reached the model; None when every sibling stood still
    too (or the run logs no other training loss)."""
    best = None
    for other in ctx.by_role("loss"):
        if other.metric == series.metric or not len(other):
            continue
        st, v = other.finite()
        v = v[st >= start]
        if v.size < 5:
            continue
        level = abs(float(np.median(v)))
        spread = (float(np.max(v)) - float(np.min(v))) / level if level > 0 else 0.0
        if spread > quantum and (best is None or spread > best[1]):
            best = (other.metric, spread)
    return best


def _usable(series: Series) -> tuple[np.ndarray, np.ndarray]:
    """Finite points, less a trailing run of exact zeros after a loss that was not near
    zero: the HF Trainer logs 0.0 once the loss is NaN (`logging_nan_inf_filter`)."""
    step, value = series.finite()
    zero = value == 0
    if zero.size and zero[-1] and not zero.all():
        last = int(np.flatnonzero(~zero)[-1])
        if np.median(np.abs(value[:last + 1])) > 1e-3:
            step, value = step[:last + 1], value[:last + 1]
    return step, value


def _compressed(step: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """log(loss) when positive; block medians (first step of each block) past MAX_POINTS."""
    is_log = bool(value.size and value.min() > 0)
    y = np.log(value) if is_log else value.astype(np.float64)
    return (*_blocks(step, y), is_log)


def _blocks(step: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Block medians (first step of each block) past MAX_POINTS."""
    n = y.size
    if n <= MAX_POINTS:
        return step, y
    size = -(-n // MAX_POINTS)
    nb = n // size
    blocks = y[:nb * size].reshape(nb, size)
    return step[:nb * size:size], np.median(blocks, axis=1)


def _movement(y: np.ndarray) -> tuple[float, float]:
    """(robust z, fall) of a stretch: the median of its first third less the median of
    its last, against the standard error its own point-to-point noise gives that
    difference. The noise is the MAD of the differences around their median, so a steady
    trend inside the stretch does not count as noise; floored at 0.1% of the level."""
    k = max(1, y.size // 3)
    fall = float(np.median(y[:k]) - np.median(y[-k:]))
    d = np.diff(y)
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2.0) if d.size else 0.0
    sigma = max(sigma, 1e-3 * max(abs(float(np.median(y))), 1.0))
    se = sigma * 1.2533 * np.sqrt(2.0 / k)
    return fall / se, fall


def _resolution(value: np.ndarray) -> float:
    """The step between the values of a series whose values repeat (a reward of 0 or -0.05 on most
    episodes, scores printed to two decimals): the smallest gap between its distinct values, when
    it has at most a quarter as many distinct values as points; 0 for a continuous series. A median
    of such values jumps a whole step or not at all, so a shift under one step is no shift."""
    distinct = np.unique(value[np.isfinite(value)])
    if distinct.size < 2 or distinct.size > value.size / 4:
        return 0.0
    return float(np.min(np.diff(distinct)))


def _rank_fall_z(y: np.ndarray) -> float:
    """How far the points fall in rank order over the stretch, in standard errors: Spearman's
    correlation of the values with their order, negated, times sqrt(n - 1) (about normal when the
    order is random). Thirds' medians against point noise miss a slow fall in a noisy per-batch
    loss (40 single-batch losses falling 20% with a correlation of -0.54); every point's rank does not."""
    n = y.size
    if n < 10:
        return 0.0
    r = np.argsort(np.argsort(y)).astype(np.float64)
    rho = float(np.corrcoef(np.arange(n, dtype=np.float64), r)[0, 1])
    return -rho * np.sqrt(n - 1) if np.isfinite(rho) else 0.0


def _immaterial(z: float, moved: float, max_z: float, max_move: float) -> bool:
    """A movement that teaches nothing: within the stretch's noise, or under `max_move` (log, about
    1%) either way. A long run's block medians are so precise that a 0.3% drift over 1.9M
    iterations is 'significant': significant and immaterial is still flat."""
    return abs(z) <= max_z or abs(moved) <= max_move


def _sits_at_chance(y: np.ndarray, is_log: bool, tolerance: float, early: bool = False) -> int | None:
    """The k for which the stretch's level, its first third and its last third are all
    within `tolerance` of ln(k): a loss that sits there, not one passing through. Any k up to
    `MAX_EXACT_CLASSES` for a stretch from the run's first tenth (`early`) whose points spread under
    `EXACT_SPREAD` (`exact_chance`): a model stuck from its first epochs, never a long run's converged
    tail, whose block medians are as smooth and may sit near some ln k by chance."""
    k = chance_classes(_level(y, is_log), tolerance)
    if k is None and early and is_log and _log_spread(y) <= EXACT_SPREAD:
        k = exact_chance(_level(y, is_log))
    if k is None:
        return None
    third = max(1, y.size // 3)
    ends = (_level(y[:third], is_log), _level(y[-third:], is_log))
    return k if all(abs(e - np.log(k)) <= tolerance * np.log(k) for e in ends) else None


def _inside_chance(y: np.ndarray, is_log: bool, k: int, tolerance: float) -> bool:
    """Every point within `tolerance` of ln k (`y` the log of the loss when `is_log`)."""
    v = np.exp(y) if is_log else y
    return bool(np.all(np.abs(v - np.log(k)) <= tolerance * np.log(k)))


def _began_at_chance(y: np.ndarray, is_log: bool, found: dict, tolerance: float) -> bool:
    """A loss at chance from its first point (a binary classifier's 0.6985, 0.6930, ... 0.6890 over 18
    epochs, every one within `tolerance` of ln 2): it never learned, so its plateau starts where the run
    does, not where its noise first settled."""
    k = found.get("chance")
    if found["how"] != "chance" or found["a"] != 0 or not k:
        return False
    return _inside_chance(y[:max(1, y.size // 3)], is_log, k, tolerance)


def _settled_from(y: np.ndarray, a: int, b: int) -> int:
    """The first point of the stretch inside its own noise band around its level: a
    stretch found from an earlier start may still hold the end of the early fall."""
    seg = y[a:b]
    d = np.diff(seg)
    band = 3 * max(MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) if d.size else 0.0,
                   1e-3 * max(abs(float(np.median(seg))), 1.0))
    inside = np.flatnonzero(np.abs(seg - np.median(seg)) <= band)
    return a + int(inside[0]) if inside.size and inside[0] < seg.size // 2 else a


def _level(y: np.ndarray, is_log: bool) -> float:
    med = float(np.median(y))
    return float(np.exp(med)) if is_log else med


EXACT_SPREAD = 0.001
"""A stretch whose points spread less than this (robust sigma of their log, 0.1%) predicts nothing per
input: a uniform prediction's cross-entropy is ln k on every batch whatever the batch holds, while a
model that answers per input spreads by percents (an epoch average by a few tenths of one)."""
MAX_EXACT_CLASSES = 100
EXACT_TOLERANCE = 0.002
"""Such a stretch sits at chance for any class count up to `MAX_EXACT_CLASSES` (a 24-class VGG at
3.1758 epoch after epoch, ln 24 = 3.1781), not only the counts of `CHANCE_CLASSES`: within this share
of ln k and a fifth of the gap to the next ln k (past 100 classes every level is that close to one)."""


def exact_chance(level: float) -> int | None:
    """The class count k (2 to `MAX_EXACT_CLASSES`) whose ln k is within `EXACT_TOLERANCE` of `level`
    and a fifth of the gap between ln k and ln (k + 1)."""
    k = int(round(np.exp(level))) if 0 < level < np.log(MAX_EXACT_CLASSES + 1) else 0
    if not 2 <= k <= MAX_EXACT_CLASSES:
        return None
    room = min(EXACT_TOLERANCE * np.log(k), 0.2 * np.log1p(1 / k))
    return k if abs(level - np.log(k)) <= room else None


def _log_spread(y: np.ndarray) -> float:
    """Robust sigma of a stretch of log values (its MAD, as sigma)."""
    return MAD_TO_SIGMA * float(np.median(np.abs(y - np.median(y)))) if y.size else 0.0


_VIEW_WORDS = re.compile(r"(?:^|(?<=[/_\-. ]))(?:train(?:ing)?|epoch|batch|step|avg|average|mean|running|total)"
                         r"(?=$|[/_\-. ])", re.IGNORECASE)


def view_name(metric: str) -> str:
    """A loss's name without the words that say how it was aggregated or on which phase it was logged
    (`Train_Loss`, `train/loss_epoch`, `avg_loss` all read `loss`)."""
    leaf = metric.rsplit("/", 1)[-1] if not metric.lower().startswith("train/") else metric
    return re.sub(r"[/_\-. ]+", " ", _VIEW_WORDS.sub(" ", leaf)).strip().lower()


def _few_chance(v: np.ndarray, tolerance: float, max_move: float) -> int | None:
    """The k at whose ln(k) every one of a few points sits, when they moved less than `max_move` (log)
    from the first to the last: within `tolerance` of a listed chance level, or of any ln k up to
    `MAX_EXACT_CLASSES` for points that spread under `EXACT_SPREAD`."""
    y = np.log(v)
    if abs(float(y[-1] - y[0])) > max_move:
        return None
    level = float(np.median(v))
    k = chance_classes(level, tolerance)
    if k is not None and np.all(np.abs(v - np.log(k)) <= tolerance * np.log(k)):
        return k
    return exact_chance(level) if _log_spread(y) <= EXACT_SPREAD and np.ptp(y) <= 2 * EXACT_TOLERANCE else None


def chance_classes(level: float, tolerance: float) -> int | None:
    """The k whose ln(k) is within `tolerance` (relative) of `level`, if any."""
    ks = np.array(CHANCE_CLASSES + CHANCE_VOCABS)
    off = np.abs(level - np.log(ks)) / np.log(ks)
    i = int(np.argmin(off))
    return int(ks[i]) if off[i] <= tolerance else None


def _no_better_before(y: np.ndarray, a: int, b: int) -> bool:
    """The stretch is no worse than the level the loss had already held before it (a
    loss stuck above its own earlier best is recovering from damage, not plateaued)."""
    if a < 3:
        return True
    w = max(3, (b - a) // 3)
    before = np.array([np.median(y[i:i + w]) for i in range(0, a - w + 1, max(1, w // 2))]) if a >= w else y[:a]
    spread = np.median(np.abs(np.diff(y[a:b]))) * 3 if b - a > 2 else 0.0
    return float(np.median(y[a:b])) <= float(np.min(before)) + spread + 1e-9


def _steady(y: np.ndarray, cap: float) -> bool:
    """The stretch holds one level throughout: the medians of its (up to) ten blocks
    span less than `cap` plus what their own noise allows."""
    nb = min(10, max(2, y.size // 3))
    size = y.size // nb
    if size < 1:
        return True
    med = np.array([np.median(part) for part in np.array_split(y, nb)])
    d = np.diff(y)
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2.0) if d.size else 0.0
    return float(med.max() - med.min()) <= cap + 4 * sigma * 1.2533 / np.sqrt(size)


def _abrupt(y: np.ndarray, s: np.ndarray, b: int, length: int, fall: float, epochs: np.ndarray) -> bool:
    """Most of the fall happens between two neighbouring short windows, or the sharpest
    drop sits on an epoch boundary: a step down (a new pass over a small fine-tuning set,
    a data change), which the level-shift detector reports, not a breakthrough, which is
    a phase of learning over many points."""
    q = max(2, length // 10)
    lo, hi = max(q, b - length // 3), min(y.size - q, b + length)
    if hi <= lo:
        return False
    at = np.arange(lo, hi + 1, max(1, q // 4))
    drops = np.array([float(np.median(y[i - q:i]) - np.median(y[i:i + q])) for i in at])
    i = int(at[int(np.argmax(drops))])
    on_boundary = epochs.size and bool(np.any((epochs >= s[max(0, i - q)]) & (epochs <= s[min(s.size - 1, i + q)])))
    return float(drops.max()) >= 0.6 * fall or on_boundary


def _epoch_starts(ctx: RunContext, points: int) -> np.ndarray:
    """Steps where a new epoch starts, from a logged `epoch` metric, when epochs are long
    (ten or more points each); empty otherwise."""
    ep = next((sr for m, sr in ctx.series.items() if m.lower().rsplit("/", 1)[-1] == "epoch"), None)
    if ep is None or len(ep) < 2:
        return np.array([], dtype=np.int64)
    whole = np.floor(ep.value + 1e-6)
    starts = ep.step[1:][np.diff(whole) > 0]
    return starts if 0 < starts.size <= points / 10 else np.array([], dtype=np.int64)


def _window_medians(y: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """Median of y[start : start + width] for each start, in one call."""
    if starts.size == 0:
        return np.empty(0)
    return np.median(np.lib.stride_tricks.sliding_window_view(y, width)[starts], axis=1)


def _smooth(y: np.ndarray, w: int) -> np.ndarray:
    """Medians of consecutive blocks of `w` points (a level that one low point cannot set)."""
    nb = max(1, y.size // w)
    return np.median(y[:nb * w].reshape(nb, w), axis=1) if y.size >= w else np.array([np.median(y)])


def _lr_explains(ctx: RunContext, start: float, brk: float, after_end: float) -> bool:
    """An LR drop between the break and the end of the fall after it (a step schedule's
    staircase) or an LR still warming up over the stretch explains a flat-then-falling loss."""
    lr = ctx.main("lr")
    if lr is None:
        return False
    ok = np.isfinite(lr.value) & (lr.value > 0)
    ls, lv = lr.step[ok], lr.value[ok]
    if ls.size < 2:
        return False
    def at(step: float) -> float:
        return float(lv[max(0, min(np.searchsorted(ls, step, side="right") - 1, ls.size - 1))])
    before = at(brk - 0.25 * (brk - start))
    window = lv[(ls >= brk - 0.25 * (brk - start)) & (ls <= after_end)]
    dropped = window.size > 0 and float(window.min()) < 0.6 * before
    warming = at(brk) > 1.5 * at(start)
    return dropped or warming


_RANKING = re.compile(r"(?:recall|hits?|precision|ndcg|map|acc(?:uracy)?)(?:_at_|@|_?top_?)\d+|\b(?:mrr|ndcg)\b|"
                      r"(?:^|[/_\-. ])(?:mrr|ndcg)(?:$|[/_\-. ])", re.IGNORECASE)


def _ranked_hits(s: Series) -> bool:
    """A ranking score (recall@10, hits@k, MRR, NDCG) above zero at some evaluation: its chance
    level is k over the candidates (0.1% of 10,000 items), so 0.6% is answers found, not none;
    only exact zeros say the model never ranked a right answer."""
    return bool(_RANKING.search(s.metric)) and float(np.max(s.finite()[1])) > 0


def _fitted_every_batch(ctx: RunContext, zero_steps: np.ndarray) -> str | None:
    """The training accuracy that reads its ceiling (1 or 100%) on most steps where the loss is 0, or
    None: a loss printed as 0 beside a perfect accuracy is a model that fits its training set
    (BrainFormer's `Loss: 0.000, Acc:1.000` for 28 epochs), not a loss that lost its signal."""
    for acc in ctx.by_role("accuracy"):
        if is_eval(acc.metric) or not len(acc):
            continue
        at = np.isin(acc.step, zero_steps)
        v = acc.value[at]
        if v.size < max(3, zero_steps.size // 2) or not np.isfinite(v).all():
            continue
        ceiling = 100.0 if np.nanmax(acc.value) > 1.5 else 1.0
        if np.mean(v >= 0.999 * ceiling) >= 0.8:
            return acc.metric
    return None
