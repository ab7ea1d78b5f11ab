"""What a watch has told, kept so a watch killed and started again does not tell it twice.

The state lives in a folder of its own (`--state DIR`, else the user's cache:
`$XDG_CACHE_HOME/spikelens/watch/<hash of the watched paths>` or `~/.cache/...`), never
in the folders watched: `state.json` (the ledger of findings told, by key) written
whole, atomically, and `views/` (scratch files the CSV and JSON-lines readers parse).
Rows are not kept: a restarted watch reads the logs again from the start (the history
is needed to judge the new points) and tells only what is not in the ledger.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .. import diagnostics
from ..errors import UsageError

SCHEMA = "spikelens.watch-state/1"


def default_dir(paths: list[str]) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256("\0".join(paths).encode()).hexdigest()[:16]
    return base / "spikelens" / "watch" / digest


class WatchState:
    """The ledger on disk (see the module docstring)."""

    def __init__(self, folder: Path, paths: list[str]):
        self.folder = folder
        self.paths = paths
        self.file = folder / "state.json"
        self.views = folder / "views"

    @classmethod
    def open(cls, folder: str | os.PathLike | None, roots: list[Path]) -> "WatchState":
        paths = sorted(str(Path(p).resolve()) for p in roots)
        where = Path(folder) if folder is not None else default_dir(paths)
        resolved = where.resolve()
        for root in roots:
            r = Path(root).resolve()
            if r.is_dir() and (resolved == r or r in resolved.parents):
                raise UsageError(f"--state {where}: inside {root}, a folder being watched; "
                                 "keep the watch's state somewhere else")
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--state {where}: cannot create the folder ({exc.strerror or exc})") from None
        return cls(where, paths)

    def load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            diagnostics.warn(f"{self.file}: watch state unreadable ({exc}); starting afresh")
            return {}
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("told"), dict):
            diagnostics.warn(f"{self.file}: not a spikelens watch state; starting afresh")
            return {}
        return {k: v for k, v in data["told"].items() if isinstance(v, dict)}

    def save(self, told: dict[str, dict[str, Any]]) -> None:
        text = json.dumps({"schema": SCHEMA, "paths": self.paths, "told": told}, indent=1, sort_keys=True)
        try:
            _atomic_write_text(self.file, text)
        except OSError as exc:
            diagnostics.warn(f"{self.file}: watch state not saved ({exc.strerror or exc})")


def _atomic_write_text(path: Path, text: str) -> None:
    try:
        from ..outputs import atomic_write_text
    except ImportError:  # written beside, then renamed over: a killed watch leaves the old state whole
        tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        return
    atomic_write_text(path, text)
