"""The one long frame every stage hands to the next, and the metric roles.

One row per logged value (as tbparse and TensorBoard think of scalars). NaN and
±inf stay as they were logged; null means "not logged". Roles are inferred from
tag names and can be overridden by config.
"""
from __future__ import annotations

import re
from typing import Mapping

import polars as pl

from .errors import SchemaError

SCHEMA: dict[str, pl.DataType] = {
    "run": pl.Categorical(),
    "source": pl.Categorical(),
    "segment": pl.UInt32,
    "seq": pl.UInt64,
    "step": pl.Int64,
    "wall_time": pl.Float64,
    "metric": pl.Categorical(),
    "value": pl.Float64,
}
"""Column order and types of the long frame (the types every output writes: `wide`)."""

NARROW: dict[str, pl.DataType] = {"seq": pl.UInt32, "value": pl.Float32}
"""The 4-byte forms a column may take in memory instead of SCHEMA's 8-byte ones (the frame is
most of an analysis's memory): `seq` while the run has at most 2^32 rows (`seq_dtype`; a
larger run keeps UInt64), `value` where the reader took every value of a file from float32
(TensorBoard's `simple_value`, float32 tensors: `tb_events`), which Float32 holds exactly.
A run whose files disagree holds Float64 (`concat`). The numbers never change: the detectors
compute in float64 from the series (`detect.engine.series_of`), other readers of the column
convert with `as_f64`, and outputs write SCHEMA's types (`wide`). `step` stays Int64: steps are
joined, packed into keys and compared across frames all over the analysis, and an Int32 beside
an Int64 fails a join, for 4 bytes a point."""


def accepts(column: str, dtype: pl.DataType) -> bool:
    """Is `dtype` SCHEMA's type of `column` or its narrow form?"""
    return dtype == SCHEMA.get(column) or dtype == NARROW.get(column)


def seq_dtype(rows: int) -> pl.DataType:
    """The type of `seq` for a run of `rows` rows: UInt32 (4 bytes a row) up to 2^32 rows."""
    return pl.UInt32 if rows <= 1 << 32 else pl.UInt64


