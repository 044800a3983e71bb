"""The load-time imports of trackway's modules form no cycle.

A module's load-time imports are the ones Python runs when it imports the module: those at
module level, outside ``if TYPE_CHECKING:`` and outside function bodies. A cycle among them
makes import order matter (a half-initialised module, an ``ImportError`` that depends on
which name a user imports first), so the graph must stay acyclic; the test names the cycle
when one appears. Imports made for type hints or inside functions may not cross the layers
either, which ``make layers`` (import-linter) checks; this test is about load order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

from tests.packages import ROOT, package_folders


def _modules(folders: dict[str, Path]) -> dict[str, tuple[Path, bool]]:
    """Every module's dotted name, its file, and whether it is a package's ``__init__``."""
    found = {}
    for package, folder in folders.items():
        for path in sorted(folder.glob("*.py")):
            is_package = path.name == "__init__.py"
            name = package if is_package else f"{package}.{path.stem}"
            found[name] = (path, is_package)
    return found


def _load_time(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run when the module runs: not in functions, not for type checkers."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                pending.extend(node.body)
            pending.extend(node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body)
            pending.extend(node.orelse)
            pending.extend(node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            pending.extend(node.body)


def load_time_graph(root: Path, prefix: str = "trackway") -> nx.DiGraph:
    """The graph of load-time imports between the modules of the packages under ``root``."""
    modules = _modules(package_folders(root))
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, (path, is_package) in modules.items():
        here = name if is_package else name.rsplit(".", 1)[0]
        for node in _load_time(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                    base = f"{anchor}.{base}" if base else anchor
                # ``from package import module`` imports the module too
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                if target.startswith(prefix) and target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


def _cycle_text(graph: nx.DiGraph) -> str | None:
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return None
    return " -> ".join([edge[0] for edge in cycle] + [cycle[-1][1]])


def test_the_load_time_imports_have_no_cycle():
    graph = load_time_graph(ROOT)
    assert graph.number_of_nodes() > 150  # every module was read, not an empty folder
    assert graph.number_of_edges() > 300
    assert _cycle_text(graph) is None, f"load-time import cycle: {_cycle_text(graph)}"


def test_the_engine_loads_without_the_layers_above_it():
    graph = load_time_graph(ROOT)
    reached = nx.descendants(graph, "trackway.engine")
    above = ("trackway.agent", "trackway.tools", "trackway.recorders", "trackway.testing")
    assert not [m for m in reached if m.startswith(above)]


def test_a_cycle_is_found_and_named(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackages = ["demo", "demo.sub"]\n'
        '[tool.setuptools.package-dir]\n"demo" = "src"\n'
    )
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "__init__.py").write_text("")
    (tmp_path / "src" / "_a.py").write_text("from .sub._b import B\n")
    (tmp_path / "src" / "sub" / "__init__.py").write_text("")
    (tmp_path / "src" / "sub" / "_b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .._c import C\n"  # for type checkers only: no edge
        "def late():\n    from .. import _c\n"  # inside a function: no edge
        "from .._a import A\n"
    )
    (tmp_path / "src" / "_c.py").write_text("from .sub._b import B\n")
    graph = load_time_graph(tmp_path, prefix="demo")
    assert set(graph.edges) == {
        ("demo._a", "demo.sub._b"),
        ("demo.sub._b", "demo._a"),
        ("demo._c", "demo.sub._b"),
    }
    assert _cycle_text(graph) in (
        "demo._a -> demo.sub._b -> demo._a",
        "demo.sub._b -> demo._a -> demo.sub._b",
    )
