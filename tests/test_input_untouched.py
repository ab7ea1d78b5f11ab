"""spikelens never writes into the folders it reads.

Every fixture family is copied to a temp folder; `ls`, `analyze` (also with --html
and --plot), `check`, `export` and `stitch` run on the copy as a user would (each a real
process, started from inside the copied tree so that anything written to the working
folder lands in it too); outputs go to a separate folder. Afterwards every file has
the same bytes and modification time, and no file or folder appeared or vanished.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli, tree_hashes

FAMILIES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name not in {"writers", "__pycache__"})
STITCHED = ["resumes/tb_rollback", "resumes/lightning", "wandb/rewind", "hf/run_resumed"]


def snapshot(root: Path) -> tuple[dict[str, str], dict[str, int], set[str]]:
    """File hashes, modification times and every path (folders included) under root."""
    paths = {str(p.relative_to(root)) for p in root.rglob("*")}
    mtimes = {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    return tree_hashes(root), mtimes, paths


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("inputs")
    for family in FAMILIES:
        shutil.copytree(FIXTURES / family, root / family, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def commands(out: Path) -> list[list[str]]:
    every = FAMILIES
    return [
        ["ls", *every, "--format", "json"],
        # pictures cost ~0.4 s a run: a few runs are enough to see where they are written
        ["analyze", "example", "wandb", "--format", "json", "--html", str(out / "report.html"),
         "--plot", str(out / "plots")],
        ["analyze", *every],
        # the damaged fixtures are logs check cannot read (exit 2); --allow-empty judges the rest
        ["check", *every, "--format", "json", "--allow-empty"],
        ["export", *every, "-o", str(out / "all.parquet")],
        ["export", "csv", "text", "-o", str(out / "all.csv")],
        *(["stitch", part, "--format", "json", "-o", str(out / f"stitched_{i}.parquet")]
          for i, part in enumerate(STITCHED)),
    ]


def test_no_command_writes_into_its_input(tree, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(tree)
    assert len(before[0]) > 50  # every family is there
    ran = []
    for argv in commands(out):
        res = run_cli(*argv, cwd=tree)
        assert res.returncode in (0, 1), (argv, res.stderr[-2000:])
        assert "Traceback" not in res.stderr, res.stderr
        if "--format" in argv and argv[argv.index("--format") + 1] == "json":
            json.loads(res.stdout)
        ran.append(argv[0])
    after = snapshot(tree)
    assert after[2] == before[2], f"paths appeared {sorted(after[2] - before[2])} or vanished {sorted(before[2] - after[2])}"
    assert after[0] == before[0], [k for k in before[0] if after[0].get(k) != before[0][k]]
    assert after[1] == before[1], [k for k in before[1] if after[1].get(k) != before[1][k]]
    assert set(ran) == {"ls", "analyze", "check", "export", "stitch"}
    # the outputs did go somewhere: into the output folder
    assert (out / "report.html").stat().st_size > 0 and any((out / "plots").iterdir())
    assert (out / "all.parquet").stat().st_size > 0 and (out / "all.csv").stat().st_size > 0
    assert all((out / f"stitched_{i}.parquet").is_file() for i in range(len(STITCHED)))


def test_the_snapshot_sees_a_write(tree, tmp_path):
    """The check above can fail: a touched, an edited and an added file are all seen."""
    copy = tmp_path / "copy"
    shutil.copytree(tree / "csv", copy)
    before = snapshot(copy)
    victim = next(p for p in copy.rglob("*.csv") if p.stat().st_size)
    os.utime(victim, ns=(victim.stat().st_atime_ns, victim.stat().st_mtime_ns + 1_000_000))
    assert snapshot(copy)[1] != before[1]
    victim.write_bytes(victim.read_bytes() + b"\n")
    assert snapshot(copy)[0] != before[0]
    (copy / ".spikelens-cache").mkdir()
    assert snapshot(copy)[2] != before[2]
