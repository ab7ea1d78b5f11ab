"""Settings from `[tool.spikelens]` in pyproject.toml or a `spikelens.toml`.

Looked up from the current folder upwards (the first file that has settings wins),
or given explicitly with `--config`. Sections:

- `roles`: `{tag or glob = role}` overrides of inferred metric roles;
- `detectors`: `{CODE or kind = {param = value}}` detector parameters;
- `check`: the CI-gate policy (see `spikelens check --help`);
- `patterns`: user text-log patterns (see the text importer).

Precedence everywhere: command-line option > file > default.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib  # Python >= 3.11, as pyproject.toml requires

from .errors import ConfigError

SECTIONS = ("roles", "detectors", "check", "patterns", "analyze")


@dataclass
class Config:
    roles: dict[str, str] = field(default_factory=dict)
    detectors: dict[str, dict[str, Any]] = field(default_factory=dict)
    check: dict[str, Any] = field(default_factory=dict)
    patterns: dict[str, Any] = field(default_factory=dict)
    analyze: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def _table(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("spikelens")
    return data.get("tool", {}).get("spikelens", data)


def find_config(start: Path | None = None) -> Path | None:
    """The nearest spikelens.toml, or pyproject.toml with a [tool.spikelens] table."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in ("spikelens.toml", "pyproject.toml"):
            p = folder / name
            if p.is_file() and _table(p) is not None:
                return p
    return None


def load_config(path: str | Path | None = None, *, search: bool = True) -> Config:
    """Read settings from `path`, or the nearest config file, or defaults."""
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"{p}: config file not found")
    else:
        p = find_config() if search else None
        if p is None:
            return Config()
    table = _table(p) or {}
    unknown = sorted(set(table) - set(SECTIONS))
    if unknown:
        raise ConfigError(f"{p}: unknown [tool.spikelens] keys {unknown}; known: {list(SECTIONS)}")
    for key in SECTIONS:
        if not isinstance(table.get(key, {}), dict):
            raise ConfigError(f"{p}: [tool.spikelens.{key}] must be a table")
    return Config(path=p, **{k: dict(table.get(k, {})) for k in SECTIONS})
