"""A log of result blocks printed one key a line, nested by indentation: RLlib's `print(pretty_print(
algo.train()))`, a YAML dump of each iteration's metrics.

    agent_timesteps_total: 4000
    env_runners:
      episode_return_mean: 22.5
    info:
      learner:
        default_policy:
          learner_stats:
            total_loss: 202.47
    training_iteration: 1

A person reads each block as one record: it begins where the first key of the file comes back at the
left margin, a value's name is its key under the sections above it (`info/learner/default_policy/
learner_stats/total_loss`), and the step is the block's counter that rises from block to block (the
iteration, else the timesteps), else the block's place. No line holds two keys, so the line reader
(`linerecords`) sees no key set repeat and cannot tell a record; a file is read so only when nearly all
its lines are `key: value` or `section:` lines and its first key opens at least `MIN_BLOCKS` blocks.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from .base import Table, long_table, to_float
from .decoding import decode_file

MIN_BLOCKS = 3
KEYED = 0.9
"""The share of a file's non-blank lines that must be `key: value` or `section:` lines."""
STEP_KEYS = ("training_iteration", "iteration", "iter", "step", "global_step", "timesteps_total",
             "num_env_steps_sampled_lifetime", "num_env_steps_sampled", "epoch")
"""Block counters, the most telling first (RLlib's and Tune's `training_iteration`)."""
_LINE = r"^(?P<indent>[ \t]*)(?P<key>[A-Za-z_][\w./\-]*):(?:[ \t]+(?P<value>.*?))?[ \t]*$"
_LINE_RE = re.compile(_LINE)
_NUM = r"^[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\.?(?i:nan|inf))$"


def claims_text(text: str) -> bool:
    """Whether a file's head (whole lines) is such a log: keyed lines nearly all, its first top-level key
    opening `MIN_BLOCKS` blocks or more, a number under most of its keys."""
    lines = [ln for ln in text.replace("\r\n", "\n").split("\n") if ln.strip()]
    if len(lines) < 10:
        return False
    parsed = [_LINE_RE.match(ln) for ln in lines]
    if sum(m is not None for m in parsed) < KEYED * len(lines) or parsed[0] is None or parsed[0]["indent"]:
        return False
    first = parsed[0]["key"]
    opens = sum(1 for m in parsed if m is not None and not m["indent"] and m["key"] == first)
    numeric = sum(1 for m in parsed if m is not None and m["value"] and re.match(_NUM, m["value"]))
    keys = {m["key"] for m in parsed if m is not None}
    # blocks of several keys (`Temperature: 21.5` line after line is one key repeated: no block)
    return opens >= MIN_BLOCKS and len(lines) >= 3 * opens and len(keys) >= 3 and numeric >= 0.3 * len(lines)


def read(path: Path) -> Table:
    """Every numeric value of every block, named by its sections and key, at its block's step."""
    text = decode_file(path, path.read_bytes())
    lines = pl.Series("text", text.replace("\r\n", "\n").split("\n"))
    parts = (lines.to_frame().filter(pl.col("text").str.strip_chars() != "")
             .with_columns(pl.col("text").str.extract_groups(_LINE).alias("m")).unnest("m")
             .filter(pl.col("key").is_not_null())
             .with_columns(depth=pl.col("indent").str.len_chars(), section=pl.col("value").is_null()
                           | (pl.col("value") == "")))
    first = parts.get_column("key")[0]
    parts = parts.with_columns(block=((pl.col("depth") == 0) & (pl.col("key") == first)).cast(pl.Int64).cum_sum() - 1)
    levels = sorted(parts.get_column("depth").unique().to_list())
    # the section open at each depth above a line: the last section line of that depth, until a line at
    # that depth or to its left closes it
    for d in levels[:-1]:
        opened = pl.when((pl.col("depth") == d) & pl.col("section")).then(pl.col("key")).when(
            pl.col("depth") <= d).then(pl.lit("")).otherwise(None)
        parts = parts.with_columns(opened.forward_fill().alias(f"s{d}"))
    above = [pl.when((pl.col("depth") > d) & (pl.col(f"s{d}") != "")).then(pl.col(f"s{d}") + "/").otherwise(pl.lit(""))
             for d in levels[:-1]]
    values = (parts.filter(~pl.col("section") & pl.col("value").str.contains(_NUM))
              .with_columns(metric=pl.concat_str([*above, pl.col("key")]), number=to_float(pl.col("value"))))
    step, how = _block_steps(values)
    values = values.join(step, on="block", how="left")
    frame = long_table(values.get_column("step").to_numpy(), [None] * values.height,
                       values.get_column("metric").to_list(), values.get_column("number").to_numpy())
    return Table(frame=frame, source=path, format="key-blocks", run_key=str(path), segment_key=str(path),
                 meta={"step.from": how, "metric.from": "each key under its sections, a block a record"})


def _block_steps(values: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Each block's step: its first `STEP_KEYS` counter whose whole values rise from block to block, else
    the block's place."""
    blocks = values.select("block").unique().sort("block")
    for name in STEP_KEYS:
        got = (values.filter(pl.col("metric") == name).group_by("block").agg(pl.col("number").first())
               .sort("block"))
        if got.height != blocks.height or got.get_column("number").null_count():
            continue
        counts = got.get_column("number").to_numpy()
        if np.all(counts % 1 == 0) and np.all(np.diff(counts) > 0):
            return got.select("block", step=pl.col("number").cast(pl.Int64)), f"the blocks' {name}"
    return blocks.with_columns(step=pl.col("block").cast(pl.Int64)), "the blocks' order"
