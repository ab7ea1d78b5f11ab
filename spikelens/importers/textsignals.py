"""What a text log says about its launches, beside its values.

Three per-line signals, read from the split lines (`textlogs.split_lines`) without
touching how lines become values:

- `launch_starts`: rows where a relaunch appended to the same file begins, from the
  pattern's `launch_start` marker (nanoGPT prints `mfu -100.00%` on the first step
  lines of every launch): a marked step line after an unmarked one opens a launch,
  even when the relaunch re-logs the last step with the same value.
- `planned_total`: the step total the step lines print (`step 750/19560`), the run's plan.
- `final_error`: the error a log ends with: the exception line of a `Traceback`
  printed after the last step line, or a launcher's crash message (`Killed`,
  `Segmentation fault`, a SLURM cancel, a CUDA/NCCL error).
"""
from __future__ import annotations

import re

import polars as pl

from .patterns import LinePattern

_TAIL_LINES = 2000
_TRACEBACK = r"Traceback \(most recent call last\)"
_EXCEPTION_LINE = r"^(?:\[[^\]]*\]:?\s*|\d+:\s+)?[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)\b(?::.*)?\s*$"
"""`RuntimeError: CUDA out of memory...`, `[rank0]: torch.OutOfMemoryError: ...`, `KeyboardInterrupt`."""
_CRASH_LINE = (r"(?i)^(?:\[[^\]]*\]:?\s*)?(?:.*\bSegmentation fault\b|Killed\s*$|.*\bCUDA error\b|.*\bNCCL error\b"
               r"|.*\bterminate called after throwing\b|slurmstepd: error: .*(?:CANCELLED|TIME LIMIT|OUT OF MEMORY|oom)"
               r"|srun: error: .*(?:Exited|Killed|exit code)|.*\bChildFailedError\b)")
"""Crash messages that come without a Python traceback."""


def launch_starts(lines: pl.DataFrame, pattern: LinePattern) -> list[int]:
    """Rows (of `lines`) where a relaunch's lines begin: after the last unmarked step line
    that precedes a marked one. The first launch's own marked lines open nothing."""
    if pattern.launch_start is None:
        return []
    marked = pl.col("text").str.contains(pattern.launch_start)
    # only the kind of step line that carries the marker (an eval line never does)
    rules = [r for r in pattern.anchors
             if lines.select((pl.col("text").str.contains(_unnamed(r.regex)) & marked).any()).item()]
    if not rules:
        return []
    anchors = "|".join(f"(?:{_unnamed(r.regex)})" for r in rules)
    steps = lines.filter(pl.col("text").str.contains(anchors)).select("row", marked=marked)
    if steps.height < 2:
        return []
    opens = steps.filter(pl.col("marked") & ~pl.col("marked").shift(1).fill_null(True))
    if opens.height == 0:
        return []
    unmarked = steps.filter(~pl.col("marked")).select(prev_row="row")
    before = opens.join_asof(unmarked.with_columns(row=pl.col("prev_row")), on="row", strategy="backward")
    return [int(r) + 1 for r in before.get_column("prev_row").drop_nulls().to_list()]


def _unnamed(regex: str) -> str:
    """The regex with its named groups made plain (several rules' regexes joined by `|`
    would name a group twice)."""
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


def planned_total(lines: pl.DataFrame, pattern: LinePattern) -> int | None:
    """The total the last step line printing one states (`step N/TOTAL`), if any."""
    if pattern.plan is None:
        return None
    for part in (lines.tail(_TAIL_LINES), lines):  # the last statement is what counts: look at the end first
        totals = (part.select(pl.col("text").str.extract(pattern.plan, 1).cast(pl.Int64, strict=False))
                  .get_column("text").drop_nulls())
        if totals.len():
            return int(totals[-1]) if totals[-1] > 0 else None
        if part.height == lines.height:
            break
    return None


def final_error(lines: pl.DataFrame, last_value_row: int | None) -> tuple[str, int] | None:
    """(error line, 0-based line number) when the log ends in an error after its last
    value; None when it ends cleanly or is merely cut off."""
    tail = lines.filter(pl.col("row") > (last_value_row if last_value_row is not None else -1))
    tail = tail.with_columns(pl.col("text").str.strip_chars().str.strip_chars("\x00"))
    tail = tail.filter(pl.col("text").str.len_chars() > 0)
    if tail.height == 0:
        return None
    tb = tail.filter(pl.col("text").str.contains(_TRACEBACK))
    if tb.height:
        after = tail.filter(pl.col("row") > tb.item(-1, "row"))
        exc = after.filter(pl.col("text").str.contains(_EXCEPTION_LINE))
        pick = exc if exc.height else after
        if pick.height:
            return pick.item(-1, "text"), int(pick.item(-1, "line_no"))
        return tb.item(-1, "text"), int(tb.item(-1, "line_no"))
    crash = tail.filter(pl.col("text").str.contains(_CRASH_LINE))
    if crash.height:
        return crash.item(-1, "text"), int(crash.item(-1, "line_no"))
    return None


def signal_meta(lines: pl.DataFrame, pattern: LinePattern, rows: pl.DataFrame) -> dict:
    """The table meta these signals give: `plan.steps`, `plan.error` (see `detect.ended`) and
    `launch_offsets` (frame rows where a relaunch begins; discovery splits the table there)."""
    meta: dict = {}
    total = planned_total(lines, pattern)
    if total is not None:
        meta["plan.steps"] = total
        meta["plan.from"] = f"the {pattern.name} step lines (N/{total})"
    starts = launch_starts(lines, pattern)
    if starts:  # frame rows (the value rows keep read order) where a relaunch begins
        meta["launch_offsets"] = rows.get_column("row").search_sorted(pl.Series(starts, dtype=pl.Int64)).to_list()
    last = int(rows.get_column("row").max()) if rows.height else None
    err = final_error(lines, last)
    if err is not None:
        meta["plan.error"], meta["plan.error_line_no"] = err[0], err[1] + 1
    return meta

