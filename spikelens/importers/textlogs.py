"""Text logs (stdout captures, `main.log`, `log.txt`) read through named line patterns.

A file is claimed when one pattern of the catalogue (`importers/patterns.py`) or of
the user's `[tool.spikelens.patterns]` matches enough step lines in its first 64 KiB
(reading on, up to 8 MiB, for logs with a long preamble such as Megatron's argument
dump). Reading cuts the file into lines a block of bytes at a time (NumPy finds the line
ends; the lines are Arrow strings over the block's bytes), runs the pattern's regexes
over chunks of lines at once (chunks side by side in threads while the file is still
being read; never a Python loop per line), once per shape of line where it can
(`lineshapes`: a log repeats a few line shapes with other digits in them, so the
regexes run on a few hundred shapes and every line is sliced at its shape's spans),
keeps only compact value rows and the signals' small part of each chunk
(`textsignals`) between chunks, so no line outlives its chunk, takes the step of
context lines (llm.c `val loss`, DeepSpeed `OVERFLOW!`) from the nearest step line, and
keeps read order, so a log appended after a resume becomes a second segment where its
step goes back (`segments.py`). One file is one run.

User patterns: the importer is built without arguments by the registry, so it looks
the config up itself, once per working folder (`config.load_config()`, cached). A
caller holding a `Config` (e.g. from `--config`) calls `set_user_patterns(cfg.patterns,
cfg.path)` first; `set_user_patterns(None)` goes back to the lookup.
"""
from __future__ import annotations

import os
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np
import polars as pl

from .. import diagnostics
from ..config import load_config
from ..errors import FormatError, InputError
from . import arrowseries, decoding, keyblocks, linerecords, lineshapes, ranksplit, textsignals
from .textlines import _CUT, split_lines  # noqa: F401 (split_lines: read here and by callers of this module)
from .base import TEXT_SUFFIXES, Importer, Table, kind_suffix, long_table, to_float
from .patterns import CATALOGUE, RESERVED_GROUPS, LinePattern, Rule, user_patterns

_STRUCTURED = frozenset({".json", ".jsonl", ".csv", ".tsv", ".yaml", ".yml", ".xml", ".html"})
"""Suffixes whose own readers say why they refuse a file: the console-log sniff's reason is not theirs."""
SNIFF_BYTES = 64 * 1024
DEEP_SNIFF_BYTES = 8 * 1024 * 1024
_CHUNK = 1024 * 1024

_LINE_COLS = {"row": pl.Int64, "line_no": pl.Int64, "text": pl.String}
"""The lines of a file as read: read order, line number (0-based), text."""
_ROW_COLS = {"row": pl.Int64, "line_no": pl.Int64, "pos": pl.Int32, "step": pl.Int64,
             "wall_time": pl.Float64, "metric": pl.String, "value": pl.Float64}

# ------------------------------------------------------------------ user patterns

_explicit: tuple[LinePattern, ...] | None = None
_by_cwd: dict[str, tuple[LinePattern, ...]] = {}


def set_user_patterns(table: dict | None, source: Path | str | None = None) -> None:
    """Use these `[tool.spikelens.patterns]` (None: look the config up from the cwd)."""
    global _explicit
    _explicit = None if table is None else user_patterns(table, source)


def active_user_patterns() -> tuple[LinePattern, ...]:
    if _explicit is not None:
        return _explicit
    key = os.getcwd()
    if key not in _by_cwd:
        cfg = load_config()
        _by_cwd[key] = user_patterns(cfg.patterns, cfg.path)
    return _by_cwd[key]


def all_patterns() -> tuple[LinePattern, ...]:
    """User patterns first (they win over the catalogue), then the catalogue."""
    return active_user_patterns() + CATALOGUE


# ------------------------------------------------------------------ sniffing


looks_binary = decoding.looks_binary
"""NULs and UTF-16 do not make a log binary; event files, `.wandb` and archives are."""


def _anchor_hits(lines: pl.Series, patterns: tuple[LinePattern, ...]) -> list[int]:
    return [sum(int(lines.str.contains(r.regex).sum()) for r in p.anchors) for p in patterns]


def choose(patterns: tuple[LinePattern, ...], hits: list[int], *, whole_file: bool, final: bool) -> LinePattern | None:
    """The pattern a sniff settles on: user patterns first, then the catalogue's with the
    most step lines; fallback patterns only once the sniff is over. When the whole file
    was read, one matching line is enough."""
    def need(p: LinePattern) -> int:
        return 1 if whole_file else p.min_lines

    tiers = ([p for p in patterns if p.user], [p for p in patterns if not p.user and not p.fallback])
    if final:
        tiers += ([p for p in patterns if p.fallback],)
    for tier in tiers:
        scored = [(hits[patterns.index(p)], -patterns.index(p), p) for p in tier
                  if hits[patterns.index(p)] >= need(p)]
        if scored:
            return max(scored, key=lambda t: t[:2])[2]
    return None


def _lines_of(data: bytes) -> pl.Series:
    text = data.decode("utf-8", errors="replace")
    return pl.Series([text]).str.replace_all("\r\n?", "\n").str.split("\n").explode()


def sniff(path: Path, patterns: tuple[LinePattern, ...]) -> LinePattern | None:
    """Read the file in growing chunks until a pattern is sure (64 KiB first, at most 8 MiB)."""
    hits = [0] * len(patterns)
    carry = b""
    done = 0
    decoder = decoding.Decoder()  # BOM, UTF-16 and NULs as the reader sees them
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(SNIFF_BYTES if done == 0 else _CHUNK)
            done += len(chunk)
            eof = not chunk or done >= os.fstat(fh.fileno()).st_size
            data = carry + decoder.feed(chunk, final=eof)
            if not eof:
                cut = data.rfind(b"\n") + 1
                data, carry = data[:cut], data[cut:]
            if data:
                for i, n in enumerate(_anchor_hits(_lines_of(data), patterns)):
                    hits[i] += n
            last = eof or done >= DEEP_SNIFF_BYTES
            found = choose(patterns, hits, whole_file=eof, final=last)
            if found is not None or last:
                return found