def wide(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with SCHEMA's types (what exports and the Python API hand out)."""
    casts = [pl.col(c).cast(SCHEMA[c]) for c in NARROW if c in frame.columns and frame.schema[c] != SCHEMA[c]]
    return frame.with_columns(casts) if casts else frame


def concat(frames: list[pl.DataFrame], **kwargs) -> pl.DataFrame:
    """`pl.concat` of frames whose columns may be narrow in some and wide in others: such a
    column is widened in all (lossless), a column narrow everywhere stays narrow."""
    if len(frames) > 1:
        mixed = [c for c in NARROW if c in frames[0].columns and len({f.schema[c] for f in frames}) > 1]
        if mixed:
            frames = [f.with_columns(pl.col(c).cast(SCHEMA[c]) for c in mixed) for f in frames]
    return pl.concat(frames, **kwargs)


def as_f64(values: pl.Series) -> "np.ndarray":
    """A value column as float64 NumPy (a view where it is Float64 already, a lossless copy
    from Float32): what code computing on values reads."""
    import numpy as np

    return values.to_numpy().astype(np.float64, copy=False)

STITCHED_EXTRA: dict[str, pl.DataType] = {"superseded": pl.Boolean}
"""Added by the stitcher: True for points a later launch overwrote (kept, never dropped)."""

ROLES = ("loss", "eval_loss", "grad_norm", "lr", "loss_scale", "reward", "accuracy", "kl", "entropy",
         "perplexity", "throughput", "step_time", "memory", "other")
SIDE_ROLES = ("reward", "accuracy", "kl", "entropy", "perplexity", "throughput", "step_time", "memory", "other")
"""Roles the loss detectors never judge as a curve: only their NaN is told (as a note)."""
HIGHER_IS_BETTER = frozenset({"reward", "accuracy"})
"""Roles whose rise is the run going well (a detector must never read it as a blow-up)."""


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def validate(frame: pl.DataFrame, stage: str, *, stitched: bool = False) -> pl.DataFrame:
    """Check the frame a stage hands over; raise SchemaError naming the stage."""
    want = dict(SCHEMA)
    if stitched:
        want.update(STITCHED_EXTRA)
    have = dict(frame.schema)
    missing = [c for c in want if c not in have]
    if missing:
        raise SchemaError(stage, f"missing columns {missing}")
    wrong = [f"{c} is {have[c]}, expected {t}" for c, t in want.items() if have[c] != t and not accepts(c, have[c])]
    if wrong:
        raise SchemaError(stage, "; ".join(wrong))
    keys = ("run", "source", "segment", "seq", "step", "metric")
    nulls = frame[list(keys)].null_count().row(0)  # by name: `frame[col]` writes a constant column out
    for col, n in zip(keys, nulls):
        if n:
            raise SchemaError(stage, f"column {col!r} has nulls")
    return frame


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    """Cast and order columns into SCHEMA (importers call this on what they build); a
    column already in its narrow form (NARROW) stays so.

    Only columns of another type are cast, and columns are picked by name, not
    `select`ed: `select` would copy a column read in many chunks into one, and a
    constant column (the run name) would be written out once per row."""
    have = frame.schema
    casts = [pl.col(c).cast(t) for c, t in SCHEMA.items() if not accepts(c, have.get(c))]
    if casts:
        frame = frame.with_columns(casts)
    return frame[list(SCHEMA)]


# ---------------------------------------------------------------- roles

_EVAL = (r"(?:^|[/_\-. ])(?:eval|val|valid|validation|test|dev|development|held[\s_\-]?out|hold[\s_\-]?out|tel|predict)"
         r"(?:$|[/_\-. ])"
         r"|^(?:eval|val(?!ue)|valid|validation|test)|验证|测试|评估|検証|テスト|검증|테스트"
         r"|валид|тест|провер|validierung|validaci[oó]n|valida[cç][aã]o|validazione|doğrulama|dogrulama|validasi"
         r"|kiểm tra|xác thực|(?:^|[/_\-. ])(?:prueba|teste|testing)(?:$|[/_\-. ])")
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("loss_scale", re.compile(r"loss[\s_\-/]?scal|(?:^|/)(?:amp[\s_\-]?|cur[\s_\-]?)?scaler?$|grad[\s_\-]?scale", re.I)),
    ("grad_norm", re.compile(r"grad(?:ient)?s?[\s_\-/]?(?:l[12][\s_\-]?)?norm|^gnorm$|[/_]gnorm$|(?:^|/)(?:total_|global_)?norm$|clip[\s_\-]?norm", re.I)),
    ("lr", re.compile(r"(?:^|[/_\-. ])lr\d*(?:$|[/_\-. ]|-)|learning[\s_\-]?rate|^lr|学习率|学習率|학습률", re.I)),
)
_OTHER_AXIS = re.compile(r" vs |_vs_", re.I)
_TIMED = re.compile(r"(?:^|[/.])(?:timings?|timers?|durations?|times?)(?:_(?:s|ms|sec|secs|seconds)|_per_\w+)?[/.]", re.I)
"""A namespace of durations (verl's `timing_s/reward`, `timing_per_token_ms/gen`, SB3's `time/fps`): what
follows names the phase that was timed, not a curve of that role."""
_TIMED_ROLES = frozenset({"throughput", "step_time", "memory", "other"})
_W0 = r"(?:^|[\s/_\-.(:\[])"  # a word's start where a foreign word may stand in a longer name
_W1 = r"(?:$|[\s/_\-.):\]\d])"
_FOREIGN_LOSS = (r"потер[яиьею]|лосс|verlust|"
                 rf"{_W0}(?:pertes?|p[ée]rdidas?|perdas?|perdite|perdita|kay[ıi]p|kerugian|co[uû]ts?|kosten|costos?|costes?"
                 rf"|custos?|maliyet|biaya)(?:{_W1})|mất mát|chi phí|hàm mất")
"""Loss and cost as Russian, German, French, Spanish, Portuguese, Italian, Turkish, Vietnamese and
Indonesian logs print them (`Verlust`, `perte`, `pérdida`, `perda`, `perdita`, `kayıp`, `mất mát`,
`kerugian`, `coût`, `custo`, `biaya`); the Latin-script words stand as words (`perte`, not `experte`)."""
_FOREIGN_REWARD = (r"наград|вознагражд|отдач|успех|очк[иов]|belohnung|erfolg|punktzahl|récompense|recompense|succès|réussite"
                   r"|recompensa|éxito|exito|puntuaci[oó]n|pontua[cç][aã]o|sucesso|êxito|ricompensa|premio|successo|punteggio"
                   r"|ödül|odul|getiri|başarı|basari|phần thưởng|thành công|điểm thưởng|imbalan|hadiah|keberhasilan"
                   r"|得分|分数|スコア|점수"
                   rf"|{_W0}(?:puan|skor|điểm|sukses)(?:{_W1})")
"""Reward, return, success and score as those languages print them (`награда`, `успех`, `Belohnung`,
`récompense`, `recompensa`, `ödül`, `phần thưởng`, `skor`): what a game-playing agent raises."""
_FOREIGN_ACCURACY = (r"точност|правильн|genauigkeit|präzision|praezision|trefferquote|précision|exactitude|justesse"
                     r"|precisi[oó]n|exactitud|acur[aá]cia|precis[aã]o|exatid[aã]o|accuratezza|doğruluk|dogruluk"
                     r"|kesinlik|chính xác|akurasi|presisi|ketepatan|准确度|正確度|正確率")
