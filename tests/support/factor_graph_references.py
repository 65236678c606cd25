"""References for the belief-propagation tests, written apart from the
engine's kernels: the Bethe free energy of given beliefs in numpy, a
max-product decode as (assignment, score), and the factor graph as a
networkx bipartite graph (for the structure checks)."""
from __future__ import annotations

import networkx as nx
import numpy as np

from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.loopy import belief_propagation


def bethe_log_z(graph: FactorGraph, log_pot: np.ndarray, var_beliefs, factor_beliefs) -> float:
    """Σ_f Σ_x b_f(x)(θ_f(x) − log b_f(x)) + Σ_v (d_v − 1) Σ_x b_v(x) log b_v(x),
    0 log 0 = 0 (Sutton & McCallum §1.4.4); ``var_beliefs`` a list per
    variable or a flat ``var_ptr``-aligned array."""
    theta = np.asarray(log_pot, dtype=np.float64).reshape(-1)
    bf = np.asarray(factor_beliefs, dtype=np.float64).reshape(-1)
    bv = (np.asarray(var_beliefs, dtype=np.float64) if isinstance(var_beliefs, np.ndarray)
          and var_beliefs.ndim == 1 else
          np.concatenate([np.ravel(b) for b in var_beliefs]) if len(var_beliefs) else np.zeros(0))
    assert bv.shape[0] == graph.var_ptr[-1] and bf.shape[0] == graph.n_table
    on = bf > 0
    total = float(np.sum(bf[on] * (theta[on] - np.log(bf[on]))))
    for v, d in enumerate(np.diff(graph.v_ptr)):
        b = bv[graph.var_ptr[v]:graph.var_ptr[v + 1]]
        total += (d - 1) * float(np.sum(b[b > 0] * np.log(b[b > 0])))
    return total


def map_assignment(graph: FactorGraph, log_pot: np.ndarray, **kwargs) -> tuple[np.ndarray, float]:
    """Max-product BP's decode and its exact score Σ_f θ_f(y*_f); keyword
    arguments as ``belief_propagation``."""
    r = belief_propagation(graph, log_pot, use_max=True, **kwargs)
    return r.map_state, float(r.map_score)


def to_networkx(graph: FactorGraph) -> nx.Graph:
    """The bipartite graph: nodes ("v", i) and ("f", j), one edge per
    (factor, position) pair carrying its edge id as attribute ``edge``."""
    g = nx.Graph()
    g.add_nodes_from((("v", i) for i in range(graph.n_vars)), bipartite=0)
    g.add_nodes_from((("f", j) for j in range(graph.n_factors)), bipartite=1)
    for e in range(graph.n_edges):
        g.add_edge(("v", int(graph.f_var[e])), ("f", int(graph.e_fac[e])), edge=e)
    return g
