"""A bad batch inside a run that never learned stays listed (#25): a loss flat at ln(1000) within 2%
that reads 66,000 for one step had a bad batch, whatever else the run did; it is a note (the
never-learned plateau leads the verdict). A jump of the flat loss's own noise stays folded into it.
Written as Lightning's CSVLogger writes metrics.csv, one row an epoch."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _flat(path, noise: float, jump: float, n: int = 60) -> None:
    rng = np.random.default_rng(11)
    loss = np.log(1000) * np.exp(noise * rng.standard_normal(n))
    loss[20] *= jump
    path.write_text("epoch,step,train_loss_epoch\n" + "".join(f"{i},{i},{v:.6g}\n" for i, v in enumerate(loss)))


def _events(path) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind in ("spike", "plateau")]


def test_a_bad_batch_orders_beyond_a_never_learned_loss_is_listed_as_a_note(tmp_path, no_workers):
    path = tmp_path / "metrics.csv"
    _flat(path, 0.01, 9000.0)
    found = _events(path)
    (plateau,) = [f for f in found if f.kind == "plateau"]
    (spike,) = [f for f in found if f.kind == "spike"]
    assert plateau.severity == "warning" and plateau.evidence.get("never_learned")
    assert spike.peak_step == 20 and spike.severity == "info" and spike.evidence["inside_never_learned"]


def test_a_bad_batch_within_a_noisy_flat_loss_reach_is_folded_into_the_plateau(tmp_path, no_workers):
    path = tmp_path / "metrics.csv"
    _flat(path, 0.2, 6.0)  # a 6x step on a loss whose epochs swing 20%: the plateau's noise
    (plateau,) = _events(path)
    assert plateau.kind == "plateau" and plateau.evidence["folded"] == ["spike at step 20"]
