"""The explicit list of detectors that run by default (a test checks none is missing)."""
from __future__ import annotations

from .base import Detector
from .companions import GradNormOutlierDetector, LossScaleCollapseDetector, LrDiscontinuityDetector
from .divergence import DivergenceDetector
from .excursions import ExcursionDetector
from .levels import LevelShiftDetector
from .memory import MemoryGrowthDetector
from .nonfinite import NonFiniteDetector
from .objective import ObjectiveDetector
from .oscillation import OscillationDetector
from .overfitting import OverfittingDetector
from .plateaus import PlateauDetector
from .ranks import RankDetector
from .resume import RepeatedDataDetector
from .runaway import RunawayDetector
from .settings import SettingsDetector
from .spikes import SpikeDetector
from .throughput import StallDetector, StepTimeRiseDetector, ThroughputDropDetector

DETECTORS: tuple[type[Detector], ...] = (
    SpikeDetector,
    NonFiniteDetector,
    DivergenceDetector,
    OscillationDetector,
    ExcursionDetector,
    LevelShiftDetector,
    PlateauDetector,
    ObjectiveDetector,
    RunawayDetector,
    OverfittingDetector,
    GradNormOutlierDetector,
    LossScaleCollapseDetector,
    LrDiscontinuityDetector,
    RepeatedDataDetector,
    SettingsDetector,
    ThroughputDropDetector,
    StepTimeRiseDetector,
    StallDetector,
    MemoryGrowthDetector,
    RankDetector,
)
