"""The house: data flows one way. Walks every import statement in spikelens/ (module
level and inside functions: a lazy import is still a dependency) and checks that only
the renderers and the CLI import `spikelens.report`, and that no modules import each
other in a loop."""
from __future__ import annotations

import ast
from pathlib import Path

import spikelens

PACKAGE = Path(spikelens.__file__).parent
ALLOWED_REPORT_IMPORTERS = ("spikelens.report", "spikelens.cli")


def module_name(path: Path) -> str:
    parts = ("spikelens",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The module a dotted name refers to (an attribute of a module maps to the module)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(mod: str) -> set[str]:
    path = MODULES[mod]
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # `from pkg import sub` names the submodule when there is one
            names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
        else:
            continue
        for n in names:
            target = _resolve(n) if n.startswith("spikelens") else None
            if target and target != mod:
                out.add(target)
    return out


GRAPH = {m: imports_of(m) for m in MODULES}


def test_the_walk_sees_the_known_edges():
    """The walker itself: it must see relative, lazy and `from pkg import module` imports."""
    assert "spikelens.model.finding" in GRAPH["spikelens.detect.spikes"]
    assert "spikelens.pipeline.sweep" in GRAPH["spikelens.api"]  # imported inside analyze()
    assert "spikelens.diagnostics" in GRAPH["spikelens.pipeline.sweep"]
    assert "spikelens.report.json_report" in GRAPH["spikelens.cli.analyze"]


def test_only_renderers_and_cli_import_report():
    offenders = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets
                       if (t == "spikelens.report" or t.startswith("spikelens.report."))
                       and not any(m == a or m.startswith(a + ".") for a in ALLOWED_REPORT_IMPORTERS))
    assert not offenders, "\n".join(offenders)


def _one_package(comp: list[str]) -> bool:
    """A subpackage whose __init__ imports its modules, which import it back for a shared
    object (the CLI's Typer app), is how a package is put together, not a loop between
    stages; the top package is no such exception."""
    return any(p != "spikelens" and all(m == p or m.startswith(p + ".") for m in comp) for p in comp)


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), but one package's own."""
    graph = GRAPH
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 and not _one_package(comp):
                out.append(sorted(comp))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return out


def test_no_import_loop():
    found = cycles()
    assert not found, "import loops:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_a_loop_is_found_when_there_is_one(monkeypatch):
    """The cycle finder can fail: the api <-> sweep loop this layout removed is seen."""
    monkeypatch.setitem(GRAPH, "spikelens.pipeline.sweep", GRAPH["spikelens.pipeline.sweep"] | {"spikelens.api"})
    assert ["spikelens.api", "spikelens.pipeline.sweep"] in cycles()
