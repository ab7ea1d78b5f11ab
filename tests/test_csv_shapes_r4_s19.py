"""CSV shapes a person reads at a glance that the CSV reader missed (#24).

A `'\\t,'.join(...)` writer (`utils.write_log` of a DQN trainer): the header `Step\\t,episode.rwd\\t,...` and rows
whose tab comes with every comma, once without it (`loss\\tepsilon`); the tab is the separator's part."""
from __future__ import annotations

import math

import numpy as np
import pytest

from loaded_runs import one_run, series


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


def test_json_lines_with_a_list_of_per_player_records_read_each_player(tmp_path):
    """`{"epoch": e, "mode": "selfplay", "seats": [{"id": 0, "q_loss": ..., "return_mean": ...}, ...]}`: each
    seat's numbers are series of their own, named by the list and the seat's id."""
    import json

    rng = np.random.default_rng(4)
    rows, want = [], {s: [] for s in range(3)}
    for e in range(40):
        seats = []
        for s in range(3):
            q = 4.0 * math.exp(-e / 15) + 0.3 + s * 0.1 + float(rng.normal(0, 0.02))
            want[s].append(q)
            seats.append({"id": s, "q_loss": q, "return_mean": -1 + e / 40, "grad_norm": 50.0})
        rows.append({"epoch": e, "mode": "selfplay", "eval_win": None, "seats": seats})
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = one_run(tmp_path)
    for s in range(3):
        steps, values = series(run, f"seats.{s}.q_loss")
        assert steps == list(range(40)) and values == pytest.approx(want[s])
    assert "seats.1.return_mean" in set(run.frame["metric"])


def test_lists_of_numbers_or_of_many_records_stay_unread(tmp_path):
    """A histogram list and a per-sample table of hundreds of records are data, not members of the run."""
    import json

    rows = [{"step": i, "loss": 2.0 / (i + 1), "hist": [1, 2, 3],
             "samples": [{"id": k, "score": 0.5} for k in range(200)]} for i in range(30)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert set(one_run(tmp_path).frame["metric"]) == {"loss"}
