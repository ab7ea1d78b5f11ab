"""A loss that ran orders of magnitude above its level for many logged points before it turned NaN
diverged first (#25): that stretch is its own event, a divergence note beside the NaN (which keeps
the alarm); a blow-up of a few points straight into the NaN is the NaN's alone (one event). Written
as Lightning's CSVLogger writes metrics.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _metrics_csv(path, loss) -> None:
    rows = ["epoch,step,train_loss"] + [f"{i // 10},{i},{'nan' if not np.isfinite(v) else f'{v:.6g}'}"
                                        for i, v in enumerate(loss)]
    path.write_text("\n".join(rows) + "\n")


def _kinds(path) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind in ("nan", "divergence")]


def _run(tmp_path, name, before, stretch, nans=30):
    rng = np.random.default_rng(3)
    head = 27.0 * np.exp(-np.arange(before) / 200) * (1 + 0.02 * rng.standard_normal(before))
    loss = np.concatenate([head, stretch, np.full(nans, np.nan)])
    path = tmp_path / name / "metrics.csv"
    path.parent.mkdir()
    _metrics_csv(path, loss)
    return path, before


def test_a_loss_that_trained_on_orders_of_magnitude_up_before_its_nan_diverged_first(tmp_path, no_workers):
    wild = 10 ** np.array([7.4, 9.5, 16.6, 22.8, 4.0, 10.9, 7.6, 27.2, 9.8, 27.2, 13.3, 26.3, 15.1])
    path, at = _run(tmp_path, "wild", 40, wild)
    found = _kinds(path)
    (div,) = [f for f in found if f.kind == "divergence"]
    (nan,) = [f for f in found if f.kind == "nan"]
    assert div.start_step == at and div.end_step == at + wild.size - 1 and div.severity == "info"
    assert div.evidence["before_nan"] and div.evidence["points"] == wild.size and div.evidence["ratio"] > 1e20
    assert nan.start_step == at + wild.size and nan.severity == "error"
    assert f"roll back to before it" in div.message


def test_a_short_blowup_into_nan_or_a_small_rise_is_the_nans_alone(tmp_path, no_workers):
    short, _ = _run(tmp_path, "short", 60, 3.0 * np.array([1.2, 1.9, 3.0, 4.8, 7.5]))  # 5 points, 7.5x
    brief, _ = _run(tmp_path, "brief", 60, 10 ** np.array([4.0, 6.0, 9.0, 12.0, 15.0]))  # 5 points, 1e15
    mild, _ = _run(tmp_path, "mild", 60, 40.0 * np.linspace(1, 3, 15))  # 15 points, under 10x
    for path in (short, brief, mild):
        assert [f.kind for f in _kinds(path)] == ["nan"], path


def test_a_loss_that_rose_from_its_first_step_into_nan_diverged_first(tmp_path, no_workers):
    """No descent at all: 5.5 climbing toward chance over eight steps, then NaN (an LR with no warm-up)."""
    path = tmp_path / "from_start" / "metrics.csv"
    path.parent.mkdir()
    _metrics_csv(path, np.concatenate([[5.47, 7.25, 8.04, 8.47, 8.18, 9.55, 9.52, 8.99], np.full(120, np.nan)]))
    found = _kinds(path)
    (div,) = [f for f in found if f.kind == "divergence"]
    (nan,) = [f for f in found if f.kind == "nan"]
    assert div.start_step == 0 and div.end_step <= 8 and div.severity == "info"
    assert div.evidence["before_nan"] and div.evidence["from_first_step"] and nan.severity == "error"


def test_a_loss_that_fell_then_rose_into_nan_is_the_nans_alone(tmp_path, no_workers):
    """The same climb after a descent is the NaN's onset: one event."""
    path = tmp_path / "after_descent" / "metrics.csv"
    path.parent.mkdir()
    head = np.geomspace(9.0, 5.4, 30)
    _metrics_csv(path, np.concatenate([head, [5.47, 7.25, 8.04, 8.47, 8.18, 9.55, 9.52, 8.99], np.full(120, np.nan)]))
    assert [f.kind for f in _kinds(path)] == ["nan"]
