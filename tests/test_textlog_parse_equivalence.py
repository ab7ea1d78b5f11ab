"""The chunked, Polars-read text-log parse gives the values the one-pass parse gave
(`textlog_reference.py`, the code before it): on the real logs in ../shared/real*, on
the fixtures, and on generated logs (hypothesis) mixing every family's lines with the
damage real logs carry, parsed with chunks of a few lines so that every chunk seam
(a step line and its val line apart, a NaN stretch, a repeated line) is crossed."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import textlog_reference as reference
from conftest import FIXTURES
from spikelens.importers import textlogs, textsignals
from spikelens.importers.patterns import CATALOGUE

sys.path.insert(0, str(FIXTURES))
from writers.textlogs import _overflow, llmc_step_line, megatron_iteration, megatron_validation  # noqa: E402

SHARED = FIXTURES.parent.parent / "shared"
TEXT_SUFFIXES = (".log", ".txt", ".out")


def real_logs() -> list[Path]:
    found = []
    for root in sorted(SHARED.glob("real*")):
        found += [p for p in sorted(root.rglob("*")) if p.suffix in TEXT_SUFFIXES and p.is_file()]
    return found


def compare(path: Path, chunk_lines: int, monkeypatch, read_block: int | None = None) -> int:
    """Old and new parse of one file agree, and so do the importer's read (the file cut in
    blocks of `read_block` bytes, lines parsed while read, signals gathered a chunk at a
    time) and its meta; returns the number of values."""
    monkeypatch.setattr(textlogs, "CHUNK_LINES", chunk_lines)
    if read_block is not None:
        monkeypatch.setattr(textlogs, "READ_BLOCK", read_block)
    pattern = textlogs.TextLogImporter().pattern_for(path)
    if pattern is None:
        return -1
    text = path.read_bytes().decode("utf-8", errors="replace")
    old_lines = reference.split_lines(text)
    old, old_info = reference.parse_lines(old_lines, pattern)
    lines, n_lines = textlogs.read_lines(path)
    new, new_info = textlogs.parse_lines(lines, pattern)

    assert n_lines == int(old_lines.get_column("line_no").max()) + 1
    cols = ["step", "metric", "value"]
    assert new.select(cols).with_columns(pl.col("metric").cast(pl.String)).equals(old.select(cols)), path
    a, b = old.get_column("wall_time"), new.get_column("wall_time")
    assert a.is_null().equals(b.is_null())  # seconds since epoch: equal to the microsecond
    assert ((a - b).abs().fill_null(0) <= 1e-6).all()
    for key in ("duplicates_dropped", "matched_lines"):
        assert new_info[key] == old_info[key], key
    assert (new_info["near_misses"].get_column("line_no").to_list()
            == old_info["near_misses"].get_column("line_no").to_list())
    signals = textsignals.signal_meta(lines, pattern, new)  # the lines held whole, as one chunk
    assert new_info["signals"] == signals
    # the oracle knows the signals of its time; relaunches that died of an error (`plan.launch_errors`,
    # since d52a8a1/699dab7) are checked chunked against whole above
    assert {k: v for k, v in signals.items() if k != "plan.launch_errors"} == reference.signal_meta(old_lines, pattern, old)

    [table] = textlogs.TextLogImporter().read(path)
    assert table.frame.height == new.height
    assert table.frame.get_column("value").equals(new.get_column("value"))
    assert table.meta == {"pattern": pattern.name, "lines": n_lines, "matched_lines": old_info["matched_lines"],
                          "duplicates_dropped": old_info["duplicates_dropped"], **signals}
    return new.height


REAL = real_logs()


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (the real logs) is not beside the project")
@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(SHARED)))
def test_real_logs_read_the_same_values(path: Path, monkeypatch):
    compare(path, textlogs.CHUNK_LINES, monkeypatch)
    compare(path, 997, monkeypatch, read_block=4096)  # seams inside every log


def test_real_logs_were_read():
    if not SHARED.is_dir():
        pytest.skip("../shared (the real logs) is not beside the project")
    assert len(REAL) >= 10


@pytest.mark.parametrize("path", sorted((FIXTURES / "text").rglob("*.*")), ids=lambda p: p.name)
def test_fixtures_read_the_same_values(path: Path, monkeypatch):
    compare(path, 5, monkeypatch, read_block=64)


# ------------------------------------------------------------------ generated logs

NUMBERS = st.one_of(st.floats(0.0, 20.0, allow_nan=False), st.just(float("nan")), st.just(float("inf")))


@st.composite
def llmc_log(draw) -> list[str]:
    lines = [llmc_step_line(s, 500, 3.0, 1.0, 3e-4, 400.0) for s in (1, 2, 3)]  # enough for the sniff
    step = 4
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.sampled_from(["step", "step", "step", "val", "back", "repeat", "noise", "blank", "cut"]))
        if kind == "back":
            step = max(1, step - draw(st.integers(1, 10)))
            kind = "step"
        if kind == "step":
            lines.append(llmc_step_line(step, 500, draw(NUMBERS), draw(NUMBERS), 3e-4, draw(st.floats(1, 900)),
                                        negative_nan=draw(st.booleans())))
            step += 1
        elif kind == "val":
            lines.append("val loss %f\n" % draw(NUMBERS))
        elif kind == "repeat" and lines:
            lines.append(lines[-1])
        elif kind == "noise":
            lines.append(draw(st.sampled_from(["[rank1]: NCCL WARN Cuda failure\n", "Traceback (most recent call last):\n",
                                               "RuntimeError: CUDA out of memory\n", "allocated 237 MiB\n"])))
        elif kind == "cut" and lines:
            lines[-1] = lines[-1][: draw(st.integers(1, len(lines[-1])))]
        elif kind == "blank":
            lines.append("\n")
    return lines


@st.composite
def megatron_log(draw) -> list[str]:
    lines = []
    for it in range(10, 10 * draw(st.integers(2, 40)), 10):
        loss = draw(NUMBERS)
        skipped, nans = draw(st.sampled_from([(0, 0), (1, 0), (0, 1), (10, 0)]))
        lines.append(megatron_iteration(it, 1000, stamp=draw(st.sampled_from([None, "2026-11-22 12:00:10.000000"])),
                                        samples=it * 32, ms=400.0, lr=3e-5, losses={"lm loss": loss},
                                        loss_scale=65536.0, grad_norm=draw(st.sampled_from([None, 1.5])),
                                        skipped=skipped, nans=nans))
        if draw(st.integers(0, 9)) == 0:
            lines.append(megatron_validation(it, {"lm loss": draw(st.floats(0.5, 9))}))
        if draw(st.integers(0, 9)) == 0:
            lines.append(_overflow("2023-04-18 02:46:31,380", 65536))
    return lines


@st.composite
def nanogpt_log(draw) -> list[str]:
    lines = []
    for it in range(draw(st.integers(2, 80))):
        mfu = -100.0 if it < 5 or draw(st.integers(0, 20)) == 0 else draw(st.floats(1, 60))
        lines.append("iter %d: loss %.4f, time %.2fms, mfu %.2f%%\n" % (it, draw(NUMBERS), 370.0, mfu))
        if it % 10 == 0:
            lines.append("step %d: train loss %.4f, val loss %.4f\n" % (it, draw(NUMBERS), draw(NUMBERS)))
    return lines


@settings(max_examples=int(os.environ.get("SPIKELENS_FUZZ_EXAMPLES", 30)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.one_of(llmc_log(), megatron_log(), nanogpt_log()),
       newline=st.sampled_from(["\n", "\r\n"]), progress=st.booleans(), end=st.booleans(),
       chunk=st.integers(1, 40), block=st.integers(1, 300))
def test_generated_logs_read_the_same_values(tmp_path_factory, monkeypatch, lines, newline, progress, end, chunk,
                                             block):
    text = "".join(lines).replace("\n", newline)
    if progress:  # a progress bar redrawn with carriage returns inside a line
        text = "loading 10%\rloading 100%\n" + text
    if not end:
        text = text.rstrip("\r\n")
    path = tmp_path_factory.mktemp("gen") / "train.log"
    path.write_bytes(text.encode())
    assert compare(path, chunk, monkeypatch, read_block=block) > 0  # a pattern claimed it and values were read


PAIR_RULES = [(p.name, r) for p in CATALOGUE for r in p.rules if r.pairs and r.pair_sep is not None]


@pytest.mark.parametrize("name,rule", PAIR_RULES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(PAIR_RULES)])
def test_a_declared_key_separator_splits_pairs_as_the_pairs_regex_does(name, rule):
    """`pair_sep` / `value_trim` are a faster spelling of the `pairs` regex's groups: on
    text made of the regex's own matches between arbitrary text (non-ASCII included),
    every pair `extract_all` finds splits into the key and value its groups capture."""
    pieces = st.lists(st.one_of(st.from_regex(rule.pairs, fullmatch=True), st.text(max_size=8)), min_size=1, max_size=6)

    @settings(max_examples=3 * int(os.environ.get("SPIKELENS_FUZZ_EXAMPLES", 40)), deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(rest=pieces.map("".join))
    def check(rest):
        found = pl.Series([rest]).str.extract_all(rule.pairs).explode().drop_nulls().to_frame("_p")
        want = found.select(pl.col("_p").str.extract_groups(rule.pairs)).unnest("_p")
        got = found.select(textlogs._key_value(pl.col("_p"), rule).alias("_p")).unnest("_p")
        assert got.with_columns(pl.col("key").str.strip_chars()).equals(
            want.with_columns(pl.col("key").str.strip_chars())), rest

    check()
