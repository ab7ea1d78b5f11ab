"""Reinforcement-learning progress logs: Stable-Baselines3 `progress.csv` / `progress.json`
(OpenAI Baselines' logger, which SB3's derives from, and home-grown RL scripts alike), and
SB3's `Monitor` file (`monitor.csv`: a `#{"t_start": ...}` line, then one row an episode,
`r,l,t`: read with the timesteps at the episode's end as the step, `r` and `l` named
`episode/reward` and `episode/length`).

An RL run counts environment timesteps, not optimiser steps: `time/total_timesteps` (or
`total_timesteps`, `timesteps_total`, `num_timesteps`, `total timesteps`, ...) is the
step. SB3's `CSVOutputFormat` writes one row per `dump()` and leaves the cells of keys
another dump recorded empty (a rollout row has no `train/*`, an `EvalCallback` row holds
`eval/*`), and rewrites its header when a key first appears, so old rows are padded;
empty cells are "not logged". `time/iterations` and `train/n_updates` are counters, kept
as metrics (`other`), never the step. Roles come from the names (`frame.infer_role`):
`rollout/ep_rew_mean` and `eval/mean_reward` are rewards (higher is better),
`train/approx_kl` KL, `train/entropy_loss` entropy, `train/explained_variance` a score,
`train/loss`, `train/value_loss`, `train/policy_gradient_loss` losses, `time/fps`
throughput. A script relaunched into the same file (timesteps going back) is a second
launch, as for any CSV.
"""
from __future__ import annotations

from pathlib import Path

from .jsonlines import json_object
from .. import diagnostics
from ..errors import FormatError
from . import decoding
import polars as pl

from .base import TABLE_SCHEMA, Importer, Table
from .csvlogs import (decode, float_columns, head_lines, header_index, looks_binary, named_by_file, read_bytes,
                      read_string_frame, separator_of, split_fields, to_long)
from .wandb_exports import parse_jsonl, rows_to_long

TIMESTEP_NAMES = ("time/total_timesteps", "total_timesteps", "timesteps_total", "num_timesteps", "total timesteps",
                  "total_env_steps", "env_steps", "timesteps", "timestep")
"""Columns that count environment timesteps, by preference (matched without case)."""


MONITOR_NAMES = {"r": "episode/reward", "l": "episode/length"}
"""SB3 `Monitor` columns, named as SB3's `results_plotter` names them (its x axis is the
running sum of `l`, the timesteps; `t` is seconds since `t_start`)."""


def timestep_key(keys) -> str | None:
    """The timesteps key among a header's or an object's keys, else None."""
    low = {str(k).strip().lower(): k for k in keys}
    found = next((low[n].strip() for n in TIMESTEP_NAMES if n in low), None)
    if found is None:  # under a section of the logger's own (OpenAI Baselines' `misc/total_timesteps`)
        last = {k.rpartition("/")[2]: v for k, v in low.items() if "/" in k}
        found = next((last[n].strip() for n in TIMESTEP_NAMES if "/" not in n and n in last), None)
    return found


class RlProgressImporter(Importer):
    """CSV or JSON lines with an environment-timesteps column (SB3 `progress.csv`/`.json`)."""

    name = "rl_progress"
    looks_for = "RL logs: Stable-Baselines3 progress.csv / progress.json (a timesteps column), Monitor monitor.csv"

    def claims(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".json", ".jsonl") or not head.strip() or looks_binary(head):
            return False
        lines = head_lines(path, head, 8)
        if not lines:
            return False
        if suffix == ".csv":  # (a note a script wrote above a progress table is no header)
            return is_monitor_head(lines) or counts_timesteps(lines[header_index(lines):])
        objs = [o for o in (json_object(ln) for ln in lines) if o is not None]
        return any(_timesteps_in(o) is not None for o in objs)

    def read(self, path: Path) -> list[Table]:
        raw = read_bytes(path)
        if looks_binary(raw[:4096]):
            raise FormatError(path, "binary data, not a text log")
        text_head = head_lines(path, raw[:4096], 8)
        if path.suffix.lower() == ".csv" and is_monitor_head(text_head):
            long, fmt = monitor_long(path, raw), "sb3_monitor"
        elif path.suffix.lower() == ".csv":
            long, fmt = self._csv(path, raw), "sb3_csv"
        else:
            long, fmt = self._json(path, raw), "sb3_json"
        if long.height == 0:
            diagnostics.warn(f"{path}: no numeric values found")
        return [Table(frame=long, source=path, format=fmt, run_key=str(path), segment_key=str(path))]

    @staticmethod
    def _csv(path: Path, raw: bytes):
        parsed = read_string_frame(path, decode(path, raw))
        key = timestep_key(parsed.frame.columns)
        # columns that name no measure (`seed_0`, `seed_1` of `returns_per_seed.csv`) measure what the file says
        return named_by_file(path, to_long(path, parsed.frame, parsed.sep, step_col=key))

    @staticmethod
    def _json(path: Path, raw: bytes):
        rows = parse_jsonl(path, decode(path, decoding.clean_file(path, raw)))
        key = next((k for k in (_timesteps_in(r) for r in rows[:200]) if k is not None), None)
        if key is None:
            raise FormatError(path, "JSON lines without a timesteps key")
        return rows_to_long(path, [r for r in rows if isinstance(r, dict)], step_key=key, wall_key=None, skip=())


