"""Runs analysed together: spikes at the same step in several runs are one data event.

Runs that share a data order see the same batch at the same step; a loss spike at
that step in all of them is the batch, not any one run's optimizer.
"""
from __future__ import annotations

from ..detect.finding import Cause
from ..report.model import Report


def link_runs(report: Report, tolerance_steps: int = 2) -> None:
    """Add a `data` cause to spikes that occur at the same step in two or more runs."""
    spikes = [(r.run, f) for r in report.runs for f in r.findings
              if f.kind == "spike" and f.peak_step is not None]
    if len({run for run, _ in spikes}) < 2:
        return
    for run, f in spikes:
        others = sorted({o_run for o_run, o in spikes
                         if o_run != run and abs(o.peak_step - f.peak_step) <= tolerance_steps})
        if not others:
            continue
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        cause = Cause("data", 0.92,
                      f"{len(others)} other run(s) analysed with it spiked at the same step {f.peak_step} "
                      f"({shown}): runs sharing a data order saw the same batch",
                      {"runs": others, "step": f.peak_step})
        f.causes = [cause] + [c for c in f.causes if c.cause != "data"]
