"""Level shifts shared by runs analysed together: one data boundary, and a run whose own
shift was too small for the scan is asked about that one step.

The unit tests use the shift profile directly; the end-to-end test writes plain CSV
logs and runs the real CLI with `--format json` (the path that drops each run's
frame, so the profile must be all the cross-run step needs).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import detector_cases as cases
from conftest import main_in_process
from spikelens.detect.base import Series
from spikelens.detect.levels import LevelShiftDetector

AT = 3000


def shifted(seed: int, pct: float, noise: float = 0.005, at: int = AT) -> tuple[np.ndarray, np.ndarray]:
    s, v = cases.clean(seed, n=6000, noise=noise)["train/loss"]
    return s, v * np.where(s >= at, 1 + pct / 100, 1.0)


@pytest.mark.parametrize("seed", range(5))
def test_a_shift_too_small_for_the_scan_is_seen_at_a_named_step(seed):
    s, v = shifted(seed, 1.0)
    det, series = LevelShiftDetector(), Series("train/loss", "loss", s, v)
    assert det.detect(series, cases.context({"train/loss": (s, v)})) == []
    prof = det.shift_profile(series)
    hit = prof.shift_at(AT, up=True)
    assert hit is not None and abs(hit["step"] - AT) <= prof.window // 2
    assert 0.5 < hit["shift_percent"] < 1.5
    assert prof.shift_at(AT, up=False) is None
    assert prof.shift_at(4500, up=True) is None and prof.shift_at(1500, up=True) is None


def test_the_runs_own_noise_is_the_bar():
    """Slowly wandering (correlated) noise makes window differences far larger than the
    point-to-point noise predicts; only the run's own quantile keeps them out."""
    rng = np.random.default_rng(0)
    confirmed = asked = 0
    for seed in range(4):
        s, v = cases.clean(seed, n=6000, noise=0.005)["train/loss"]
        walk = np.convolve(rng.standard_normal(s.size), np.ones(200) / 200, mode="same") * 0.2
        prof = LevelShiftDetector().shift_profile(Series("train/loss", "loss", s, v * np.exp(walk)))
        for at in rng.integers(1000, 5800, 50):
            asked += 1
            confirmed += prof.shift_at(int(at), up=bool(rng.integers(2))) is not None
    assert confirmed / asked < 0.1


def _write_csv(path: Path, s: np.ndarray, v: np.ndarray, metric: str = "train_loss") -> None:
    path.parent.mkdir(parents=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", metric])
        w.writerows([int(a), repr(float(b))] for a, b in zip(s, v))


def test_runs_sharing_a_data_boundary(tmp_path, capsys, no_workers):
    """The real CLI in this process, its five runs analysed here (conftest.no_workers: CI time)."""
    _write_csv(tmp_path / "big" / "metrics.csv", *shifted(1, 3.0))
    _write_csv(tmp_path / "wide" / "metrics.csv", *shifted(2, 3.0, at=AT + 10))
    _write_csv(tmp_path / "small" / "metrics.csv", *shifted(3, 1.0))
    _write_csv(tmp_path / "control" / "metrics.csv", *shifted(4, 0.0))
    _write_csv(tmp_path / "other_task" / "metrics.csv", *shifted(5, 1.0), metric="eval_loss_task")
    code, out, err = main_in_process(capsys, "analyze", tmp_path, "--format", "json")
    assert code == 0, err
    runs = {Path(r["sources"][0]).parent.name: r for r in json.loads(out)["runs"]}
    shifts = {name: [f for f in r["findings"] if f["kind"] == "level_shift"] for name, r in runs.items()}
    for name in ("big", "wide", "small"):
        (f,) = shifts[name]
        assert abs(f["start_step"] - AT) <= 30, f
        cause = f["causes"][0]
        assert cause["cause"] == "data"
        assert set(cause["numbers"]["runs"]) == {"big", "wide", "small"} - {name}
    assert "where 2 other run(s)" in shifts["small"][0]["message"]
    assert shifts["control"] == [] and shifts["other_task"] == []
    md = main_in_process(capsys, "analyze", tmp_path, "--format", "markdown")[1]
    assert "where 2 other run(s)" in md and "likely `data`: 2 other run(s)" in md


def test_one_run_alone_is_not_confirmed_by_anything(tmp_path, capsys):
    _write_csv(tmp_path / "big" / "metrics.csv", *shifted(1, 3.0))
    _write_csv(tmp_path / "small" / "metrics.csv", *shifted(3, 1.0))
    code, out, err = main_in_process(capsys, "analyze", tmp_path, "--format", "json")
    assert code == 0, err
    runs = {Path(r["sources"][0]).parent.name: r for r in json.loads(out)["runs"]}
    big = [f for f in runs["big"]["findings"] if f["kind"] == "level_shift"]
    assert len(big) == 1 and not big[0]["causes"]
    assert not [f for f in runs["small"]["findings"] if f["kind"] == "level_shift"]


def test_a_step_inside_another_event_is_not_asked():
    """A run that spiked across the shared step shows a 'shift' there through its wide
    window; that is the spike's, not a level shift."""
    from spikelens.model.finding import Finding
    from spikelens.explain.crossrun import link_runs
    from spikelens.model.report import Report, RunReport

    def shift(run):
        return Finding(kind="level_shift", code="SL204", run=run, metric="train/loss", severity="info", message="m",
                       start_step=AT, peak_step=AT, magnitude=1.03, evidence={"window_steps": 50.0})

    s, v = shifted(3, 1.0)
    prof = LevelShiftDetector().shift_profile(Series("train/loss", "loss", s, v))
    assert prof.shift_at(AT, up=True) is not None
    spike = Finding(kind="spike", code="SL101", run="c", metric="train/loss", severity="warning", message="m",
                    start_step=AT - 20, peak_step=AT - 10, end_step=AT + 40)
    runs = [RunReport(run=n, sources=[], segments=[], metrics={}, findings=[shift(n)]) for n in ("a", "b")]
    runs += [RunReport(run="c", sources=[], segments=[], metrics={}, findings=[spike], shift_profile=prof),
             RunReport(run="d", sources=[], segments=[], metrics={}, findings=[], shift_profile=prof)]
    link_runs(Report(command="analyze", runs=runs))
    assert [f.kind for f in runs[2].findings] == ["spike"]
    assert [f.kind for f in runs[3].findings] == ["level_shift"]
    assert runs[0].findings[0].causes[0].numbers["runs"] == ["b", "d"]


def test_a_crashing_shift_profile_is_a_warning(monkeypatch):
    from spikelens.detect import engine
    from spikelens.diagnostics import collecting

    def boom(self, series):
        raise ValueError("no")

    monkeypatch.setattr(LevelShiftDetector, "shift_profile", boom)
    s, v = shifted(1, 3.0)
    with collecting() as diag:
        assert engine.shift_profile_of(cases.context({"train/loss": (s, v)}), engine.build_detectors()) is None
    assert diag.lines == ["detector SL204 (level_shift) crashed on run 'case' (shift profile): ValueError: no"]
