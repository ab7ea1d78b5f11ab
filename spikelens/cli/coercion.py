"""Command-line values turned into Python values without importing pydantic.

Typer 0.29 coerces every parameter through a pydantic `TypeAdapter`, built the first
time the parameter is parsed: importing pydantic and building the adapters is ~0.2 s of
CPU and ~13 MB at every start, more than the rest of the command line's parse. The
parameters spikelens declares are plain (str, bool, int, float, Path, an Enum, lists of
them), and their usual values have one obvious reading: `"12"` is 12, `"runs"` is
`Path("runs")`, `"json"` is `ReportFormat.json`. Those are read here, with typer's own
path and choice checks; anything else (a value that does not read, a type, a range or a
parser this module does not know) goes to typer's own coercion, built on first need, so
its answer and its error messages are typer's. Nothing changes when typer has no such
layer (older versions never import pydantic).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

try:  # typer >= 0.29: the runtime coercion layer (typer._coercion), lazily built per parameter
    from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - older typer: click's types, no pydantic
    RuntimeParam = None

_INT = re.compile(r"[+-]?[0-9]{1,18}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")
_NOT_READ = object()


def install(params: list) -> list:
    """Give each typer parameter of `params` (a command's, its help option's) the plain
    reading (see the module docstring); `params` is returned."""
    if RuntimeParam is None:
        return params
    for param in params:
        if isinstance(param, _TyperParameter) and getattr(param, "_runtime_param", _NOT_READ) is None:
            desc = getattr(param, "type_descriptor", None)
            if isinstance(desc, TypeDescriptor) and desc.file_annotation is None:
                try:
                    plain = _PlainParam(parameter_info=desc.parameter_info,
                                        annotation=desc.annotation, descriptor=desc)
                except Exception:  # noqa: BLE001 - a typer whose private layer changed: its own coercion
                    continue
                param._runtime_param = plain
    return params


def plain_value(annotation: Any, info: Any, value: Any, ctx: Any = None, param: Any = None) -> Any:
    """`value` read as `annotation`, or `_NOT_READ` when typer's coercion must decide."""
    if info.parser is not None:
        return _NOT_READ
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        if not isinstance(value, (list, tuple)):
            return _NOT_READ
        out = [plain_value(item, info, v, ctx, param) for v in value]
        return _NOT_READ if any(v is _NOT_READ for v in out) else out
    if annotation is str:
        return value if type(value) is str else _NOT_READ
    if annotation is bool:
        return value if type(value) is bool else _NOT_READ
    if annotation is int:
        if type(value) is str and _INT.fullmatch(value):
            value = int(value)
        return value if type(value) is int and _in_range(value, info) else _NOT_READ
    if annotation is float:
        if type(value) is str and _FLOAT.fullmatch(value):
            value = float(value)
        return value if type(value) is float and _in_range(value, info) else _NOT_READ
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        try:
            return coerce_cli_choice(value, choices=tuple(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
        except ValueError:
            return _NOT_READ
    if isinstance(annotation, type) and issubclass(annotation, Path) and info.path_type is None:
        if type(value) is str:
            value = annotation(value)
        if not isinstance(value, annotation):
            return _NOT_READ
        return coerce_cli_path(value, info, path_type=annotation, param=param, ctx=ctx)
    return _NOT_READ


def _in_range(value: int | float, info: Any) -> bool:
    if info.clamp:
        return info.min is None and info.max is None
    return (info.min is None or value >= info.min) and (info.max is None or value <= info.max)


def _plain_param_class() -> type | None:
    """The runtime parameter reading plain values, or None where typer's private layer
    is not the one this module was written against (typer's own coercion then does it all)."""
    if RuntimeParam is None:
        return None
    try:
        return _define_plain_param()
    except Exception:  # noqa: BLE001 - another typer's RuntimeParam: leave typer alone
        return None


def _define_plain_param() -> type:
    @dataclass(frozen=True)
    class _PlainParam(RuntimeParam):
        """Reads the plain values; hands the rest to typer's own runtime parameter."""

        descriptor: TypeDescriptor

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                out = plain_value(self.annotation, self.parameter_info, value, ctx, param)
            except Exception:  # noqa: BLE001 - typer's own coercion raises its own message
                out = _NOT_READ
            if out is not _NOT_READ:
                return out
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    return _PlainParam


_PlainParam = _plain_param_class()
if _PlainParam is None:
    RuntimeParam = None
