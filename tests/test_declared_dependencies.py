"""`pip install .` alone must run `spikelens analyze`: every package a spikelens module
imports when it loads (module level, in module-level `if`/`try` too) is the standard
library, spikelens, or one of pyproject's `dependencies`; an optional extra (torch,
ray, fsspec, transformers) is imported inside the function that needs it. A test extra
that happens to be installed (pyarrow came with `.[test]` only) would otherwise hide a
missing dependency until a user runs the command."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import spikelens

PACKAGE = Path(spikelens.__file__).parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def _load_time_imports(name: str, path: Path) -> list[str]:
    """Absolute names imported when the module loads: statements at module level, in
    module-level `if`/`try` blocks too, not inside functions or `if TYPE_CHECKING`."""
    out: list[str] = []
    is_pkg = path.name == "__init__.py"

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                out.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                    out.extend([prefix] + [f"{prefix}.{a.name}" for a in node.names])
                else:
                    out.append(node.module or "")
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return out


def third_party_loaded() -> dict[str, str]:
    """Top-level package a spikelens module imports when it loads -> the first such module."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("spikelens",) + path.relative_to(PACKAGE).with_suffix("").parts
        mod = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for target in _load_time_imports(mod, path):
            top = target.split(".")[0]
            if top and top != "spikelens" and top not in sys.stdlib_module_names and top != "__future__":
                found.setdefault(top, mod)
    return found


def declared() -> set[str]:
    deps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    return {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def test_every_package_spikelens_loads_is_a_declared_dependency():
    owners = packages_distributions()
    missing = {}
    for top, where in third_party_loaded().items():
        dists = {d.lower().replace("_", "-") for d in owners.get(top, [top])}
        if not dists & declared():
            missing[top] = where
    assert not missing, f"imported when a module loads but not in [project].dependencies: {missing}"


def test_the_walk_finds_the_packages_spikelens_is_built_on():
    found = third_party_loaded()
    assert {"typer", "polars", "numpy", "rich"} <= set(found)  # pyarrow loads only with a text log (lazily)
    assert "torch" not in found and "ray" not in found  # extras load only where they are used
