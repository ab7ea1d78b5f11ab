"""Two curves that stand still without a frozen model (#25). A loss that fell to the float's
floor (1.8 -> 7.9e-31, printed the same to the end) has fitted its data to zero; a best-so-far
column (`min_loss` beside `val_loss`, an epoch's dict printed as `key:value` pairs) holds while no
new best comes. Neither is 'nothing is being updated'; a loss that stops at 0.41 and stays is."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _plateaus(path) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind == "plateau" and f.severity != "info"]


def _csv(tmp_path, loss: np.ndarray):
    path = tmp_path / "loss_log.csv"
    path.write_text("epoch,loss\n" + "\n".join(f"{i},{v:.6g}" for i, v in enumerate(loss)) + "\n")
    return path


def test_a_loss_at_the_float_floor_is_no_frozen_model(tmp_path):
    loss = 1.85 * np.exp(-0.1 * np.arange(1000))
    loss[600:700] = 7.88862e-31 + np.arange(100, 0, -1) * 1e-36  # creeping down to the last bits
    loss[700:] = 7.88862e-31
    assert _plateaus(_csv(tmp_path, loss)) == []


def test_a_loss_frozen_at_a_level_is_still_frozen(tmp_path):
    rng = np.random.default_rng(0)
    loss = (0.4 + 1.45 * np.exp(-0.01 * np.arange(1000))) * np.exp(0.02 * rng.standard_normal(1000))
    loss[700:] = 0.41327
    (f,) = _plateaus(_csv(tmp_path, loss))
    assert f.evidence["reading"] == "frozen" and "nothing is being updated" in f.message


def _epochs(tmp_path, val: np.ndarray, best_col: str):
    lines, best = [], None
    for e, v in enumerate(val):
        lines.append(f"Epoch {e}")
        lines.append(f"{best_col}:{best}, val_loss:{v!r}")
        best = v if best is None else min(best, v)
    path = tmp_path / "finetune.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_best_so_far_column_holding_is_no_frozen_model(tmp_path):
    rng = np.random.default_rng(1)
    val = np.concatenate([0.7 + 0.4 * np.exp(-0.2 * np.arange(25)), 0.705 + 0.05 * rng.random(75)])
    val[30] = 0.6963312345
    found = _plateaus(_epochs(tmp_path, val, "min_loss"))
    assert not [f for f in found if f.metric == "min_loss"]
