"""Command-line values read without pydantic (#28, leaner runs): every kind of parameter the
commands declare gives the value typer's own coercion gives, or hands the value to it (so bad
values get typer's message: `analyze --format nosuch` is test_cli_startup's), and a JSON
analyze never imports pydantic."""
from __future__ import annotations

import subprocess
import sys
from enum import Enum
from pathlib import Path

import click
import pytest
import typer.main

from spikelens import cli
from spikelens.cli import coercion

pytestmark = pytest.mark.skipif(coercion.RuntimeParam is None, reason="typer without the pydantic layer")

SAMPLES = ["", "12", "-3", "007", "1_000", " 5", "-2e-3", ".5", "1e400", "nan", "x", "JSON", "Rich", "true",
           ".", "tests", "/nonexistent/x"]
"""Command-line words: plain ones, and ones only typer's coercion reads (or refuses)."""


def _every_param() -> list[tuple[str, click.Parameter]]:
    from spikelens.cli import commands  # noqa: F401  (registers every command)

    group = typer.main.get_command(cli.app)
    ctx = click.Context(group)
    out = [("spikelens", p) for p in group.get_params(ctx)]
    for name, cmd in group.commands.items():
        out += [(name, p) for p in cmd.get_params(click.Context(cmd, parent=ctx))]
    return out


def _typer_reading(typers, param, value, ctx):
    from typer._coercion import build_runtime_param

    if param not in typers:
        typers[param] = build_runtime_param(param.type_descriptor)
    try:
        return ("ok", typers[param]._coerce_value(value, param=param, ctx=ctx))
    except Exception as exc:  # typer >= 0.20 raises its own (vendored click's) BadParameter
        return (type(exc).__name__, exc.format_message())


def test_every_parameter_reads_as_typer_reads_it():
    params = _every_param()
    assert len(params) > 80 and all(isinstance(p._runtime_param, coercion._PlainParam) for _, p in params)
    kinds = {}  # one parameter of each kind (type and what typer checks on it) is enough
    for name, param in params:
        info = param.type_descriptor.parameter_info
        key = (repr(param.type_descriptor.annotation), info.min, info.max, info.clamp, info.exists, info.file_okay,
               info.dir_okay, info.case_sensitive, info.parser is None)
        kinds.setdefault(key, (name, param))
    checked = plain = 0
    typers: dict = {}  # typer's own runtime parameter (pydantic), one a parameter
    for name, param in kinds.values():
        ctx = click.Context(click.Command(name))
        desc = param.type_descriptor
        words = SAMPLES + [str(c.value) for c in desc.annotation] if isinstance(desc.annotation, type) and \
            issubclass(desc.annotation, Enum) else SAMPLES
        values = [*words, [*words[:3]], (), None, True, False, 4, 2.5, Path("tests")]
        for value in values:
            want = _typer_reading(typers, param, value, ctx)
            try:
                got = ("ok", param._runtime_param._coerce_value(value, param=param, ctx=ctx))
            except Exception as exc:
                got = (type(exc).__name__, exc.format_message())
            assert repr(got) == repr(want) and type(got[1]) is type(want[1]), (name, param.name, desc.annotation, value)
            checked += 1
            read = coercion.plain_value(desc.annotation, desc.parameter_info, value, ctx, param)
            plain += read is not coercion._NOT_READ
    assert len(kinds) >= 12 and checked > 300 and plain > 80  # most plain words are read without typer  # most words are read without typer's coercion


def test_a_json_analyze_never_imports_pydantic(tmp_path):
    (tmp_path / "train.log").write_text("".join(f"step {i} loss {2.0 - i / 100:.4f}\n" for i in range(60)))
    argv = ["analyze", str(tmp_path), "--format", "json", "--param", "spike.window=50"]
    res = subprocess.run([sys.executable, "-c", "import sys\nfrom spikelens.cli import main\n"
                          "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
                          "print('PYDANTIC', any(m.startswith('pydantic') for m in sys.modules), file=sys.stderr)\n"
                          "sys.exit(code)", *argv], capture_output=True, text=True, timeout=120)
    assert res.returncode in (0, 1), res.stderr[-500:]
    assert '"runs"' in res.stdout and "PYDANTIC False" in res.stderr
