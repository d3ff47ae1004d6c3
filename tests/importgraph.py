"""The import graph of a package read from its source with ast: every import, at module level
or inside a function, and apart from them the type-only ones (under `if TYPE_CHECKING:`),
which never run. The circle test in test_layers.py stands on it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Graph:
    """Edges module -> the modules it imports: `run` (run-time), `typed` (type-only)."""

    modules: set[str] = field(default_factory=set)
    run: dict[str, set[str]] = field(default_factory=dict)
    typed: dict[str, set[str]] = field(default_factory=dict)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, typed: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import statement of the tree, and whether it sits under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, typed
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), typed)
        else:
            yield from _imports(node, typed)


def _targets(node: ast.Import | ast.ImportFrom, me: str, is_package: bool, modules: set[str]) -> set[str]:
    """The package's modules an import statement loads (the deepest module each name is)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = me.split(".") if is_package else me.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        # a name that is a module loads that module; any other is read from the package
        names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
    out = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != me:
            out.add(name)
    return out


def build(root: Path) -> Graph:
    """The graph of the package at `root` (a folder with __init__.py)."""
    files = {_module_name(root, p): p for p in sorted(root.rglob("*.py"))}
    graph = Graph(modules=set(files))
    for me, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        run, typed = graph.run.setdefault(me, set()), graph.typed.setdefault(me, set())
        for node, type_only in _imports(tree):
            (typed if type_only else run).update(
                _targets(node, me, path.name == "__init__.py", graph.modules)
            )
    return graph


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def with_parents(edges: dict[str, set[str]], modules: set[str]) -> dict[str, set[str]]:
    """Importing `a.b.c` runs `a/__init__` and `a/b/__init__` first: those edges too."""
    out = {m: set(t) for m, t in edges.items()}
    for m, targets in edges.items():
        for t in targets:
            out[m].update(p for p in _parents(t) if p in modules and p != m and not m.startswith(p + "."))
    return out


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)