# ------------------------------------------------------------------ reading


READ_BLOCK = 1024 * 1024
"""Bytes decoded and split at a time (cut after a newline): the file is never held as
bytes and as a Python string at once, only as its lines. 1 MiB: 2 MiB blocks took the
read's peak growth over 3x the points' triples (bench_textlogs, session 10)."""


def read_lines(path: Path) -> tuple[pl.DataFrame | None, int]:
    """`split_lines` of the whole file, built a block at a time, and its number of lines
    (newlines + 1); None for a file with nothing but white space. A file that is not
    valid UTF-8 is decoded with replacement characters and a warning."""
    blocks = LineBlocks(path)
    for _ in blocks:
        pass
    return blocks.finish()


class LineBlocks:
    """The lines of a file as `split_lines` frames, one block of bytes at a time (rows and
    line numbers counted across blocks), so that parsing may start before the reading ends;
    `finish()` then gives what `read_lines` gives."""

    def __init__(self, path: Path, shapes: bool = False, keep: bool = True) -> None:
        """`shapes`: the frames given also hold each line's `shape` (`lineshapes`), made
        from the block's bytes; `finish()` gives the lines without it. Without `keep`, the
        frames are not kept once given and `finish()` gives no lines (`has_text` says
        whether the file held any)."""
        self.path = path
        self.shapes = shapes
        self.keep = keep
        self.parts: list[pl.DataFrame] = []
        self.lines = 0
        self.replaced = self.has_text = False
        self.decoder = decoding.Decoder()

    def __iter__(self) -> Iterator[pl.DataFrame]:
        row0 = line0 = 0
        with open(self.path, "rb") as fh:
            carry = b""
            while True:
                block = fh.read(READ_BLOCK)
                last = not block
                data = carry + self.decoder.feed(block, final=last)  # clean UTF-8 (decoding)
                if not last:
                    cut = data.rfind(b"\n") + 1
                    if cut == 0:
                        carry = data
                        continue
                    data, carry = data[:cut], data[cut:]
                self.has_text = self.has_text or bool(data.strip())
                try:
                    text, valid = data.decode("utf-8"), True
                except UnicodeDecodeError:
                    text, valid = data.decode("utf-8", errors="replace"), False
                    self.replaced = True
                if not last and valid:  # ending with its newline
                    part, lines = _split_bytes(data, row0, line0, self.shapes)
                    row0, line0 = row0 + part.height, line0 + lines
                else:
                    if not last:  # ends with its newline: the line after it starts the next block
                        text = text[:-1]
                    part = split_lines(text) if last else _split_block(text)
                    part = part.with_columns(pl.col("row") + row0, pl.col("line_no") + line0)
                    row0 += part.height
                    line0 = int(part.get_column("line_no").max()) + 1 if part.height else line0
                    if self.shapes:
                        part = part.with_columns(lineshapes.shapes_of(part.get_column("text")).alias("shape"))
                del data, text
                if self.keep:
                    self.parts.append(part.drop("shape", strict=False))
                yield part
                if last:
                    break
        self.lines = line0

    def finish(self) -> tuple[pl.DataFrame | None, int]:
        """(the lines, None when not kept or all white space; their number) once read;
        warns about replaced bytes."""
        note = self.decoder.damage.warning(self.path)
        if note:
            diagnostics.warn(note)
        if not self.has_text:
            return None, 0
        return (pl.concat(self.parts, rechunk=False) if self.keep else None), self.lines


def _rechunked(parts: Iterable[pl.DataFrame], size: int) -> Iterator[pl.DataFrame]:
    """The rows of consecutive frames as chunks of `size` rows (the last one shorter)."""
    held: list[pl.DataFrame] = []
    count = 0
    for part in parts:
        held.append(part)
        count += part.height
        while count >= size:
            both = pl.concat(held, rechunk=False)
            yield both.head(size)
            rest = both.slice(size)
            held, count = ([rest] if rest.height else []), rest.height
    if count:
        yield pl.concat(held, rechunk=False)


def _split_bytes(data: bytes, row0: int, line0: int, shapes: bool) -> tuple[pl.DataFrame, int]:
    """`split_lines` of a block of valid UTF-8 that ends with a newline, rows and line
    numbers counted from `row0` and `line0`, and its number of lines; with `shapes`, also
    each line's `shape` (`lineshapes`: one translation of the block's bytes). The line
    ends are found in NumPy and the lines are Arrow strings over the block's own bytes
    (each with its newline or carriage return, cut off by `str.head(-1)`, which moves no
    bytes): no Python string of the block, no list of pieces to explode."""
    buf = np.frombuffer(data, dtype=np.uint8)
    newline = buf == ord("\n")
    ends = np.flatnonzero(newline | (buf == ord("\r")) if b"\r" in data else newline)
    offsets = np.zeros(ends.size + 1, dtype=np.int64)
    offsets[1:] = ends + 1

    import pyarrow as pa  # here, not at import: reading an event file or a CSV never needs it

    cuts = pa.py_buffer(offsets)

    def pieces(block: bytes) -> pl.Series:
        return arrowseries.series(pa.LargeStringArray.from_buffers(ends.size, cuts, pa.py_buffer(block)))

    row = np.arange(row0, row0 + ends.size, dtype=np.int64)
    if ends.size == int(np.count_nonzero(newline)):  # a piece is a line
        line_no = row - row0 + line0
    else:  # a piece's line: the newlines before it
        line_no = line0 + np.concatenate(([0], np.cumsum(newline[ends][:-1])))
    cols = {"row": row, "line_no": line_no.astype(np.int64), "text": pieces(data)}
    if shapes:
        cols["shape"] = pieces(lineshapes.zeroed(data))
    # both columns cut in one pass (a second `with_columns` was a third of the split's time)
    frame = pl.DataFrame(cols).with_columns(pl.col(*(["text", "shape"] if shapes else ["text"])).str.head(-1))
    return frame, int(line_no[-1]) - line0 + 1


def _split_block(text: str) -> pl.DataFrame:
    """`split_lines` of a block that ends at a newline (its last line is complete)."""
    frame = split_lines(text + "\n")
    return frame.head(frame.height - 1)  # the empty piece after that newline belongs to the next block


