"""Walking nested batches: move every tensor to a device, find the first non-finite one.

Batches are whatever the user's data loader yields: tensors inside dicts, lists,
tuples, named tuples, or objects with a `.to(device)` (HF BatchEncoding).
"""
from __future__ import annotations

from typing import Any, Iterator


def move_to(obj: Any, device: Any, torch) -> Any:
    """The same nested structure with every tensor on `device`."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        items = {k: move_to(v, device, torch) for k, v in obj.items()}
        try:
            return type(obj)(items)
        except Exception:
            return items
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move_to(v, device, torch) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(move_to(v, device, torch) for v in obj)
    to = getattr(obj, "to", None)
    if callable(to) and not isinstance(obj, type):
        try:
            return to(device)
        except Exception:
            return obj
    return obj


def iter_tensors(obj: Any, torch, path: str = "batch") -> Iterator[tuple[str, Any]]:
    """(path, tensor) for every tensor inside a nested structure, paths like batch['x'][0]."""
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from iter_tensors(v, torch, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from iter_tensors(v, torch, f"{path}[{i}]")
    elif hasattr(obj, "items") and callable(obj.items):
        try:
            pairs = list(obj.items())
        except Exception:
            return
        for k, v in pairs:
            yield from iter_tensors(v, torch, f"{path}[{k!r}]")


def is_float(t, torch) -> bool:
    return t.is_floating_point() or t.is_complex()


def all_finite(t, torch) -> bool:
    """True when a tensor holds no NaN/±inf (integer tensors always do)."""
    if not is_float(t, torch) or t.numel() == 0:
        return True
    if t.is_sparse:
        t = t.coalesce().values()
    return bool(torch.isfinite(t.detach()).all())


def describe_nonfinite(t, torch) -> str:
    """`NaN (3 of 64 values)` / `Inf (1 of 8 values)` / `NaN and Inf (...)`."""
    t = t.detach()
    if t.is_sparse:
        t = t.coalesce().values()
    nan = int(torch.isnan(t).sum())
    inf = int(torch.isinf(t).sum())
    kind = " and ".join(k for k, n in (("NaN", nan), ("Inf", inf)) if n) or "non-finite values"
    return f"{kind} ({nan + inf} of {t.numel()} values)"


def first_nonfinite(obj: Any, torch, path: str = "batch") -> tuple[str, Any] | None:
    """The first (path, tensor) holding NaN/Inf inside a nested structure."""
    for where, t in iter_tensors(obj, torch, path):
        if not all_finite(t, torch):
            return where, t
    return None
