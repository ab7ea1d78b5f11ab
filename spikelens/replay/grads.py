"""The gradient table of one step: per parameter and per layer, grad norm, param norm,
update ratio ‖Δw‖/‖w‖, and each layer's share of the total squared gradient norm.

Norms are computed on the device in float32 and fetched once; the grouping into
layers is NumPy (bincount over layer ids), no Python loop over values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

DOMINANT_SHARE = 0.5
"""The dominant layers are the fewest, largest ones that together hold this share."""


@dataclass
class GradTable:
    names: list[str]
    layers: list[str]
    shapes: list[list[int]]
    numels: np.ndarray
    has_grad: np.ndarray
    grad_norm: np.ndarray
    param_norm: np.ndarray
    update_norm: np.ndarray | None = None
    layer_names: list[str] = field(default_factory=list)
    _inv: np.ndarray | None = None

    @property
    def total_grad_norm(self) -> float | None:
        if not self.has_grad.any():
            return None
        return float(np.sqrt(np.sum(self.grad_norm[self.has_grad] ** 2)))

    def layer_rows(self) -> list[dict[str, Any]]:
        """One row per layer (module owning the parameters), largest gradient first."""
        inv, n = self._inv, len(self.layer_names)
        g2 = np.bincount(inv, weights=np.where(self.has_grad, self.grad_norm, 0.0) ** 2, minlength=n)
        p2 = np.bincount(inv, weights=self.param_norm ** 2, minlength=n)
        with_grad = np.bincount(inv, weights=self.has_grad.astype(float), minlength=n) > 0
        counts = np.bincount(inv, minlength=n)
        numel = np.bincount(inv, weights=self.numels.astype(float), minlength=n)
        gn, pn = np.sqrt(g2), np.sqrt(p2)
        total2 = float(np.sum(g2))
        share = g2 / total2 if np.isfinite(total2) and total2 > 0 else np.full(n, np.nan)
        ratio = None
        if self.update_norm is not None:
            u2 = np.bincount(inv, weights=np.where(self.has_grad, self.update_norm, 0.0) ** 2, minlength=n)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.sqrt(u2) / pn
        rows = []
        for i in _order(gn, with_grad):
            rows.append({
                "layer": self.layer_names[i], "params": int(counts[i]), "numel": int(numel[i]),
                "grad_norm": float(gn[i]) if with_grad[i] else None, "param_norm": float(pn[i]),
                "update_ratio": None if ratio is None or not with_grad[i] else float(ratio[i]),
                "share": float(share[i]) if with_grad[i] and np.isfinite(share[i]) else None,
            })
        return rows

    def param_rows(self) -> list[dict[str, Any]]:
        """One row per parameter tensor, largest gradient first."""
        ratio = None
        if self.update_norm is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = self.update_norm / self.param_norm
        return [{
            "name": self.names[i], "layer": self.layers[i], "shape": self.shapes[i],
            "grad_norm": float(self.grad_norm[i]) if self.has_grad[i] else None,
            "param_norm": float(self.param_norm[i]),
            "update_ratio": None if ratio is None or not self.has_grad[i] else float(ratio[i]),
        } for i in _order(self.grad_norm, self.has_grad)]

    def dominant(self, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The fewest largest layers holding at least half of the squared gradient norm."""
        out, cum = [], 0.0
        for r in rows if rows is not None else self.layer_rows():
            if r["share"] is None:
                return []
            out.append({"layer": r["layer"], "share": r["share"]})
            cum += r["share"]
            if cum >= DOMINANT_SHARE:
                break
        return out


def _order(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Descending, non-finite first (they are the news), rows without a gradient last."""
    key = np.where(present, np.where(np.isfinite(values), values, np.inf), -1.0)
    return np.argsort(-key, kind="stable")


def layer_of(name: str) -> str:
    return name.rpartition(".")[0] or "(root)"


def norms(tensors: list[Any], torch) -> np.ndarray:
    """float32 L2 norm of each tensor, stacked on the device and fetched once."""
    if not tensors:
        return np.zeros(0)
    vals = []
    for t in tensors:
        t = t.detach()
        if t.is_sparse:
            t = t.coalesce().values()
        vals.append(torch.linalg.vector_norm(t, dtype=torch.float32) if t.numel() else t.new_zeros((), dtype=torch.float32))
    return torch.stack([v.to(vals[0].device) for v in vals]).cpu().double().numpy()


def trainable(model) -> list[tuple[str, Any]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def measure(model, torch) -> GradTable:
    """Norms of every trainable parameter and of its gradient, right after backward."""
    named = trainable(model)
    names = [n for n, _ in named]
    params = [p for _, p in named]
    has_grad = np.array([p.grad is not None for p in params], dtype=bool)
    grads = [p.grad for p in params if p.grad is not None]
    gn = np.full(len(params), np.nan)
    if grads:
        gn[has_grad] = norms(grads, torch)
    layers = [layer_of(n) for n in names]
    layer_names, inv = np.unique(np.array(layers, dtype=object).astype(str), return_inverse=True) if layers \
        else (np.array([], dtype=str), np.zeros(0, dtype=int))
    return GradTable(names=names, layers=layers, shapes=[list(p.shape) for p in params],
                     numels=np.array([p.numel() for p in params], dtype=np.int64), has_grad=has_grad,
                     grad_norm=gn, param_norm=norms(params, torch), layer_names=[str(x) for x in layer_names],
                     _inv=inv.astype(np.int64))


def snapshot(model) -> list[Any]:
    """Copies of the trainable parameters that have a gradient (before the optimizer step)."""
    return [p.detach().clone() for _, p in trainable(model) if p.grad is not None]


def record_update(table: GradTable, model, before: list[Any], torch) -> None:
    """‖Δw‖ of each parameter with a gradient, after the optimizer step."""
    after = [p.detach() for _, p in trainable(model) if p.grad is not None]
    upd = np.full(len(table.names), np.nan)
    if after:
        upd[table.has_grad] = norms([a - b for a, b in zip(after, before)], torch)
    table.update_norm = upd
