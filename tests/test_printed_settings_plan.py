"""The epochs a script's printed settings plan (`linerecords._EPOCH_PLAN_SAID`): Python prints its
config as a dict (`{'dataset': 'CIFAR10', 'epochs': 100, 'lr': 0.1}`) or as JSON (`"epochs": 100,`), the
key quoted. A run of that log that stopped at its second epoch is far short of its plan (SL306 info);
the same run that reached its 100th epoch is quiet. Fixtures: a logging-module console log written
here as such a script prints it (`[INFO | main.py:45] <time>: [Epoch    1] Loss: 2.307 Acc: 24.000%`)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import analyzed_run

SETTINGS = {"dataset": "CIFAR10", "model_name": "ResNet26", "batch_size": 25, "epochs": 100, "lr": 0.1}


def _log(path, epochs: int, per: int, printed: str):
    rng = np.random.default_rng(0)
    lines = [f"[INFO | config.py:57] 2021-01-23 22:50:01,961: {printed}"]
    for e in range(1, epochs + 1):
        for b in range(per):
            loss = 2.3 * np.exp(-(e * per + b) / 200) + 0.2 + 0.05 * rng.standard_normal()
            lines.append(f"[INFO | main.py:45] 2021-01-23 22:{(e + b) % 60:02d}:28,033: [Epoch {e:4d}] Loss: {loss:.3f} "
                         f"Acc: {4 * rng.integers(3, 12):.3f}%")
    path.write_text("\n".join(lines) + "\n")
    return path


def _ended(run):
    return [f for f in run.findings if f.kind == "ended_early"]


@pytest.mark.parametrize("printed", [str(SETTINGS), json.dumps(SETTINGS)], ids=["dict", "json"])
def test_SL306_stopped_at_epoch_2_of_the_100_its_printed_settings_plan(tmp_path, printed):
    (f,) = _ended(analyzed_run(_log(tmp_path / "train.log", 2, 20, printed)))
    assert f.severity == "info" and f.start_step == 2 and "of the 100 planned" in f.message


def test_SL306_the_run_that_reached_its_100th_epoch_is_quiet(tmp_path):
    assert _ended(analyzed_run(_log(tmp_path / "train.log", 100, 2, str(SETTINGS)))) == []
