"""Nothing outside the inference-method table (``fgl/engines/graph/inference/``)
branches on an inference method's name: the engine, the registry, the
compilers, the memory estimate and the command line read what each method
declares (``InferenceMethod``) instead.

Read with ``ast``: a hit is a comparison (``==``, ``!=``, ``in``, ``not
in``) between something called ``method`` (a name or an attribute, as
``self.method`` or ``settings.method``) and a built-in method's name,
reported as ``path:line``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from fgl.engines.graph.inference import method_names

FGL = Path(__file__).resolve().parents[2] / "fgl"
TABLE = "fgl/engines/graph/inference/"


def _is_method(node: ast.expr) -> bool:
    return ((isinstance(node, ast.Name) and node.id == "method")
            or (isinstance(node, ast.Attribute) and node.attr == "method"))


def _names_a_method(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_method(e, names) for e in node.elts)
    return False


def method_branches(tree: ast.Module, names: set[str]) -> list[int]:
    """The lines of ``tree`` that compare a method with a method's name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_method(s) for s in sides) and any(_names_a_method(s, names)
                                                         for s in sides):
                found.append(node.lineno)
    return found


def test_no_branch_on_an_inference_method_name_outside_the_table():
    names = set(method_names())
    hits = []
    for path in sorted(FGL.rglob("*.py")):
        rel = path.relative_to(FGL.parent).as_posix()
        if rel.startswith(TABLE):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        hits += [f"{rel}:{line}" for line in method_branches(tree, names)]
    assert not hits, ("comparisons with an inference method's name outside "
                      f"{TABLE} (declare it on the method instead):\n" + "\n".join(hits))


def test_the_rule_sees_a_branch():
    tree = ast.parse('if self.method in ("auto", "trw"):\n    pass\nif method == "x":\n    pass\n')
    assert method_branches(tree, {"auto", "trw"}) == [1]