def _wall_time(col: str) -> pl.Expr:
    return (pl.col(col).str.replace(",", ".", literal=True).str.replace("T", " ", literal=True)
            .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
            .dt.timestamp("us").cast(pl.Float64) / 1e6)


def _groups(regex: str) -> list[str]:
    return list(re.compile(regex).groupindex)


_REST = "(?P<rest>.*)$"
"""How a rule's regex ends when the tail of the line holds its key/value pairs."""


@lru_cache(maxsize=256)
def _head_regex(regex: str) -> tuple[str, bool]:
    """The regex a rule's groups are extracted with, and whether `rest` is then a slice:
    for `^HEAD(?P<rest>.*)$` with no alternation at its top level, `(?P<__head>HEAD)`.
    Capturing a whole line costs the regex engine time in proportion to the span
    captured, and on a line without a newline `.*$` matches whatever follows any match
    of the head, so the head's match decides alone."""
    if not (regex.startswith("^") and regex.endswith(_REST)):
        return regex, False
    from re import _parser  # the stdlib's own regex parser: the top level of the pattern

    if any(op is _parser.BRANCH for op, _ in _parser.parse(regex)):
        return regex, False
    return f"(?P<__head>{regex[: -len(_REST)]})", True


def _extracted(lines: pl.DataFrame, rule: Rule) -> pl.DataFrame:
    """The lines the rule matches: `row, line_no`, the text of each group of its regex
    (`rest` included) and of each field (`__f0`, ...). The step regex and every field
    regex run in one `select`, so Polars runs them side by side."""
    matched = lines.filter(pl.col("text").str.contains(rule.regex))
    fields = [pl.col("text").str.extract(fre, 1).alias(f"__f{i}") for i, fre in enumerate(rule.fields.values())]
    regex, sliced = _head_regex(rule.regex)
    keep = ["row", "line_no"] + (["text"] if sliced else [])
    g = matched.select(*keep, pl.col("text").str.extract_groups(regex).alias("_g"), *fields).unnest("_g")
    if sliced:
        g = g.with_columns(rest=pl.col("text").str.slice(pl.col("__head").str.len_chars())).drop("text", "__head")
    return g


def _extracted_by_shape(lines: pl.DataFrame, rule: Rule, spans: lineshapes.ShapeSpans | None,
                        table: pl.DataFrame | None) -> pl.DataFrame:
    """`_extracted`, with the regexes run once per shape of line (`lineshapes`) where they
    cannot tell digits apart, and every line of a shape sliced at the shape's spans (the
    chunk's `spans.table`); the lines of a shape whose spans could not be vouched for are
    read one by one."""
    if spans is None or table is None:
        return _extracted(lines, rule)
    names = spans.names
    used = table.filter(pl.col("_ok") & pl.col("_hit"))
    joined = lines.join(table, on="_shape", how="left", maintain_order="left")

    def group(n: str) -> pl.Expr:  # a group no line of the chunk has (no time stamp) is not sliced
        if used.get_column(f"{n}.s").null_count() == used.height:
            return pl.lit(None, pl.String).alias(n)
        return pl.col("text").str.slice(pl.col(f"{n}.s"), pl.col(f"{n}.n")).alias(n)

    sliced = joined.filter(pl.col("_ok") & pl.col("_hit")).select(
        "row", "line_no", "_shape", *[group(n) for n in names if n != "__head"],
        *([pl.col("text").str.slice(pl.col("__head.s") + pl.col("__head.n")).alias("rest")] if "__head" in names else []))
    odd = joined.filter(~pl.col("_ok")).select(lines.columns)
    if odd.height == 0:
        return sliced
    return pl.concat([sliced, _extracted(odd, rule)], how="diagonal_relaxed").sort("row")


def shape_spans(rule: Rule) -> lineshapes.ShapeSpans:
    """The rule's regexes as `lineshapes` runs them over shapes (the head of a regex whose
    tail is `rest`, see `_head_regex`)."""
    return lineshapes.ShapeSpans(_head_regex(rule.regex)[0], tuple(rule.fields.values()), rule.pairs,
                                 (lambda pair: _key_value(pair, rule)) if rule.pairs else None)


