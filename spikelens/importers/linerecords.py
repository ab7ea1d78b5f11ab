"""Any console log read through its line structure, not a named pattern.

A log repeats a few kinds of line. Each shape of line (`lineshapes`: digits written
as `0`) is tokenised once (`linetokens.tokenise`) into a template: the spans of its
metric values, of the counters that may give its step and of its time stamp. Every
line of a chunk is then sliced at its shape's spans, one column per value slot, and
the values interleaved into rows (NumPy), as the named patterns' fields are.

The step is chosen for the whole file once every line is read, from what its record
lines hold (`steps`): a key that counts steps (`step`, `iter`, `global_step`,
`num_updates`, ...), else a counter `N/M` (composed with the epoch when one is
printed on the line or on a banner before it: MMEngine's `Epoch(train) [1][50/1000]`,
MiniMind's `Epoch:[1/1](10/39695)`, Keras' `Epoch 3/10` then `100/100 ... loss:`),
else the epoch, else the order of the lines. Evaluation lines that print no step of
their own, and lines with no counter (HF's `{'loss': ...}` between tqdm bars), take the
step of the line before them that had one. The plan is the counter's total (`N/M`),
else what a banner states (`max_steps`, `Total optimization steps = 1,000`,
`--train-iters 5000`). Tracebacks and crash messages after the last record are the
signals the named patterns give (`textsignals`).

`sniff` decides from a file's head whether it is such a log: at least a few lines
with a step (or a counter) and keyed numbers whose key set repeats; a file where many
lines hold numbers that cannot be read so gets a reason instead, said to the user.
"""
from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import polars as pl

from . import lineshapes, redraws, textsignals
from .base import to_float
from .linetokens import _EVAL_NAMED, Template, _eval_name, header_cells, table_row, tokenise
from .patterns import LinePattern

CONSOLE = LinePattern(name="console log", rules=())
"""What the signals (`textsignals`) are gathered with: no plan regex, no launch marker."""

_PLAN = re.compile(r"(?i)(?:max[_ ]steps|max[_ ]iters?|total[_ ]steps|train[_-]iters|num[_ ]training[_ ]steps"
                   r"|total optimization steps|total training steps)\W{0,3}\s*[:=]?\s*(\d[\d,]*)")
_PLAN_HINT = "(?i)max[_ ]steps|max[_ ]iter|total[_ ]steps|train[_-]iters|num[_ ]training[_ ]steps|total optimization|total training steps"
_EPOCH_PLAN = re.compile(r"(?i)\b(?:max|num|total|n|nb)[_ ]?(?:train(?:ing)?[_ ])?epochs?\s*[:=]\s*(\d+)\b")
"""A run's epoch plan as its settings print it (`max_epoch: 150`, `num_epochs=100`)."""
_EPOCH_PLAN_SAID = re.compile(r"(?i)\b(?:train(?:ing)?|start(?:ing)?(?: training)?)\b[^\d\n]{0,12}?\b(\d+) epochs?\b"
                              r"|(?i:\bepochs['\"]?\s*[:=]\s*)(\d+)(?:\s*$|\s*[,;|}]|\s+[^\s/\d])")
"""A run's epoch plan as a banner says it (`Starting training — 50 epochs`, `Training for 100 epochs`,
`Epochs: 3`: the plural counts them), or the settings a script prints as a dict or JSON (`'epochs': 100,`)."""
_ANCHORS = ("step", "inner", "inner_total", "epoch", "epoch_total")
_BAR_SPEEDS = frozenset({"it/s", "s/it", "ex/s", "samples/s", "img/s"})
"""What a progress bar alone prints beside its counter: its speed."""
CUT_MARK = "\x00"
"""What `textlogs` appends to a last line the file's end cut off (its `_CUT`)."""
_MAX_BOOK = 200_000
"""Shapes remembered for a file; a log of free text (nearly one shape a line) starts afresh past it."""


class ShapeBook:
    """The templates of the shapes seen in one file, and the metric names they use
    (a code each). Parse threads share it; new shapes are learnt under a lock."""

    def __init__(self, headers: Iterable[list[tuple[str, int, int]]] = ()) -> None:
        self.ids: dict[str, int] = {}
        self.templates: list[Template] = []
        self.names: dict[str, int] = {}
        self.kinds: dict[frozenset, int] = {}
        """Record kinds: the set of metric names a line holds."""
        self.headers: dict[int, list[tuple[str, int, int]]] = {}
        """Shapes that are a table's header row, and their columns."""
        self.rowish: set[int] = set()
        """Shapes with numbers no key names: maybe a table's rows."""
        self.preset = list(headers)
        """Header rows seen in the file's head: for rows whose chunk holds no header."""
        self.composed: dict[tuple[int, int], int | None] = {}
        self._lock = threading.Lock()

    def code(self, name: str) -> int:
        if name not in self.names:
            self.names[name] = len(self.names)
        return self.names[name]

    def learn(self, keys: list[str], examples: list[str], above: list[str | None] | None = None) -> list[int]:
        """The id of each key (a shape, maybe refined, see `parse_chunk`), tokenising an
        example line of each key not seen yet."""
        with self._lock:
            if len(self.ids) > _MAX_BOOK:
                self.ids = {}
                self.templates = []
                self.headers, self.rowish, self.composed = {}, set(), {}
            out = []
            for i, (key, example) in enumerate(zip(keys, examples)):
                sid = self.ids.get(key)
                if sid is None:
                    sid = self.ids[key] = len(self.templates)
                    t = tokenise(example)
                    for name, _, _ in t.values:
                        self.code(name)
                    self.templates.append(t)
                    head = (header_cells(example, above[i] if above else None)
                            if not t.values or t.unkeyed == 0 else None)
                    if head is not None:
                        self.headers[sid] = head
                    elif t.unkeyed >= 2:
                        self.rowish.add(sid)
                out.append(sid)
            return out

    def compose(self, header: int, row: int, example: str) -> int | None:
        """The shape id of a table row under a header shape (-1: a header of the file's head
        it lines up with), or None when the row does not line up with it."""
        with self._lock:
            key = (header, row)
            if key not in self.composed:
                heads = [self.headers[header]] if header >= 0 else self.preset
                t = next((t for t in (table_row(example, h) for h in heads) if t is not None), None)
                sid = None
                if t is not None:
                    for name, _, _ in t.values:
                        self.code(name)
                    sid = len(self.templates)
                    self.templates.append(t)
                self.composed[key] = sid
            return self.composed[key]

    def table(self, sids: list[int]) -> tuple[pl.DataFrame, int]:
        """One row per shape id: the spans of its anchors (`step.s`, `step.n`, ...), its
        stamp, whether it is an evaluation line, and per value slot k its span and name
        code (`s{k}`, `n{k}`, `c{k}`); and the number of slots."""
        temps = [self.templates[i] for i in sids]
        width = max((len(t.values) for t in temps), default=0)
        with self._lock:
            kinds = [self.kinds.setdefault(frozenset(n for n, _, _ in t.values), len(self.kinds)) for t in temps]
        cols: dict[str, list] = {"_sid": sids, "evaluation": [t.evaluation is not None for t in temps], "kind": kinds,
                                 "announce": [t.announces for t in temps]}
        for name in _ANCHORS + ("stamp",):
            spans = [_span(t, name) for t in temps]
            cols[f"{name}.s"] = [s[0] if s else None for s in spans]
            cols[f"{name}.n"] = [s[1] if s else None for s in spans]
        for k in range(width):
            vals = [t.values[k] if k < len(t.values) else None for t in temps]
            cols[f"s{k}"] = [v[1] if v else None for v in vals]
            cols[f"n{k}"] = [v[2] if v else None for v in vals]
            cols[f"c{k}"] = [self.names[v[0]] if v else None for v in vals]
        schema = {"_sid": pl.Int64, "evaluation": pl.Boolean, "kind": pl.Int32, "announce": pl.Boolean,
                  **{c: pl.Int64 for c in cols if c not in ("_sid", "evaluation", "kind", "announce")}}
        return pl.DataFrame(cols, schema=schema), width


def _span(t: Template, name: str) -> tuple[int, int] | None:
    if name == "step":
        return t.step[1:] if t.step else None
    return getattr(t, name)


# ------------------------------------------------------------------ one chunk


@dataclass
class ChunkOut:
    lines: pl.DataFrame
    """Lines with an anchor or a value: `row`, `step`, `inner`, `inner_total`, `epoch`,
    `epoch_total` (Int64, null where absent), `evaluation`, `values` (how many), `wall_time`."""
    rows: pl.DataFrame
    """Value rows: `row` (Int32), `pos` (Int16), `code` (UInt32), `value`."""
    signals: textsignals.ChunkSignals
    plan: int | None
    """The last plan a banner line of the chunk states."""
    epochs: int | None = None
    """The first epoch plan a setting of the chunk states (`max_epoch: 150`)."""


