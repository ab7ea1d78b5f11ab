"""A file of bare numbers, one a line (`np.savetxt('loss.txt', losses)`, `f.write(f'{loss}\\n')`),
or a row of them a line with no header (`rewards.csv`: `i,r1,r2`).

No key names the numbers; the file's name does (`loss.txt` holds the loss, `train_loss.log`
the train loss, `rewards.txt` the rewards), as a person reads it. A file whose name says no
such thing (`data.txt`, `labels.txt`) is not claimed: its numbers may be anything. The step is the line's place among the numbers (the
file says nothing else). Blank lines are skipped; a file with any other line is not this
format (the text reader says why it cannot read it).

Rows of several numbers are columns the file names together: each is the file's name and its
place (`rewards_column2`, counted from 1 as a person counts them), except a first column of
whole numbers that counts up by one (restarting at 0 or 1 in appended runs): that is the step.
The numbers of a row may stand apart by commas, tabs, semicolons, runs of spaces (`f'{i:3d} {step:8d}
{r:.1f}'`) or an underscore (`f'{epoch}_{loss}'`): whatever stands between them, the same on every row.
Leading columns of whole numbers that never go down (an epoch, a step, a frame count; an inner one
may start again when an outer one goes up) count the rows: the innermost that never goes down is the
step, else the rows' counts taken together (`epoch, iter`). A word that ends every row (`0,4,-3.4,
ascent`) names the series its row belongs to (`losses_ascent`), as a tag column does in a table.
A counter's name before the row (`epoch 3:0.41`, `step 100 = 2.3`) names its first number, a count.
A row printed as a Python sequence (`print([epoch, i, loss.item()])`: `[0, 10, 2.71]`; a tuple, quoted
numbers, a tensor's or array's repr) is the row of numbers inside its wrapping (`printedrows`).
Rows under an epoch's header line (`print(f'Epoch {epoch}')`, then `print(loss.item())` or `print(f'{loss}, {i}')`
batch after batch; `epoch 0 lr 0.0001` over `i loss` pairs) are counted by it: its number leads each row as
their outer counter, its settings are left out; the one measured column such a loop prints is its loss.
A first line that comments out as many names as the rows hold numbers (`np.savetxt(..., header='iter loss
val_loss')` writes `# iter loss val_loss`) is the header: it names the columns, the file's name need not.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import FormatError
from . import lineprefix
from .base import TEXT_SUFFIXES, Importer, Table, kind_suffix, long_table, to_float
from .commentheader import header_names
from .restartedcounts import restarted_count, unmoved_outer
from .columnshapes import (alone, counted_rows, falling_column, loss_name, one_column_reason, rising_score, score_name,
                           unnamed_reason)
from .decoding import text_head
from .knowncolumns import documented
from .seriesnames import plain_name
from .printedrows import printed_rows, trailed_rows, untrail_series, unwrap_series
from .csvlogs import COMMENT_LINE, stem_name as _name_of

SUFFIXES = TEXT_SUFFIXES | {".csv", ".tsv", ".dat"}
MIN_LINES = 10
"""Fewer numbers than this are no curve (a score written once per run)."""
_ONE = r"[ \t]*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))[ \t]*"
_WORD = r"[ \t]*[A-Za-z][\w.-]*[ \t]*"
_SEP = r"(?:[,;\t_]|[ \t]+)"
_ROW = re.compile(rf"{_ONE}(?:{_SEP}{_ONE})*(?:{_SEP}{_WORD})?(?:[,;][ \t]*)?")
"""A row of bare numbers (`np.savetxt(..., delimiter=',')`, `writer.writerow([i, r1, r2])`), perhaps
ending in a word that tags it or in the separator a loop writes after every value: no header."""
_LEAD = r"[ \t]*(?i:epoch|step|iter|iteration|episode)[ \t]*"
_COUNTED = re.compile(rf"{_LEAD}{_ONE}[:=]?{_ONE}(?:{_SEP}{_ONE})*")
"""A row led by its counter's name (`epoch 3:0.41`): the name says what the first number counts."""
_FIELD = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|(?i:nan|inf)\b|[A-Za-z][\w.-]*"


