"""Overfitting: an eval loss that turned up while the training loss kept falling, judged
with statistics that work from five evaluations (a short fine-tune) to hundreds."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..model.finding import Finding
from . import scores
from ..frame import is_adversarial, is_reinforcement
from .base import Detector, RunContext, Series, is_running_best, main_name_score
from .plateaus import view_name
from .turns import MEMORISED_FALL, FlatRule, TurnRule, never_improved, passing_turn, turned_from_best


@dataclass(frozen=True, kw_only=True)
class OverfittingDetector(Detector):
    """An eval loss that turned up while the training loss kept falling.

    Detects: per eval loss, its minimum (on a short centred median for long series, so
    one lucky evaluation is not the minimum), followed by at least `min_evals`
    evaluations whose last part stands `min_rise` above it and beyond the eval loss's
    own noise (robust z `min_z`; with fewer than eight evaluations, a rise in most
    steps instead), while the training loss fell over the same stretch. Runs with
    several eval sets get one finding, on the main eval loss, naming the others that
    turned up too. A held-out score (an eval accuracy, a WER) that turned the wrong way
    from its best while the training loss fell is read the same way (an accuracy's
    fall as a loss's rise, on its log), under the eval loss when both turned. When the
    training loss rose with it, it is divergence, not this. A main eval loss that never
    improved on its first evaluations while the training loss fell far is a note too
    (memorised from the start, `turns.never_improved`), and so is one that rose twice as
    high and came back below its early best later (grokking, `turns.passing_turn`).
    A run that names no held-out curve gets notes: a second loss that turned up above
    the training loss while it fell (`_beside`), a lone loss that rose while its
    accuracy held (`_confident`).
    Why it matters: the best checkpoint is the one at the eval minimum; training on
    only memorises the training set.
    Likely causes: too many epochs over a small dataset, too little regularisation,
    repeated data.
    Evidence: step and value of the eval minimum, last eval level, rise in percent and
    robust z, train loss over the same stretch, other eval sets that turned up.
    """

    code = "SL206"
    kind = "overfitting"
    roles = ()

    min_evals: int = 2
    """Evaluations after the minimum, at least (and a tenth of the series)."""
    min_rise: float = 0.01
    """An eval loss 1% above its minimum over several evaluations, beyond their noise, already
    names a better checkpoint (a LoRA fine-tune's third epoch, +1.7%): a note under `loud_rise`."""
    loud_rise: float = 0.10
    """A rise under this (a YOLO val/obj_loss 8% above its minimum late in a clean run) is a
    note that names the best checkpoint, not a warning: the cost is a few percent of eval loss."""
    min_z: float = 3.0
    min_given_back: float = 0.01
    """A rise that gives back under this share of what the held-out curve gained from its first
    evaluation to its best (in its own units) is a note: near zero the log scale makes a
    thousandth of a nat look like a fourfold rise."""
    trend_evals: int = 3
    """Evaluations after the best a loud turn needs: fewer make a step, not a trend (a note)."""
    few_points: int = 8
    """Below this many evaluations the noise cannot be estimated: most steps after the
    minimum must rise instead."""

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        train = scores.judged_loss(ctx)
        if train is not None and train.role != "loss":
            train = None
        turned = []
        for series in ctx.by_role("eval_loss"):
            hit = self._turn(series, train)
            if hit is not None:
                turned.append((series, hit))
        if train is not None:  # a held-out score turned the wrong way while the training loss fell
            for series in scores.held_out_scores(ctx, train):
                hit = self._turn(series, train)
                if hit is not None:
                    turned.append((series, hit))
        passing = self._passing(ctx, train)
        if not turned:
            return self._memorised(ctx, train) + passing + (self._beside(ctx, train) or self._confident(ctx, train))
        # the finding leads with a curve whose rise matters (a total that rose 2% while its box term rose
        # 16% is not the event), then the total eval loss (fewest name parts: valid_loss, not valid_ce_loss),
        # the first name, then the clearest turn (an epoch mean's over the per-batch values')
        first = min(s.metric for s, _ in turned)
        series, hit = max(turned, key=lambda t: (np.expm1(t[1]["rise"]) >= self.loud_rise, t[0].role == "eval_loss",
                                                 main_name_score(t[0].metric, "eval_loss"),
                                                 -len(_name_parts(t[0].metric)), t[0].metric == first,
                                                 t[1]["z"] or 0.0))
        others = [(s.metric, h) for s, h in turned if s is not series]
        found = self._finding(series, hit, train, others, ctx)
        if np.expm1(max(h["rise"] for _, h in turned)) < self.loud_rise:
            found.severity = "info"
        elif all(h["given_back"] is not None and h["given_back"] < self.min_given_back for _, h in turned):
            # a held-out loss at a thousandth of where it started (0.0003 -> 0.0013 after 4.8 at the start):
            # large on the log scale, nothing the model lost
            found.severity = "info"
            found.message += (f"; it gave back {100 * hit['given_back']:.2g}% of what it had gained since its first "
                              f"evaluation ({_num(hit['first_value'])}): negligible, no alarm")
        # a held-out score that gave back all it had gained since its first evaluation, and no more, is judged as
        # an eval loss is: with the training loss standing still it is one lucky evaluation, not a turn (VGG16's
        # val accuracy 28.57, one 35.71, 28.57 to the end, its training loss at ln 4 throughout); one that fell
        # far below its first level (a fine-tuned model's accuracy sliding from where it started) did turn
        back = series.role == "eval_loss" or (hit["given_back"] is not None and 0.9 <= hit["given_back"] <= 1.5)
        early = self._too_early(hit, train if back else None)
        if early and found.severity != "info":
            found.severity = "info"
            found.evidence["note_because"] = early[0]
            found.message += f"; {early[1]}"
        judged = [s for s in ctx.by_role("eval_loss") if np.isfinite(s.value).sum() >= self.min_evals + 2]
        if len(judged) >= 4 and len(turned) < len(judged) / 4:
            # one class's or one head's eval loss turning while most held: not the model overfitting
            found.severity = "info"
            found.message += (f"; only {len(turned)} of the run's {len(judged)} eval losses turned up: one class or "
                              f"head, not the model")
        family = _family(series.metric, [m for m, s in ctx.series.items()
                                         if np.isfinite(s.value).sum() >= self.min_evals + 2])
        moved = sum(s.metric in family for s, _ in turned)
        if found.severity != "info" and len(family) >= 4 and moved < len(family) / 4:
            # `val_SYM_precision` turning while `val_DIS_precision` and a dozen other classes' held: that class
            found.severity = "info"
            found.message += (f"; only {moved} of the run's {len(family)} curves named like it (one per class or "
                              f"head) turned: one class or head, not the model")
        return [found] + passing

    def _passing(self, ctx: RunContext, train: Series | None) -> list[Finding]:
        """The main eval loss rose far above its early best while the training loss fell, stayed up,
        and came back below it later (`turns.passing_turn`): memorised first, generalised later
        (grokking, double descent). A note: the run recovered by itself, and its end is its best."""
        series = ctx.main("eval_loss")
        hit = passing_turn(series, train) if series is not None else None
        if hit is None:
            return []
        msg = (f"{series.label} rose {np.exp(hit['rise']):.1f}x from {_num(hit['min_value'])} at step {hit['min_step']} "
               f"to {_num(hit['peak_value'])} around step {hit['peak_step']} while {train.label} fell "
               f"{_fall_text(hit['train_change'])}, and came back below it by step {hit['back_step']} "
               f"({_num(hit['end_value'])} at the end): the model memorised its training set first and generalised "
               f"later (grokking, double descent)")
        return [Finding(kind="overfitting", code=self.code, run=ctx.run, metric=series.metric, severity="info",
                        message=msg, start_step=hit["min_step"], end_step=hit["back_step"],
                        magnitude=float(np.exp(hit["rise"])),
                        evidence={"min_step": hit["min_step"], "min_value": hit["min_value"],
                                  "end_value": hit["peak_value"], "rise_percent": float(np.expm1(hit["rise"]) * 100),
                                  "train_change_log": hit["train_change"], "reading": "passing",
                                  "back_step": hit["back_step"], "also_on": []})]

    def _beside(self, ctx: RunContext, train: Series | None) -> list[Finding]:
        """A run that logs no held-out curve by name may log one under a bare name (`MSE_loss` printed after
        each epoch's validation): another loss that bottomed and rose `loud_rise` or more over `trend_evals`
        points while the training loss kept falling, ending above it (a held-out loss sits above the
        training loss, a term of the training objective under its total). A note: the log does not say the
        data it was measured on, and a term traded off against the rest (a KL) rises by design. Not for
        adversarial or reinforcement runs (their terms rise while the model improves), nor another view of
        the training loss (its epoch average), nor a running best."""
        if train is None or ctx.by_role("eval_loss") or is_reinforcement(ctx.roles) \
                or any(is_adversarial(m) for m in ctx.series):
            return []
        _, tv = train.finite()
        k = max(1, tv.size // 5)
        out = []
        for series in sorted(ctx.by_role("loss"), key=lambda s: s.metric):
            if series is train or is_running_best(series.metric) or view_name(series.metric) == view_name(train.metric):
                continue
            hit = self._turn(series, train)
            _, v = series.finite()
            if hit is None or hit["after"] < self.trend_evals or np.expm1(hit["rise"]) < self.loud_rise \
                    or not _gave_back_part(hit) or float(np.median(v[-k:])) <= float(np.median(tv[-k:])):
                continue
            out.append(_note(self._finding(series, hit, train, [], ctx), "beside_training_loss",
                             f"; {series.label} is no held-out loss by name: if it is measured on held-out data (it "
                             f"ends above {train.label}, as a held-out loss does), the model overfitted from step "
                             f"{hit['min_step']}; a term traded off against the rest of the objective rises by design"))
        return out[:1]

    def _confident(self, ctx: RunContext, train: Series | None) -> list[Finding]:
        """The run's only loss rose `CONFIDENT_RISE` or more from its minimum, steadily, while the accuracy
        logged beside it held its level (its last fifth within `HELD_ACCURACY` of its value at the loss's
        minimum, or above it): predictions as right as before and more confident when wrong, the held-out
        signature of overfitting (a DARTS log of its validation pass, loss 0.15 -> 0.84 at 92% accuracy). A
        training loss that diverges takes its accuracy down with it. A note: the log does not say which
        data the loss was measured on."""
        if train is None or ctx.by_role("eval_loss") or len(ctx.by_role("loss")) != 1 or is_reinforcement(ctx.roles):
            return []
        hit = self._turn(train, None)
        if hit is None or hit["after"] < self.trend_evals or hit["rise"] < np.log(CONFIDENT_RISE) \
                or not _gave_back_part(hit):
            return []
        for acc in sorted(ctx.by_role("accuracy"), key=lambda a: a.metric):
            st, v = acc.finite()
            if scores.direction(acc) <= 0 or v.size < self.few_points:
                continue
            at = float(np.median(v[(st >= hit["min_step"] - 1) & (st <= hit["min_step"] + 1)] if
                                 ((st >= hit["min_step"] - 1) & (st <= hit["min_step"] + 1)).any() else v[:1]))
            end = float(np.median(v[-max(1, v.size // 5):]))
            if at <= 0 or end < (1 - HELD_ACCURACY) * at:
                continue
            found = _note(self._finding(train, hit, None, [], ctx), "confident",
                          f"; {acc.label} held its level meanwhile ({at:.4g} at the minimum, {end:.4g} at the end): "
                          f"the model grew more confident on examples it gets wrong, the held-out signature of "
                          f"overfitting (a training loss that diverges takes its accuracy down with it)")
            found.evidence["accuracy"] = acc.metric
            return [found]
        return []

    def _memorised(self, ctx: RunContext, train: Series | None) -> list[Finding]:
        """The main eval loss never improved on its first evaluations (`turns.never_improved`) while
        the training loss fell `turns.MEMORISED_FALL` or more: the model fitted its training set from
        the start and none of it carried over (the best checkpoint is the first). A note: a run
        evaluated first after it had converged on a large set looks the same."""
        series = ctx.main("eval_loss")
        if series is None or train is None:
            return []
        step, _ = series.finite()
        if not step.size or not scores.from_the_start(step, ctx):
            return []
        flat = never_improved(series, train, FlatRule(min_train_fall=MEMORISED_FALL))
        if flat is None:
            return []
        msg = (f"{series.label} never improved: {_num(flat['first_value'])} over its first evaluations, "
               f"{_num(flat['last_value'])} over its last ({flat['evals']} evaluations from step {flat['first_step']}) "
               f"while {train.label} fell {-np.expm1(flat['train_change']) * 100:.0f}%: the model fitted its training "
               f"set from the start and none of it reached the held-out set; the best checkpoint is the first")
        return [Finding(kind="overfitting", code=self.code, run=ctx.run, metric=series.metric, severity="info",
                        message=msg, start_step=flat["first_step"], end_step=flat["last_step"],
                        evidence={"min_step": flat["first_step"], "min_value": flat["first_value"],
                                  "end_value": flat["last_value"], "rise_percent": float(np.expm1(-flat["gain_log"]) * 100),
                                  "train_change_log": flat["train_change"], "reading": "never_improved",
                                  "also_on": []})]

    def _too_early(self, hit: dict, train: Series | None) -> tuple[str, str] | None:
        """Why a turn is a note however far the eval rose:
        - fewer than `trend_evals` evaluations after the best: two points make a step, not a trend
          (a lucky best evaluation and the next two at the curve's level read as a rise), and the
          next evaluation often sets a new best;
        - an eval loss rose while the training loss fell less than `loud_rise` over the same steps
          (the materiality asked of the eval's rise): a model that stopped fitting its training set
          is not memorising it, and its held-out loss drifting is no overfitting to act on (a held-out
          score that fell far while the training loss stood still is left loud: not a drift)."""
        if hit["after"] < self.trend_evals:
            return ("few_evaluations", f"only {hit['after']} evaluation{'s' if hit['after'] > 1 else ''} after the best: "
                                       f"too few to tell a turn from the curve's wobble, a note until "
                                       f"{self.trend_evals} say so")
        fell = hit["train_change"]
        if train is not None and fell is not None and -np.expm1(fell) < self.loud_rise:
            return ("training_flat", f"{train.label} fell only {-np.expm1(fell) * 100:.1f}% over the same steps: a model "
                                     f"that stopped fitting its training set is not memorising it; the held-out loss "
                                     f"drifted, a note")
        return None

    def _turn(self, series: Series, train: Series | None) -> dict | None:
        return turned_from_best(series, train, TurnRule(min_evals=self.min_evals, min_rise=self.min_rise,
                                                        min_z=self.min_z, few_points=self.few_points))

    def _finding(self, series: Series, hit: dict, train: Series | None, others: list[tuple[str, dict]],
                 ctx: RunContext) -> Finding:
        s, lo, hi = hit["min_step"], hit["min_value"], hit["end_value"]
        note = ""
        if train is not None and hit["train_change"] is not None:
            fell = -np.expm1(hit["train_change"])
            # a fall that rounds to 0% is no fall to name beside the turn ("while train_loss fell 0%")
            note = (f" while {train.label} fell {_fall_text(hit['train_change'])}" if fell >= 0.005 else
                    f" while {train.label} stood still ({-fell * 100:+.1f}%)")
        more = f"; {len(others)} other eval loss{'es' if len(others) > 1 else ''} turned up too ({', '.join(m for m, _ in others[:5])})" \
            if others else ""
        if scores.direction(series) > 0:
            msg = (f"{series.label} peaked at {lo:.4g} at step {s} and fell {-np.expm1(-hit['rise']) * 100:.0f}% to "
                   f"{hi:.4g} by step {hit['last_step']}{note}: the best checkpoint is near step {s}{more}")
        else:
            msg = (f"{series.label} bottomed at {lo:.4g} at step {s} and rose {np.expm1(hit['rise']) * 100:.0f}% to "
                   f"{hi:.4g} by step {hit['last_step']}{note}: the best checkpoint is near step {s}{more}")
        stalled = hit.get("stalled_step", s)
        if stalled < s:  # it went flat before its best, within a quarter of its later rise of it
            msg += f"; it had stopped improving from step {stalled} ({hit['stalled_value']:.4g})"
        return Finding(kind="overfitting", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=s, end_step=hit["last_step"], magnitude=float(np.exp(hit["rise"])),
                       evidence={"min_step": s, "min_value": lo, "end_value": hi, "stalled_step": stalled,
                                 "rise_percent": float(np.expm1(hit["rise"]) * 100),
                                 "robust_z": hit["z"], "train_change_log": hit["train_change"],
                                 "also_on": [{"metric": m, "kind": "overfitting", "step": h["min_step"],
                                              "severity": "warning", "ratio": h["end_value"] / h["min_value"]}
                                             for m, h in others]})


MIN_GIVEN_BACK = 0.01
MAX_SHAPE_RISE = 10.0
"""A curve read as held-out by its shape alone (`_beside`, `_confident`) fell first and then gave back at least
`MIN_GIVEN_BACK` of what it had gained since its first points (`MIN_SHAPE_FALL`), rising less than
`MAX_SHAPE_RISE` times its best: a held-out loss improves, then turns. One whose best is its first point rose from the start (a center
loss's term weight warming up), one at the float's floor gave back nothing (1e-7 -> 7e-7), one a thousand
times its best blew up (a divergence's, 0.47 -> 705)."""


MIN_SHAPE_FALL = 0.1
"""...after falling at least this share (its first points against its best)."""


def _gave_back_part(hit: dict) -> bool:
    if hit["given_back"] is None or hit["given_back"] < MIN_GIVEN_BACK or hit["rise"] >= np.log(MAX_SHAPE_RISE):
        return False
    return abs(hit["first_value"] - hit["min_value"]) >= MIN_SHAPE_FALL * abs(hit["min_value"])


CONFIDENT_RISE = 1.5
"""A lone loss that rose this many times its minimum beside an accuracy that held (`_confident`)..."""
HELD_ACCURACY = 0.02
"""...an accuracy whose last fifth is within this share of its value at the loss's minimum, or above it."""


def _name_parts(metric: str) -> list[str]:
    """`valid_ce_loss` -> [valid, ce, loss]: a total eval loss has fewer parts than its terms."""
    return [p for p in re.split(r"[/_\-. ]+", metric) if p]


def _family(metric: str, names: list[str]) -> set[str]:
    """The curves named like `metric` but for one part (`val_SYM_precision` and `val_DIS_precision`,
    `val/head3/acc` and `val/head7/acc`): one per class or head of the same measure."""
    parts = _name_parts(metric)
    out = {metric}
    for name in names:
        other = _name_parts(name)
        if len(other) != len(parts) or len(parts) < 3:
            continue
        differ = [i for i, (a, b) in enumerate(zip(parts, other)) if a != b]
        # the class sits between the split (`val`) and the measure (`precision`); a measure is no class
        if len(differ) == 1 and 0 < differ[0] < len(parts) - 1 \
                and not {parts[differ[0]].lower(), other[differ[0]].lower()} & _MEASURES:
            out.add(name)
    return out


_MEASURES = {"loss", "acc", "accuracy", "precision", "recall", "f1", "fb1", "auc", "map", "iou", "miou", "dice",
             "wer", "cer", "bleu", "rouge", "top1", "top5", "error", "err", "ppl", "perplexity", "mse", "mae", "rmse"}


def _num(x: float) -> str:
    return f"{x:.4g}"


def _fall_text(change_log: float) -> str:
    """A fall as a percentage, or as a factor past 99% (a loss that went to 1e-7 did not fall '100%')."""
    share = -np.expm1(change_log)
    return f"{share * 100:.0f}%" if share < 0.99 else f"{np.exp(-change_log):,.0f}-fold"


def _note(found: Finding, reading: str, why: str) -> Finding:
    """An overfitting turn read from a curve the log does not name held-out: a note saying why."""
    found.severity = "info"
    found.message += why
    found.evidence["reading"] = reading
    return found
