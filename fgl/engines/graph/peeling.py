"""The loopy core of a factor graph and the trees that hang off it, for
message passing that sweeps only where messages can still change.

Repeatedly removing a variable that has at most one factor of two or more
variables left (a leaf), and with it a factor left holding one variable,
peels every tree hanging off the graph's cycles and leaves its 2-core: the
variables on a cycle or on a path between two cycles.  A message from a
peeled tree toward the core depends on that tree's potentials alone when
every factor on the way has counting number ρ_f = 1 (so, in reweighted
message passing, the cavity n_{v->f} = exp(θ_v) Π_{g ≠ f} M_{g->v} of a
leaf does not hold M_{f->v}): one pass from the leaves inward makes those
messages final, the iterations need only visit the core, and one pass
back outward, once the core has converged, gives the trees' messages from
the core.  This is BP's exactness on trees (Koller & Friedman 2009
§10.2; Wainwright, Jaakkola & Willsky 2005 §5.2 with ρ = 1 on bridges,
which every maximal spanning forest holds) applied to the parts of a loopy
graph that are trees.  Only factors with ρ_f = 1 are peeled; a user's own
ρ < 1 on a factor keeps it, and its variables, in the core.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.graph.factor_graph import FactorGraph
from fgl.jit import njit


@njit(cache=True, nogil=True)
def peel(n_vars, f_ptr, f_var, v_ptr, v_edge, e_fac, rho):
    """(core, order, toward): the variables of the 2-core, ascending, the
    others in the order they were peeled (leaves first, so a variable comes
    after every variable of the trees it gathers messages from), and per
    variable the factor it was peeled from, the one leading toward the
    core (-1 for a core variable or one peeled alone)."""
    F = f_ptr.shape[0] - 1
    fdeg = np.zeros(F, dtype=np.int64)   # variables a factor still holds (0: gone)
    for f in range(F):
        k = f_ptr[f + 1] - f_ptr[f]
        fdeg[f] = k if k >= 2 else 0
    deg = np.zeros(n_vars, dtype=np.int64)   # factors of two or more variables left
    for v in range(n_vars):
        for j in range(v_ptr[v], v_ptr[v + 1]):
            if fdeg[e_fac[v_edge[j]]] > 0:
                deg[v] += 1
    removed = np.zeros(n_vars, dtype=np.bool_)
    order = np.empty(n_vars, dtype=np.int64)
    toward = np.full(n_vars, -1, dtype=np.int64)
    stack = np.empty(n_vars + F, dtype=np.int64)
    n_stack = 0
    for v in range(n_vars - 1, -1, -1):
        if deg[v] <= 1:
            stack[n_stack] = v
            n_stack += 1
    n_order = 0
    while n_stack > 0:
        n_stack -= 1
        v = stack[n_stack]
        if removed[v] or deg[v] > 1:
            continue
        last = -1   # the one factor v still has, if any
        for j in range(v_ptr[v], v_ptr[v + 1]):
            f = e_fac[v_edge[j]]
            if fdeg[f] > 0:
                last = f
        if last >= 0 and rho[last] != 1.0:
            continue   # (its message toward the core would depend on the core)
        removed[v] = True
        order[n_order] = v
        n_order += 1
        if last < 0:
            continue
        toward[v] = last
        fdeg[last] -= 1
        if fdeg[last] == 1:   # a leaf factor of its last variable: gone with it
            fdeg[last] = 0
            for j in range(f_ptr[last], f_ptr[last + 1]):
                u = f_var[j]
                if not removed[u]:
                    deg[u] -= 1
                    if deg[u] <= 1:   # (pushes: each variable once, then one per factor gone)
                        stack[n_stack] = u
                        n_stack += 1
    core = np.empty(n_vars - n_order, dtype=np.int64)
    k = 0
    for v in range(n_vars):
        if not removed[v]:
            core[k] = v
            k += 1
    return core, order[:n_order], toward


class SweepOrders(NamedTuple):
    """The orders in which ``fgl.engines.graph.trw`` visits a graph's
    variables: the core ascending and descending (sweeps alternate), the
    peeled variables in peeling order (inward) and reversed (outward), and
    each peeled variable's factor toward the core (``peel``): the inward
    pass renews a variable's messages from its other factors, the outward
    pass the one from that factor."""

    core: np.ndarray
    core_back: np.ndarray
    inward: np.ndarray
    outward: np.ndarray
    toward: np.ndarray


def sweep_orders(graph: FactorGraph, rho: np.ndarray) -> SweepOrders:
    """``peel`` of ``graph`` under the counting numbers ``rho`` as
    ``SweepOrders``, cached on the graph for its last ρ (the same array, or
    one with ρ = 1 on the same factors: all that the split reads)."""
    hit = graph.cache.get("sweep_orders")
    if hit is not None and (hit[0] is rho or np.array_equal(hit[1], rho == 1.0)):
        return hit[2]
    core, inward, toward = peel(graph.n_vars, graph.f_ptr, graph.f_var, graph.v_ptr,
                                graph.v_edge, graph.e_fac,
                                np.ascontiguousarray(rho, dtype=np.float64))
    orders = SweepOrders(core, core[::-1].copy(), inward, inward[::-1].copy(), toward)
    graph.cache["sweep_orders"] = (rho, rho == 1.0, orders)
    return orders


def core_and_trees(graph: FactorGraph, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(core, peeled in peeling order) of ``sweep_orders``."""
    orders = sweep_orders(graph, rho)
    return orders.core, orders.inward
