"""The quicker paths of the console-log reader (#24, text-log speed) read what the slower
ones they stand in front of read: time stamps parsed in the layout of the first one,
thousands separators cast before the NaN/Inf spellings, the kill-notice test answered
per line shape through a sieve, and line arrays handed to Polars without `pyarrow.compute`.
Every input is written here."""
from __future__ import annotations

import math
import subprocess
import sys
from datetime import datetime, timezone

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spikelens.importers import lineshapes, linerecords, textlogs, textsignals
from spikelens.importers.textlogs import TextLogImporter

pytestmark = pytest.mark.usefixtures("no_user_patterns")

E = "\x1b"


def _seconds(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


STAMPS = st.builds(
    lambda y, mo, d, h, mi, s, date, at, dot, frac: f"{y:04d}{date}{mo:02d}{date}{d:02d}{at}{h:02d}:{mi:02d}:{s:02d}"
    + (f"{dot}{frac}" if frac else ""),
    st.integers(1990, 2040), st.integers(1, 12), st.integers(1, 31), st.integers(0, 23), st.integers(0, 59),
    st.integers(0, 59), st.sampled_from("-/"), st.sampled_from(" T"), st.sampled_from(".,"),
    st.sampled_from(["", "6", "60", "600", "6001", "600123", "6001234", "600123456"]))
ODD = st.sampled_from(["2025-1-1 12:00:00.600", " 2025-01-01 12:00:00", "2025-01-01 12:00:00.600 ", "garbage", "",
                       "2025-02-30 12:00:00,100", "2025-01-01 24:00:00", "2025-01-01 12:00:00.", "2025-01-01 12:00:00.6a"])


@settings(max_examples=300, deadline=None)
@given(stamps=st.lists(st.one_of(STAMPS, ODD, st.none()), min_size=1, max_size=12))
def test_time_stamps_read_in_the_first_ones_layout_are_those_chrono_reads(stamps):
    series = pl.Series("stamp", stamps, dtype=pl.String)
    want = series.to_frame().select(linerecords._wall_time(pl.col("stamp"))).to_series()
    assert linerecords.wall_times(series).to_list() == want.to_list()


def test_console_log_stamps_in_two_layouts_give_each_line_its_time(tmp_path):
    """A logger's stamps (`,` then milliseconds), then a relaunch that prints ISO stamps with
    microseconds: each line's wall time is its own stamp, whichever layout came first."""
    lines = [f"{E}[32m[rank0]:[titan] 2025-01-01 12:00:{i:02d},{i * 7:03d} - root - INFO - {E}[31mstep: {i}  "
             f"{E}[32mloss: {3 - i / 100:.4f}  {E}[34mmemory: 29.{i:02d}GiB(36.{i:02d}%)  {E}[35mtps: 7,{i:03d}{E}[39m"
             for i in range(1, 31)]
    lines += [f"2025-01-02T08:00:{i - 30:02d}.{i:06d} step: {i}  loss: {2 - i / 100:.4f}  tps: 1,{i:03d}" for i in range(31, 61)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    imp = TextLogImporter()
    assert imp.pattern_for(path) is None and imp.general_for(path).readable
    got = imp.read(path)
    frame = pl.concat([t.frame for t in got]).filter(pl.col("metric") == "loss").sort("step")
    assert frame.get_column("step").to_list() == list(range(1, 61))
    want = [_seconds(f"2025-01-01 12:00:{i:02d}.{i * 7:03d}") for i in range(1, 31)]
    want += [_seconds(f"2025-01-02 08:00:{i - 30:02d}.{i:06d}") for i in range(31, 61)]
    assert frame.get_column("wall_time").to_list() == pytest.approx(want, abs=1e-6)
    tps = pl.concat([t.frame for t in got]).filter(pl.col("metric") == "tps").sort("step")
    assert tps.get_column("value").to_list() == [7000 + i for i in range(1, 31)] + [1000 + i for i in range(31, 61)]


def test_thousands_separated_cells_read_with_every_spelling():
    cells = ["7,233", "1,234,567.5", "+7,233", "-7,233", "  7,233 ", '"1,5"', "1,", ",5", ",", "", "nan", "-nan", "NaN",
             "nan.0", "inf.00", "-inf.0", "1.#INF", "-1.#IND", "N/A", "-", "none", "abc", "7 233", None, "3.5"]
    got = linerecords.numbers(pl.Series(cells, dtype=pl.String)).to_list()
    want = [7233.0, 1234567.5, 7233.0, -7233.0, 7233.0, 15.0, 1.0, 5.0, None, None, math.nan, math.nan, math.nan,
            math.nan, math.inf, -math.inf, math.inf, math.nan, None, None, None, None, None, None, 3.5]
    assert len(got) == len(want)
    for cell, g, w in zip(cells, got, want):
        assert (g is None and w is None) or (g is not None and w is not None and (g == w or math.isnan(g) and math.isnan(w))), cell


KILL_LINES = ["Exited with exit code 0", "Exited with exit code 1", "Exited with exit code 12.", "Received SIGUSR1",
              "Received SIGUSR2", "Received SIGUSR3", "run.sh: line 5: 19817 Killed   python train.py",
              "[1]+  Killed   python train.py", "Received 15 death signal", "step 10 loss 2.5", "Killed"]


def test_kill_notices_that_differ_in_a_digit_are_told_apart_per_line():
    """Lines of one shape (`Exited with exit code 0` and `... 1`) are one kill notice and one
    clean exit: the sieve answered per shape only lets them through, the notice itself decides."""
    text = KILL_LINES * 40  # many lines a shape: read by shape
    lines = pl.DataFrame({"row": range(len(text)), "line_no": range(len(text)), "text": text},
                         schema={"row": pl.Int64, "line_no": pl.Int64, "text": pl.String})
    shaped, shapes = textlogs._shaped(lines)
    assert shapes is not None
    plain = textsignals.chunk_signals(lines, linerecords.CONSOLE).errors
    by_shape = textsignals.chunk_signals(shaped, linerecords.CONSOLE, shapes, {}).errors
    assert by_shape.equals(plain)
    killed = set(by_shape.filter(pl.col("crash")).get_column("text").to_list())
    assert killed == {"Exited with exit code 1", "Exited with exit code 12.", "Received SIGUSR1", "Received SIGUSR2",
                      "run.sh: line 5: 19817 Killed   python train.py", "[1]+  Killed   python train.py",
                      "Received 15 death signal", "Killed"}
    assert lineshapes.digit_uniform(textsignals._sieve(textsignals._KILL_LINE))


def test_reading_a_console_log_leaves_pyarrow_compute_unimported(tmp_path):
    """Polars imports `pyarrow.compute` (~0.3 s) for any `pyarrow` array it is given; the line
    arrays go through the Arrow C data interface instead, the last block (split in Python) too."""
    path = tmp_path / "train.log"
    path.write_text("\n".join(f"{E}[32m[rank0]:[titan] 2025-01-01 12:00:{i % 60:02d},000 - root - INFO - "
                              f"{E}[31mstep: {i}  {E}[32mloss: {3 - i / 1000:.4f}{E}[39m" for i in range(1, 400))
                    + "\nstep: 400  loss: 2.6", encoding="utf-8")  # cut off: no record, but split and shaped
    code = ("import sys; from pathlib import Path; from spikelens.importers.textlogs import TextLogImporter; "
            f"t = TextLogImporter().read(Path({str(path)!r})); "
            "print(sum(x.frame.height for x in t), 'pyarrow.compute' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.split() == ["399", "False"]
