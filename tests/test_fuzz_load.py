"""Fuzz every format: mutated copies of the real fixture files (truncated, bytes flipped,
two files spliced, runs of bytes duplicated, inserted or deleted) never make spikelens
crash.

- `spikelens.load` on the damaged file and on its folder either returns a frame in the
  schema or raises a `SpikelensError` whose message is one line naming a path we gave;
  nothing else escapes. Warnings are one line each.
- The CLI (`analyze --format json`, `ls`, run in-process through `spikelens.cli.main`)
  exits 0, 1 or 2 and, when it exits 0, prints JSON; an exception other than the
  typed errors would propagate out of `main` and fail the test (a user would have seen
  a traceback). `test_cli_subprocess_never_prints_a_traceback` checks the real
  process's stderr on a few fixed damages.
"""
from __future__ import annotations

import io
import json
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from conftest import FIXTURES, run_cli
from fuzz_cases import FAMILIES, Mutation, fixture_files, fuzz_settings, load, mutations, place, unit_of
from spikelens.pipeline import executors
from spikelens.cli import main as cli_main
from spikelens.frame import SCHEMA

FILES = {f: fixture_files(f) for f in FAMILIES}
ALL = [p for f in FAMILIES for p in FILES[f]]
FUZZ = fuzz_settings()


@pytest.fixture(autouse=True, scope="module")
def one_process():
    """Analyse in this process (no worker pool per example: the fuzz budget is seconds)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(executors, "MIN_GROUPS_FOR_WORKERS", 10**9)
        yield


def damaged_copy(tmp: Path, rel: Path, other: Path, mutation: Mutation) -> tuple[Path, Path]:
    """The case folder of `rel` copied into tmp with `rel` mutated; (file, what to load)."""
    copy, root = place(tmp, rel)
    copy.write_bytes(mutation.apply(copy.read_bytes(), (FIXTURES / other).read_bytes()))
    return copy, unit_of(copy, root)


def check_outcome(target: Path, tmp: str) -> None:
    out = load(target)
    event("error" if out.error is not None else "frame" if out.frame.height else "empty frame")
    if out.error is not None:
        msg = str(out.error)
        assert "\n" not in msg, msg
        assert tmp in msg, f"the error names no path we gave: {msg}"
    else:
        assert dict(out.frame.schema) == SCHEMA
    for line in out.warnings:
        assert "\n" not in line.strip(), line


def test_every_family_has_fixture_files():
    assert {"csv", "hf", "mlflow", "tensorboard", "text", "wandb", "wandb_exports"} <= set(FAMILIES)
    assert all(FILES[f] for f in FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
@FUZZ
@given(data=st.data())
def test_damaged_fixture_never_crashes_load(family, data):
    rel = data.draw(st.sampled_from(FILES[family]), label="file")
    other = data.draw(st.sampled_from(ALL), label="other file (for splices)")
    mutation = data.draw(mutations, label="mutation")
    with tempfile.TemporaryDirectory() as tmp:
        copy, unit = damaged_copy(Path(tmp), rel, other, mutation)
        check_outcome(copy, tmp)
        if unit != copy.parent or len(list(unit.iterdir())) > 1:
            check_outcome(unit, tmp)


def run_main(*args: str) -> tuple[int, str, str]:
    """`spikelens ARGS` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            cli_main(list(args))
        except SystemExit as exc:
            code = exc.code
    return (0 if code is None else code), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("family", FAMILIES)
@fuzz_settings(0.3)
@given(data=st.data())
def test_damaged_fixture_never_crashes_the_cli(family, data):
    rel = data.draw(st.sampled_from(FILES[family]), label="file")
    other = data.draw(st.sampled_from(ALL), label="other file (for splices)")
    mutation = data.draw(mutations, label="mutation")
    command = data.draw(st.sampled_from(["analyze", "ls"]), label="command")
    with tempfile.TemporaryDirectory() as tmp:
        _, unit = damaged_copy(Path(tmp), rel, other, mutation)
        code, out, err = run_main(command, str(unit), "--format", "json", "-q")
        assert code in (0, 1, 2), (code, err)
        event(f"{command} exit {code}")
        if code == 0:
            assert isinstance(json.loads(out), dict)
        else:
            assert err.strip() and len(err.strip().splitlines()) == 1 and tmp in err, err


FIXED_DAMAGE = [
    ("analyze", "tensorboard/simple", Mutation("truncate(0.5)", lambda d, o: d[: len(d) // 2])),
    ("check", "csv/generic", Mutation("junk", lambda d, o: d[: len(d) // 2] + b"\xff\x00\"" + d[len(d) // 2:])),
    ("ls", "wandb/runs", Mutation("truncate(0.3)", lambda d, o: d[: len(d) * 3 // 10])),
    ("analyze", "hf/run_clean", Mutation("truncate(0.6)", lambda d, o: d[: len(d) * 6 // 10])),
    ("check", "text/nanogpt", Mutation("splice", lambda d, o: d[: len(d) // 2] + o[len(o) // 2:])),
    ("ls", "mlflow/mlruns", Mutation("flip", lambda d, o: d[:3] + bytes([d[3] ^ 0x55]) + d[4:])),
]


@pytest.mark.parametrize("command,case,mutation", FIXED_DAMAGE, ids=[f"{c}-{k}" for c, k, _ in FIXED_DAMAGE])
def test_cli_subprocess_never_prints_a_traceback(tmp_path, command, case, mutation):
    rel = next(p for p in ALL if str(p).startswith(case + "/") and p.suffix not in (".yaml", ".txt"))
    tb = next((FIXTURES / "tensorboard/simple").iterdir()).relative_to(FIXTURES)
    _, unit = damaged_copy(tmp_path, rel, tb, mutation)
    res = run_cli(command, unit, "--format", "json")
    assert res.returncode in (0, 1, 2), res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    if res.returncode == 2:
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    else:
        assert json.loads(res.stdout)["runs"] is not None
