"""The loopy program: a general CRF's factor graphs plus its feature table.

It answers the learner's questions with approximate inference
(Sutton & McCallum §1.4.4): Σ log Z is the Bethe approximation and the expected counts are
factor beliefs (at a BP fixed point the Bethe log Z's gradient in θ_f(x) is
b_f(x)); with hidden layers the gold side is the *clamped* program — the
same graph with the observed variables fixed — so the objective is the
marginal likelihood log Z(y, x) - log Z(x) of Sutton & McCallum eq. 1.46-1.52.
``infer exact`` swaps BP for enumeration (with its size check).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from fgl.engines import loopy
from fgl.engines.data import map_instances
from fgl.engines.factor_graph import FactorGraph
from fgl.engines.program import Decoding, Expectations, InferenceStats, Marginals
from fgl.errors import FglError


@dataclass
class LoopyData:
    """Instances as factor graphs plus the CSR of each factor's attributes."""

    graphs: list[FactorGraph]
    inst_fptr: np.ndarray   # [N+1] first factor of each instance
    fac_ptr: np.ndarray     # [F+1] CSR over fac_row / fac_val
    fac_row: np.ndarray
    fac_val: np.ndarray
    fac_tpl: np.ndarray     # [F] template of each factor
    gold: list[np.ndarray]  # per instance: gold value of each variable, -1 if hidden
    sizes: list[int]        # positions (or nodes) per instance
    instances: list = field(default_factory=list, repr=False)

    @property
    def n_sequences(self) -> int:
        return len(self.graphs)

    @property
    def n_tokens(self) -> int:
        return int(sum(self.sizes))


@njit(cache=True, nogil=True)
def _factor_tables(f0, f1, tab_ptr, fac_ptr, fac_row, fac_val, row_ptr, feat_config, w, out):
    """θ_f(x) = Σ over the factor's attributes of value · w[k] for the
    feature k with configuration x (Sutton & McCallum eq. 1.54)."""
    out[:] = 0.0
    # _feature_expectations walks the rows alike to gather beliefs; one loop for
    # scatter and gather would branch in the innermost loop
    for f in range(f0, f1):
        base = tab_ptr[f - f0]
        for j in range(fac_ptr[f], fac_ptr[f + 1]):
            r = fac_row[j]
            v = fac_val[j]
            for k in range(row_ptr[r], row_ptr[r + 1]):
                out[base + feat_config[k]] += v * w[k]


@njit(cache=True, nogil=True)
def _feature_expectations(f0, f1, tab_ptr, fac_ptr, fac_row, fac_val, row_ptr, feat_config,
                          beliefs, grad):
    """E[f_k] = Σ_factors value · b_f(configuration of k)."""
    # the walk of _factor_tables, gathering where it scatters (kept apart: one
    # loop for both would branch in the innermost loop)
    for f in range(f0, f1):
        base = tab_ptr[f - f0]
        for j in range(fac_ptr[f], fac_ptr[f + 1]):
            r = fac_row[j]
            v = fac_val[j]
            for k in range(row_ptr[r], row_ptr[r + 1]):
                grad[k] += v * beliefs[base + feat_config[k]]


