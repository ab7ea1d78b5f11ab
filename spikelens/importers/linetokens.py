"""A console line as a person reads it: key/value pairs, numbers with units, counters.

`tokenise(line)` reads one line of any console log into a `Template`: the metric
values it holds (name and character span), the counters (`step 10/1000`, `[10/39695]`,
`Epoch:[1/1]`) that may give its step, its time stamp, and whether it is an
evaluation line. Nothing here knows a framework; the grammar is the one people write
logs in:

- prefixes a launcher or logger puts before the message are blanked, never read:
  ANSI colour codes, rank tags (`[rank0]:`), dates and times, durations (`1:00:00`,
  tqdm's `[00:10<03:10`), logger locations (loguru's `__main__:train:88`, `file.py:12`),
  version numbers;
- quotes are blanked, so a Python dict or JSON fragment (`{'loss': '1.23'}`) reads as
  `loss: 1.23`;
- a number's key is the run of words before it: up to four when a `:` or `=` links them
  (`total time: 0.5m`), the last word alone otherwise (`loss 2.31`); `|`, `, `, `;` and
  ` - ` end a run; a number without a key is read only when its unit names it (`330 ms`,
  `5.00it/s`);
- a unit stays in the name (`memory: 29.00GiB(92.49%)` gives `memory_gib` and
  `memory_pct`, `dt: 12ms` gives `dt_ms`); thousands separators are allowed (`7,233`);
- evaluation words before a key (`validate step: 10 loss: 2.3`, `Epoch(val)`) mark the
  line as an evaluation line and are dropped from the key;
- a name, a dotted leader and a value (`zero_optimization_stage ...... 2`) is a setting of
  an argument dump: nothing on such a line is read.

The grammar treats the ten digits alike (no digit literal anywhere), so it may be run
on a line's shape (`lineshapes`: digits written as `0`) and its spans hold for every
line of that shape: a log is tokenised once per shape of line, not once per line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..frame import infer_role
from .lineprefix import PREFIX, ZONE
from .spacedkeys import spaced_pairs

NUM_BODY = (r"[-+]?(?:\d{1,3}(?:,\d\d\d)+(?:\.\d+)?(?!\d|,\d)|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
            r"|(?i:nan|inf(?:inity)?)(?:\.0+)?(?![A-Za-z]))")
"""A number as loggers print it: thousands separators (`1,100,` in a list too), exponents, NaN
and inf spellings (`nan.0`: a float format applied to a NaN tensor)."""

STAMP = r"\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"
"""A date and time with a year: the line's wall time."""

_UNITS = {  # printed unit -> how it ends a metric's name
    "tokens/s": "tokens/s", "tokens/sec": "tokens/sec", "tok/s": "tok/s", "tok/sec": "tok/sec",
    "samples/s": "samples/s", "samples/sec": "samples/sec", "sample/s": "sample/s", "img/s": "img/s",
    "ex/s": "ex/s", "it/s": "it/s", "s/it": "s/it", "ms/step": "ms/step", "s/step": "s/step",
    "us/step": "us/step", "ms/it": "ms/it", "ms/batch": "ms/batch",
    "GiB": "gib", "MiB": "mib", "KiB": "kib", "TiB": "tib", "GB": "gb", "MB": "mb", "KB": "kb", "TB": "tb",
    "Gb": "gb", "Mb": "mb",  # YOLOX's `mem: 5386Mb`: megabytes as loggers spell them
    "TFLOPS": "tflops", "TFLOPs": "tflops", "tflops": "tflops", "ms": "ms", "us": "us", "sec": "s", "min": "min",
    "%": "pct", "s": "s", "m": "min", "h": "h", "G": "G", "M": "M", "K": "K",
}
_SPACED = [u for u in _UNITS if len(u) > 1]
"""Units that may stand one space after their number (`330.02 ms`); single letters must touch it."""
_RATE_UNIT = r"[A-Za-z]{2,12}/(?:s|sec|second)(?![A-Za-z])"
"""Any count per second a trainer prints as a unit (Marian's `words/s`, Sockeye's `updates/sec`, `sents/s`),
beyond the ones named above; it names its number as itself. (A time per thing, `0.195s/batch`, stays a bar's
speed beside its counter, no record's value.)"""
_UNIT_RE = "|".join([re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)] + [_RATE_UNIT])
_SPACED_RE = "|".join([re.escape(u) for u in sorted(_SPACED, key=len, reverse=True)] + [_RATE_UNIT])


def _unit_suffix(unit: str | None) -> str | None:
    """How a printed unit ends a metric's name: the table's spelling, a rate as it is printed."""
    return None if unit is None else _UNITS.get(unit, unit if "/" in unit else None)
_NAMES_ALONE = re.compile(r"/|^ms$")
"""Units that name a number printed without a key (`| 330 ms |`, `5.00it/s`)."""

_WRAPPED = (r"\b(?:tensor|(?:np|numpy)\.(?:float|int)\d*|tf\.Tensor|Tensor)\(\[*(?=\s*[-+]?(?:\d|\.\d|(?i:nan|inf)))"
            r"|(?<=[\d\]])\]*(?:,\s*(?:device|grad_fn|dtype|requires_grad|shape)\s*=\s*(?:<[^>]*>|\([^)]*\)|[\w.:']+))+\s*\)")
"""A number printed in its array type's repr (PyTorch's `tensor(0.5, device='cuda:0', grad_fn=<...>)`,
NumPy 2's `np.float64(0.5)`, TensorFlow's `tf.Tensor(0.5, shape=(), dtype=float32)`): the wrapper and its
keyword arguments are blanked, the number stays."""
_SOFT_BLANK = re.compile(_WRAPPED + r"|\x1b\[[\d;?]*[ -/]*[@-~]|\x1b[()][A-Za-z\d]|\x1b|['\"]")
"""ANSI escapes, quotes and array wrappers: blanked with spaces (a dict's `'loss': 1` reads as `loss: 1`)."""
_FILE_EXTS = "pt|pth|ckpt|bin|safetensors|pkl|pickle|npy|npz|h5|hdf5|onnx|t7|tar|gz|zip|json|ya?ml|csv|txt|log|png|jpe?g"
"""What ends the name of a file a log mentions (a checkpoint, a figure, a table)."""
_BLANK = re.compile("|".join([
    # glog/absl: `I0101 12:00:00.123456 140000 `, maybe after a launcher's time stamp (blanked before) or
    # bracketed tags (`[12:00:01] `, `[rank0]: `): the prefixes stack (first: the
    # alternative that matches at a position wins, and the tags' own would end the header's line start)
    r"(?m:^(?:[\x01\s]|\[[^\]\n]{1,40}\]:?)*[IWEF]\d{4} +\d\d:\d\d:\d\d\.\d+ +\d+ )",
    r"\[(?:rank|default|Rank|RANK)\s*\d+\]:?|(?m:^\s*\[\d+\]:)",  # rank tags
    r"(?m:^\s*\d+:\s)",  # srun -l
    r"[\w.<>\-]+:[\w.<>\-]+:\d+(?=\s)",  # loguru `module:function:line`
    r"\b[\w\-]+\.py:\d+\b|\bline \d+\b",  # logger locations
    # `%(pathname)s : %(funcName)s [%(lineno)d]`: a source file, its function and the line number in brackets
    r"(?:[\w.\-]*[\\/])*[\w\-]+\.py[ \t]*:[ \t]*<?\w+>?[ \t]*\[\d+\]",
    r"\b\d\d/\d\d(?:/\d{2,4})?[ T]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?",  # dates without a year
    r"\b\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d(?![:\d])",  # a date and a time to the minute (`2020-05-23 21:05`)

    r"(?<![\w.:])\d+:\d\d(?::\d\d)?(?:[.,]\d+)?(?:<(?:\d+:\d\d(?::\d\d)?|\?))?(?![\w:])",  # times, durations
    r"\bv?\d+\.\d+\.\d+[\w.+\-]*|\bHTTP/\d(?:\.\d)?",  # versions (a protocol's too: `"GET ... HTTP/1.1" 200`)
    r"\b0x[\dA-Fa-f]+\b",
    r"\bSIG[A-Z]{2,}\b\W{0,3}\d+|(?i:\bsignal\b\s*:?\s*\d+\b(?!\.\d))",  # a kill message's signal: `SIGTERM: 15`
    # a file's path (`models\\0001.pt`, `ckpt/epoch_3.pth`): its numbers are part of its name
    rf"(?:[A-Za-z]:)?(?:[\w.\-]+[\\/])+[\w.\-]*\.(?:{_FILE_EXTS})\b",
    r"\([A-Za-z_][\w.]*:\d+\)",  # a logger location in parentheses: ESPnet's `(trainer:453)`
    # a logger location closing its bracketed prefix after the prefix's other words: NeMo's
    # `[NeMo I 2023-01-01 12:00:00 trainer:329]` (a count in brackets, `[epoch:3]`, `at step:5]`, stays)
    r"(?<=[ \t])(?!(?i:epoch|ep|step|iter|iteration|it|batch|round|episode|update|global_step)\b)"
    r"[A-Za-z_][\w.\-]*:\d+(?=\](?:\s|$))",
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+:\d+(?![\d.])",  # a module's line: loguru's `yolox.core.trainer:247`
    # a logger's bracketed name opening the message (`2016-06-20 10:08:18[outputs/lstm Deep Head Motion
    # Control]:  Epoch 2,  Loss = 0.39`): the words of a name, no prose (a phase tag `[train]:` stays)
    r"(?m:^[\x01\s]*\[(?!\s*(?:train|training|val|valid|validation|eval|evaluation|test|dev)\s*\])[^\[\]\d\n]{1,80}\]:)",
]))
"""What is never a value: blanked with a separator (a key before it has no value)."""
_GAP = "\x01"
_LOGGER_LEAD = re.compile(r"^[\x01\s]*(?:(?:(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL):[A-Za-z_][\w.]*:"
                          r"|\[(?!(?i:train|training|val|valid|validation|eval|evaluation|test|dev)\])"
                          r"[A-Za-z][A-Za-z_.\-]{3,}\]:?)[\x01 \t]*)+")
"""What Python's `logging` (`INFO:root:`) or a launcher (`[titan] `, `[Trainer]`) prints before a message, after
any time stamp or rank tag: blanked, never a key (`INFO:root:-----0------` is the banner `-----0------`; a
phase tag, `[train]`, stays)."""
_FRAME = re.compile(r"^[ \t]*[-=*~#]{3,}(?=[^\W\d])|(?<=\w)[-=*~#]{3,}[ \t]*$")
"""A rule of dashes, stars or `=` touching a line's words (`---map 0.43---`): decoration, no sign or
range; blanked with spaces, so the words it frames open the line."""
_POSTFIX_PART = re.compile(rf"(?:^|(?<=,))[ \t]*(?P<num>{NUM_BODY})[ \t]+"
                           r"(?P<name>[A-Za-z][A-Za-z_/]*(?:[ \t][A-Za-z][A-Za-z_/]*){0,2})[ \t]*(?=,|$)")
