"""A number written as its type's repr, read as the number (a cell of a table, a JSON string value).

`pd.DataFrame(history).to_csv(...)` of a history whose values are tensors writes each cell as
`str(value)`: `tf.Tensor(960.0452, shape=(), dtype=float32)`, `tensor(0.53, device='cuda:0',
grad_fn=<NllLossBackward0>)`, `tensor([0.53])`, `np.float32(0.53)` (NumPy 2's repr), `array(0.53,
dtype=float32)`, `Decimal('0.5')`; `json.dump({k: str(v)})` writes the same text as JSON strings. A
person reads the number inside. Only a scalar's wrapping is taken off (one number inside, an optional
one-element list, keyword arguments after it): `tensor([0.5, 0.7])` holds two numbers and stays text.
"""
from __future__ import annotations

import re

import polars as pl

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf|infinity))"
_TYPE = (r"(?:tf\.Tensor|tensor|Tensor|array|np\.(?:float|int|uint)\d+|numpy\.(?:float|int|uint)\d+"
         r"|(?:float|int)\d+|Decimal|Fraction)")
_KWARGS = r"(?:,\s*[A-Za-z_]\w*\s*=[^()]*(?:\([^()]*\)[^()]*)*)?"
SCALAR_REPR = rf"^\s*{_TYPE}\(\s*\[?\s*['\"]?({_NUM})['\"]?\s*\]?\s*{_KWARGS}\)\s*$"
"""`tf.Tensor(0.53, shape=(), dtype=float32)`: the type, `(`, one number (perhaps quoted, perhaps the
only item of a list), keyword arguments (which may hold `()` as `shape=()` does), `)`."""
_SCALAR_RE = re.compile(SCALAR_REPR)
HINT = "("
"""A cell without a parenthesis holds no repr: the cheap test before the pattern."""


def unwrap_expr(expr: pl.Expr) -> pl.Expr:
    """A String column with each scalar repr replaced by the number inside (other cells unchanged)."""
    return pl.when(expr.str.contains(SCALAR_REPR)).then(expr.str.extract(SCALAR_REPR, 1)).otherwise(expr)


def unwrap_value(value: object) -> object:
    """A JSON value: a string holding a scalar repr becomes its float; anything else is returned as is."""
    if isinstance(value, str) and HINT in value:
        m = _SCALAR_RE.match(value)
        if m:
            return float(m[1])
    return value


_FRACTION_TEXT = re.compile(r"^\s*[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|(?i:nan|inf|infinity))\s*$")
"""A measured value spelled as text (`"1.234"`, `"1.9e+04"`, `"nan"`); a whole number (`"3"`, an id, a
count) stays text: it may name a run or a split."""
_SPELLED = rf'"\s*(?:[-+]?(?:\d+\.\d|\.\d|\d+[eE][-+]?\d|(?i:nan|inf))|{_TYPE}\()'
SPELLED_HINT = re.compile(_SPELLED.encode())
"""Bytes that may hold such a value or a scalar's repr: the cheap test before a record is walked."""
SPELLED_TEXT = re.compile(_SPELLED)
"""The same test on decoded text."""


def spelled_values(obj: object) -> object:
    """A record's values as a person reads them: a measured value written as a string (`{'loss': '1.234'}`,
    ms-swift's quoted numbers, `json.dump(history, default=str)` of NumPy floats) or a scalar's repr
    becomes its float; nested records alike; everything else as it is."""
    if isinstance(obj, str):
        return float(obj) if _FRACTION_TEXT.match(obj) else unwrap_value(obj)
    if isinstance(obj, dict):
        return {k: spelled_values(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [spelled_values(v) for v in obj]
    return obj
