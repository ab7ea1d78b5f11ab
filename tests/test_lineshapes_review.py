"""Review of reading text logs by line shape (`importers/lineshapes.py`): on generated logs
(random digits, non-ASCII text, empty lines, carriage returns, a last line without its
newline, so the `\\x00` end marker) and user-style rules (classes whose ranges span the
digits, negated classes, `\\b`, case-insensitive groups, `rest` sliced or captured, key/value
pairs, `near`), parsing with shapes gives exactly what parsing line by line gives; chunks
of a few lines so that seams are crossed and the shape caches are shared by both parse threads."""
from __future__ import annotations

import os
import threading
import warnings

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spikelens.importers import lineshapes, textlogs
from spikelens.importers.patterns import LinePattern, Rule

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf"

PATTERNS = [
    LinePattern(name="ranges", rules=(Rule(
        regex=r"^step[ -~]?(?P<step>[0-9]+)\b[^|]*\|\s*loss[=:](?P<loss>[+-9]+(?:[eE][+-9]+)?)",
        fields={"gn": r"(?i:GRAD_NORM)\s+([\d.]+)", "w": r"\bw(\w+)\b"},
        near=r"^step[^a-z]*\d"),)),
    LinePattern(name="rest-pairs", rules=(Rule(
        regex=r"^it\s+(?P<step>\d+)(?P<rest>.*)$",
        pairs=rf"(?P<key>[A-Za-z_é][\w/]*)\s*[:=]\s*(?P<value>{NUM})",
        near=r"^it\b"),)),
    LinePattern(name="rest-pairs-sep", rules=(Rule(
        regex=r"^it\s+(?P<step>\d+)(?P<rest>.*)$",
        pairs=rf"(?P<key>[A-Za-z_é][\w/]*)=(?P<value>{NUM})(?:ms|%)?(?:\s|$)", pair_sep="=", value_trim="ms%"),)),
    LinePattern(name="captured-rest", rules=(Rule(
        regex=r"(?:^|\s)(?P<step>\d+)/\d+\s(?P<rest>[^\x00]*)",
        pairs=rf"(?P<key>\w+)\s(?P<value>{NUM})"),)),
    LinePattern(name="negated", rules=(Rule(
        regex=r"^(?P<_tag>[^\d\s]+)\s(?P<step>\d+)\D+(?P<x>\d+(?:\.\d+)?)\W+[^\W\d_]",
        fields={"y": r"[^\W\d_]=(\S+)"}),)),
]

WORDS = ["step", "it", "loss=", "loss:", "| ", "grad_norm ", "GRAD_NORM ", "wé", "lr=", "x:", "é=", "٣", "ms", "%",
         " ", "  ", "/", "nan", "-", "+", "e", ".", "|", "tag", "w", "_"]


@st.composite
def line(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 9))):
        if draw(st.booleans()):
            parts.append(str(draw(st.integers(0, 10 ** draw(st.integers(0, 6))))))
        else:
            parts.append(draw(st.sampled_from(WORDS)))
    return "".join(parts)


TEMPLATES = [
    lambda d: f"step {d[0]} | loss={d[1]}.{d[2]}e-{d[3]} grad_norm {d[4]}.{d[5]} w{d[6]}",
    lambda d: f"step{d[0]}|loss:{d[1]}",
    lambda d: f"it {d[0]} lr={d[1]}.{d[2]}e-{d[3]} x: {d[4]} é={d[5]}ms",
    lambda d: f"it {d[0]} lr={d[1]}% x=nan tail",
    lambda d: f"{d[0]}/{d[1]} loss {d[2]}.{d[3]} acc {d[4]}",
    lambda d: f"tag {d[0]} -- {d[1]}.{d[2]} !! y=é{d[3]}",
    lambda d: "",
    lambda d: f"٣ {d[0]} free text",
]


@st.composite
def log(draw) -> str:
    rows = []
    for _ in range(draw(st.integers(1, 60))):
        if draw(st.integers(0, 4)) == 0:
            rows.append(draw(line()))
        else:
            digits = draw(st.lists(st.integers(0, 10 ** draw(st.integers(1, 5))), min_size=7, max_size=7))
            rows.append(draw(st.sampled_from(TEMPLATES))(digits))
        if draw(st.integers(0, 9)) == 0:
            rows[-1] += "\r" + draw(line())
    return "\n".join(rows) + draw(st.sampled_from(["\n", ""]))


def _parse(tmp_path, text: str, pattern: LinePattern, by_shape: bool, monkeypatch):
    monkeypatch.setattr(lineshapes, "MAX_SHARE", 1.0 if by_shape else 0.0)
    monkeypatch.setattr(lineshapes, "MIN_SHAPES", 10 ** 9 if by_shape else 0)
    path = tmp_path / "train.log"
    path.write_bytes(text.encode("utf-8"))
    lines, _ = textlogs.read_lines(path)
    if lines is None:
        return None
    rows, info = textlogs.parse_lines(lines, pattern)
    return (rows.with_columns(pl.col("metric").cast(pl.String)), info["matched_lines"],
            info["near_misses"].get_column("row").to_list(), info["duplicates_dropped"])


