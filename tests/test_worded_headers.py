"""A right-aligned console table whose header sets some names apart by one space (`Gen Ph`, `Conns Hidden`)
and names columns in any script (`Δbest`): each word over its own column, as a person reads it (#24).
A sentence of words over numbers stays no header."""
from __future__ import annotations

import pytest

from spikelens import api
from spikelens.errors import SpikelensError


def _table(n=40):
    head = " Gen Ph     Best      Avg    Δbest  Conns Hidden     Loss     Time"
    rows = [f"{g:4d} {g // 20:2d} {0.4 + 0.004 * g:8.4f} {0.2 + 0.003 * g:8.4f} {0.004:8.4f} {4 + g % 3:6d} {g % 2:6d}"
            f" {2.0 * 0.95 ** g:8.4f} {1.5 + 0.1 * g:7.1f}s" for g in range(n)]
    return head + "\n" + "-" * len(head) + "\n" + "\n".join(rows) + "\n"


def test_single_spaced_header_words_name_their_own_columns(tmp_path):
    (tmp_path / "train_output.log").write_text(_table())
    run = api.load_runs(tmp_path)[0]
    metrics = set(run.frame["metric"].cast(str))
    assert {"Best", "Avg", "Loss", "Conns", "Hidden"} <= metrics and "Δbest" in metrics
    loss = run.frame.filter(run.frame["metric"].cast(str) == "Loss").sort("seq")
    assert loss["value"].to_list() == pytest.approx([round(2.0 * 0.95 ** g, 4) for g in range(40)])


def test_a_sentence_over_numbers_is_no_header(tmp_path):
    text = "the results of the run follow below\n" + "".join(f"{i} {0.5 + i}\n" for i in range(3))
    (tmp_path / "notes.txt").write_text(text)
    with pytest.raises(SpikelensError):
        api.load_runs(tmp_path)
