"""Line shapes: run a rule's regexes once per shape of line, not once per line.

A log prints the same few lines over and over with other numbers in them. A line's
shape is the line with every ASCII digit written as `0`: it keeps every other
character and every position. A regex that treats all ten digits alike (no digit
literal, no class holding some digits but not others: `digit_uniform`) matches every
line of one shape at the same places, so where it matches one line of a shape, and
where its groups start and end, it does on all of them. A chunk of lines is then read
by taking each shape's group spans once (`shape_spans`) and slicing every line of the
shape there: the regex engine sees a few hundred shapes instead of 10^5 lines.

The spans come from Python's `re` (Polars gives no positions) run on two probes of the
shape (its digits filled in two ways), and are kept only where Polars' own regex engine,
which reads the lines everywhere else, captures the same text on both probes; any other
shape is read line by line as before.
"""
from __future__ import annotations

import re
import threading
import warnings
from functools import lru_cache
from re import _parser as sre  # the stdlib's regex parser: the structure of a pattern
from typing import Callable, Iterable, NamedTuple

import numpy as np
import polars as pl

from . import arrowseries

_DIGITS = frozenset(range(ord("0"), ord("9") + 1))
_TO_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_CATEGORY_DIGITS = {
    sre.CATEGORY_DIGIT: True, sre.CATEGORY_NOT_DIGIT: False, sre.CATEGORY_WORD: True,
    sre.CATEGORY_NOT_WORD: False, sre.CATEGORY_SPACE: False, sre.CATEGORY_NOT_SPACE: True,
    sre.CATEGORY_LINEBREAK: False, sre.CATEGORY_NOT_LINEBREAK: True,
}
"""Whether each escape class (`\\d`, `\\w`, `\\s`, ...) holds the ASCII digits (all or none)."""

MAX_SHARE = 0.05
MIN_SHAPES = 16
"""Shapes are used when a chunk has at most MAX_SHARE shapes per line, or MIN_SHAPES
shapes (a log of free text has nearly one shape a line: its lines are read one by one)."""


def worth_it(shapes: int, lines: int) -> bool:
    return shapes <= max(MIN_SHAPES, MAX_SHARE * lines)


@lru_cache(maxsize=256)
def digit_uniform(regex: str) -> bool:
    """The regex cannot tell one ASCII digit from another (False when Python cannot parse it)."""
    try:
        with warnings.catch_warnings():
            # Python warns where Rust reads a class differently (`[\d&&[5-9]]` is a set
            # operation in Rust, three members and a literal `]` in Python): not provable
            warnings.simplefilter("error", FutureWarning)
            return _uniform(sre.parse(regex))
    except (re.error, RecursionError, TypeError, ValueError, FutureWarning):
        return False


def _uniform(items) -> bool:
    for op, av in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL):
            if av in _DIGITS:
                return False
        elif op is sre.IN:
            if not _class_uniform(av):
                return False
        elif op is sre.SUBPATTERN:
            if not _uniform(av[-1]):
                return False
        elif op is sre.BRANCH:
            if not all(_uniform(b) for b in av[1]):
                return False
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            if not _uniform(av[2]):
                return False
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            if not _uniform(av[1]):
                return False
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            if not _uniform(av):
                return False
        elif op is sre.CATEGORY:
            if av not in _CATEGORY_DIGITS:
                return False
        elif op not in (sre.ANY, sre.AT):
            return False  # back-references and anything unknown: not provably uniform
    return True


def _class_uniform(members) -> bool:
    """A character class holds all ten ASCII digits or none of them."""
    held: set[int] = set()
    for op, av in members:
        if op is sre.NEGATE:
            continue  # the complement of all-or-none is all-or-none
        if op is sre.LITERAL:
            held |= {av} & _DIGITS
        elif op is sre.RANGE:
            held |= set(range(av[0], av[1] + 1)) & _DIGITS
        elif op is sre.CATEGORY:
            if av not in _CATEGORY_DIGITS:
                return False
            held |= _DIGITS if _CATEGORY_DIGITS[av] else set()
        else:
            return False
    return not held or held == _DIGITS


def zeroed(data: bytes) -> bytes:
    """The bytes with every ASCII digit written as `0`: the shapes of the lines they hold."""
    return data.translate(_TO_ZERO)