def counts_timesteps(lines: list[str]) -> bool:
    """A CSV head whose timesteps column holds a number in the first row (Ray Tune's
    `progress.csv` has a `timesteps_total` column that non-RL trainables leave empty: its
    step is `training_iteration`, for the CSV reader)."""
    if len(lines) < 2:
        return False
    sep = separator_of(lines[0])
    header = [f.strip() for f in split_fields(lines[0], sep)]
    key = timestep_key(header)
    if key is None:
        return False
    row = split_fields(lines[1], sep)
    i = header.index(key)
    return i < len(row) and row[i].strip().replace(".", "", 1).isdigit()


def is_monitor_head(lines: list[str]) -> bool:
    """SB3 `Monitor`: a `#{"t_start": ..., "env_id": ...}` line (OpenAI baselines' writes
    `# {...}`), then a header naming `r`, `l` and `t`; or that header alone, its first three names
    (a wrapper that writes the Monitor's episodes without its comment line:
    `DictWriter(fieldnames=["r", "l", "t"])`). The header as any writer lays it out: any separator,
    quoted, upper case, in any order, after pandas' index or other comment lines."""
    lead = _comment_lead(lines)
    if lead >= len(lines):
        return False
    names = monitor_names(lines[lead])
    if _t_start(lines[:lead]) is not None:
        return {"r", "l", "t"} <= set(names)
    return lead < len(lines) - 1 and set(names[:3]) == {"r", "l", "t"}


def _comment_lead(lines: list[str]) -> int:
    """How many of the first lines are `#` comments (the Monitor's own and any a script wrote above it)."""
    return next((i for i, ln in enumerate(lines) if not ln.lstrip().startswith("#")), len(lines))


def _t_start(comments: list[str]):
    """The Monitor's `t_start` from its `#{...}` comment line, None when no comment line holds one."""
    for ln in comments:
        text = ln.lstrip()[1:].strip()
        meta = json_object(text) if text.startswith("{") else None
        if meta is not None and "t_start" in meta:
            return meta["t_start"]
    return None


def monitor_names(header: str) -> list[str]:
    """A header's names as the Monitor's columns are keyed: unquoted, lower case, pandas' unnamed index and
    a trailing separator's empty name left out."""
    names = [f.strip().strip('"').strip().lower() for f in split_fields(header, separator_of(header))]
    return [n for n in names if n and not n.startswith("unnamed:")]


def monitor_long(path: Path, raw: bytes):
    """Episodes as points: the step is the timesteps at the episode's end (the running sum of
    `l`), the wall time `t_start + t`; `r` and `l` are named as in `MONITOR_NAMES`."""
    text = decode(path, raw)
    lines = text.split("\n")
    lead = _comment_lead(lines)
    t_start = _t_start(lines[:lead])
    parsed = read_string_frame(path, "\n".join(lines[lead:]))
    frame = parsed.frame
    header = lines[lead] if lead < len(lines) else ""
    if frame.width and split_fields(header, separator_of(header))[:1] == [""]:
        frame = frame.drop(frame.columns[0])  # pandas' unnamed index, whatever name the reader gave it
    keys = {c: c.strip().strip('"').strip().lower() for c in frame.columns}
    frame = frame.select([c for c in frame.columns if keys[c] and not keys[c].startswith("unnamed:")])
    frame = frame.rename({c: keys[c] for c in frame.columns})  # `R`, `"l"`: the Monitor's own names
    if frame.height == 0 or "l" not in frame.columns:
        return pl.DataFrame(schema=TABLE_SCHEMA)
    floats = float_columns(frame, list(frame.columns), parsed.sep)
    steps = floats["l"].expr.fill_null(0).cum_sum().cast(pl.Int64).cast(pl.String)
    wall = None
    if isinstance(t_start, (int, float)) and "t" in frame.columns:
        wall = (floats["t"].expr + float(t_start)).cast(pl.String)
    frame = frame.with_columns(steps.alias("timesteps"), *([wall.alias("wall_time")] if wall is not None else []))
    frame = frame.rename({k: v for k, v in MONITOR_NAMES.items() if k in frame.columns})
    return to_long(path, frame, parsed.sep, step_col="timesteps", wall_col="wall_time" if wall is not None else None,
                   drop=("t",))


def _timesteps_in(obj) -> str | None:
    """The timesteps key of a JSON object, when it holds a number there (Ray Tune's
    `result.json` has `timesteps_total: null` for a non-RL trainable)."""
    if not isinstance(obj, dict):
        return None
    key = timestep_key(obj)
    value = obj.get(key) if key is not None else None
    return key if isinstance(value, (int, float)) and not isinstance(value, bool) else None


