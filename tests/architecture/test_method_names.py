"""Nothing outside the inference-method table (``fgl/engines/graph/inference/``)
branches on an inference method's name, and nothing outside the trainers
(``fgl/learn/trainers/``, ``fgl/learn/trainer_options.py``) on a trainer's:
the engine, the registry, the compilers, the memory estimate and the
command line read what each method or trainer declares (``InferenceMethod``,
``Trainer`` and its options) instead.

Read with ``ast``: a hit is a comparison (``==``, ``!=``, ``in``, ``not
in``) between something called ``method`` (or ``trainer``) — a name or an
attribute, as ``self.method`` or ``settings.trainer`` — and a built-in
method's (trainer's) name, reported as ``path:line``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from fgl.engines.graph.inference import method_names
from fgl.learn.trainer_options import trainer_names

FGL = Path(__file__).resolve().parents[2] / "fgl"
TABLE = "fgl/engines/graph/inference/"
TRAINERS = ("fgl/learn/trainers/", "fgl/learn/trainer_options.py")


def _is_called(node: ast.expr, what: str) -> bool:
    return ((isinstance(node, ast.Name) and node.id == what)
            or (isinstance(node, ast.Attribute) and node.attr == what))


def _names_a_method(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_method(e, names) for e in node.elts)
    return False


def method_branches(tree: ast.Module, names: set[str], what: str = "method") -> list[int]:
    """The lines of ``tree`` that compare something called ``what`` with one of ``names``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_called(s, what) for s in sides) and any(_names_a_method(s, names)
                                                               for s in sides):
                found.append(node.lineno)
    return found


def _hits(names: set[str], what: str, exempt: tuple[str, ...]) -> list[str]:
    hits = []
    for path in sorted(FGL.rglob("*.py")):
        rel = path.relative_to(FGL.parent).as_posix()
        if rel.startswith(exempt):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        hits += [f"{rel}:{line}" for line in method_branches(tree, names, what)]
    return hits


def test_no_branch_on_an_inference_method_name_outside_the_table():
    hits = _hits(set(method_names()), "method", (TABLE,))
    assert not hits, ("comparisons with an inference method's name outside "
                      f"{TABLE} (declare it on the method instead):\n" + "\n".join(hits))


def test_no_branch_on_a_trainer_name_outside_the_trainers():
    hits = _hits(set(trainer_names()), "trainer", TRAINERS)
    assert not hits, ("comparisons with a trainer's name outside the trainers (declare it on "
                      "the Trainer or its options instead):\n" + "\n".join(hits))


def test_the_rule_sees_a_branch():
    tree = ast.parse('if self.method in ("auto", "trw"):\n    pass\nif method == "x":\n    pass\n'
                     'if s.trainer == "sgd":\n    pass\n')
    assert method_branches(tree, {"auto", "trw"}) == [1]
    assert method_branches(tree, {"sgd"}, "trainer") == [5]