def shapes_of(text: pl.Series) -> pl.Series:
    """Each line with its ASCII digits written as `0` (byte for byte: positions kept)."""
    import pyarrow as pa  # here, not at import: a run without text logs never loads it

    arr = text.to_arrow(compat_level=pl.CompatLevel.oldest())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    validity, offsets, data = arr.buffers()
    if data is None:  # no characters at all
        return text
    digits = pa.py_buffer(zeroed(data.to_pybytes()))
    out = pa.LargeStringArray.from_buffers(len(arr), offsets, digits, validity, arr.null_count, arr.offset)
    return arrowseries.series(out, text.name)


def per_shape(shapes: pl.DataFrame | None, test: pl.Expr, regexes: Iterable[str], known: dict[str, bool]) -> pl.Expr:
    """`test` (a boolean expression of a line's `text` that runs `regexes`), answered once
    per shape for the whole file (`known`: shape -> answer, one dict per test) when the
    regexes cannot tell digits apart: a probe of a shape stands for its lines. Without
    shapes (`_shape` ids of the lines and the `shapes` frame, see `textlogs._shaped`), or
    with a regex that tells digits apart, the test itself."""
    if shapes is None or not all(digit_uniform(r) for r in regexes):
        return test
    texts = shapes.get_column("shape").to_list()
    new = [t for t in dict.fromkeys(texts) if t not in known]
    if new:
        probe = pl.Series("text", probes(new)[0], dtype=pl.String)
        known.update(zip(new, probe.to_frame().select(test).to_series().to_list()))
    yes = pl.Series([known[t] for t in texts], dtype=pl.Boolean)
    return pl.col("_shape").is_in(shapes.get_column("_shape").filter(yes).implode())


@lru_cache(maxsize=1)
def _fill() -> np.ndarray:
    """Digits that fill the probes' digit places: two fixed pseudo-random sequences (made on
    first use: importing `numpy.random` is no cost of a run without text logs)."""
    return np.random.default_rng(12345).integers(ord("0"), ord("9") + 1, size=(2, 1 << 16), dtype=np.uint8)


def probes(shapes: list[str]) -> tuple[list[str], list[str]]:
    """Two lines of each shape, its digits filled in two pseudo-random ways (a span found
    at another place would show as other digits on one of them)."""
    pairs = [_probe_pair(shape) for shape in shapes]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@lru_cache(maxsize=4096)
def _probe_pair(shape: str) -> tuple[str, str]:
    """`probes` of one shape, made once: every test a file's shapes are probed with (the
    signals' ten) asks for the same lines."""
    out = []
    for fill in _fill():
        data = np.frombuffer(shape.encode("utf-8"), dtype=np.uint8).copy()
        places = data == ord("0")
        data[places] = np.resize(fill, data.size)[places]
        out.append(data.tobytes().decode("utf-8"))
    return out[0], out[1]


def group_spans(regex: str, lines: list[str], groups: list[str] | None = None) -> list[dict[str, tuple[int, int]] | None]:
    """For each line: the (start, length) of each named group of the regex's first match
    (groups that did not take part are left out), or None where the regex does not match.
    `groups` (default: the regex's named groups) may name numbered groups as strings."""
    compiled = re.compile(regex)
    names = groups if groups is not None else list(compiled.groupindex)
    keys = [int(g) if g.isdigit() else g for g in names]
    out: list[dict[str, tuple[int, int]] | None] = []
    for line in lines:
        m = compiled.search(line)
        if m is None:
            out.append(None)
            continue
        spans = {}
        for name, key in zip(names, keys):
            a, b = m.span(key)
            if a >= 0:
                spans[name] = (a, b - a)
        out.append(spans)
    return out


def agrees(regex: str, lines: list[str], spans: list[dict | None], groups: list[str] | None = None) -> list[bool]:
    """Where Polars' regex engine matches as Python's did and captures the text at each span."""
    frame = pl.DataFrame({"text": lines}, schema={"text": pl.String})
    hit = frame.select(pl.col("text").str.contains(regex)).to_series().to_list()
    names = groups if groups is not None else list(re.compile(regex).groupindex)
    if names and all(n.isdigit() for n in names):
        got = {n: frame.select(pl.col("text").str.extract(regex, int(n))).to_series().to_list() for n in names}
    else:
        struct = frame.select(pl.col("text").str.extract_groups(regex)).to_series()
        got = {n: struct.struct.field(n).to_list() for n in names}
    ok = []
    for i, (line, span) in enumerate(zip(lines, spans)):
        if (span is not None) != bool(hit[i]):
            ok.append(False)
            continue
        ok.append(all(got[n][i] == (line[span[n][0]: span[n][0] + span[n][1]] if n in span else None)
                      for n in names) if span is not None else True)
    return ok


