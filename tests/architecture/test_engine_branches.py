"""Nothing outside ``fgl/registry.py`` and the compile package branches on
the kind of model: the API, CLI, learners, model files, drawing and the
distributed run reach every engine through the model and program
interfaces (``fgl.model.Model``, ``fgl.engines.program.Program``) and the
capabilities each ``registry.Engine`` declares.

Read with ``ast``; a hit is one of

- a test of ``spec.segments`` (``is None``, ``is not None``, as a truth
  value, ``getattr``/``hasattr`` of it): ask the engine (``segmented``,
  ``auto_scheme``) instead;
- a comparison with an engine's name (``== "chain"``, ``in ("segments",
  ...)``);
- ``isinstance``/``issubclass`` with a model, program or encoded-data class;
- a probe of an engine's data or model by attribute (``hasattr(x,
  "edges")``, ``getattr(data, "graphs", None)``);
- an import of a model class (``ChainModel``, ``SegmentModel``,
  ``FactorGraphModel``);

each reported as ``path:line what``.  The language's own checks
(``fgl/lang/``) read the ``segments`` declaration to check it: that is the
spec, before any engine is chosen.
"""
from __future__ import annotations

import ast
from pathlib import Path

FGL = Path(__file__).resolve().parents[2] / "fgl"

EXEMPT = ("fgl/registry.py", "fgl/compile/", "fgl/lang/")
ENGINE_NAMES = {"chain", "segments", "factor graph"}
MODEL_CLASSES = {"ChainModel", "SegmentModel", "FactorGraphModel"}
ENGINE_CLASSES = MODEL_CLASSES | {
    "SequenceModel", "ChainProgram", "SegmentProgram", "FactorGraphProgram", "EncodedData",
    "FactorGraphData", "FactorGraph", "ChainStructure"}
# attributes that tell one engine's data or model from another's
PROBED = {"edges", "node_ids", "graphs", "segments", "segment_starts", "structure", "machine",
          "units_per_token", "tok_ptr"}


def _names(node: ast.expr) -> set[str]:
    """The class names an ``isinstance`` second argument mentions."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))}


def _is_segments(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "segments"


def _engine_name(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ENGINE_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_engine_name(e) for e in node.elts)
    return False


def branches(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) of every branch on the kind of model in ``tree``."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_segments(s) for s in sides) and any(
                    isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                hits.append((node.lineno, f"{ast.unparse(node)} (a test of segments)"))
            elif any(_engine_name(s) for s in sides):
                hits.append((node.lineno, f"{ast.unparse(node)} (an engine's name)"))
        elif isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)) \
                and _is_segments(node.test):
            hits.append((node.lineno, f"{ast.unparse(node.test)} (a test of segments)"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) \
                and _is_segments(node.operand):
            hits.append((node.lineno, f"{ast.unparse(node)} (a test of segments)"))
        elif isinstance(node, ast.BoolOp) and any(_is_segments(v) for v in node.values):
            hits.append((node.lineno, f"{ast.unparse(node)} (a test of segments)"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name, args = node.func.id, node.args
            if name in ("isinstance", "issubclass") and len(args) == 2 \
                    and _names(args[1]) & ENGINE_CLASSES:
                hits.append((node.lineno, f"{ast.unparse(node)} (a model, program or data "
                                          "class)"))
            elif name in ("hasattr", "getattr") and len(args) > 1 \
                    and isinstance(args[1], ast.Constant) and args[1].value in PROBED \
                    and (name == "hasattr" or len(args) == 3 or _is_segments(args[0])):
                hits.append((node.lineno, f"{ast.unparse(node)} (a probe of the engine)"))
            elif name == "getattr" and args and _is_segments(args[0]):
                hits.append((node.lineno, f"{ast.unparse(node)} (a test of segments)"))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in MODEL_CLASSES:
                    hits.append((node.lineno, f"import of {alias.name}"))
    return sorted(set(hits))


def engine_branches(root: Path = FGL) -> list[str]:
    """Every branch on the kind of model outside the exempt modules, as
    ``path:line what``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel.startswith(EXEMPT):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out += [f"{rel}:{line} {what}" for line, what in branches(tree)]
    return out


def test_no_engine_branches_outside_the_registry():
    hits = engine_branches()
    assert not hits, "branches on the kind of model outside fgl/registry.py and " \
                     "fgl/compile/:\n" + "\n".join(hits)


def test_the_scan_finds_what_it_forbids():
    source = ("from fgl.compile.sequence import ChainModel\n"
              "if spec.segments is not None: pass\n"
              "x = 1 if spec.segments else 2\n"
              "y = engine.name != 'chain'\n"
              "z = isinstance(data, (EncodedData, int))\n"
              "w = hasattr(sent, 'edges') or getattr(spec.segments, 'boundary', None)\n"
              "v = kind in ('segments', 'factor graph')\n"
              "u = spec.segments.max_length\n")
    assert [line for line, _ in branches(ast.parse(source))] == [1, 2, 3, 4, 5, 6, 6, 7]
