"""Console logs printed as small tables of key/value rows, one table a record: the
`HumanOutputFormat` of Stable-Baselines3 and OpenAI Baselines, Spinning Up's `EpochLogger`,
and the scripts that copy them.

    ---------------------------------
    | rollout/           |          |
    |    ep_rew_mean     | -968     |
    | time/              |          |
    |    total_timesteps | 2048     |
    ---------------------------------

A person reads each table as one record; a line-by-line reader sees only lines with one
unnamed number each. Here a table is the rows between two rules (a key seen again inside
one table starts a new record, for tables printed without rules); a row with an empty value
cell names the section of the indented rows under it (`rollout/ep_rew_mean`, the name SB3's
CSV writer gives the same value, so roles and readers agree). The step is the record's
environment timesteps (`sb3.TIMESTEP_NAMES`), else an epoch, iteration or update counter,
else the record's order. The lines around the tables (banners, tracebacks, relaunches) give
the crash and plan signals any console log gives (`textsignals`).
"""
from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from ..errors import FormatError, InputError
from . import decoding, textsignals
from .base import Importer, Table, long_table
from .sb3 import timestep_key

_ROW = r"^\s*\|(?P<key>[^|]*)\|(?P<value>[^|]*)\|\s*$"
_RULE = r"^\s*[-=+]{6,}\s*$"
_NUMBER = r"^[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|-inf|NaN|Inf|-Inf)$"
_ROW_RE = re.compile(_ROW)
_NUMBER_RE = re.compile(_NUMBER)
_LETTER_RE = re.compile(r"[A-Za-z]")

COUNTER_NAMES = ("epoch", "epochs", "iteration", "iterations", "iter", "itr", "n_updates", "updates", "update",
                 "total_steps", "global_step", "step", "steps", "frames", "total_frames")
"""Counters that stand for the step when no timesteps key is in the records, by preference
(matched on the key's last part, without case)."""

HEAD_BYTES = 64 * 1024
MIN_ROWS = 6
MIN_RECORDS = 3
"""A head claims the file when it holds `MIN_ROWS` key/value rows with a number, under a rule,
and one of their keys `MIN_RECORDS` times (tables that repeat, one a record)."""


def _repeated_tables(text: str) -> bool:
    """Whether `text` holds key/value rows with a named key and a number that repeat as
    records do: `MIN_ROWS` rows, a key seen `MIN_RECORDS` times. A settings table printed once
    at the top of a log (llm.c's `| max_steps | 74 |`) is not a record of the run, nor one printed again by
    every relaunch with the same values (YOLOX's `exp value:` table), or with one or two of them changed:
    a record's values move, a third of its keys at least."""
    seen: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = _ROW_RE.match(line)
        if m and _LETTER_RE.search(m["key"]) and _NUMBER_RE.match(m["value"].strip()):
            seen.setdefault(m["key"].strip(), []).append(m["value"].strip())
    repeated = [v for v in seen.values() if len(v) >= MIN_RECORDS]
    moving = sum(len(set(v)) > 1 for v in repeated)
    # most of a record's keys move from table to table (timesteps, fps, losses); a settings table that a
    # relaunch printed with one setting changed (`print_interval 10` -> `1`) keeps nearly all the rest
    return sum(map(len, seen.values())) >= MIN_ROWS and moving > 0 and 3 * moving >= len(repeated)


class KeyValueTableImporter(Importer):
    """Text logs whose records are printed as `| key | value |` tables (SB3, Baselines)."""

    name = "kv_tables"
    looks_for = "console logs printed as | key | value | tables (Stable-Baselines3, OpenAI Baselines, Spinning Up)"

    def claims(self, path: Path, head: bytes) -> bool:
        from .base import kind_suffix
        from .textlogs import TEXT_SUFFIXES

        if kind_suffix(path) not in TEXT_SUFFIXES or b"|" not in head or b"\0" in head[:1024]:
            return False
        try:
            with open(path, "rb") as fh:
                text = decoding.text_head(fh.read(HEAD_BYTES))
        except OSError:
            return False
        return _repeated_tables(text) and re.search(_RULE, text, re.MULTILINE) is not None

    def read(self, path: Path) -> list[Table]:
        from .linerecords import CONSOLE
        from .textlogs import read_lines

        try:
            lines, n_lines = read_lines(path)
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
        if lines is None:
            raise FormatError(path, "empty text log")
        rows = records(lines)
        if rows.height == 0:
            raise FormatError(path, "its | key | value | tables hold no numbers")
        meta = {"pattern": "key/value tables", "lines": n_lines, "records": int(rows.get_column("record").n_unique()),
                **textsignals.signal_meta(lines, CONSOLE, rows)}
        frame = long_table(rows.get_column("step"), [None] * rows.height, rows.get_column("metric"),
                           rows.get_column("value"))
        return [Table(frame=frame, source=path, format="text", run_key=str(path), segment_key=str(path), meta=meta)]


