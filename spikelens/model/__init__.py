"""The data every stage hands on: a `Finding` with its causes, and the `Report` of runs
that holds them. Detectors, explainers, the pipeline and the renderers all import it; it
imports none of them."""
from .finding import Cause, Finding
from .report import Report, RunReport

__all__ = ["Cause", "Finding", "Report", "RunReport"]
