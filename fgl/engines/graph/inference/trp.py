"""``infer trp``: belief propagation on the tree-based reparameterisation
schedule (Sutton & McCallum §1.5.1)."""
from __future__ import annotations

from typing import Any

from fgl.engines.graph.inference.loopy import acyclic_title
from fgl.engines.graph.inference.method import (
    CITE,
    ENGINE_READS,
    InferenceMethod,
    message_advice,
)
from fgl.setting_rows import POSITIVE, SettingDef, whole_number

SETTINGS = (
    # the shape of the loopy rows, by design: a table row per block and key
    SettingDef("infer trp", "max_iter", whole_number(1), 200,
               ENGINE_READS.format("TRP", "iteration limit"), "the most passes over the trees"),
    SettingDef("infer trp", "tol", POSITIVE, 1e-8,
               ENGINE_READS.format("TRP", "convergence tolerance"),
               "stop when no message changes by more than this in one pass"),
    SettingDef("infer trp", "trees", whole_number(1), None,
               ENGINE_READS.format("TRP", "number of spanning trees"),
               "the most spanning trees of the TRP schedule (Sutton & McCallum §1.5.1); "
               "absent: as many as cover every edge"),
)


def _title(settings: Any, acyclic: bool) -> str:
    return (acyclic_title(" with the TRP schedule") if acyclic else
            f"loopy belief propagation with the TRP schedule over a factor graph per instance "
            f"({CITE})")


def _run(program: Any, graph: Any, table: Any, *, use_max: bool, init: Any,
         tol: float | None, max_iter: int | None, damping: float | None) -> Any:
    from fgl.engines.graph import loopy

    s = program.settings
    return loopy.belief_propagation(
        graph, table, schedule="trp", use_max=use_max,  # (undamped but for a WarmStart's)
        damping=float(0.0 if damping is None else damping),
        tol=float(s.tol if tol is None else tol),
        max_iter=int(s.max_iter if max_iter is None else max_iter),
        trees=graph.spanning_trees(s.trees) if s.trees is not None else None, init=init)


def _describe(program: Any, graphs: list) -> list[str]:
    trees = sum(len(g.spanning_trees()) for g in graphs)
    return [f"TRP trees {trees} (the spanning trees that cover every edge)"]


METHOD = InferenceMethod("trp", _title, SETTINGS, _run,
                         advice=lambda s: message_advice(s, damping=False),
                         keeps_messages=True, messages=True, describe=_describe)