def parse_chunk(chunk: pl.DataFrame, book: ShapeBook, known: dict) -> ChunkOut:
    """One chunk of lines (`row`, `line_no`, `text`, maybe `shape`) read through the
    templates of its shapes."""
    shape = chunk.get_column("shape") if "shape" in chunk.columns else lineshapes.shapes_of(chunk.get_column("text"))
    chunk = chunk.drop("shape", strict=False)
    text = chunk.get_column("text")
    above = text.zip_with(text.str.strip_chars() != "", pl.Series([None], dtype=pl.String)).shift(1).forward_fill()
    first = pl.DataFrame({"shape": shape, "text": text, "above": above}).unique("shape", keep="first",
                                                                                maintain_order=True)
    shapes = first.select("shape", _shape=pl.int_range(pl.len(), dtype=pl.Int64))
    local = shape.to_frame("shape").join(shapes, on="shape", how="left", maintain_order="left").get_column("_shape")
    chunk = chunk.with_columns(local)
    signals = textsignals.chunk_signals(chunk, CONSOLE, shapes, known)
    def said(name: str, regex: str) -> pl.Expr:  # a line test answered once per shape (`lineshapes.per_shape`)
        return lineshapes.per_shape(shapes, pl.col("text").str.contains(regex), [regex], known.setdefault(name, {}))

    plan = _chunk_plan(chunk, said("console plan", _PLAN_HINT))
    epochs_said = said("console epochs", "(?i)epoch")

    sids = book.learn(first.get_column("shape").to_list(), first.get_column("text").to_list(),
                      first.get_column("above").to_list())
    named = {i: book.templates[sid].named_by_digits for i, sid in enumerate(sids) if book.templates[sid].named_by_digits}
    if named:  # keys with digits (`top1`, `loss_0`): one shape may name other metrics, told apart by those keys
        key = _refined(chunk.with_columns(shape.alias("_text_shape")), named)
        first = chunk.with_columns(shape.alias("_text_shape")).select(key.alias("key"), "text").unique("key", keep="first", maintain_order=True)
        keyed = first.select("key", _sid=pl.Series(book.learn(first.get_column("key").to_list(),
                                                               first.get_column("text").to_list()), dtype=pl.Int64))
        ids = chunk.with_columns(shape.alias("_text_shape")).select(key.alias("key")).join(keyed, on="key", how="left", maintain_order="left").get_column("_sid")
        sids = keyed.get_column("_sid").to_list()
    else:
        by_local = pl.Series(sids, dtype=pl.Int64)
        ids = by_local.gather(chunk.get_column("_shape"))
    if book.rowish and (book.headers or book.preset):
        ids = _tabled(chunk.get_column("text"), ids.cast(pl.Int64), book)
        sids = ids.unique(maintain_order=True).to_list()
    chunk = chunk.with_columns(ids.alias("_sid"))
    sids = list(dict.fromkeys(sids))

    table, width = book.table(sids)
    joined = chunk.select("row", "text", "_sid").join(table, on="_sid", how="left", maintain_order="left")
    own_anchor = pl.any_horizontal([pl.col(f"{a}.s").is_not_null() for a in _ANCHORS])
    wanted = own_anchor | (pl.col("s0").is_not_null() if width else pl.lit(False)) | pl.col("announce")
    # a last line cut off by the end of the file (textlogs marks it with a NUL) is no record: its last
    # number may be cut ('loss=0' of 'loss=0.500') and its step key lost (it would take the step
    # before it); as a watch does with a half-written line, it is left for the next write
    cut_off = pl.col("text").str.ends_with(CUT_MARK)
    joined = joined.filter(wanted & ~cut_off)
    if "line_no" in chunk.columns:  # a segment a later `\r` redraw of its line overwrites (`redraws`)
        joined = _shown(joined, chunk.select("row", "line_no"), book)
    text = pl.col("text")

    def cut(name: str) -> pl.Expr:
        return text.str.slice(pl.col(f"{name}.s"), pl.col(f"{name}.n"))

    has_stamp = joined.get_column("stamp.s").null_count() < joined.height
    separated = any(book.templates[sid].separated for sid in sids)
    floated = any(book.templates[sid].floated for sid in sids)
    lines = joined.select(
        pl.col("row").cast(pl.Int32),
        *[_count(cut(a), separated, floated).alias(a) for a in _ANCHORS],
        "evaluation", "kind", "announce", redrawn=pl.col("redrawn") if "redrawn" in joined.columns else pl.lit(False),
        values=pl.sum_horizontal([pl.col(f"s{k}").is_not_null() for k in range(width)]) if width else pl.lit(0),
        wall_time=cut("stamp") if has_stamp else pl.lit(None, pl.Float64),
    )
    if has_stamp:
        lines = lines.with_columns(wall_time=wall_times(lines.get_column("wall_time")))
    if width == 0 or joined.height == 0:
        rows = pl.DataFrame(schema={"row": pl.Int32, "pos": pl.Int16, "code": pl.UInt32, "value": pl.Float64})
        return ChunkOut(lines, rows, signals, plan, _stated_epochs(chunk, epochs_said))
    raw = joined.select([text.str.slice(pl.col(f"s{k}"), pl.col(f"n{k}")).alias(f"v{k}") for k in range(width)])
    values = [numbers(raw.get_column(f"v{k}")) for k in range(width)]
    codes = [joined.get_column(f"c{k}") for k in range(width)]
    n = joined.height
    matrix = np.column_stack([v.fill_null(np.nan).to_numpy() for v in values]).ravel()
    code = np.column_stack([c.fill_null(-1).to_numpy() for c in codes]).ravel()
    present = code >= 0
    for k, v in enumerate(values):  # a slot whose text did not read as a number is not a value
        if v.null_count() > codes[k].null_count():
            bad = (v.is_null() & codes[k].is_not_null()).to_numpy()
            present.reshape(n, width)[:, k] &= ~bad
    line = np.repeat(np.arange(n, dtype=np.int64), width)[present]
    pos = np.tile(np.arange(width, dtype=np.int16), n)[present]
    rows = pl.DataFrame({"row": joined.get_column("row").cast(pl.Int32).to_numpy()[line], "pos": pos,
                         "code": code[present].astype(np.uint32), "value": matrix[present]})
    return ChunkOut(lines, rows, signals, plan, _stated_epochs(chunk, epochs_said))


def _shown(joined: pl.DataFrame, places: pl.DataFrame, book: ShapeBook) -> pl.DataFrame:
    """The chunk's lines without the redraws a later one on the same physical line overwrites
    (`redraws.overwritten`); `places`: the chunk's `row` and `line_no`."""
    if joined.height < 2 or places.get_column("line_no").n_unique() == places.height:
        return joined
    placed = joined.join(places, on="row", how="left", maintain_order="left").with_columns(
        total=pl.col("text").str.slice(pl.col("inner_total.s"), pl.col("inner_total.n")))
    bars = [k for names, k in book.kinds.items() if names and names <= _BAR_SPEEDS]
    tables = [sid for sid in book.composed.values() if sid is not None]
    gone = redraws.overwritten(placed, bars, tables)
    if gone is None:
        return joined
    # the last redraw of a line whose earlier redraws were overwritten, a bar on it: its counter is the
    # bar's (`_closed_bars`; not a record printed over a bar, Keras' `2443/2443 [====]` after it)
    shown = pl.col("_gone").any().over("line_no") & ~pl.col("_gone") & pl.col("text").str.contains(redraws.BAR)
    return (placed.with_columns(_gone=gone).with_columns(redrawn=shown)
            .filter(~pl.col("_gone")).drop("line_no", "_gone", "total"))


def _tabled(text: pl.Series, ids: pl.Series, book: ShapeBook) -> pl.Series:
    """Rows of numbers under a table's header row (`Epoch  GPU_mem  box_loss ...` then
    `1/100  2.13G  1.596 ...`) take the header's names: each (header, row shape) pair is
    lined up once (`linetokens.table_row`) and its lines get the composed shape."""
    present = ids.unique().to_list()
    heads = [s for s in present if s in book.headers]
    rows = [s for s in present if s in book.rowish]
    if not rows or not (heads or book.preset):
        return ids
    frame = pl.DataFrame({"_sid": ids, "text": text}).with_row_index("i").with_columns(
        hdr=pl.when(pl.col("_sid").is_in(heads)).then(pl.col("_sid")).forward_fill().fill_null(-1))
    cand = frame.filter(pl.col("_sid").is_in(rows))
    pairs = cand.group_by("hdr", "_sid", maintain_order=True).agg(pl.col("text").first())
    # a row under the latest header, else under an earlier one it lines up with: a training
    # table's rows go on after an evaluation table's header (JDE's `Image  Total  P  R  mAP`)
    others = [*reversed(heads), -1]
    new = [next((c for c in (book.compose(g, s, t) for g in [h, *(g for g in others if g != h)]) if c is not None),
                None) for h, s, t in pairs.iter_rows()]
    mapping = pairs.select("hdr", "_sid", new=pl.Series(new, dtype=pl.Int64))
    cand = cand.join(mapping, on=["hdr", "_sid"], how="left").filter(pl.col("new").is_not_null())
    if cand.height == 0:
        return ids
    return ids.scatter(cand.get_column("i"), cand.get_column("new"))


def _refined(chunk: pl.DataFrame, named: dict[int, list[tuple[int, int]]]) -> pl.Expr:
    """Each line's key for the book: its shape id, and for the shapes with digits in
    their keys, the text at those keys."""
    text, local = pl.col("text"), pl.col("_shape")
    if len(named) > 64:  # too many to tell apart by shape: each line is its own key
        return pl.concat_str([pl.lit("\x03"), text])
    # one flat coalesce: a when/then/otherwise chain that nests the key in both branches grows
    # the expression (and its memory) by 2x a shape: 20 such shapes took gigabytes for 2,000 lines
    keyed = [pl.when(local == i).then(pl.concat_str([text.str.slice(a, n) for a, n in spans], separator="\x02"))
             for i, spans in named.items()]
    suffix = pl.coalesce([*keyed, pl.lit("")])
    return pl.concat_str([pl.lit("\x03"), pl.col("_text_shape"), pl.lit("\x02"), suffix, pl.lit("\x03")])


def _count(text: pl.Expr, separated: bool, floated: bool = False) -> pl.Expr:
    """A counter's number; with thousands separators where a shape prints them (BasicSR's
    `iter:   1,100,`), or a zero fraction (`global_step=999.0`)."""
    if separated:
        text = text.str.replace_all(",", "", literal=True)
    if floated:
        text = text.str.replace(r"\.0+$", "")
    return text.cast(pl.Int64, strict=False)


def numbers(raw: pl.Series) -> pl.Series:
    """Numbers as printed: a plain cast, then the spellings (`-nan`, `inf`) and thousands
    separators (`7,233`) for the cells it could not read."""
    fast = raw.cast(pl.Float64, strict=False)
    if fast.null_count() > raw.null_count():
        idx = (fast.is_null() & raw.is_not_null()).arg_true()
        # the separators dropped and cast again first: `to_float`'s spellings (strip, lower-case,
        # lookups) cost ~15 ms a 50k-line chunk of torchtitan's `tps: 7,233`, and a cell that casts
        # reads the same through them (no spelling of theirs casts but to the same value)
        bare = raw.gather(idx).str.replace_all(",", "", literal=True)
        got = bare.cast(pl.Float64, strict=False)
        if got.null_count():
            left = got.is_null().arg_true()
            spelt = bare.gather(left).str.replace(r"(?i)(nan|inf)\.0+$", "$1") \
                .to_frame("raw").select(to_float(pl.col("raw"))).to_series()
            got = got.scatter(left, spelt)
        fast = fast.scatter(idx, got)
    return fast


