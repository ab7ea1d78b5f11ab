"""A record printed as a Python sequence, read as the bare numbers it holds.

`print([epoch, i, loss.item()])` writes `[0, 10, 2.71]`, `print((epoch, loss, val_loss))` writes
`(0, 2.75, 2.90)`, `print([epoch, f'{loss:.5f}'])` writes `[0, '2.74232']`, and `print(epoch, loss)`
with `loss` a tensor or a NumPy array writes `0 tensor(2.7066, device='cuda:0', grad_fn=<...>)` or
`0 [2.7544847]`. A person reads each line as the row of numbers inside its brackets, quotes and type
wrappers, as `barenumbers` reads `0 2.71` (a counter, then values its columns' shapes may name).

Only the wrapping a printer adds is taken off: a scalar's type (`tensor(x, ...)`, `array(x, ...)`,
`np.float64(x)`), quotes around a number, a list of one number, and the brackets around the whole
line. Anything else stays, so a line with words in it is still no row of numbers.
The patterns are written once for Python's `re` (a file's head) and once for Polars (the whole file,
vectorised); they match the same text.
"""
from __future__ import annotations

import re

import polars as pl

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))"
_TYPED = rf"(?:tensor|array|np\.float\d+|np\.int\d+|numpy\.float\d+|float\d+)\(\s*({_NUM})\s*(?:,[^()]*)?\)"
"""A scalar in its type's repr: `tensor(2.7066, device='cuda:0', grad_fn=<NllLossBackward0>)`."""
_QUOTED = rf"'\s*({_NUM})\s*'|\"\s*({_NUM})\s*\""
"""A number printed as a string inside a list: `'2.74232'`."""
_SINGLE = rf"\[\s*({_NUM})\s*\]"
"""A NumPy array of one number: `[2.7544847]`."""
_WHOLE = r"^\s*[\[(](.*?)[\])]\s*,?\s*$"
"""Brackets around the whole line: the printed list or tuple itself."""
_TYPED_RE, _QUOTED_RE, _SINGLE_RE, _WHOLE_RE = (re.compile(p) for p in (_TYPED, _QUOTED, _SINGLE, _WHOLE))
_WRAPPED_HINT = re.compile(r"[\[('\"]")


def unwrap_line(line: str) -> str:
    """The line with a printer's wrapping taken off (unchanged when it has none)."""
    if not _WRAPPED_HINT.search(line):
        return line
    line = _TYPED_RE.sub(r"\1", line)
    line = _QUOTED_RE.sub(lambda m: m[1] or m[2], line)
    line = _SINGLE_RE.sub(r"\1", line)
    return _WHOLE_RE.sub(r"\1", line)


def unwrap_series(lines: pl.Series) -> pl.Series:
    """`unwrap_line` over a whole file's lines, in Polars."""
    return (lines.str.replace_all(_TYPED, "${1}").str.replace_all(_QUOTED, "${1}${2}")
            .str.replace_all(_SINGLE, "${1}").str.replace(_WHOLE, "${1}"))


def printed_rows(lines: list[str], row: re.Pattern, width) -> list[str] | None:
    """The lines unwrapped when each was a printed sequence of a few numbers (at least two, fewer than
    ten: a record a line, not a curve a line, which `numberlists` reads) and all are as wide; else None."""
    if len(lines) < 2 or not any(_WRAPPED_HINT.search(ln) for ln in lines):
        return None
    out = [unwrap_line(ln) for ln in lines]
    if not all(row.fullmatch(ln) for ln in out):
        return None
    widths = {width(ln) for ln in out}
    if len(widths) != 1 or not 2 <= next(iter(widths)) < 10:
        return None
    return out


_TRAILED = rf"^(\s*{_NUM}(?:[ \t,;]+{_NUM})+)[ \t,;]+([A-Za-z][\w.\-]*[ \t]+[A-Za-z].*?)\s*$"
"""Numbers, then words after them (`0\t2.72\t15.2\tBest at epoch 0`): a note each row ends with."""
_TRAILED_RE = re.compile(_TRAILED)


def trailed_rows(lines: list[str]) -> list[str] | None:
    """The numbers of rows that all end in the same words after them, their own numbers aside
    (`f.write('%d\\t%.4f' % ...); f.write('\\tBest at epoch %d' % best)`), else None. A note of two
    words or more after two numbers or more: one word is a tag that names the row's series, which
    `barenumbers` reads; `0 loss 1.0` is a text log's key and its value."""
    found = [_TRAILED_RE.match(ln) for ln in lines]
    if len(lines) < 2 or not all(found):
        return None
    if len({re.sub(r"\d+(?:\.\d+)?", "0", m[2]) for m in found}) != 1:
        return None
    return [m[1] for m in found]


def untrail_series(lines: pl.Series) -> pl.Series:
    """`trailed_rows` over a whole file's lines, in Polars (the caller checked its head)."""
    return lines.str.replace(_TRAILED, "${1}")
