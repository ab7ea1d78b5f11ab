"""The explicit list of detectors that run by default (a test checks none is missing)."""
from __future__ import annotations

from .base import Detector

DETECTORS: tuple[type[Detector], ...] = ()
