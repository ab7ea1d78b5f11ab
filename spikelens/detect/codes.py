"""Which permanent code each kind of finding carries, for `spikelens explain` and the docs.

A detector class declares its code and main kind; run-level findings (resumes, a run that ended
early) carry module codes; a few kinds are a detector's side output (one-point outliers and the
noise summary come from the spike detector)."""
from __future__ import annotations


def codes_by_kind() -> dict[str, list[str]]:
    from .ended import CODE as ENDED_CODE
    from .registry import DETECTORS
    from .resume import EMPTY_CODE, OVERLAP_CODE, RESET_CODE, STEP_GAP_CODE, WALL_GAP_CODE
    from .spikes import SpikeDetector

    out: dict[str, list[str]] = {}
    pairs = [(cls.kind, cls.code) for cls in DETECTORS] + [
        ("outliers", SpikeDetector.code), ("noise", SpikeDetector.code), ("resume_overlap", OVERLAP_CODE),
        ("step_reset", RESET_CODE), ("step_gap", STEP_GAP_CODE), ("wallclock_gap", WALL_GAP_CODE),
        ("empty_launch", EMPTY_CODE), ("ended_early", ENDED_CODE)]
    for kind, code in pairs:
        if code not in out.setdefault(kind, []):
            out[kind].append(code)
    return out
