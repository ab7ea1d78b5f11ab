"""Detector base class: a permanent code, a kind, keyword-only parameters, a fixed docstring.

A detector is checked when its class is defined (sqlfluff's RuleMetaclass habit): a
bad code, an unknown severity or a docstring without the four sections fails at
import, not in a user's report.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import polars as pl

from ..model.finding import Finding

DOC_SECTIONS = ("Detects:", "Why it matters:", "Likely causes:", "Evidence:")
CODE_RE = re.compile(r"^SL\d{3}$")
_CODES: dict[str, str] = {}


@dataclass
class Series:
    """One metric of one run, on the stitched timeline, as NumPy arrays."""

    metric: str
    role: str
    step: np.ndarray
    value: np.ndarray
    wall_time: np.ndarray | None = None
    scale: str = ""
    """What the values are of the metric as logged: "" (the values), "log" (a perplexity
    judged as the loss) or "root" (a squared norm judged as the norm)."""

    @property
    def label(self) -> str:
        """The metric as a message names it: the numbers beside it are on this scale."""
        return f"{self.metric} (as its {self.scale})" if self.scale else self.metric

    def __len__(self) -> int:
        return int(self.step.size)

    def finite(self) -> tuple[np.ndarray, np.ndarray]:
        """Steps and values of the finite points (NaN/inf are the non-finite detector's)."""
        ok = np.isfinite(self.value)
        if ok.all():
            return self.step, self.value
        return self.step[ok], self.value[ok]


@dataclass
class RunContext:
    """What a detector may look at besides its own series: the other metrics of the run."""

    run: str
    roles: dict[str, str]
    series: dict[str, Series]
    segment_starts: list[int] = dataclasses.field(default_factory=list)
    """Stitched steps where a resumed launch took over (for the `resume` cause)."""
    frame: pl.DataFrame | None = None

    def by_role(self, role: str) -> list[Series]:
        return [s for m, s in self.series.items() if self.roles.get(m) == role]

    def main(self, role: str) -> Series | None:
        """The run's main series of a role: the one with most points (the per-step
        `train/loss`, not an epoch aggregate), None when the run logs none. Among series
        logged as often (a total and its components), the total: named so, else the
        plain name of the role, else the largest (a sum of positive parts is the largest)."""
        cands = [s for s in self.by_role(role) if len(s)]
        if not cands:
            return None
        most = max(len(s) for s in cands)
        tied = [s for s in cands if len(s) >= 0.98 * most]
        if len(tied) == 1:
            return tied[0]
        return max(tied, key=lambda s: (main_name_score(s.metric, role), _typical_size(s) if role == "loss" else 0.0,
                                        len(s)))


_PLAIN = {"loss": ("loss", "train_loss", "loss_train", "train"), "lr": ("lr", "learning_rate"),
          "grad_norm": ("grad_norm", "gradient_norm", "total_norm"), "eval_loss": ("eval_loss", "val_loss", "loss")}


def main_name_score(metric: str, role: str) -> int:
    """How much a tag's name says it is the main series of its role: `total_loss` (2),
    `train/loss` (1), `loss_cls` or `ploss_3` (0, a component or one of a numbered set)."""
    leaf = re.split(r"[/.]", metric.lower())[-1]
    if role == "loss" and ("total" in leaf or re.match(r"tot(?:$|[_\- ])", leaf)):  # `Tot Loss`: abbreviated
        return 2
    if leaf in _PLAIN.get(role, ()):
        return 1
    return 0


def _typical_size(s: Series) -> float:
    v = s.value[np.isfinite(s.value)]
    return float(np.median(np.abs(v))) if v.size else 0.0


class Detector:
    """Base class. Subclasses are dataclasses with keyword-only parameters."""

    code: ClassVar[str]
    kind: ClassVar[str]
    roles: ClassVar[tuple[str, ...]] = ("loss",)
    """Metric roles it runs on; an empty tuple means it runs once per run (`detect_run`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        code = cls.__dict__.get("code")
        if not isinstance(code, str) or not CODE_RE.match(code):
            raise TypeError(f"{cls.__name__}: code must look like SL123, got {code!r}")
        if code in _CODES and _CODES[code] != cls.__qualname__:
            raise TypeError(f"{cls.__name__}: code {code} already used by {_CODES[code]}")
        _CODES[code] = cls.__qualname__
        if not isinstance(cls.__dict__.get("kind"), str):
            raise TypeError(f"{cls.__name__}: needs a kind")
        doc = cls.__doc__ or ""
        missing = [s for s in DOC_SECTIONS if s not in doc]
        if missing:
            raise TypeError(f"{cls.__name__}: docstring lacks sections {missing}")

    # -- the two entry points; a detector overrides one
    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        return []

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        return []

    # -- parameters
    @classmethod
    def params(cls) -> dict[str, Any]:
        return {f.name: f.default for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}

    def with_params(self, **overrides: Any) -> "Detector":
        return dataclasses.replace(self, **overrides)

    @classmethod
    def describe(cls) -> str:
        return (cls.__doc__ or "").strip()
