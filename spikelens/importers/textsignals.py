"""What a text log says about its launches, beside its values.

Three signals, read from the split lines (`textlines.split_lines`) without touching how
lines become values:

- `launch_starts`: rows where a relaunch appended to the same file begins, from the
  pattern's `launch_start` marker (nanoGPT prints `mfu -100.00%` on the first step
  lines of every launch): a marked step line after an unmarked one opens a launch,
  even when the relaunch re-logs the last step with the same value.
- `planned_total`: the step total the step lines print (`step 750/19560`), the run's plan.
- `final_error`: the error a log ends with: the exception line of a `Traceback`
  printed after the last step line, or a launcher's crash message (`Killed`,
  `Segmentation fault`, a SLURM cancel, a CUDA/NCCL error).

They are gathered a chunk of lines at a time (`chunk_signals`, in the parse threads),
each chunk leaving only what the signals can need of it: its last plan, its step lines'
rows and marks, its error-looking lines and its last non-empty line. `Signals` puts the
chunks together in read order, so the text of a log is never held whole.
"""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import polars as pl

from ..sanitize import shown
from . import lineshapes
from .textlines import split_lines
from .patterns import LinePattern

_TRACEBACK = r"Traceback \(most recent call last\)"
_EXCEPTION_LINE = r"^(?:\[[^\]]*\]:?\s*|\d+:\s+)?[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)\b(?::.*)?\s*$"
"""`RuntimeError: CUDA out of memory...`, `[rank0]: torch.OutOfMemoryError: ...`, `KeyboardInterrupt`."""
_CRASH_LINE = (r"(?i)^(?:\[[^\]]*\]:?\s*)?(?:.*\bSegmentation fault\b|Killed\s*$|Terminated\s*$|.*\bCUDA error\b"
               r"|.*\bNCCL error\b|.*\bWatchdog caught collective operation timeout\b|.*\btaking the entire process down\b"
               r"|.*\bterminate called after throwing\b|slurmstepd(?:-[\w.-]+)?: error: .*(?:CANCELLED|TIME LIMIT|OUT OF MEMORY|oom)"
               r"|srun: error: .*(?:Exited|Killed|exit code)|.*\bChildFailedError\b|.*\(core dumped\)|Aborted\s*$|\w+ error location: .*"
               r"|(?:.*\s)?(?-i:F)(?:\d{4} +\d\d:\d\d:\d\d\.\d+ +\d+)? +[\w./-]+\.(?:cc|cpp|cxx|c|h|hpp|cu):\d+\] .*)")
"""Crash messages that come without a Python traceback (a SLURM cancel names its node:
`slurmstepd-c17: error: ...`; darknet's `error()` prints `Darknet error location: FILE, FUNC, line`;
a shell's `Terminated` for a job sent SIGTERM; PyTorch's NCCL watchdog, which takes the process down
after a collective timed out: `Watchdog caught collective operation timeout: WorkNCCL(...)`,
`To avoid data inconsistency, we are taking the entire process down.`); a C++ library's glog FATAL
line, which aborts the process (TensorFlow's `2021-08-19 02:10:50.224348: F tf_adapter/kernels/geop_npu.cc:766]
GeOp3_0GEOP::::DoRunAsync Failed`, glog's own `F0819 02:10:50.224348 4242 file.cc:766] ...`)."""
_KILL_LINE = (r"(?i)\bReceived (?:Signals\.)?SIG(?:TERM|KILL|INT|HUP|USR[12])\b|\bReceived \d+ death signal\b"
              r"|\b(?:killed|terminated) by signal\b|\bKilled\s*$|^Terminated\s*$"
              r"|^zsh: (?:killed|terminated)\b|^\[\d+\]\s*[+-]?\s+\d+ +(?:killed|terminated)\b"
              r"|\bslurmstepd(?:-[\w.-]+)?: error: .*(?:CANCELLED|TIME LIMIT|OUT OF MEMORY|oom)"
              r"|\bDUE TO (?:TIME LIMIT|PREEMPTION|NODE FAILURE)\b|^Exited with exit code [1-9]\d*\.?$"
              r"|\bPBS: job killed\b|\bTERM_(?:RUNLIMIT|MEMLIMIT)\b"
              r"|(?:\bline \d+: +\d+ +|^\[\d+\][+-]? +)(?:Killed|Terminated|Aborted)\b"
              r"|\bExiting from training early\b")
