"""The text-log parse as it was before it was chunked (spikelens 0.1, commit d047760):
one pass over all lines, values through `to_float`, one global sort; and the log's
signals (`textsignals`) as they were read from all lines at once (commit 5f07b55). Kept
only as the reference the property tests compare the chunked parse with; never
imported by spikelens."""
from __future__ import annotations

import re

import polars as pl

from spikelens.importers.base import to_float
from spikelens.importers.patterns import RESERVED_GROUPS, LinePattern, Rule

_CUT = "\x00"
_ROW_COLS = {"row": pl.Int64, "line_no": pl.Int64, "pos": pl.Int32, "step": pl.Int64,
             "wall_time": pl.Float64, "metric": pl.String, "value": pl.Float64}


def split_lines(text: str) -> pl.DataFrame:
    """`row` (read order), `line_no` (0-based, by newline) and `text`; a carriage return
    (progress bars) also ends a piece of a line."""
    cut = bool(text) and not text.endswith(("\n", "\r"))
    if cut:
        text += _CUT
    frame = (
        pl.DataFrame({"text": [text]})
        .select(pl.col("text").str.split("\n"))
        .explode("text")
        .with_row_index("line_no")
        .with_columns(pl.col("text").str.split("\r"))
        .explode("text")
        .with_row_index("row")
    )
    return frame.with_columns(pl.col("row").cast(pl.Int64), pl.col("line_no").cast(pl.Int64))


def _wall_time(col: str) -> pl.Expr:
    return (pl.col(col).str.replace(",", ".", literal=True).str.replace("T", " ", literal=True)
            .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
            .dt.timestamp("us").cast(pl.Float64) / 1e6)


def _groups(regex: str) -> list[str]:
    return list(re.compile(regex).groupindex)


