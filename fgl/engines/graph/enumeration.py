"""Exact inference by enumeration: every joint assignment of a small factor
graph scored, for exact log Z, marginals and the MAP assignment (the
definition of Sutton & McCallum §1.4.4's quantities, with no
approximation; ``infer exact`` and the oracle of the tests of the other
methods).  O(Π_v |Y_v|) time and memory, so limited by ``max_states``.
"""
from __future__ import annotations

import numpy as np

from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.loopy import BPResult, check_potentials


def exact(graph: FactorGraph, log_pot: np.ndarray, max_states: int = 1_000_000) -> BPResult:
    """Brute-force enumeration of every assignment: exact log Z, marginals and
    MAP (first maximum in lexicographic order over variables 0..V-1).
    Raises ValueError when there are more than ``max_states`` assignments."""
    log_pot = check_potentials(graph, log_pot)
    card = [int(c) for c in graph.card]
    n_states = 1
    for c in card:
        n_states *= c
    if n_states > max_states:
        raise ValueError(f"exact inference would enumerate {n_states} states "
                         f"(max_states={max_states})")
    V = len(card)
    score = np.zeros(tuple(card))
    axes_of = []
    for f in range(graph.n_factors):
        vs = [int(v) for v in graph.factor_vars(f)]
        tab = log_pot[graph.tab_ptr[f]:graph.tab_ptr[f + 1]].reshape([card[v] for v in vs])
        order = np.argsort(vs)
        shape = [1] * V
        for v in vs:
            shape[v] = card[v]
        score = score + tab.transpose(order).reshape(shape)
        axes_of.append((vs, order))
    m = score.max()
    if m == -np.inf:
        log_z = -np.inf
        p = np.zeros_like(score)
    else:
        log_z = float(m + np.log(np.exp(score - m).sum()))
        p = np.exp(score - log_z)
    var_b = [p.sum(axis=tuple(a for a in range(V) if a != v)) for v in range(V)]
    fb = np.empty(graph.n_table)
    for f, (vs, order) in enumerate(axes_of):
        keep = set(vs)
        marg = p.sum(axis=tuple(a for a in range(V) if a not in keep))
        fb[graph.tab_ptr[f]:graph.tab_ptr[f + 1]] = marg.transpose(np.argsort(order)).reshape(-1)
    flat = int(np.argmax(score))
    map_state = np.asarray(np.unravel_index(flat, score.shape), dtype=np.int64).reshape(V)
    return BPResult(log_z=float(log_z),
                    var_flat=np.concatenate([np.asarray(b, dtype=np.float64).reshape(-1)
                                             for b in var_b]) if V else np.zeros(0),
                    var_ptr=graph.var_ptr, factor_beliefs=fb, iterations=0, residual=0.0,
                    converged=True,
                    map_state=map_state, map_score=float(score.reshape(-1)[flat]))
