"""What the fuzz tests share: the committed fixture files of every format, byte-level
mutations as hypothesis strategies, and a loader that returns what the library did
(frame, warning lines, or the SpikelensError it raised) instead of raising.

A mutated file is always a copy in a temp folder, placed where the original sat
inside its case folder (`fixtures/<family>/<case>/...`), so names and neighbours that
decide how it is claimed (version_N, offline-run-*, an MLflow run's meta.yaml) stay.
"""
from __future__ import annotations

import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from spikelens import api, diagnostics
from spikelens.errors import SpikelensError

EXAMPLES = int(os.environ.get("SPIKELENS_FUZZ_EXAMPLES", "40"))
"""Examples per property test; raise it for a longer campaign
(`SPIKELENS_FUZZ_EXAMPLES=500 pytest tests/test_fuzz_*.py`)."""


def fuzz_settings(share: float = 1.0) -> settings:
    """Hypothesis settings of the fuzz tests: `share` of EXAMPLES, no deadline."""
    return settings(max_examples=max(1, int(EXAMPLES * share)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


SKIP = {"writers", "__pycache__"}
FAMILIES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name not in SKIP)
"""One per fixture family folder: csv, hf, mlflow, tensorboard, text, wandb, ..."""


def fixture_files(family: str) -> list[Path]:
    """Every committed, non-empty file of a family (relative to fixtures/)."""
    root = FIXTURES / family
    return [p.relative_to(FIXTURES) for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.stat().st_size > 0]


def case_of(rel: Path) -> Path:
    """`<family>/<case>` of a fixture file: the folder copied along with it."""
    return Path(*rel.parts[:2]) if len(rel.parts) > 2 else Path(rel.parts[0])


def unit_of(copy: Path, case_root: Path) -> Path:
    """What a user would point spikelens at for this file: the nearest folder that is an
    MLflow run (holds meta.yaml) for MLflow files, else the file's own folder."""
    p = copy.parent
    while p != case_root.parent:
        if (p / "meta.yaml").is_file() and (p / "metrics").is_dir():
            return p
        p = p.parent
    return copy.parent


def place(tmp: Path, rel: Path) -> tuple[Path, Path]:
    """Copy the case folder of a fixture file into tmp; return (the copied file, its case root)."""
    case = case_of(rel)
    dest = tmp / case
    if not dest.exists():
        if (FIXTURES / case).is_dir():
            shutil.copytree(FIXTURES / case, dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(FIXTURES / case, dest)
    return tmp / rel, dest


# ------------------------------------------------------------------ mutations


@dataclass(frozen=True)
class Mutation:
    """A named byte edit, printed by hypothesis when a case fails."""

    name: str
    apply: Callable[[bytes, bytes], bytes]
    """(data, other file's data) → mutated data."""

    def __repr__(self) -> str:
        return self.name


def _truncate(at: float) -> Mutation:
    return Mutation(f"truncate({at:.4f})", lambda d, o: d[: int(len(d) * at)])


def _flip(positions: list[tuple[float, int]]) -> Mutation:
    def go(d: bytes, o: bytes) -> bytes:
        b = bytearray(d)
        for frac, mask in positions:
            if b:
                b[min(int(len(b) * frac), len(b) - 1)] ^= mask
        return bytes(b)

    return Mutation(f"flip({positions})", go)


def _splice(at: float, other_at: float) -> Mutation:
    return Mutation(f"splice({at:.4f}, {other_at:.4f})",
                    lambda d, o: d[: int(len(d) * at)] + o[int(len(o) * other_at):])


def _duplicate(start: float, length: float, where: float) -> Mutation:
    def go(d: bytes, o: bytes) -> bytes:
        a = int(len(d) * start)
        piece = d[a: a + max(1, int(len(d) * length))]
        at = int(len(d) * where)
        return d[:at] + piece + d[at:]

    return Mutation(f"duplicate({start:.4f}, {length:.4f}, {where:.4f})", go)


def _insert(where: float, junk: bytes) -> Mutation:
    return Mutation(f"insert({where:.4f}, {junk!r})", lambda d, o: d[: int(len(d) * where)] + junk + d[int(len(d) * where):])


def _delete(start: float, length: float) -> Mutation:
    def go(d: bytes, o: bytes) -> bytes:
        a = int(len(d) * start)
        return d[:a] + d[a + max(1, int(len(d) * length)):]

    return Mutation(f"delete({start:.4f}, {length:.4f})", go)


_frac = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_small = st.floats(min_value=0.0, max_value=0.2, allow_nan=False)

mutations = st.one_of(
    _frac.map(_truncate),
    st.lists(st.tuples(_frac, st.integers(min_value=1, max_value=255)), min_size=1, max_size=6).map(_flip),
    st.builds(_splice, _frac, _frac),
    st.builds(_duplicate, _frac, _small, _frac),
    st.builds(_insert, _frac, st.binary(min_size=1, max_size=64)),
    st.builds(_delete, _frac, _small),
)
"""Truncate at a random offset, flip random bytes, splice two files, duplicate a run of
bytes (records, lines), insert random bytes, delete a run of bytes."""


# ------------------------------------------------------------------ loading


@dataclass
class Outcome:
    frame: pl.DataFrame | None
    warnings: list[str]
    error: SpikelensError | None


def load(*paths: Path) -> Outcome:
    """`spikelens.load` with warnings collected; a SpikelensError is returned, anything
    else propagates (and fails the test that called it)."""
    with diagnostics.collecting() as diag:
        try:
            frame = api.load(*paths)
        except SpikelensError as exc:
            return Outcome(None, diag.lines, exc)
    return Outcome(frame, diag.lines, None)


def per_metric(frame: pl.DataFrame) -> dict[tuple[str, str], list[tuple]]:
    """(step, value) of every (run, metric) in read order; NaN made comparable."""
    out: dict[tuple[str, str], list[tuple]] = {}
    cols = [frame[c].to_list() for c in ("run", "metric", "step", "value")]
    for run, metric, step, value in zip(*cols):
        out.setdefault((run, metric), []).append((step, "nan" if value != value else value))
    return out


W_HEADER, BLOCK, CHUNK = 7, 32 * 1024, 7
"""The .wandb framing (LevelDB log): a 7-byte file header, 32 KiB blocks, 7-byte chunk headers."""


def wandb_chunks(buf: bytes) -> list[tuple[int, int, int]]:
    """(start, end, type) of every chunk (header included), skipping block-tail padding."""
    out, pos = [], W_HEADER
    while pos < len(buf):
        block_end = (pos // BLOCK + 1) * BLOCK
        if block_end - pos < CHUNK:
            pos = block_end
            continue
        length, kind = struct.unpack_from("<HB", buf, pos + 4)
        end = pos + CHUNK + length
        if end > len(buf) or kind == 0:
            break
        out.append((pos, end, kind))
        pos = end
    return out
