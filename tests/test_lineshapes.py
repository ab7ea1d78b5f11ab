"""Reading text logs by line shape (`importers/lineshapes.py`): which regexes qualify, what a
shape is, and that every way a shape can fail to qualify falls back to reading its lines
one by one with the same values."""
from __future__ import annotations

import polars as pl
import pytest

from spikelens.importers import lineshapes, textlogs
from spikelens.importers.patterns import CATALOGUE, LinePattern, Rule


@pytest.mark.parametrize("regex", [r"\d+", r"[0-9.]+", r"\w+", r"[^|:]+", r"x.y", r"[-+]?\d*\.?\d+(?:e[-+]?\d+)?",
                                   r"(?i:nan|inf)", r"^step\s+(?P<step>\d+)/\d+", r"[^0-9a]"])
def test_regexes_blind_to_which_digit_qualify(regex):
    assert lineshapes.digit_uniform(regex)


@pytest.mark.parametrize("regex", [r"bf16", r"[1-9]\d*", r"[0-4]", r"(\d)\1", r"mfu -100\.00%", r"[^5]",
                                   r"\p{L}+", r"(?P<x>a"])
def test_regexes_that_tell_digits_apart_or_do_not_parse_do_not(regex):
    assert not lineshapes.digit_uniform(regex)


def test_every_catalogue_rule_is_read_by_shape():
    for pattern in CATALOGUE:
        for rule in pattern.rules:
            assert textlogs.shape_spans(rule).usable, (pattern.name, rule.regex)


def test_a_shape_keeps_every_character_but_ascii_digits_and_every_position():
    lines = pl.Series(["step 12/300 | loss 3.25e-04", "é٣ 7 |", None, "", "no digits"], dtype=pl.String)
    shapes = lineshapes.shapes_of(lines)
    assert shapes.to_list() == ["step 00/000 | loss 0.00e-00", "é٣ 0 |", None, "", "no digits"]
    assert shapes.str.len_chars().to_list() == lines.str.len_chars().to_list()
    first, second = lineshapes.probes(["step 00/000"])
    assert first[0] != second[0] and first[0][:5] == "step " and first[0][7] == "/"


LOG = "".join(f"it {i} loss16={3 + 1 / (i + 1):.4f} norm {i % 7}.5 tag-{'a' * (i % 2)}\n" for i in range(400))


def _values(tmp_path, pattern: LinePattern, text: str) -> pl.DataFrame:
    path = tmp_path / "train.log"
    path.write_text(text)
    lines, _ = textlogs.read_lines(path)
    rows, _ = textlogs.parse_lines(lines, pattern)
    return rows.with_columns(pl.col("metric").cast(pl.String))


PATTERN = LinePattern(name="t", rules=(Rule(
    regex=r"^it (?P<step>\d+) loss\d+=(?P<loss>[\d.]+)",
    fields={"norm": r"norm (\d+\.\d+)"}),))


def test_line_by_line_and_by_shape_read_the_same_values(tmp_path, monkeypatch):
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 64)
    chunk = pl.DataFrame({"row": range(64), "line_no": range(64), "text": LOG.splitlines()[:64]})
    assert textlogs._shaped(chunk)[1] is not None and textlogs.shape_spans(PATTERN.rules[0]).usable  # by shape
    by_shape = _values(tmp_path, PATTERN, LOG)
    assert by_shape.height == 800 and by_shape.filter(pl.col("metric") == "norm").get_column("value")[3] == 3.5

    monkeypatch.setattr(lineshapes, "MAX_SHARE", 0.0)  # too many shapes: every chunk line by line
    monkeypatch.setattr(lineshapes, "MIN_SHAPES", 0)
    assert textlogs._shaped(chunk)[1] is None
    one_by_one = _values(tmp_path, PATTERN, LOG)
    assert by_shape.equals(one_by_one)


def test_a_digit_literal_in_a_regex_reads_line_by_line_with_the_same_values(tmp_path, monkeypatch):
    """`loss16=` holds digits: a `16` somewhere else in a line of the same shape would match too."""
    literal = LinePattern(name="t", rules=(Rule(regex=r"^it (?P<step>\d+) loss16=(?P<loss>[\d.]+)"),))
    assert not textlogs.shape_spans(literal.rules[0]).usable
    rows = _values(tmp_path, literal, LOG)
    assert rows.height == 400 and rows.get_column("step").to_list() == list(range(400))


def test_shapes_the_two_engines_disagree_on_are_read_line_by_line(tmp_path, monkeypatch):
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 64)
    want = _values(tmp_path, PATTERN, LOG)
    calls = []

    def disagree(regex, lines, spans, groups=None):
        calls.append(regex)
        return [False] * len(lines)

    monkeypatch.setattr(lineshapes, "agrees", disagree)
    assert _values(tmp_path, PATTERN, LOG).equals(want)
    assert calls  # the shapes were tried, and every one of them refused


def test_lines_parsed_while_read_give_what_reading_first_gives(tmp_path, monkeypatch):
    """`TextLogImporter.read` parses chunks as the file's blocks are read (small blocks and
    chunks here, so chunks straddle blocks): the same values, line count and metadata as
    reading every line first and parsing after."""
    import numpy as np

    from spikelens.importers.base import long_table

    monkeypatch.setattr(textlogs, "READ_BLOCK", 997)
    monkeypatch.setattr(textlogs, "CHUNK_LINES", 37)
    text = "".join(f"step {i:>5}/400 | loss {3 + np.sin(i):.6f} (+0.00z)| norm {i % 9}.25 (+0.00z)| lr 3.0e-04 "
                   f"| 12.{i % 10} ms | 40.{i % 7}% bf16 MFU | 1234 tok/s\n" + ("val loss 3.5\n" if i % 50 == 0 else "")
                   for i in range(400)) + "step 400/400 | loss 2.9"  # the last line cut short
    path = tmp_path / "train.log"
    path.write_text(text)
    importer = textlogs.TextLogImporter()
    [table] = importer.read(path)
    lines, n_lines = textlogs.read_lines(path)
    rows, _ = textlogs.parse_lines(lines, importer.pattern_for(path))
    expected = long_table(rows.get_column("step"), rows.get_column("wall_time"), rows.get_column("metric"),
                          rows.get_column("value"))
    assert table.frame.equals(expected) and table.frame.height > 2400
    assert table.meta["lines"] == n_lines == 409 and table.meta["matched_lines"] == 408


def test_rechunked_frames_have_the_chunk_size_and_every_row_in_order():
    parts = [pl.DataFrame({"row": list(range(a, b))}) for a, b in ((0, 5), (5, 6), (6, 30), (30, 31))]
    chunks = list(textlogs._rechunked(parts, 7))
    assert [c.height for c in chunks] == [7, 7, 7, 7, 3]
    assert pl.concat(chunks).get_column("row").to_list() == list(range(31))