"""A notice that the process was killed from outside, in any line (a scheduler's cancel or time
limit, a signal received (torchrun's `Received Signals.SIGTERM death signal`, `Received 15 death
signal`), the shell's `Killed` or `Terminated`, zsh's `zsh: killed  python ...` and `[1]  + 4242 killed
...`, LSF's `Exited with exit code 1.`; a shell's job
notice naming the command it killed: a script's `run.sh: line 5: 19817 Killed   python train.py`,
an interactive shell's `[1]+  Killed   python train.py`; Flair's `Exiting from training early.`, which it
prints when Ctrl-C stops its training loop), even glued to
the end of an unfinished progress bar (`...train_loss=0.123][rank: 0] Received SIGTERM: 15`). It
is the job's end: what the dying process flushed after it (`_FLUSH_LINES`) does not undo it."""
_FATAL_LINE = (r"\bCUDA out of memory\b|\bOutOfMemoryError\b|\bResourceExhaustedError\b|\bOOM when allocating\b"
               r"|^[\w./-]+\.py: error: ")
"""A fatal error wherever it sits in a line (a logger's `INFO - Error in epoch 40 ... CUDA out of
memory`), and argparse's `train.py: error: argument --fp16: ...` (it always exits)."""
_LOGGED_ERROR = r"(?:^|[\s|\]:-])(?:ERROR|CRITICAL|FATAL)\b[\s|:\]-]+.*\b(?i:fail(?:ed|ure|s)?|error|exception)\b"
"""A logger's ERROR-level line saying something failed (`__main__ - ERROR - Training failed with
error: ...`): in a log that holds no value, what the run died of before training."""
_EARLY_STOP = (r"(?i)\bearly[ -]?stop(?:ping|ped)?\b|\bstopp(?:ed|ing) (?:the )?(?:training )?early\b"
               r"|\bSignaling Trainer to stop\b")
"""A trainer saying its early stopping ended the run: Keras' `Epoch 00023: early stopping`, a script's
`Early stopping at epoch 45`, Ultralytics' `Stopping training early as no improvement observed ...`,
Lightning's `... Signaling Trainer to stop.`."""
_NOT_STOP = r"(?i)early[ _-]?stop(?:ping|ped)?\s*(?:counter|patience|=|:\s*(?:\d|true|false|none)|\(|\[)|early_stop"
"""...but not a setting (`early_stopping=True`, `early_stopping: 10`) nor a patience count
(`EarlyStopping counter: 3 out of 7`); Polars' regexes have no look-ahead, so this is a second test."""
_LAUNCH_WORD = (r"(?i)\b(fold|seed|trial|repeat|sweep|run|phase|stage|experiment)"
                r"(?:[ _-]?(?:#|no\.?|number|id|idx|index))?\s*(?:[:=#]\s*|\s)(\d+)\b")
"""A word that names which run of a series a launch is: `Fold 2/5`, `fold=3`, `seed: 42`, `trial 7`,
`run 2 of 4`, `sweep #3`, `Phase 2: full training`. Printed with another number than the last time
the log printed it, it says the launch after it is another run (a fold, a seed, a sweep point, a
stage), not a relaunch of the one before; printed again with the same number (the same config dumped
by every relaunch) it says nothing."""
_RANDOM_SEED = r"(?i)\b(?:random(?:ly)?|generated|rand)[ _-]*(?:\w+[ _-]+)?seed\b|\bseed\b\D{0,12}\d{6,}"
"""A seed the run drew for itself at each start (detectron2's `Using a generated random seed 8867425`, a
`random_seed=` of six digits or more): another number at every relaunch, it names no run of a sweep,
so it must not make a relaunch after a death read as another run."""
_LAUNCH_HEADING = r"^#{1,6}[ \t]+(\S.*?)\s*$"
"""A Markdown heading over each run's lines in a notes file (`#### DQN`, `#### PPO`): another heading,
another run."""
_FINISHED = (r"(?i)\b(?:training (?:is )?(?:complete[d]?|finished|done|ended)|finished training|training over"
             r"|optimi[sz]ation (?:finished|done|complete[d]?)|test set results|final (?:test|eval\w*) (?:results?|loss|acc\w*)"
             r"|total training time)\b|'train_runtime':")
