"""A loss that jumped and stayed at its peak diverged there (#25): a QLoRA smoke run whose loss went
1.6 -> 11.8 in one step and sat at ln(32000) to the end, a language model that collapsed from 3.1 back
to its first level of 8.5. The spike stays the alarm; a divergence note beside it names what it was.
One that sank back far below its peak, or came back, has no such note.
Written as HF `trainer_state.json` (fixtures/writers/hf.py) and as a step/loss CSV."""
from __future__ import annotations

import numpy as np
import pytest

from fixtures.writers import hf
from loss_findings import findings_of
from spikelens import api, diagnostics


def _all(tmp_path, loss: np.ndarray) -> list:
    return findings_of(tmp_path, loss, kind="spike") + findings_of(tmp_path, loss, kind="divergence")


def _collapse(seed: int, settle: float) -> np.ndarray:
    """An LM loss falling 11.5 -> ~2 over 85 lines, then jumping to 8.5 at line 90 and decaying to
    `settle` (its level after the jump) for 60 lines."""
    rng = np.random.default_rng(seed)
    fall = 2.0 + 9.5 * np.exp(-np.arange(90) / 12.0)
    loss = np.concatenate([fall, settle + (8.5 - settle) * np.exp(-np.arange(60) / 3.0)])
    return loss * np.exp(0.01 * rng.standard_normal(loss.size))


def test_a_trainer_state_loss_that_jumped_to_chance_and_sat_there_diverged(tmp_path):
    values = [1.637, 11.807, 11.605, 10.383] + [10.3735] * 6
    rows = [{"epoch": round(i / 10, 2), "grad_norm": 1.0 + i, "learning_rate": 5.0, "loss": v, "step": i + 1}
            for i, v in enumerate(values)]
    hf.save_to_json(tmp_path / "output" / "trainer_state.json", hf.state(rows, global_step=10, max_steps=10))
    with diagnostics.collecting():
        report = api.analyze(tmp_path / "output" / "trainer_state.json")
    fs = [f for r in report.runs for f in r.findings if f.metric == "loss"]
    div = [f for f in fs if f.kind == "divergence"]
    assert div and div[0].severity == "info" and div[0].start_step == 2, [(f.kind, f.message) for f in fs]
    (spike,) = [f for f in fs if f.kind == "spike"]
    assert spike.severity == "error" and spike.recovery == "none" and spike.evidence["stayed"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_loss_that_collapsed_to_its_first_level_and_stayed_diverged(tmp_path, seed):
    found = _all(tmp_path, _collapse(seed, settle=8.45))
    div = [f for f in found if f.kind == "divergence"]
    assert div and abs(div[0].start_step - 90) <= 2, [(f.kind, f.severity, f.message) for f in found]
    assert div[0].evidence.get("jump_that_stayed") and div[0].evidence["note_because"] == "settled_level"
    assert [f for f in found if f.kind == "spike" and f.severity != "info" and f.peak_step == div[0].peak_step]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_jump_that_sank_back_far_below_its_peak_stays_a_spike(tmp_path, seed):
    found = _all(tmp_path, _collapse(seed, settle=4.5))  # 8.5 peak, settles at ~4.5 (2.2x, 53% of the peak)
    assert not [f for f in found if f.kind == "divergence"]
    assert [f for f in found if f.kind == "spike" and abs((f.peak_step or 0) - 90) <= 2]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_spike_that_came_back_stays_a_spike(tmp_path, seed):
    loss = _collapse(seed, settle=2.0)
    found = _all(tmp_path, loss)
    assert not [f for f in found if f.kind == "divergence"]