def _wall_time(text: pl.Expr) -> pl.Expr:
    return _seconds(_stamp_micros(text))


def _stamp_micros(text: pl.Expr) -> pl.Expr:
    return (text.str.replace(",", ".", literal=True).str.replace("T", " ", literal=True)
            .str.replace_all("/", "-", literal=True)
            .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
            .dt.timestamp("us"))


def _seconds(micros: pl.Expr) -> pl.Expr:
    return micros.cast(pl.Float64) / 1e6


_STAMP_LAYOUT = re.compile(r"\d{4}([-/])\d\d\1\d\d([ T])\d\d:\d\d:\d\d(?:([.,])(\d{3}|\d{6}|\d{9}))?")
"""The layouts of time stamp Polars parses without chrono (a fixed fraction width: `%3f`, not `%.f`)."""


def wall_times(stamps: pl.Series) -> pl.Series:
    """`_wall_time` of time stamps' text, in seconds: the layout of the first stamp written as
    a format Polars parses itself (~2 ms a 50k-line chunk instead of ~13 ms through `%.f`), the
    stamps that do not read so through `_stamp_micros` (a stamp either reads the same through
    both or not through the fixed layout). The microseconds become seconds in one expression
    over the whole column, as `_wall_time` does (Polars' division may round a last bit
    differently by an element's place in the column)."""
    first = stamps.drop_nulls().head(1).to_list()
    m = _STAMP_LAYOUT.fullmatch(first[0]) if first else None
    if m is None:
        return stamps.to_frame("s").select(_wall_time(pl.col("s"))).to_series().alias(stamps.name)
    date, at, dot, fraction = m.groups()
    layout = f"%Y{date}%m{date}%d{at}%H:%M:%S" + (f"{dot}%{len(fraction)}f" if fraction else "")
    micros = stamps.str.to_datetime(layout, strict=False, time_unit="us", cache=False).dt.timestamp("us")
    missed = micros.is_null() & stamps.is_not_null()
    if missed.any():
        idx = missed.arg_true()
        micros = micros.scatter(idx, stamps.gather(idx).to_frame("s").select(_stamp_micros(pl.col("s"))).to_series())
    return micros.to_frame("us").select(_seconds(pl.col("us"))).to_series().alias(stamps.name)


def _stated_epochs(chunk: pl.DataFrame, said: pl.Expr) -> int | None:
    """The first epoch plan the chunk's lines state; `said`: which lines say `epoch` (both plans
    name it: their three extractions run on those lines only, not on all 50k of a chunk)."""
    text = pl.col("text")
    found = chunk.filter(said).select(pl.coalesce(text.str.extract(_EPOCH_PLAN.pattern, 1),
                                     text.str.extract(_EPOCH_PLAN_SAID.pattern, 1),
                                     text.str.extract(_EPOCH_PLAN_SAID.pattern, 2)).drop_nulls().first()).item()
    return int(found) if found is not None else None


def epoch_count(total: int, first: int, stated: int | None = None) -> int:
    """How many epochs an epoch counter's printed total plans. A counter that starts at 1 prints
    the count (`Epoch 1/10`); one that starts at 0 prints either the count (`[0/100]`) or its last
    index (`EPOCH 000 / 149`, YOLOv5's `0/99`): the last index when the run's settings say the plan
    is one more (`max_epoch: 150`), or, with no setting, when one more is the rounder number (people
    plan 150 epochs, not 149)."""
    if first != 0:
        return total
    if stated is not None:
        return total + 1 if stated == total + 1 else total
    return total + 1 if _roundness(total + 1) > _roundness(total) else total


def _roundness(n: int) -> float:
    """Trailing zeros, and a half for a multiple of 5: 150 -> 1.5, 149 -> 0, 25 -> 0.5."""
    zeros = len(str(n)) - len(str(n).rstrip("0")) if n else 0
    return zeros + (0.5 if n and n % 5 == 0 else 0.0)


def _chunk_plan(chunk: pl.DataFrame, hint: pl.Expr) -> int | None:
    """The last plan a line of the chunk states; `hint`: which lines hold `_PLAN_HINT`."""
    stating = chunk.filter(hint)
    if stating.height == 0:
        return None
    for text in reversed(stating.get_column("text").to_list()):
        m = _PLAN.search(text)
        if m:
            return int(m.group(1).replace(",", ""))
    return None


# ------------------------------------------------------------------ the whole file


def steps(lines: pl.DataFrame, kinds: dict[int, frozenset] | None = None,
          stated_epochs: int | None = None) -> tuple[pl.DataFrame, dict]:
    """The step of every line (`row`, `step`), and the plan meta, chosen for the file
    (see the module doc). `kinds`: the metric names of each record kind (`ShapeBook.kinds`
    turned round), which tell a relaunch's counter from an evaluation bar's."""
    if lines.height == 0:
        return lines.select("row", "wall_time", "values", step=pl.lit(None, pl.Int64), keep=pl.lit(True)), {}
    anchored = pl.any_horizontal([pl.col(a).is_not_null() for a in ("step", "inner", "epoch")])
    lines = _phased(_announced(lines).with_columns(anchored=anchored))
    lines = _carried(lines)
    # a progress bar's speed (`35.3s/it`) says how fast a loop goes, not how training went: lines
    # holding nothing else do not make a file of evaluations a file of training records
    speed = [k for k, names in (kinds or {}).items() if names and names <= _BAR_SPEEDS]
    judged = [k for k, names in (kinds or {}).items()  # a bar's speed, then an evaluation printed after it
              if names and all(n in _BAR_SPEEDS or _EVAL_NAMED.search(n) for n in names)]
    trained = ~pl.col("evaluation") & (pl.col("values") > 0) & ~pl.col("kind").is_in(judged)
    if not lines.select(trained.any()).item() and lines.select((pl.col("evaluation") & (pl.col("values") > 0)).any()).item():
        # a file of evaluation lines only (`Epoch 3: Val MAE = 0.0199`): the evaluation is the run's
        # only curve, counted as training lines are (its names keep their phase)
        lines = lines.with_columns(evaluation=pl.lit(False),
                                   values=pl.when(pl.col("kind").is_in(speed)).then(0).otherwise(pl.col("values")))
    # lines that choose how the file counts: those with a step of their own, or of a kind (a
    # key set) printed more than once; a banner's `Num examples = 1,000` is neither
    records = lines.filter(~pl.col("evaluation") & (pl.col("values") > 0)
                           & (pl.col("anchored") | (pl.len().over("kind") >= 2)))
    totals = records.get_column("inner_total").drop_nulls()
    if totals.len():  # the counter of the training loop: the total most record lines print (not an eval bar's)
        # the counter that grows along the file: the total whose counts go back least
        # often (an eval bar starts again at each evaluation), the larger on a tie
        # the counter that grows along the file: the one the records without a counter follow
        # (HF's `{'loss': ...}` after the training bar), else the total whose counts go back
        # least often (an eval bar starts again at each evaluation), the larger on a tie
        follow = (lines.with_columns(before=pl.col("inner_total").forward_fill())
                  .filter(~pl.col("anchored") & (pl.col("values") > 0) & pl.col("before").is_not_null()
                          & (pl.len().over("kind") >= 2))  # a summary printed once after an eval bar follows nothing
                  .group_by("before").agg(follows=pl.len()).rename({"before": "inner_total"}))
        # a count that starts again as a new epoch begins is the training loop's (epoch and counter);
        # so is one that starts again with its epoch going back too (a relaunch): an evaluation bar
        # starts again within one epoch
        new_epoch = pl.col("epoch").forward_fill().diff().fill_null(0) != 0
        per = (records.filter(pl.col("inner_total").is_not_null())
               .group_by("inner_total").agg(back=((pl.col("inner").diff() < 0) & ~new_epoch).sum())
               .join(follow, on="inner_total", how="left").with_columns(pl.col("follows").fill_null(0))
               .sort(["follows", "back", "inner_total"], descending=[True, False, True]))
        carried = _objective(records, kinds).get_column("inner_total").drop_nulls().unique()
        if carried.len():  # the counter the objective's own lines print (not a loading bar's `2/2`)
            per = per.filter(pl.col("inner_total").is_in(carried.implode()))
        mains = _loop_totals(records, per.get_column("inner_total").to_list(), kinds)
        other = pl.col("inner_total").is_not_null() & ~pl.col("inner_total").is_in(mains)
        lines = lines.with_columns(pl.when(other).then(None).otherwise(pl.col(c)).alias(c)
                                   for c in ("inner", "inner_total"))
    lines = lines.with_columns(pl.col("epoch", "epoch_total").forward_fill())  # a banner's epoch holds on
    records = lines.filter(~pl.col("evaluation") & (pl.col("values") > 0)
                           & (pl.col("anchored") | (pl.len().over("kind") >= 2)))
    main = _objective(records, kinds)
    has = {a: main.get_column(a).null_count() < main.height for a in _ANCHORS}
    if not any(has.values()) or (has["epoch"] and not (has["step"] or has["inner"])
                                 and _constant(main, pl.col("epoch"))):
        # records printed without a counter take that of the lines before them; so do records
        # whose only anchor is an epoch they all share (OLMo's `[step=1/10000,epoch=0]` header)
        has = {a: records.get_column(a).null_count() < records.height for a in _ANCHORS}
    # a step key or counter on a line or two (DeepSpeed's `step=0` before training, a loading
    # bar's `2/2`) that the records, printed without it, would all take: not the file's step
    # (records that print the step themselves need no check: nothing is carried to them)
    if has["step"] and ((main.get_column("step").null_count() and not _tells_apart(lines, main, _named(lines, records)))
                        or _constant(main, _named(lines, records))):
        has["step"] = False
    if has["step"] and has["inner"] and _finer(main):
        has["step"] = False  # keras-rl's `600/50000: episode: 3, ...`: the counter counts the records, the key a coarser loop
    counted = _counted(lines, records, stated_epochs) if has["inner"] and not has["step"] else None
    if counted is not None and ((main.get_column("inner").null_count() and not _tells_apart(lines, main, counted[0]))
                                or _constant(main, counted[0]) or _closed_bars(main)):
        has["inner"] = False
    if has["epoch"] and not (has["step"] or has["inner"]) and _constant(main, pl.col("epoch")):
        # an epoch every record shares (`Num Epochs = 1` in a banner, then a dict a step) counts
        # nothing: the records count by their order
        has["epoch"] = False
    own = pl.col("step")
    meta: dict = {}
    if has["step"]:
        step, how = _named(lines, records), "step"
    elif has["inner"] and counted is not None:
        step, how, plan = counted
        if plan:
            meta["plan.steps"] = plan
    elif has["epoch"]:
        step, how = pl.col("epoch"), "epoch"
        total = records.get_column("epoch_total").drop_nulls()
        if total.len():
            meta["plan.steps"] = epoch_count(int(total[-1]), int(records.get_column("epoch").min()), stated_epochs)
        elif stated_epochs is not None:  # no `e/E` counter: the plan a banner or the settings state
            meta["plan.steps"] = stated_epochs
            meta["plan.from"] = f"the epochs the log states ({stated_epochs})"
        if _shared(main):  # several records an epoch: a key of theirs that rises may count them (`assemble`)
            meta["step.shared"] = True
    else:
        # the order of the records that choose the step; what comes before the first is the
        # preamble (a model's printout, a config dump), as before a first step
        is_main = pl.col("row").is_in(main.get_column("row").implode())
        step, how = pl.when(is_main).then(is_main.cast(pl.Int64).cum_sum() - 1), "order"
    if how != "epoch" and "plan.steps" not in meta:
        planned = _epoch_plan(records, stated_epochs)
        if planned is not None:
            meta["plan.epochs"] = planned
            meta["plan.from"] = f"the epochs the log states ({planned})"
    stepped = lines.with_columns(
        step=pl.when(pl.col("evaluation") & own.is_null()).then(None).otherwise(step).cast(pl.Int64))
    if how == "order":  # evaluation lines take the step of the records before them
        stepped = stepped.with_columns(step=pl.when(pl.col("evaluation")).then(None).otherwise(pl.col("step")))
    # lines with no step of their own take the step of the line before them; before the first
    # step there is the preamble (a banner's `Num examples = 1,000`): no records there. A record
    # whose counter comes on its last line (`loss: 2.8`, then `Epoch: 001, Train Acc: 0.49`) is
    # the exception: its lines take the step of the line after them
    stepped = stepped.with_columns(pl.when(_leads(stepped)).then(pl.col("step").shift(-1))
                                   .otherwise(pl.col("step")).forward_fill().alias("step"))
    # a line without a step of its own is a record when its kind comes back at other steps (an
    # eval dict after each evaluation) or it holds several values; a config dump's
    # `MAX_ITER: 4000` (once, or once per section at one step) is not
    spread = pl.col("step").drop_nulls().n_unique().over("kind") >= 2
    stepped = stepped.with_columns(keep=pl.col("anchored") | ((pl.col("values") > 0) & spread)
                                   | (pl.col("values") >= 3))  # an eval dict said once, after a step
    meta["step.from"] = how
    extra = ["announced"] if "announced" in stepped.columns else []
    return stepped.select("row", "step", "wall_time", "keep", "values", *extra), meta


