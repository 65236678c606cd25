"""``infer loopy``: belief propagation on the flooding schedule (Sutton &
McCallum §1.4.4; the Bethe approximation on graphs with cycles)."""
from __future__ import annotations

from typing import Any

from fgl.engines.graph.inference.method import (
    CITE,
    ENGINE_READS,
    InferenceMethod,
    message_advice,
)
from fgl.setting_rows import DAMPING, POSITIVE, SettingDef, choice, whole_number

SETTINGS = (
    SettingDef("infer loopy", "damping", DAMPING, 0.0,
               ENGINE_READS.format("loopy", "message damping"),
               "keep this share of each old message (0: none)"),
    # these rows and the TRP ones share a shape by design: a table row per block and key
    SettingDef("infer loopy", "max_iter", whole_number(1), 200,
               ENGINE_READS.format("loopy", "iteration limit"), "the most passes of the schedule"),
    SettingDef("infer loopy", "tol", POSITIVE, 1e-8,
               ENGINE_READS.format("loopy", "convergence tolerance"),
               "stop when no message changes by more than this in one pass"),
    SettingDef("infer loopy", "schedule", choice("flooding"), None, "nothing (refused)",
               "the message schedule",
               refusal="only the flooding schedule exists for `infer loopy` (use `infer trp` "
                       "for tree schedules; residual BP is not implemented)"),
)


def acyclic_title(how: str) -> str:
    """Belief propagation (``how``) on instances without a cycle: exact."""
    return (f"belief propagation{how} over a factor graph per instance, exact here: every "
            f"instance is a tree or forest, with no cycle to make it loopy ({CITE})")


def _title(settings: Any, acyclic: bool) -> str:
    return (acyclic_title("") if acyclic else
            f"loopy belief propagation over a factor graph per instance ({CITE})")


def _run(program: Any, graph: Any, table: Any, *, use_max: bool, init: Any,
         tol: float | None, max_iter: int | None, damping: float | None) -> Any:
    from fgl.engines.graph import loopy

    s = program.settings
    return loopy.belief_propagation(
        graph, table, schedule="flooding", use_max=use_max,
        damping=float((s.damping or 0.0) if damping is None else damping),
        tol=float(s.tol if tol is None else tol),
        max_iter=int(s.max_iter if max_iter is None else max_iter), init=init)


METHOD = InferenceMethod(
    "loopy", _title, SETTINGS, _run,
    advice=lambda s: message_advice(s, also=("the tree schedule `infer trp`",)),
    keeps_messages=True, messages=True)
