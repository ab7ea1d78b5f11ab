"""Settings from `[tool.spikelens]` in pyproject.toml or a `spikelens.toml`.

Looked up from the current folder upwards (the first file that has settings wins),
or given explicitly with `--config`. Sections:

- `roles`: `{tag or glob = role}` overrides of inferred metric roles;
- `detectors`: `{CODE or kind = {param = value}}` detector parameters;
- `check`: the CI-gate policy (see `spikelens check --help`);
- `patterns`: user text-log patterns (see the text importer).

Precedence everywhere: command-line option > file > default.

Every section, key and value is checked against this schema when the file is loaded:
a mistake is a ConfigError naming the file, the key and what is allowed (one line,
exit 2), never a traceback later nor a silently ignored setting.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib  # Python >= 3.11, as pyproject.toml requires

from .errors import ConfigError

SECTIONS = ("roles", "detectors", "check", "patterns")


@dataclass
class Config:
    roles: dict[str, str] = field(default_factory=dict)
    detectors: dict[str, dict[str, Any]] = field(default_factory=dict)
    check: dict[str, Any] = field(default_factory=dict)
    patterns: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def _table(path: Path) -> dict[str, Any] | None:
    data = _toml(path)
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("spikelens")
    return data.get("tool", {}).get("spikelens", data)


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None


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
    nested = p.name == "pyproject.toml" or isinstance(_toml(p).get("tool", {}).get("spikelens"), dict)
    validate(table, p, "tool.spikelens." if nested else "")
    return Config(path=p, **{k: dict(table.get(k, {})) for k in SECTIONS})


# ---------------------------------------------------------------- the schema

def validate(table: Any, path: Path, prefix: str = "") -> None:
    """Check every section, key and value; ConfigError `FILE: [SECTION] KEY: problem; allowed`."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{prefix.rstrip('.') or 'tool.spikelens'}] must be a table")
    for key, value in table.items():
        if key not in SECTIONS:
            raise ConfigError(f"{path}: unknown section [{prefix}{key}]; allowed: "
                              f"{', '.join(f'[{prefix}{k}]' for k in SECTIONS)}")
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: [{prefix}{key}] must be a table, not {_kind(value)}")
    where = {k: f"{path}: [{prefix}{k}]" for k in SECTIONS}
    _roles(table.get("roles", {}), where["roles"])
    _detectors(table.get("detectors", {}), where["detectors"])
    if table.get("check"):
        from .check import build_policy

        build_policy(table["check"], config_path=path)
    if table.get("patterns"):
        from .importers.patterns import user_patterns

        user_patterns(table["patterns"], path)


def _roles(roles: dict[str, Any], where: str) -> None:
    from .frame import ROLES

    for tag, role in roles.items():
        if not isinstance(role, str) or role not in ROLES:
            raise ConfigError(f"{where} {_key(tag)} = {_shown(role)}: expected a role, one of {', '.join(ROLES)}")


def _detectors(tables: dict[str, Any], where: str) -> None:
    from .detect.registry import DETECTORS

    names = sorted({c.kind for c in DETECTORS}) + sorted({c.code for c in DETECTORS})
    for name, params in tables.items():
        classes = [c for c in DETECTORS if name in (c.kind, c.code)]
        if not classes:
            raise ConfigError(f"{where} {_key(name)}: no such detector; allowed: a kind or code, "
                              f"one of {', '.join(names)}")
        if not isinstance(params, dict):
            raise ConfigError(f"{where} {_key(name)} = {_shown(params)}: expected a table "
                              f"{{parameter = value}}, e.g. {name} = {{ {next(iter(classes[0].params()), 'x')} = ... }}")
        for key, value in params.items():
            missing = [c for c in classes if key not in c.params()]
            if missing:
                known = sorted(set.intersection(*(set(c.params()) for c in classes)))
                raise ConfigError(f"{where} {name}.{_key(key)}: no such parameter; allowed: {', '.join(known)}")
            for cls in classes:
                problem = _type_problem(value, cls.params()[key])
                if problem:
                    raise ConfigError(f"{where} {name}.{_key(key)} = {_shown(value)}: expected {problem}")


def _type_problem(value: Any, default: Any) -> str | None:
    """What `value` should be, given the parameter's default (None: it fits)."""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(default, int):
        return None if isinstance(value, int) and not isinstance(value, bool) else "a whole number"
    if isinstance(default, float):
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
    if isinstance(default, (tuple, list)):
        ok = (isinstance(value, (list, tuple)) and len(value) == len(default)
              and all(_type_problem(v, d) is None for v, d in zip(value, default)))
        return None if ok else f"a list of {len(default)} numbers like {list(default)}"
    if isinstance(default, str):
        return None if isinstance(value, str) else "a string"
    return None


def _key(key: str) -> str:
    """A key as TOML would spell it (quoted when it needs quotes)."""
    import re

    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else '"' + key.replace('"', '\\"') + '"'


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, bool) else str(value).lower()
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> str:
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number",
            list: "a list"}.get(type(value), type(value).__name__)