def _same(tmp_path, text, pattern, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shaped = _parse(tmp_path, text, pattern, True, monkeypatch)
        plain = _parse(tmp_path, text, pattern, False, monkeypatch)
    if shaped is None:
        assert plain is None
        return 0
    assert shaped[0].equals(plain[0]), (pattern.name, text)
    assert shaped[1:] == plain[1:], (pattern.name, text)
    return shaped[0].height


def test_every_review_rule_is_read_by_shape():
    for pattern in PATTERNS:
        for rule in pattern.rules:
            assert textlogs.shape_spans(rule).usable, pattern.name
            if rule.near:
                assert lineshapes.digit_uniform(rule.near)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
@settings(max_examples=int(os.environ.get("SPIKELENS_FUZZ_EXAMPLES", 30)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=log(), chunk=st.integers(1, 17))
def test_by_shape_reads_what_line_by_line_reads(tmp_path, monkeypatch, pattern, text, chunk):
    monkeypatch.setattr(textlogs, "CHUNK_LINES", chunk)
    _same(tmp_path, text, pattern, monkeypatch)


def test_the_generated_logs_give_values(tmp_path, monkeypatch):
    """The rules above read something on their own lines (the comparison is not of empty frames)."""
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 5)
    text = "\n".join(t([7, 12, 3, 4, 5, 6, 8]) for t in TEMPLATES for _ in range(3))
    for pattern in PATTERNS:
        assert _same(tmp_path, text, pattern, monkeypatch) > 0, pattern.name


@pytest.mark.parametrize("regex,uniform", [
    (r"[+-9]", True), (r"[ -~]+", True), (r"[/-:]", True), (r"[^/-:]", True), (r"(?i)[a-z\d]", True),
    (r"\b\w+\B", True), (r"[/-8]", False), (r"[^/-8]", False), (r"(?i)5", False), (r"[1-:]", False),
    (r"\x35", False), (r"[\x30-\x34]", False), (r"(?x) 5 ", False), (r"(?x)\d # 5", True), (r"(?:a|7)", False),
    (r"(?=\d)(?!4)", False), (r"(?(1)a|b)", False), (r"\N{DIGIT FIVE}", False),
])
def test_digit_uniform_on_classes_that_span_or_split_the_digits(regex, uniform):
    assert lineshapes.digit_uniform(regex) is uniform


def test_two_threads_learning_the_same_shapes_see_the_same_table():
    rule = PATTERNS[1].rules[0]
    texts = [f"it {i} lr={i}.5e-{i % 3} x: {i * 7} é={i}ms" + " k=1" * (i % 40) for i in range(400)]
    shapes = lineshapes.shapes_of(pl.Series(texts, dtype=pl.String)).unique(maintain_order=True)
    frame = shapes.to_frame("shape").with_row_index("_shape")
    want_spans = textlogs.shape_spans(rule)
    want, want_pairs = want_spans.table(frame), want_spans.pair_table(frame)
    shared = textlogs.shape_spans(rule)
    got, errors = [], []

    def work(rows):
        try:
            part = frame.slice(rows, frame.height)
            got.append((rows, shared.table(part), shared.pair_table(part)))
        except Exception as exc:  # pragma: no cover - a failure is what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 0, 3, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert want.get_column("_ok").all()
    for rows, table, pairs in got:
        assert table.equals(want.slice(rows, frame.height))
        assert pairs.equals(want_pairs.filter(pl.col("_shape") >= rows))


# The review's four reproducers: each read the same by shape as line by line once fixed.

def _rule(regex, **kw) -> LinePattern:
    return LinePattern(name="user", rules=(Rule(regex=regex, **kw),))


def test_a_rust_set_operation_in_a_class_is_not_read_by_shape(tmp_path, monkeypatch):
    """`[\\d&&[5-9]]` is the digits 5-9 to Rust, three members and a literal `]` to Python."""
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 8)
    text = "".join(f"step {i} a=1.5 k:{i % 10}\n" for i in range(10))
    pattern = _rule(r"^step (?P<step>\d+) a=(?P<a>[\d.]+) k:[\d&&[5-9]]")
    assert not textlogs.shape_spans(pattern.rules[0]).usable
    assert _same(tmp_path, text, pattern, monkeypatch) == 5


def test_a_near_regex_with_a_set_operation_is_not_decided_by_shape(tmp_path, monkeypatch):
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 8)
    text = "".join(f"foo {i % 10}\n" for i in range(20)) + "step 1 x\n"
    pattern = _rule(r"^step (?P<step>\d+) (?P<x>\d)", near=r"^foo [\d&&[5-9]]")
    _same(tmp_path, text, pattern, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(_parse(tmp_path, text, pattern, True, monkeypatch)[2]) == 10


def test_a_field_without_its_capture_group_reads_nothing_either_way(tmp_path, monkeypatch):
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 8)
    text = "".join(f"step {i} a=1.{i}\n" for i in range(10))
    pattern = _rule(r"^step (?P<step>\d+)", fields={"f": r"a=[\d.]+"})
    assert not textlogs.shape_spans(pattern.rules[0]).usable
    assert _same(tmp_path, text, pattern, monkeypatch) == 0


@pytest.mark.parametrize("text,pairs,sep,trim,rows", [
    ("".join(f"step {i} | lr: 1.{i}e-3 | pct:5{i}% | sp: nan |\n" for i in range(10)),
     r"(?P<key>\w+):\s*(?P<value>[\d.e+-]+%?)", ":", "%", 20),
    ("".join(f"step {i} | t=1.{i}ms | u=2.0 |\n" for i in range(10)), r"(?P<key>\w+)=(?P<value>[\d.]+)ms", "=", "", 0),
])
def test_pairs_split_at_a_separator_read_by_shape_as_the_split_reads_them(tmp_path, monkeypatch, text, pairs, sep,
                                                                          trim, rows):
    """A declared `pair_sep` reads a pair's value as the split gives it, not as the regex's
    group: where they differ, the shape is read line by line."""
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 8)
    pattern = _rule(r"^step (?P<step>\d+)(?P<rest>.*)$", pairs=pairs, pair_sep=sep, value_trim=trim)
    assert _same(tmp_path, text, pattern, monkeypatch) == rows
