"""``infer trw``: tree-reweighted belief propagation (Wainwright, Jaakkola
& Willsky 2005): a convex free energy whose log Z is an upper bound."""
from __future__ import annotations

from typing import Any

import numpy as np

from fgl.engines.graph.inference.loopy import acyclic_title
from fgl.engines.graph.inference.method import (
    CITE,
    ENGINE_READS,
    InferenceMethod,
    message_advice,
)
from fgl.setting_rows import DAMPING, POSITIVE, UNIT_INTERVAL, SettingDef, choice, whole_number

SETTINGS = (
    # the loopy rows' shape, plus its own knobs
    SettingDef("infer trw", "damping", DAMPING, 0.0,
               ENGINE_READS.format("TRW", "message damping (start)"),
               "keep this share of each old message (0: none); raised by itself when a window "
               "of sweeps does not bring the residual down"),
    SettingDef("infer trw", "max_iter", whole_number(1), 100,
               ENGINE_READS.format("TRW", "iteration limit"), "the most sweeps over the variables"),
    SettingDef("infer trw", "tol", POSITIVE, 1e-5,
               ENGINE_READS.format("TRW", "convergence tolerance"),
               "stop when no variable's belief moves by more than this in one sweep (its "
               "log belief's change weighted by the belief, or by its square root where the "
               "log changed by more than 1) and each factor's marginals agree with its "
               "variables' beliefs; training starts at 100x this (at most 1e-3) and tightens "
               "it down to this as its steps shrink"),
    SettingDef("infer trw", "forests", whole_number(1), 10,
               ENGINE_READS.format("TRW", "forests of the cover"),
               "the fewest factor forests whose shares give the appearance probabilities ρ_f "
               "(more are made until every factor is in one; Wainwright et al. 2005)"),
    SettingDef("infer trw", "rho", UNIT_INTERVAL, None,
               ENGINE_READS.format("TRW", "appearance probability override"),
               "one ρ for every factor of two or more variables instead of the cover's; the "
               "free energy stays convex when ρ·(most factors at one variable) <= 1, but only "
               "the cover's ρ make log Z an upper bound; absent: the cover's"),
    SettingDef("infer trw", "decode", choice("max_product", "marginals"), "max_product",
               ENGINE_READS.format("TRW", "MAP decoder"),
               "max_product: reweighted max-product, each variable's max-belief argmax (exact "
               "back-tracking on trees; the marginals' when it does not converge); marginals: "
               "each variable's most probable value under the TRW marginals"),
)


def _title(settings: Any, acyclic: bool) -> str:
    if acyclic:
        return acyclic_title(" (tree-reweighted, every ρ = 1 on a forest)")
    return ("tree-reweighted belief propagation over a factor graph per instance: a convex free "
            "energy whose log Z is an upper bound, convex in the weights, so training has one "
            f"optimum (Wainwright, Jaakkola & Willsky 2005; Wainwright 2006; {CITE})")


def run(program: Any, graph: Any, table: Any, *, use_max: bool, init: Any,
        tol: float | None, max_iter: int | None, damping: float | None) -> Any:
    """Tree-reweighted BP on one instance, ρ from ``program.appearance_probabilities``."""
    from fgl.engines.graph import trw

    s = program.settings
    return trw.trw(graph, table, rho=program.appearance_probabilities(graph),
                   use_max=use_max, decode=str(s.decode or "max_product"),
                   damping=float(s.damping if damping is None else damping),
                   tol=float(s.tol if tol is None else tol),
                   max_iter=int(s.max_iter if max_iter is None else max_iter), init=init)


def _describe(program: Any, graphs: list) -> list[str]:
    """Where ρ comes from, its range over the factors of two or more
    variables, how many variables the sweeps visit
    (``fgl.engines.graph.peeling``), and the decoder."""
    from fgl.engines.graph.peeling import core_and_trees

    s = program.settings
    rhos = [program.appearance_probabilities(g) for g in graphs]
    rho = [r[np.diff(g.f_ptr) >= 2] for g, r in zip(graphs, rhos)]
    rho = np.concatenate(rho) if rho else np.zeros(0)
    where = (f"rho = {s.rho:g} for every factor (given)" if s.rho is not None else
             f"ρ from a cover by at least {s.forests} factor forests per instance")
    spread = (f"; ρ min {rho.min():.3g}, mean {rho.mean():.3g}, "
              f"{int((rho < 1).sum())} of {rho.size} factors below 1" if rho.size else "")
    core = sum(len(core_and_trees(g, r)[0]) for g, r in zip(graphs, rhos))
    spread += (f"; sweeps visit the core, {core} of {sum(g.n_vars for g in graphs)} "
               f"variables (the trees hanging off it are passed once each way)")
    return [f"trw: {where}{spread}; decode by "
            + ("reweighted max-product" if s.decode == "max_product" else
               "the most probable value of each TRW marginal")]


METHOD = InferenceMethod("trw", _title, SETTINGS, run, advice=message_advice, blocks=True,
                         keeps_messages=True, convex=True, messages=True, describe=_describe)
