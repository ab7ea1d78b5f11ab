"""Ranks in a column of one file (#27): a CSV or JSON-lines log where every rank writes its
own row at each step (`rank`, `global_rank`, `process_index`) keeps the rank as a
dimension, as per-rank folders do: the rank that went bad is named, not averaged away."""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from spikelens.api import analyze, load

N_RANKS = 8


def _rows(*, bad: int | None = 5, at: int = 1200, every_rank: bool = False, nan_from: int | None = None,
          echo: bool = False, key: str = "rank", n_ranks: int = N_RANKS):
    """Rows `step, <key>, loss, tps` of 8 ranks, each rank with its own noise; the `bad` rank
    (or every rank) 8x at step `at`; the `bad` rank NaN from `nan_from` on."""
    rng = np.random.default_rng(11)
    out = []
    for s in range(0, 2000, 10):
        shared = 3 + math.exp(-s / 300) + rng.normal(0, 0.02)
        shared_tps = 7000 * (1 + rng.normal(0, 0.01))
        for r in range(n_ranks):
            v = shared if echo else 3 + math.exp(-s / 300) + rng.normal(0, 0.02)
            if s == at and (every_rank or r == bad):
                v *= 8
            if nan_from is not None and r == bad and s >= nan_from:
                v = float("nan")
            out.append({"step": s, key: r, "loss": v, "tps": shared_tps if echo else 7000 * (1 + rng.normal(0, 0.01))})
    return out


def _csv(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # NaN written bare, as json.dumps does
    return path


WRITERS = {"csv": _csv, "jsonl": _jsonl}


def _spikes(path: Path):
    rep = analyze(str(path), jobs=1)
    return rep, [(r.run, f) for r in rep.runs for f in r.findings if f.kind == "spike"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_one_rank_spiking_alone_in_a_rank_column_is_named(tmp_path, fmt):
    log = WRITERS[fmt](tmp_path / "job" / f"metrics.{fmt}", _rows())
    rep, spikes = _spikes(log)
    assert sorted(r.run for r in rep.runs) == [f"job[rank{r}]" for r in range(N_RANKS)]  # metrics.* names no run
    assert all("rank" not in r.metrics for r in rep.runs)  # a dimension, not a metric
    assert [(run, f.peak_step) for run, f in spikes] == [("job[rank5]", 1200)]
    f = spikes[0][1]
    assert re.match(r"rank 5 alone spiked [78]\.\dx at step 1200; the other 7 ranks stayed within noise", f.message)
    assert f.evidence["ranks"] == {"on": [5], "calm": [0, 1, 2, 3, 4, 6, 7]}
    assert f.causes[0].cause == "data"


def test_every_rank_spiking_together_is_no_rank_event(tmp_path):
    fmt = "csv"
    log = WRITERS[fmt](tmp_path / "all" / f"metrics.{fmt}", _rows(every_rank=True))
    rep, spikes = _spikes(log)
    assert len(rep.runs) == N_RANKS
    assert sorted(run for run, f in spikes if f.peak_step == 1200) == sorted(r.run for r in rep.runs)
    assert not any("ranks" in f.evidence or f.message.startswith("rank") for _, f in spikes)


def test_a_rank_going_nan_alone_in_a_global_rank_column_is_hardware(tmp_path):
    log = _jsonl(tmp_path / "nan" / "log.jsonl", _rows(bad=2, at=-1, nan_from=900, key="global_rank",
                                                                   n_ranks=4))
    rep = analyze(str(log), jobs=1)
    nans = [(r.run, f) for r in rep.runs for f in r.findings if f.kind == "nan"]
    assert [run for run, _ in nans] == ["nan[rank2]"]
    assert nans[0][1].message.startswith("rank 2 alone went NaN") and nans[0][1].causes[0].cause == "hardware"


def test_ranks_echoing_the_same_values_are_one_run_without_a_rank_metric(tmp_path):
    log = _csv(tmp_path / "echo" / "metrics.csv", _rows(bad=None, echo=True, key="process_index"))
    frame = load(str(log))
    assert frame.get_column("run").cast(str).unique().to_list() == ["echo"]
    assert set(frame.get_column("metric").cast(str).unique()) == {"loss", "tps"}


def test_a_constant_rank_column_is_left_as_it_was(tmp_path):
    """One process's log with `rank` always 0 (or a LoRA rank hyper-parameter): no dimension."""
    rows = [{"step": s, "rank": 0, "loss": 3 + math.exp(-s / 300)} for s in range(0, 500, 10)]
    frame = load(str(_csv(tmp_path / "one" / "metrics.csv", rows)))
    assert frame.get_column("run").cast(str).unique().to_list() == ["one"]
    assert set(frame.get_column("metric").cast(str).unique()) == {"loss", "rank"}


def test_a_rank_consistently_slower_in_a_local_rank_column_is_named(tmp_path):
    rng = np.random.default_rng(6)
    rows = [{"step": s, "local_rank": r, "loss": 3 + math.exp(-s / 300) + rng.normal(0, 0.02),
             "tps": 7000 * (0.7 if r == 2 else 1.0) * (1 + rng.normal(0, 0.01))}
            for s in range(0, 2000, 10) for r in range(4)]
    rep = analyze(str(_csv(tmp_path / "slow" / "metrics.csv", rows)), jobs=1)
    slow = [(r.run, f) for r in rep.runs for f in r.findings if f.kind == "rank_outlier"]
    assert [run for run, _ in slow] == ["slow[rank2]"]
    assert slow[0][1].evidence["rank"] == 2 and 25 <= slow[0][1].evidence["slower_percent"] <= 35
