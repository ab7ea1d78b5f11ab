"""A group's kept reports as data: JSON of a fixed vocabulary, validated when read back.

A findings dataset is shared (a fleet writes it, the next user reads it), so what it
keeps is never unpickled: the state is JSON whose objects are only the report's own
dataclasses (RunReport, Finding, Cause, ShiftProfile), rebuilt field by field after
each field's type is checked against the class's annotations. Values JSON cannot spell
are tagged: `{"$f": "nan"}` (non-finite floats), `{"$t": [...]}` (tuples), `{"$d":
[[key, value], ...]}` (other dicts: keys not strings, or starting with `$`), `{"$a": dtype, "v": [...]}` (NumPy
arrays of numbers or booleans, "nan", "inf" and "-inf" spelled so), `{"$c": class, "f": {...}}` (the dataclasses); a dict
whose keys are strings not starting with `$` is a plain object. Anything
else fails to load with StateError, and the sweep reads that group's files again.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import fields, is_dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..detect.levels import ShiftProfile
from ..model.finding import Cause, Finding
from ..model.report import RunReport

SCHEMA = "spikelens.state/1"
CLASSES = {c.__name__: c for c in (RunReport, Finding, Cause, ShiftProfile)}
_DTYPES = ("b", "i", "u", "f")  # NumPy kinds an array may hold
_SKIPPED = ("frame",)
_SCALARS = (bool, str, int, float)
_NUMBERS = (bool, int, float)
_NONFINITE = ("nan", "inf", "-inf")  # how an array spells its non-finite floats  # fields never kept (RunReport.frame: plots read the files again)


class StateError(ValueError):
    """A kept state is not one this version wrote (damaged, older, or planted)."""


def dumps(reports: list[RunReport], warnings: list[str]) -> bytes:
    doc = {"schema": SCHEMA, "reports": [_value(r) for r in reports], "warnings": [str(w) for w in warnings]}
    return json.dumps(doc, allow_nan=False, separators=(",", ":")).encode("utf-8")


def loads(data: Any) -> tuple[list[RunReport], list[str]]:
    """The reports and warnings of a state; StateError for anything else."""
    try:
        doc = json.loads(bytes(data).decode("utf-8"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise StateError(f"not a spikelens state ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise StateError(f"not a {SCHEMA} state")
    reports = [_load(x) for x in _list(doc.get("reports"))]
    warnings = _list(doc.get("warnings"))
    if not all(isinstance(r, RunReport) for r in reports) or not all(isinstance(w, str) for w in warnings):
        raise StateError("reports or warnings of the wrong type")
    return reports, warnings


def _list(x: Any) -> list:
    if not isinstance(x, list):
        raise StateError("expected a list")
    return x


# ---------------------------------------------------------------- writing

def _value(x: Any) -> Any:
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in _DTYPES or x.ndim != 1:
            raise TypeError(f"array of {x.dtype} ({x.ndim}-d) cannot be kept")
        return {"$a": x.dtype.str, "v": [v if type(v) is not float or math.isfinite(v) else repr(v)
                                         for v in x.tolist()]}
    if isinstance(x, np.generic):
        return _value(x.item())
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x) if math.isfinite(x) else {"$f": repr(float(x))}
    if isinstance(x, tuple):
        return {"$t": [_value(v) for v in x]}
    if isinstance(x, list):
        return [_value(v) for v in x]
    if isinstance(x, dict):
        if all(type(k) is str and not k.startswith("$") for k in x):  # the common case: a plain object
            return {k: _value(v) for k, v in x.items()}
        return {"$d": [[_value(k), _value(v)] for k, v in x.items()]}
    if is_dataclass(x) and type(x).__name__ in CLASSES and CLASSES[type(x).__name__] is type(x):
        return {"$c": type(x).__name__,
                "f": {f.name: _value(getattr(x, f.name)) for f in fields(x) if f.name not in _SKIPPED}}
    raise TypeError(f"{type(x).__name__} cannot be kept")


# ---------------------------------------------------------------- reading

def _load(x: Any, depth: int = 0) -> Any:
    if depth > 64:
        raise StateError("nested too deep")
    if x is None or isinstance(x, (bool, str, int, float)):
        return x
    if isinstance(x, list):
        if all(v is None or type(v) in _SCALARS for v in x):  # the common case, at once
            return x
        return [_load(v, depth + 1) for v in x]
    if not isinstance(x, dict):
        raise StateError("unknown value")
    if not any(k.startswith("$") for k in x):  # a dict with string keys
        return {k: v if v is None or type(v) in _SCALARS else _load(v, depth + 1) for k, v in x.items()}
    if len(x) not in (1, 2):
        raise StateError("unknown value")
    if set(x) == {"$f"}:
        if x["$f"] not in ("nan", "inf", "-inf"):
            raise StateError("bad float")
        return float(x["$f"])
    if set(x) == {"$t"}:
        return tuple(_load(v, depth + 1) for v in _list(x["$t"]))
    if set(x) == {"$d"}:
        out = {}
        for pair in _list(x["$d"]):
            if not isinstance(pair, list) or len(pair) != 2:
                raise StateError("bad dict item")
            key = _load(pair[0], depth + 1)
            if not isinstance(key, (str, int, float, bool, tuple, type(None))):
                raise StateError("bad dict key")
            out[key] = _load(pair[1], depth + 1)
        return out
    if set(x) == {"$a", "v"}:
        try:
            dtype = np.dtype(str(x["$a"]))
        except TypeError:
            raise StateError("bad array type") from None
        if dtype.kind not in _DTYPES:
            raise StateError("bad array type")
        values = _list(x["v"])
        if not all(type(v) in _NUMBERS for v in values):
            if not all(type(v) in _NUMBERS or v in _NONFINITE for v in values):
                raise StateError("bad array value")
            values = [float(v) if type(v) is str else v for v in values]
        try:
            return np.array(values, dtype=dtype)
        except (TypeError, ValueError, OverflowError):
            raise StateError("bad array value") from None
    if set(x) == {"$c", "f"}:
        return _object(x["$c"], x["f"], depth)
    raise StateError("unknown value")


def _object(name: Any, given: Any, depth: int) -> Any:
    cls = CLASSES.get(name) if isinstance(name, str) else None
    if cls is None or not isinstance(given, dict):
        raise StateError(f"unknown object {name!r}")
    want = _fields_of(cls)
    if given.keys() != want.keys():
        raise StateError(f"{name}: fields {sorted(given)} are not {sorted(want)}")
    values = {}
    for key, raw in given.items():
        value = _load(raw, depth + 1)
        if not want[key](value):
            raise StateError(f"{name}.{key}: not of its type")
        values[key] = value
    return cls(**values)


@lru_cache(maxsize=None)
def _fields_of(cls: type) -> dict[str, Callable[[Any], bool]]:
    return {f.name: _checker(str(f.type)) for f in fields(cls) if f.name not in _SKIPPED}


_GENERIC = re.compile(r"(\w+)\[(.*)\]")


def _fits(value: Any, ann: str) -> bool:
    """Does `value` have the type the annotation (as written in the class) names?"""
    return _checker(ann)(value)


@lru_cache(maxsize=None)
def _checker(ann: str) -> Callable[[Any], bool]:
    """The annotation as a test, built once per annotation (states are loaded by the
    thousand)."""
    ann = ann.strip()
    union = _split_union(ann)
    if len(union) > 1:
        parts = [_checker(p) for p in union]
        return lambda v: any(c(v) for c in parts)
    plain = {"Any": object, "str": str, "bool": bool, "np.ndarray": np.ndarray, "None": type(None)}
    if ann in plain:
        kind = plain[ann]
        return lambda v: isinstance(v, kind)
    if ann == "int":
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if ann == "float":
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if ann in CLASSES:
        cls = CLASSES[ann]
        return lambda v: isinstance(v, cls)
    m = _GENERIC.fullmatch(ann)
    if m and m.group(1) == "list":
        item = _checker(m.group(2))
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    if m and m.group(1) == "dict":
        k_ann, v_ann = (x.strip() for x in m.group(2).split(",", 1))
        key, val = _checker(k_ann), _checker(v_ann)
        return lambda v: isinstance(v, dict) and all(key(k) and val(x) for k, x in v.items())
    return lambda v: False


def _split_union(ann: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in ann:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]
