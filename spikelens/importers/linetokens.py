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
  line as an evaluation line and are dropped from the key.

The grammar treats the ten digits alike (no digit literal anywhere), so it may be run
on a line's shape (`lineshapes`: digits written as `0`) and its spans hold for every
line of that shape: a log is tokenised once per shape of line, not once per line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

NUM_BODY = (r"[-+]?(?:\d{1,3}(?:,\d\d\d)+(?:\.\d+)?(?![\d,])|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
            r"|(?i:nan|inf(?:inity)?)(?![A-Za-z]))")
"""A number as loggers print it: thousands separators, exponents, NaN and inf spellings."""

STAMP = r"\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"
"""A date and time with a year: the line's wall time."""

_UNITS = {  # printed unit -> how it ends a metric's name
    "tokens/s": "tokens/s", "tokens/sec": "tokens/sec", "tok/s": "tok/s", "tok/sec": "tok/sec",
    "samples/s": "samples/s", "samples/sec": "samples/sec", "sample/s": "sample/s", "img/s": "img/s",
    "ex/s": "ex/s", "it/s": "it/s", "s/it": "s/it", "ms/step": "ms/step", "s/step": "s/step",
    "us/step": "us/step", "ms/it": "ms/it", "ms/batch": "ms/batch",
    "GiB": "gib", "MiB": "mib", "KiB": "kib", "TiB": "tib", "GB": "gb", "MB": "mb", "KB": "kb", "TB": "tb",
    "TFLOPS": "tflops", "TFLOPs": "tflops", "tflops": "tflops", "ms": "ms", "us": "us", "sec": "s", "min": "min",
    "%": "pct", "s": "s", "m": "min", "h": "h", "G": "G", "M": "M", "K": "K",
}
_SPACED = [u for u in _UNITS if len(u) > 1]
"""Units that may stand one space after their number (`330.02 ms`); single letters must touch it."""
_UNIT_RE = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_SPACED_RE = "|".join(re.escape(u) for u in sorted(_SPACED, key=len, reverse=True))
_NAMES_ALONE = re.compile(r"/|^ms$")
"""Units that name a number printed without a key (`| 330 ms |`, `5.00it/s`)."""

_SOFT_BLANK = re.compile(r"\x1b\[[\d;?]*[ -/]*[@-~]|\x1b[()][A-Za-z\d]|\x1b|['\"]")
"""ANSI escapes and quotes: blanked with spaces (a dict's `'loss': 1` reads as `loss: 1`)."""
_BLANK = re.compile("|".join([
    r"\[(?:rank|default|Rank|RANK)\s*\d+\]:?|(?m:^\s*\[\d+\]:)",  # rank tags
    r"(?m:^\s*\d+:\s)",  # srun -l
    r"[\w.<>\-]+:[\w.<>\-]+:\d+(?=\s)",  # loguru `module:function:line`
    r"\b[\w\-]+\.py:\d+\b|\bline \d+\b",  # logger locations
    r"\b\d\d/\d\d(?:/\d{2,4})?[ T]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?",  # dates without a year
    r"(?<![\w.:])\d+:\d\d(?::\d\d)?(?:[.,]\d+)?(?:<(?:\d+:\d\d(?::\d\d)?|\?))?(?![\w:])",  # times, durations
    r"\bv?\d+\.\d+\.\d+[\w.+\-]*",  # versions
    r"\b0x[\dA-Fa-f]+\b",
]))
"""What is never a value: blanked with a separator (a key before it has no value)."""
_GAP = "\x01"
_STAMP = re.compile(STAMP)
_PHASE = re.compile(r"\((?P<phase>train|training|val|valid|validation|eval|test)\)", re.I)
_TOKEN = re.compile(
    rf"(?P<ctr>(?<![\w.])\d+\s*/\s*\d+(?![\w.]))"
    rf"|(?P<num>(?<![\w.]){NUM_BODY})(?:(?P<unit>{_UNIT_RE})|\s(?P<sunit>{_SPACED_RE}))?(?![A-Za-z/\d]|\.\d)"
    r"|(?P<word>[A-Za-z_](?:[\w./\-]*\w)?)"
    r"|(?P<link>[:=])"
    r"|(?P<hard>\||,(?=\s|$)|;|\s-\s|[{}\x01]+)"
    r"|(?P<open>\()"
    r"|(?P<soft>\s{2,}|[\[\])<>])"
)
EVAL_WORDS = {"val": "val", "valid": "val", "validation": "val", "validate": "val", "validating": "val",
              "eval": "val", "evaluation": "val", "evaluate": "val", "evaluating": "val",
              "test": "test", "testing": "test"}
