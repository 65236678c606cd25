"""fgl's packages are layers: each imports only those below it, and no
module imports itself back through others.

Imports are read with ``ast`` at every level, inside functions and under
``TYPE_CHECKING`` too: a circle or a reach upwards there is one all the same.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

FGL = Path(__file__).resolve().parents[2] / "fgl"

# the faces: nothing below imports them
FACES = ("fgl.api", "fgl.cli", "fgl.estimator", "fgl.distributed")
# what ``fgl.io`` was split into, above it (docs/design.md, "Packages by concern")
ABOVE_FORMATS = ("fgl.modelfile", "fgl.evaluation", "fgl.report", "fgl.convert", "fgl.datasets")
# package -> the packages it must not import
FORBIDDEN = {
    "fgl.io": ("fgl.compile", "fgl.learn", "fgl.registry", "fgl.model") + ABOVE_FORMATS + FACES,
    "fgl.compile": ("fgl.learn",) + ABOVE_FORMATS + FACES,
    "fgl.modelfile": ("fgl.learn", "fgl.report", "fgl.evaluation", "fgl.convert", "fgl.datasets")
    + FACES,
    "fgl.learn": ("fgl.report", "fgl.evaluation", "fgl.convert", "fgl.datasets") + FACES,
    "fgl.evaluation": ("fgl.compile", "fgl.learn", "fgl.modelfile", "fgl.report") + FACES,
    "fgl.datasets": ("fgl.compile", "fgl.learn") + ABOVE_FORMATS[:-1] + FACES,
    "fgl.convert": ("fgl.compile", "fgl.learn", "fgl.modelfile", "fgl.evaluation", "fgl.report",
                    "fgl.datasets") + FACES,
    "fgl.report": ("fgl.learn", "fgl.convert", "fgl.datasets") + FACES,
    "fgl.lang": ("fgl.features", "fgl.io"),
    "fgl.features": ("fgl.io",),
    "fgl.engines": ("fgl.api", "fgl.learn", "fgl.compile", "fgl.io", "fgl.lang", "fgl.features",
                    "fgl.cli", "fgl.distributed", "fgl.registry", "fgl.model", "fgl.estimator"),
}
# the bottom layer: package -> all it may import of fgl besides itself
ONLY = {
    "fgl.errors": (),
    "fgl.sizes": ("fgl.errors",),
    "fgl.data": ("fgl.errors", "fgl.sizes"),
}


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name (a package
    by its own name, for its ``__init__.py``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(node: ast.Import | ast.ImportFrom, here: str, is_package: bool,
             modules: dict[str, Path]) -> list[str]:
    """The modules of ``modules`` that one import statement of ``here`` imports."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    base = node.module or ""
    if node.level:   # relative: from the package of ``here``
        package = here.split(".")
        package = package if is_package else package[:-1]
        package = package[:len(package) - node.level + 1]
        base = ".".join(package + ([base] if base else []))
    found = []
    for alias in node.names:
        if f"{base}.{alias.name}" in modules:
            found.append(f"{base}.{alias.name}")
        elif base in modules:
            found.append(base)
    return found


