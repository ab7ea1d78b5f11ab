"""benchmarks/calibrate.py's refit: the value that finds most events among those meeting the
target (at most 1 loud finding per 10 clean runs and 1 loud false alarm per 10 runs)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import calibrate  # noqa: E402


def _fig(clean, false, high, found, loud_false=0):
    return {"loud_per_10_clean": clean, "loud_false_per_10_runs": false, "high_found": high, "found": found,
            "loud_false": loud_false, "events": 85, "high": 58}


def test_refit_picks_the_most_high_confidence_events_among_values_meeting_the_target(capsys):
    out = {"spike.bad_batch_ratio=3": _fig(1.5, 0.5, 30, 40),   # finds most, too loud on clean runs
           "spike.bad_batch_ratio=5": _fig(0.8, 0.9, 28, 38),
           "spike.bad_batch_ratio=8": _fig(0.3, 0.2, 20, 30)}
    assert calibrate.refit(out, ["spike.bad_batch_ratio=3,5,8"]) == {"spike.bad_batch_ratio": "5"}
    assert "spike = { bad_batch_ratio = 5 }" in capsys.readouterr().out


def test_refit_falls_back_to_the_quietest_value_when_none_meets_the_target():
    figures = {"2": _fig(3.0, 2.0, 30, 40), "4": _fig(1.2, 1.5, 25, 35)}
    assert calibrate.best(figures) == "4"


def test_a_swept_value_equal_to_the_detectors_default_reuses_the_defaults_pass():
    from spikelens.detect.registry import DETECTORS

    osc = next(cls for cls in DETECTORS if cls.kind == "oscillation")
    default = osc().min_amp_ratio
    assert calibrate._is_default("oscillation.min_amp_ratio", str(default))
    assert calibrate._is_default(f"{osc.code}.min_amp_ratio", str(default))
    assert not calibrate._is_default("oscillation.min_amp_ratio", str(default + 1))
    assert not calibrate._is_default("nosuch.min_amp_ratio", "3")
