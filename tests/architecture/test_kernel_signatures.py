"""No numba kernel takes more than 12 parameters: what travels together
goes as one named bundle (a ``NamedTuple`` of arrays, such as
``GraphArrays``, ``ReweightedPotentials`` or ``ChainTables``), so a call
names what it passes and a new array joins its bundle, not a dozen call
sites.  numba compiles a ``NamedTuple`` argument to its fields, so a bundle
costs nothing in the compiled loop.

Read with ``ast``: every function under ``fgl/engines`` whose decorator
mentions ``jit`` counts its positional, keyword-only and ``*args``
parameters; each hit is reported as ``path:line name (n parameters)``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from support.paths import REPO

MOST_PARAMETERS = 12


def _numba(node: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in node.decorator_list)


def _count(args: ast.arguments) -> int:
    return (len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
            + (args.vararg is not None) + (args.kwarg is not None))


def wide_kernels(root: Path) -> list[str]:
    """``path:line name (n parameters)`` of every numba kernel under
    ``root`` (``<repo>/fgl/engines``; paths from ``<repo>``) with more than
    ``MOST_PARAMETERS`` parameters."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and _numba(node):
                n = _count(node.args)
                if n > MOST_PARAMETERS:
                    hits.append(f"{path.relative_to(root.parents[1])}:{node.lineno} {node.name} "
                                f"({n} parameters)")
    return hits


def test_no_kernel_takes_more_than_12_parameters():
    hits = wide_kernels(REPO / "fgl" / "engines")
    assert not hits, ("kernels to give named bundles (a NamedTuple of what travels "
                      "together):\n" + "\n".join(hits))


def test_a_planted_wide_kernel_is_reported(tmp_path):
    pkg = tmp_path / "fgl" / "engines"
    pkg.mkdir(parents=True)
    names = ", ".join(f"a{i}" for i in range(13))
    (pkg / "kernels.py").write_text(
        "from fgl.jit import njit\n\n\n"
        f"@njit(cache=True, nogil=True)\ndef wide({names}):\n    return a0\n\n\n"
        f"@njit(cache=True)\ndef narrow({', '.join(f'a{i}' for i in range(12))}):\n"
        "    return a0\n\n\n"
        f"def plain({names}):\n    return a0\n\n\n"
        "@njit\ndef starred(a0, *rest, k=1, **more):\n    return a0\n",
        encoding="utf-8")
    assert wide_kernels(pkg) == ["fgl/engines/kernels.py:5 wide (13 parameters)"]