"""Accuracy and precision as those languages print them (`точность`, `Genauigkeit`, `précision`, `acurácia`,
`accuratezza`, `doğruluk`, `độ chính xác`, `akurasi`): higher is better."""
_FOREIGN_ERROR = (r"ошибк|fehler|erreur|erreurs|errore|hata|lỗi|galat|kesalahan|误差|誤差|错误率|오차|오류"
                  rf"|{_W0}(?:erro|erros)(?:{_W1})")
"""An error as those languages print it (`ошибка`, `Fehler`, `erreur`, `erro`, `hata`, `lỗi`, `galat`):
lower is better, what stands for the loss of a run that names none."""
_SETTING = re.compile(r"(?:^|[/_\- ])(?:weights?|coef|coeff|coefficient|lambda|power|gamma|beta|alpha|thresh|threshold)$",
                      re.I)
"""A setting, not a curve the run produces: a term's weight or coefficient (`LOSS_WEIGHT`, `kl_coef`,
`entropy_coeff`, `FOCAL_LOSS_GAMMA`, `BG_IOU_THRESHOLD`)."""
_ARM = re.compile(r"(?:^|(?<=[/_\-. (]))(?P<setting>lr|learning[\s_\-]?rate|wd|weight[\s_\-]?decay|bs|batch[\s_\-]?size"
                  r"|dropout|momentum)[\s_=:\-]?(?:\d*\.\d+|\d+(?:\.\d+)?e[-+]?\d+)(?=$|[/_\-. )])", re.I)
"""A name that carries a setting and its value (`learning_rate_0.1`, `lr=3e-4`): an arm of a sweep,
whose values are what that arm logged, never the setting's own curve (the value has a decimal
point or an exponent: `lr_0` is a parameter group's LR)."""


def sweep_arm(metric: str) -> str | None:
    """The setting a name carries with its value (`learning_rate` of `learning_rate_0.1`), else None."""
    m = _ARM.search(metric)
    return m["setting"] if m else None
_LR_SCALE = re.compile(r"(?:^|[/_\-. ])lr[\s_\-]?scal|learning[\s_\-]?rate[\s_\-]?scal", re.I)
_SQUARED = re.compile(r"squared?|(?:^|[/_\-. ])sq(?:$|[/_\-. ])|norm[\s_\-]?sq|norm2$", re.I)
_NOT_GRAD = re.compile(r"param|weight|update|activation|act_|embed|logit", re.I)
_LOSS = re.compile(rf"loss|损失|損失|손실|{_FOREIGN_LOSS}|^trl$|^tel$|nll|cross[\s_\-]?entropy|perplexity$|^ppl$|(?:^|[/_\-. ])ce$|objective"
                   r"|(?:^|/)cost$|(?:^|[/_\-. ])bp[bc]$|bits[\s_\-]?per[\s_\-]?(?:byte|char)"
                   r"|(?:^|[/_\-. :]|train|val|valid|test|eval)(?:r?mse|mae|huber|bce)(?:$|[/_\-. :])|mean[\s_]?(?:squared|absolute)[\s_]?error"
                   r"|(?:^|[/_\-. :])(?:n?elbo|bpd)(?:$|[/_\-. :])|smooth[\s_\-]?l1"
                   r"|(?:^|[/_\-. ])perceptual(?![\w\-./]*(?:weight|lambda|coef))(?:$|[/_\-. ])"
                   r"|(?:^|/)(?:l[12]|rmsle|m?logloss)$", re.I)
"""A name that says a loss: `loss`, a cross-entropy, an NLL, a cost, bits per byte/char/dim, a squared or
absolute error (`mse`, `train_mae`, `trainmse`, `test:MSE`, Keras' `mean_squared_error`), a VAE's
`ELBO` (the bound its training log prints is the loss it minimises, the negated bound), a gradient
booster's evaluation metric named alone or under its data set (LightGBM's `valid_0/l1`, `l2`,
XGBoost's `validation_0/mlogloss`: the objective it lowers round by round)."""
_NOT_LOSS = re.compile(r" vs |_vs_|samples|tokens$|loss[\s_\-]?scal|ppl|perplex|runtime|per_second|num_|count"
                       r"|(?:^|[/_\-. ])delta[\s_\-]?loss", re.I)