def _epoch_plan(records: pl.DataFrame, stated_epochs: int | None) -> int | None:
    """The epochs a log counted by another counter plans (`Epoch [5/100] Step 120 Loss ...`, `Training for
    up to 30 epochs` over `Epoch 1, batch 10/1920 loss=...`): its epoch counter's total, else what a banner
    or the settings state; `detect.ended` judges how far it got by the `epoch` metric (J4, #25)."""
    total = records.get_column("epoch_total").drop_nulls() if "epoch_total" in records.columns else None
    if total is not None and total.len():
        first = records.get_column("epoch").drop_nulls()
        return epoch_count(int(total[-1]), int(first.min()) if first.len() else 1, stated_epochs)
    return stated_epochs


def _closed_bars(main: pl.DataFrame) -> bool:
    """Whether every record is a bar's last redraw standing at its total (`50/50`, after the redraws it
    overwrote: `redraws`), one an epoch: the bar counts nothing the epoch beside it does not, so the
    epoch is the step (a record printed at `485/485` with no redraw before it keeps its counter)."""
    if "redrawn" not in main.columns:
        return False
    both = main.filter(pl.col("inner").is_not_null() & pl.col("inner_total").is_not_null() & pl.col("epoch").is_not_null())
    return (both.height >= 2 and both.height == main.height and bool(both.get_column("redrawn").all())
            and bool((both.get_column("inner") == both.get_column("inner_total")).all()))


def _finer(main: pl.DataFrame) -> bool:
    """Whether the records' `N/M` counter counts them one by one (rising every record) while the step
    key they also print (`episode: 3`) holds its value over several of them: the counter is the finer
    count, the step a person reads."""
    both = main.filter(pl.col("step").is_not_null() & pl.col("inner").is_not_null())
    if both.height < 3 or both.height < 0.9 * main.height:
        return False
    key, count = both.get_column("step"), both.get_column("inner")
    return (key.n_unique() < both.height and bool((key.diff().drop_nulls() >= 0).all())
            and bool((count.diff().drop_nulls() > 0).all()))


def _leads(stepped: pl.DataFrame) -> pl.Series:
    """The lines without a counter that open a record whose counter comes on its last line: their
    kind is printed before the file's first counted line (it opens the first record, not a
    preamble printed once), comes back with half the counted lines or more (a part of every record,
    not a banner printed at each launch), and every line of it is followed at once by a counted line
    with a step. Elsewhere a line without a counter belongs to the record before it."""
    told = pl.col("anchored") & pl.col("step").is_not_null()
    free = ~pl.col("anchored") & (pl.col("values") > 0)
    first_told = pl.col("row").filter(told).min()
    marked = stepped.select("kind", "row", free=free, first_told=first_told,  # (the next line in file order,
                            followed=told.shift(-1).fill_null(False), n_told=told.sum())  # before grouping by kind)
    n = pl.len().over("kind")
    lead = (pl.col("free") & (pl.col("free") & pl.col("followed")).sum().over("kind").eq(n)
            & (pl.col("row").min().over("kind") < pl.col("first_told")) & (n >= 5) & (2 * n >= pl.col("n_told")))
    return marked.select(lead.fill_null(False).alias("lead")).to_series()


def _shared(main: pl.DataFrame) -> bool:
    """Whether most records print the epoch of the record before them (several records an
    epoch, nothing else counting them: `Epoch #1: env_step=10, loss=...`, `Ep. 1 : Up. 500 :
    Cost ...`). A file counted by its epoch prints one record an epoch."""
    ep = main.get_column("epoch")
    if ep.null_count() or main.height < 4:
        return False
    return float((ep.diff() == 0).mean()) >= 0.5


def _objective(records: pl.DataFrame, kinds: dict[int, frozenset] | None) -> pl.DataFrame:
    """The records that choose the file's step: those of the kinds (key sets printed on two
    lines or more, or with a counter) that hold the run's objective (a loss, else a reward), else every record.
    A script's own `[Step 1/100] Loss: 5.2` lines count by their counter, not by the
    `step=N` of the engine's lines beside them."""
    if kinds is None or records.height == 0:
        return records
    from ..frame import infer_roles

    by_kind = (records.group_by("kind").agg(pl.len(), pl.col("anchored").any())
               .filter((pl.col("len") >= 2) | pl.col("anchored")))
    repeated = by_kind.get_column("kind").to_list()
    counted = set(by_kind.filter(pl.col("anchored")).get_column("kind").to_list())
    names = {k: kinds.get(k, frozenset()) for k in repeated}
    roles = infer_roles(sorted(set().union(*names.values())) if names else [])
    for wanted in (("loss",), ("reward",)):
        chosen = [k for k, ns in names.items() if any(roles.get(n) in wanted for n in ns)]
        if chosen:
            # the kinds that print a counter of their own choose it (a table of training rows
            # `0/29  40/165 ... total`, not an evaluation table's rows beside it with none)
            # ... when they are most of them: a few records glued to a progress bar's line (stdout
            # flushed after the bar, then a burst of HF dicts) do not speak for the many without it
            own = [k for k in chosen if k in counted]
            sizes = dict(by_kind.select("kind", "len").iter_rows())
            if own and sum(sizes[k] for k in own) >= 0.5 * sum(sizes[k] for k in chosen):
                chosen = own
            return records.filter(pl.col("kind").is_in(chosen))
    return records


def _tells_apart(lines: pl.DataFrame, main: pl.DataFrame, step: pl.Expr) -> bool:
    """Whether a step key, carried on to the lines after it, gives the records that choose the
    step (`main`) steps of their own: not when most of them would share one."""
    if main.height < 4:
        return True
    filled = lines.select("row", _s=step.forward_fill())
    got = main.select("row").join(filled, on="row", how="left").get_column("_s")
    if got.drop_nulls().n_unique() >= 0.5 * main.height:
        return True
    if "kind" not in main.columns:
        return False
    # a record printed over several lines of other kinds (Caffe's `Iteration 500, loss = 8.9`, then a
    # `Train net output #k: name = v` line a term): each kind's lines (nearly) each get a step of their own
    per = (main.select("kind").with_columns(_s=got).group_by("kind")
           .agg(n=pl.len(), u=pl.col("_s").drop_nulls().n_unique()))
    return bool((per.get_column("u") >= 0.9 * per.get_column("n")).all())


