"""A run's plan saved in a configuration beside its logs (`importers.plans.sibling_plan`, SL306
`ended_early`): Spinning Up's `config.json` (`"epochs": 1000`) beside `progress.txt`, W&B's
`files/config.yaml` (`epochs:` with its `value: 50` under it) beside the `.wandb` file. A run that
stopped far short of it is told so; one that logs no epoch counter is measured by the steps it spans
(each epoch moves the step on by one at least: at most that many epochs were done). Silent: a run
that reached its plan, an `epochs` nested in a sub-object (a scheduler's, a model's), a configuration
that states no length. Fixtures: Spinning Up's files written with its logger's own calls, the W&B run
with the real client, offline."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from conftest import FIXTURES, analyzed_run

import sys

sys.path.insert(0, str(FIXTURES))
from writers.wandb_offline import _settings, offline_wandb  # noqa: E402

HEADERS = ("Epoch", "AverageEpRet", "StdEpRet", "EpLen", "TotalEnvInteracts", "LossPi", "LossV", "Time")


def _spinning_up(folder: Path, epochs_logged: int, config: dict) -> Path:
    """`progress.txt` and `config.json` as `spinup.utils.logx.EpochLogger` writes them (tab-separated
    rows under a header; the config dumped with `separators=(',', ':\\t'), indent=4, sort_keys=True`)."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    rows = ["\t".join(HEADERS)]
    for e in range(epochs_logged):
        ret = 20.0 + 180.0 * (1 - np.exp(-e / 15)) + 5 * rng.standard_normal()
        rows.append("\t".join(str(x) for x in (e, ret, 12.5, 180.0, 4000 * (e + 1), -0.01 * rng.random(),
                                               90.0 * np.exp(-e / 20) + 3, 60.0 * (e + 1))))
    (folder / "progress.txt").write_text("\n".join(rows) + "\n")
    (folder / "config.json").write_text(json.dumps(config, separators=(",", ":\t"), indent=4, sort_keys=True))
    return folder


def _ended(run) -> list:
    return [f for f in run.findings if f.kind == "ended_early" and not f.evidence.get("launch_crashed")]


def _wandb_run(out: Path, epochs_logged: int, planned: int) -> Path:
    with offline_wandb() as (wandb, tmp):
        run = wandb.init(project="p", settings=_settings(wandb), id="planned1", config={"epochs": planned, "lr": 3e-4})
        for e in range(epochs_logged):
            for b in range(10):
                run.log({"train/loss": 2.0 * np.exp(-(e * 10 + b) / 40) + 0.3, "epoch": e})
        run.finish()
        wandb.teardown()
        (folder,) = (tmp / "wandb").glob("offline-run-*")
        dest = out / folder.name
        shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("logs", "tmp", "*.log"))
        # `files/config.yaml` as the client's sender saves it when the run syncs (an offline folder gets it then)
        from wandb.sdk.lib.config_util import save_config_file_from_dict
        save_config_file_from_dict(str(dest / "files" / "config.yaml"),
                                   {"_wandb": {"value": {"cli_version": wandb.__version__}},
                                    "epochs": {"value": planned}, "lr": {"value": 3e-4}})
    return dest


# ------------------------------------------------------------------ must fire


def test_SL306_spinning_up_stopped_at_25_of_1000_planned_epochs(tmp_path):
    folder = _spinning_up(tmp_path / "ppo_s0", 25, {"epochs": 1000, "steps_per_epoch": 4000, "exp_name": "ppo",
                                                     "ac_kwargs": {"hidden_sizes": [64, 64]}, "seed": 0})
    (f,) = _ended(analyzed_run(folder / "progress.txt"))
    assert f.severity == "info" and f.evidence["planned_epochs"] == 1000 and f.start_step == 24
    assert f.evidence["epochs_at_most"] == 25 and "config.json" in f.evidence["plan_from"]
    assert "at most 2.5% of the 1000 planned epochs" in f.message


def test_SL306_a_wandb_run_stopped_at_5_of_50_epochs_its_config_yaml_planned(tmp_path):
    folder = _wandb_run(tmp_path, 5, 50)
    assert "value: 50" in (folder / "files" / "config.yaml").read_text()
    (f,) = _ended(analyzed_run(folder))
    assert f.evidence["planned_epochs"] == 50 and f.evidence["fraction_done"] == 0.1


# ------------------------------------------------------------------ must stay silent


def test_SL306_spinning_up_that_ran_its_plan_is_silent(tmp_path):
    folder = _spinning_up(tmp_path / "ppo_s0", 40, {"epochs": 40, "exp_name": "ppo", "seed": 0})
    assert _ended(analyzed_run(folder / "progress.txt")) == []


def test_SL306_an_epochs_nested_in_a_sub_object_is_no_plan(tmp_path):
    folder = _spinning_up(tmp_path / "ppo_s0", 25, {"scheduler": {"epochs": 1000, "kind": "cosine"}, "seed": 0})
    assert _ended(analyzed_run(folder / "progress.txt")) == []


def test_SL306_a_wandb_run_that_reached_its_plan_is_silent(tmp_path):
    assert _ended(analyzed_run(_wandb_run(tmp_path, 6, 6))) == []
