"""The loopy program: a general CRF's factor graphs plus its feature table.

It answers the learner's questions with approximate inference (Sutton & McCallum
§1.4.4): Σ log Z is the Bethe approximation and the expected counts are
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
from fgl.errors import FglError
from fgl.engines.factor_graph import FactorGraph
from fgl.engines.programs import cached_gold_expectations, resolve_jobs, thread_pool


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
    settings: dict
    has_hidden: bool
    stats: dict = field(default_factory=dict)

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
                return loopy.exact(graph, table, int(s.get("max_states", 1_000_000)))
            except ValueError as e:
                raise FglError(f"infer exact: {e}; use `infer loopy` or `infer trp`") from None
        return loopy.belief_propagation(
            graph, table, schedule="trp" if self.method == "trp" else "flooding",
            use_max=use_max, damping=float(s.get("damping", 0.0)),
            tol=float(s.get("tol", 1e-8)), max_iter=int(s.get("max_iter", 200)),
            trees=graph.spanning_trees(int(s["trees"])) if "trees" in s and self.method == "trp"
            else None, init=init)

    def _run(self, jobs: int, n: int, fn) -> list:
        jobs = min(resolve_jobs(jobs), max(n, 1))
        if jobs == 1:
            return [fn(i) for i in range(n)]
        return list(thread_pool(jobs).map(fn, range(n)))

    def _expect(self, w: np.ndarray, data: LoopyData, jobs: int, clamped: bool
                ) -> tuple[float, np.ndarray]:
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

        results = self._run(jobs, data.n_sequences, work)
        self.stats = _convergence([r[0] for r in results])
        return (float(sum(r[0].log_z for r in results)),
                np.sum([r[1] for r in results], axis=0) if results else np.zeros(self.n_features))

    def expectations(self, w: np.ndarray, data: LoopyData, jobs: int = 1) -> tuple[float, np.ndarray]:
        """Σ Bethe log Z(x) and the belief-expected feature counts."""
        return self._expect(w, data, jobs, clamped=False)

    def empirical_counts(self, data: LoopyData) -> np.ndarray:
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

    def gold_expectations(self, w: np.ndarray, data: LoopyData, jobs: int = 1
                          ) -> tuple[float, np.ndarray]:
        """The clamped program's log Z(y, x) and expected counts (Sutton & McCallum
        eq. 1.47, 1.52); without hidden layers, the gold score and counts."""
        if self.has_hidden:
            return self._expect(w, data, jobs, clamped=True)
        return cached_gold_expectations(self, w, data)

    def decode(self, w: np.ndarray, data: LoopyData, jobs: int = 1) -> list[np.ndarray]:
        """Max-product MAP assignment of every instance's variables."""
        def work(i: int) -> loopy.BPResult:
            return self.infer(data.graphs[i], self.factor_tables(w, data, i), use_max=True)

        results = self._run(jobs, data.n_sequences, work)
        self.stats = _convergence(results)
        return [r.map_state for r in results]

    def variable_marginals(self, w: np.ndarray, data: LoopyData) -> list[list[np.ndarray]]:
        return [self.infer(g, self.factor_tables(w, data, i)).var_beliefs
                for i, g in enumerate(data.graphs)]


def _convergence(results: list[loopy.BPResult]) -> dict:
    """Instances run, how many did not converge, the most iterations used and
    the largest final residual."""
    return {"instances": len(results),
            "not_converged": sum(not r.converged for r in results),
            "max_iterations": max((r.iterations for r in results), default=0),
            "max_residual": max((r.residual for r in results), default=0.0)}