@njit(cache=True, nogil=True)
def _clamp(card, f_ptr, f_var, tab_ptr, e_stride, gold, table):
    """Set θ_f(x) = -inf wherever x disagrees with an observed variable."""
    for f in range(tab_ptr.shape[0] - 1):
        for i in range(tab_ptr[f + 1] - tab_ptr[f]):
            for e in range(f_ptr[f], f_ptr[f + 1]):
                g = gold[f_var[e]]
                if g >= 0 and (i // e_stride[e]) % card[f_var[e]] != g:
                    table[tab_ptr[f] + i] = -np.inf
                    break


@dataclass
class LoopyProgram:
    """Feature k belongs to attribute row r when ``row_ptr[r] <= k <
    row_ptr[r+1]`` and weights configuration ``feat_config[k]`` of its
    factor's table."""

    row_ptr: np.ndarray
    feat_config: np.ndarray
    row_template: np.ndarray
    template_size: np.ndarray
    method: str              # "loopy" | "trp" | "exact"
    settings: dict           # the infer block, defaults filled (fgl.lang.settings)
    has_hidden: bool

    @property
    def n_features(self) -> int:
        return len(self.feat_config)

    def factor_tables(self, w: np.ndarray, data: LoopyData, i: int) -> np.ndarray:
        """The flat log-potential tables θ_f of instance i."""
        g = data.graphs[i]
        out = np.empty(g.n_table)
        _factor_tables(int(data.inst_fptr[i]), int(data.inst_fptr[i + 1]), g.tab_ptr,
                       data.fac_ptr, data.fac_row, data.fac_val, self.row_ptr, self.feat_config,
                       w, out)
        return out

    def infer(self, graph: FactorGraph, table: np.ndarray, use_max: bool = False,
              init=None) -> loopy.BPResult:
        """Run the spec's inference method on one instance."""
        s = self.settings
        if self.method == "exact":
            try:
                return loopy.exact(graph, table, int(s["max_states"]))
            except ValueError as e:
                raise FglError(f"infer exact: {e}; use `infer loopy` or `infer trp`") from None
        return loopy.belief_propagation(
            graph, table, schedule="trp" if self.method == "trp" else "flooding",
            use_max=use_max, damping=float(s.get("damping", 0.0)),  # (TRP runs undamped)
            tol=float(s["tol"]), max_iter=int(s["max_iter"]),
            trees=graph.spanning_trees(int(s["trees"])) if "trees" in s and self.method == "trp"
            else None, init=init)

    def _expect(self, w: np.ndarray, data: LoopyData, jobs: int, clamped: bool) -> Expectations:
        def work(i: int) -> tuple[loopy.BPResult, np.ndarray]:
            g = data.graphs[i]
            table = self.factor_tables(w, data, i)
            if clamped:
                _clamp(g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_stride, data.gold[i], table)
            res = self.infer(g, table)
            grad = np.zeros(self.n_features)
            _feature_expectations(int(data.inst_fptr[i]), int(data.inst_fptr[i + 1]), g.tab_ptr,
                                  data.fac_ptr, data.fac_row, data.fac_val, self.row_ptr,
                                  self.feat_config, res.factor_beliefs, grad)
            return res, grad

        results = map_instances(jobs, data.n_sequences, work)
        return Expectations(
            float(sum(r[0].log_z for r in results)),
            np.sum([r[1] for r in results], axis=0) if results else np.zeros(self.n_features),
            InferenceStats.of([r[0] for r in results]))

    def expectations(self, w: np.ndarray, data: LoopyData, jobs: int = 1) -> Expectations:
        """Σ Bethe log Z(x) and the belief-expected feature counts."""
        return self._expect(w, data, jobs, clamped=False)

    def gold_counts(self, data: LoopyData) -> np.ndarray:
        """Feature counts of the gold assignment (fully observed models)."""
        counts = np.zeros(self.n_features)
        for i, g in enumerate(data.graphs):
            onehot = np.zeros(g.n_table)
            x = data.gold[i]
            for f in range(g.n_factors):
                vs = g.factor_vars(f)
                idx = int(sum(int(x[v]) * int(s) for v, s in
                              zip(vs, g.e_stride[g.f_ptr[f]:g.f_ptr[f + 1]])))
                onehot[g.tab_ptr[f] + idx] = 1.0
            _feature_expectations(int(data.inst_fptr[i]), int(data.inst_fptr[i + 1]), g.tab_ptr,
                                  data.fac_ptr, data.fac_row, data.fac_val, self.row_ptr,
                                  self.feat_config, onehot, counts)
        return counts

    def clamped_expectations(self, w: np.ndarray, data: LoopyData, jobs: int = 1
                             ) -> Expectations:
        """The clamped program's log Z(y, x) and expected counts
        (Sutton & McCallum eq. 1.47, 1.52): the observed variables fixed to their gold
        labels, the hidden ones summed out."""
        return self._expect(w, data, jobs, clamped=True)

    def decode(self, w: np.ndarray, data: LoopyData, jobs: int = 1) -> Decoding:
        """Max-product MAP assignment of every instance's variables."""
        def work(i: int) -> loopy.BPResult:
            return self.infer(data.graphs[i], self.factor_tables(w, data, i), use_max=True)

        results = map_instances(jobs, data.n_sequences, work)
        return Decoding([r.map_state for r in results], stats=InferenceStats.of(results))

    def _beliefs(self, w: np.ndarray, data: LoopyData, jobs: int) -> list[loopy.BPResult]:
        return map_instances(jobs, data.n_sequences,
                             lambda i: self.infer(data.graphs[i], self.factor_tables(w, data, i)))

    def marginals(self, w: np.ndarray, data: LoopyData, jobs: int = 1) -> Marginals:
        """Per instance, the (approximate) marginal of every variable: a
        list of one belief vector per variable."""
        results = self._beliefs(w, data, jobs)
        return Marginals([r.var_beliefs for r in results], InferenceStats.of(results))

    def log_partition(self, w: np.ndarray, data: LoopyData, jobs: int = 1) -> np.ndarray:
        """Bethe log Z(x) of every instance (exact on trees and with
        ``infer exact``)."""
        return np.array([r.log_z for r in self._beliefs(w, data, jobs)])

