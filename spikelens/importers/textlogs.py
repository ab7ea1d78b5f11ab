"""Text logs (stdout captures, `main.log`, `log.txt`) read through named line patterns.

A file is claimed when one pattern of the catalogue (`importers/patterns.py`) or of
the user's `[tool.spikelens.patterns]` matches enough step lines in its first 64 KiB
(reading on, up to 8 MiB, for logs with a long preamble such as Megatron's argument
dump). Reading runs the pattern's regexes over all lines at once with Polars, takes
the step of context lines (llm.c `val loss`, DeepSpeed `OVERFLOW!`) from the nearest
step line, and keeps read order, so a log appended after a resume becomes a second
segment where its step goes back (`segments.py`). One file is one run.

User patterns: the importer is built without arguments by the registry, so it looks
the config up itself, once per working folder (`config.load_config()`, cached). A
caller holding a `Config` (e.g. from `--config`) calls `set_user_patterns(cfg.patterns,
cfg.path)` first; `set_user_patterns(None)` goes back to the lookup.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl

from .. import diagnostics
from ..config import load_config
from ..errors import FormatError, InputError
from . import textsignals
from .base import Importer, Table, long_table, to_float
from .patterns import CATALOGUE, RESERVED_GROUPS, LinePattern, Rule, user_patterns

TEXT_SUFFIXES = frozenset({".log", ".txt", ".out", ".err", ""})
SNIFF_BYTES = 64 * 1024
DEEP_SNIFF_BYTES = 8 * 1024 * 1024
_CHUNK = 1024 * 1024
_CUT = "\x00"
"""Appended to a last line that has no newline: a value running into the end of the
file may be cut short, and `END` in the regexes does not accept this character."""

_ROW_COLS = {"row": pl.Int64, "line_no": pl.Int64, "pos": pl.Int32, "step": pl.Int64,
             "wall_time": pl.Float64, "metric": pl.String, "value": pl.Float64}

# ------------------------------------------------------------------ user patterns

_explicit: tuple[LinePattern, ...] | None = None
_by_cwd: dict[str, tuple[LinePattern, ...]] = {}


def set_user_patterns(table: dict | None, source: Path | str | None = None) -> None:
    """Use these `[tool.spikelens.patterns]` (None: look the config up from the cwd)."""
    global _explicit
    _explicit = None if table is None else user_patterns(table, source)


def active_user_patterns() -> tuple[LinePattern, ...]:
    if _explicit is not None:
        return _explicit
    key = os.getcwd()
    if key not in _by_cwd:
        cfg = load_config()
        _by_cwd[key] = user_patterns(cfg.patterns, cfg.path)
    return _by_cwd[key]


def all_patterns() -> tuple[LinePattern, ...]:
    """User patterns first (they win over the catalogue), then the catalogue."""
    return active_user_patterns() + CATALOGUE


# ------------------------------------------------------------------ sniffing


def looks_binary(head: bytes) -> bool:
    """NUL bytes are rare in text and common in event files, `.wandb` and archives."""
    return head.count(b"\x00") > max(1, len(head) // 100)


def _anchor_hits(lines: pl.Series, patterns: tuple[LinePattern, ...]) -> list[int]:
    return [sum(int(lines.str.contains(r.regex).sum()) for r in p.anchors) for p in patterns]


def choose(patterns: tuple[LinePattern, ...], hits: list[int], *, whole_file: bool, final: bool) -> LinePattern | None:
    """The pattern a sniff settles on: user patterns first, then the catalogue's with the
    most step lines; fallback patterns only once the sniff is over. When the whole file
    was read, one matching line is enough."""
    def need(p: LinePattern) -> int:
        return 1 if whole_file else p.min_lines

    tiers = ([p for p in patterns if p.user], [p for p in patterns if not p.user and not p.fallback])
    if final:
        tiers += ([p for p in patterns if p.fallback],)
    for tier in tiers:
        scored = [(hits[patterns.index(p)], -patterns.index(p), p) for p in tier
                  if hits[patterns.index(p)] >= need(p)]
        if scored:
            return max(scored, key=lambda t: t[:2])[2]
    return None


def _lines_of(data: bytes) -> pl.Series:
    text = data.decode("utf-8", errors="replace")
    return pl.Series([text]).str.replace_all("\r\n?", "\n").str.split("\n").explode()


def sniff(path: Path, patterns: tuple[LinePattern, ...]) -> LinePattern | None:
    """Read the file in growing chunks until a pattern is sure (64 KiB first, at most 8 MiB)."""
    hits = [0] * len(patterns)
    carry = b""
    done = 0
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(SNIFF_BYTES if done == 0 else _CHUNK)
            done += len(chunk)
            eof = not chunk or done >= os.fstat(fh.fileno()).st_size
            data = carry + chunk
            if not eof:
                cut = data.rfind(b"\n") + 1
                data, carry = data[:cut], data[cut:]
            if data:
                for i, n in enumerate(_anchor_hits(_lines_of(data), patterns)):
                    hits[i] += n
            last = eof or done >= DEEP_SNIFF_BYTES
            found = choose(patterns, hits, whole_file=eof, final=last)
            if found is not None or last:
                return found


# ------------------------------------------------------------------ reading


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


class TextLogImporter(Importer):
    """llm.c, nanoGPT, modded-nanogpt, build-nanogpt, Megatron, DeepSpeed logs and user patterns."""

    name = "text"
    looks_for = "*.log, *.txt, *.out, *.err text logs matching a known line pattern"

    def __init__(self) -> None:
        self._sniffed: dict[tuple, LinePattern | None] = {}
        self._sniffed_with: tuple[LinePattern, ...] | None = None

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in TEXT_SUFFIXES or looks_binary(head) or not head.strip():
            return False
        return self.pattern_for(path) is not None

    def pattern_for(self, path: Path) -> LinePattern | None:
        """The pattern a sniff settles on (cached per file version and pattern set)."""
        user = active_user_patterns()
        if user is not self._sniffed_with:
            self._sniffed, self._sniffed_with = {}, user
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self._sniffed:
            self._sniffed[key] = sniff(path, user + CATALOGUE)
        return self._sniffed[key]

    def read(self, path: Path) -> list[Table]:
        try:
            raw = path.read_bytes()
            pattern = self.pattern_for(path) if raw.strip() else None
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
        if not raw.strip():
            raise FormatError(path, "empty text log")
        if pattern is None:
            names = ", ".join(p.name for p in all_patterns())
            raise FormatError(path, f"no known text-log line pattern matches ({names})")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            diagnostics.warn(f"{path}: not valid UTF-8; undecodable bytes were replaced")
        lines = split_lines(text)
        rows, info = parse_lines(lines, pattern)
        self._warn(path, pattern, info, rows)
        frame = long_table(rows.get_column("step"), rows.get_column("wall_time"),
                           rows.get_column("metric"), rows.get_column("value"))
        meta = {"pattern": pattern.name, "lines": int(lines.get_column("line_no").max() or 0) + 1,
                "matched_lines": info["matched_lines"], "duplicates_dropped": info["duplicates_dropped"],
                **textsignals.signal_meta(lines, pattern, rows)}
        return [Table(frame=frame, source=path, format="text", run_key=str(path), segment_key=str(path),
                      meta=meta)]

    @staticmethod
    def _warn(path: Path, pattern: LinePattern, info: dict, rows: pl.DataFrame) -> None:
        near = info["near_misses"]
        if near.height:
            first = near.row(0, named=True)
            snippet = first["text"].replace(_CUT, "")[:80]
            diagnostics.warn(f"{path}: {near.height} line(s) look like {pattern.name} lines but could not be "
                             f"read (cut off or spliced), first at line {first['line_no'] + 1}: {snippet!r}")
        if rows.height == 0:
            diagnostics.warn(f"{path}: matched the {pattern.name} pattern but held no readable values")
