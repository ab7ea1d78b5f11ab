"""Docs are tested: every command has help text with an example, and every
`spikelens ...` command shown in README.md names a command and options that exist
(sqlite-utils' tests/test_docs.py habit)."""
from __future__ import annotations

import re
import shlex

import pytest
import typer
from typer.testing import CliRunner

from conftest import ROOT
from spikelens import cli

README = ROOT / "README.md"


def _group():
    cli._register()
    return typer.main.get_command(cli.app)


def _commands() -> dict:
    return dict(_group().commands)


def test_there_are_commands():
    names = set(_commands())
    assert {"analyze", "explain", "ls"} <= names


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_has_help_with_an_example(name):
    cmd = _commands()[name]
    assert cmd.help and len(cmd.help.strip().splitlines()[0]) > 20, f"{name}: no help text"
    assert re.search(r"Example:.*spikelens " + re.escape(name), cmd.help), f"{name}: no 'Example: spikelens {name}'"
    res = CliRunner().invoke(cli.app, [name, "--help"])
    assert res.exit_code == 0, res.output
    assert "Example" in res.stdout
    for param in cmd.params:
        if param.param_type_name == "option" and not getattr(param, "hidden", False):
            assert param.help, f"{name} {param.opts}: option without help"


def test_top_level_help_lists_every_command():
    res = CliRunner().invoke(cli.app, ["--help"])
    assert res.exit_code == 0
    for name in _commands():
        assert name in res.stdout


def readme_commands(text: str) -> list[str]:
    """Lines inside fenced code blocks that run spikelens (`$ ` prompts and `\\` continuations handled)."""
    out, in_block, pending = [], False, ""
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_block, pending = not in_block, ""
            continue
        if not in_block:
            continue
        line = pending + line.strip().removeprefix("$ ")
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        if line.startswith("spikelens "):
            out.append(line.split(" #", 1)[0].strip())
    return out


def test_readme_command_parser():
    text = "x\n```bash\n$ spikelens analyze runs/ \\\n   --html r.html  # comment\npip install x\n```\nspikelens no\n"
    assert readme_commands(text) == ["spikelens analyze runs/ --html r.html"]


def readme_problems(text: str, commands: dict) -> list[str]:
    """What is wrong with the spikelens commands a README shows (empty when all exist)."""
    problems = []
    for line in readme_commands(text):
        words = shlex.split(line.split("|")[0])
        sub = next((w for w in words[1:] if not w.startswith("-")), None)
        if sub not in commands:
            problems.append(f"{line!r}: no command {sub!r}; known: {sorted(commands)}")
            continue
        known = {o for p in commands[sub].params for o in (*p.opts, *p.secondary_opts)}
        problems += [f"{line!r}: {sub} has no option {w!r}" for w in words[2:]
                     if w.startswith("--") and w.split("=", 1)[0] not in known]
    return problems


def test_readme_checker_catches_unknown_commands_and_options():
    text = "```\nspikelens analyze runs/ --html r.html\nspikelens analyse x\nspikelens analyze x --fail-on error\n```\n"
    problems = readme_problems(text, _commands())
    assert len(problems) == 2
    assert "no command 'analyse'" in problems[0] and "no option '--fail-on'" in problems[1]


def test_readme_commands_exist():
    text = README.read_text(encoding="utf-8")
    assert readme_commands(text), "README.md shows no spikelens command in a code block"
    assert readme_problems(text, _commands()) == []
