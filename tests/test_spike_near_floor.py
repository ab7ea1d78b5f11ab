"""A spike judged on the run's own scale (#25): a loss that fell from 0.5 to about 0.001 and jumps 10x to
0.01 is a blip near its floor (a person reading the curve sees nothing), a note; a jump back to half
the starting level is a spike a person sees, still a warning. Fixtures written here as a script's
`step,loss` CSV."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api

LOUD = ("warning", "error")


def _run(tmp_path, peak: float):
    """400 steps of a loss falling from 0.5 to ~0.001 with 3% noise; a 5-step bump to `peak` at step 300."""
    rng = np.random.default_rng(4)
    loss = (0.5 * np.exp(-np.arange(400) / 40) + 0.001) * np.exp(0.03 * rng.standard_normal(400))
    loss[300:305] = peak * np.array([1.0, 0.8, 0.5, 0.25, 0.1])
    loss[305:] = np.maximum(loss[305:], 0.001)
    path = tmp_path / "run" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("step,loss\n" + "".join(f"{s},{v:.6g}\n" for s, v in enumerate(loss)))
    (run,) = api.analyze(str(path.parent), jobs=1).runs
    return [f for f in run.findings if f.kind == "spike" and f.start_step is not None and 290 <= f.peak_step <= 310]


def test_a_jump_near_the_floor_is_a_note(tmp_path):
    found = _run(tmp_path, 0.012)
    assert found and not [f for f in found if f.severity in LOUD]
    assert found[0].evidence["near_floor"]["share"] < 0.1 and "of the level the loss started at" in found[0].message


@pytest.mark.parametrize("peak", [0.25, 0.6])
def test_a_jump_a_person_sees_on_the_runs_scale_stays_loud(tmp_path, peak):
    found = _run(tmp_path, peak)
    assert [f for f in found if f.severity in LOUD] and not any("near_floor" in f.evidence for f in found)