_EVAL_NAMED = re.compile(r"(?i)(?:^|[_/\-. ])(?:val|valid|validation|eval|test|dev)(?:$|[_/\-. ])|^(?:val|eval|test)")
_PROSE = ""
"""What `key_of` gives for a number inside a sentence: not a key, not read."""
_LEVELS = {"INFO", "DEBUG", "WARNING", "WARN", "ERROR", "CRITICAL", "TRACE", "SUCCESS", "NOTICE"}
STEP_NAMES = ("global_step", "num_updates", "step", "iteration", "iter", "iters", "it", "update",
              "updates", "batch", "train_step", "optimizer_step", "i")
"""Keys that count steps, the most telling first."""
EPOCH_NAMES = ("epoch", "ep", "epochs")
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
    loose: int = 0
    """Words that named nothing (prose around numbers: `with local batch size 8`)."""

    @property
    def prose(self) -> bool:
        """More loose words than a log line carries: a sentence, whose numbers are not metrics."""
        return self.loose >= 4 and self.loose > len(self.values) + 2

    @property
    def anchored(self) -> bool:
        return self.step is not None or self.inner is not None or self.epoch is not None


class _Word(str):
    """A word and its span in the line."""

    def __new__(cls, text: str, span: tuple[int, int]) -> "_Word":
        word = super().__new__(cls, text)
        word.span = span
        return word


def _blanked(line: str) -> tuple[str, tuple[int, int] | None, str | None]:
    """The line with what is never a value blanked (same length), its time stamp's span,
    and the phase a `(val)`-like tag names."""
    stamp = None
    m = _STAMP.search(line)
    if m:
        stamp = (m.start(), m.end() - m.start())
        line = line[: m.start()] + _GAP * (m.end() - m.start()) + line[m.end():]
    line = _SOFT_BLANK.sub(lambda m: " " * (m.end() - m.start()), line)
    line = _BLANK.sub(lambda m: _GAP * (m.end() - m.start()), line)
    phase = None
    p = _PHASE.search(line)
    if p:
        phase = EVAL_WORDS.get(p.group("phase").lower())
        line = line[: p.start()] + " " * (p.end() - p.start()) + line[p.end():]
    return line, stamp, phase


def _is_int(text: str) -> bool:
    return text.isdigit()


