"""CSV shapes a person reads at a glance that the CSV reader missed (#24).

A `'\\t,'.join(...)` writer (`utils.write_log` of a DQN trainer): the header `Step\\t,episode.rwd\\t,...` and rows
whose tab comes with every comma, once without it (`loss\\tepsilon`); the tab is the separator's part."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spikelens import api


def one_run(path):
    (run,) = api.load_runs(path)
    return run


def series(run, metric):
    part = run.frame.filter(run.frame["metric"] == metric).sort("step")
    return part["step"].to_list(), part["value"].to_list()


def dqn_rows(n):
    rng = np.random.default_rng(2)
    step, rows = 0, []
    for e in range(n):
        step += int(rng.integers(150, 250))
        loss = 0.5 * math.exp(-e / 60) + 0.05 + float(rng.normal(0, 0.01))
        rows.append((step, int(rng.integers(0, 5)), 0.2 + e / 100, loss, max(0.1, 1 - step / 1e5), 10.0 + e * 2.5))
    return rows


def test_a_tab_padded_csv_with_a_lost_comma_reads_every_column(tmp_path):
    rows = dqn_rows(120)
    head = "Step\t,episode.rwd\t,episode.q\t,episode.loss\t,epsilon\t,time\n"
    body = "".join(f"{s}\t,{r}\t,{q}\t,{l}\t{eps}\t,{t}\n" for s, r, q, l, eps, t in rows)
    (tmp_path / "train.csv").write_text(head + body)
    run = one_run(tmp_path)
    assert {"episode.loss", "episode.rwd", "epsilon", "time"} <= set(run.frame["metric"])
    steps, values = series(run, "episode.loss")
    assert steps == [r[0] for r in rows] and values == pytest.approx([r[3] for r in rows])
    assert series(run, "epsilon")[1] == pytest.approx([r[4] for r in rows])


def test_a_plain_csv_with_a_tab_in_a_cell_stays_as_before(tmp_path):
    """Commas alone separate; a tab inside a text cell is the cell's."""
    rows = dqn_rows(60)
    body = "".join(f"{s},{l},note\tA\n" for s, _, _, l, _, _ in rows)
    (tmp_path / "train.csv").write_text("step,loss,note\n" + body)
    run = one_run(tmp_path)
    assert "loss" in set(run.frame["metric"])
    steps, values = series(run, "loss")
    assert steps == [r[0] for r in rows] and values == pytest.approx([r[3] for r in rows])
