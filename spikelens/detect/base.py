"""Detector base class: a permanent code, a kind, keyword-only parameters, a fixed docstring.

A detector is checked when its class is defined (sqlfluff's RuleMetaclass habit): a
bad code, an unknown severity or a docstring without the four sections fails at
import, not in a user's report.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable

import numpy as np
import polars as pl

from ..frame import is_adversarial, is_eval, is_preference_reward, is_reinforcement, is_value_learner
from ..model.finding import Finding

DOC_SECTIONS = ("Detects:", "Why it matters:", "Likely causes:", "Evidence:")
CODE_RE = re.compile(r"^SL\d{3}$")
_CODES: dict[str, str] = {}


@dataclass
class Series:
    """One metric of one run, on the stitched timeline, as NumPy arrays."""

    metric: str
    role: str
    step: np.ndarray
    value: np.ndarray
    wall_time: np.ndarray | None = None
    scale: str = ""
    """What the values are of the metric as logged: "" (the values), "log" (a perplexity
    judged as the loss) or "root" (a squared norm judged as the norm)."""

    @property
    def label(self) -> str:
        """The metric as a message names it: the numbers beside it are on this scale."""
        return f"{self.metric} (as its {self.scale})" if self.scale else self.metric

    def __len__(self) -> int:
        return int(self.step.size)

    def finite(self) -> tuple[np.ndarray, np.ndarray]:
        """Steps and values of the finite points (NaN/inf are the non-finite detector's)."""
        ok = np.isfinite(self.value)
        if ok.all():
            return self.step, self.value
        return self.step[ok], self.value[ok]

    def positive(self) -> tuple[np.ndarray, np.ndarray]:
        """Steps and values of the finite points above zero: what a log scale or a share of a peak reads
        (a learning rate's, a training loss's)."""
        step, value = self.finite()
        keep = value > 0
        return step[keep], value[keep]


@dataclass
class RunContext:
    """What a detector may look at besides its own series: the other metrics of the run."""

    run: str
    roles: dict[str, str]
    series: dict[str, Series]
    segment_starts: list[int] = dataclasses.field(default_factory=list)
    """Stitched steps where a resumed launch took over (for the `resume` cause)."""
    frame: pl.DataFrame | None = None

    def by_role(self, role: str) -> list[Series]:
        return [s for m, s in self.series.items() if self.roles.get(m) == role]

    def main(self, role: str) -> Series | None:
        """The run's main series of a role: the one with most points (the per-step
        `train/loss`, not an epoch aggregate; a running best only when nothing else is logged:
        `is_running_best`), None when the run logs none. Among series
        logged as often (a total and its components), the total: named so, else the
        plain name of the role, else the largest (a sum of positive parts is the largest)."""
        cands = [s for s in self.by_role(role) if len(s)]
        cands = [s for s in cands if not is_running_best(s.metric)] or cands
        if not cands:
            return None
        tied = logged_as_often(cands)
        if len(tied) == 1:
            return tied[0]
        names = [s.metric for s in tied]
        score = {s.metric: main_name_score(s.metric, role, names) for s in tied}
        best = [s for s in tied if score[s.metric] == max(score.values())]
        total = sum_of_others(best) if role == "loss" else None
        if total is not None:
            return total
        if role == "accuracy":  # a run judged by a score: the held-out one it is selected on (LightGBM's `valid`)
            return max(by_name(best), key=lambda s: (is_eval(s.metric), len(s)))
        if role != "loss":
            return max(by_name(best), key=len)
        return min(best, key=lambda s: equal_terms_rank(s.metric, [b.metric for b in best]))

    def judged(self) -> Series | None:
        """The series the run is judged by (its verdict, its stats), as its engineer would choose:
        the episode return of a reinforcement learner that trains a policy (its losses are surrogates that may
        rise while the agent improves; a value learner's TD loss is its curve: `is_value_learner`), else the
        training loss (a GAN's reconstruction term, a Wasserstein critic's estimate, else its generator's, not its
        adversary's; a running best only when nothing else is logged), else the held-out loss of a run that logs
        no training loss, else a reward, else an accuracy."""
        if is_reinforcement(self.roles) and not is_value_learner(self.roles):
            ret = self._return()
            if ret is not None:
                return ret
        loss = self.main("loss")
        if loss is not None and is_running_best(loss.metric):
            loss = self.main("eval_loss") or loss  # `min_loss` beside `val_loss`: a record, not a curve
        if loss is not None and is_adversarial(loss.metric):
            rebuilt = self._reconstruction(loss)
            if rebuilt is not None:
                return rebuilt
            critic = self._critic(loss)
            if critic is not None:
                return critic
            if not is_generator(loss.metric):
                return self._generator(loss) or loss
        return loss or self.main("eval_loss") or self.main("reward") or self.main("accuracy")

    def _generator(self, loss: Series) -> Series | None:
        """A GAN's generator loss logged as often as the discriminator's the detectors took: the
        network the run trains to keep (the detectors keep the discriminator, whose collapse or
        plateau they watch; only the verdict and the stats change)."""
        gens = [s for s in self.by_role("loss") if len(s) >= 0.98 * len(loss) and is_generator(s.metric)]
        return max(by_name(gens), key=len) if gens else None

    def _critic(self, loss: Series) -> Series | None:
        """A Wasserstein critic's loss logged as often as the loss the detectors took: a discriminator's term
        below zero at most points (`D(fake) - D(real)`; a classifier's cross-entropy never is) estimates minus the
        distance the generator has left to close, the one curve of a WGAN that tracks its samples' quality (the
        generator's `-D(fake)` drifts with the critic's scale). The first by name."""
        critics = [s for s in self.by_role("loss") if is_adversarial(s.metric) and not is_generator(s.metric)
                   and as_often(len(s), len(loss)) and s.finite()[1].size and np.median(s.finite()[1]) < 0]
        return by_name(critics)[0] if critics else None

    def _reconstruction(self, loss: Series) -> Series | None:
        """A GAN's reconstruction term logged as often as its adversarial ones (CycleGAN's `cycle_A`,
        pix2pix's `G_L1`): the one curve of the game that measures progress, and falls as the run learns,
        where the generator's and discriminator's losses trade places by design. The first by name (`cycle_A`
        before `cycle_B`), wherever the writer put it."""
        losses = [s.metric for s in self.by_role("loss")]
        recs = [s for s in self.series.values() if s.role in ("loss", "other") and _RECONSTRUCTION.search(s.metric)
                and as_often(len(s), len(loss))
                and not any(s.metric.startswith(m) and s.metric != m for m in losses)]  # `loss_G_l1`: a part of `loss_G`
        return by_name(recs)[0] if recs else None

    def _return(self) -> Series | None:
        """The run's episode return: its main reward (most points, then named as a return, then the
        training return over an evaluation's logged as often: an SB3 rollout's over its rarer
        evaluations), no preference statistic, with a few points at least."""
        cands = [s for s in self.by_role("reward") if not is_preference_reward(s.metric) and s.finite()[1].size >= 3]
        if not cands:
            return None
        most = max(len(s) for s in cands)
        tied = by_name([s for s in cands if len(s) >= 0.98 * most])
        return max(tied, key=lambda s: (main_name_score(s.metric, "reward"), not is_eval(s.metric), len(s)))


_PLAIN = {"loss": ("loss", "train_loss", "loss_train", "train"), "lr": ("lr", "learning_rate"),
          "grad_norm": ("grad_norm", "gradient_norm", "total_norm"), "eval_loss": ("eval_loss", "val_loss", "loss")}
_LOGGED_EVERY = re.compile(r"_(?:step|epoch)$")
"""The suffix Lightning's `self.log(..., on_step=True, on_epoch=True)` adds: how often, not what."""
_MEMBER = re.compile(r"[:#]\d+$|[_\- ](?:group|head|class|task|client|agent|player|seat)[_\-:]?\d+$")
"""`avg_loss_group:0`, `loss_head_3`: a loss of one member (group, head, class) among numbered others."""
_AGGREGATE = re.compile(r"(?:^|[_\- ])(?:all|overall|sum|mean|avg)(?:$|[_\- ])")
"""`all_loss`, `mean_loss`, `loss_sum`: a loss named as the sum or mean of the terms beside it."""
_INSTANT = re.compile(r"(?:^|[_\- ])(?:batch|step|iter|cur|current)(?:$|[_\- ])")
"""`batch_loss`, `cur_loss`: the loss of this one batch, beside a running mean of it (`avg_loss`); not a last
sample's (`last_abs_error` beside `avg_abs_error`: the mean is the curve its labeller read)."""
_GENERATOR = re.compile(r"(?:^|[^A-Za-z])(?:[Gg]|gen|Gen|GEN|generator|Generator)(?:$|[^A-Za-z])|(?<=[a-z])G$")
"""A generator's term (`G_A`, `loss_G`, `train_gen_loss`, `errG`): a GAN's curve is its generator's,
the network the run trains to keep; the discriminator is its adversary."""
_RETURN = re.compile(r"^(?:train[_\- ]|eval(?:uation)?[_\- ]|test[_\- ]|avg[_\- ]?|mean[_\- ]?|average[_\- ]?|cumulative[_\- ])*"
                     r"(?:ep(?:isod(?:e|ic))?[_\- ]?)?"
                     r"(?:rew(?:ard)?|ret(?:urn)?)s?(?:[_\- ]?(?:mean|avg|average))?(?:[_\- ]?\d+)?$")
"""An episode return as trainers name it: `reward`, `rollout/ep_rew_mean`, `eprewmean`, `EpRew`,
`Train_Return`, `Environment/Cumulative Reward`, `episode_reward`, CleanRL's `charts/episodic_return`,
an evaluation's `eval_reward` or `test_return`, the glued names of Spinning Up,
rllab and garage (`AverageEpRet`, `AverageReturn`, `ReturnAverage`); not a reward function's own
term (`rewards/format_fn/mean`) nor a variant of the return (`AverageDiscountedReturn`)."""


_RECONSTRUCTION = re.compile(r"(?:^|[^a-z])(?:cyc(?:le)?|l1|rec|recon|reconstruction|pix|pixel)(?:$|[^a-z])", re.I)
"""A reconstruction term beside a GAN's adversarial ones: CycleGAN's `cycle_A`/`Cyc_A`, pix2pix's `G_L1`,
SEGAN's `g_l1`, `loss_recon`, `pix_loss`; not the identity term (`idt_A`), which only regularises."""


def by_name(series: list[Series]) -> list[Series]:
    """Series in the order of their names (case folded): where nothing else tells them apart, the choice
    among them must not hang on where the writer put each column or key (#24: a table read with its
    columns reversed is the same run)."""
    return sorted(series, key=lambda s: (s.metric.casefold(), s.metric))


_DATA_TERM = re.compile(r"(?:^|[^a-z])(?:pix|pixel|rec|recon|reconstruction|mse|l1|nll|ce|xent|bce|cross[_\- ]?entropy)"
                        r"(?:$|[^a-z])", re.I)
"""A term that measures the output against its target (BasicSR's `l_pix`, `recon_loss`, `CE_Loss`, `mse`)
rather than a regulariser or an auxiliary term beside it (`l_cr`, `LB_Loss`, `l_freq`)."""


_SURROGATE = re.compile(r"(?:^|[_\- ])(?:pg|pi|policy|actor)(?:[_\- ]gradient)?[_\- ]?loss(?:$|[_\- ])"
                        r"|(?:^|[_\- ])loss[_\- ]?(?:pi|policy|actor)$")
"""A policy's surrogate objective (PPO's `pg_loss`, Spinning Up's `LossPi`, a DDPG actor's `-Q`): it hovers
near zero or falls as the critic's values grow, whatever the agent learns; beside it the value or Q loss
(`v_loss`, `LossV`, `LossQ`), a regression, is the loss its users read."""
_CAMEL_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def equal_terms_rank(metric: str, tied: list[str]) -> tuple:
    """Where a loss stands among loss terms no name makes the total (lower first), by name evidence, never
    by column order: the plain name the others extend (`Training_loss` under `Latest_training_loss` and
    `Average_training_loss`; `loss` under `train_loss`), then a GAN's generator over its adversary
    (`gen/loss` over `dis/loss`), then a value loss over a policy's surrogate (`v_loss` over `pg_loss`),
    then a data term over a regulariser (`l_pix` over `l_cr`), then the
    name's order (`Loss1` of `Loss1..Loss6`, YOLO's `box_loss` before `cls_loss` and `dfl_loss`)."""
    words = _words(metric)
    extended = sum(1 for t in tied if t != metric and words < _words(t))
    generator = is_generator(metric) or (is_adversarial(metric) and bool(_GENERATOR.search(metric)))  # `gen/loss`
    last = re.split(r"[/.]", metric)[-1]
    leaf = _CAMEL_WORD.sub("_", last).lower()
    data = bool(_DATA_TERM.search(last))
    return -extended, not generator, bool(_SURROGATE.search(leaf)), not data, metric.casefold(), metric


def _words(name: str) -> frozenset[str]:
    return frozenset(w for w in re.split(r"[^a-z0-9]+", re.split(r"[/.]", name.lower())[-1]) if w)


def logged_as_often(cands: list[Series]) -> list[Series]:
    """The series logged (nearly) as often as the most logged: within 2%, or one point fewer in a log of ten
    points or more (a total a short log first prints one step after its terms)."""
    most = max(len(s) for s in cands)
    return [s for s in cands if as_often(len(s), most)]


def as_often(points: int, most: int) -> bool:
    """Whether `points` is (nearly) as many as `most`: within 2%, or one fewer where `most` is ten or more."""
    return points >= (min(0.98 * most, most - 1) if most >= 10 else 0.98 * most)


def sum_of_others(tied: list[Series]) -> Series | None:
    """Among three or more loss terms no name tells apart, the one at least as large as all the others
    together at nine steps in ten (`batch_loss` over `classify_loss`, `angle_loss`, `iou_loss`: a weighted
    sum of positive terms is the total); None when none is (YOLO's box, cls and dfl terms)."""
    if len(tied) < 3:
        return None
    steps = tied[0].step
    for s in tied[1:]:
        steps = np.intersect1d(steps, s.step)
    if steps.size < 3:
        return None
    vals = {s.metric: s.value[np.searchsorted(s.step, steps)] if np.all(np.diff(s.step) > 0) else None for s in tied}
    if any(v is None or not np.isfinite(v).all() or (v < 0).any() for v in vals.values()):
        return None
    for s in tied:
        rest = {m: v for m, v in vals.items() if m != s.metric}
        total = sum(rest.values())
        size = np.median(vals[s.metric])
        terms = sum(np.median(v) > 0.01 * size for v in rest.values())  # terms that count, not a zero class loss
        if terms >= 2 and np.mean(vals[s.metric] >= 0.999 * total) >= 0.9 and 0 < size <= 100 * np.median(total) \
                and moves_with(vals[s.metric], total):
            return s
    return None


def moves_with(total: np.ndarray, parts: np.ndarray) -> bool:
    """Whether a series' step-to-step moves follow its parts' sum (correlation of the differences at least
    0.5): a total's batch noise is its terms' noise; a large term of its own (a contrastive loss beside pixel
    losses) moves apart from the others however large it is."""
    a, b = np.diff(total), np.diff(parts)
    if a.size < 3 or a.std() == 0 or b.std() == 0:
        return False
    return bool(np.corrcoef(a, b)[0, 1] >= 0.5)


_RUNNING_BEST = re.compile(r"(?:^|[_\- ])(?:best|min|minimum|lowest)(?:$|[_\- ])")


def is_running_best(metric: str) -> bool:
    """`best_loss`, `min_loss`, `Best_Loss`, `best_val_loss`: the best value so far, flat between improvements,
    kept to choose a checkpoint; a record of the curve, never the curve a run is judged by."""
    leaf = _CAMEL_WORD.sub("_", re.split(r"[/.]", metric)[-1]).lower()
    return bool(_RUNNING_BEST.search(leaf))


def is_generator(metric: str) -> bool:
    """Is this a GAN generator's term (`G_A`, `loss_G`, `train_gen_loss`, `errG`)?"""
    return is_adversarial(metric) and bool(_GENERATOR.search(re.split(r"[/.]", metric)[-1]))


def main_name_score(metric: str, role: str, beside: Iterable[str] = ()) -> int:
    """How much a tag's name says it is the main series of its role: `total_loss` or `all_loss` (2),
    `train/loss` (1), `loss_cls` or `ploss_3` (0, a component or one of a numbered set); for a
    reward, the episode return (1) over a reward term. `mean_loss` is the mean of its terms (2)
    unless `beside` (the names logged as often) holds the loss it averages (`Loss_avg` beside `Loss`,
    a running mean of that loss, 0; `avg_loss` beside `batch_loss`, -1: below the value it smooths)."""
    leaf = re.split(r"[/.]", metric.lower())[-1]
    if role == "loss" and ("total" in leaf or re.match(r"tot(?:$|[_\- ])", leaf)):
        if _accumulates(leaf, beside, metric):
            return -1  # `tot_loss` beside `current_loss`: the running total of the batch loss, below it
        return 2  # `Tot Loss`: abbreviated
    if role == "loss" and _MEMBER.search(leaf):
        return 0  # `avg_loss_group:0`, `loss_head_3`: one member of a numbered set, not the run's loss
    others = [re.split(r"[/.]", b.lower())[-1] for b in beside if b != metric]
    if role == "loss" and _AGGREGATE.search(leaf) and others and all(_AGGREGATE.search(o) for o in others):
        leaf = _AGGREGATE.sub(" ", leaf).strip(" _-")  # every loss an `_avg` (per-epoch means): how logged, not a total
    elif role == "loss" and _AGGREGATE.search(leaf):
        twin = _AGGREGATE.sub(" ", leaf).strip(" _-")
        if twin in others:
            return 0  # `Loss_avg` beside `Loss`, whose plain name outranks it
        return -1 if twin in {_INSTANT.sub(" ", o).strip(" _-") for o in others} else 2
    if leaf in _PLAIN.get(role, ()) or _LOGGED_EVERY.sub("", leaf) in _PLAIN.get(role, ()):
        return 1  # Lightning's `train_loss_epoch` / `train_loss_step`: the plain loss, logged every epoch / step
    if role == "reward" and _RETURN.match(leaf) and not re.search(r"rewards?/", metric.lower()):
        return 1
    if role == "accuracy":
        if is_member(metric, beside):
            return -1  # `class_person_ap` among `class_cat_ap`, `class_dog_ap`: one class's score, not the run's
        if _AGGREGATE_SCORE.search(leaf) or (_F_SCORE.search(leaf) and any(_PARTS_OF_F.search(b) for b in beside)):
            return 1  # `map`, `mIoU`, `mean_acc`; F1 beside the precision and recall it combines
    return 0


_TOTAL_WORD = re.compile(r"(?:^|[_\- ])tot(?:al)?(?:$|[_\- ])")


def _accumulates(leaf: str, beside: Iterable[str], metric: str) -> bool:
    """Is `leaf` (`tot_loss`) the running total of a loss logged beside it by the same name with a word saying it is
    this batch's (`current_loss`, `cur_loss`, `batch_loss`): an accumulation over steps, not a sum of terms?"""
    stem = _TOTAL_WORD.sub(" ", leaf).strip(" _-")
    return any(_INSTANT.search(o) and _INSTANT.sub(" ", o).strip(" _-") == stem
               for o in (re.split(r"[/.]", b.lower())[-1] for b in beside if b != metric))


_AGGREGATE_SCORE = re.compile(r"^(?:(?:val|eval|test|valid)[_\- ]?)?(?:m(?:ap|iou|acc|dice|f1)|mean[_\- ]?\w+|macro[_\- ]?\w+"
                              r"|(?:overall|all|avg|average)[_\- ]?(?:acc\w*|ap|iou|f1|dice|score))(?:[_\-. :(]?[\w.:()\-]{0,12})?$", re.I)
"""A score named as the mean over classes or the whole set (`map`, `mAP50`, `mIoU`, `mean_dice`, `macro_f1`,
`overall_acc`): the one a person reads beside per-class scores."""
_F_SCORE = re.compile(r"(?:^|[_\- ])(?:f1|fb1|f_?score|f_?measure|f1_?score)(?:$|[_\- ])", re.I)
_PARTS_OF_F = re.compile(r"precision|recall", re.I)


def is_member(metric: str, beside: Iterable[str]) -> bool:
    """Is `metric` one of a family of at least three names alike but for one word (`class_cat_ap`,
    `class_dog_ap`, `class_cow_ap`; `FOREST_precision`, `PARK_precision`, `UNIT_precision`): a score
    per class, per task or per agent, each a member of a set the run also sums up?"""
    words = re.split(r"[_\-. /]+", re.split(r"[/.]", metric)[-1].lower())
    if len(words) < 2:
        return False
    others = [re.split(r"[_\-. /]+", re.split(r"[/.]", b)[-1].lower()) for b in beside if b != metric]
    for i in range(len(words)):
        if _MEASURE_WORD.match(words[i]):
            continue  # `accuracy_pct`, `recall_pct`: other measures, not other members
        alike = [o for o in others if len(o) == len(words) and o[i] != words[i] and not _MEASURE_WORD.match(o[i])
                 and all(o[j] == words[j] for j in range(len(words)) if j != i)]
        if len(alike) >= 2:
            return True
    return False


_MEASURE_WORD = re.compile(r"^(?:acc\w*|precision|prec|recall|rec|f1|fb1|f|score|ap|map|iou|miou|dice|auc|roc|top\d*|err\w*"
                           r"|loss|mae|mse|rmse|bleu|rouge\w*|wer|cer|ppl|best|mean|avg|max|min|std|sum|total|val|train|test|eval)$")
"""Words that name a measure or a split, not a member of a set: names differing in one of these are different
curves (`accuracy_pct`, `recall_pct`), not one score per class."""

class Detector:
    """Base class. Subclasses are dataclasses with keyword-only parameters."""

    code: ClassVar[str]
    kind: ClassVar[str]
    roles: ClassVar[tuple[str, ...]] = ("loss",)
    """Metric roles it runs on; an empty tuple means it runs once per run (`detect_run`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        code = cls.__dict__.get("code")
        if not isinstance(code, str) or not CODE_RE.match(code):
            raise TypeError(f"{cls.__name__}: code must look like SL123, got {code!r}")
        if code in _CODES and _CODES[code] != cls.__qualname__:
            raise TypeError(f"{cls.__name__}: code {code} already used by {_CODES[code]}")
        _CODES[code] = cls.__qualname__
        if not isinstance(cls.__dict__.get("kind"), str):
            raise TypeError(f"{cls.__name__}: needs a kind")
        doc = cls.__doc__ or ""
        missing = [s for s in DOC_SECTIONS if s not in doc]
        if missing:
            raise TypeError(f"{cls.__name__}: docstring lacks sections {missing}")

    # -- the two entry points; a detector overrides one
    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        return []

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        return []

    # -- parameters
    @classmethod
    def params(cls) -> dict[str, Any]:
        return {f.name: f.default for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}

    def with_params(self, **overrides: Any) -> "Detector":
        return dataclasses.replace(self, **overrides)

    @classmethod
    def describe(cls) -> str:
        return (cls.__doc__ or "").strip()
