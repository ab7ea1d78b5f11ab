"""Attach causes to findings from the other metrics of the same run."""
from __future__ import annotations

from .. import diagnostics
from ..detect.base import RunContext
from ..model.finding import Finding
from .causes import EXPLAINED_KINDS, KIND_RULES, RULES


def explain(findings: list[Finding], ctx: RunContext) -> list[Finding]:
    """Run every cause rule on every explainable finding; most confident cause first."""
    for f in findings:
        rules = RULES if f.kind in EXPLAINED_KINDS else KIND_RULES.get(f.kind, ())
        if not rules:
            continue
        causes = list(f.causes)
        for rule in rules:
            try:
                c = rule(f, ctx, findings)
            except Exception as exc:  # noqa: BLE001 - a broken rule must not kill the report
                diagnostics.warn(f"cause rule {rule.__name__} crashed on run {ctx.run!r}: {type(exc).__name__}: {exc}")
                continue
            if c is not None and all(c.cause != o.cause for o in causes):
                causes.append(c)
        causes.sort(key=lambda c: -c.confidence)
        f.causes = causes
    return findings