"""A part of a comma list that says a number, then the words naming it (`2.743 avg loss`)."""
_LEAD_COUNT = re.compile(r"[\x01 \t]*(\d+):[ \t]")
_NESTED = re.compile(r"[ \t]*:?[ \t]*[\])]?[ \t]*[\[(][ \t]*$")
"""What stands between two counters printed coarse to fine: `][`, `] [`, ` [` (`[0/25][10/100]`, `0 [10/100]`)."""
_STAMP = re.compile(rf"(?P<stamp>{STAMP}){ZONE}?(?![\w:])")
"""A time stamp with its zone (ISO's `Z`, `+02:00`): every one on a line is blanked (a stamp a wrapper
prints before the logger's own); the first is the line's wall time."""
_BAR_VALUE = re.compile(r"[ \t]*[-+]?(?:\d|\.\d)[\d.eE+\-]*[ \t]*(?:\||$)")
"""A lone number after a bar, ending the line or its part (trax's `train  CrossEntropyLoss |  2.77`):
the words before the bar name it, as a two-column table's row does. Not in a line that opens with a
bar: a markdown table's row (`| component  | 147 |`) counts labels, it is no record."""
_PHASE = re.compile(r"\((?P<phase>train|training|val|valid|validation|eval|test)\)", re.I)
_TAG = re.compile(r"\[(?P<tag>train|training|val|valid|validation|eval|evaluation|test|dev)\]", re.I)
"""A phase tag in brackets: the pairs after it, up to the next tag, are of its phase (ESPnet's
`[train] loss=30.1, acc=0.5, [valid] loss=35.2, acc=0.6`)."""
_GLUED_COUNT = re.compile(r"(?<![\w.])(\d+)(?:-(\d+))?-?(?P<unit>epoch|iter|iteration|step|batch)s?(?![a-z])", re.I)
"""A count glued before the word it counts (ESPnet's `2epoch:train:1-10batch:`): `2epoch` is epoch 2,
`1-10batch` the batches up to 10."""
_WORD_COUNT = re.compile(r"(?<![\w.\-/])(?P<unit>ep|epoch|iter|iteration|step|batch)-?(\d+)(?![\w.\-/])", re.I)
"""A count glued after the word it counts (`Ep1 TrainLoss 1.84`, `Epoch12`, `iter500`, `epoch-1`): the same
counter as `Epoch 12`; not inside a longer word or a path (`ckpt_step100`, `runs/epoch3`, `step-100.pt`)."""
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
"""Kana, CJK ideographs, Hangul syllables: scripts written without spaces between words, whose
letters touch the numbers they name (`第3轮`, `损失2.31`): a letter of them never joins a number
to a word, as a Latin letter does (`top1`)."""
_LETTER = rf"[^\W{_CJK}]"
_CJK_CLASS = rf"[{_CJK}]"
"""A word character that may be glued to a digit of its word (`top1`, `loss_0`): not a CJK letter."""
_CJK_ORDINAL = re.compile(r"第[ \t]*(\d+)[ \t]*(?P<unit>轮次|轮|輪|回合|代|回|个epoch|個epoch|epoch|次|步|个batch|批)")
"""A Chinese ordinal count (`第3轮`, `第 12 次`): the round (epoch) or the time (step) of the record it
opens (on a banner with no values, `第 3 轮训练开始`, it counts nothing: the records after it say their count)."""
_CJK_UNITS = {"轮次": "epoch", "轮": "epoch", "輪": "epoch", "回合": "epoch", "代": "epoch", "回": "epoch",
              "个epoch": "epoch", "個epoch": "epoch", "epoch": "epoch", "次": "step", "步": "step",
              "个batch": "batch", "批": "batch"}
COUNTER_WORDS = {  # counter names in other scripts -> the English a log's keys use
    "エポック": "epoch", "エポック数": "epoch", "에폭": "epoch", "에포크": "epoch", "轮次": "epoch", "轮数": "epoch",
    "周期": "epoch", "世代": "epoch", "回合": "episode", "エピソード": "episode", "에피소드": "episode",
    "ステップ": "step", "스텝": "step", "步": "step", "步数": "step", "迭代": "iter", "迭代次数": "iter",
    "イテレーション": "iter", "반복": "iter", "バッチ": "batch", "배치": "batch", "批次": "batch",
}
"""Counters named in Japanese, Korean or Chinese (`エポック 1/30, バッチ 10/100`, `[배치 10/100]`): the
same counters as their English names, so a log in those languages gives its step and epoch."""
# a spaced unit after a number (`1.2 samples/sec`) is the number's, unless a value is linked to it: then it
# is the next key (DeepSpeed's `iter time (s): 1.234 samples/sec: 10.1`)
_CODE_NAME = re.compile(r"[A-Za-z][A-Za-z\d]*(?:[_/][A-Za-z\d]+)+")
"""A name as code writes it (`eval_loss`, `train/loss`): set to a number with `=`, it is a metric even at the end
of a sentence."""
_ABBREVIATED = re.compile(r"\.(?=[ \t]|$)")
_SPELLED_OUT = ("update", "iteration", "step", "batch", "episode", "epoch")


def _abbreviation(word: str) -> str:
    """The counter a word written short with a dot names (`Up.` update, `Iter.` iteration, `Ep.` epoch),
    else the word."""
    low = word.lower()
    whole = next((w for w in _SPELLED_OUT if 2 <= len(low) < len(w) and w.startswith(low)), None)
    return whole if whole is not None and low not in STEP_NAMES + EPOCH_NAMES else word


_TOKEN = re.compile(
    rf"(?P<ctr>(?<!{_LETTER})(?<!\.)(?:\d{{1,3}}(?:,\d\d\d)+(?!\d)|\d+)\s*/\s*(?:\d{{1,3}}(?:,\d\d\d)+(?!\d)|\d+)(?!\w|\.\w))"
    rf"|(?P<num>(?<!{_LETTER})(?<!\.){NUM_BODY})(?:(?P<unit>{_UNIT_RE})|(?P<ord>(?<=\d)(?:st|nd|rd|th))|\s(?P<sunit>{_SPACED_RE})(?![ \t]*[:=][ \t]*[-+(\[]?(?:\d|\.\d)))?"
    r"(?!(?![A-Za-z_]{3,}[\w\-]*[ \t]*[:=][ \t]*[-+(\[]?(?:\d|\.\d|(?i:nan|inf)))[A-Za-z/\d]|\.\d)"
    rf"(?![{_CJK}])"  # `10个`, `2024年`: a count of what the word after it names, as `5th` is no value
    rf"|(?P<word>[{_CJK}]+|(?!{_CJK_CLASS})[^\W\d](?:(?:{_LETTER}|[./\-])*{_LETTER})?(?:@\d+(?:\.\d+)?(?::\d+(?:\.\d+)?(?=:))?)?)"
    r"|(?P<link>[:=])"
    r"|(?P<hard>\||,(?=\s|$)|(?<=[\d)\]]),(?=[^\W\d])|;|\s-\s|[{}\x01]+)"
    r"|(?P<open>\()"
    r"|(?P<soft>\s{2,}|[\[\])<>])"
)
EVAL_WORDS = {"val": "val", "valid": "val", "validation": "val", "validate": "val", "validating": "val",
              "eval": "val", "evaluation": "val", "evaluate": "val", "evaluating": "val",
              "test": "test", "testing": "test"}
_EVAL_NAMED = re.compile(r"(?i)(?:^|[_/\-. ])(?:val|valid|validation|eval|test|dev)(?:$|[_/\-. ])|^(?:val|eval|test)")
_TRAIN_WORDS = {"train", "training"}
"""A phase word before a key (`iter 10: train loss 2.11`): part of the name, no prose."""
_AGGREGATE_WORDS = {"total", "mean", "avg", "average", "overall"}
"""...and so is a word that says how the value was summed up (Mugs' `(500/3906): total loss 10.19,  lr: ...`)."""
_TRAIN_NAMED = re.compile(r"(?i)train(?:ing)?(?:$|[_/\-. ])")
_MEASURE_ROLES = frozenset({"loss", "eval_loss", "reward", "accuracy", "perplexity"})
_SPACED_NAME = re.compile(r"[A-Za-z][\w\-]*(?:[ \t]+[\w\-]+)*[ \t]+")
_KEY_COUNTS = {"last", "top", "first", "past", "over", "per", "every"}
"""Words after which an integer belongs to the key (`last 100 episodes:`, `top 5 acc:`)."""
_KEY_TAIL = re.compile(r"[ \t]+[A-Za-z_][\w\-]*(?:[ \t]+[A-Za-z_][\w\-]*){0,2}[ \t]*[:=][ \t]*"
                       r"[-+]?(?:\d|\.\d|(?i:nan|inf))")
"""What follows such a number: the rest of the key, a link and a value."""
_PAIR_NEXT = re.compile(r"[ \t]+[-+]?(?:\d|\.\d|(?i:nan|inf))")
_WORD_VALUES = {"True", "False", "None", "true", "false", "none", "null"}
_COPULAS = {"is", "was", "are", "were", "equals", "为", "為", "是", "は"}
"""Words that link a name to its number in a sentence a script prints (`avg loss so far is 0.11`)."""
_CLAUSES = {"but", "and", "or", "that", "which", "because", "while", "if", "when", "than", "where"}
"""Words that begin a clause: `... but gt is 47` is a sentence, not a name and its value."""
_PART_END = re.compile(r"[ \t]*(?:[,;|]|$)")
"""What closes a part of a list of pairs: its separator or the line's end."""
_WINDOW_TAIL = re.compile(r"\)[ \t]*[:=][ \t]*[-+]?(?:\d|\.\d|(?i:nan|inf))")
"""What follows the window of a running mean in its key (`Avg Reward (100): 0.67`)."""
_WINDOW_OPEN = re.compile(r"\((?:(?:last|past|over)[ \t]+)?$", re.I)
"""What opens the window of a running mean in its key: `(`, maybe `(last `."""
_RATE_WORDS = {"per", "each", "every"}
"""Words before a counter's name that make the number a size, not a count (`Num update steps per
epoch = 1,869`, `iterations per epoch: 500`): the run's plan, never its epoch or step."""
_JOINERS = {"in", "at", "for", "of", "on", "after", "@", "the"}
"""Words joining a metric's name to the step it was taken at (`Total reward in global step 33: 1.37`)."""
_MORE_COUNTS = re.compile(r"(?:[ \t]*(?:,|(?i:and))?[ \t]*(?i:global[ \t_]?step|step|iteration|iter|it|batch|epoch)"
                          r"[ \t]*[:#]?[ \t]*\d+(?:[ \t]*/[ \t]*\d+)?)*")
