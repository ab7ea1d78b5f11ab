"""Detectors: one family per module, registered in `registry.DETECTORS`."""
from .base import Detector, RunContext, Series
from ..model.finding import Cause, Finding

__all__ = ["Detector", "RunContext", "Series", "Finding", "Cause"]