"""A launch's own closing summary (`Optimization Finished!`, `Test set results: ...`, `Training complete`,
HF Trainer's `{'train_runtime': ...}`): the launch ended as planned, whatever came after it."""
_STOP_SHARE = 0.5
"""An early-stop line counts only after this share of the log's value lines: one among the settings
printed before training (a help text, a config) stopped nothing."""
_FLUSH_LINES = 64
"""Lines a killed process may still flush after the kill notice (a pipe buffer of 4-8 KiB)."""
_NAN_MESSAGE = (r"(?i)tensor\(\[+\s*-?nan\b|found invalid values|\b(?:loss|grad(?:ient)?s?|outputs?|logits|values?|weights?)"
                r" (?:is|are|became|contains?|has|have) (?:a )?(?:nan|inf)\b|\bnan (?:or inf )?(?:detected|encountered|found)"
                r"|non-?finite (?:loss|values?|grad)|\bNaN or Inf\b|\bnan loss\b")
"""A message that says values went NaN/inf (a crash's error, a tensor dump after it, `Loss is nan,
stopping training`), not a value line (`loss: nan` is read as a value)."""
_FATAL = r"(?i)out of memory|OutOfMemoryError|\bCUDA error\b|\bNCCL\b|\bcore dumped\b"
"""An exception that ends a launch whatever the code around it does."""
_NEXT_LOOK = 20
"""Value lines after an error looked at for where the step went next."""
_STRIPPED = pl.col("text").str.strip_chars().str.strip_chars("\x00")
"""A line as the error signal reads it (a cut-off last line ends in NUL, see `textlines._CUT`)."""
_LAST_LOOK = 64
"""Lines looked at from a chunk's end for its last non-empty line, before the whole chunk."""


class ChunkSignals(NamedTuple):
    """What one chunk of lines leaves for the signals."""
    plan: int | None
    """The last total its step lines print (cast as the plan reads it; None: none)."""
    steps: pl.DataFrame | None
    """Its step lines (a pattern with a `launch_start` marker only): `row`, `marked` and,
    per anchor rule, whether the line is one of the rule's (`a0`, `a1`, ...)."""
    errors: pl.DataFrame
    """Its lines that read as an error (`row`, `line_no`, stripped `text`, `tb`, `exc`, `crash`)."""
    last: pl.DataFrame
    """Its last non-empty line (`row`, `line_no`, stripped `text`), or no row."""
    words: pl.DataFrame | None = None
    """Its launch words and closing summaries (`row`, `word`, `value`: `_chunk_words`)."""


def chunk_signals(lines: pl.DataFrame, pattern: LinePattern, shapes: pl.DataFrame | None = None,
                  known: dict | None = None) -> ChunkSignals:
    """The signals' part of one chunk of lines (`row`, `line_no`, `text`). With the chunk's
    shapes (`lines` then has `_shape`, see `textlogs._shaped`), each test runs once per
    shape (`lineshapes.per_shape`; `known` holds the answers for the whole file, one dict
    per pattern: the keys say which test)."""
    known = {} if known is None else known

    def test(name: str, expr: pl.Expr, *regexes: str) -> pl.Expr:
        return lineshapes.per_shape(shapes, expr, regexes, known.setdefault(name, {}))

    return ChunkSignals(_chunk_plan(lines, pattern, test), _chunk_steps(lines, pattern, test),
                        _chunk_errors(lines, test), _chunk_last(lines), _chunk_words(lines, test))


def _chunk_plan(lines: pl.DataFrame, pattern: LinePattern, test) -> int | None:
    if pattern.plan is None:
        return None
    stating = lines.filter(test("plan", pl.col("text").str.contains(pattern.plan), pattern.plan))
    for part in (stating.tail(1), stating):  # the last line stating one, unless its total does not read
        totals = part.select(pl.col("text").str.extract(pattern.plan, 1).cast(pl.Int64, strict=False)).to_series()
        totals = totals.drop_nulls()
        if totals.len():
            return int(totals[-1])
    return None


def _chunk_steps(lines: pl.DataFrame, pattern: LinePattern, test) -> pl.DataFrame | None:
    if pattern.launch_start is None:
        return None
    anchors = [test(f"anchor{i}", pl.col("text").str.contains(_unnamed(r.regex)), _unnamed(r.regex)).alias(f"a{i}")
               for i, r in enumerate(pattern.anchors)]
    marked = test("marked", pl.col("text").str.contains(pattern.launch_start), pattern.launch_start)
    flags = lines.select("row", *anchors, marked=marked)
    return flags.filter(pl.any_horizontal(*[pl.col(f"a{i}") for i in range(len(anchors))]))


