"""No import cycle between the modules of the workspace's packages, counting imports inside
functions and under TYPE_CHECKING: a cycle hidden by a local import is still a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for src in sorted(ROOT.glob("packages/*/src")):
        for path in src.rglob("*.py"):
            rel = path.relative_to(src).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        for t in targets:
            # importing a.b.c runs a, a.b and a.b.c (each package's __init__ first)
            while t:
                if t in known and t != name:
                    found.add(t)
                t = t.rpartition(".")[0]
    return found


def test_no_import_cycles() -> None:
    known = _modules()
    g = nx.DiGraph()
    for name, path in known.items():
        for dep in _imports(name, path, known):
            # a module is always imported after its own packages: that edge is not a cycle
            if not name.startswith(dep + "."):
                g.add_edge(name, dep)
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"