def misses_all(table: pl.DataFrame) -> bool:
    """The regex of a `ShapeSpans.table` matches no line of its shapes, and that is vouched
    for on each."""
    return bool(table.get_column("_ok").all()) and not table.get_column("_hit").any()


class _Learnt(NamedTuple):
    """What a `ShapeSpans` knows of the shapes seen: a row per shape (`table`, its row for
    a shape's text in `row`) and a row per pair of each shape (`pairs`, in `pair_rows`)."""
    table: pl.DataFrame
    row: dict[str, int]
    pairs: pl.DataFrame
    pair_rows: dict[str, list[int]]


class ShapeSpans:
    """One rule's regex and fields over line shapes, remembered per shape for the whole
    file (the shapes of one chunk are mostly those of the last)."""

    def __init__(self, regex: str, fields: tuple[str, ...], pairs: str | None = None,
                 key_value: Callable[[pl.Expr], pl.Expr] | None = None) -> None:
        """`key_value`: how the line-by-line path reads a pair's match into a struct of
        `key` and `value` (default: the `pairs` regex's groups); a shape is kept only
        where the groups' texts are what it reads."""
        self.found = [(regex, None, list(re.compile(regex).groupindex))] + \
            [(f, ["1"], [f"__f{i}"]) for i, f in enumerate(fields)]
        self.names = [n for _, _, names in self.found for n in names]
        self.tail = "__head" if "__head" in self.names else "rest" if "rest" in self.names else None
        """Where `pairs` are looked for: after the `__head` group, or in the `rest` group."""
        self.pairs = pairs if pairs is not None and self.tail else None
        """Key/value pairs found again and again in the tail (`Rule.pairs`)."""
        self.key_value = key_value or (lambda pair: pair.str.extract_groups(pairs))
        self.usable = (all(digit_uniform(r) for r, _, _ in self.found)
                       and all(re.compile(f).groups >= 1 for f in fields)  # a field without its group reads nothing
                       and (pairs is None or (self.pairs is not None and digit_uniform(pairs))))
        self._columns = {"shape": pl.String, "_ok": pl.Boolean, "_hit": pl.Boolean,
                         **{f"{n}.{k}": pl.Int64 for n in self.names for k in ("s", "n")}}
        self._pair_columns = {"shape": pl.String, "pos": pl.Int32, "key.s": pl.Int64, "key.n": pl.Int64,
                              "value.s": pl.Int64, "value.n": pl.Int64}
        self._learnt = _Learnt(pl.DataFrame(schema=self._columns), {}, pl.DataFrame(schema=self._pair_columns), {})
        self._learning = threading.Lock()

    def table(self, shapes: pl.DataFrame) -> pl.DataFrame:
        """Per shape (`_shape`, `shape`): `_hit` (the regex matches its lines), `_ok` (the
        spans are vouched for: Python's and Polars' engines agree on both probes) and the
        start and length of each group and field (`NAME.s`, `NAME.n`)."""
        texts, learnt = self._cover(shapes)
        at = pl.Series([learnt.row[t] for t in texts], dtype=pl.Int64)
        return learnt.table.drop("shape")[at].insert_column(0, shapes.get_column("_shape"))

    def pair_table(self, shapes: pl.DataFrame) -> pl.DataFrame:
        """One row per pair of each shape: `_shape`, `pos` (1000 on, in line order) and the
        spans of its key and value in the tail (`key.s`, `key.n`, `value.s`, `value.n`)."""
        texts, learnt = self._cover(shapes)
        ids = shapes.get_column("_shape").to_list()
        at = pl.Series([i for t in texts for i in learnt.pair_rows[t]], dtype=pl.Int64)
        owner = pl.Series("_shape", [sid for sid, t in zip(ids, texts) for _ in learnt.pair_rows[t]],
                          dtype=shapes.schema["_shape"])
        return learnt.pairs.drop("shape")[at].insert_column(0, owner)

    def _cover(self, shapes: pl.DataFrame) -> tuple[list[str], _Learnt]:
        """The shapes' texts, and what is learnt with these shapes among it. Parse threads
        share this object: a thread learns under the lock and swaps in a whole new
        `_Learnt`, so a reader sees the one before or the one after, never half of one."""
        texts = shapes.get_column("shape").to_list()
        learnt = self._learnt
        if all(t in learnt.row for t in texts):
            return texts, learnt
        with self._learning:
            learnt = self._learnt
            new = [t for t in dict.fromkeys(texts) if t not in learnt.row]
            if new:
                rows, pairs = self._learn(new)
                n, m = learnt.table.height, learnt.pairs.height
                pair_rows = dict(learnt.pair_rows)
                for k, shape in enumerate(pairs.get_column("shape").to_list()):
                    pair_rows.setdefault(shape, []).append(m + k)
                learnt = self._learnt = _Learnt(
                    pl.concat([learnt.table, rows]), {**learnt.row, **{t: n + k for k, t in enumerate(new)}},
                    pl.concat([learnt.pairs, pairs]), {**{t: [] for t in new}, **pair_rows})
        return texts, learnt

    def _learn(self, shapes: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(a row per shape, a row per pair) of these shapes, from their probes."""
        first, second = probes(shapes)
        m = len(shapes)
        ok = [True] * m
        hit: list[bool] = []
        cells: list[list] = [[] for _ in shapes]
        for pattern, wanted, names in self.found:  # both probes of every shape in one pass of each engine
            both = group_spans(pattern, first + second, wanted)
            agree = agrees(pattern, first + second, both, wanted)
            spans, again = both[:m], both[m:]
            ok = [o and a and b and s == t for o, a, b, s, t in zip(ok, agree[:m], agree[m:], spans, again)]
            if wanted is None:  # the rule's own regex (fields name their group 1): which shapes it matches
                hit = [s is not None for s in spans]
            for i, s in enumerate(spans):
                for key in (wanted or names):
                    cells[i] += list(s[key]) if s and key in s else [None, None]
        pairs: list[tuple] = []
        if self.pairs is not None:
            at = self.names.index(self.tail) * 2
            tails = [c[at: at + 2] for c in cells]
            found = [self._pair_spans(first, tails), self._pair_spans(second, tails)]
            ok = [o and a is not None and a == b for o, a, b in zip(ok, *found)]
            pairs = [(shape, 1000 + j, *span) for shape, spans in zip(shapes, found[0])
                     for j, span in enumerate(spans or [])]
        rows = [(shape, ok[i], hit[i], *cells[i]) for i, shape in enumerate(shapes)]
        return (pl.DataFrame(rows, schema=self._columns, orient="row"),
                pl.DataFrame(pairs, schema=self._pair_columns, orient="row"))

    def _pair_spans(self, lines: list[str], spans: list[list]) -> list[list[tuple] | None]:
        """Per line: (key start, key length, value start, value length) of each pair in its
        tail, positions in the tail; None where Polars' engine finds other pairs (or another
        key or value in one) than Python's."""
        compiled = re.compile(self.pairs)
        tails = [("" if a is None else line[a + n:] if self.tail == "__head" else line[a: a + n])
                 for line, (a, n) in zip(lines, spans)]
        matches = [list(compiled.finditer(t)) for t in tails]
        theirs = pl.Series(tails, dtype=pl.String).str.extract_all(self.pairs).to_list()
        flat = [m.group(0) for ms in matches for m in ms]
        read = pl.DataFrame({"p": flat}, schema={"p": pl.String}).select(self.key_value(pl.col("p")).alias("kv")) \
            .unnest("kv").select(pl.col("key").str.strip_chars(), "value")
        ours = pl.DataFrame({"key": [m.group("key") for ms in matches for m in ms],
                             "value": [m.group("value") for ms in matches for m in ms]},
                            schema={"key": pl.String, "value": pl.String}).with_columns(pl.col("key").str.strip_chars())
        equal = (read.get_column("key").eq_missing(ours.get_column("key"))
                 & read.get_column("value").eq_missing(ours.get_column("value"))).to_list()
        out, k = [], 0
        for ms, got in zip(matches, theirs):
            same = [m.group(0) for m in ms] == (got or [])
            spans = []
            for m in ms:
                same = same and equal[k]
                k += 1
                (ka, kb), (va, vb) = m.span("key"), m.span("value")
                spans.append((ka, kb - ka, va if va >= 0 else None, vb - va if va >= 0 else None))
            out.append(spans if same else None)
        return out