"""Further counts after a counter, before the value they all place (`epoch 0 and iteration 500 is`,
`epoch 3, step 100:`)."""
_LINKED_NEXT = re.compile(r"[ \t]*[:=][ \t]*[-+]?(?:\d|\.\d|(?i:nan|inf))")
_SPOKEN_NEXT = re.compile(r"[ \t]+(?i:is|was|equals)[ \t]*:?[ \t]*[-+]?(?:\d|\.\d|(?i:nan|inf))")
"""A value a sentence links to the counter before it (`The loss at epoch 3 is 0.52`, DL4J's `Score at
iteration 10 is 0.69`): the copula stands where a log line has its `:`."""
_PROSE = ""
"""What `key_of` gives for a number inside a sentence: not a key, not read."""
_LEADER = re.compile(r"(?:^|\s)[A-Za-z_][\w.\-]*\s+\.{3,}\s*\S")
"""A setting printed after a dotted leader (`zero_optimization_stage ...... 2`, Megatron's and
DeepSpeed's argument dumps): a value of the run's configuration, never a record."""
_SETTINGS = re.compile(r"\bNamespace\(|(?i:\b(?:hyper[\s_\-]?parameters|hyps?|args|arguments|config|configs|options"
                       r"|settings)\s*[:=]\s*[\[{(]?\s*[A-Za-z_][\w.]*\s*[=:])"
                       r"|(?i:\[(?:config|configs|settings|args|arguments|options|hparams|hyper[\s_\-]?parameters)\]"
                       r"[ \t]+[A-Za-z_][\w.\-]*[ \t]*[:=])")
"""A run's settings printed as a whole: argparse's `Namespace(lr=0.1, ...)`, `hyperparameters: lr0=0.01,
...`, `config: {lr: 0.1, ...}`, or one a line under a settings tag (Marian's `[config] after-batches: 0`, printed
again at every relaunch). Nothing on such a line is a record."""
_SAVED = re.compile(r"(?i)\b(?:checkpoint|ckpt|model|weights)\b[^\x01\n]{0,24}\b(?:saved|saving)\b"
                    r"|\b(?:saved|saving)\b[^\x01\n]{0,24}\b(?:checkpoint|ckpt|model|weights)\b")
"""A line saying a checkpoint was saved (`Checkpoint saved → ckpt_best.pt (epoch 9, loss 2.1e-03)`, `Saved best
model at epoch 5 with val loss 0.08`): its numbers say why (the best so far), they are no new record."""
_LEVELS = {"INFO", "DEBUG", "WARNING", "WARN", "ERROR", "CRITICAL", "TRACE", "SUCCESS", "NOTICE"}
STEP_NAMES = ("global_step", "num_updates", "step", "iteration", "iter", "iters", "it", "update",
              "updates", "batch", "mini_batch", "minibatch", "train_step", "optimizer_step", "i", "episode", "#", "round")
"""Keys that count steps, the most telling first (an RL log counts its episodes)."""
EPOCH_NAMES = ("epoch", "ep", "epochs")
OUTER_NAMES = frozenset({"stage", "scale", "round", "phase", "cycle", "generation"})
"""Counters of an outer loop that the epoch or step count runs within, printed before it (a GAN trained
scale by scale, `scale 2 iter 300`; a curriculum's `Stage 2 Epoch 5`; federated `round 3 epoch 2`)."""
IGNORED = frozenset({"eta", "v_num", "rank", "local_rank", "world_size", "pid", "seed", "gpu", "device", "node"})


@dataclass
class Template:
    """What one line (or every line of one shape) holds; spans are (start, length)."""

    values: list[tuple[str, int, int]] = field(default_factory=list)
    """Metric name and the span of its number."""
    step: tuple[str, int, int] | None = None
    """A key that counts steps (`step: 10`, `iter 10`) and its number's span."""
    inner: tuple[int, int] | None = None
    """A counter's current value (`10` of `10/1000`, `(10/39695)`, `step 10/1000`)."""
    inner_total: tuple[int, int] | None = None
    epoch: tuple[int, int] | None = None
    """An epoch number (`Epoch 3/10`, `Epoch:[1/1]`, `epoch 001 |`, MMEngine's `[1]`)."""
    epoch_total: tuple[int, int] | None = None
    stamp: tuple[int, int] | None = None
    evaluation: str | None = None
    """`val` or `test` when evaluation words mark the line."""
    unkeyed: int = 0
    """Numbers read with no key (not kept)."""
    named_by_digits: list[tuple[int, int]] = field(default_factory=list)
    """Spans of keys with digits in them (`top1`, `loss_0`): lines of one shape may name
    other metrics there, so the reader tells them apart by the text at these spans."""
    separated: bool = False
    """A step or epoch printed with thousands separators (`iter: 1,100`)."""
    floated: bool = False
    """A step or epoch printed as a float with a zero fraction (Lightning's `global_step=999.0`)."""
    loose: int = 0
    """Words that named nothing (prose around numbers: `with local batch size 8`)."""
    setting: bool = False
    """A setting behind a dotted leader (`lr ........ 0.1`): nothing on the line is read."""

    @property
    def prose(self) -> bool:
        """More loose words than a log line carries: a sentence, whose numbers are not metrics."""
        return self.loose >= 4 and self.loose > len(self.values) + 2

    @property
    def announces(self) -> bool:
        """A line that only says an evaluation begins (`Eval begin...`, `Validating`): no number,
        a few words, one of them an evaluation word."""
        return (self.evaluation is not None and not self.values and not self.anchored and self.unkeyed == 0
                and self.loose <= 3 and not self.setting)

    @property
    def anchored(self) -> bool:
        return self.step is not None or self.inner is not None or self.epoch is not None


class _Word(str):
    """A word and its span in the line."""

    def __new__(cls, text: str, span: tuple[int, int]) -> "_Word":
        word = super().__new__(cls, text)
        word.span = span
        return word


_FULL_WIDTH = str.maketrans("：，；（）［］＝｜", ":,;()[]=|")
"""CJK punctuation, one character each as its ASCII twin (`训练次数：1`, `损失，`): a log written in
Chinese or Japanese links and parts its keys and values with these."""


_HYPHENED = re.compile(r"(?<![\w.\-])[A-Za-z][A-Za-z_]*(-)(?=\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.\-]))")
"""A name glued to its decimal number by a hyphen (`NLL-36.105   ACC-0.000   LOSS-36.105`)."""
_ROUND = re.compile(r"^[\x01\s]*\]?[\x01\s]*\[\s*(\d+)\s*\](?=\s)|^[\x01\s]*(\d+)[ \t]+-[ \t]+(?=[^\W\d])")
"""A whole number in brackets opening a line, no key before it (XGBoost's and LightGBM's round:
`[12]\tvalidation_0-logloss:0.53`; after a logger's bracketed location, absl's `train.py:48] [12] loss=`),
or parted from the keys by a dash (`10 - loss: 2.713`; not a bar: a model summary's row `3 | cls_loss | ...`
numbers its layers): the count of the record the line is."""
_ROUND_PAIR = re.compile(r"^[\x01\s]*(?:\[\s*(\d+)\s*[,:]\s*(\d+)\s*\](?=\s|$)|(\d+)\|(\d+)\|(?=[ \t]*[^\W\d]))")
"""Two whole numbers in brackets opening a line, no key before them (the PyTorch tutorial's
`[1,  2000] loss: 2.187`; a progressive GAN's `[scale : iter]`, `[0 :    100] loss G : 6.1`): counters side by
side, printed coarse to fine, so the epoch and the
count within it. So are two whole numbers parted by bars opening a line before a key (torchtune's
bar description `1|10|Loss: 2.3`)."""


_TUPLE_PAIR = re.compile(r"(?<![\w.])\(\s*(?P<q>['\"])[A-Za-z_][\w./\- ]{0,60}(?P=q)\s*(?P<comma>,)\s*(?=[-+]?(?:\d|\.\d|(?i:nan|inf)))")
"""A name and its number printed as a Python tuple (`list(stats.items())`, PFRL's `statistics:[('average_q',
0.1), ('average_loss', 2.7)]`): its comma stands where a dict has its `:`."""


_BLOB = re.compile(r"\bTensor[ \t]+(?P<name>[A-Za-z_][\w/.\-]*)[ \t]+of[ \t]+type[ \t]+\w+\.?[ \t]+Dims:[ \t]*"
                   r"\([ \t]*(?:1[ \t]*,?[ \t]*)?\)[ \t]*\.?[ \t]*(?:Data[ \t]*)?:")


_EMPTIED = re.compile(r"\[[\x01 \t]*\x01[\x01 \t]*\]:?")
_WEIGHED = re.compile(r"\([ \t]*[*×][ \t]*[-+]?[\d.]+(?:[eE][-+]?\d+)?[ \t]*=[^()]*\)")
"""A term's weighted share in parentheses after its value (Caffe's `center_loss = 0.5 (* 0.008 = 0.004 loss)`):
a derivation of the value before it, no running average of it."""
_ABSENT_VALUE = r"[ \t]*[:=][ \t]*(?:n/a|N/A|n\.a\.|None|none|null|NULL)(?![\w/])"
_ABSENT = re.compile(r"(?:(?<=[,|;\t])|^)[ \t]*[A-Za-z][\w ./\-]{0,40}?" + _ABSENT_VALUE
                     + r"(?=[ \t]*(?:[,|;\t}\]]|$))|(?<![\w.])[A-Za-z][\w./\-]*" + _ABSENT_VALUE)
"""A key whose value is absent (LitGPT's `val: n/a` before the first evaluation, a dict's `'eval_loss':
None`): the key names nothing on this line, and its words (an evaluation word) say nothing of the line's
phase. Blanked from the part's separator when the key is of several words (`| val loss: n/a |`)."""
"""Brackets left holding only blanked text (`[12:00:01]`, `[2024-05-01 12:00:00]`): the stamp's own
decoration, blanked with it, so a count in brackets after it (`[12:00:01] [100]  train's auc: 0.78`) opens the line."""