def records(lines: pl.DataFrame) -> pl.DataFrame:
    """The tables' values in read order: `row` (the line's), `record`, `step`, `metric`, `value`."""
    parsed = lines.select(
        "row",
        rule=pl.col("text").str.contains(_RULE),
        cells=pl.col("text").str.extract_groups(_ROW),
    ).unnest("cells")
    parsed = parsed.with_columns(
        table=pl.col("rule").cast(pl.Int64).cum_sum(),
        indented=pl.col("key").str.contains(r"^\s{2,}"),
        key=pl.col("key").str.strip_chars(),
        raw=pl.col("value").str.strip_chars(),
    ).filter(pl.col("key").is_not_null() & pl.col("key").str.contains("[A-Za-z]"))
    # a row with no value whose key ends in '/' (or stands alone) heads the indented rows under it
    header = (pl.col("raw") == "") & ~pl.col("indented")
    parsed = parsed.with_columns(
        section=pl.when(header).then(pl.col("key").str.strip_chars_end("/")).otherwise(None)
    ).with_columns(
        section=pl.when(header | pl.col("indented")).then(pl.col("section").forward_fill().over("table"))
    )
    values = parsed.filter(pl.col("raw").str.contains(_NUMBER)).with_columns(
        metric=pl.when(pl.col("indented") & pl.col("section").is_not_null())
        .then(pl.col("section") + "/" + pl.col("key")).otherwise(pl.col("key")),
        value=pl.col("raw").str.replace_all(",", "").cast(pl.Float64, strict=False),
    ).drop_nulls("value")
    if values.height == 0:
        return pl.DataFrame(schema={"row": pl.Int64, "record": pl.Int64, "step": pl.Int64, "metric": pl.String,
                                    "value": pl.Float64})
    # a key seen again inside one table starts the next record (tables printed without rules)
    values = values.with_columns(again=(pl.col("metric").cum_count().over("table", "metric") - 1))
    values = values.with_columns(record=pl.struct("table", "again").rank("dense").cast(pl.Int64))
    values = values.sort("row")
    names = values.get_column("metric").unique(maintain_order=True).to_list()
    step_key = timestep_key(names) or _timesteps_in_group(names) or _counter(values, names)
    if step_key is None:
        step = pl.col("record") - pl.col("record").min()
    else:
        step = pl.col("value").filter(pl.col("metric") == step_key).first().over("record").cast(pl.Int64)
    values = values.with_columns(step=step).filter(pl.col("step").is_not_null())
    if step_key is not None:
        values = values.filter(pl.col("metric") != step_key)
    return values.select(pl.col("row").cast(pl.Int64), "record", "step", "metric", "value")


def _timesteps_in_group(names: list[str]) -> str | None:
    """A timesteps key inside a group of the table (OpenAI baselines' `misc/total_timesteps`): its
    last part names it as SB3's own `time/total_timesteps` does."""
    by_last = {n.rsplit("/", 1)[-1].strip(): n for n in reversed(names)}
    found = timestep_key(by_last)
    return by_last[found] if found is not None else None


def _counter(values: pl.DataFrame, names: list[str]) -> str | None:
    """The counter key that names most records' step (`COUNTER_NAMES`), whole numbers only."""
    by_last = {n.rsplit("/", 1)[-1].strip().lower(): n for n in reversed(names)}
    for wanted in COUNTER_NAMES:
        name = by_last.get(wanted)
        if name is None:
            continue
        held = values.filter(pl.col("metric") == name).get_column("value")
        records = values.get_column("record").n_unique()
        if held.len() >= 0.8 * records and bool((held == held.round(0)).all()):
            return name
    return None
