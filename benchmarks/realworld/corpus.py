"""The real-log corpus: manifest rows, labels and the cache they point into.

Log files never live in the tree (their licences are unchecked): the manifest names each file by
repository, path, commit and sha256, and `rebuild.py` brings them into a cache outside the tree.
Parts are written by separate collectors (`manifest.<part>.jsonl`, `labels.<part>.json`); this module
reads them all as one corpus. The held-aside third (`split == "holdout"`) was decided by a hash of the
repository name before any file was collected, so no choice of ours put a run on either side.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("SPIKELENS_REALWORLD_CACHE", Path.home() / ".cache" / "spikelens-realworld"))
SPLITS = ("dev", "holdout")
# Where the parts are read from: a new collection is kept in `incoming/` (not yet part of the corpus the
# detectors are tuned on) and scored on its own by pointing this at that folder.
PARTS = Path(os.environ.get("SPIKELENS_REALWORLD_PARTS", HERE))


def split_of(repo: str) -> str:
    """The side a repository falls on, fixed before collection: a third held aside."""
    return "holdout" if int(hashlib.sha256(repo.lower().encode()).hexdigest(), 16) % 3 == 0 else "dev"


def manifest_rows() -> list[dict]:
    rows = []
    for part in sorted(PARTS.glob("manifest.*.jsonl")):
        for line in part.read_text().splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def labelled_runs(split: str) -> list[dict]:
    """Labels of one side (or both with split='all'); a run's side is its repository's, recomputed."""
    runs = []
    for part in sorted(PARTS.glob("labels.*.json")):
        for run in json.loads(part.read_text()):
            repo = run.get("repo") or _repo_of(run)
            side = split_of(repo) if repo else run.get("split", "dev")
            if split in ("all", side):
                runs.append({**run, "split": side, "events": _placed(run, "events", part),
                             "non_events": _placed(run, "non_events", part)})
    return runs


def _placed(run: dict, key: str, part: Path) -> list[dict]:
    """A label's events whose steps are numbers (the schema's); one placed in words ("whole run",
    "epoch 3 iter 0") cannot be matched to a step, so it is left out and named on stderr, never a crash."""
    kept = []
    for e in run.get(key) or []:
        bad = [k for k in ("step", "end_step") if e.get(k) is not None and not isinstance(e[k], (int, float))]
        if bad:
            print(f"{part.name}: {run.get('id')}: {key[:-1]} {e.get('kind')} left out: {bad[0]} {e[bad[0]]!r} "
                  "is not a number", file=sys.stderr)
        else:
            kept.append(e)
    return kept


_REPO_BY_RUN: dict[str, str] | None = None


def _repo_of(run: dict) -> str | None:
    global _REPO_BY_RUN
    if _REPO_BY_RUN is None:
        _REPO_BY_RUN = {row["run"]: row["repo"] for row in manifest_rows()}
    return _REPO_BY_RUN.get(run["id"])


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
