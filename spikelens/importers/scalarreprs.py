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