def _constant(main: pl.DataFrame, step: pl.Expr) -> bool:
    """Whether a step key or counter gives every record that chooses the step one and the same
    step: a setting printed once and carried on (`batch = 405` before `Epoch 0/69` banners), a
    finished bar's `1568/1568` before each epoch's summary. Such a number counts nothing."""
    got = main.select(step.alias("_s")).get_column("_s").drop_nulls()
    return got.len() >= 4 and got.n_unique() == 1


def _announced(lines: pl.DataFrame) -> pl.DataFrame:
    """An evaluation announced by a line of its own (`Eval begin...`, `Validating...`) whose
    lines print the training lines' keys under a counter of another total (`step 10/88` between
    `step 610/614` lines): those lines are the evaluation's, up to the first line that is not
    (another total, a banner, a line of other keys). Only a counter of its own total tells the
    block apart; an announcement followed by lines that look like training is left alone."""
    if "announce" not in lines.columns:
        return lines
    if not lines.select(pl.col("announce").any()).item():
        return lines.filter(~pl.col("announce")).drop("announce")
    block = pl.col("announce").cum_sum()
    # per block (the lines from one announcement to the next): its first line after the
    # announcement, and the counter total the training lines before it printed
    lines = lines.with_columns(_b=block, _i=pl.int_range(pl.len()),
                               _before=pl.col("inner_total").shift(1).forward_fill())
    first = (lines.filter(~pl.col("announce") & (pl.col("_b") > 0)).group_by("_b")
             .agg(_t=pl.col("inner_total").first(), _k=pl.col("kind").first()))
    at = lines.filter(pl.col("announce")).select("_b", _prior=pl.col("_before"))
    lines = lines.join(first.join(at, on="_b", how="left"), on="_b", how="left").sort("_i")
    alike = (~pl.col("announce") & pl.col("_t").is_not_null() & pl.col("_t").ne_missing(pl.col("_prior"))
             & pl.col("inner_total").eq_missing(pl.col("_t")) & pl.col("kind").eq(pl.col("_k")))
    # the block runs while its lines are alike (or already an evaluation's): the first other line ends it
    inside = alike | (pl.col("evaluation") & ~pl.col("announce"))
    ended = (~inside & ~pl.col("announce")).cast(pl.Int32).cum_sum().over("_b") > 0
    marked = (pl.col("_b") > 0) & ~pl.col("announce") & inside & ~ended
    return (lines.with_columns(evaluation=pl.col("evaluation") | marked, announced=marked)
            .filter(~pl.col("announce")).drop("_b", "_i", "_before", "_t", "_k", "_prior", "announce"))


def _phased(lines: pl.DataFrame) -> pl.DataFrame:
    """A record printed over several lines is of the phase of the line that opens it: where the
    same lines of values follow both the training counter's lines (`Epoch: [0][10/250] ... Loss`)
    and an evaluation's (`Test: [10/242] ... Loss`), those after the evaluation's are its own
    (`cos_sim_loss 0.31` under `Test:` is a test value, not a training one); so are the lines of a
    kind that only ever comes right after an evaluation's line."""
    if not lines.select(pl.col("evaluation").any()).item():
        return lines
    head = pl.when(pl.col("anchored")).then(pl.int_range(pl.len(), dtype=pl.Int64)).forward_fill()
    lines = lines.with_columns(_head=head)
    cont = ~pl.col("anchored") & (pl.col("values") > 0) & ~pl.col("evaluation") & pl.col("_head").is_not_null()
    opener_eval = pl.col("evaluation").gather(pl.col("_head").fill_null(0))
    after_train = lines.filter(cont & ~opener_eval).get_column("kind").unique()
    # a kind of line that only ever comes right after an evaluation's line is the rest of that record
    # (SB3's `Episode length: 12.20 +/- 8.08` under `Eval num_timesteps=5000, episode_reward=...`)
    next_to = cont & opener_eval & (pl.col("_head") == pl.int_range(pl.len(), dtype=pl.Int64) - 1)
    rest = (lines.with_columns(_next=next_to).filter(cont).group_by("kind").agg(pl.col("_next").all())
            .filter(pl.col("_next")).get_column("kind"))
    mark = cont & opener_eval & (pl.col("kind").is_in(after_train.implode()) | pl.col("kind").is_in(rest.implode()))
    told = pl.col("announced") | mark if "announced" in lines.columns else mark
    return lines.with_columns(evaluation=pl.col("evaluation") | mark, announced=told).drop("_head")


def _carried(lines: pl.DataFrame) -> pl.DataFrame:
    """A record printed over several lines: a line that holds a counter or a step and no value
    (`[TRAIN] Epoch 000 | batch 0010/9565 (0.1%)`), then lines of values with no counter of
    their own (`[TRAIN] mean loss: 25.24`), each printed again for every record. The value
    lines take the counter of the line that opens their record (up to the next line with a
    counter); a value line printed once (a summary) takes nothing, nor do the lines after an
    evaluation's counter (`Test iter: [0/512]`)."""
    opens = (pl.col("anchored") & (pl.col("values") == 0) & ~pl.col("evaluation")
             & (pl.col("step").is_not_null() | pl.col("inner").is_not_null()))
    carried = ~pl.col("anchored") & (pl.col("values") > 0) & ~pl.col("evaluation")  # lines that may take one
    if not lines.select(opens.any() & carried.any()).item():  # (a banner's `step 1` before anchored records)
        return lines
    # each line's record opens at the last line with an anchor before it (a gather, not a window
    # over as many groups as records)
    head = pl.when(pl.col("anchored")).then(pl.int_range(pl.len(), dtype=pl.Int64)).forward_fill()
    lines = lines.with_columns(_head=head)
    take = (opens.gather(pl.col("_head").fill_null(0)) & pl.col("_head").is_not_null() & carried
            & (pl.len().over("kind") >= 2))
    return lines.with_columns(
        *[pl.when(take).then(pl.col(c).gather(pl.col("_head").fill_null(0))).otherwise(pl.col(c)).alias(c)
          for c in ("step", "inner", "inner_total")],
        anchored=pl.col("anchored") | take).drop("_head")


def _loop_totals(records: pl.DataFrame, ranked: list[int], kinds: dict[int, frozenset] | None) -> list[int]:
    """The totals of the training loop's counter: the first of `ranked`, and those of later
    launches appended to the file that count another number of batches a pass (a data set
    changed between launches: `iter: 10/989` then `iter: 10/991`). Such a total's lines come
    after (or before) every line of the others, never between them (an evaluation bar
    runs between training lines), and hold mostly the same metrics."""
    chosen = [ranked[0]]
    if len(ranked) == 1 or kinds is None:
        return chosen
    counted = records.filter(pl.col("inner_total").is_not_null())
    spans = {t: (int(g.get_column("row").min()), int(g.get_column("row").max()),
                 frozenset().union(*(kinds.get(k, frozenset()) for k in g.get_column("kind").unique().to_list())))
             for (t,), g in counted.group_by("inner_total")}
    starts = _block_starts(counted)
    for total in ranked[1:]:
        lo, hi, names = spans[total]
        apart = all(hi < spans[c][0] or lo > spans[c][1] for c in chosen)
        main = spans[chosen[0]][2]
        alike = bool(names) and len(names & main) >= 0.5 * len(names | main)
        # models trained one after another, each with its own plan (`[1/6]`..`[6/6]`, then
        # `[5/30]`..`[30/30]`, then `[1/6]` again): every block of either total counts from its own
        # start; an evaluation bar between training lines is left behind by a training count that
        # goes on where it stopped
        restarted = all(starts.get(t, False) for t in (*chosen, total)) and names == main
        # a launch of another set-up appended to the log (a supervised run after a semi-supervised
        # one: other loss terms, another total): its lines, apart from the others, count epochs of
        # their own and print a loss, as the training loop's lines do (a test bar after training
        # counts within one epoch)
        if apart and _own_loop(counted.filter(pl.col("inner_total") == total), names):
            chosen.append(total)
            continue
        # a launch that trained on with a longer plan (`1000/1000`, then `1001/2000`): its count
        # takes over where a chosen total's block stopped, so it is the same loop's count
        if alike and (apart or restarted or (names == main and _continues(counted, total, chosen))):
            chosen.append(total)
    return chosen


def _own_loop(lines: pl.DataFrame, names: frozenset) -> bool:
    """Whether a counter total's lines are a training loop of their own: their epoch advances
    and they print a loss."""
    from ..frame import infer_roles

    epochs = lines.get_column("epoch").drop_nulls()
    return (epochs.len() >= 2 and bool((epochs.diff().drop_nulls() > 0).any())
            and any(r == "loss" for r in infer_roles(sorted(names)).values()))


def _continues(counted: pl.DataFrame, total: int, chosen: list[int]) -> bool:
    """Whether a block of `total`'s lines and a block of a chosen total's lines follow each other
    with the count going on across them: the first block counted to its total, the next counts
    on from there under a larger one (the plan extended; lines lost between them may skip a few)."""
    blocks = (counted.select("inner", "inner_total")
              .with_columns(_b=(pl.col("inner_total") != pl.col("inner_total").shift(1)).fill_null(True).cum_sum())
              .group_by("_b", maintain_order=True)
              .agg(pl.col("inner_total").first(), first=pl.col("inner").first(), last=pl.col("inner").last()))
    rows = blocks.select("inner_total", "first", "last").rows()
    # the larger total's first block: one that comes back after an evaluation bar goes on with
    # its own count, not the smaller total's
    return any(b > a and end >= a and f > end and total in (a, b) and (a in chosen or b in chosen)
               and all(t != b for t, _, _ in rows[:i + 1])
               for i, ((a, _, end), (b, f, _)) in enumerate(zip(rows, rows[1:])))


