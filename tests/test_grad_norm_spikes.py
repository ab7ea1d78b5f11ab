"""A grad norm that jumps an order of magnitude for one step in a run whose other steps are smooth
is a gradient spike (#25: engineers list a 15x grad-norm step even when the loss shrugged it off):
one note listing its steps, with what the loss did; the outlier note does not list them again. A
grad norm whose own noise throws 10x steps, or one that steps up and stays, has none. Written as
Lightning's CSVLogger writes metrics.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics

N = 400


def _findings(tmp_path, name: str, grad: np.ndarray) -> list:
    rng = np.random.default_rng(7)
    loss = (1.0 + 3.0 * np.exp(-np.arange(N) / 60)) * (1 + 0.01 * rng.standard_normal(N))
    path = tmp_path / name / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    rows = ["epoch,step,train_loss,grad_norm"] + [f"{i // 100},{i},{loss[i]:.6g},{grad[i]:.6g}" for i in range(N)]
    path.write_text("\n".join(rows) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path.parent)
    return [f for r in report.runs for f in r.findings if f.metric == "grad_norm"]


def _smooth(seed: int) -> np.ndarray:
    return 0.3 * (1 + 0.05 * np.random.default_rng(seed).standard_normal(N))


def test_one_step_jumps_of_an_order_of_magnitude_are_a_gradient_spike_note(tmp_path, no_workers):
    grad = _smooth(1)
    grad[[150, 290]] = [4.2, 3.9]
    found = _findings(tmp_path, "spiky", grad)
    (spike,) = [f for f in found if f.kind == "spike"]
    assert spike.severity == "info" and spike.evidence["grad_spike"] and spike.evidence["steps"] == [150, 290]
    assert "did not react" in spike.message
    assert not any(f.kind == "grad_norm_outlier" for f in found)  # listed once, in the spike note


def test_a_grad_norm_whose_noise_throws_10x_steps_has_no_spike(tmp_path, no_workers):
    grad = 0.3 * np.exp(1.2 * np.random.default_rng(2).standard_normal(N))
    assert not [f for f in _findings(tmp_path, "noisy", grad) if f.kind == "spike"]


def test_a_grad_norm_that_steps_up_and_stays_has_no_spike(tmp_path, no_workers):
    grad = _smooth(3)
    grad[200:] *= 12
    assert not [f for f in _findings(tmp_path, "stepped", grad) if f.kind == "spike"]
