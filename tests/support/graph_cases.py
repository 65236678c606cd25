"""First-order chains as factor graphs, with the chain engine's answers on
the same potentials: the cases on which the graph engines must agree with
``fgl.engines.sequence.chain``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.loopy import BPResult
from fgl.engines.sequence.chain import pattern_marginals
from fgl.engines.sequence.structure import ChainStructure

TOL = 1e-8


def chain_graph(T, n, unary=True):
    """(card, factors) of a chain of T variables of n labels: the pairs of
    neighbours, then (with ``unary``) one factor per variable."""
    factors = [[t - 1, t] for t in range(1, T)]
    if unary:
        factors += [[t] for t in range(T)]
    return [n] * T, factors


CHAIN_CASES = [(1, 3), (2, 2), (5, 3), (9, 4)]


def chain_engine_case(T: int, n: int, rng):
    """A first-order chain of T positions, n labels, as a factor graph with
    random log-potentials, and ``fgl.engines.sequence.chain``'s log Z and pattern
    marginals of the same model: patterns are every single label and every
    pair; pot[t, (a,)] = unary, pot[t, (a, b)] = pairwise potential between
    t-1 and t.  Returns (graph, log-potentials, factors, log Z, marginals)."""
    patterns = [(a,) for a in range(n)] + list(itertools.product(range(n), repeat=2))
    cs = ChainStructure.build(n, patterns)
    pot = rng.normal(size=(T, len(patterns)))
    card, factors = chain_graph(T, n)
    g = FactorGraph.from_factors(card, factors)
    lp = np.empty(g.n_table)
    for f, vs in enumerate(factors):
        block = lp[g.tab_ptr[f]:g.tab_ptr[f + 1]]
        if len(vs) == 2:       # [t-1, t], row-major (a = y_{t-1}, b = y_t)
            block[:] = pot[vs[1], n:]
        else:
            block[:] = pot[vs[0], :n]
    log_z, marg = pattern_marginals(cs, pot)
    return g, lp, factors, log_z, marg


def assert_matches_chain_engine(r: BPResult, g: FactorGraph, factors, log_z, marg) -> None:
    n = int(g.card[0])
    assert r.log_z == pytest.approx(log_z, abs=TOL)
    for t in range(g.n_vars):
        np.testing.assert_allclose(r.var_beliefs[t], marg[t, :n], atol=TOL)
    for f, vs in enumerate(factors):
        if len(vs) == 2:
            np.testing.assert_allclose(r.factor_beliefs[g.tab_ptr[f]:g.tab_ptr[f + 1]],
                                       marg[vs[1], n:], atol=TOL)