def tokenise(line: str) -> Template:
    """The template of one line (see the module doc)."""
    clean, stamp, phase = _blanked(line)
    out = Template(stamp=stamp, evaluation=phase)
    words: list[str] = []
    linked = False
    last_key: str | None = None  # the key of the value just read, for a `(92.49%)` after it
    last_was_value: str | bool = False  # "num" or "ctr" right before
    after_paren: str | bool = False  # what came right before an opening parenthesis
    seen: set[str] = set()
    sealed = False

    def drop(loose: list[str]) -> None:
        """Words that name nothing; an evaluation word among them marks the line
        (`| epoch 001 | valid on 'valid' subset | loss 8.9`)."""
        out.loose += len(loose)
        for w in loose:
            if w.lower() in EVAL_WORDS and out.evaluation is None:
                out.evaluation = EVAL_WORDS[w.lower()]

    def key_of() -> str | None:
        if not words:
            return None
        if not linked and len([w for w in words if w not in _LEVELS and w.lower() not in EVAL_WORDS]) > 1:
            last = words[-1].lower()
            if _step_name(last) or last in EPOCH_NAMES:  # `Training Epoch 3`, `Global Step 10`: the counter
                drop(words[:-1])
                return str(words[-1])
            drop(words)  # `Model has 124M parameters`: a sentence names no metric
            return _PROSE
        run = words[-4:] if linked else words[-1:]
        if len(run) > 1 and (_step_name(run[-1].lower()) or run[-1].lower() in EPOCH_NAMES):
            run = run[-1:]  # `checkpoint saved at it=100`: the step, not a metric of four words
        drop(words[: len(words) - len(run)])
        run = [w for w in run if w not in _LEVELS]
        if len(run) > 1 and run[-1] in _UNITS:  # `memory(GiB)`
            run = run[:-1] + [_UNITS[run[-1]]]
        while run and run[0].lower() in EVAL_WORDS:
            out.evaluation = out.evaluation or EVAL_WORDS[run[0].lower()]
            run = run[1:]
        out.named_by_digits.extend(w.span for w in run if isinstance(w, _Word) and any(c.isdigit() for c in w))
        if not linked:
            for w in words[:-1]:
                if w.lower() in EVAL_WORDS:
                    out.evaluation = out.evaluation or EVAL_WORDS[w.lower()]
        return "_".join(run) or None

    last_end = 0
    for m in _TOKEN.finditer(clean):
        kind = m.lastgroup if m.lastgroup not in ("unit", "sunit") else "num"
        if m.group("num") is not None:
            kind = "num"
        gap, last_end = clean[last_end:m.start()], m.end()
        if kind == "word":
            if gap.strip() or sealed:  # something between: not one run of words
                drop(words)
                words, sealed = [], False
                if gap and not gap[-1].isspace():  # the tail of something unread (`200/s`)
                    continue
            words.append(_Word(m.group("word"), (m.start(), m.end() - m.start())))
            linked = False
            last_was_value = after_paren = False
            continue
        if kind == "link":
            linked = bool(words)
            continue
        if kind == "hard":
            drop(words)
            words, linked, last_was_value, after_paren = [], False, False, False
            continue
        if kind == "open":
            after_paren = last_was_value
            continue
        if kind == "soft":
            sealed = bool(words)  # the words before stay a key, but no word joins them
            if m.group("soft") in ")]":
                continue
            after_paren = False
            continue
        if kind == "ctr":
            text = m.group("ctr")
            cut = text.index("/")
            a = (m.start(), len(text[:cut].rstrip()))
            b_text = text[cut + 1:]
            b = (m.start() + cut + 1 + (len(b_text) - len(b_text.lstrip())), len(b_text.strip()))
            after_paren = False
            key = key_of()
            low = (key or "").lower()
            if low in EPOCH_NAMES or low.endswith("epoch"):
                if out.epoch is None:
                    out.epoch, out.epoch_total = a, b
            elif out.inner is None and (key is None or _step_name(low)):  # not `Loaded 3/10 shards`
                out.inner, out.inner_total = a, b
            words, linked, last_was_value, last_key = [], False, "ctr", None
            continue
        # a number
        start, end = m.span("num")
        unit = m.group("unit") or m.group("sunit")
        suffix = _UNITS.get(unit) if unit else None
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
        if unit == "%" and clean[m.end():m.end() + 1] == "|":  # a progress bar's share (`Train:  5%|##`)
            words, linked = [], False
            continue
        key = key_of()
        words, linked = [], False
        last_was_value = "num"
        if key == _PROSE:
            last_key = None
            out.unkeyed += 1
            continue
        if key is None:
            last_key = None
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
        if suffix is None and _is_int(text) and (low in EPOCH_NAMES or low.split()[-1] in EPOCH_NAMES):
            # `Epoch 3`, and a bar's description before its counter: `Training Epoch 3:  4%| 1/28`
            if out.epoch is None:
                out.epoch = (start, end - start)
            continue
        if suffix is None and _is_int(text) and _step_name(low):
            if out.step is None or _rank(low) < _rank(out.step[0]):
                out.step = (low, start, end - start)
            continue
        if low in IGNORED:
            continue
        name = f"{key}_{suffix}" if suffix else key
        if name not in seen:
            seen.add(name)
            out.values.append((name, start, end - start))
    drop(words)
    if out.prose:
        out.values = []
    if out.evaluation is not None:
        out.values = [(_eval_name(n, out.evaluation), s, k) for n, s, k in out.values]
    return out


def _plain(low: str) -> str:
    """`Global-step`, `global step`, `global_step/max_steps` -> `global_step`."""
    return re.sub(r"[\s\-]+", "_", low.split("/")[0])


def _step_name(low: str) -> bool:
    return _plain(low) in STEP_NAMES


def _rank(low: str) -> int:
    base = _plain(low)
    return STEP_NAMES.index(base) if base in STEP_NAMES else len(STEP_NAMES)


def _eval_name(name: str, phase: str) -> str:
    """An evaluation line's metric: its name when it says so already, else `val_NAME`."""
    return name if _EVAL_NAMED.search(name) else f"{phase}_{name}"