"""Names with a loss word that are no loss: a scale, a count, a change of a loss over one update (Spinning Up's
`DeltaLossPi`, `DeltaLossV`: how much the update lowered it, negative as it works)."""
_PERPLEXITY = re.compile(r"perplexity|(?:^|[/_\-. ])ppl(?:$|[/_\-. ])|困惑度", re.I)
_B = r"(?:^|[/_\-. (@:])"  # the start of a name's word (`train:KLD`: a colon too)
_E = r"(?:$|[/_\-. ()@%:\d])"  # its end
_KL = re.compile(rf"{_B}(?:approx_?)?kl(?:d|_?div(?:ergence)?)?{_E}|kullback", re.I)
_ENTROPY = re.compile(r"entropy|(?:^|[/_\-. ])ent(?:$|[/_\-. ])", re.I)
_CROSS_ENTROPY = re.compile(r"cross[\s_\-]?entropy", re.I)
_REWARD = re.compile(rf"reward|{_B}(?:ep_?)?rew(?:ard)?s?(?:_?mean)?{_E}|{_B}(?:episode_?|ep_?|mean_?|eval_?)?returns?(?!_?code){_E}"
                     rf"|{_B}(?:test_?)?ep_?ret{_E}|{_B}ep_r{_E}|{_B}(?:ep(?:isode)?_?|avg_?|mean_?)?rwds?{_E}"
                     rf"|{_B}success(?:_?rate)?{_E}|{_B}utility{_E}|奖励|回报|報酬|보상|{_FOREIGN_REWARD}", re.I)
_SCORE = re.compile(rf"^(?!.*thresh).*?{_B}(?:scores?|fitness){_E}", re.I)
"""A score or a fitness (`scores`, `best_fitness`, `Average Fitness`): the objective a game-playing agent
or an evolutionary search raises, judged as a reward is; tried after the accuracy-like names, so
`f1_score` and `bleu_score` stay accuracies (a score's threshold, `SCORE_THRESH_TEST`, is a setting;
an error's score, `smape_score`, is lower-better)."""
_BEST = re.compile(r"(?:^|[/_\-. ])max(?:imum)?[/_\-. ]", re.I)
"""`max_fitness`: a population search's best individual, the search's progress (not a spread)."""
_ACCURACY = re.compile(rf"{_B}(?:acc(?:uracy)?|top[\-_]?\d+|map|ap|precision|prec|recall|f1|f1_score|f_?score|f\d*_?measure|bleu|rouge[\dlL]*"
                       rf"|sacrebleu|auc|auroc|miou|iou|io_u|dice|exact_match|explained_?var(?:iance)?|psnr|ssim|ndcg|mrr|hr@\d+"
                       rf"|chrf|matthews(?:_?correlation)?|mcc|pearson|spearmanr?|ari|nmi)(?:\d*){_E}"
                       r"|accuracy|precision|recall|bleu|rouge|准确率|正确率|精度|精确率|召回率|正解率|정확도|" + _FOREIGN_ACCURACY, re.I)
_SPREAD = re.compile(r"(?:^|[/_\-. ])(?:std|stdev|stderr|sem|var|(?<!explained_)variance|frac|fraction|count|num|min|max"
                     r"|(?<!acc_)norm)"
                     r"(?:$|[/_\-. ])", re.I)
"""A statistic of a score that is no score itself (TRL's `reward_std`, `frac_reward_zero_std`,
lm-eval's `acc_stderr`), or a loss term's normaliser (darknet's `iou_norm`; lm-eval's `acc_norm`,
the length-normalised accuracy, stays a score)."""
_THROUGHPUT = re.compile(rf"throughput|per[\s_\-]?s(?:ec(?:ond)?)?{_E}|per_second|/s(?:ec)?$|{_B}(?:tps|mfu|[mgt]?flops"
                         rf"|tflops_?per_?gpu|tok_s|toks|tokens?_s|samples?_s|it_s|ips|fps|wps|ups){_E}", re.I)
_STEP_TIME = re.compile(rf"{_B}(?:dt|ms|step_?time|iter_?time|batch_?time|data_?time"
                        rf"|time_?per_?(?:step|iter(?:ation)?|batch)|elapsed_time_per_iteration"
                        rf"|sec_?per_?(?:step|iter|batch)|s_?per_?(?:step|it|iter)|batch_?cost){_E}"
                        r"|time/(?:step|iter|batch)$|(?:^|[_\-. ])(?:s|secs?|ms)/it(?:er)?$", re.I)
_DURATION_NAME = re.compile(r"^(?:(?:train|epoch|iter|batch|step|b|mb)[_\- ]?)?time(?:[_\- ]?(?:taken|used|spent|cost))?"
                            r"(?:[_\- ]?(?:s|sec|secs|seconds|ms|min|mins))?$", re.I)
"""A time with no word for what it times (`time`, `Time_s`, `epoch_time`, `Time_Taken_s`): a clock since
the start when it never goes down, the duration of each step or epoch when it does (`durations`)."""
_FREE = re.compile(r"free|avail", re.I)
"""Memory left free (fairseq's `gb_free`): it falls as use grows, the opposite of a memory curve."""
_MEMORY = re.compile(rf"{_B}(?:mem|memory|vram|gpu_?mem|max_?mem(?:ory)?|[gm]i?b|max_?allocated|allocated|reserved){_E}"
                     r"|memory", re.I)
