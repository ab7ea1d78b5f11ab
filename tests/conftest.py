"""Shared test helpers: where fixtures live, and a CLI runner that keeps stdout and stderr apart."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def run_cli(*args: str, cwd: str | os.PathLike | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m spikelens ARGS` in a subprocess, as a user's shell would."""
    return subprocess.run([sys.executable, "-m", "spikelens", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)


@pytest.fixture
def cli():
    return run_cli


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under root (tests check that input folders are never written)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