def _block_starts(counted: pl.DataFrame) -> dict[int, bool]:
    """Per counter total: whether it runs in two blocks or more (lines of one total in a row) and
    each of its blocks starts at the total's first count."""
    blocks = (counted.select("inner", "inner_total")
              .with_columns(_b=(pl.col("inner_total") != pl.col("inner_total").shift(1)).fill_null(True).cum_sum())
              .group_by("_b", maintain_order=True).agg(pl.col("inner_total").first(), first=pl.col("inner").first())
              .group_by("inner_total").agg(n=pl.len(), same=(pl.col("first") == pl.col("first").min()).all()))
    return {int(t): n >= 2 and same for t, n, same in blocks.iter_rows()}


def _named(lines: pl.DataFrame, records: pl.DataFrame) -> pl.Expr:
    """A key that counts steps; when it starts again at each new epoch (per-epoch step
    counters), the epoch and it compose one count."""
    seen = records.filter(pl.col("step").is_not_null())
    back = seen.filter(pl.col("step").diff() < 0)
    if back.height and seen.get_column("epoch").null_count() == 0:
        # the count starts again as each new epoch begins (other steps back are relaunches, kept
        # as such: `epoch 0, iter 3000` then `epoch 0, iter 1000`)
        ups = seen.filter(pl.col("epoch").diff() > 0)
        ep_up = ups.height > 0 and ups.height == seen.filter(
            (pl.col("step").diff() < 0) & (pl.col("epoch").diff() > 0)).height
        if ep_up:
            per = int(seen.get_column("step").max()) + (1 if int(seen.get_column("step").min()) == 0 else 0)
            base = _epoch_base(seen)
            return (pl.col("epoch") - base) * per + pl.col("step")
    return pl.col("step")


def _counted(lines: pl.DataFrame, records: pl.DataFrame,
             stated_epochs: int | None = None) -> tuple[pl.Expr, str, int | None]:
    """A counter `N/M`: N, or with an epoch (on the line or a banner before it),
    (epoch - first epoch) * M + N."""
    seen = records.filter(pl.col("inner").is_not_null())
    totals = seen.get_column("inner_total").drop_nulls()
    last_total = int(totals[-1]) if totals.len() else None
    epoch = pl.col("epoch")
    ep = seen.get_column("epoch")
    known = ep.drop_nulls()
    if 0 < ep.null_count() < ep.len() and ep.slice(ep.null_count()).null_count() == 0 and int(known[0]) >= 1:
        # records before the first `Epoch 2/10` banner (the first banner cut off, a captured
        # log starting mid-epoch): they belong to the epoch before it
        epoch = epoch.fill_null(int(known[0]) - 1)
        seen = seen.with_columns(epoch.alias("epoch"))
    with_epoch = seen.get_column("epoch").null_count() == 0
    inner = pl.col("inner")
    on = _running_totals(seen) if with_epoch else set()
    if with_epoch and _runs_on(seen):
        with_epoch = False  # a count that goes on rising as each new epoch begins counts the whole run
    if not with_epoch:
        width = _pass_width(seen, last_total)
        if width is not None:  # no epoch printed, but each pass over the data counts from the start again
            ff = pl.col("inner").forward_fill()
            passes = (ff < ff.shift(1)).fill_null(False).cum_sum()
            return pl.when(inner.is_not_null()).then(passes * width + inner), "passes and counter", last_total
        return pl.when(pl.col("inner").is_not_null()).then(inner), "counter", last_total
    most = int(seen.get_column("inner").max())
    # an epoch is as wide as its stated total, unless the counter ran past it (a script that prints a
    # wrong total): then as wide as the counter went, or epoch 1 would land on epoch 0's steps; a
    # count printed with no total (`[1,  2000]`) is as wide as it runs, its first count to its last
    # and one stride more (`[e, 0]`..`[e, 90]` by 10: 100 a pass)
    # (each total against its own lines: launches appended to one log that print 223 and then 445
    # batches an epoch are each as wide as they say)
    went = {t: int(m) for t, m in seen.group_by("inner_total").agg(pl.col("inner").max()).iter_rows()
            if t is not None}
    own = pl.col("inner_total").replace_strict(went, default=most, return_dtype=pl.Int64)
    per = (pl.when(pl.col("inner_total") < own).then(own + 1).otherwise(pl.col("inner_total"))
           .fill_null(_stride_width(seen)))
    base = _epoch_base(seen)
    epochs = seen.get_column("epoch_total").drop_nulls()
    first = int(seen.get_column("epoch").min())
    plan = epoch_count(int(epochs[-1]), first, stated_epochs) * last_total if epochs.len() and last_total else None
    if plan is None and seen.get_column("epoch").n_unique() == 1:  # one epoch: the counter's total is the plan
        plan = last_total
    composed = (epoch - base) * per + inner
    stages = _stage_offsets(seen, base) if not totals.len() else None
    if stages is not None:  # stages of their own lengths: each starts where the ones before it ended
        composed = epoch.replace_strict(stages, default=None, return_dtype=pl.Int64) + inner
    if on:
        # launches appended to one log that count otherwise (`59783/65340 iters Epoch: [164]`, a
        # count over the whole run, beside another launch's `Epoch: [3] [250/726]`, a count per
        # epoch): each total as its own lines count; a per-epoch total is as wide as its own lines went
        wide = {t: int(m) for t, m in seen.group_by("inner_total").agg(pl.col("inner").max()).iter_rows()
                if t is not None}
        own = pl.col("inner_total").replace_strict(wide, default=None, return_dtype=pl.Int64)
        per = pl.when(pl.col("inner_total") < own).then(own + 1).otherwise(pl.col("inner_total"))
        composed = pl.when(pl.col("inner_total").is_in(sorted(on))).then(inner).otherwise((epoch - base) * per + inner)
        if last_total in on:
            plan = last_total
    return pl.when(inner.is_not_null()).then(composed), "epoch and counter", plan


def _stride(counts: pl.Series) -> int:
    """The usual step between two counts printed one after the other (a script prints every 10th: 10)."""
    ups = counts.diff().filter(counts.diff() > 0)
    return max(1, int(ups.median())) if ups.len() else 1


def _stride_width(seen: pl.DataFrame) -> int:
    """How many counts one pass holds when the counter prints no total: from its first count to
    its last, and one stride more (`0`..`90` by 10 and `10`..`100` by 10 are both 100)."""
    counts = seen.get_column("inner")
    return int(counts.max()) - int(counts.min()) + _stride(counts)


