"""The report every command renders: runs, their segments, roles and findings."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .finding import SEVERITY_RANK, Finding

SCHEMA_ID = "spikelens.report/1"
LOSS_LIKE = ("loss", "eval_loss", "perplexity")
"""Main-metric roles a table may show bare under a loss heading (a reward or an accuracy gets its role named)."""


@dataclass
class RunReport:
    run: str
    sources: list[str]
    segments: list[dict[str, Any]]
    metrics: dict[str, str]
    findings: list[Finding] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    points: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    """Per-run numbers for the summary table (first/last loss, steps, noise rate...)."""
    frame: Any = field(default=None, repr=False, compare=False)
    """The stitched long frame (for plots and `-o`); never serialised."""
    shift_profile: Any = field(default=None, repr=False, compare=False)
    """The main loss's level-shift statistic in compact form (detect.levels.ShiftProfile),
    kept when the frame is dropped: runs analysed together compare level shifts with it."""

    def main_role(self) -> str:
        """The role of the metric the run is judged by (`reward`: an RL run judged by its return);
        `loss` where no main metric is known."""
        return self.metrics.get(self.stats.get("main_metric") or "", "loss")

    def worst(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)


@dataclass
class Report:
    command: str
    runs: list[RunReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def findings(self) -> list[Finding]:
        return [f for r in self.runs for f in r.findings]