_TOTAL = re.compile(r"^(?:(?:train|val|eval|test)[_/\-. ])?tot(?:al)?$", re.I)
"""A bare `total` or its abbreviation `tot` (YOLO's console table, JDE's, a script's `total: 1.35`, a
PINN's `Tot:`): in a run that names no loss, the total a training log prints is the sum of its loss terms."""
_LOSS_TERM = re.compile(r"^l_[a-z]", re.I)
"""BasicSR's loss terms (`l_pix`, `l_percep`, `l_g_gan`): the `l_` prefix names a loss."""
_LOWER_BETTER = re.compile(rf"{_B}(?:distance|dist(?![_\-.]?(?:world|rank|backend|url|init|size))|error|err|wer|cer|fid|regret|energy"
                           rf"|s?mape|recon(?:struction)?|anomal(?:y|ies)){_E}|{_FOREIGN_ERROR}", re.I)
"""A distance, an error rate, a reconstruction error (a VAE's `Recon` beside its `KL`), an energy (lower is better; a variational Monte Carlo run lowers its
`energy`) or an anomaly score (a federated server's `anomaly_score` of its clients' updates: no reward): what stands
for the loss of a run that names none."""
_ADVERSARIAL = re.compile(
    r"discrim|generator|(?:^|[^a-z])(?:gan|adv|adversarial)(?:$|[^a-z])|^[GD]_[A-Z]{1,2}$"
    r"|(?:^|[/_\-. ])[GD]_(?:fake|real|gan|adv|feat|vgg|l1|cycle|idt|loss|total)"
    r"|(?:^|[/_\-. ])(?:err|loss|l)[_/]?(?:[gd]|gen|dis|disc)(?:$|[/_\-. ])"
    r"|(?:^|[/_\-. ])(?:d|g|dis|disc|gen)[_/]?loss(?:$|[/_\-. ])", re.I)
"""A term of an adversarial objective, named by its network or its role in the game: `D_loss`,
`loss_G`, `loss_gen`, `errD`, `G_GAN`, `D_real`, CycleGAN's `G_A`/`D_B`, pix2pixHD's `G_VGG`,
`disc_loss`, `Discriminator Loss`, `adv_loss`, chainer's `gen/loss`. One pattern for both uses:
what stands for the loss of a run that names none, and whose swings are the game's, not a
failure (`detect/significance.py`)."""


def is_free_memory(metric: str) -> bool:
    """Memory left free (`memory.free (MB)`, fairseq's `gb_free`): role `other`, since it falls as use
    grows, but beside the used memory it tells the device's capacity (used + free)."""
    return bool(_MEMORY.search(metric) and _FREE.search(metric))


def is_adversarial(metric: str) -> bool:
    """Is this a term of an adversarial objective (a discriminator's or a generator's)?"""
    return bool(_ADVERSARIAL.search(metric))


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
"""Where a camel-cased name starts a word (`RPNAcc`, `pixAcc`, `mDice`, `ValAcc`)."""


_LOSS_WORD = re.compile(f"损失|損失|손실|{_FOREIGN_LOSS}", re.I)
""""Loss" as Chinese, Japanese and Korean logs print it, and the languages of `_FOREIGN_LOSS`."""


def infer_role(metric: str) -> str:
    """Guess the role of a tag from its name (`train/loss` → loss, `lr-AdamW` → lr); a name whose
    words are glued in camel case (`AverageEpRet`, `mseTr`, `lossVal`, `MeanKL`) is read as its words
    where the name as written says no more."""
    role = _infer_role(metric)
    if role not in _TIMED_ROLES and _TIMED.search(metric):
        return "other"  # `timing_s/reward`: the seconds spent on the reward, not the reward
    camel = _CAMEL.sub("_", metric)
    if camel == metric:
        return role
    glued = _infer_role(camel)
    if role == "other":
        return glued
    if role == "loss" and glued == "eval_loss":
        return glued  # `lossVal`, `valLoss`: the split is a glued word
    return role