def _blanked(line: str) -> tuple[str, tuple[int, int] | None, str | None]:
    """The line with what is never a value blanked (same length), its time stamp's span,
    and the phase a `(val)`-like tag names. A line of two or more names glued to their decimal
    numbers by a hyphen (`NLL-36.105   LOSS-36.105`) is a line of pairs: each hyphen links its
    pair as `=` would (one such word is a name: `resnet-50`, `gpt-3.5`)."""
    line = line.translate(_FULL_WIDTH)
    glued = [m.start(1) for m in _HYPHENED.finditer(line)]
    if len(glued) >= 2:
        for at in glued:
            line = line[:at] + "=" + line[at + 1:]
    for t in _TUPLE_PAIR.finditer(line):  # `('average_loss', 0.12)`: a pair printed as a tuple links as `:` does
        line = line[:t.start("comma")] + ":" + line[t.end("comma"):]
    for t in _BLOB.finditer(line):  # Caffe2's scalar blob `Tensor loss of type float. Dims: (): 2.3`: `loss: 2.3`
        line = (line[:t.start()] + " " * (t.start("name") - t.start()) + t.group("name")
                + " " * (t.end() - t.end("name") - 1) + ":" + line[t.end():])
    stamp = None
    for m in _STAMP.finditer(line):
        stamp = stamp or (m.start(), m.end("stamp") - m.start())
        line = line[: m.start()] + _GAP * (m.end() - m.start()) + line[m.end():]
    line = _FRAME.sub(lambda m: " " * (m.end() - m.start()), line)
    line = _SOFT_BLANK.sub(lambda m: " " * (m.end() - m.start()), line)
    line = _BLANK.sub(lambda m: _GAP * (m.end() - m.start()), line)
    line = _LOGGER_LEAD.sub(lambda m: _GAP * (m.end() - m.start()), line)
    line = _EMPTIED.sub(lambda m: _GAP * (m.end() - m.start()), line)
    if "(" in line:
        line = _WEIGHED.sub(lambda m: " " * (m.end() - m.start()), line)
    if "n" in line or "N" in line:
        line = _ABSENT.sub(lambda m: " " * (m.end() - m.start()), line)
    phase = None
    p = _PHASE.search(line)
    if p:
        phase = EVAL_WORDS.get(p.group("phase").lower())
        line = line[: p.start()] + " " * (p.end() - p.start()) + line[p.end():]
    return line, stamp, phase


def _tags(line: str) -> tuple[str, list[tuple[int, str | None]]]:
    """Phase tags in brackets blanked (a separator), and where each begins with its phase (None: train)."""
    found = [(m.start(), EVAL_WORDS.get(m.group("tag").lower(), "val" if m.group("tag").lower() == "dev" else None))
             for m in _TAG.finditer(line)]
    if found:
        line = _TAG.sub(lambda m: _GAP * (m.end() - m.start()), line)
    return line, found


def _is_int(text: str) -> bool:
    return text.replace(",", "").isdigit()


_WHOLE_FLOAT = re.compile(r"\d+\.0+")


def _counts_as_int(text: str) -> bool:
    """An integer, or a float with a zero fraction (`999.0`: a logger that prints every value as a float):
    for step keys only, which never count fractions (an epoch may: HF's `'epoch': 0.22`)."""
    return _is_int(text) or bool(_WHOLE_FLOAT.fullmatch(text))


def _named_after(clean: str, out: Template, line: str = "") -> str:
    """A list whose parts each say a number, then what it counts (darknet's `2.743 avg loss,
    0.001 rate, 0.31 seconds, 640 images`): the words after each number name it, and a count
    opening the line before a `:` (` 10: `) is its step. Three such parts at least (fewer may be
    a sentence); the parts read are blanked for the rest of the line's reading."""
    parts = list(_POSTFIX_PART.finditer(clean))
    if len(parts) < 3 or re.search(r"[A-Za-z]", clean[:parts[0].start()]):
        return clean  # words before the list (`YOLO11s summary: 100 layers, 9,413,187 parameters, ...`): a banner
    for p in parts:
        name = "_".join(p.group("name").split())
        if name.lower() not in IGNORED:
            out.values.append((name, p.start("num"), p.end("num") - p.start("num")))
        clean = clean[:p.start()] + " " * (p.end() - p.start()) + clean[p.end():]
    # the count opening the line (` 10: `) is blanked as a rank's prefix would be (`0: step 10 ...`); beside a
    # list of named numbers it is the step, so it is read from the line as printed
    lead = _LEAD_COUNT.match(clean) or _LEAD_COUNT.match(line)
    if lead and out.step is None:
        out.step = ("iter", lead.start(1), lead.end(1) - lead.start(1))
        clean = clean[:lead.start(1)] + " " * (lead.end(1) - lead.start(1)) + clean[lead.end(1):]
    return clean


