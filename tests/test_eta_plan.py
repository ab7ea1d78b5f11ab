"""The time left a trainer logs is a plan (`stitching._eta_plan`, SL306 `ended_early`): detectron2's
`metrics.json` says `eta_seconds` at every record; where nothing else states how long the run was meant to
go, the steps still to go are its last value over the rate it falls by a step (its units cancel). A run
whose last record still says an hour to go at 18 s a step stopped a third of the way (info). Silent: the
same run that went on to its end (the time left falls to 0), an ETA that does not count down. Fixtures:
detectron2's `metrics.json` as its `JSONWriter` writes it (one `json.dumps` a line, `sort_keys=True`)."""
from __future__ import annotations

import json

import numpy as np

from conftest import analyzed_run


def _metrics_json(path, last_iter: int, max_iter: int = 300, every: int = 20, eta_counts_down: bool = True):
    rng = np.random.default_rng(0)
    lines = []
    for it in range(every - 1, last_iter + 1, every):
        spent = 18.0 + 0.3 * rng.standard_normal()
        eta = (max_iter - it - 1) * 18.2 if eta_counts_down else 3600.0 + 50 * rng.standard_normal()
        rec = {"data_time": 0.009, "eta_seconds": eta, "iteration": it, "lr": 2.5e-4, "time": spent,
               "total_loss": 2.6 * np.exp(-it / 120) + 0.4 + 0.02 * rng.standard_normal(),
               "loss_cls": 0.6 * np.exp(-it / 120) + 0.1, "rank_data_time": 0.009}
        lines.append(json.dumps(rec, sort_keys=True))
    path.mkdir(parents=True, exist_ok=True)
    (path / "metrics.json").write_text("\n".join(lines) + "\n")
    return path / "metrics.json"


def _ended(run):
    return [f for f in run.findings if f.kind == "ended_early"]


def test_SL306_stopped_at_99_of_300_by_the_time_it_said_was_left(tmp_path):
    (f,) = _ended(analyzed_run(_metrics_json(tmp_path / "output", 99)))
    assert f.severity == "info" and f.start_step == 99
    assert 280 <= f.evidence["planned_steps"] <= 320 and "time left" in f.evidence["plan_from"]


def test_SL306_the_run_that_went_on_to_its_end_is_quiet(tmp_path):
    assert _ended(analyzed_run(_metrics_json(tmp_path / "output", 299))) == []


def test_SL306_an_eta_that_does_not_count_down_plans_nothing(tmp_path):
    assert _ended(analyzed_run(_metrics_json(tmp_path / "output", 99, eta_counts_down=False))) == []
