"""What a logger, a launcher or a progress bar prints around a line's message: never part of it.

A script's `print(loss)` becomes `2024-05-01 12:00:00,123 - INFO - 0.53` once it goes through
`logging`, `[rank0]:[titan] 0.53` under torchrun, `I0501 12:00:00.123 1234 train.py:88] 0.53` under
absl, `2024-05-01 12:00:00.123 | INFO | __main__:train:88 - 0.53` under loguru, and a tqdm bar's last
redraw may stand before it on the same line (`42%|████▏| 420/1000 [01:02<01:26]\\r0.53`). A person
reads the message through all of these; readers that match a whole line (bare numbers, rows of
numbers) see the message alone by `strip` / `strip_series`. The grammar is the decoration's, never a
value's: time stamps (a date and a time, ISO's `T` and zone, a bracketed time of day), log levels with
the logger's name (`INFO:root:`), logger locations (`mod:fn:88`), rank tags, a bracketed name of four
letters or more (`[titan]`, `[Trainer]`; `[nan]` is a value), glog's header; each with the separators
(` - `, ` | `, `: `) that part it from the message. No lookaround, so Polars runs the same pattern.
"""
from __future__ import annotations

import polars as pl

ZONE = r"(?:Z|[+-]\d\d:?\d\d)"
"""A time stamp's zone as ISO writes it after the time (`Z`, `+02:00`, `-0500`)."""
_LEVELS = "INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL|TRACE|SUCCESS|NOTICE|info|debug|warning|warn|error"
_PIECES = "|".join([
    rf"\[?\d{{4}}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?{ZONE}?\]?",  # a date and a time
    r"\[\d\d:\d\d:\d\d(?:[.,]\d+)?\]",  # a bracketed time of day
    r"\d\d:\d\d:\d\d[.,]\d+",  # a time of day to the fraction of a second
    r"[IWEF]\d{4} +\d\d:\d\d:\d\d\.\d+ +\d+ +[\w.\-]+:\d+\]",  # glog / absl
    r"\[(?:rank|Rank|RANK)[ \t]*\d+\]:?",  # torchrun's rank tag
    rf"\[?(?:{_LEVELS})\]?(?::[A-Za-z_][\w.]*)?:?",  # a level, maybe with the logger's name (`INFO:root:`)
    r"[A-Za-z_<][\w.<>]*:[A-Za-z_<][\w.<>]*:\d+",  # loguru's `module:function:line`
    r"\[[A-Za-z][A-Za-z_.\-]{3,}\]:?",  # a bracketed name: `[titan]`, `[Trainer]`
])
DECORATION = rf"(?:[ \t]*(?:{_PIECES})[ \t]*(?:-[ \t]+|[|:,][ \t]*)?)*"
"""Pieces of decoration, each with the separators after it, maybe none: what a named line pattern
(`patterns`) allows before the words it knows."""
PREFIX = rf"^[ \t]*(?:(?:{_PIECES})[ \t]*(?:-[ \t]+|[|:,][ \t]*)?)+"
"""A line's decoration before its message, with the separators after each piece."""
BAR = r"\d{1,3}%\|[^|]*\||\[\d+:\d\d(?::\d\d)?<(?:\d+:\d\d(?::\d\d)?|\?)"
"""A progress bar's redraw (`42%|████▏ |`, `[01:02<01:26`): a segment of a line that is no message."""


def strip_series(lines: pl.Series) -> pl.Series:
    """Each line's message: its last redraw that is no progress bar (text after a `\\r`, as a terminal
    shows it), its decoration prefix removed."""
    parts = lines.str.split("\r").list.eval(pl.element().filter(
        (pl.element().str.strip_chars() != "") & ~pl.element().str.contains(BAR)))
    last = parts.list.last().fill_null("")
    return last.str.replace(PREFIX, "")


def strip(lines: list[str]) -> list[str]:
    """`strip_series` of a list of lines."""
    if not lines:
        return lines
    return strip_series(pl.Series(lines, dtype=pl.String)).to_list()
