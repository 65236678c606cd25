"""Small modules with one job each: no function over 80 lines outside the
numba kernels (whose loops are written out on purpose), and no module over
650 lines unless its docstring says why it is one unit ("Why one module")."""
from __future__ import annotations

import ast
from pathlib import Path

from support.paths import REPO

MAX_FUNCTION = 80
MAX_MODULE = 650
WHY = "Why one module"


def _numba(node: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in node.decorator_list)


def long_functions(root: Path) -> list[str]:
    """``path:line name (n lines)`` of every function over ``MAX_FUNCTION``
    lines under ``root`` that is not a numba kernel."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _numba(node):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION:
                    hits.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                                f"({n} lines)")
    return hits


def long_modules(root: Path) -> list[str]:
    """Modules over ``MAX_MODULE`` lines whose docstring does not say why."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n > MAX_MODULE and WHY not in (ast.get_docstring(ast.parse(text)) or ""):
            hits.append(f"{path.relative_to(root.parent)} ({n} lines)")
    return hits


def test_no_function_is_over_80_lines_outside_the_kernels():
    hits = long_functions(REPO / "fgl")
    assert not hits, "functions to split into steps:\n" + "\n".join(hits)


def test_no_module_is_over_650_lines_without_saying_why():
    hits = long_modules(REPO / "fgl")
    assert not hits, (f"modules over {MAX_MODULE} lines without a '{WHY}' paragraph in their "
                      "docstring:\n" + "\n".join(hits))


def test_the_checks_find_what_they_look_for(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(90))
    (pkg / "long.py").write_text(f'"""A module."""\n\n\ndef f():\n{body}\n\n\n'
                                 f'@njit(cache=True)\ndef kernel():\n{body}\n'
                                 + "\n" * 600, encoding="utf-8")
    (pkg / "why.py").write_text(f'"""A module.\n\n{WHY}: it is one algorithm."""\n'
                                + "\n" * 700, encoding="utf-8")
    assert long_functions(pkg) == ["pkg/long.py:4 f (91 lines)"]
    assert [h.split(" (")[0] for h in long_modules(pkg)] == ["pkg/long.py"]
