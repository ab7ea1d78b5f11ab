"""JSON lines whose values are summaries of their measurements (stylegan2-ada's stats.jsonl)."""
from __future__ import annotations

import json

import pytest

from spikelens.importers.base import read_head
from spikelens.importers.jsonlines import JsonLinesImporter
from spikelens.importers.registry import IMPORTERS


def test_a_summary_is_its_mean_and_a_key_counting_the_records_is_the_step(tmp_path):
    path = tmp_path / "stats.jsonl"
    with open(path, "w") as f:  # what a training loop's stats collector appends once a tick
        for tick in range(12):
            g = 6.5 if tick == 0 else 1.4 - tick / 100
            f.write(json.dumps({"Loss/G/loss": {"num": 8, "mean": g, "std": 0.3},
                                "Loss/D/loss": {"num": 8, "mean": 0.9, "std": 0.1},
                                "Progress/tick": {"num": 1, "mean": tick, "std": 0.0},
                                "Progress/kimg": {"num": 1, "mean": tick * 4.0, "std": 0.0},
                                "timestamp": 1653489051.7 + tick * 300}) + "\n")
    first = next(imp for imp in IMPORTERS if imp.claims(path, read_head(path)))
    assert isinstance(first, JsonLinesImporter)
    (table,) = first.read(path)
    frame = table.frame
    g = frame.filter(frame["metric"] == "Loss/G/loss").sort("step")
    assert g["step"].to_list() == list(range(12))
    assert g["value"].to_list()[:2] == [6.5, pytest.approx(1.39)]
    assert "Loss/G/loss.std" not in frame["metric"].to_list()
    # records of plain numbers that name no step are still no metric log
    plain = tmp_path / "rows.jsonl"
    plain.write_text("".join(json.dumps({"id": i, "label": i % 2}) + "\n" for i in range(12)))
    assert not JsonLinesImporter().claims(plain, read_head(plain))