def _stage_offsets(seen: pl.DataFrame, base: int) -> dict[int, int] | None:
    """Where each outer count starts, when a count printed with no total runs longer in some of them
    than in others (a progressive GAN's `[scale : iter]`: 48,000 iterations at the first scale, 96,000 at
    each after it): the counts of the stages before it added up, as a person counts the global iteration.
    Each stage is as wide as it ran (its last count and one stride more); a stage the log skips is as wide
    as the middle one. None when every stage ran alike (the width of them all composes the step)."""
    stride = _stride(seen.get_column("inner"))
    low = int(seen.get_column("inner").min())
    ran = {int(e): int(m) - low + stride for e, m in seen.group_by("epoch").agg(pl.col("inner").max()).iter_rows()}
    widths = sorted(ran[e] for e in ran if e != max(ran))  # the last stage may stop anywhere
    if not widths or widths[-1] - widths[0] <= stride or min(ran) < base:
        return None
    usual, offsets, at = widths[len(widths) // 2], {}, 0
    for e in range(base, max(ran) + 1):
        offsets[e] = at
        at += ran.get(e, usual)
    return offsets


def _pass_width(seen: pl.DataFrame, total: int | None) -> int | None:
    """How many counts one pass over the data holds, when a counter printed with no epoch starts
    over right after reaching its end (`batch:100/100`, then `batch:10/100`): a counter that falls
    back from its last count to its first has finished a pass, so the passes before a count add to
    its step. None when it never falls back, or falls back from the middle (a relaunch, kept as one)."""
    counts = seen.get_column("inner")
    back = counts.diff() < 0
    if not back.any():
        return None
    stride = _stride(counts)
    low = int(counts.min())
    before, after = counts.shift(1).filter(back), counts.filter(back)
    if not bool((after <= low + stride).all()):
        return None
    if total:  # each fall comes at the end of the total printed beside it, one total throughout
        # (a count that went past a total printed later, `1500/2000` then `1/1000`, was a relaunch)
        ends = seen.get_column("inner_total").shift(1).filter(back)
        if ends.null_count() or ends.n_unique() != 1 or not bool(((before >= ends - stride) & (before <= ends)).all()):
            return None
        if not bool((seen.get_column("inner_total").filter(back) == ends).all()):
            return None  # counting again towards another total (`T = 25000 / 2500000` after `/ 1000000`): a new stage
        return int(ends[0])
    return _stride_width(seen) if bool((before >= int(counts.max()) - stride).all()) else None


def _runs_on(seen: pl.DataFrame) -> bool:
    """Whether a counter beside an epoch counts the whole run (PaddleSeg's `epoch: 2, iter:
    110/3000`): it rises at every new epoch, where a per-epoch count starts again (or, a bar's
    `485/485` at each epoch's end, stays)."""
    ups = seen.select(e=pl.col("epoch").diff(), i=pl.col("inner").diff()).filter(pl.col("e") > 0)
    return ups.height > 0 and bool((ups.get_column("i") > 0).all())


def _running_totals(seen: pl.DataFrame) -> set[int]:
    """The counter totals whose counts go on rising across epochs (`_runs_on` per total), when the
    file holds others that count within an epoch; empty when all or none run on."""
    by_total = {t: _runs_on(g) for (t,), g in seen.group_by("inner_total") if t is not None}
    on = {t for t, runs in by_total.items() if runs}
    return on if on and len(on) < len(by_total) else set()


def _epoch_base(seen: pl.DataFrame) -> int:
    """Epochs count from 0 or from 1: 0 when the file shows an epoch 0."""
    return 0 if int(seen.get_column("epoch").min()) == 0 else 1


def assemble(outs: Iterable[ChunkOut], book: ShapeBook) -> tuple[pl.DataFrame, dict]:
    """The chunks put together: value rows in read order with their line's step and
    wall time (`row, step, wall_time, metric, value`), and what the file says besides:
    the plan meta, the signals' meta, the counts."""
    signals = textsignals.Signals(CONSOLE)
    line_parts, row_parts, plan, stated = [], [], None, None
    for out in outs:
        signals.add(out.signals)
        line_parts.append(out.lines)
        row_parts.append(out.rows.drop("pos"))  # read order is the row's order: the slot is not needed
        plan = out.plan if out.plan is not None else plan
        stated = stated if stated is not None else out.epochs
    lines = pl.concat(line_parts, how="vertical_relaxed") if line_parts else None
    rows = pl.concat(row_parts, rechunk=False) if row_parts else None
    line_parts.clear()
    row_parts.clear()
    if lines is None or rows is None or rows.height == 0:
        empty = pl.DataFrame(schema={"row": pl.Int32, "step": pl.Int64, "wall_time": pl.Float64,
                                     "metric": pl.Categorical(), "value": pl.Float64})
        return empty, {"signals": signals.meta(empty), "records": 0}
    stepped, plan_meta = steps(lines, {k: names for names, k in book.kinds.items()}, stated)
    # each value row takes its line's step and wall time: the lines' place by row, one gather
    stepped = stepped.with_columns(step=pl.when(pl.col("keep")).then(pl.col("step")))
    # what the lines tell besides is read now, so that they are let go before the value frame
    # is built (a million lines' columns beside it were a third of the read's peak)
    records = int((lines.get_column("values") > 0).sum())
    line_steps = stepped.filter(pl.col("values") > 0).get_column("step").drop_nulls()
    # a metric is read once a line: a repeat needs two lines at one step (the cheap check first)
    repeats = line_steps.len() > 1 and not bool((line_steps.diff().slice(1) > 0).all())
    del line_steps
    epochs = None  # the record lines `_with_epochs` reads, where lines print an epoch
    if plan_meta.get("step.from") != "epoch" and lines.get_column("epoch").null_count() < lines.height:
        epochs = (stepped.filter(pl.col("keep") & (pl.col("values") > 0) & pl.col("step").is_not_null())
                  .select("row", "step", "wall_time", "keep", "values"))
    lines = lines.select("row", "epoch", "evaluation")  # all `_reprinted` and `_with_epochs` read
    line_rows = stepped.get_column("row").to_numpy()
    place = np.zeros(int(line_rows.max()) + 1, dtype=np.int32 if line_rows.size < 2**31 else np.int64)
    place[line_rows] = np.arange(line_rows.size)
    at = pl.Series(place[rows.get_column("row").to_numpy()])
    del place, line_rows
    told = None
    if "announced" in stepped.columns and stepped.get_column("announced").any():
        told = stepped.get_column("announced").fill_null(False).gather(at)
    step = stepped.get_column("step").gather(at)
    wall = stepped.get_column("wall_time")
    wall = wall.gather(at) if wall.null_count() < wall.len() else pl.Series([None] * rows.height, dtype=pl.Float64)
    del stepped, at
    names = pl.Series(list(book.names), dtype=pl.Categorical())
    frame = pl.DataFrame({
        "row": rows.get_column("row"),
        "step": step,
        "wall_time": wall,
        "metric": names.gather(rows.get_column("code")),
        "value": rows.get_column("value"),
    })
    del rows, step, wall  # the frame holds what it needs of them (the codes are let go)
    if told is not None:
        # the lines of an announced evaluation print the training keys: their values are the evaluation's
        renamed = {n: _eval_name(n, "val") for n in book.names}
        frame = frame.with_columns(metric=pl.when(told).then(
            pl.col("metric").cast(pl.String).replace_strict(renamed, default=pl.col("metric").cast(pl.String)))
            .otherwise(pl.col("metric").cast(pl.String)).cast(pl.Categorical()))
        del told
    if frame.get_column("step").null_count():
        frame = frame.filter(pl.col("step").is_not_null())
    if plan_meta.get("step.from") == "order" or plan_meta.pop("step.shared", False):
        # an epoch that several records print tells them apart no more than the order does: a key
        # of theirs that rises on each (Marian's `Up.`, tianshou's `env_step`) counts them
        frame, key = _rising_key(frame)
        if key is not None:
            plan_meta["step.from"] = f"counter key {key}"
    frame = _summary_repeat(_reprinted(frame, lines))
    if epochs is not None:
        frame = _with_epochs(frame, lines, epochs)
    del lines, epochs
    if repeats:
        frame = _drop_repeats(frame)
    if "plan.steps" not in plan_meta and plan is not None and plan_meta.get("step.from") == "step":
        plan_meta["plan.steps"] = plan
        plan_meta["plan.from"] = f"max steps stated in the log ({plan})"
    elif "plan.steps" in plan_meta and "plan.from" not in plan_meta:
        plan_meta["plan.from"] = f"the log's step counter (N/{plan_meta['plan.steps']})"
    meta = {**plan_meta, "records": records}
    sig = signals.meta(frame)  # its row as it is: a 64-bit copy of every value's row was the read's peak
    kept = ("plan.error", "plan.launch_errors", "plan.launch_words", "plan.stopped_by")
    meta.update({k: v for k, v in sig.items() if k.startswith(kept)})
    return frame, meta


def _rising_key(frame: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """A file whose records name no counter, but print an integer under a key of their own
    that rises on every record by one stride (`after cycle=3 avg(utility)=...`, `idx: 3loss: ...`;
    a layer's widths 64, 128, 256 in a model printout rise but count nothing): that key counts the
    records, whatever its name. It becomes the step of its lines and of the lines
    after them (up to its next line), and is no metric. It must be printed on the very lines of
    another metric (a counter beside the values it counts), never repeat or fall, and not be a
    role the detectors judge (a loss, a reward, a time)."""
    from ..frame import infer_role

    stride = pl.col("value").diff().drop_nulls()
    per = (frame.group_by("metric").agg(n=pl.len(), rows=pl.col("row").sort(), whole=(pl.col("value") % 1 == 0).all(),
                                        rising=(stride > 0).all(), low=pl.col("value").min(),
                                        even=(stride == stride.mode().first()).mean(), high=pl.col("value").max())
           .filter((pl.col("n") >= 4) & pl.col("whole") & pl.col("rising") & (pl.col("low") >= 0)
                   & (pl.col("even") >= 0.8)))
    if per.height == 0:
        return frame, None
    rows_of = {m: tuple(r) for m, r, moves in
               frame.group_by("metric").agg(pl.col("row").sort(), pl.col("value").n_unique() > 1).iter_rows()
               if moves}  # a counter counts values that move (not a printout's constant `wt = 0`)
    from .linetokens import _rank

    # the key on most lines; among keys on the same lines, one named as a counter (`iter` before `epoch`),
    # then the one that counts least: Marian's `Up. 500 : Sen. 64,000`, the updates, not the sentences
    # (data seen grows by a batch a step)
    ranked = sorted(per.iter_rows(named=True),
                    key=lambda r: (-r["n"], _rank(str(r["metric"]).lower()), r["high"], str(r["metric"])))
    ranked = [(r["metric"], r["n"], r["rows"]) for r in ranked]
    for metric, _, rows in ranked:
        name = str(metric)
        if infer_role(name) != "other":
            continue
        if not any(m != metric and r == tuple(rows) for m, r in rows_of.items()):
            continue  # counts no other value: a metric that happens to rise
        at = frame.filter(pl.col("metric") == metric).select("row", _k=pl.col("value").cast(pl.Int64))
        out = (frame.filter(pl.col("metric") != metric).with_columns(pl.col("row").cast(pl.Int64).alias("_r"))
               .join_asof(at.select(pl.col("row").cast(pl.Int64).alias("_r"), "_k"), on="_r")
               .filter(pl.col("_k").is_not_null())
               .with_columns(step=pl.col("_k")).drop("_r", "_k"))
        return out, name
    return frame, None


def _with_epochs(frame: pl.DataFrame, lines: pl.DataFrame, stepped: pl.DataFrame) -> pl.DataFrame:
    """A file counted by another counter that prints its epoch too (`Epoch 5/40` over `485/485 ...
    loss:` lines, `Epoch 3: 100%| 28/28`): people read it in epochs, so the epoch is kept as a
    metric `epoch`, one point where each new epoch's first record is (what `epochs.annotate` reads
    findings' epochs by; between those points the epoch holds)."""
    if "epoch" not in lines.columns or lines.get_column("epoch").null_count() == lines.height:
        return frame
    if "epoch" in frame.get_column("metric").cast(pl.String).unique().to_list():
        return frame  # the records print an `epoch` value of their own (HF's `'epoch': 0.22`)
    ep = lines.select("row", "evaluation", _e=pl.col("epoch").forward_fill())
    rec = (stepped.filter(pl.col("keep") & (pl.col("values") > 0) & pl.col("step").is_not_null())
           .select("row", "step", "wall_time").join(ep, on="row", how="inner")
           .filter(~pl.col("evaluation") & pl.col("_e").is_not_null()))
    first = rec.filter(pl.col("_e") != pl.col("_e").shift(1).fill_null(-1))
    if first.height < 2:
        return frame
    added = first.select(pl.col("row").cast(frame.schema["row"]), pl.col("step").cast(frame.schema["step"]),
                         pl.col("wall_time").cast(frame.schema["wall_time"]),
                         metric=pl.lit("epoch").cast(frame.schema["metric"]),
                         value=pl.col("_e").cast(pl.Float64))
    return pl.concat([frame, added], how="vertical").sort("row", maintain_order=True)


def _summary_repeat(frame: pl.DataFrame) -> pl.DataFrame:
    """A metric's last line that goes back to an earlier step and prints that step's very value
    (`Best model: Epoch 0043  Dice = 0.7401` after epoch 200) is the run's summary of its best
    record, not a record: it is dropped (a new value at an earlier step would be a relaunch, and
    is kept; a relaunch that reproduces its last step exactly is in order and kept too). A summary
    comes after the records, so only the file's last rows are looked at."""
    if frame.height < 3:
        return frame
    tail = frame.tail(256).with_row_index("_i", offset=max(frame.height - 256, 0))
    last = (tail.group_by("metric").agg(pl.col("_i").last(), pl.col("step").last(), pl.col("value").last(),
                                        before=pl.col("step").slice(-2, 1).first(), n=pl.len())
            .filter((pl.col("n") >= 2) & (pl.col("step") < pl.col("before"))))  # out of order: named again
    drop = [i for m, i, step, value, *_ in last.iter_rows()
            if frame.head(i).filter((pl.col("metric") == m) & (pl.col("step") == step)
                                    & pl.col("value").eq_missing(value)).height]
    if not drop:
        return frame
    return frame.with_row_index("_i").filter(~pl.col("_i").is_in(drop)).drop("_i")


def _reprinted(frame: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """A value printed again, unchanged, on every line of an epoch (Lightning's progress bar
    shows the last epoch's `train_loss=0.740` on each batch's line until the next epoch ends) is
    one value, not a series: where a metric is printed on three lines or more an epoch and
    changes at most once in each, never on an epoch's first line (a result comes at the end of the
    epoch it measures and is shown on into the next), and does change from epoch to epoch, only
    the lines where such values changed are kept (a per-batch loss changes within its epoch; a
    frozen one never changes; a measure that holds still within an epoch, YOLO's `GPU_mem`, takes
    its new value as a new epoch begins)."""
    if frame.height < 8 or lines.get_column("epoch").null_count() == lines.height:
        return frame
    line_rows = lines.get_column("row").to_numpy()
    place = np.zeros(int(line_rows.max()) + 1, dtype=np.int64)
    place[line_rows] = np.arange(line_rows.size)
    epoch = lines.get_column("epoch").forward_fill().gather(pl.Series(place[frame.get_column("row").to_numpy()]))
    prev = pl.col("value").shift(1).over("metric")
    seen = frame.select("metric", "value", _e=epoch).with_columns(
        _new=~pl.col("value").eq_missing(prev).fill_null(False),  # the first print, or a changed value
        _start=(pl.col("_e") != pl.col("_e").shift(1).over("metric")).fill_null(False) & prev.is_not_null())
    changed = pl.col("_new") & (pl.int_range(pl.len()).over("metric") > 0)  # not the first print
    per = (seen.filter(pl.col("_e").is_not_null()).with_columns(_c=changed).group_by("metric", "_e")
           .agg(n=pl.len(), new=pl.col("_c").sum(), opened=(pl.col("_c") & pl.col("_start")).any())
           .group_by("metric").agg(epochs=pl.len(), n=pl.col("n").sum(), most=pl.col("new").max(),
                                   moved=(pl.col("new") > 0).sum(), opened=pl.col("opened").any())
           .filter((pl.col("epochs") >= 3) & (pl.col("n") >= 3 * pl.col("epochs")) & (pl.col("most") <= 1)
                   & (pl.col("moved") >= 1) & (pl.col("moved") >= pl.col("epochs") // 2) & ~pl.col("opened")))
    if per.height == 0:
        return frame
    # the lines where one of them changed are those that report a new epoch's values: all of them
    # are kept there (an accuracy that came out the same as the epoch before was measured again)
    such = frame.get_column("metric").is_in(per.get_column("metric").implode())
    reported = frame.get_column("row").filter(such & seen.get_column("_new")).unique()
    kept = frame.filter(~such | pl.col("row").is_in(reported.implode()))
    # the validation's values and the training's come on two lines of one step: the last line of
    # the step holds both epochs' latest (the first still shows the epoch before's training values)
    such = kept.get_column("metric").is_in(per.get_column("metric").implode())
    last = ~(such & (pl.col("step") == pl.col("step").shift(-1).over("metric")).fill_null(False))
    return kept.filter(last)


def _drop_repeats(frame: pl.DataFrame) -> pl.DataFrame:
    """A value equal to the one before it of its metric at the same step: a line printed
    twice (a tqdm bar redrawn, a rank echoing rank 0)."""
    same = ((pl.col("step") == pl.col("step").shift(1).over("metric"))
            & pl.col("value").eq_missing(pl.col("value").shift(1).over("metric"))).fill_null(False)
    dup = frame.select(same).to_series()
    return frame.filter(~dup) if dup.any() else frame


# ------------------------------------------------------------------ sniffing


@dataclass
class Verdict:
    """What a sniff makes of a text file: a console log to read, or why not."""

    readable: bool
    reason: str | None = None
    """Why a file whose lines hold numbers is not read (None: not a log at all)."""


def sniff(text: str, whole: bool, name: str = "", named: bool = False) -> Verdict | None:
    """A console log (its key sets repeat on lines with a step or a counter), a file
    that looks like one but cannot be read (`Verdict(False, reason)`), or None. `named`: a
    file the user named on its own, whose numbers are said why they were not read even when
    most of its lines are banners and rules (in a folder such a file is passed over)."""
    lines = [p for raw in text.replace("\r\n", "\n").split("\n") for p in raw.split("\r")]
    if not whole and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut
    shapes = [s.translate(_ZERO) for s in lines]
    cache = {s: tokenise(s) for s in dict.fromkeys(shapes)}
    temps = [cache[s] for s in shapes]
    headers: list = []
    for i, (line, t) in enumerate(zip(lines, temps)):  # rows under a table's header row take its names
        above = next((lines[k] for k in range(i - 1, max(i - 3, -1), -1) if lines[k].strip()), None)
        head = header_cells(line, above) if not t.values or t.unkeyed == 0 else None
        if head is not None:
            headers = [*headers[-2:], head]
        elif headers and t.unkeyed >= 2:
            # under the latest header, else an earlier one the row lines up with (as `_tabled`):
            # a header of two lines (Vowpal Wabbit's) whose second line does not line up
            temps[i] = next((r for r in (table_row(line, h) for h in reversed(headers)) if r is not None), t)
    numeric = [i for i, (line, t) in enumerate(zip(lines, temps))
               if (t.values or t.unkeyed) and any(c.isdigit() for c in line)]
    records = [i for i in numeric if temps[i].values]
    anchored, context = [], False
    for i, t in enumerate(temps):
        context = context or t.anchored
        if t.values and (t.anchored or context):
            anchored.append(i)
    sets = Counter(frozenset(n for n, _, _ in temps[i].values) for i in anchored)
    top = sets.most_common(1)[0][1] if sets else 0
    need = 2 if whole else 3
    if anchored and top >= need:
        return Verdict(True)
    if whole and anchored and _names_a(temps[anchored[0]], ("loss",)):
        return Verdict(True)  # a run killed after its first record (`step 0: train loss 12.65`, then a traceback)
    free = Counter(frozenset(n for n, _, _ in temps[i].values) for i in records)
    if free and (common := free.most_common(1)[0]) and common[1] >= 5 and (
            len(common[0]) >= 2 or _names_a(temps[next(i for i in records if frozenset(
                n for n, _, _ in temps[i].values) == common[0])], _CURVES)):  # `Loss is: 2.81`, `episodic returns: 29` line after line
        same = [i for i in records if frozenset(n for n, _, _ in temps[i].values) == common[0]]
        texts = {lines[i][s: s + k] for i in same for _, s, k in temps[i].values}
        if len(texts) > len(common[0]):  # the values move: not a model's printout repeated per layer
            return Verdict(True)  # a step in line order: the same keys line after line
        if not anchored:
            return None  # the same numbers line after line: a printout, not a log
    numeric += [i for i, (line, t) in enumerate(zip(lines, temps))
                if (t.setting or t.prose) and i not in set(numeric) and any(c.isdigit() for c in line)]
    non_empty = sum(1 for line in lines if line.strip())
    if len(numeric) >= 10 and (named or len(numeric) >= 0.5 * non_empty):
        return Verdict(False, unread_reason(lines, temps, sorted(numeric), set(anchored)))
    return None


_CURVES = ("loss", "eval_loss", "reward", "accuracy", "perplexity")
"""What a training loop logs on its own, line after line, with no counter: a curve in line order. A lone
key of another role (`Temperature: 21.5`, `lr: 0.001`) stays a printout."""


def _names_a(t: Template, roles: tuple[str, ...]) -> bool:
    """Whether a template's keys name one of `roles` (`Loss is: 2.81` a loss)."""
    from ..frame import infer_role

    return any(infer_role(name) in roles for name, _, _ in t.values)


_WHY = {  # why lines of each kind were not read: said of all of them, and of a group of them
    "unkeyed": ("no key names their numbers", "whose numbers no key names"),
    "prose": ("their numbers stand in sentences", "of prose"),
    "setting": ("they are settings behind dotted leaders (`name ..... 2`)", "of settings behind dotted leaders"),
    "unanchored": ("no step counter, and no set of keys repeats on 5 lines",
                   "of keyed numbers with no step counter, their keys on fewer than 5 lines"),
    "unrepeated": ("their keys do not repeat from line to line", "whose keys do not repeat from line to line"),
}


def unread_reason(lines: list[str], temps: list[Template], numeric: list[int], anchored: set[int]) -> str:
    """One line saying why the lines that hold numbers were not read, by what their shapes
    hold: the commonest reasons first, each with its count and the first line of it (so a
    user can write a pattern for it)."""
    groups: dict[str, list[int]] = {}
    for i in numeric:
        t = temps[i]
        why = ("setting" if t.setting else "prose" if t.prose else "unkeyed" if not t.values
               else "unrepeated" if i in anchored else "unanchored")
        groups.setdefault(why, []).append(i)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    if len(ranked) == 1:
        why, rows = ranked[0]
        return (f"{len(numeric)} lines hold numbers but {_WHY[why][0]}: e.g. line {rows[0] + 1} "
                f"{_snippet(lines[rows[0]])!r}")
    parts = [f"{len(rows)} lines {_WHY[why][1]} (e.g. line {rows[0] + 1} {_snippet(lines[rows[0]], 48)!r})"
             for why, rows in ranked[:3]]
    return f"{len(numeric)} lines hold numbers but none is read: " + "; ".join(parts)


def _snippet(line: str, width: int = 80) -> str:
    return " ".join(line.replace(CUT_MARK, "").split())[:width]


_ZERO = str.maketrans("0123456789", "0000000000")