def _infer_role(metric: str) -> str:
    if _OTHER_AXIS.search(metric):
        return "other"  # Megatron's `lm loss vs samples`: the same curve on another x-axis
    if _SETTING.search(metric) and "grad" not in metric.lower():  # `grad/norm_gamma`: a gradient's, of a parameter
        return "other"  # `LOSS_WEIGHT`, `kl_coef`: a setting, not the curve it names
    if _ARM.search(metric):  # `error (learning_rate_0.1)`: the role is what is left beside the arm
        rest = _ARM.sub("", metric).strip(" /_-.()")
        return infer_role(rest) if rest else "other"
    for role, pattern in _RULES:
        if pattern.search(metric):
            if role == "loss_scale" and _LR_SCALE.search(metric):
                continue  # `lr_scale`: a multiplier on the LR schedule, not the fp16 loss scale
            if role == "grad_norm" and _NOT_GRAD.search(metric) and "grad" not in metric.lower():
                return "other"  # `param_norm`, `weight_norm`, `update_norm`: norms, not of gradients
            return role
    if _KL.search(metric):
        return "kl"  # PPO's `train/approx_kl`, TRL's `objective/kl`, a VAE's `kl_loss`: a term watched apart
    if _ENTROPY.search(metric) and not _CROSS_ENTROPY.search(metric):
        return "entropy"  # SB3's `train/entropy_loss`, TRL's `objective/entropy`
    named_loss = "loss" in metric.lower() or bool(_LOSS_WORD.search(metric))
    if named_loss and _LOSS.search(metric) and not _NOT_LOSS.search(metric):
        return "eval_loss" if re.search(_EVAL, metric, re.I) else "loss"
    camel = _CAMEL.sub("_", metric)
    for role, pattern in _SIDE_RULES:
        if pattern.search(metric) or (role == "accuracy" and pattern.search(camel)):
            if role in HIGHER_IS_BETTER and _SPREAD.search(metric) and not (pattern is _SCORE and _BEST.search(metric)):
                return "other"  # the spread or share of a reward, not a reward: no direction to judge
            if role in HIGHER_IS_BETTER and _LOWER_BETTER.search(metric):
                return "other"  # `top1_err`, `acc_error`: an error rate, lower is better
            if role == "memory" and _FREE.search(metric):
                return "other"  # `gb_free`: memory left, which falls as use grows
            return role
    if _LOSS.search(metric) and not _NOT_LOSS.search(metric):
        return "eval_loss" if re.search(_EVAL, metric, re.I) else "loss"
    return "other"


_SIDE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("reward", _REWARD),
    ("accuracy", _ACCURACY),
    ("perplexity", _PERPLEXITY),
    ("throughput", _THROUGHPUT),
    ("step_time", _STEP_TIME),
    ("memory", _MEMORY),
    ("reward", _SCORE),
)
"""Roles beyond the loss, tried in this order after the loss named as such (`reward_loss` is
a loss, `objective/rlhf_reward` a reward); the first that matches wins."""


_RL_TERM = re.compile(r"polic|critic|actor|value[\s_\-/]?(?:loss|estimate|function)|advantage|explained[\s_]?var"
                      r"|clip[\s_]?frac|clip[\s_]?ratio|importance[\s_]?sampling|td[\s_]?err|(?:^|[/_\-. ])(?:pi|q|v)[\s_\-]?loss|(?:^|[/_\-. ])(?:avg_?|mean_?|max_?)*q(?:_?values?)?$"
                      r"|(?:^|[/_\-. ])loss[\s_\-]?(?:pi|q\d?|v)(?:$|[/_\-. ])|(?:^|[/_\-. ])q\d?[\s_]?vals?(?:$|[/_\-. ])"
                      r"|explor|(?:^|[/_\-. ])eps(?:ilon)?(?:$|[/_\-. ])"
                      r"|(?:^|[/_\-. ])(?:ep|episode)[\s_\-]?len(?:gth)?s?(?:$|[/_\-. ])|(?:^|[/_\-. ])eplen"
                      r"|num[\s_]?generations|completions?[\s_/]?(?:mean_)?len(?:gth)?",
                      re.I)
"""A term only a reinforcement learner logs: its policy, value function or critic (`policy_loss`,
`Losses/Value Loss`, `loss_critic`, `PiLoss`), its advantages, PPO's clipped fraction, GRPO's
clipped and importance-sampling ratios (TRL's `clip_ratio/region_mean`), a value
function's explained variance, a Q-learner's Q values or TD error (Spinning Up's glued `LossPi`,
`LossQ`, `AverageQ1Vals`, read as their words; `pi-loss` hyphenated), an exploration schedule
(SB3 DQN's `rollout/exploration_rate`, an epsilon-greedy `epsilon` or `eps`), a GRPO group's size or its
completions' length (`num_generations`, `completion_length`: a policy trained on sampled answers) or an episode's length
(`rollout/ep_len_mean`, `eplen`, `episode_length`): only a learner in an environment has episodes."""
_PREFERENCE = re.compile(r"chosen|rejected|margin", re.I)
"""A preference optimiser's implicit reward (DPO's `rewards/chosen`, `rewards/margins`): a statistic
of a supervised loss, not a return the run collects."""


def is_preference_reward(metric: str) -> bool:
    """`rewards/chosen`, `rewards/margins`: DPO's implicit rewards, statistics of its loss."""
    return bool(_PREFERENCE.search(metric))


