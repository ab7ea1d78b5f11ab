"""The config file is checked against a schema when it is loaded: every section, key and
value type. A mistake is one line naming the file, the key and what is allowed, exit 2
(1 would read as "findings" to CI), never a traceback and never a setting silently
ignored. Before: `[detectors] bogus_key = 3` ended in a TypeError (exit 1), and an
unknown section or a role of the wrong type was accepted."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES

from spikelens.config import load_config
from spikelens.errors import ConfigError

LOGS = FIXTURES / "csv" / "lightning" / "exp"

BAD = [
    ("[detectors]\nbogus_key = 3\n", ["[detectors] bogus_key", "no such detector", "spike", "SL101"]),
    ("[analyze]\nspike_factor = 3\n", ["unknown section [analyze]", "[roles], [detectors], [check], [patterns]"]),
    ('[roles]\n"lm loss" = 5\n', ['[roles] "lm loss" = 5', "expected a role", "loss, eval_loss"]),
    ('[roles]\n"lm loss" = "los"\n', ["expected a role"]),
    ("[detectors]\nspike = { z_min = \"high\" }\n", ["spike.z_min = 'high'", "expected a number"]),
    ("[detectors]\nSL101 = { window = 2.5 }\n", ["SL101.window = 2.5", "expected a whole number"]),
    ("[detectors]\nspike = { windw = 100 }\n", ["spike.windw", "no such parameter", "window"]),
    ("[detectors]\nspike = 3\n", ["[detectors] spike = 3", "expected a table"]),
    ("[detectors]\nSL303 = { size_ratio = 2 }\n", ["SL303.size_ratio", "a list of 2 numbers"]),
    ("roles = 3\n", ["[roles] must be a table"]),
    ("[check]\nfail-on = 3\n", ["fail-on", "expected one of info, warning, error"]),
    ("[check]\nfial-on = \"error\"\n", ["unknown key 'fial-on'"]),
    ("[patterns]\nmine = { regex = 'loss=(?P<loss>\\S+)' }\n", ["'mine'", "step"]),
]


@pytest.mark.parametrize("text, says", BAD, ids=[t.split("\n")[1] or t.split("\n")[0] for t, _ in BAD])
def test_a_mistake_names_the_file_the_key_and_what_is_allowed(tmp_path: Path, text: str, says: list[str]):
    cfg = tmp_path / "spikelens.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    message = str(err.value)
    assert message.startswith(f"{cfg}: ") and "\n" not in message
    for part in says:
        assert part in message


def test_pyproject_sections_are_named_as_written(tmp_path: Path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[project]\nname = "x"\n\n[tool.spikelens.analyze]\nspike_factor = 3\n')
    with pytest.raises(ConfigError, match=r"unknown section \[tool\.spikelens\.analyze\]; allowed: "
                                          r"\[tool\.spikelens\.roles\]"):
        load_config(cfg)
    cfg.write_text('[tool.spikelens.detectors]\nbogus_key = 3\n')
    with pytest.raises(ConfigError, match=r"\[tool\.spikelens\.detectors\] bogus_key: no such detector"):
        load_config(cfg)


def test_a_good_config_loads_as_written(tmp_path: Path):
    cfg = tmp_path / "spikelens.toml"
    cfg.write_text('[roles]\n"train/lm_loss" = "loss"\n"optim/*" = "other"\n\n'
                   "[detectors]\nspike = { recovery_fast_steps = 500, z_min = 10 }\nSL204 = { min_shift = 0.02 }\n"
                   "SL303 = { size_ratio = [0.5, 2] }\n\n"
                   '[check]\nfail-on = "error"\nmax-fast-spikes = 2\n\n'
                   "[patterns]\nmine = { regex = 'it=(?P<step>\\d+) loss=(?P<loss>\\S+)' }\n")
    c = load_config(cfg)
    assert c.roles == {"train/lm_loss": "loss", "optim/*": "other"}
    assert c.detectors["spike"] == {"recovery_fast_steps": 500, "z_min": 10}
    assert c.check["max-fast-spikes"] == 2 and "mine" in c.patterns


@pytest.mark.parametrize("command", ["analyze", "check"])
def test_the_cli_exits_2_with_one_line(tmp_path: Path, monkeypatch, capsys, command: str):
    """From the working folder, as a user's spikelens.toml is found; the audit's reproducer."""
    from spikelens import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "spikelens.toml").write_text("[detectors]\nbogus_key = 3\n")
    with pytest.raises(SystemExit) as exc:
        cli.main([command, str(LOGS), "--format", "json"])
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err
    assert "spikelens.toml" in lines[0] and "bogus_key" in lines[0] and "allowed" in lines[0]
