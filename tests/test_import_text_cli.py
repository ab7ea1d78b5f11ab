"""Text logs through the CLI: `ls` names the pattern of each file, user patterns come from
a `spikelens.toml` / `pyproject.toml` in the working folder, damage is a warning on stderr."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, run_cli, tree_hashes

TEXT = FIXTURES / "text"

USER_TOML = """
[tool.spikelens.patterns]
mytrainer = { regex = '^\\[train\\] it=(?P<step>\\d+) loss=(?P<loss>[\\d.eE+-]+) gn=(?P<gn>[\\d.]+)', metrics = { loss = "train_loss", gn = "grad_norm" } }
"""


def test_ls_names_the_pattern_of_every_text_log_and_leaves_inputs_alone():
    before = tree_hashes(TEXT)
    res = run_cli("ls", TEXT, "--format", "json", env={"COLUMNS": "400"})
    assert res.returncode == 0, res.stderr
    runs = {r["run"]: r for r in json.loads(res.stdout)["runs"]}
    patterns = {name: r["meta"]["pattern"] for name, r in runs.items()}
    assert patterns == {  # each run by its shortest unique path (a log file is named by its file)
        "build_nanogpt": "build-nanogpt",
        "gpt2_damaged.log": "llm.c",
        "ds_chat_step1.log": "DeepSpeed",
        "ds_chat_step3.log": "DeepSpeed-Chat",
        "gpt2_train.nan.log": "llm.c",
        "llmc_main": "llm.c main.log",
        "megatron_ds.log": "Megatron",
        "megatron_lm.log": "Megatron",
        "record.txt": "modded-nanogpt",
        "train_stdout.log": "nanoGPT",
        "custom_trainer.log": "console log",  # no named pattern: read by its line structure
    }   # notes.txt is not claimed
    assert len(runs["llmc_main"]["segments"]) == 2 and len(runs["megatron_ds.log"]["segments"]) == 1
    assert runs["gpt2_train.nan.log"]["metrics"]["train_loss"] == "loss"
    warnings = [l for l in res.stderr.splitlines() if l.startswith("warning:")]
    assert any("gpt2_damaged.log" in w and "[rank1]" in w for w in warnings)   # brackets survive Rich
    assert tree_hashes(TEXT) == before


def test_ls_table_shows_the_pattern():
    res = run_cli("ls", TEXT / "llmc" / "gpt2_train.nan.log", env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert "[llm.c]" in res.stdout


@pytest.mark.parametrize("config_name", ["spikelens.toml", "pyproject.toml"])
def test_user_pattern_from_config_in_the_working_folder(tmp_path, config_name):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(TEXT / "user" / "custom_trainer.log", logs)
    (tmp_path / config_name).write_text(USER_TOML)
    res = run_cli("ls", "logs", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    (run,) = json.loads(res.stdout)["runs"]
    assert run["meta"]["pattern"] == "mytrainer"
    assert run["metrics"] == {"train_loss": "loss", "grad_norm": "grad_norm"}
    assert (run["first_step"], run["last_step"], run["points"]) == (0, 199, 400)


def test_without_the_user_pattern_the_log_is_read_by_its_line_structure(tmp_path):
    shutil.copy(TEXT / "user" / "custom_trainer.log", tmp_path)
    res = run_cli("ls", ".", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    (run,) = json.loads(res.stdout)["runs"]
    assert run["meta"]["pattern"] == "console log"
    assert run["metrics"] == {"loss": "loss", "gn": "other"}
    assert (run["first_step"], run["last_step"], run["points"]) == (0, 199, 400)


def test_a_folder_of_notes_holds_no_training_logs(tmp_path):
    (tmp_path / "notes.txt").write_text("We trained for 10 epochs.\nSee the 2 plots.\n")
    res = run_cli("ls", ".", cwd=tmp_path)
    assert res.returncode == 2
    assert "no training logs found" in res.stderr and "Traceback" not in res.stderr


def test_bad_user_pattern_is_a_one_line_error(tmp_path):
    shutil.copy(TEXT / "user" / "custom_trainer.log", tmp_path)
    (tmp_path / "spikelens.toml").write_text(
        "[tool.spikelens.patterns]\nmine = { regex = '(?<=it=)(?P<step>\\d+) loss=(?P<loss>\\S+)' }\n")
    res = run_cli("ls", ".", cwd=tmp_path)
    assert res.returncode == 2
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "'mine'" in lines[0] and "spikelens.toml" in lines[0]
    assert "Traceback" not in res.stderr