def _rule_rows(lines: pl.DataFrame, rule: Rule, shapes: pl.DataFrame | None = None,
               spans: lineshapes.ShapeSpans | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One rule over some lines: (its value rows before `rule.post`, its matched lines
    `row, line_no, step`)."""
    names = _groups(rule.regex)
    ctx = [g for g in names if g.startswith("_")]
    metric_groups = [g for g in names if g not in RESERVED_GROUPS and not g.startswith("_")]
    wide_names: list[str] = [rule.metrics.get(grp, grp) for grp in metric_groups] + list(rule.fields)
    table = spans.table(shapes) if shapes is not None and spans is not None and spans.usable else None
    if table is not None and lineshapes.misses_all(table):  # a look-up, not a pass over the lines
        return _no_rows(ctx), pl.DataFrame(schema={c: _ROW_COLS[c] for c in ("row", "line_no", "step")})
    g = _extracted_by_shape(lines, rule, spans if table is not None else None, table)
    g = g.rename({grp: f"__m{i}" for i, grp in enumerate(metric_groups)}
                 | {f"__f{i}": f"__m{len(metric_groups) + i}" for i in range(len(rule.fields))})
    if "step" not in g.columns:
        g = g.with_columns(step=pl.lit(None, pl.String))
    if "timestamp" not in g.columns:
        g = g.with_columns(timestamp=pl.lit(None, pl.String))
    g = g.with_columns(pl.col("step").cast(pl.Int64, strict=False), wall_time=_wall_time("timestamp"))
    base = ["row", "line_no", "step", "wall_time", *ctx]
    seen = g.select("row", "line_no", "step")

    parts = []
    if wide_names:  # numbers first (a float is smaller than its text), then one row per value
        parts.append(_interleaved(g, base, [numbers(g.get_column(f"__m{i}")) for i in range(len(wide_names))],
                                  wide_names))
    if rule.pairs and "rest" in g.columns:
        pairs = _pairs(g, base, rule, shapes, spans).with_columns(key=pl.col("key").str.strip_chars()) \
            .filter(~pl.col("key").is_in(list(rule.ignore)))
        if not rule.keep_other:
            pairs = pairs.filter(pl.col("key").is_in(list(rule.metrics)))
        mapping = dict(rule.metrics)
        metric = pl.col("key").replace(list(mapping), list(mapping.values())) if mapping else pl.col("key")
        pairs = pairs.select(*base, "pos", raw=pl.col("value"), metric=metric).filter(pl.col("raw").is_not_null())
        parts.append(pairs.with_columns(value=numbers(pairs.get_column("raw"))).filter(pl.col("value").is_not_null())
                     .drop("raw"))
    if not parts:
        return _no_rows(ctx), seen
    if len(parts) == 1 and rule.post is None:  # the metric stays categorical until the rows are compacted
        return parts[0].select(*base, "pos", "metric", "value"), seen
    rows = pl.concat([p.select(*base, "pos", pl.col("metric").cast(pl.String), "value") for p in parts])
    return (rows.sort("row", "pos", maintain_order=True) if len(parts) > 1 else rows), seen


def _no_rows(ctx: list[str]) -> pl.DataFrame:
    """The value rows of a rule that read nothing (with its context columns)."""
    return pl.DataFrame(schema={**_ROW_COLS, **{c: pl.String for c in ctx}})


def _pairs(g: pl.DataFrame, base: list[str], rule: Rule, shapes: pl.DataFrame | None,
           spans: lineshapes.ShapeSpans | None) -> pl.DataFrame:
    """`base`, `pos` (1000 on), `key` and `value` (text) of every pair in each line's `rest`:
    sliced at their shape's spans where the line was read by shape, found by the regex
    on the other lines."""
    by_shape = "_shape" in g.columns and spans is not None and spans.pairs is not None
    direct = g.filter(pl.col("_shape").is_null()) if by_shape else g
    found = direct.select(*base, _p=pl.col("rest").str.extract_all(rule.pairs))
    counts = found.get_column("_p").list.len().fill_null(0)
    pos = pl.int_ranges(1000, 1000 + counts, dtype=pl.Int32).explode()
    out = (found.explode("_p").filter(pl.col("_p").is_not_null())
           .with_columns(pos=pos, _kv=_key_value(pl.col("_p"), rule)).unnest("_kv").select(*base, "pos", "key", "value"))
    if not by_shape:
        return out
    rest = pl.col("rest")
    sliced = (g.filter(pl.col("_shape").is_not_null())
              .join(spans.pair_table(shapes), on="_shape", how="inner", maintain_order="left")
              .select(*base, "pos", key=rest.str.slice(pl.col("key.s"), pl.col("key.n")),
                      value=rest.str.slice(pl.col("value.s"), pl.col("value.n"))))
    if out.height == 0:
        return sliced
    return pl.concat([sliced, out]).sort("row", "pos", maintain_order=True)


def _key_value(pair: pl.Expr, rule: Rule) -> pl.Expr:
    """A struct of `key` and `value` (text) of each pair the rule's `pairs` regex matched."""
    if rule.pair_sep is None:
        return pair.str.extract_groups(rule.pairs)
    halves = pair.str.splitn(rule.pair_sep, 2)
    value = halves.struct.field("field_1").str.strip_chars()
    if rule.value_trim:
        value = value.str.strip_chars_end(rule.value_trim).str.strip_chars()
    return pl.struct(key=halves.struct.field("field_0"), value=value)


def _interleaved(g: pl.DataFrame, base: list[str], values: list[pl.Series], names: list[str]) -> pl.DataFrame:
    """One row per value of `values` (one column per metric, a row per line), line by line
    and in metric order, so a chunk of one rule comes out sorted by (row, pos) with no sort;
    missing values (null: the line did not have the field) dropped. Interleaved in NumPy:
    an unpivot puts column after column and needs a gather to reorder. The metric is
    categorical: a gather of small codes, not of one string per value."""
    k, n = len(values), g.height
    matrix = np.column_stack([v.fill_null(0.0).to_numpy() for v in values]).ravel() if n else np.zeros(0)
    line = np.repeat(np.arange(n, dtype=np.int64), k)
    pos = np.tile(np.arange(k, dtype=np.int32), n)
    if any(v.null_count() for v in values):
        present = ~np.column_stack([v.is_null().to_numpy() for v in values]).ravel()
        line, pos, matrix = line[present], pos[present], matrix[present]
    # a column with no value on any line (no time stamps) stays a null, not a gather of nulls
    spread = [pl.col(c).gather(line) if g.get_column(c).null_count() < n else pl.lit(None, g.schema[c]).alias(c)
              for c in base]
    return g.select(*spread, pos=pl.Series(pos), metric=pl.Series(names, dtype=pl.Categorical()).gather(pos),
                    value=pl.Series(matrix))


def _typed(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.select(*[pl.col(c).cast(t) for c, t in _ROW_COLS.items()])


def _compact(rows: pl.DataFrame) -> pl.DataFrame:
    """A chunk's rows as they wait for the rest of the file: no line numbers, small
    integers, the metric categorical, and no wall-time column when no line had one."""
    wall = (pl.lit(None).alias("wall_time") if rows.get_column("wall_time").null_count() == rows.height
            else pl.col("wall_time").cast(pl.Float64))
    return rows.select(pl.col("row").cast(pl.Int32), pl.col("pos").cast(pl.Int16), pl.col("step").cast(pl.Int64),
                       wall, pl.col("metric").cast(pl.Categorical()), pl.col("value").cast(pl.Float64))


def _lean(rows: pl.DataFrame) -> pl.DataFrame:
    """A chunk's rows as they wait for a post over the whole rule: the post's columns,
    small integers and the metric categorical (the post keeps the metric's type)."""
    return rows.with_columns(pl.col("row", "line_no").cast(pl.Int32), pl.col("pos").cast(pl.Int16),
                             pl.col("metric").cast(pl.Categorical()))


def numbers(raw: pl.Series) -> pl.Series:
    """`to_float` of every cell, the cheap way: a plain cast reads what the regexes capture
    (numbers, `nan`, `inf`); only the cells it cannot read take the spelling-aware path."""
    fast = raw.cast(pl.Float64, strict=False)
    if fast.null_count() > raw.null_count():  # a cast of null is null: equal counts, nothing missed
        idx = (fast.is_null() & raw.is_not_null()).arg_true()
        slow = raw.gather(idx).to_frame("raw").select(to_float(pl.col("raw"))).to_series()
        fast = fast.scatter(idx, slow)
    return fast


def _resolve_steps(rows: pl.DataFrame, anchors: pl.DataFrame, rule: Rule) -> pl.DataFrame:
    """Give rows of a context rule the step of the nearest step line before/after them."""
    if rule.step_from == "line" or rows.height == 0:
        return rows
    a = anchors.rename({"step": "_s"})
    r = rows.drop("step").sort("row")
    prev = r.join_asof(a, on="row", strategy="backward").get_column("_s")
    nxt = r.join_asof(a, on="row", strategy="forward").get_column("_s")
    if rule.step_from == "previous":
        fallback = (nxt - 1).clip(lower_bound=0) if rule.before_first == "next-1" else pl.Series([0] * r.height)
        step = prev.fill_null(fallback.cast(pl.Int64))
    else:
        step = nxt.fill_null(prev)
    return r.with_columns(step=step.fill_null(0).cast(pl.Int64)).select(list(_ROW_COLS))


def _counts(rows: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One row per step: how many of the rule's lines fell on it."""
    per_line = rows.group_by("row", maintain_order=True).agg(pl.col("line_no", "step", "wall_time").first())
    return (
        per_line.group_by("step", maintain_order=True)
        .agg(pl.col("row").max(), pl.col("line_no").max(), pl.col("wall_time").max(), value=pl.len().cast(pl.Float64))
        .with_columns(pos=pl.lit(999, pl.Int32), metric=pl.lit(metric))
        .select(list(_ROW_COLS))
    )


PARSE_THREADS = 2
CHUNK_LINES = 50_000
"""Lines parsed at a time: the strings a rule extracts live for one chunk only, so memory
grows with the values read, not with the text."""
_OUT_COLS = {"row": pl.Int32, "step": pl.Int64, "wall_time": pl.Float64, "metric": pl.Categorical(),
             "value": pl.Float64}


def _shaped(chunk: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The chunk with each line's shape id (`_shape`), and the shapes (`_shape`, `shape`);
    None when the lines have too many shapes for reading by shape to pay."""
    if "shape" in chunk.columns:  # made by the reader (`LineBlocks`)
        shape, chunk = chunk.get_column("shape"), chunk.drop("shape")
    else:
        shape = lineshapes.shapes_of(chunk.get_column("text"))
    distinct = shape.unique(maintain_order=True)
    if not lineshapes.worth_it(distinct.len(), chunk.height):
        return chunk, None
    shapes = distinct.to_frame("shape").with_row_index("_shape")
    ids = shape.to_frame("shape").join(shapes, on="shape", how="left", maintain_order="left").get_column("_shape")
    return chunk.with_columns(ids), shapes


def _near(shapes: pl.DataFrame | None, nears: list[str], known: dict[str, bool]) -> pl.Expr:
    """Lines that look like a rule's lines (any `near` regex), found once per shape for the
    whole file (`lineshapes.per_shape`)."""
    return lineshapes.per_shape(shapes, pl.any_horizontal([pl.col("text").str.contains(n) for n in nears]), nears,
                                known)


def _chunks(lines: pl.DataFrame) -> list[tuple[int, int]]:
    """(first row, end row) of each chunk; rows are the read order, 0..n-1."""
    n = lines.height
    return [(lo, min(n, lo + CHUNK_LINES)) for lo in range(0, max(n, 1), CHUNK_LINES)]


def _by_row_pos(rows: pl.DataFrame) -> pl.DataFrame:
    """Rows in (row, pos) order, stable; sorted only when they are not (one pass to check
    is cheaper than a sort of millions of rows)."""
    row, pos = pl.col("row"), pl.col("pos")
    ordered = rows.height < 2 or rows.select(
        ((row.diff() > 0) | ((row.diff() == 0) & (pos.diff() >= 0))).slice(1).all()).item()
    return rows if ordered else rows.sort("row", "pos", maintain_order=True)


def _spanned(chunks: Iterable[pl.DataFrame], spans: list[tuple[int, int]]) -> Iterator[pl.DataFrame]:
    """The chunks, noting each one's (first row, end row) in `spans` as it passes."""
    lo = 0
    for chunk in chunks:
        spans.append((lo, lo + chunk.height))
        lo += chunk.height
        yield chunk
    if not spans:  # no line at all: one empty chunk, as `_chunks` gives
        spans.append((0, 0))
        yield pl.DataFrame(schema=_LINE_COLS)


def _in_order(pool: ThreadPoolExecutor, work: Callable, chunks: Iterable[pl.DataFrame]) -> Iterator:
    """`pool.map(work, chunks)` that takes a chunk from the reader only when at most one
    more than the threads waits: `Executor.map` takes every chunk at once, which holds the
    whole file in chunks (and each chunk's shapes) while the first are parsed."""
    waiting: deque = deque()
    for chunk in chunks:
        waiting.append(pool.submit(work, chunk))
        if len(waiting) >= PARSE_THREADS + 1:
            yield waiting.popleft().result()
    while waiting:
        yield waiting.popleft().result()


def _in(frame: pl.DataFrame, lo: int, hi: int) -> pl.DataFrame:
    return frame.filter((pl.col("row") >= lo) & (pl.col("row") < hi))


def _needs_whole(rule: Rule) -> bool:
    """Rules whose rows wait for the whole file: a `post` may look at every row of its
    rule, context lines take the step of a step line maybe in another chunk, counts are
    per step."""
    return (rule.post is not None and not rule.post_per_line) or rule.step_from != "line" or rule.counts is not None


def parse_lines(lines: pl.DataFrame, pattern: LinePattern) -> tuple[pl.DataFrame, dict]:
    """Every value the pattern reads, in read order: `row, step, wall_time, metric` (categorical)
    and `value`; plus counts for diagnostics and the table meta of the log's signals
    (`signals`, see `textsignals`).

    Lines are parsed a chunk at a time (every rule's regexes over the chunk at once); a
    chunk leaves compact value rows sorted by (row, pos), its step lines' steps, its
    near misses and its part of the signals, and its strings are dropped. What needs the whole file comes after, on
    compact rows: a rule's `post`, the steps of context lines (nearest step line, maybe
    in another chunk), per-step counts, and dropping a value that repeats the previous
    one of its metric at the same step."""
    return parse_chunks((lines.slice(lo, hi - lo) for lo, hi in _chunks(lines)), pattern)


def parse_chunks(chunks: Iterable[pl.DataFrame], pattern: LinePattern) -> tuple[pl.DataFrame, dict]:
    """`parse_lines` over the lines given a chunk at a time (consecutive rows, the first
    chunk from row 0): a reader may still be reading the file while the first chunks are
    parsed."""
    spans: list[tuple[int, int]] = []
    nears = [r.near for r in pattern.rules if r.near]
    per_rule: list[list[pl.DataFrame]] = [[] for _ in pattern.rules]
    anchor_parts: list[pl.DataFrame] = []
    near_parts: list[pl.DataFrame] = []
    matched_lines = 0

    by_shape = [shape_spans(rule) for rule in pattern.rules]
    near_shapes: dict[str, bool] = {}  # shared by the parse threads: each writes whole answers
    signal_shapes: dict[str, dict[str, bool]] = {}
    signals = textsignals.Signals(pattern)

    def one_chunk(lines_of_chunk: pl.DataFrame):
        chunk, shapes = _shaped(lines_of_chunk)
        out, seen_rows, anchors = [], [], []
        for rule, rule_spans in zip(pattern.rules, by_shape):
            rows, seen = _rule_rows(chunk, rule, shapes, rule_spans)
            if rule.post is not None and rule.post_per_line:
                rows = _typed(rule.post(rows))
            out.append(_lean(rows) if rule.post is not None and not rule.post_per_line
                       else _typed(rows) if _needs_whole(rule) else _compact(rows))
            seen_rows.append(seen.get_column("row"))
            if rule.step_from == "line":
                anchors.append(seen.select("row", "step").filter(pl.col("step").is_not_null()))
        matched = pl.concat(seen_rows).unique() if len(seen_rows) > 1 else seen_rows[0]
        near = (chunk.filter(_near(shapes, nears, near_shapes) & ~pl.col("row").is_in(matched.implode()))
                if nears else chunk.head(0)).select("row", "line_no", "text")
        signs = textsignals.chunk_signals(chunk, pattern, shapes, signal_shapes)
        return out, pl.concat(anchors), near, matched.len(), signs

    # Polars releases the GIL: chunks parse side by side (in order, a few at a time)
    with ThreadPoolExecutor(max_workers=PARSE_THREADS) as pool:
        for result, anchors, near, n_matched, signs in _in_order(pool, one_chunk, _spanned(chunks, spans)):
            signals.add(signs)
            for i, rows in enumerate(result):
                per_rule[i].append(rows)
            anchor_parts.append(anchors)
            near_parts.append(near)
            matched_lines += n_matched
    anchors = pl.concat(anchor_parts).sort("row")
    parts: list[list[pl.DataFrame]] = [[] for _ in spans]
    for rule, chunks in zip(pattern.rules, per_rule):
        if _needs_whole(rule):  # few rows, or a post that may look far
            rows = pl.concat(chunks, how="diagonal_relaxed")
            rows = rule.post(rows) if rule.post is not None and not rule.post_per_line else rows
            if rule.step_from != "line" or rule.counts:
                rows = _resolve_steps(_typed(rows), anchors, rule)
                extra = _counts(rows, rule.counts) if rule.counts and rows.height else None
                rows = pl.concat([rows, extra]) if extra is not None else rows
            rows = _compact(_by_row_pos(rows))
            for k, (lo, hi) in enumerate(spans):
                parts[k].append(_in(rows, lo, hi) if len(spans) > 1 else rows)
        else:
            for k, rows in enumerate(chunks):
                parts[k].append(rows)
        chunks.clear()
    out, carry, raw_height = [], None, 0
    for k in range(len(spans)):
        filled = [p for p in parts[k] if p.height]
        parts[k] = []
        if not filled:
            continue
        if len(filled) > 1:  # each part is sorted; ties (one line, two rules) keep rule order
            frame = pl.concat(filled, how="diagonal_relaxed").sort("row", "pos", maintain_order=True)
        else:
            frame = filled[0]
        if frame.get_column("step").null_count():  # a filter copies: only when something goes
            frame = frame.filter(pl.col("step").is_not_null())
        raw_height += frame.height
        frame, carry = _drop_repeats(frame, carry)
        out.append(frame.select("row", "step", "wall_time", "metric", "value"))  # the compact columns, no copy
    # a log without time stamps carries no wall-time column until the frame is built
    deduped = (pl.concat(out, how="diagonal_relaxed" if len({f.schema["wall_time"] for f in out}) > 1 else "vertical",
                         rechunk=False).select([pl.col(c).cast(t) for c, t in _OUT_COLS.items()])
               if out else pl.DataFrame(schema=_OUT_COLS))
    info = {"duplicates_dropped": raw_height - deduped.height,
            "matched_lines": matched_lines,
            "near_misses": pl.concat(near_parts).sort("row"),
            "signals": signals.meta(deduped)}
    return deduped, info


def _drop_repeats(frame: pl.DataFrame, carry: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Drop a row whose step and value equal the previous row of the same metric (a line
    printed twice); `carry` holds each metric's last row of the chunks before, put in
    front of the frame so that a metric's first row here meets it."""
    cols = ["step", "metric", "value"]
    both = frame if carry is None else pl.concat([carry, frame.select(cols)], how="vertical_relaxed")
    last = both.select(cols).group_by("metric").agg(pl.all().last()).select(cols)
    same_step = pl.col("step") == pl.col("step").shift(1).over("metric")
    if not both.select(same_step.any()).item():  # the common case: no metric twice at one step
        return frame, last
    same = (same_step & pl.col("value").eq_missing(pl.col("value").shift(1).over("metric"))).fill_null(False)
    dup = both.select(same).to_series()
    if carry is not None:
        dup = dup.slice(carry.height)
    return (frame.filter(~dup) if dup.any() else frame), last


GENERAL_SNIFF_BYTES = 1024 * 1024
"""The head a line-structure sniff reads at most (64 KiB at a time until it is sure)."""


def general_sniff(path: Path, named: bool = False) -> linerecords.Verdict | None:
    """`linerecords.sniff` of the file's head, read in growing pieces until it reads as a
    console log or 1 MiB has been looked at (`named`: see `linerecords.sniff`). A larger file
    whose head does not read as a log is sniffed at its tail too: a script may print a data
    frame or a config for megabytes before its first record, and a run's records, if it ran at
    all, reach the end of the file."""
    verdict = None
    size = path.stat().st_size
    with open(path, "rb") as fh:
        data = b""
        while True:
            chunk = fh.read(SNIFF_BYTES)
            data += chunk
            whole = not chunk or len(data) >= size
            verdict = linerecords.sniff(decoding.text_head(data), whole, named=named)  # BOM, UTF-16, NULs as read
            if (verdict is not None and verdict.readable) or whole:
                return verdict
            if len(data) >= GENERAL_SNIFF_BYTES:
                break
        if size >= 2 * GENERAL_SNIFF_BYTES:
            fh.seek(size - GENERAL_SNIFF_BYTES)
            tail = fh.read(GENERAL_SNIFF_BYTES)
            tail = tail[tail.find(b"\n") + 1:]  # from the first whole line
            late = linerecords.sniff(decoding.text_head(tail), True)
            if late is not None and late.readable:
                return late
        return verdict


def head_headers(path: Path) -> list:
    """The table header rows (`linetokens.header_cells`) among the file's first 256 KiB of lines."""
    with open(path, "rb") as fh:
        text = decoding.text_head(fh.read(4 * SNIFF_BYTES))
    found: dict[tuple, list] = {}
    for raw in text.replace("\r\n", "\n").split("\n"):
        for line in raw.split("\r"):
            head = linerecords.header_cells(line) if len(line) < 400 else None
            if head is not None:
                found.setdefault(tuple(head), head)
    return list(found.values())


def read_general(chunks: Iterable[pl.DataFrame], headers: Iterable = ()) -> tuple[pl.DataFrame, dict]:
    """Every value of a console log, given a chunk of lines at a time (`linerecords`):
    `row, step, wall_time, metric, value` in read order, and the file's meta. `headers`:
    table header rows of the file's head (`head_headers`), for rows whose chunk has none."""
    book = linerecords.ShapeBook(headers)
    known: dict = {}
    with ThreadPoolExecutor(max_workers=PARSE_THREADS) as pool:
        # consumed as parsed: a chunk's output is held once, in the parts `assemble` gathers
        return linerecords.assemble(_in_order(pool, lambda chunk: linerecords.parse_chunk(chunk, book, known),
                                              chunks), book)


class TextLogImporter(Importer):
    """llm.c, nanoGPT, modded-nanogpt, build-nanogpt, Megatron, DeepSpeed logs and user patterns."""

    name = "text"
    looks_for = "*.log, *.txt, *.out, *.err text logs matching a known line pattern"

    def __init__(self) -> None:
        self._sniffed: dict[tuple, LinePattern | None] = {}
        self._sniffed_with: tuple[LinePattern, ...] | None = None
        self._general: dict[tuple, linerecords.Verdict | None] = {}

    def claims(self, path: Path, head: bytes) -> bool:
        if kind_suffix(path) not in TEXT_SUFFIXES:  # `train.log.1`, Paddle's `workerlog.0`: text logs
            return False
        head = decoding.past_zeros(path, head)  # a log overwritten in place: zeros, then its text
        if looks_binary(head) or not head.strip():
            return False
        return self.pattern_for(path) is not None or self.general_for(path) is not None

    def claims_named(self, path: Path, head: bytes) -> bool:
        """A file named on its own is read by its content whatever its extension (a log
        pasted into `log.md`, a `train.stdout`)."""
        head = decoding.past_zeros(path, head)
        if looks_binary(head) or not head.strip():
            return False
        if self.pattern_for(path) is not None:
            return True
        verdict = self.general_for(path)  # one that looks like a log and cannot be read is said why
        if verdict is None and kind_suffix(path) in TEXT_SUFFIXES:  # its banners outnumber its numbers
            verdict = general_sniff(path, named=True)
        return verdict is not None and (verdict.readable or path.suffix.lower() not in _STRUCTURED)

    def general_for(self, path: Path) -> linerecords.Verdict | None:
        """What the line-structure sniff makes of a file no named pattern claims: a
        console log, a file that looks like one but cannot be read (with the reason),
        or None (cached per file version)."""
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self._general:
            self._general[key] = general_sniff(path)
        return self._general[key]

    def pattern_for(self, path: Path) -> LinePattern | None:
        """The pattern a sniff settles on (cached per file version and pattern set)."""
        user = active_user_patterns()
        if user is not self._sniffed_with:
            self._sniffed, self._sniffed_with = {}, user
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self._sniffed:
            self._sniffed[key] = sniff(path, user + CATALOGUE)
        return self._sniffed[key]

    def read(self, path: Path) -> list[Table]:
        """Lines are parsed as they are read (the first chunks in threads while the file is
        still being read and split), and no line is kept once its chunk is parsed."""
        try:
            pattern = self.pattern_for(path)
            general = self.general_for(path) if pattern is None else None
            if general is not None and general.readable:
                got = self._read_general(path)
                got = got if isinstance(got, list) else [got]
                if not any(_objective_in(t.frame) for t in got):  # only settings keyed (`epoch 0 lr 0.0001`):
                    from . import barerows  # the loop's bare rows between them, maybe (see below)

                    return barerows.read(path, keyed=sum(t.frame.height for t in got)) or got
                return got
            blocks = LineBlocks(path, shapes=pattern is not None, keep=False)
            if pattern is None:  # read through all the same: an empty log is named as such
                for _ in blocks:
                    pass
            else:
                rows, info = parse_chunks(_rechunked(blocks, CHUNK_LINES), pattern)
            _, n_lines = blocks.finish()
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
        if not blocks.has_text:
            raise FormatError(path, "empty text log")
        if pattern is None:
            if _key_blocks(path):  # one key a line, a block a record (RLlib's `pretty_print`)
                return [keyblocks.read(path)]
            if general is None:  # a file named on its own, its banners outnumbering its numbers
                general = general_sniff(path, named=True)
            if general is not None and general.reason:
                from . import barerows  # (here: it reads through barenumbers, which imports this module)

                rows = barerows.read(path)  # no key names a number: bare rows among other lines, maybe
                if rows is not None:
                    return rows
                raise FormatError(path, general.reason)
            names = ", ".join(p.name for p in all_patterns())
            raise FormatError(path, f"no known text-log line pattern matches ({names}) and its lines "
                                    f"hold no repeating keyed numbers")
        if not _objective_in(rows):
            # a named pattern that finds no loss (DeepSpeed's engine lines) where the script
            # prints its own (`[Step 1/100] Loss: 5.22 | ...`): the line structure reads it
            general = _general_with_objective(path)
            if general is not None:
                return general
        self._warn(path, pattern, info, rows)
        meta = {"pattern": pattern.name, "lines": n_lines,
                "matched_lines": info["matched_lines"], "duplicates_dropped": info["duplicates_dropped"],
                **info["signals"]}
        ranked = _per_rank(path, rows, meta, shapes=True,
                           parse=lambda chunks: (lambda r, i: (r, i["signals"]))(*parse_chunks(chunks, pattern)))
        if ranked:
            return ranked
        frame = long_table(rows.get_column("step"), rows.get_column("wall_time"),
                           rows.get_column("metric"), rows.get_column("value"))
        return [Table(frame=frame, source=path, format="text", run_key=str(path), segment_key=str(path),
                      meta=meta)]

    @staticmethod
    def _read_general(path: Path) -> Table | list[Table]:
        """A console log no named pattern claims, read through its line structure
        (`linerecords`)."""
        try:
            headers = head_headers(path)
            blocks = LineBlocks(path, shapes=True, keep=False)
            rows, info = read_general(_rechunked(blocks, CHUNK_LINES), headers)
            _, n_lines = blocks.finish()
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
        if rows.height == 0:
            from ..passedover import numbered_lines, reason

            if path.suffix.lower() in _STRUCTURED:  # a summary or a config, by what the file holds
                raise FormatError(path, reason(path))
            raise FormatError(path, f"read as a console log, but no line held a keyed number ({numbered_lines(path)})")
        meta = {"pattern": linerecords.CONSOLE.name, "lines": n_lines, **info}
        ranked = _per_rank(path, rows, meta, shapes=True, parse=lambda chunks: read_general(chunks, headers))
        if ranked:
            return ranked
        frame = long_table(rows.get_column("step"), rows.get_column("wall_time"),
                           rows.get_column("metric"), rows.get_column("value"))
        return Table(frame=frame, source=path, format="text", run_key=str(path), segment_key=str(path), meta=meta)

    @staticmethod
    def _warn(path: Path, pattern: LinePattern, info: dict, rows: pl.DataFrame) -> None:
        near = info["near_misses"]
        if near.height:
            first = near.row(0, named=True)
            snippet = first["text"].replace(_CUT, "")[:80]
            diagnostics.warn(f"{path}: {near.height} line(s) look like {pattern.name} lines but could not be "
                             f"read (cut off or spliced), first at line {first['line_no'] + 1}: {snippet!r}")
        if rows.height == 0:
            diagnostics.warn(f"{path}: matched the {pattern.name} pattern but held no readable values")


_OBJECTIVES = ("loss", "eval_loss", "reward")


def _objective_in(rows: pl.DataFrame) -> bool:
    """Whether rows hold a metric that stands for the run's objective (a loss or a reward)."""
    from ..frame import infer_roles

    names = rows.get_column("metric").unique().to_list() if rows.height else []
    return any(r in _OBJECTIVES for r in infer_roles(names).values())


def _key_blocks(path: Path) -> bool:
    """Whether the file's head is a log of result blocks printed one key a line (`keyblocks`)."""
    with open(path, "rb") as fh:
        head = decoding.text_head(fh.read(SNIFF_BYTES))
    return keyblocks.claims_text(head.rsplit("\n", 1)[0] if len(head) >= SNIFF_BYTES else head)


def _general_with_objective(path: Path) -> list[Table] | None:
    """The file read through its line structure, when that finds an objective."""
    try:
        got = TextLogImporter._read_general(path)
    except FormatError:
        return None
    tables = got if isinstance(got, list) else [got]
    return tables if any(_objective_in(t.frame) for t in tables) else None


def _per_rank(path: Path, rows: pl.DataFrame, meta: dict, *, shapes: bool,
              parse: Callable[[Iterable[pl.DataFrame]], tuple[pl.DataFrame, dict]]) -> list[Table]:
    """One table a rank when ranks print values of their own (see `ranksplit`), else []."""
    if not ranksplit.several_ranks(rows):
        return []
    ranked = ranksplit.per_rank(path, lambda: _rechunked(LineBlocks(path, shapes=shapes, keep=False), CHUNK_LINES),
                                parse)
    return [Table(frame=long_table(r_rows.get_column("step"), r_rows.get_column("wall_time"),
                                   r_rows.get_column("metric"), r_rows.get_column("value")),
                  source=path, format="text", run_key=f"{path}[rank{r}]", segment_key=f"{path}[rank{r}]",
                  run_name=f"{path.name}[rank{r}]", meta={**meta, **r_meta, "rank": r})
            for r, r_rows, r_meta in ranked]