def is_reinforcement(roles: Mapping[str, str]) -> bool:
    """Is this a reinforcement learner's run: it logs a return (a reward that is no preference
    statistic) beside what only a learner of returns logs (a KL to its old or reference policy, a
    policy/value/critic term, Q values; an entropy alone is no mark: a supervised LM logs its tokens'). Such a run is judged by its return, the curve its engineer
    watches; its losses are surrogates that may rise while the agent improves."""
    if not any(r == "reward" and not is_preference_reward(m) for m, r in roles.items()):
        return False
    return any(r == "kl" or (r != "reward" and (_RL_TERM.search(m) or _RL_TERM.search(_CAMEL.sub("_", m))))
               for m, r in roles.items())


_POLICY_TERM = re.compile(r"polic|actor|advantage|clip[\s_]?(?:frac|ratio|range)|(?:^|[/_\-. ])(?:pg|pi)(?:[\s_\-]?loss)?(?:$|[/_\-. ])"
                          r"|loss[\s_\-]?pi(?:$|[/_\-. ])", re.I)
"""A term of a policy the learner trains (PPO's `pg_loss`, `clip_fraction`, a critic's `actor_loss`, Spinning Up's
`LossPi`, its advantages)."""
_VALUE_TERM = re.compile(r"explor|(?:^|[/_\-. ])eps(?:ilon)?(?:$|[/_\-. ])|(?:^|[/_\-. ])(?:avg_?|mean_?|max_?)*q(?:_?values?)?$"
                         r"|td[\s_]?err", re.I)
"""What a value-based learner logs: its exploration schedule (`epsilon`, SB3 DQN's `rollout/exploration_rate`), its
Q values (`episode.q`, `mean_q`), its TD error."""


def is_value_learner(roles: Mapping[str, str]) -> bool:
    """Is this a reinforcement learner that trains no policy of its own (a DQN: an exploration schedule or Q values
    beside its loss, no policy, actor or KL term)? Its loss regresses the Q values on their targets, the curve its
    engineers read (it diverges when the learning breaks); its return is the noisy by-product of an epsilon-greedy
    policy, so such a run is judged by its loss where it logs one (every labelled DQN log with a loss says so)."""
    camel = {m: _CAMEL.sub("_", m) for m in roles}
    return (any(r == "loss" for r in roles.values())
            and any(_VALUE_TERM.search(m) or _VALUE_TERM.search(camel[m]) for m in roles)
            and not any(r in ("kl", "entropy") or _POLICY_TERM.search(m) or _POLICY_TERM.search(camel[m])
                        for m, r in roles.items()))


def is_lower_better_score(metric: str) -> bool:
    """`eval_wer`, `val_error`, `fid`: a distance or an error rate, a score whose fall is progress."""
    return bool(_LOWER_BETTER.search(metric))


_TASK_METRIC = re.compile(r"^metrics/.+\((?:B|M|P|OBB)\)$")
"""Ultralytics' `metrics/mAP50-95(B)`, `metrics/precision(M)`: box, mask, pose or oriented-box scores the
trainer measures on its validation set each epoch (its `train/` and `val/` groups are the losses)."""


def is_eval(metric: str) -> bool:
    """`val/acc`, `eval_wer`, `Accuracy on Test-Set`, Ultralytics' `metrics/mAP50-95(B)`: measured on
    held-out data."""
    return bool(re.search(_EVAL, metric, re.I) or _TASK_METRIC.match(metric))


def is_squared_norm(metric: str) -> bool:
    """`grad_norm_square`, `grad_norm_sq`, `squared_grad_norm`: the square of a norm (its
    outliers are squared ratios); the detectors take its root."""
    return bool(_SQUARED.search(metric))


def is_perplexity(metric: str) -> bool:
    """`ppl`, `eval/perplexity`: exp of a loss; judged as its log when it stands for the loss."""
    return bool(_PERPLEXITY.search(metric))


