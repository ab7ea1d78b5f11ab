"""A bad batch inside an oscillation is its own event when its jump dwarfs the oscillation's swings
(#25): a loss swinging 25% around its trend does not jump 30x for one step as one more swing. A jump
of the swings' own size stays folded into the oscillation. Written as Lightning's CSVLogger writes
metrics.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _swinging(path, jump: float) -> None:
    rng = np.random.default_rng(4)
    s = np.arange(3000)
    loss = 2.5 * np.exp(-s / 900) + 0.4
    inside = (s >= 1200) & (s <= 2000)
    loss = loss * np.exp(np.where(inside, 0.25 * np.sin(s / 7.0) + 0.1 * rng.standard_normal(s.size), 0.0)
                         + 0.02 * rng.standard_normal(s.size))
    loss[1600] *= jump
    path.write_text("epoch,step,train_loss\n" + "".join(f"{i // 300},{i},{v:.6g}\n" for i, v in enumerate(loss)))


def _events(path) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind in ("spike", "oscillation")]


def test_a_bad_batch_far_beyond_the_swings_is_its_own_spike(tmp_path, no_workers):
    path = tmp_path / "metrics.csv"
    _swinging(path, 30.0)
    found = _events(path)
    assert [f.kind for f in found if f.kind == "oscillation"] == ["oscillation"]
    (spike,) = [f for f in found if f.kind == "spike"]
    assert spike.peak_step == 1600 and spike.evidence.get("bad_batch") and spike.magnitude > 10


def test_a_jump_of_the_swings_size_stays_inside_the_oscillation(tmp_path, no_workers):
    path = tmp_path / "metrics.csv"
    _swinging(path, 1.6)
    assert [f.kind for f in _events(path)] == ["oscillation"]
