"""Training objectives for general CRFs that need no inference in the loop.

Sutton & McCallum (§1.4.4, citing Sutton & McCallum 2005 and Besag 1975)
name two alternatives to the Bethe/BP likelihood for factor graphs, each a
sum of local, exactly normalised terms — so each is convex, costs one pass
over the factor tables per evaluation, and cannot fail the line search by
a message-passing error:

* **piecewise**: every factor normalised on its own,
  ℓ_PW(w) = Σ_f [θ_f(y_f) - log Σ_{x_f} exp θ_f(x_f)];
* **pseudo-likelihood**: every variable given its neighbours' gold labels,
  ℓ_PL(w) = Σ_v [S_v(y_v) - log Σ_x exp S_v(x)], S_v(x) = Σ_{f ∋ v}
  θ_f(y_f with v set to x).

The objective minimised is -ℓ + Σ_k w_k² / (2σ_k²); its gradient is the
local expectations minus the gold counts (each factor's gold counts once
per variable it holds, for pseudo-likelihood) plus w/σ².  Decoding still
runs max-product BP/TRP.  Both need every variable observed in training.
"""
from __future__ import annotations

import numpy as np

from fgl import stopping
from fgl.engines import parallel
from fgl.engines.graph.factor_graph_program import FactorGraphData, FactorGraphProgram
from fgl.engines.parallel import blocks, ordered_reduce, resolve_jobs
from fgl.errors import FglError
from fgl.jit import njit
from fgl.learn.objective import ExactObjective, add_prior, inverse_variance


@njit(cache=True, nogil=True)
def _piecewise(table, tab_ptr, gold_index, local):
    """ℓ_PW of one instance; ``local`` receives each factor's softmax."""
    total = 0.0
    for f in range(tab_ptr.shape[0] - 1):
        a, b = tab_ptr[f], tab_ptr[f + 1]
        m = -np.inf
        for i in range(a, b):
            m = max(m, table[i])
        z = 0.0
        for i in range(a, b):
            z += np.exp(table[i] - m)
        lse = m + np.log(z)
        for i in range(a, b):
            local[i] = np.exp(table[i] - lse)
        total += table[a + gold_index[f]] - lse
    return total


@njit(cache=True, nogil=True)
def _pseudo_likelihood(table, gold, card, tab_ptr, e_fac, e_stride, v_ptr, v_edge,
                       gold_index, local):
    """ℓ_PL of one instance; ``local[f, c]`` receives Σ over f's variables v
    of P(x_v | gold neighbours) at the configuration c that is gold but for
    v's value."""
    local[:] = 0.0
    total = 0.0
    scores = np.empty(card.max() if card.shape[0] else 1)
    for v in range(card.shape[0]):
        c = card[v]
        scores[:c] = 0.0
        for j in range(v_ptr[v], v_ptr[v + 1]):
            e = v_edge[j]
            f, st = e_fac[e], e_stride[e]
            base = tab_ptr[f] + gold_index[f] - gold[v] * st
            for x in range(c):
                scores[x] += table[base + x * st]
        m = -np.inf
        for x in range(c):
            m = max(m, scores[x])
        z = 0.0
        for x in range(c):
            z += np.exp(scores[x] - m)
        lse = m + np.log(z)
        total += scores[gold[v]] - lse
        for j in range(v_ptr[v], v_ptr[v + 1]):
            e = v_edge[j]
            f, st = e_fac[e], e_stride[e]
            base = tab_ptr[f] + gold_index[f] - gold[v] * st
            for x in range(c):
                local[base + x * st] += np.exp(scores[x] - lse)
    return total


class LocalObjective(ExactObjective):
    """-ℓ(w) + prior and its gradient for a factor-graph program, with ℓ
    the piecewise or the pseudo-likelihood (``kind``)."""

    KINDS = ("piecewise", "pseudo_likelihood")

    def __init__(self, kind: str, program: FactorGraphProgram, data: FactorGraphData,
                 sigma: np.ndarray, jobs: int = 0):
        if kind not in self.KINDS:
            raise ValueError(f"unknown local objective '{kind}'")
        if program.has_hidden:
            raise FglError(f"train objective '{kind}' needs every variable observed; a spec "
                           "with hidden layers trains by the marginal likelihood (remove the "
                           "objective setting)")
        self.kind, self.program, self.data = kind, program, data
        self.jobs = resolve_jobs(jobs)
        self.inv_var = inverse_variance(sigma)
        self.gold_index = [program.gold_configurations(data, i) for i in range(data.n_sequences)]
        self.gold_counts = np.zeros(program.n_features)
        for i, g in enumerate(data.graphs):  # gold counts, once per term that holds them
            onehot = np.zeros(g.n_table)
            arity = np.diff(g.f_ptr) if kind == "pseudo_likelihood" else np.ones(g.n_factors)
            onehot[g.tab_ptr[:-1] + self.gold_index[i]] = arity
            program.add_counts(data, i, onehot, self.gold_counts)

    def _instance(self, w: np.ndarray, i: int, counts: np.ndarray) -> float:
        g, data = self.data.graphs[i], self.data
        table = self.program.factor_tables(w, data, i)
        local = np.empty(g.n_table)
        if self.kind == "piecewise":
            ll = _piecewise(table, g.tab_ptr, self.gold_index[i], local)
        else:
            ll = _pseudo_likelihood(table, data.gold[i], g.card, g.tab_ptr, g.e_fac, g.e_stride,
                                    g.v_ptr, g.v_edge, self.gold_index[i], local)
        self.program.add_counts(data, i, local, counts)
        return ll

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        # blocks fixed by the data, their sums added in order: the same bits for any jobs
        # (fgl.engines.parallel.ordered_reduce)
        cuts = blocks(np.concatenate([[0], np.cumsum([g.n_table for g in self.data.graphs])]),
               parallel.GRAPH_BLOCK_COST)
        grad = np.zeros(self.program.n_features)
        total = [0.0]

        def compute(k: int, counts: np.ndarray) -> tuple[float, np.ndarray]:
            stopping.check()   # (between blocks: a training run's stop request)
            counts.fill(0.0)
            return sum(self._instance(w, i, counts) for i in range(*cuts[k])), counts

        def combine(k: int, result: tuple[float, np.ndarray]) -> None:
            total[0] += result[0]
            np.add(grad, result[1], out=grad)

        ordered_reduce(self.jobs, len(cuts), compute, combine,
                       lambda: (np.zeros(self.program.n_features),))
        ll = total[0]
        grad -= self.gold_counts
        prior = add_prior(grad, w, self.inv_var) if len(w) else 0.0
        return float(-ll + prior), grad
