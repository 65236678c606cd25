"""One name per engine: the registry entry (the name ``fgl explain`` and
model files use), the model class, the program class and the program's
module all say it.  For an engine called ``segments``: the model class
``SegmentModel``, the class ``SegmentProgram`` in a module
``fgl/engines/*/segments_program.py``; for ``factor graph``:
``FactorGraphModel``, ``FactorGraphProgram`` in ``factor_graph_program.py``.

Read with ``ast`` (the program modules are not imported); each problem is
reported as ``engine: what``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from fgl import registry

ENGINES_DIR = Path(__file__).resolve().parents[2] / "fgl" / "engines"


def _classes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)}


def naming_problems(engines: tuple[registry.Engine, ...], root: Path) -> list[str]:
    """``engine: what`` for every engine whose model class, program module
    (under ``root``) or program class does not carry its name."""
    problems = []
    for engine in engines:
        stem = engine.name.replace(" ", "_")
        camel = "".join(w.capitalize() for w in engine.name.removesuffix("s").split())
        model = engine.model_class.partition(":")[2]
        if model != f"{camel}Model":
            problems.append(f"{engine.name}: model class {model}, not {camel}Model")
        modules = sorted(root.rglob(f"{stem}_program.py"))
        if not modules:
            problems.append(f"{engine.name}: no module {stem}_program.py")
        elif f"{camel}Program" not in _classes(modules[0]):
            problems.append(f"{engine.name}: no class {camel}Program in "
                            f"{modules[0].relative_to(root.parent)}")
    return problems


def test_every_engine_has_one_name():
    assert naming_problems(registry.ENGINES, ENGINES_DIR) == []


def test_a_misnamed_engine_is_reported(tmp_path):
    (tmp_path / "engines" / "sequence").mkdir(parents=True)
    (tmp_path / "engines" / "sequence" / "spans_program.py").write_text(
        "class SemiMarkovProgram:\n    pass\n", encoding="utf-8")
    engines = (registry.Engine("spans", "fgl.compile.sequence:SegmentModel", "",
                               lambda spec: None),
               registry.Engine("pairs", "fgl.compile.sequence:PairModel", "",
                               lambda spec: None))
    assert naming_problems(engines, tmp_path / "engines") == [
        "spans: model class SegmentModel, not SpanModel",
        "spans: no class SpanProgram in engines/sequence/spans_program.py",
        "pairs: no module pairs_program.py",
    ]
