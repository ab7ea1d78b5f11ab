"""A Keras-like history saved beside other sections of one JSON document."""
from __future__ import annotations

import json

import pytest

from spikelens.importers.base import read_head
from spikelens.importers.jsonhistory import JsonHistoryImporter
from spikelens.importers.registry import IMPORTERS


def test_the_history_is_the_section_holding_the_longest_lists(tmp_path):
    history = {"accuracy": [0.6 + e / 100 for e in range(20)], "loss": [1.0 / (e + 1) for e in range(20)],
               "val_loss": [1.1 / (e + 1) for e in range(20)]}
    doc = {"model_info": {"architecture": "cnn", "input_shape": [227, 227, 3], "num_classes": 2},
           "training_config": {"batch_size": 64, "learning_rate": 1e-4, "epochs": 20},
           "final_metrics": {"training_loss": history["loss"][-1]},
           "training_history": history, "timestamp": "2024-01-01T00:00:00"}
    path = tmp_path / "training_statistics.json"
    path.write_text(json.dumps(doc, indent=2))  # json.dump(stats, f, indent=2)
    first = next(imp for imp in IMPORTERS if imp.claims(path, read_head(path)))
    assert isinstance(first, JsonHistoryImporter)
    (table,) = first.read(path)
    frame = table.frame
    assert set(frame["metric"].unique().to_list()) == {"training_history/accuracy", "training_history/loss",
                                                       "training_history/val_loss"}
    loss = frame.filter(frame["metric"] == "training_history/loss").sort("step")
    assert loss["step"].to_list() == list(range(20)) and loss["value"][1] == pytest.approx(0.5)
    # a document of settings whose lists are short is not a history: not claimed
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model": {"name": "x"}, "loss_weights": [1.0, 0.5]}, indent=2))
    assert not JsonHistoryImporter().claims(config, read_head(config))