def _rule_rows(lines: pl.DataFrame, rule: Rule) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One rule over every line: (its value rows, its matched lines `row, line_no, step`)."""
    names = _groups(rule.regex)
    ctx = [g for g in names if g.startswith("_")]
    metric_groups = [g for g in names if g not in RESERVED_GROUPS and not g.startswith("_")]
    matched = lines.filter(pl.col("text").str.contains(rule.regex))
    g = matched.with_columns(pl.col("text").str.extract_groups(rule.regex).alias("_g")).unnest("_g")
    if "step" not in g.columns:
        g = g.with_columns(step=pl.lit(None, pl.String))
    if "timestamp" not in g.columns:
        g = g.with_columns(timestamp=pl.lit(None, pl.String))
    g = g.with_columns(pl.col("step").cast(pl.Int64, strict=False), wall_time=_wall_time("timestamp"))
    base = ["row", "line_no", "step", "wall_time", *ctx]
    seen = g.select("row", "line_no", "step")

    wide_names: list[str] = []
    columns = []
    for i, grp in enumerate(metric_groups):
        columns.append(pl.col(grp).alias(f"__m{i}"))
        wide_names.append(rule.metrics.get(grp, grp))
    for metric, fre in rule.fields.items():
        columns.append(pl.col("text").str.extract(fre, 1).alias(f"__m{len(wide_names)}"))
        wide_names.append(metric)
    parts = []
    if columns:
        wide = g.select(*base, *columns)
        long = wide.unpivot(on=[f"__m{i}" for i in range(len(wide_names))], index=base,
                            variable_name="_var", value_name="raw")
        idx = pl.col("_var").str.slice(3).cast(pl.Int32)
        parts.append(long.with_columns(
            pos=idx, metric=idx.replace_strict(list(range(len(wide_names))), wide_names, return_dtype=pl.String),
        ).drop("_var"))
    if rule.pairs and "rest" in g.columns:
        pairs = (
            g.select(*base, _p=pl.col("rest").str.extract_all(rule.pairs))
            .explode("_p")
            .filter(pl.col("_p").is_not_null())
            .with_columns(pos=(1000 + pl.int_range(pl.len()).over("row")).cast(pl.Int32),
                          _kv=pl.col("_p").str.extract_groups(rule.pairs))
            .unnest("_kv")
            .with_columns(key=pl.col("key").str.strip_chars())
            .filter(~pl.col("key").is_in(list(rule.ignore)))
        )
        if not rule.keep_other:
            pairs = pairs.filter(pl.col("key").is_in(list(rule.metrics)))
        mapping = dict(rule.metrics)
        metric = pl.col("key").replace(list(mapping), list(mapping.values())) if mapping else pl.col("key")
        parts.append(pairs.select(*base, "pos", raw=pl.col("value"), metric=metric))
    if not parts:
        return pl.DataFrame(schema={**_ROW_COLS}), seen
    rows = pl.concat([p.select(*base, "pos", "metric", "raw") for p in parts])
    rows = (rows.with_columns(value=to_float(pl.col("raw")))
            .filter(pl.col("value").is_not_null() & pl.col("raw").is_not_null())
            .drop("raw"))
    if rule.post is not None:
        rows = rule.post(rows)
    return rows.select(*[pl.col(c).cast(t) for c, t in _ROW_COLS.items()]), seen


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


def parse_lines(lines: pl.DataFrame, pattern: LinePattern) -> tuple[pl.DataFrame, dict]:
    """Every value the pattern reads, in read order: `row, line_no, pos, step, wall_time,
    metric, value`; plus counts for diagnostics."""
    results = [(rule, *_rule_rows(lines, rule)) for rule in pattern.rules]
    anchors = (
        pl.concat([seen for rule, _, seen in results if rule.step_from == "line"])
        .filter(pl.col("step").is_not_null())
        .select("row", "step")
        .sort("row")
    )
    parts = []
    for rule, rows, _ in results:
        rows = _resolve_steps(rows, anchors, rule)
        parts.append(rows)
        if rule.counts and rows.height:
            parts.append(_counts(rows, rule.counts))
    frame = pl.concat(parts).sort("row", "pos", maintain_order=True) if parts else pl.DataFrame(schema=_ROW_COLS)
    frame = frame.filter(pl.col("step").is_not_null())
    dup = ((pl.col("step") == pl.col("step").shift(1).over("metric"))
           & pl.col("value").eq_missing(pl.col("value").shift(1).over("metric"))).fill_null(False)
    deduped = frame.filter(~dup)
    matched_rows = pl.concat([seen.select("row") for _, _, seen in results]).unique()
    info = {"duplicates_dropped": frame.height - deduped.height,
            "matched_lines": matched_rows.height,
            "near_misses": _near_misses(lines, pattern, matched_rows)}
    return deduped, info


def _near_misses(lines: pl.DataFrame, pattern: LinePattern, matched_rows: pl.DataFrame) -> pl.DataFrame:
    """Lines that look like a step line of the pattern but that no rule could read."""
    nears = [r.near for r in pattern.rules if r.near]
    if not nears:
        return lines.head(0)
    looks = pl.any_horizontal([pl.col("text").str.contains(n) for n in nears])
    return lines.filter(looks).join(matched_rows, on="row", how="anti").sort("row")


# ------------------------------------------------------------------ signals (textsignals before it was chunked)

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
    from spikelens.importers.textsignals import _FATAL_LINE  # the rule added since (7806e82): a fatal
    # error anywhere in a line (`RuntimeError: CUDA out of memory` spliced into a cut-off step line)

    crash = tail.filter(pl.col("text").str.contains(_CRASH_LINE) | pl.col("text").str.contains(_FATAL_LINE))
    if crash.height:
        return crash.item(-1, "text"), int(crash.item(-1, "line_no"))
    return None


def killed(lines: pl.DataFrame, last_value_row: int | None) -> tuple[str, int] | None:
    """The rule added since (699dab7): a kill notice among the last value lines, with no more
    than a killed process's flush after it, is the job's end (`textsignals._KILL_LINE`)."""
    from spikelens.importers.textsignals import _FLUSH_LINES, _KILL_LINE, _notice

    if last_value_row is None:
        return None
    near = lines.filter((pl.col("row") >= last_value_row - _FLUSH_LINES)
                        & pl.col("text").str.strip_chars().str.contains(_KILL_LINE))
    if near.height == 0:
        return None
    return _notice(near.item(-1, "text").strip()), int(near.item(-1, "line_no"))


def last_training_row(lines: pl.DataFrame, rows: pl.DataFrame) -> int | None:
    """The rule added since (699dab7): values after the last crash, fatal or kill line under keys
    never logged before it report the failure (eval lines, a launcher's numbers), not training; the
    last value row under a key logged before that line ends the training (every row when none was)."""
    from spikelens.importers.textsignals import _FATAL_LINE, _KILL_LINE

    if rows.height == 0:
        return None
    last = int(rows.get_column("row").max())
    if "metric" not in rows.columns:  # rows of no named metric: every value counts
        return last
    text = pl.col("text").str.strip_chars()
    crash = lines.filter((pl.col("row") < last) & (text.str.contains(_CRASH_LINE) | text.str.contains(_FATAL_LINE)
                                                    | text.str.contains(_KILL_LINE)))
    if crash.height == 0:
        return last
    at = int(crash.get_column("row").max())
    before = set(rows.filter(pl.col("row") < at).get_column("metric").to_list())
    if not before:
        return last
    return max(r for r, m in rows.select("row", "metric").iter_rows() if r < at or m in before)


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
    last = last_training_row(lines, rows)
    err = final_error(lines, last)
    if err is None:
        err = killed(lines, last)
    if err is not None:
        meta["plan.error"], meta["plan.error_line_no"] = err[0], err[1] + 1
    return meta