_SETTING = r"[ \t]*[,;|]?[ \t]*[A-Za-z_][\w.-]*[ \t]*[:=]?[ \t]*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_HEADER = (rf"^[-=*# \t]*(?i:epoch)[ \t]*[:#]?[ \t]*(\d+)(?:[ \t]*/[ \t]*\d+)?(?:{_SETTING})*[ \t]*:?[-=*# \t]*$")
"""An epoch's header line over its rows (`Epoch 0`, `Epoch: 3/10`, `== epoch 2 ==`, `epoch 0 lr 0.0001`):
its number counts the rows below it; the settings after it are not read."""


def epoch_headed(lines: pl.Series) -> pl.Series | None:
    """Rows of bare numbers under epoch headers, each led by its header's epoch (`0\t10.19, 100`), the
    headers gone; None unless the first line is such a header and every other line a row of numbers.
    A single epoch's header leads nothing (a count that never moves counts no rows). A few lines without a
    digit (`Done!`, a banner) are the loop's words, not rows."""
    wordy = ~lines.str.contains(r"\d")
    if wordy.sum() > max(2, lines.len() // 20):
        return None
    lines = lines.filter(~wordy)
    epoch = lines.str.extract(_HEADER, 1)
    is_head = epoch.is_not_null()
    if lines.len() < 2 or not is_head[0]:
        return None
    rows = lines.filter(~is_head)
    if not rows.len() or rows.len() < is_head.sum() or not bool(rows.str.contains(f"^(?:{_ROW.pattern})$").all()):
        return None
    if epoch.drop_nulls().n_unique() == 1:
        return rows
    led = epoch.cast(pl.Int64).forward_fill().filter(~is_head).cast(pl.String)
    return led + "\t" + rows


_COMMENTED = re.compile(r"^[ \t]*#[ \t]*(?P<names>[A-Za-z_][^\n]*)$")


def comment_lead(lines: list[str]) -> int:
    """How many comment lines (`# run 3, lr=1e-3`, `% 2024-05-01`) a script wrote above its rows: a
    person reads past them. The last of them stays when it is the rows' commented header."""
    k = next((i for i, ln in enumerate(lines) if not COMMENT_LINE.match(ln)), len(lines))
    if k == 0 or k == len(lines):
        return 0
    return k - 1 if _commented_header(lines[k - 1:k + 1]) is not None else k


def _commented_header(lines: list[str]) -> list[str] | None:
    """The names of a commented header over rows as wide (`# num_iter params loss`), else None."""
    if len(lines) < 2:
        return None
    width = _width(lines[1])
    m = _COMMENTED.match(lines[0])
    names = [n for n in re.split(r"[,;\t]|[ \t]{2,}|[ \t]+", m["names"].strip()) if n] if m else []
    if len(names) >= 2 and not any(re.fullmatch(_ONE, n) for n in names) and len(names) == width:
        return names
    return header_names(lines[0], width)  # `% mean class accuracy\t` (Torch7 optim.Logger), one name a column


def _messages(text: str, whole: bool) -> list[str]:
    """The file's lines as a person reads them: a logger's or launcher's prefix and a progress bar's
    redraws before the message left out (`lineprefix`); a file whose lines end in `\r` alone is split
    there. Not `whole`: the last line may be cut, so it is left out."""
    lines = text.split("\n") if "\n" in text else text.split("\r")
    lines = lines if whole else lines[:-1]
    return lineprefix.strip(lines)


class BareNumbersImporter(Importer):
    """One number a line, named by the file."""

    name = "bare-numbers"
    looks_for = ("*.txt, *.log, *.out, *.dat files of numbers named by the file (loss.txt: one a line; rows of them; "
                 "a few long rows, a series each) or by a name over each block")

    def claims(self, path: Path, head: bytes) -> bool:
        if kind_suffix(path) not in SUFFIXES or not path.stem or b"\x00" in head[:1024]:
            return False
        from ..frame import infer_role, infer_roles

        whole = len(head) < 4096  # the whole file is in its head: its last line is complete
        lines = [ln for ln in _messages(text_head(head), whole) if ln.strip()]
        lines = lines[comment_lead(lines):]
        if lines and glued_label(lines) is not None:  # `loss值7.65` over bare numbers: the word names them
            return len(lines) >= (MIN_LINES if whole else 2)
        if _blocks(lines, whole) is not None:
            return True
        headed = epoch_headed(pl.Series(lines, dtype=pl.String))
        if headed is not None:  # the epoch's header counts the rows: a training loop's printout
            return headed.len() >= (MIN_LINES if whole else 2) and headed.map_elements(_width, pl.Int64).n_unique() == 1
        lines = printed_rows(lines, _ROW, _width) or lines  # `[0, 10, 2.71]` a line: the numbers inside
        lines = trailed_rows(lines) or lines  # `0 2.72 15.2 Best at epoch 0`: a note after the numbers
        header = _commented_header(lines)
        if header is not None:  # the header names the columns: one must name a measure (or stand for one: `total`)
            if all(r == "other" for r in infer_roles(header).values()):
                return False
            lines = lines[1:]
        elif infer_role(_name_of(path)) == "other" and not _counted(
                [re.findall(_FIELD, ln) for ln in lines[:200]] if all(_ROW.fullmatch(ln) for ln in lines[:200]) else []) \
                and not (lines and all(re.fullmatch(_ONE, ln) for ln in lines[:200]) and alone(path)) \
                and not (_LOG_NAME.search(path.stem) and alone(path)):
            return False  # named by nothing, no counter leads its rows, and not a lone column: its shape cannot name it
        if not whole and not lines:  # one line longer than the head: a row of numbers, maybe (`writerow(history)`)
            part = text_head(head).strip()
            return bool(re.fullmatch(rf"(?:{_ONE}{_SEP}){{{MIN_LINES},}}[-+\d.eE]*", part))
        if lines and len(lines) < MIN_LINES and all(_ROW.fullmatch(ln) for ln in lines) and \
                min(_width(ln) for ln in lines) >= MIN_LINES and len({_width(ln) for ln in lines}) == 1:
            return True  # a few long rows: a series a row (`writer.writerow(history)`, `np.savetxt(f, losses.T)`)
        fewest = 1 if header is not None else MIN_LINES if whole else 2  # a header names even one row (a run cut short)
        return len(lines) >= fewest and (all(_ROW.fullmatch(ln) for ln in lines) or all(
            _COUNTED.fullmatch(ln) for ln in lines)) and len({_width(ln) for ln in lines}) == 1

    def read(self, path: Path) -> list[Table]:
        lines = pl.Series("text", _messages(text_head(path.read_bytes()), True))
        return self.read_lines(path, lines.filter(lines.str.strip_chars() != ""))

    def read_lines(self, path: Path, lines: pl.Series) -> list[Table]:
        """The table of a file's non-blank lines (all of them, or the rows `barerows` found among its other text)."""
        from ..frame import infer_role

        lines = lines.slice(comment_lead(lines.head(200).to_list()))
        glued = glued_label(lines.head(200).to_list())
        if glued is not None:
            lines = lines.scatter(0, _GLUED.fullmatch(lines[0])["num"].strip())
        blocks = None if glued else _blocks(lines.to_list(), True)
        if blocks is not None:  # a name on its own line over its numbers, a block a series
            parts = [long_table(np.arange(len(v), dtype=np.int64), [None] * len(v), [k] * len(v), np.asarray(v))
                     for k, v in blocks.items()]
            return [Table(frame=pl.concat(parts), source=path, format=self.name, run_key=str(path),
                          segment_key=str(path), meta={"step.from": "order", "metric.from": "the name over each block"})]
        headed = epoch_headed(lines)
        if headed is not None:
            lines = headed
        header = _commented_header(lines.head(2).to_list())
        if header is not None:
            lines = lines.slice(1)
        elif printed_rows(lines.head(200).to_list(), _ROW, _width) is not None:
            lines = unwrap_series(lines)  # rows printed as sequences: the numbers inside their wrapping
        if trailed_rows(lines.head(200).to_list()) is not None:
            lines = untrail_series(lines)  # the same note after each row's numbers
        if _COUNTED.fullmatch(lines[0]):  # `epoch 3:0.41`: the counter's name said, its number kept
            lines = lines.str.replace(f"^{_LEAD}", "").str.replace(r"^([^:=]*)[:=]", "$1 ")
        bad = lines.filter(~lines.str.contains(f"^(?:{_ROW.pattern})$"))
        if bad.len():
            raise FormatError(path, f"not one row of numbers a line (line {bad[0][:60]!r} holds more)")
        if lines.len() < MIN_LINES and header is None and min(_width(ln) for ln in lines) >= MIN_LINES:
            return [self._rows_as_series(path, lines)]
        if lines.len() < MIN_LINES and header is None:
            raise FormatError(path, f"{lines.len()} numbers, fewer than {MIN_LINES}: no curve")
        fields = lines.str.extract_all(_FIELD)
        width = _width(lines[0])
        if fields.list.len().n_unique() != 1:
            raise FormatError(path, f"the rows do not all hold {width} numbers")
        cols = fields.list.to_struct(fields=[f"field_{k}" for k in range(width)]).struct.unnest()
        tag = None
        last = cols.to_series(width - 1)
        if width > 1 and not bool(cols.select(to_float(pl.col(last.name)).is_not_null().any()).item()):
            tag, cols = last, cols.drop(last.name)  # a word ending each row names its series
        cols = cols.select(to_float(pl.col(c)).alias(c) for c in cols.columns)
        if cols.select(pl.any_horizontal(pl.all().is_null()).any()).item():
            raise FormatError(path, f"the rows do not all hold {cols.width} numbers")
        n, nums = cols.height, cols.width
        steps, meta = np.arange(n, dtype=np.int64), {"step.from": "order", "metric.from": "the file's name"}
        counters = _counters(cols)
        # a column's place, counted as a person counts it on the printed row (a header's epoch leads no row)
        place = {c: k - (headed is not None and k > 0) for k, c in enumerate(cols.columns)}
        if counters:
            steps, how = _steps(cols.select(counters), tag)
            if counters == cols.columns[-1:]:
                how = "the last column (it counts the rows)"
            cols, meta["step.from"] = cols.drop(counters), how
        name = plain_name(glued or _name_of(path))  # `loss_log.txt` holds the loss: the word for the file kept is no measure
        names = [name] if cols.width == 1 and nums == 1 else [f"{name}_column{place[c] + 1}" for c in cols.columns]
        known = documented(path.name, nums) if header is None and tag is None and counters == [f"field_{0}"] else None
        if known is not None:  # a tool's documented columns (GPUMD's `loss.out`): the names its users read
            header = list(known)
            meta["metric.from"] = f"the columns {path.name} is documented to hold"
        if header is None and tag is None and infer_role(name) == "other":  # named by nothing: by its shape
            lone = nums == 1 and headed is None  # one number a line: a curve in line order (`alone` in its folder)
            # a training log's rows alone in their folder (`train_log.csv` of `np.savetxt` each epoch): a row a
            # step in line order, as a lone column's are
            ordered = counters or lone or (_LOG_NAME.search(path.stem) is not None and alone(path))
            falls = falling_column(cols) if ordered else None
            if falls is None and headed is not None and cols.width == 1:
                falls = cols.columns[0]  # the one number a loop prints batch after batch under its epoch: the loss
            # a rise is a score only where the file is what its folder holds: beside named logs a rising
            # unnamed column may be anything (an index, a schedule, a count of samples)
            # (a column that rises in line order with no counter beside it may be any index: only a fall names one)
            rises = rising_score(cols) if falls is None and (counters or lone) and alone(path) else None
            if falls is None and rises is None and counters and _LOG_NAME.search(path.stem):
                falls = first_measured(cols)  # a training log's counted rows: the first measured number, its loss
            if falls is None and rises is None:
                raise FormatError(path, one_column_reason(n) if lone else unnamed_reason(n, nums, bool(counters)))
            if falls is not None:
                names[cols.columns.index(falls)] = f"{name}_loss" if lone else loss_name(name, place[falls] + 1)
                meta["metric.from"] = "the column's shape (it falls beside the counter: the loss)"
            else:
                names[cols.columns.index(rises)] = score_name(name, None if lone else place[rises] + 1)
                meta["metric.from"] = "the column's shape (it rises within [0, 1] or [0, 100] beside the counter: a score)"
        if header is not None:  # the header's names, the counters' left out as their columns are
            names = [header[place[c]] for c in cols.columns]
            meta["metric.from"] = meta["metric.from"] if known else "the commented header"
        tags = tag.to_numpy() if tag is not None else None
        parts = []
        for k, m in enumerate(names):
            values = cols.to_series(k).to_numpy()
            if tags is None:
                parts.append(long_table(steps, [None] * n, [m] * n, values))
                continue
            for t in dict.fromkeys(tags):
                keep = tags == t
                label = f"{name}_{t}" if cols.width == 1 else f"{m}_{t}"
                parts.append(long_table(steps[keep], [None] * int(keep.sum()), [label] * int(keep.sum()),
                                        values[keep]))
            meta["metric.from"] = "the file's name and the word ending each row"
        frame = pl.concat(parts)
        return [Table(frame=frame, source=path, format=self.name, run_key=str(path), segment_key=str(path),
                      meta=meta)]


    def _rows_as_series(self, path: Path, lines: pl.Series) -> Table:
        """A few long rows of numbers: each row one series (all its values on one line, as
        `writer.writerow(history)` or a transposed `np.savetxt` leave them), named by the file and
        the row's place (`losses_row2`), its values' places the steps."""
        name = _name_of(path)
        rows = [[float(x) for x in re.findall(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|(?i:nan|inf)", ln)]
                for ln in lines.to_list()]
        if len({len(r) for r in rows}) != 1:
            raise FormatError(path, "its rows do not all hold as many numbers")
        parts = [long_table(np.arange(len(r), dtype=np.int64), [None] * len(r),
                            [name if len(rows) == 1 else f"{name}_row{k + 1}"] * len(r), np.asarray(r))
                 for k, r in enumerate(rows)]
        return Table(frame=pl.concat(parts), source=path, format=self.name, run_key=str(path), segment_key=str(path),
                     meta={"step.from": "the place in its row", "metric.from": "the file's name and the row's place"})


_GLUED = re.compile(rf"[ \t]*(?P<label>[^\W\d][^\d=:\uff1a]*?)[ \t]*[:=\uff1a]?(?P<num>{_ONE})")


def glued_label(lines: list[str]) -> str | None:
    """`print('loss值', loss)` once, then the bare numbers (`loss值7.658917` over `1.184213`): the word glued
    to the first number names the series, when it names a measure and every line after is one bare number."""
    from ..frame import infer_role

    m = _GLUED.fullmatch(lines[0]) if len(lines) >= 2 else None
    if m is None or not all(re.fullmatch(_ONE, ln) for ln in lines[1:200]):
        return None
    label = m["label"].strip()
    return label if infer_role(label) != "other" else None


_NAME_LINE = re.compile(r"[ \t]*[A-Za-z][\w./\- ]{0,60}?:?[ \t]*")


def _blocks(lines: list[str], whole: bool) -> dict[str, list[float]] | None:
    """`for key in history: f.write(f"{key}\\n"); for v in history[key]: f.write(f"{v}\\n")`: a name on a
    line of its own, then its numbers one a line, block after block. The blocks (name -> numbers)
    when every line is a name or a number, the first a name, every block at least `MIN_LINES` long
    (the last may be cut by the head) and one name says a measure; else None."""
    from ..frame import infer_roles

    if not lines or not _NAME_LINE.fullmatch(lines[0]) or re.fullmatch(_ONE, lines[0]):
        return None
    blocks: dict[str, list[float]] = {}
    current = None
    for ln in lines:
        if re.fullmatch(_ONE, ln):
            blocks[current].append(float(ln))
        elif _NAME_LINE.fullmatch(ln):
            current = ln.strip().rstrip(":").strip()
            if current in blocks:
                return None
            blocks[current] = []
        else:
            return None
    sizes = list(blocks.values())
    if any(len(v) < MIN_LINES for v in (sizes if whole else sizes[:-1])) or not sizes[0]:
        return None
    if all(r == "other" for r in infer_roles(list(blocks)).values()):
        return None
    return blocks


_LOG_NAME = re.compile(r"(?i)train|log|stdout|nohup")
"""A file named for a training's printout (`trainlog.txt`, `train.txt`, `log.txt`): its rows are the loop's.
A `history.txt` or `output.txt` may hold any table (a kept series, a model's outputs): only a falling or a
score-like column is read there."""


def first_measured(cols: pl.DataFrame) -> str | None:
    """The first column of fractional, finite values (no count, no flag) beside a training loop's counters: the
    loss such a loop prints first (`print(epoch, i, loss.item(), ...)`), whether it falls or stays where it began
    (a run that never learned is still read)."""
    for c in cols.columns:
        col = cols[c]
        if not bool(col.is_finite().all()) or bool((col % 1 == 0).all()) or col.n_unique() < 3:
            continue
        d = col.diff().drop_nulls()
        if bool((d - d[0]).abs().max() < 1e-9 * max(1.0, abs(d[0]))) or bool((d >= 0).all()):
            continue  # a ramp (a schedule, a clock) or a column that only rises: no loss
        return c
    return None


def _width(line: str) -> int:
    return len(re.findall(_FIELD, line))


def _counted(rows: list[list[str]]) -> bool:
    """`counted_rows`, or so once the leading columns that stay one whole number are set aside: an outer
    count (the epoch) that has not moved yet in the file's head, its inner count rising (`1  0  0.73`)."""
    if counted_rows(rows):
        return True
    k = 0
    while rows and len(rows[0]) - k > 2 and len({r[k] for r in rows}) == 1 and re.fullmatch(r"\d+", rows[0][k]):
        k += 1
    return k > 0 and (counted_rows([r[k:] for r in rows]) or restarted_count([r[k:] for r in rows]))


def _counters(cols: pl.DataFrame) -> list[str]:
    """The leading columns that count the rows, leaving at least one column of values; else a last
    column of whole numbers that rise every row after columns of measured (fractional) values
    (`f.write(str(loss) + "," + str(index))`: the value first, then its count)."""
    out: list[str] = []
    for k, c in enumerate(cols.columns[:-1]):
        if not (_counts(cols[c]) or unmoved_outer(cols, k, _counts)):
            break
        out.append(c)
    if not out and cols.width > 1 and all(not bool((cols[c] % 1 == 0).all()) for c in cols.columns[:-1]):
        last = cols[cols.columns[-1]]  # (after measured values only: whole numbers before it may be counts themselves)
        if _counts(last) and bool((last.diff().drop_nulls() > 0).all()):
            out = [cols.columns[-1]]
    elif out and cols.width > len(out) + 1 and all(
            not bool((cols[c] % 1 == 0).all()) for c in cols.columns[len(out):-1]):
        # `print([epoch, loss, global_step])`: after the leading counters and measured values, a last column
        # rising by one stride every row is the finest count, the step (a clock's whole seconds keep no stride)
        # (`print(f'{loss}, {i}')` under an epoch: the stride holds within each count of the leading counters)
        within = cols.select(pl.all_horizontal(pl.col(c) == pl.col(c).shift(1) for c in out)).to_series()
        d = cols[cols.columns[-1]].diff().filter(within.fill_null(False))
        if _counts(cols[cols.columns[-1]]) and d.len() and bool((d == d[0]).all()) and d[0] > 0:
            out = [*out, cols.columns[-1]]
    return out


def _counts(col: pl.Series) -> bool:
    """Whole numbers that never go down, maybe starting again at 0 or 1 or where they first started (appended
    runs: GPUMD's generation counts from 100 again; an inner count each time an outer one goes up), rising at
    least once: a row counter."""
    if col.null_count() or not bool((col % 1 == 0).all()):
        return False
    d = col.diff().drop_nulls()
    again = col.slice(1)
    restart = (d < 0) & (again.is_in([0.0, 1.0]) | (again <= col[0]))
    if not bool(((d >= 0) | restart).all()) or not bool((d > 0).any()):
        return False
    return True


def _steps(counters: pl.DataFrame, tag: pl.Series | None) -> tuple[np.ndarray, str]:
    """The innermost counter when it never goes down and a series' rows never repeat its count; else
    the rows' counts together, numbered in order (`epoch, iter`, its iter starting again each epoch)."""
    inner = counters.to_series(counters.width - 1)
    key = counters.with_columns(pl.lit("").alias("_tag") if tag is None else tag.alias("_tag"))
    again = pl.all_horizontal(pl.col(c) == pl.col(c).shift(1).over("_tag") for c in counters.columns)
    if key.select(again.fill_null(False).any()).item():  # a series' row counted as its row before
        return np.arange(counters.height, dtype=np.int64), "order"
    d = inner.diff().drop_nulls()
    if counters.width == 1 or bool((d >= 0).all()):
        how = "the first column (it counts the rows)" if counters.width == 1 else \
            f"column {counters.width} (it counts the rows)"
        return inner.cast(pl.Int64).to_numpy(), how
    new = pl.any_horizontal(pl.col(c) != pl.col(c).shift(1) for c in counters.columns).fill_null(True)
    steps = counters.select(new.cast(pl.Int64).cum_sum() - 1).to_series().to_numpy()
    back = _counted_back(counters.to_numpy())
    if not back.any():
        return steps, "the counting columns together"
    # a relaunch appended to the file counts again from its start (`0, 24` then `0, 0`): the numbering
    # starts again with it, so the restart a person sees stays in the steps
    launch = np.cumsum(back)
    starts = np.flatnonzero(np.r_[True, back[1:]])
    return steps - steps[starts][launch], "the counting columns together, again from each relaunch"


def _counted_back(counts: np.ndarray) -> np.ndarray:
    """Per row, whether its counts (outer first) stand before the row above's, as a relaunch's first row
    does (`0, 24` then `0, 0`); an inner count starting again under a new outer one is no step back."""
    d = np.diff(counts, axis=0)
    first = np.argmax(d != 0, axis=1)
    return np.r_[False, d[np.arange(len(d)), first] < 0]