def import_graph(root: Path) -> nx.DiGraph:
    """Modules of the package at ``root`` and who imports whom; each edge
    keeps the ``file:line`` of its import statements in ``at`` (the file
    relative to the folder holding ``root``)."""
    modules = module_names(root)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        file = path.relative_to(root.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(node, name, is_package, modules):
                if target == name:
                    continue
                if not graph.has_edge(name, target):
                    graph.add_edge(name, target, at=[])
                at = graph.edges[name, target]["at"]
                if f"{file}:{node.lineno}" not in at:
                    at.append(f"{file}:{node.lineno}")
    return graph


def circles(graph: nx.DiGraph) -> list[str]:
    """One circle per group of modules that import each other, as
    ``a (file:line) -> b (file:line) -> a``, followed by the whole group
    when it holds more modules than the circle."""
    found = []
    for group in nx.strongly_connected_components(graph):
        if len(group) < 2:
            continue
        cycle = nx.find_cycle(graph.subgraph(group))
        text = (" -> ".join(f"{a} ({graph.edges[a, b]['at'][0]})" for a, b in cycle)
                + f" -> {cycle[0][0]}")
        if len(group) > len(cycle):
            text += f" (the group: {', '.join(sorted(group))})"
        found.append(text)
    return sorted(found)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def reaches_up(graph: nx.DiGraph, forbidden: dict[str, tuple[str, ...]],
               only: dict[str, tuple[str, ...]], top: str = "fgl") -> list[str]:
    """Every import that breaks the layers, as ``file:line: a imports b``:
    a module of a ``forbidden`` key importing one of its packages, or of an
    ``only`` key importing a module of ``top`` outside itself and its list."""
    found = []
    for a, b, at in graph.edges(data="at"):
        for package, below in forbidden.items():
            if _within(a, package) and any(_within(b, p) for p in below):
                found += [f"{line}: {a} imports {b}" for line in at]
        for package, allowed in only.items():
            if (_within(a, package) and _within(b, top) and not _within(b, package)
                    and not any(_within(b, p) for p in allowed)):
                found += [f"{line}: {a} imports {b}" for line in at]
    return sorted(set(found))


# ---------------------------------------------------------------- fgl itself

def test_no_import_circle():
    found = circles(import_graph(FGL))
    assert not found, "modules that import each other:\n" + "\n".join(found)


def test_packages_import_only_the_layers_below():
    found = reaches_up(import_graph(FGL), FORBIDDEN, ONLY)
    assert not found, "imports that reach up a layer:\n" + "\n".join(found)


def test_the_graph_sees_fgl_imports():
    graph = import_graph(FGL)
    assert graph.has_edge("fgl.io.conll", "fgl.data.sentence")
    assert graph.has_edge("fgl.lang.parser", "fgl.data.inputs")   # inside a function


# ---------------------------------------------------------------- the checks can fail

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_planted_circle_is_reported(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from pkg.high.b import B\n",
        "high/__init__.py": "",
        "high/b.py": "def f():\n    from pkg.low import a\n",
        "alone.py": "import pkg.low.a\n",
    })
    graph = import_graph(root)
    assert set(graph.edges) == {("pkg.low.a", "pkg.high.b"), ("pkg.high.b", "pkg.low.a"),
                                ("pkg.alone", "pkg.low.a")}
    (found,) = circles(graph)
    assert found in ("pkg.low.a (pkg/low/a.py:3) -> pkg.high.b (pkg/high/b.py:2) -> pkg.low.a",
                     "pkg.high.b (pkg/high/b.py:2) -> pkg.low.a (pkg/low/a.py:3) -> pkg.high.b")


def test_a_planted_reach_up_is_reported(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "base/__init__.py": "",
        "base/x.py": "from pkg import errors\nfrom . import y\nfrom ..top import z\n",
        "base/y.py": "",
        "top/__init__.py": "",
        "top/z.py": "import pkg.base.y\n",
    })
    graph = import_graph(root)
    assert set(graph.edges) == {("pkg.base.x", "pkg.errors"), ("pkg.base.x", "pkg.base.y"),
                                ("pkg.base.x", "pkg.top.z"), ("pkg.top.z", "pkg.base.y")}
    assert not circles(graph)
    found = reaches_up(graph, {"pkg.base": ("pkg.top",)}, {"pkg.base": ("pkg.errors",)}, "pkg")
    assert found == ["pkg/base/x.py:3: pkg.base.x imports pkg.top.z"]   # (by both rules)
    allowed = {"pkg.base": ("pkg.errors", "pkg.top")}
    assert not reaches_up(graph, {"pkg.top": ("pkg.nothing",)}, allowed, "pkg")


# what splitting ``fgl.io`` by concern is for: each planted import is one a
# concern must not make (formats -> compile or learn; learn -> drawing or
# evaluation; model files -> learn, which would close learn -> modelfile)
PLANTED = [("fgl.io.conll", "fgl.compile.sequence"), ("fgl.io.graphs", "fgl.learn.learner"),
           ("fgl.learn.checkpoint", "fgl.report.draw"),
           ("fgl.learn.learner", "fgl.evaluation.evaluate"),
           ("fgl.modelfile.model_files", "fgl.learn.checkpoint")]


@pytest.fixture(scope="module")
def fgl_graph() -> nx.DiGraph:
    return import_graph(FGL)


@pytest.mark.parametrize("importer, imported", PLANTED)
def test_a_planted_import_across_the_concerns_is_reported(fgl_graph, importer, imported):
    graph = fgl_graph.copy()
    assert importer in graph and imported in graph and not graph.has_edge(importer, imported)
    line = importer.replace(".", "/") + ".py:1"
    graph.add_edge(importer, imported, at=[line])
    assert reaches_up(graph, FORBIDDEN, ONLY) == [f"{line}: {importer} imports {imported}"]


def test_model_files_importing_learn_would_be_a_circle(fgl_graph):
    graph = fgl_graph.copy()
    graph.add_edge("fgl.modelfile.model_files", "fgl.learn.checkpoint",
                   at=["fgl/modelfile/model_files.py:1"])
    assert any("fgl.learn.checkpoint" in c and "fgl.modelfile.model_files" in c
               for c in circles(graph))