_DIGIT_CLASS = re.compile(r"\[(?:\d(?:-\d)?)+\]")
"""A character class of digits alone (`[12]`, `[1-9]`)."""


def _sieve(regex: str) -> str:
    """`regex` with its classes of digits widened to any digit (`USR[12]` -> `USR\\d`): it matches
    wherever `regex` does, and, where that leaves it telling no digit apart, a line's shape
    answers it (`lineshapes.per_shape`); `regex` itself then runs on the lines it lets through."""
    return _DIGIT_CLASS.sub(lambda m: r"\d", regex)


def _chunk_errors(lines: pl.DataFrame, test) -> pl.DataFrame:
    kill = _sieve(_KILL_LINE)  # the exact test below, on the few lines the sieve lets through
    flags = {"nanmsg": test("nanmsg", _STRIPPED.str.contains(_NAN_MESSAGE), _NAN_MESSAGE),
             "tb": test("tb", _STRIPPED.str.contains(_TRACEBACK), _TRACEBACK),
             "exc": test("exc", _STRIPPED.str.contains(_EXCEPTION_LINE), _EXCEPTION_LINE),
             "crash": test("crash", _STRIPPED.str.contains(_CRASH_LINE), _CRASH_LINE)
             | test("fatal", _STRIPPED.str.contains(_FATAL_LINE), _FATAL_LINE),
             "kill": test("kill_sieve", _STRIPPED.str.contains(kill), kill),
             "logged": test("logged", _STRIPPED.str.contains(_LOGGED_ERROR), _LOGGED_ERROR),
             "stop": test("stop", _STRIPPED.str.contains(_EARLY_STOP) & ~_STRIPPED.str.contains(_NOT_STOP),
                          _EARLY_STOP, _NOT_STOP)}
    return (lines.select("row", "line_no", "text", **flags)
            .filter(pl.col("tb") | pl.col("exc") | pl.col("crash") | pl.col("kill") | pl.col("nanmsg")
                    | pl.col("logged") | pl.col("stop"))
            .with_columns(kill=pl.col("kill") & _STRIPPED.str.contains(_KILL_LINE))
            .with_columns(crash=pl.col("crash") | pl.col("kill"))
            .filter(pl.col("tb") | pl.col("exc") | pl.col("crash") | pl.col("nanmsg") | pl.col("logged")
                    | pl.col("stop"))
            .with_columns(_STRIPPED))


def _chunk_words(lines: pl.DataFrame, test) -> pl.DataFrame:
    """The chunk's launch words (`_LAUNCH_WORD`, `_LAUNCH_HEADING`; `row`, `word`, `value`), each only
    where its value differs from the line before that printed the word (a seed on every value line is
    kept once, then where it changes), and its closing summaries (`_FINISHED`, word `finished`)."""
    text = pl.col("text")
    said = lines.filter(test("word", text.str.contains(_LAUNCH_WORD), _LAUNCH_WORD)
                        | test("heading", text.str.contains(_LAUNCH_HEADING), _LAUNCH_HEADING)
                        | test("finished", text.str.contains(_FINISHED), _FINISHED))
    schema = {"row": pl.Int64, "word": pl.String, "value": pl.String}
    if said.height == 0:
        return pl.DataFrame(schema=schema)
    heading = text.str.extract(_LAUNCH_HEADING, 1)
    found = said.select(pl.col("row").cast(pl.Int64),
                        word=pl.when(text.str.contains(_FINISHED)).then(pl.lit("finished"))
                        .when(heading.is_not_null()).then(pl.lit("heading"))
                        .otherwise(text.str.extract(_LAUNCH_WORD, 1).str.to_lowercase()),
                        value=pl.when(text.str.contains(_FINISHED)).then(pl.lit(None, dtype=pl.String))
                        .otherwise(pl.coalesce(heading, text.str.extract(_LAUNCH_WORD, 2))))
    found = found.filter(pl.col("word").is_not_null())
    drawn = said.select(text.str.contains(_RANDOM_SEED)).to_series()
    found = found.filter(~((pl.col("word") == "seed") & drawn))  # a seed drawn at each start names no run
    before = pl.col("value").shift(1).over("word")
    return found.filter((pl.col("word") == "finished") | before.is_null() | (pl.col("value") != before))


