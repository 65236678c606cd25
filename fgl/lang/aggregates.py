"""The aggregates a spec reads (``AGG(EXPR over LINKS)``), found without
compiling anything: what the compile computes per instance
(``fgl.compile.aggregates``) and what ``fgl explain`` reports."""
from __future__ import annotations

from fgl.lang import ast
from fgl.lang.builtins import expr_text


def spec_aggregates(spec: ast.Spec) -> list[ast.Aggregate]:
    """Every aggregate the spec's templates read (through named
    observations), once each."""
    return aggregates_in([e for tpl in spec.templates for e in tpl.observations], spec)


def aggregates_in(exprs: list[ast.ObsExpr], spec: ast.Spec) -> list[ast.Aggregate]:
    """Every aggregate ``exprs`` read (through the spec's named
    observations), once each."""
    named = {d.name: d.expr for d in spec.observations}
    found: dict[str, ast.Aggregate] = {}
    seen: set[str] = set()

    def walk(e) -> None:
        if isinstance(e, ast.Aggregate):
            found.setdefault(expr_text(e), e)
        elif isinstance(e, ast.NameRef) and e.name in named and e.name not in seen:
            seen.add(e.name)
            walk(named[e.name])
        elif isinstance(e, ast.Call) and e.arg is not None:
            walk(e.arg)
        elif isinstance(e, (ast.Conj, ast.Disj)):
            for p in e.parts:
                walk(p)

    for e in exprs:
        walk(e)
    return list(found.values())


def needs_documents(spec: ast.Spec) -> bool:
    """Whether an aggregate reads a token's other mentions in its document."""
    return spec.input_format != "graph" and any(a.within == "document"
                                                for a in spec_aggregates(spec))