def tokenise(line: str) -> Template:
    """The template of one line (see the module doc)."""
    clean, stamp, phase = _blanked(line)
    out = Template(stamp=stamp, evaluation=phase)
    if _LEADER.search(clean) or _SETTINGS.search(clean):
        out.setting = True
        return out
    if _SAVED.search(clean):  # the value that made a checkpoint the best so far: a record's echo
        return out
    clean, tags = _tags(clean)
    clean = _named_after(clean, out, line)
    pair = _ROUND_PAIR.match(clean)
    if pair:  # `[1,  2000] loss: ...`, `1|10|Loss: ...`: the epoch, then the count within it
        one, two = (1, 2) if pair.group(1) is not None else (3, 4)
        out.epoch = (pair.start(one), pair.end(one) - pair.start(one))
        out.inner = (pair.start(two), pair.end(two) - pair.start(two))
        clean = clean[:pair.start()] + " " * (pair.end() - pair.start()) + clean[pair.end():]
    counter = None if pair else _ROUND.match(clean)
    if counter:  # `[12]\t...`: the round this line reports, its step (a key that counts steps outranks it)
        at = 1 if counter.group(1) is not None else 2
        out.step = ("round", counter.start(at), counter.end(at) - counter.start(at))
        clean = clean[:counter.start()] + " " * (counter.end() - counter.start()) + clean[counter.end():]
    mixed = len({p for _, p in tags}) > 1  # `[train] ... [valid] ...`: one record of both phases
    if tags and not mixed and tags[0][1] is not None:
        out.evaluation = out.evaluation or tags[0][1]
    glued = {}
    for g in _GLUED_COUNT.finditer(clean):  # `2epoch`, `1-10batch`: counted by the word they touch
        at = 2 if g.group(2) else 1
        glued[g.start(at)] = (g.group("unit").lower(), g.start(at), g.end(at) - g.start(at))
        clean = clean[:g.start()] + " " * (g.end() - g.start()) + clean[g.end():]
    for g in _WORD_COUNT.finditer(clean):  # `Ep1`, `iter500`: counted by the word they are glued to
        unit = g.group("unit").lower()
        glued[g.start(2)] = ("epoch" if unit == "ep" else unit, g.start(2), g.end(2) - g.start(2))
        clean = clean[:g.start()] + " " * (g.end() - g.start()) + clean[g.end():]
    ordinal = None
    for g in _CJK_ORDINAL.finditer(clean):  # `第3轮`: the third round
        glued[g.start(1)] = ordinal = (_CJK_UNITS[g.group("unit")], g.start(1), g.end(1) - g.start(1))
        clean = clean[:g.start()] + " " * (g.end() - g.start()) + clean[g.end():]
    for unit, start, length in glued.values():
        if unit == "epoch":
            out.epoch = out.epoch or (start, length)
        elif out.step is None:
            out.step = (unit, start, length)
    words: list[str] = []
    linked = False
    # `Batch Loss 4.59 Tokens per Sec 8992`: names of several words before their numbers, no link
    paired = spaced_pairs(clean, _names_measure, _CLAUSES | _COPULAS | _JOINERS)
    last_key: str | None = None  # the key of the value just read, for a `(92.49%)` after it
    last_was_value: str | bool = False  # "num" or "ctr" right before
    after_paren: str | bool = False  # what came right before an opening parenthesis
    seen: set[str] = set()
    boxes = _boxes(line)  # labelled dicts (`Losses {'ner': 12.3}`): the label names the values inside
    boxed_phases: list[str | None] = []
    outer_named: tuple[tuple[int, int], tuple[int, int]] | None = None  # `Round [3/100]`, `Stage [2/4]`
    sealed = False
    lead: list[str] = []  # the words before a counter's name (`Total reward in global step`)
    held: str | None = None  # their name, for the value after `step 33:`
    group: _Word | None = None  # a label naming the pairs after it (`Losses: x 0.27, y 0.25, total 15.1`)
    key_phase: list[str | None] = [None]  # an evaluation word heading a key after other values: its phase
    spoken = False  # a value named in a sentence (`... is 0.11`): the sentence is how the script logs it
    tight = False  # a `:` touching the words on both sides (`INFO:tensorflow:loss`): a path, no link
    parted = False  # right after a list's separator (`, `, ` | `, `; `)
    part_head = False  # the words being read opened a part of such a list
    line_head = False  # the words being read open the line (nothing read before them)

    def drop(loose: list[str]) -> None:
        """Words that name nothing; an evaluation word among them marks the line
        (`| epoch 001 | valid on 'valid' subset | loss 8.9`)."""
        # `INFO` is a logger's, no prose; a run of CJK letters is a phrase, about a word for two letters
        out.loose += sum(max(1, len(w) // 2) if w[:1] and re.match(_CJK_CLASS, w) else 1 for w in loose if w not in _LEVELS)
        for w in loose:
            if w.lower() in EVAL_WORDS and out.evaluation is None:
                out.evaluation = EVAL_WORDS[w.lower()]

    def key_of() -> str | None:
        if not words:
            return None
        joined = linked or (group is not None and words[0] is group)
        named = [w for w in words if w not in _LEVELS and w.lower() not in EVAL_WORDS
                 and w.lower() not in _TRAIN_WORDS | _AGGREGATE_WORDS]
        if not joined and len(named) > 1:
            if _counted_by(words):  # `Training Epoch 3`, `Global Step 10`: the counter
                lead[:] = words[:-1]
                drop(words[:-1])
                return str(words[-1])
            drop(words)  # `Model has 124M parameters`: a sentence names no metric
            return _PROSE
        run = (words[-4:] if joined else words[-2:] if len(words) > 1 and words[-2].lower() in _TRAIN_WORDS | _AGGREGATE_WORDS
               else words[-1:])
        if len(run) > 1 and _counted_by(run):
            run = run[-1:]  # `checkpoint saved at it=100`: the step, not a metric of four words
        head = words[: len(words) - len(run)]
        if not joined and out.values and out.evaluation is None and any(w.lower() in EVAL_WORDS for w in head):
            # `train loss 12.6, val loss 12.7`: the phase of this key, not of the line
            key_phase[0] = next(EVAL_WORDS[w.lower()] for w in reversed(head) if w.lower() in EVAL_WORDS)
            head = [w for w in head if w.lower() not in EVAL_WORDS]
        drop(head)
        levels = [i for i, w in enumerate(run) if w in _LEVELS]
        if levels:  # `semantic_segmentation INFO: Sample: 1`: the logger's name and level are no key
            drop(run[: levels[-1]])
            run = run[levels[-1] + 1:]
        if len(run) > 1 and run[-1] in _UNITS:  # `memory(GiB)`
            run = run[:-1] + [_UNITS[run[-1]]]
        if joined and run and all(w.lower() in EVAL_WORDS for w in run):
            # `Epoch 1, trlast = 0.34, val = 0.48`: the split's word alone names its value (the loss on it)
            if not out.values:
                out.evaluation = out.evaluation or EVAL_WORDS[run[-1].lower()]
            return str(run[-1])
        while run and run[0].lower() in EVAL_WORDS:
            if out.values and out.evaluation is None:  # `Train Loss=0.07, Val Loss=0.08`: this key's phase
                key_phase[0] = EVAL_WORDS[run[0].lower()]
            else:
                out.evaluation = out.evaluation or EVAL_WORDS[run[0].lower()]
            run = run[1:]
        out.named_by_digits.extend(w.span for w in run if isinstance(w, _Word) and any(c.isdigit() for c in w))
        if not joined:
            for w in words[:-1]:
                if w.lower() in EVAL_WORDS:
                    if out.values and out.evaluation is None:  # `train loss 12.6, val loss 12.7`
                        key_phase[0] = EVAL_WORDS[w.lower()]
                    else:
                        out.evaluation = out.evaluation or EVAL_WORDS[w.lower()]
        return "_".join(run) or None

    last_end = 0
    outer = None  # the counter just read, which a counter after it may run within
    outer_bare = False  # that counter had no name (`[1/30]`)
    bare: tuple[int, int] | None = None  # a whole number just read that no key named (`3 [ 10/100]`)
    value_end = 0  # where the last number or counter ends
    for m in _TOKEN.finditer(clean):
        kind = m.lastgroup if m.lastgroup not in ("unit", "sunit", "ord") else "num"  # `5th`: a plain 5
        if m.group("num") is not None:
            kind = "num"
        gap, last_end = clean[last_end:m.start()], m.end()
        if kind == "word":
            said = m.group("word").lower()
            if not (held and all(w.lower() in _CLAUSES for w in words)  # `... epoch 3 is 0.52` holds on,
                    and (said in _COPULAS | _CLAUSES or _step_name(said) or said in EPOCH_NAMES)):  # `and iteration 5 is`
                held = None
            if tight and not gap:  # `INFO:tensorflow:loss = 0.09`: a logger's path before the key names it
                drop(words)
                words, linked = [], False
            tight = False
            if (linked == ":" and len(words) == 1 and words[0] not in _LEVELS and words[0].isalpha()
                    and not _step_name(words[0].lower()) and words[0].lower() not in EPOCH_NAMES
                    and _PAIR_NEXT.match(clean, m.end())):
                group = words[0]  # `Losses: x 0.27, ...`: the label names the pairs after it
            elif group is not None and not words and not gap.strip():
                words = [group]  # the group's next pair (`, y 0.25`)
            if linked == "=" or (linked and m.group("word") in _WORD_VALUES):
                # `enabled=True auto_cast=False`: a word after `=` is a value, no part of the next key
                drop(words)
                words, linked, sealed = [], False, False
                continue
            if gap.strip() or sealed:  # something between: not one run of words
                drop(words)
                words, sealed = [], False
                if gap and not gap[-1].isspace():  # the tail of something unread (`200/s`)
                    continue
            if not words:
                part_head = parted
                line_head = not clean[:m.start()].strip(" \t" + _GAP)
            parted = False
            named = COUNTER_WORDS.get(m.group("word"), m.group("word"))
            if _ABBREVIATED.match(clean, m.end()):  # Marian's `Up. 16000`: a counter's name cut short
                named = _abbreviation(named)
            words.append(_Word(named, (m.start(), m.end() - m.start())))
            linked = False
            last_was_value = after_paren = False
            continue
        parted = False
        if kind == "link":
            if group is not None and len(words) > 1 and words[0] is group:  # `recall: 0.1`: a key of its own
                words, group = words[1:], None
            linked = m.group("link") if words else False
            tight = (linked == ":" and not gap and clean[m.end():m.end() + 1].isalpha()
                     and words and words[-1].span[0] + words[-1].span[1] == m.start())
            continue
        if kind == "hard":
            if not (held and m.group("hard").strip() == "," and _MORE_COUNTS.match(clean, m.start()).end() > m.start()):
                held = None  # (`Reward in epoch 3, step 100: 1.5`: a count after the comma places the same value)
            if (words and m.group("hard").strip() == "|" and _BAR_VALUE.match(clean, m.end())
                    and not clean.lstrip(" \t" + _GAP).startswith("|")):  # a markdown row's cells are labels
                linked = ":"  # `train CrossEntropyLoss |  2.77`: a name and its lone number parted by a bar
                continue
            if linked and _GAP in m.group("hard"):  # `Cost Time: 0:00:20`: a key whose value is blanked
                words = []
            if m.group("hard").strip() != ",":
                group = None
            drop(words)
            words, linked, last_was_value, after_paren = [], False, False, False
            parted = any(c in m.group("hard") for c in ",|;")
            continue
        if kind == "open":
            after_paren = last_was_value
            continue
        if kind == "soft":
            sealed = bool(words)  # the words before stay a key, but no word joins them
            if m.group("soft") == "]":
                group = None
            if m.group("soft") in ")]":
                continue
            after_paren = False
            continue
        if kind == "ctr":
            if after_paren == "num" and not words:  # `94.9% (56/59)`: the count behind a share, no step
                after_paren = False
                continue
            text = m.group("ctr")
            out.separated = out.separated or "," in text  # `Step [1,000/12,942]`
            cut = text.index("/")
            a = (m.start(), len(text[:cut].rstrip()))
            b_text = text[cut + 1:]
            b = (m.start() + cut + 1 + (len(b_text) - len(b_text.lstrip())), len(b_text.strip()))
            after_paren = False
            if len(words) >= 2 and not linked and words[-1].lower() in _COPULAS:
                words, linked = words[:-1], ":"  # `Epoch is [1/600], mini-batch is [1/1600]`: the words before `is`
            key = key_of()
            if key is not None and key.lower() in EVAL_WORDS:  # `Test: [10/40]`: an evaluation's counter
                key = None
            low = (key or "").lower()
            # counters side by side are printed coarse to fine (`[0/25][10/100]`, `Train: 0 [ 10/100]`):
            # the count just before a bracketed counter is what that counter runs within, its epoch
            nested = key is None and out.epoch is None and _NESTED.match(clean, value_end, m.start())
            if low in EPOCH_NAMES or low.endswith("epoch"):
                if out.epoch is None:
                    out.epoch, out.epoch_total = a, b
            elif _plain(low) in OUTER_NAMES:
                outer_named = outer_named or (a, b)  # `Round [3/100]`: the epoch when nothing else counts
            elif nested and last_was_value == "ctr" and outer is not None:
                out.epoch, out.epoch_total = outer
                out.inner, out.inner_total = a, b
            elif (nested and last_was_value == "num" and out.values and out.inner is None
                  and _is_int(clean[out.values[-1][1]:sum(out.values[-1][1:])])):
                out.epoch = out.values.pop()[1:]
                seen.discard(last_key or "")
                out.inner, out.inner_total = a, b
            elif nested and last_was_value == "num" and bare is not None and out.inner is None:
                out.epoch = bare  # `Epoch - 3: [ 10/100] loss:`: a bare count before the bracket is the epoch
                out.unkeyed -= 1
                out.inner, out.inner_total = a, b
            elif out.inner is None and (key is None or _step_name(low) or low == "t"):  # not `Loaded 3/10 shards`
                # (RL's `T = 25000 / 1000000`: the timestep of a planned total)
                out.inner, out.inner_total = a, b
            elif (out.epoch is None and key is not None and _step_name(low) and outer is not None
                  and outer[0] == out.inner and outer_bare):
                # `[1/30] iter: 100/278.`: an unnamed counter, then one a step's name counts, coarse to
                # fine: the first is the epoch the named one runs within
                out.epoch, out.epoch_total = outer
                out.inner, out.inner_total = a, b
            outer = (a, b) if out.epoch is None and (out.inner == a or key is not None) else None
            outer_bare = outer is not None and key is None
            words, linked, last_was_value, last_key, value_end = [], False, "ctr", None, m.end()
            continue
        # a number
        start, end = m.span("num")
        unit = m.group("unit") or m.group("sunit")
        suffix = _unit_suffix(unit)
        text = m.group("num")
        if after_paren == "ctr" and not words:  # `step 10/1000 (1.00%)`: the counter's share
            after_paren = False
            continue
        if after_paren == "num" and last_key is not None and not words:
            after_paren = False
            name = f"{last_key}_{suffix or 'avg'}"
            if name not in seen:
                seen.add(name)
                out.values.append((name, start, end - start))
            last_was_value = "num"
            continue
        after_paren = False
        if (unit is None and words and not linked and _is_int(text) and _WINDOW_OPEN.search(clean, 0, start)
                and _WINDOW_TAIL.match(clean, m.end())):
            # `Avg Reward (100): 0.67`, `Avg reward (last 1000): +2.30`: the window of a running mean
            # is part of its name
            words.append(_Word(text, (start, end - start)))
            continue
        if (unit is None and words and not linked and _is_int(text) and words[-1].lower() in _KEY_COUNTS
                and _KEY_TAIL.match(clean, m.end())):
            # `Avg reward last 100 episodes: 0.96`, `top 5 acc: 0.9`: the number is part of the key
            words.append(_Word(text, (start, end - start)))
            continue
        if unit == "%" and clean[m.end():m.end() + 1] == "|":  # a progress bar's share (`Train:  5%|##`)
            words, linked = [], False
            continue
        lead.clear()
        if held is not None and not linked and len(words) == 1 and words[0].lower() in _COPULAS:
            words = []  # `The loss at epoch 3 is 0.52`: the copula links the held name to this number
        if (len(words) >= 2 and not linked and words[-1].lower() in _COPULAS
                and not any(w.lower() in _CLAUSES for w in words[-5:-1])):
            words, linked = words[:-1], ":"  # `avg loss so far is 0.11`: the words before `is` name it
            spoken = True
        if linked == "=" and len(words) == 1 and _CODE_NAME.fullmatch(words[0]):
            spoken = True  # `finished eval of epoch-1 of valid-set \t eval_loss=0.58`: a variable's name set to its value
        key_phase[0] = None
        if (not linked and 2 <= len(words) <= 3
                and (part_head and _PART_END.match(clean, m.end()) or line_head
                     and _measured(words, clean[words[0].span[0]:start], clean[m.end():]))
                and not any(w.lower() in _CLAUSES | _COPULAS | _JOINERS for w in words)):
            # `epoch 50, content loss 5.55, style loss 46.15`: a part of a list of pairs is one
            # name and its value, so the words that open it name the number that closes it; so is a
            # line that is only a name of words and its number (`Training set accuracy 0.91`)
            linked = ":"
        if not linked and 2 <= len(words) and start in paired and not _counted_by(words):
            linked = ":"  # `Batch Loss 4.59 Tokens per Sec 8992`: a line of pairs (`spacedkeys`)
        key = key_of()
        words, linked = [], False
        last_was_value, value_end, bare = "num", m.end(), None
        if key is None and held is not None:  # `Total reward in global step 33: 1.37`: the words before the step
            key, held = held, None
        if key == _PROSE:
            last_key = None
            out.unkeyed += 1
            continue
        if (key is None and out.step is not None and suffix is None and _is_int(text) and clean[start - 1] == "-"
                and sum(out.step[1:]) == start - 1):
            # MXNet's `Batch [0-20]`: a range of steps counts up to its end
            out.step = (out.step[0], start, end - start)
            continue
        if key is None:
            last_key = None
            bare = (start, end - start) if suffix is None and unit is None and _is_int(text) else None
            if suffix and _NAMES_ALONE.search(unit):
                name = unit
                if name not in seen:
                    seen.add(name)
                    out.values.append((name, start, end - start))
            else:
                out.unkeyed += 1
            continue
        low = key.lower()
        last_key = key
        if (suffix is None and _is_int(text) and (low in EPOCH_NAMES or low.split()[-1] in EPOCH_NAMES)
                and not low.endswith("epochs")):  # `Epochs: 3` counts them: the plan, not the epoch in progress
            # `Epoch 3`, and a bar's description before its counter: `Training Epoch 3:  4%| 1/28`
            # (an epoch printed as a float is a fraction of the data seen: HF's `'epoch': 1.0` among 0.22, 0.43)
            if out.epoch is None:
                out.epoch = (start, end - start)
                out.separated = out.separated or "," in text
            held = _held(lead, clean, m.end(), out)  # `Loss after epoch 3: 2.1`: the loss of that epoch
            continue
        if suffix is None and _counts_as_int(text) and _step_name(low):
            if out.step is None or _rank(low) < _rank(out.step[0]):
                out.step = (low, start, end - start)
                out.separated = out.separated or "," in text
                out.floated = out.floated or "." in text
            # a count joined to the one before (`... epoch 0 and iteration 500 is`) keeps the name that one held
            kept = held if held is not None and all(w.lower() in _CLAUSES for w in lead) else None
            held = _held(lead, clean, m.end(), out) or kept
            continue
        if low in IGNORED:
            continue
        if m.group("ord") is not None:  # `the 1st run`: an ordinal counts steps or epochs, nothing else
            out.unkeyed += 1
            continue
        name = f"{key}_{suffix}" if suffix else key
        boxed = _boxed_name(boxes, line, start, name)
        if boxed is not None:  # a value in a labelled dict: the label names it, not the words around
            name, boxed_phases = boxed[0], boxed_phases + [boxed[1]]
            if name not in seen:
                seen.add(name)
                out.values.append((name, start, end - start))
            continue
        if mixed:
            tagged = next((p for at, p in reversed(tags) if at < start), None)
            if tagged is not None:
                name = _eval_name(name, tagged)
        if key_phase[0] is not None:
            name = _eval_name(name, key_phase[0])
        if name not in seen:
            seen.add(name)
            out.values.append((name, start, end - start))
    drop(words)
    if out.step is not None and out.step[0] == "round" and out.epoch is not None and out.inner is None:
        if out.step[1] < out.epoch[0]:  # `round 3 epoch 2`: a federated round over its local epochs, the outer count
            out.epoch, out.inner = out.step[1:], out.epoch
        else:  # `Epoch 3 round 2`: a count after the epoch is no loop around it; it stays a value
            out.values = sorted([*out.values, ("round", *out.step[1:])], key=lambda v: v[1])
        out.step = None
    if ordinal is not None and not out.values and ordinal[1:] in (out.epoch, out.step[1:] if out.step else None):
        out.epoch = out.step = None  # `-----第 3 轮训练开始-----`: a banner; the records after it carry their own count
    _outer_counts(line, out)
    if outer_named is not None and out.epoch is None and out.step is None and out.inner is None:
        out.epoch, out.epoch_total = outer_named
    if out.prose and not spoken:
        out.values = []
    if boxed_phases:  # labelled dicts say their own phase: the line is evaluation only when all of them are
        out.evaluation = boxed_phases[0] if len(set(boxed_phases)) == 1 else None
        return out
    if out.evaluation is not None:
        out.values = [(_eval_name(n, out.evaluation), s, k) for n, s, k in out.values]
        out.values = _of_set(clean, out.values)
    return out


_SET_NAMED = re.compile(r"(?<![\w\-])(?P<set>[A-Za-z]+)[-_ ]set(?![\w\-])", re.I)
"""A data split named in words (`of valid-set`, `on the test set`, `future_set`)."""


def _of_set(clean: str, values: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """An evaluation line that names the one split it scored (`finished eval of epoch-1 of train-set \t
    eval_loss=0.54`, then `... of valid-set`, `... of future-set`): its values carry that split's name, so
    the splits a script evaluates one after another under one key are separate curves."""
    named = {m.group("set").lower() for m in _SET_NAMED.finditer(clean)}
    if len(named) != 1:
        return values
    split = named.pop()
    tag = EVAL_WORDS.get(split, "train" if split in _TRAIN_WORDS else split)
    return [(n if n.lower().startswith((tag, split)) else f"{tag}_{n}", s, k) for n, s, k in values]


_BOX_LABEL = re.compile(r"(?:(?P<q>['\"])(?P<quoted>[A-Za-z_][\w./\- ]{0,40})(?P=q)|(?<![\w.])(?P<word>[A-Za-z][A-Za-z_\-]*))"
                        r"[ \t]*:?[ \t]*$")
_BOX_KEY = re.compile(r"(?P<q>['\"])(?P<key>[^'\"{}:,]{1,60})(?P=q)[ \t]*:[ \t]*(?P<q2>['\"]?)$")


def _boxes(line: str) -> list[tuple[int, int, str]]:
    """The dicts on a line that a label names (`Losses {'ner': 12.3}`, `{'train': {'loss': 0.5}}`):
    each one's span and its label; unlabelled or unclosed braces, or a label that names nothing
    (see `_labels`), name nothing."""
    if "{" not in line:
        return []
    out, stack = [], []
    for i, ch in enumerate(line):
        if ch == "{":
            m = _BOX_LABEL.search(line, max(0, i - 48), i)
            label = m.group("quoted") or m.group("word") if m else None
            stack.append((i, label if label and _labels(label) else None))
        elif ch == "}" and stack:
            at, label = stack.pop()
            if label:
                out.append((at, i, label))
    return out


def _labels(label: str) -> bool:
    """A dict's label that names what is inside: a phase (`'val': {...}`) or a measure whose terms the
    keys are (`Losses {'ner': ...}`); a tag that names no measure (`json_stats: {...}`, `metrics`) leaves
    the keys their own names."""
    low = label.lower()
    return low in EVAL_WORDS or low in _TRAIN_WORDS or infer_role(label) != "other"


def _boxed_name(boxes: list[tuple[int, int, str]], line: str, start: int, name: str) -> tuple[str, str | None] | None:
    """A value inside labelled dicts: its own key (quoted before it) under the labels' path when the key
    names no measure itself (`reward: {'format_reward': ...}` keeps its key), and the phase a phase word
    among them names (`{'val': {'loss': 1}}` is `val_loss`, an evaluation; `train`
    adds nothing), else None."""
    labels = [label for at, end, label in sorted(boxes) if at < start < end]
    if not labels:
        return None
    k = _BOX_KEY.search(line, max(0, start - 64), start)
    key = "_".join(k.group("key").split()) if k else name
    phase, path = None, []
    for label in labels:
        low = label.lower()
        if low in EVAL_WORDS:
            phase = EVAL_WORDS[low]
        elif low not in _TRAIN_WORDS and infer_role(key) == "other":
            path.append(label)  # `Losses {'ner': ...}`: a key naming no measure is a term of its label's
    key = "/".join(path + [key])
    return (_eval_name(key, phase) if phase else key), phase


def _outer_counts(line: str, out: Template) -> None:
    """A count printed before the line's epoch or step that an outer loop keeps (`Stage 2 Epoch 5`,
    `scale 2 iter 300`, `round 3 epoch 2`), or a bracketed round before a bracketed counter (`[3]
    [40/100]`): the outer count is the epoch and the count after it runs within it, so the step is the
    two together (`_counted`), as for `[1,  2000] loss` and MMEngine's `[1][50/1000]`. A step printed
    beside both (`[Stage 2 Epoch 5] step 340`) is the step; the outer count stays a value then. Alone
    (`Round 3 Test Accuracy=0.1`, `Generation 5 best 0.3`) the outer count is the epoch."""
    if out.step is not None and out.step[0] == "round" and out.inner is not None and out.epoch is None:
        out.epoch, out.step = out.step[1:], None  # `[3] [40/100]`: the round the bracketed count runs within
        return
    outer = next(((n, s, k) for n, s, k in out.values
                  if _plain(n.lower()) in OUTER_NAMES and line[s: s + k].isdigit()), None)
    if outer is None or out.inner is not None:
        return
    _, start, length = outer
    if out.epoch is None and out.step is None:
        # `Round 3 Test Accuracy=0.1`: an outer loop's count alone, printed before the values it counts, is
        # the epoch; a setting (`stage: 3`, `scale=512,`) or a count with nothing after it stays a value
        if len(out.values) < 2 or not re.search(r"[^\W\d][ \t]+$", line[:start]):
            return
        out.epoch = (start, length)
    elif out.epoch is not None and out.step is None and out.epoch[0] > start:
        out.inner, out.epoch = out.epoch, (start, length)
    elif out.step is not None and out.epoch is None and out.step[1] > start:
        out.inner, out.epoch, out.step = out.step[1:], (start, length), None
    else:
        return
    out.values.remove(outer)


def _held(lead: list[str], clean: str, after: int, out: Template) -> str | None:
    """The name a counter's leading words give the value linked after it (`Total reward in global
    step 33: 1.37`, `Loss after Epoch 3 : 2.1`): the words before a joining word, when a value is
    linked right after the counter; else None."""
    named = [w for w in lead if w.lower() not in _JOINERS and w not in _LEVELS]
    while named and named[-1].lower() in _JOINERS | {"global", "train", "training"}:
        named.pop()
    after = _MORE_COUNTS.match(clean, after).end()  # `Loss at epoch 0 and iteration 500 is 0.2`: counts in a row
    if named and len(named) < len(lead) and (_LINKED_NEXT.match(clean, after) or _SPOKEN_NEXT.match(clean, after)):
        out.loose -= len(lead)  # words of a key, not prose
        return "_".join(named[-4:])
    return None


def _plain(low: str) -> str:
    """`Global-step`, `global step`, `global_step/max_steps` -> `global_step`."""
    return re.sub(r"[\s\-]+", "_", low.split("/")[0])


_COUNT_NAMED = re.compile(r"(?:(?:num|total|n)_)?(?:env_)?time_?steps?|env_steps?"
                          r"|(?:step|iter|iteration|update|batch|episode|eval|evaluate|evaluation|round)"
                          r"_(?:num|no|idx|index|count|counter)")
"""Names of a count made of a counted thing and a word for its number (`evaluate_num:3`, `step_idx`, `iter_count`),
and the environment timesteps an RL loop counts by (SB3's `Eval num_timesteps=5000`)."""


def _step_name(low: str) -> bool:
    if re.search(r"/(?:s|sec|second|ms|min)$", low):  # `updates/sec=2.0`: a rate of steps, not their count
        return False
    plain = _plain(low)
    return plain in STEP_NAMES or _COUNT_NAMED.fullmatch(plain) is not None


def _measured(words: list[str], name: str, rest: str) -> bool:
    """A line that is only a few words and one number after them, the last word naming a measure
    (`Training set accuracy 0.91`, `Average loss 2.3`): the words are its name. Without such a word
    (`Seed set to 42`, `cost time 0.5`, `checkpoint version 3`) the line stays prose."""
    return (not rest.strip() and _SPACED_NAME.fullmatch(name) is not None
            and infer_role(str(words[-1])) in _MEASURE_ROLES)


def _names_measure(name: str) -> bool:
    """A name whose role is a measure of training (a loss, an accuracy, a reward, a perplexity)."""
    return infer_role(name) in _MEASURE_ROLES


def _counted_by(words: list[str]) -> bool:
    """The last of these words is a counter the number counts, not the unit of a rate: `per`, `each`
    or `every` up to two words before it make it a rate's (`return per training episode: 12.5`)."""
    last = words[-1].lower()
    return ((_step_name(last) or last in EPOCH_NAMES)
            and not any(w.lower() in _RATE_WORDS for w in words[-3:-1]))


def _rank(low: str) -> int:
    base = _plain(low)
    return STEP_NAMES.index(base) if base in STEP_NAMES else len(STEP_NAMES)


def _eval_name(name: str, phase: str) -> str:
    """An evaluation line's metric: its name when it says so already (or names the training
    side: `Train Loss` on a line that ends with `Val Loss`), else `val_NAME`."""
    return name if _EVAL_NAMED.search(name) or _TRAIN_NAMED.match(name) else f"{phase}_{name}"


# ------------------------------------------------------------------ tables with a header row

_ANSI = re.compile(r"\x1b\[[\d;?]*[ -/]*[@-~]|\x1b[()][A-Za-z\d]|\x1b")
_CELL = re.compile(r"\S+")
_TAB_CELL = re.compile(r"[^\t\s](?:[^\t]*[^\t\s])?")
_CELL_NUM = re.compile(rf"(?P<num>{NUM_BODY})(?P<unit>{_UNIT_RE})?$")
_CELL_CTR = re.compile(r"(\d+)/(\d+)$")
_DURATION_CELL = re.compile(r"\d+:\d\d(?::\d\d)?(?:[.,]\d+)?$")
_HEAD_CELL = re.compile(r"[^\W\d(](?:[\w()\-./%@]|:(?=[\w.])| (?=[^ :]))*:?$|\((?:[\w()\-./%@]|:(?=[\w.])| (?=[^ :]))*:?$")
"""A header cell's name (a letter of any script first: `Δbest`, `损失`); a colon inside it (YOLOv5/v7's `mAP@.5:.95:`,
printed as a progress bar's description)."""


_LEAD = re.compile(rf"^(?:\s*(?:{STAMP}|\[?(?:{'|'.join(sorted(_LEVELS))})\]?:?|-)(?=\s))+")
"""What a logger prints before a table's cells (a time stamp, `[INFO]:`, ` - `): no cell of it."""
_DECORATION = re.compile(PREFIX)
"""Any logger's or launcher's prefix (`lineprefix`: `[12:00:01]`, `[rank0]:`, glog's header, loguru's): no cell either."""


def _cells(line: str) -> list[tuple[str, int, int, int]]:
    """The line's cells split at white space (at tabs in a tab-separated line, whose cells
    may hold spaces: `total loss<TAB>score loss`): text, start in the line, and its display
    columns (start, end) with ANSI codes taking no room. A logger's prefix is no cell
    (`2021-01-25 05:58:00 [INFO]:    Epoch   Batch   box ...`)."""
    lead = max(_LEAD.match(line), _DECORATION.match(line), key=lambda m: m.end() if m else -1)
    if lead:
        line = " " * lead.end() + line[lead.end():]
    plain, where = [], []
    pos = 0
    for m in _ANSI.finditer(line):
        plain.append(line[pos:m.start()])
        where.append(pos)
        pos = m.end()
    plain.append(line[pos:])
    where.append(pos)
    out = []
    col = 0
    cell = _TAB_CELL if "\t" in line else _CELL
    for piece, base in zip(plain, where):
        for m in cell.finditer(piece):
            out.append((m.group(), base + m.start(), col + m.start(), col + m.end()))
        col += len(piece)
    return out


def header_cells(line: str, above: str | None = None) -> list[tuple[str, int, int]] | None:
    """A table's header row (`   Epoch    GPU_mem   box_loss  ...`): three or more names set
    apart by two spaces or a tab, maybe followed by a progress bar (a cell starting with a
    digit); each name with its display columns (start, end). None for any other line.
    A header whose groups of names are set apart by `|` (`pipe_header`) names its rows' cells
    by their order in each group; `above`: the line before it, which may name the groups."""
    grouped = (pipe_header(line, above) if line.count("|") >= 2
               else comma_header(line) if line.count(",") >= 2 else None)
    if grouped is not None:
        return grouped
    cells = _spaced_names(_cells(line))
    names = []
    for text, _, a, b in cells:
        if not (_HEAD_CELL.match(text) or text == "#"):
            break
        names.append((text, a, b))
        if text.endswith(":"):
            break
    if len(names) < 3 or len(names) < len(cells) and not cells[len(names)][0][:1].isdigit():
        return None
    if any(b2 - b1 < 2 and "\t" not in line for (_, _, b1), (_, b2, _) in zip(names, names[1:])):
        return None  # single spaces: a sentence, not a table's columns
    if len(names) < len(cells) and not names[-1][0].endswith(":"):
        return None  # `Starting training for 100 epochs`: words before a number, no header
    out = [(_column_name(t), a, b - (len(t) - len(_edge(t)))) for t, a, b in names]
    return _stacked(line, above) or out


def _stacked(line: str, above: str | None) -> list[tuple[str, int, int]] | None:
    """A header printed over two lines, each column's name a word on each (Vowpal Wabbit's `average  since
    example ...` over `loss     last  counter ...`): the words joined down each column (`average_loss`),
    when the line above is a header of as many names as this line has words, each over its word."""
    if above is None or "|" in above or "|" in line or "," in above:
        return None
    upper = header_cells(above)
    words = [(t, a, b) for t, _, a, b in _cells(line)]
    if upper is None or len(upper) != len(words) or not all(_HEAD_WORD.match(t) for t, _, _ in words):
        return None
    if not all(a1 < b2 and a2 < b1 for (_, a1, b1), (_, a2, b2) in zip(upper, words)):
        return None  # a column's two words must stand over each other
    return [(f"{u}_{_column_name(t)}", min(a1, a2), max(b1, b2)) for (u, a1, b1), (t, a2, b2) in zip(upper, words)]


_HEAD_WORD = re.compile(r"[A-Za-z(_][\w()\-./%@]*$")


def _spaced_names(cells: list[tuple[str, int, int, int]]) -> list[tuple[str, int, int, int]]:
    """A header's cells with the words one space apart joined into one name, where the header
    sets its columns two spaces apart or more (spaCy's `E    #       LOSS TOK2VEC  LOSS NER`,
    scikit-learn's `Iter       Train Loss      OOB Improve`): in an aligned header a single space
    is inside a name, two are between columns. Words only (`Epoch 1` is a word and a number)."""
    if not any(a2 - b1 >= 2 for (_, _, _, b1), (_, _, a2, _) in zip(cells, cells[1:])):
        return cells
    out: list[tuple[str, int, int, int]] = []
    for cell in cells:
        if (out and cell[2] - out[-1][3] == 1 and _HEAD_WORD.match(cell[0])
                and all(_HEAD_WORD.match(w) for w in out[-1][0].split(" "))):
            text, start, a, _ = out[-1]
            out[-1] = (f"{text} {cell[0]}", start, a, cell[3])
        else:
            out.append(cell)
    return out


def _edge(text: str) -> str:
    """A header cell without the `:` that stands after its column (a `)` closing a group of
    columns, YOLO's `Box(P R mAP50 mAP50-95)`, is printed within the column)."""
    return text.rstrip(":")


def _column_name(text: str) -> str:
    """`mAP50-95):` -> `mAP50-95`, `Box(P` -> `Box_P`: a header cell as a metric name."""
    text = text.rstrip(":").replace(" ", "_")
    if text.count("(") > text.count(")"):
        text = text.replace("(", "_")
    if text.count(")") > text.count("("):
        text = text.replace(")", "")
    return text


_GROUP_WORD = re.compile(r"[A-Za-z][A-Za-z\d_]*(?:-[A-Za-z\d_]+)*")


def _groups(line: str) -> list[str]:
    """A line cut at its `|` (at its commas in a line without one: a CSV row), without the
    empty group after a closing separator."""
    parts = line.split("|" if "|" in line else ",")
    return parts[:-1] if len(parts) > 1 and not parts[-1].strip() else parts


def pipe_header(line: str, above: str | None = None) -> list[tuple[str, int, int]] | None:
    """A header whose groups of columns are set apart by `|`, two groups of two names or more
    (`lr iter epoch | loss top-1 top-2 | loss top-1 top-2 | time`): rows under it print their
    cells centred or padded anyhow, so a cell is told by its order within its group, not by its
    columns. A line above whose `|` stand where the header's do names each group by its one word
    (`|---- VALID ----|---- TRAIN ----|`), and the group's names take it as a prefix; without it,
    a name printed again in a later group takes the group's number. Each entry is (name,
    -groups, group): the negative count marks the header as one of groups (`table_row`)."""
    parts = _groups(_ANSI.sub("", line))
    names = [p.split() for p in parts]
    if any(not _HEAD_CELL.match(w) or w[0].isdigit() for ws in names for w in ws):
        return None
    flat = all(len(ws) <= 1 for ws in names)
    if (sum(1 for ws in names if len(ws) >= 2) < 2 or sum(len(ws) for ws in names) < 4) \
            and not (flat and sum(len(ws) for ws in names) >= 3):
        return None  # a markdown table of keys and values (`kvtables`) is no header of columns
    labels = [""] * len(parts)
    if above is not None:
        top = _ANSI.sub("", above)
        bars = [i for i, c in enumerate(top) if c == "|"]
        if bars and bars == [i for i, c in enumerate(_ANSI.sub("", line)) if c == "|"][-len(bars):]:
            segs = _groups(top)
            shift = len(parts) - len(segs)
            for k, seg in enumerate(segs):
                words = _GROUP_WORD.findall(seg)
                if len(words) == 1 and 0 <= k + shift < len(parts):
                    labels[k + shift] = words[0]
    out: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    for g, ws in enumerate(names):
        for w in ws:
            name = _column_name(w)
            name = f"{labels[g]}_{name}" if labels[g] else name
            if name in seen:
                name = f"{name}_{g}"
            seen.add(name)
            out.append((name, -len(parts), g))
    return out


def comma_header(line: str) -> list[tuple[str, int, int]] | None:
    """A CSV header printed into a log (`epoch, loss, ppl, accuracy`): three names or more set
    apart by commas, each a column's name of a few words; its rows (`0,  9.13,  9226.05, 2.670`)
    print one number a column in the same order, padded anyhow, so a cell is told by its order
    (`pipe_header`'s groups of one name)."""
    parts = [p.strip() for p in _groups(_ANSI.sub("", line))]
    if len(parts) < 3 or any(not p or p[0].isdigit() or len(p.split()) > 3 or not _HEAD_CELL.match(p)
                             for p in parts):
        return None
    out: list[tuple[str, int, int]] = []
    for g, p in enumerate(parts):
        name = _column_name(p)
        out.append((f"{name}_{g}" if any(n == name for n, _, _ in out) else name, -len(parts), g))
    return out


def _group_row(line: str, header: list[tuple[str, int, int]]) -> Template | None:
    """A row under a header of groups (`pipe_header`): as many `|` groups as the header, each
    group's numbers under its names in order (one number under several words takes them all as
    its name: `Current Best`); a group that does not line up (`0 hr 06 min` under `time`) is skipped."""
    parts = _groups(line)
    if len(parts) != -header[0][1]:
        return None
    if all(sum(1 for _, _, hg in header if hg == g) <= 1 for g in range(len(parts))):
        return _flat_row(parts, header)
    out = Template()
    numbers = 0
    for g, names, cells in _group_cells(parts, header):
        if not cells:
            continue
        if len(cells) == 1 and len(names) > 1:  # `Current Best`: one cell under two words (a group's label once)
            label = names[0].split("_")[0] + "_"
            shared = len(label) > 1 and all(n.startswith(label) for n in names)
            names = [label * shared + "_".join(n[len(label) * shared:] for n in names)]
        if len(cells) == len(names) and not all(_CELL_NUM.match(c) for c, _ in cells):
            return None  # a label under a name (Ray Tune's `| DQN_00000 | RUNNING |`): a row of one of several things
        if len(cells) != len(names):
            if numbers == 0 and g == 0 and not names:
                return None
            continue  # a cell that does not line up with its names (`0 hr 06 min` under `time`)
        for name, (text, start) in zip(names, cells):
            numbers += 1
            _place(out, name, text, start)
    return out if numbers >= 2 and out.values else None


def _flat_row(parts: list[str], header: list[tuple[str, int, int]]) -> Template | None:
    """A row under a header of one name a column (` Epoch | TrainLoss | ValLoss | Time`): a number
    in every named column (the last may carry a note after it: `19.6s  <- best`), or no row (a
    table of labels and values, `| car | 100 | 0.5 |`, is no table of records)."""
    out = Template()
    for g, names, cells in _group_cells(parts, header):
        if not names:
            if cells:
                return None
            continue
        if not cells or _CELL_NUM.match(cells[0][0]) is None or (len(cells) > 1 and g < len(parts) - 1):
            return None
        _place(out, names[0], cells[0][0], cells[0][1])
    return out if len(out.values) >= 2 else None


def _group_cells(parts: list[str], header: list[tuple[str, int, int]]):
    """Each `|` group of a row: its index, the header's names over it, and its cells with their
    offsets in the row."""
    base = 0
    for g, part in enumerate(parts):
        names = [n for n, _, hg in header if hg == g]
        cells = [(m.group(), base + m.start()) for m in _CELL.finditer(part)]
        base += len(part) + 1
        yield g, names, cells


def _epoch_named(low: str, epoch_names: tuple[str, ...] = EPOCH_NAMES) -> bool:
    """A column (or key) that holds the epoch: an epoch name, or a name whose last word is one
    (`train_epoch`, `cur epoch`), unless a rate word makes it a size (`iters_per_epoch`)."""
    words = re.split(r"[\s_\-/.]+", low.strip())
    return low in epoch_names or (bool(words) and words[-1] in epoch_names
                                  and not any(w in _RATE_WORDS for w in words[:-1]))


def _place(out: Template, name: str, text: str, start: int, epoch_names: tuple[str, ...] = EPOCH_NAMES) -> bool:
    """A table cell under `name` placed as both kinds of table (`table_row`, `_group_row`) place
    it: a counter `N/M` is the epoch (under an epoch's name, `_epoch_named`) or the step counter;
    a whole number is the epoch or the step (under such a name); any other number a value (its
    unit in its name). False when the cell holds no number."""
    low = name.lower()
    ctr = _CELL_CTR.match(text)
    if ctr:
        a_span = (start, len(ctr.group(1)))
        b_span = (start + ctr.end(1) + 1, len(ctr.group(2)))
        if _epoch_named(low, epoch_names):
            out.epoch, out.epoch_total = a_span, b_span
        else:
            out.inner, out.inner_total = a_span, b_span
        return True
    num = _CELL_NUM.match(text)
    if num is None:
        return False
    unit, span = num.group("unit"), (start, num.end("num"))
    if unit is None and _is_int(num.group("num")):
        if _epoch_named(low, epoch_names):
            out.epoch = span
            return True
        if _step_name(low) or low.endswith("_counter"):  # a stacked header's `example counter` counts too
            out.step = (low, *span)
            return True
    out.values.append((f"{name}_{_unit_suffix(unit)}" if unit else name, *span))
    return True


def _worded(header: list[tuple[str, int, int]], cells: list) -> list[tuple[str, int, int]] | None:
    """A header whose names a single space sets apart (` Gen Ph     Best ... Conns Hidden` of a right-aligned
    table, read as `Gen_Ph`) named again one word a column, when the row under it has a cell for each word
    and every word stands over its cell (right or left edges). None otherwise (`train_loss` is one name)."""
    words = []
    for name, a, b in header:
        parts = name.split("_")
        if len(parts) == 1 or b - a != len(name):
            words.append((name, a, b))
            continue
        at = a
        for part in parts:
            if not part:
                return None
            words.append((part, at, at + len(part)))
            at += len(part) + 1
    if len(words) != len(cells) or len(words) == len(header):
        return None
    if not all(b == cb or a == ca for (_, a, b), (_, _, ca, cb) in zip(words, cells)):
        return None
    return words


def _shift(header: list[tuple[str, int, int]], cells: list[tuple[str, int, int, int]]) -> int:
    """How far a row's cells stand from its header's columns when every cell is off by the same
    amount (a logger's prefix on one and not the other: a time stamp before the header, none before
    the rows a progress bar redrew after `\r`): all right edges, or all left edges, moved alike.
    0 when the first cell lines up, or the others do not move with it."""
    pairs = [((ha, hb), (a, b - (len(t) > 1 and t.endswith(":")))) for (_, ha, hb), (t, _, a, b) in zip(header, cells)]
    (ha0, hb0), (a0, b0) = pairs[0]
    if a0 == ha0 or b0 == hb0:
        return 0
    for d in (b0 - hb0, a0 - ha0):
        if all(b - d == hb for (_, hb), (_, b) in pairs) or all(a - d == ha for (ha, _), (a, _) in pairs):
            return d
    return 0


def table_row(line: str, header: list[tuple[str, int, int]]) -> Template | None:
    """A row under a header: its first cells line up with the header's columns (their right
    or left edges at the same display columns), numbers under names; a counter `N/M` under
    an epoch or step name is the row's epoch or step, a word is a label (YOLO's `all`), and
    a progress bar after the last column gives its counter. None when the row does not line up."""
    if header and header[0][1] < 0:
        return _group_row(line, header)
    cells = _cells(line)
    if len(cells) < len(header):
        return None
    tabbed = "\t" in line  # a tab-separated table: its columns are told by their order
    if len(cells) > len(header) and not tabbed:
        header = _worded(header, cells) or header
    # a row of as many cells as the header has names may print them right-aligned under names
    # printed left-aligned (spaCy's): a cell within its column (from its name's start to the next
    # name's) lines up with it too
    starts = [ha for _, ha, _ in header[1:]] + [10 ** 9]
    within = len(cells) == len(header)
    shift = 0 if tabbed else _shift(header, cells)
    out = Template()
    numbers = 0
    for (name, ha, hb), (text, start, a, b), nxt in zip(header, cells, starts):
        if text.endswith(":") and len(text) > 1:  # `640: 100%|...`: the last column before a bar
            text, b = text[:-1], b - 1
        a, b = a - shift, b - shift
        if b != hb and a != ha and not tabbed and not (within and ha <= a and b < nxt):
            return None
        if _DURATION_CELL.match(text):
            continue  # fastai's `00:12` under `time`: a duration, which no reader takes for a value
        if not _place(out, name, text, start):
            if numbers:
                return None  # a word after the numbers began: not this table's row
            continue  # a label (`all`) under a name
        numbers += 1
    if numbers < 2 or not out.values:
        return None
    for text, start, _, _ in cells[len(header):]:  # a progress bar after the columns: its counter
        ctr = _CELL_CTR.match(text)
        if ctr and out.inner is None:
            out.inner, out.inner_total = (start, len(ctr.group(1))), (start + ctr.end(1) + 1, len(ctr.group(2)))
            break
    return out
