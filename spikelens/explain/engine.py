"""Attach causes to findings from the other metrics of the same run."""
from __future__ import annotations

from ..detect.base import RunContext
from ..detect.finding import Finding


def explain(findings: list[Finding], ctx: RunContext) -> list[Finding]:
    return findings