def _chunk_last(lines: pl.DataFrame) -> pl.DataFrame:
    def non_empty(part: pl.DataFrame) -> pl.DataFrame:
        return part.select("row", "line_no", _STRIPPED).filter(pl.col("text").str.len_chars() > 0)

    kept = non_empty(lines.tail(_LAST_LOOK))
    if kept.height == 0 and lines.height > _LAST_LOOK:
        kept = non_empty(lines)
    return kept.tail(1)


def _notice(text: str) -> str:
    """A kill notice glued to the end of a progress bar, alone (`Received SIGTERM: 15`); any
    other line as it is."""
    found = re.search(_KILL_LINE, text)
    return text[found.start():] if found and found.start() and text[:found.start()].rstrip().endswith("]") else text


def _unnamed(regex: str) -> str:
    """The regex with its named groups made plain (several rules' regexes joined by `|`
    would name a group twice)."""
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


class Signals:
    """The chunks' parts put together in read order (`add`), then read as table meta (`meta`)."""

    def __init__(self, pattern: LinePattern | None) -> None:
        self.pattern = pattern
        self.plan: int | None = None
        self.steps: list[pl.DataFrame] = []
        self.errors: list[pl.DataFrame] = []
        self.last: pl.DataFrame | None = None
        self.words: list[pl.DataFrame] = []

    def add(self, part: ChunkSignals) -> None:
        if part.words is not None and part.words.height:
            self.words.append(part.words)
        if part.plan is not None:
            self.plan = part.plan
        if part.steps is not None and part.steps.height:
            self.steps.append(part.steps)
        if part.errors.height:
            self.errors.append(part.errors)
        if part.last.height:
            self.last = part.last

    def planned_total(self) -> int | None:
        """The total the last step line printing one states (`step N/TOTAL`), if any."""
        return self.plan if self.plan is not None and self.plan > 0 else None

    def launch_starts(self) -> list[int]:
        """Rows where a relaunch's lines begin: after the last unmarked step line that
        precedes a marked one. The first launch's own marked lines open nothing."""
        if not self.steps:
            return []
        flags = pl.concat(self.steps)
        # only the kind of step line that carries the marker (an eval line never does)
        kinds = [c for c in flags.columns if c.startswith("a") and flags.select((pl.col(c) & pl.col("marked")).any()).item()]
        if not kinds:
            return []
        steps = flags.filter(pl.any_horizontal(*[pl.col(c) for c in kinds])).select("row", "marked")
        if steps.height < 2:
            return []
        opens = steps.filter(pl.col("marked") & ~pl.col("marked").shift(1).fill_null(True))
        if opens.height == 0:
            return []
        unmarked = steps.filter(~pl.col("marked")).select(prev_row="row")
        before = opens.join_asof(unmarked.with_columns(row=pl.col("prev_row")), on="row", strategy="backward")
        return [int(r) + 1 for r in before.get_column("prev_row").drop_nulls().to_list()]

    def final_error(self, last_value_row: int | None) -> tuple[str, int] | None:
        """(error line, 0-based line number) when the log ends in an error after its last
        value; None when it ends cleanly or is merely cut off."""
        after_values = pl.col("row") > (last_value_row if last_value_row is not None else -1)
        tail = pl.concat(self.errors).filter(after_values) if self.errors else None
        if tail is None or tail.height == 0 or not tail.select((pl.col("tb") | pl.col("exc") | pl.col("crash")).any()).item():
            return self._killed(last_value_row) or self._logged_failure(tail, last_value_row)
        tb = tail.filter(pl.col("tb"))
        if tb.height:
            after = pl.col("row") > tb.item(-1, "row")
            exc = tail.filter(after & pl.col("exc"))
            last = self.last.filter(after) if self.last is not None else tail.head(0)
            pick = exc if exc.height else last  # the last non-empty line after the traceback
            if pick.height:
                return pick.item(-1, "text"), int(pick.item(-1, "line_no"))
            return tb.item(-1, "text"), int(tb.item(-1, "line_no"))
        crash = tail.filter(pl.col("crash"))
        if crash.height:
            return _notice(crash.item(-1, "text")), int(crash.item(-1, "line_no"))
        return self._killed(last_value_row)

    def _killed(self, last_value_row: int | None) -> tuple[str, int] | None:
        """The last kill notice (`_KILL_LINE`) among the last value lines, when no more than a
        killed process's flush of lines (`_FLUSH_LINES`) follows it: the job was killed there."""
        if not self.errors or last_value_row is None:
            return None
        near = pl.concat(self.errors).filter(pl.col("kill") & (pl.col("row") >= last_value_row - _FLUSH_LINES))
        if near.height == 0:
            return None
        return _notice(near.item(-1, "text")), int(near.item(-1, "line_no"))

    @staticmethod
    def _logged_failure(tail: pl.DataFrame | None, last_value_row: int | None) -> tuple[str, int] | None:
        """In a log that holds no value, its last ERROR-level logger line saying something
        failed (`_LOGGED_ERROR`): the run failed before training. With values, no verdict."""
        if tail is None or last_value_row is not None:
            return None
        said = tail.filter(pl.col("logged"))
        return (said.item(-1, "text"), int(said.item(-1, "line_no"))) if said.height else None

    def launch_errors(self, rows: pl.DataFrame) -> list[dict]:
        """The launches that died before the log's last value and were launched again: an
        error (a traceback's exception line, a crash message) between two value lines where
        the step then goes back to or below where it was (a relaunch), or before the first
        value line when it is a crash message or a fatal error (out of memory, CUDA, NCCL: a
        launch that died before its first step). A traceback printed and caught mid-launch
        (the step goes on) is no crash. Each: `error`, `line_no` (1-based), `last_step`
        (None: before the first value), `next_step`."""
        if not self.errors or rows.height == 0:
            return []
        vals = rows.select("row", "step")
        if not vals.get_column("row").is_sorted():  # value rows come in read order: no sorted copy of millions
            vals = vals.sort("row")
        errs = pl.concat(self.errors).filter(pl.col("row") < vals.item(-1, "row")).sort("row")
        if errs.height == 0:
            return []
        gap = vals.get_column("row").search_sorted(errs.get_column("row"))
        errs = errs.with_columns(gap=gap, after_tb=(pl.col("tb").cum_sum().over(gap) > 0) & ~pl.col("tb"))
        steps = vals.get_column("step").to_numpy()  # not a Python list of every value's step
        out = []
        for (g,), part in errs.group_by("gap", maintain_order=True):
            exc = part.filter(pl.col("exc") & pl.col("after_tb") & ~pl.col("crash"))
            crash = part.filter(pl.col("crash"))
            fatal = part.filter((pl.col("exc") & pl.col("after_tb") | pl.col("crash"))
                                & pl.col("text").str.contains(_FATAL))
            # a launch that said its values went NaN/inf (its own check stopped it) and was launched again
            said_nan = part.filter(pl.col("nanmsg"))
            pick = next((p for p in (fatal, exc, crash, said_nan) if p.height), None)  # the root cause first
            if pick is None:
                continue
            text, line_no = pick.item(0, "text"), int(pick.item(0, "line_no")) + 1
            # the lowest step of the next value lines: a line that carries the last step on (an
            # eval or resume note printed before the relaunch's first step line) does not hide it
            last, nxt = (int(steps[g - 1]) if g else None), int(steps[g:g + _NEXT_LOOK].min())
            if last is None and pick is exc and part.filter(pl.col("tb")).height >= 2:
                # tracebacks one after another with no value line between: a launch that went on after
                # its traceback would have logged values before the next one, so each launch but the
                # last (the one that trained, whose traceback may have been caught) died there
                out += _died_before_values(part, nxt)
                continue
            if last is None:
                if not crash.height and not re.search(_FATAL, " ".join(exc.get_column("text").to_list())):
                    continue  # a traceback printed before training (an optional import) need not be a crash
            elif nxt > last:
                continue  # the launch went on after it
            if pick is said_nan and last is None:
                continue  # a NaN note before the first value ended no launch
            out.append({"error": shown(text.replace("\x00", "").strip(), newlines=False), "line_no": line_no, "last_step": last, "next_step": nxt,
                        **({"nan": True} if pick is said_nan else {})})
        return out

    def launch_words(self, rows: pl.DataFrame) -> list[dict]:
        """Where the step goes back (a launch begins again at or below where the last one was), what
        the log said between the two launches that makes the new one another run: a launch word
        (`_LAUNCH_WORD`, `_LAUNCH_HEADING`) printed with another value than the last time, or early
        stopping or a closing summary (`_FINISHED`) having ended the launch before. Each: `word`,
        `value` (None for a stop or a summary), `last_step` (the last step before the launch it
        belongs to), `next_step` (that launch's first step), `row`. The launches of a k-fold, a
        seed sweep or a grid are no deaths (`detect.ended`)."""
        if rows.height == 0 or "step" not in rows.columns:
            return []
        parts = []
        if self.words:
            words = pl.concat(self.words).sort("row")
            before = pl.col("value").shift(1).over("word")
            parts.append(words.filter(pl.col("value").is_null() | before.is_null() | (pl.col("value") != before)))
        if self.errors:
            stops = pl.concat(self.errors).filter(pl.col("stop"))
            parts.append(stops.select(pl.col("row").cast(pl.Int64), word=pl.lit("early stopping"),
                                      value=pl.lit(None, dtype=pl.String)))
        said = pl.concat(parts).sort("row") if parts else None
        if said is None or said.height == 0:
            return []
        vals = rows.select(pl.col("row").cast(pl.Int64), "step")
        if not vals.get_column("row").is_sorted():
            vals = vals.sort("row")
        vals = vals.unique("row", keep="first", maintain_order=True)  # one step a line
        steps = vals.get_column("step").to_numpy()
        back = np.flatnonzero(steps[1:] < steps[:-1]) + 1  # the first line of each launch that went back
        if back.size == 0:
            return []
        # each word belongs to the next place the step goes back, when no training came between
        # (a banner over the next launch; a summary, early stopping, then an evaluation at its end)
        gap = vals.get_column("row").search_sorted(said.get_column("row")).to_numpy()
        nxt = np.searchsorted(back, gap)
        ok = (gap > 0) & (nxt < back.size)
        out = []
        for k in np.flatnonzero(ok)[:10_000]:
            g, j = int(gap[k]), int(back[nxt[k]])
            if j > g and steps[g:j].max() > steps[g - 1]:
                continue  # the launch trained on after it: a word of its own, not of the launch after it
            out.append({"word": said.item(int(k), "word"), "value": said.item(int(k), "value"),
                        "last_step": int(steps[j - 1]), "next_step": int(steps[j]), "row": int(said.item(int(k), "row"))})
        return out[:1000]

    def _last_training_row(self, rows: pl.DataFrame) -> int | None:
        """The row of the log's last value, leaving out the numbers of a failure report: values
        after the last crash, kill or traceback line under keys the run never logged before it
        (torchrun's `exitcode : 1`, `rank : 3`; a native stack trace's `[bt] (3) lib.so(+0x1a)`
        under a Python traceback) report the failure, they are no training. When nothing was
        logged before that line, every value counts."""
        if rows.height == 0:
            return None
        last = int(rows.get_column("row").max())
        if not self.errors or "metric" not in rows.columns:
            return last
        crash = pl.concat(self.errors).filter((pl.col("crash") | pl.col("tb")) & (pl.col("row") < last))
        if crash.height == 0:
            return last
        at = int(crash.get_column("row").max())
        before = rows.filter(pl.col("row") < at).get_column("metric").unique()
        if before.len() == 0:
            return last
        kept = rows.filter((pl.col("row") < at) | pl.col("metric").is_in(before.implode()))
        return int(kept.get_column("row").max())

    def nan_message(self, last_value_row: int | None) -> str | None:
        """The first line after the last value that says values went NaN/inf (`_NAN_MESSAGE`):
        the run that then ended in an error died of it."""
        if not self.errors:
            return None
        after = pl.concat(self.errors).filter((pl.col("row") > (last_value_row if last_value_row is not None else -1))
                                              & pl.col("nanmsg"))
        return after.item(0, "text").replace("\x00", "").strip() if after.height else None

    def meta(self, rows: pl.DataFrame) -> dict:
        """The table meta these signals give: `plan.steps`, `plan.error` (see `detect.ended`) and
        `launch_offsets` (frame rows where a relaunch begins; discovery splits the table there)."""
        meta: dict = {}
        total = self.planned_total()
        if total is not None and self.pattern is not None:
            meta["plan.steps"] = total
            meta["plan.from"] = f"the {self.pattern.name} step lines (N/{total})"
        starts = self.launch_starts()
        if starts:  # frame rows (the value rows keep read order) where a relaunch begins
            meta["launch_offsets"] = rows.get_column("row").search_sorted(pl.Series(starts, dtype=pl.Int64)).to_list()
        last = self._last_training_row(rows)
        died = self.launch_errors(rows) if rows.height and "step" in rows.columns else []
        if died:
            meta["plan.launch_errors"] = died
        words = self.launch_words(rows) if rows.height and "step" in rows.columns else []
        if words:
            meta["plan.launch_words"] = words
        err = self.final_error(last)
        if err is not None:
            meta["plan.error"], meta["plan.error_line_no"] = err[0], err[1] + 1
        nan = self.nan_message(last)
        if nan is not None:
            meta["plan.error_nan"] = shown(nan, newlines=False)
        stop = self.early_stop(rows)
        if stop is not None:
            meta["plan.stopped_by"] = stop
        return meta

    def early_stop(self, rows: pl.DataFrame) -> str | None:
        """The last line saying early stopping ended the run (`_EARLY_STOP`), printed after at least
        `_STOP_SHARE` of the value lines: the run stopped by its own rule, not killed."""
        if not self.errors or rows.height == 0:
            return None
        row = rows.get_column("row")
        said = pl.concat(self.errors).filter(pl.col("stop") & (pl.col("row") >= row.quantile(_STOP_SHARE)))
        return shown(said.item(-1, "text"), newlines=False)[:200] if said.height else None