def infer_roles(metrics, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Role of every metric; `overrides` (from config) win, matched exactly or as a glob.

    A run that logs no metric named as a loss is still checked when it logs what stands
    for one: its perplexity (DeepSpeed-Chat's SFT logs only `ppl`), else the terms of an
    adversarial objective (pix2pixHD/SPADE-style `G_GAN`, `D_fake`, `D_real`), else
    BasicSR's `l_`-prefixed terms (`l_pix`), else a distance, an error rate or an energy (`min_distance`,
    `wer`: lower is better) when no reward is logged either (an RL run is judged by its reward)."""
    import fnmatch

    overrides = dict(overrides or {})
    roles: dict[str, str] = {}
    guessed: list[str] = []
    for m in metrics:
        role = overrides.get(m)
        if role is None:
            for pat, r in overrides.items():
                if fnmatch.fnmatchcase(m, pat):
                    role = r
                    break
        if role is None:
            guessed.append(m)
        roles[m] = role if role is not None else infer_role(m)
    if any(roles[m] == "reward" and _REWARD.search(m) for m in guessed):
        for m in guessed:  # a score stands for the reward of a run that names none (`Avg_Final_Score_100` beside `Avg_Reward_100`)
            if roles[m] == "reward" and not _REWARD.search(m):
                roles[m] = "other"
    if not any(r in ("loss", "eval_loss") for r in roles.values()):
        rewarded = any(r == "reward" for r in roles.values())  # an RL run's objective is its reward
        for stands_for_loss in (is_perplexity, lambda m: bool(_TOTAL.search(m)), is_adversarial,
                                lambda m: bool(_LOSS_TERM.search(m)),
                                lambda m: not rewarded and bool(_LOWER_BETTER.search(m))):
            chosen = [m for m in guessed if roles[m] in ("other", "perplexity") and stands_for_loss(m)]
            for m in chosen:
                roles[m] = "eval_loss" if re.search(_EVAL, m, re.I) else "loss"
            if chosen:
                break
    terms = {role: sum(1 for r in roles.values() if r == role) for role in ("loss", "eval_loss")}
    for m in guessed:  # `L` beside `L_crf` and `L_selection`: the name its loss terms extend is their total
        role = "eval_loss" if re.search(_EVAL, m, re.I) else "loss"
        if roles[m] == "other" and (sum(1 for n, r in roles.items() if r == "loss" and n.startswith(f"{m}_")) >= 2
                                    or (terms[role] >= 2 and _TOTAL.search(m))):  # `total` beside `l1`, `ssim_loss`
            roles[m] = role
    return roles


def roles_of(frame: pl.DataFrame, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Inferred role of every metric in a frame (`loss`, `eval_loss`, `grad_norm`, ...); where no name
    says what the run is judged by, the curve a person would read it by, its role read from its trend
    (`curveguess`: the guess is kept on the returned roles, `.guessed`)."""
    from .curveguess import guess

    import fnmatch

    metrics = frame.get_column("metric").unique(maintain_order=True).to_list()
    roles = infer_roles(metrics, overrides)
    named = {m for m in metrics for pat in (overrides or {}) if m == pat or fnmatch.fnmatchcase(m, pat)}
    roles.update(durations(frame, [m for m in metrics if m not in named and roles[m] == "other"]))
    guessed = guess(frame, roles, is_eval=is_eval, named=named,
                    no_curve=lambda m: unmeasured_arm(m) or is_free_memory(m))
    for m in list(guessed.guessed):  # the other arms of a sweep measured what the arm read by its shape did
        if sweep_arm(m) and guessed[m] != "other":
            for other in metrics:
                if guessed.get(other) == "other" and other not in named and _same_arms(m, other):
                    guessed[other] = guessed[m]
    return guessed


def _same_arms(a: str, b: str) -> bool:
    """`train (Dropout 0.0)` and `train (Dropout 1.0)`: one setting at two values, beside the same words."""
    return sweep_arm(a) == sweep_arm(b) and _ARM.sub(" ", a) == _ARM.sub(" ", b)


_SPLIT_WORDS = frozenset({"train", "training", "val", "valid", "validation", "eval", "evaluation", "test", "dev"})


def unmeasured_arm(metric: str) -> bool:
    """A sweep's arm whose name says nothing of what it measured (`learning_rate_0.1`, `error`-less): no curve
    to read a run by. An arm named by the data split it was measured on (`train (Dropout 0.0)` of a
    `train.csv` holding one column a dropout value) is a curve of training, read by its shape as any other."""
    if not sweep_arm(metric):
        return False
    rest = _ARM.sub(" ", metric).strip(" /_-.()").lower()
    return rest not in _SPLIT_WORDS


def is_bare_time(metric: str) -> bool:
    """A time with no word for what it times (`_DURATION_NAME`: `time`, `time_min`, `Time_s`): a
    duration when it goes down now and then, a clock since the start when it never does."""
    return bool(_DURATION_NAME.match(re.split(r"[/.]", str(metric))[-1]))


def durations(frame: pl.DataFrame, candidates: list[str], min_points: int = 10) -> dict[str, str]:
    """`step_time` for each bare time (`time`, `Time_s`, `epoch_time`) whose values go down as often as
    a measured duration's do: the seconds a step or an epoch took, printed under a name that does not
    say so. A time that (nearly) never goes down is a clock since the start (Ultralytics' `time`) and
    keeps no role."""
    names = [m for m in candidates if is_bare_time(m)]
    if not names:
        return {}
    falls = (frame.lazy().filter(pl.col("metric").cast(pl.String).is_in(names) & pl.col("value").is_finite())
             .group_by("metric").agg(pl.len().alias("n"), (pl.col("value").diff() < 0).mean().alias("down"))
             .filter((pl.col("n") >= min_points) & (pl.col("down") >= 0.1)).collect())
    return {str(m): "step_time" for m in falls.get_column("metric").to_list()}

