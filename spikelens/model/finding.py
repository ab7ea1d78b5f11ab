"""The Finding a detector returns: the numbers first, the sentence formatted from them."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("info", "warning", "error")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass
class Cause:
    """One explanation of a finding, with the sentence a person can check in ten seconds."""

    cause: str
    confidence: float
    evidence: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "confidence": round(float(self.confidence), 3),
                "evidence": self.evidence, "numbers": _clean(self.numbers)}


@dataclass
class Finding:
    """Something that happened in a run (contract kinds in findings-contract.md)."""

    kind: str
    code: str
    run: str
    metric: str | None
    severity: str
    message: str
    start_step: int | None = None
    peak_step: int | None = None
    end_step: int | None = None
    recovery: str | None = None
    magnitude: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    causes: list[Cause] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Kind-specific contract fields, e.g. resume_step and rolled_back_from."""

    def __post_init__(self) -> None:
        """A message may quote log text (a crash's last line): fit to print in every output."""
        from ..sanitize import printable

        self.message = printable(self.message)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "code": self.code,
            "metric": self.metric,
            "start_step": _int(self.start_step),
            "peak_step": _int(self.peak_step),
            "end_step": _int(self.end_step),
            "recovery": self.recovery,
            "severity": self.severity,
            "magnitude": _num(self.magnitude),
            "causes": [c.to_json() for c in self.causes],
            "message": self.message,
            "evidence": _clean(self.evidence),
        }
        out.update(_clean(self.extra))
        return out

    @property
    def anchor_step(self) -> int | None:
        """The step a person would look at first, on the run's stitched axis (a resume's
        `resume_step` before its `start_step`, which a step reset gives as logged)."""
        for s in (self.peak_step, self.extra.get("resume_step"), self.start_step, self.end_step):
            if s is not None:
                return int(s)
        return None

    def span(self) -> tuple[int, float] | None:
        """First and last step the event covers; an open end (a spike that never came
        back, a NaN that stayed, a divergence, data still repeating) runs to the end."""
        starts = [s for s in (self.start_step, self.peak_step) if s is not None]
        if not starts:
            return None
        return min(starts), (self.end_step if self.end_step is not None else math.inf)


EVENT_KINDS = ("spike", "nan", "divergence", "oscillation", "repeated_data")
"""Kinds that cover a stretch of one loss: a slower view of the same stretch (an
excursion, a level shift asked about by another run) is that event, not a new one."""


def _int(x):
    return None if x is None else int(x)


def json_float(x: float, ndigits: int | None = None) -> float | str:
    """A float as the JSON reports write it: NaN and ±inf as the strings "NaN", "Infinity" and
    "-Infinity" (strict JSON has no spelling for them), others rounded to `ndigits` when given."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x if ndigits is None else round(x, ndigits)


def _num(x):
    return None if x is None else json_float(float(x), 6)


def _clean(obj):
    """Make numbers JSON-safe (NumPy scalars, NaN and inf as strings)."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if hasattr(obj, "item"):
        obj = obj.item()
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return _num(obj)
    return str(obj)


def finding_dict(f: Finding) -> dict[str, Any]:
    return asdict(f)