def of_lines(lines: pl.DataFrame, pattern: LinePattern) -> Signals:
    """The signals of lines held whole (one chunk)."""
    signals = Signals(pattern)
    signals.add(chunk_signals(lines, pattern))
    return signals


def launch_starts(lines: pl.DataFrame, pattern: LinePattern) -> list[int]:
    return of_lines(lines, pattern).launch_starts()


def planned_total(lines: pl.DataFrame, pattern: LinePattern) -> int | None:
    return of_lines(lines, pattern).planned_total()


def final_error(lines: pl.DataFrame, last_value_row: int | None) -> tuple[str, int] | None:
    signals = Signals(None)
    signals.add(ChunkSignals(None, None, _chunk_errors(lines, lambda name, expr, *regexes: expr), _chunk_last(lines)))
    return signals.final_error(last_value_row)


def signal_meta(lines: pl.DataFrame, pattern: LinePattern, rows: pl.DataFrame) -> dict:
    return of_lines(lines, pattern).meta(rows)


TAIL_BYTES = 64 * 1024
"""How much of a log's end `tail_error` reads: the error of a run that crashed before logging
sits at its end (a traceback, then at most a tracker's footer)."""


def tail_error(path) -> tuple[str, int] | None:
    """(error line, 1-based line number) when a text log that gave no values ends in an error
    (a traceback's exception line, a launcher's crash message) within its last `TAIL_BYTES`;
    None for a binary file, one that cannot be read, or one that ends cleanly. What a job that
    crashed before its first logged step leaves: the report must say so, not "nothing read"."""
    from .decoding import clean_bytes, looks_binary

    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            start = max(size - TAIL_BYTES, 0)
            fh.seek(start)
            raw = fh.read()
            if not raw or looks_binary(raw[:4096].strip(b"\x00")):
                return None
            before = 0
            if start:  # the line number of the tail's first whole line: newlines before it
                fh.seek(0)
                left = start
                while left > 0:
                    block = fh.read(min(left, 1 << 20))
                    if not block:
                        break
                    before += block.count(b"\n")
                    left -= len(block)
    except OSError:
        return None
    if start:
        cut = raw.find(b"\n")
        if cut < 0:
            return None
        before += 1
        raw = raw[cut + 1:]
    text = clean_bytes(raw)[0].decode("utf-8", errors="replace")
    found = final_error(split_lines(text), None)
    if found is None:
        return None
    return found[0].replace("\x00", "").strip(), before + found[1] + 1


def _died_before_values(part: pl.DataFrame, nxt: int) -> list[dict]:
    """One died launch for each traceback of `part` (error lines before the first value) but the
    last: its first uncaught exception line (`launch_errors`' fields, `last_step` None)."""
    rows = part.get_column("row").to_numpy()
    tbs = part.filter(pl.col("tb")).get_column("row").to_list()
    out = []
    for a, b in zip(tbs, tbs[1:]):
        exc = part.filter(pl.col("exc") & ~pl.col("tb") & (pl.col("row") > a) & (pl.col("row") < b))
        if exc.height and rows.size:
            out.append({"error": shown(exc.item(0, "text").replace("\x00", "").strip(), newlines=False),
                        "line_no": int(exc.item(0, "line_no")) + 1, "last_step": None, "next_step": nxt})
    return out

