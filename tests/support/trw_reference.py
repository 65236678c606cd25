"""A plain-numpy tree-reweighted BP, written independently of
``fgl.engines.graph.trw`` (dense tables, log space, parallel "flooding" updates
with damping), for cross-checking it: the same counting numbers and the
same fixed-point equations of Wainwright, Jaakkola & Willsky 2005 §5.2 on a
factor graph, so both must reach the same unique fixed point."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume
from scipy.special import logsumexp


def reference_trw(card, factors, tables, rho, damping=0.5, tol=1e-12, max_iter=20000):
    """(log Z bound, variable beliefs, factor beliefs, converged) for
    ``factors`` (variable tuples), dense log-potential ``tables`` (one
    ndarray per factor, axes in the factor's variable order) and ``rho``
    (one per factor; unary factors' is ignored)."""
    V = len(card)
    unary = [np.zeros(c) for c in card]
    big = [k for k, f in enumerate(factors) if len(f) >= 2]
    for k, f in enumerate(factors):
        if len(f) == 1:
            unary[f[0]] = unary[f[0]] + tables[k]
    const = sum(float(tables[k]) for k, f in enumerate(factors) if len(f) == 0)
    msg = {(k, v): np.full(card[v], -np.log(card[v])) for k in big for v in factors[k]}

    def log_belief(v):
        s = unary[v].copy()
        for k in big:
            if v in factors[k]:
                s = s + rho[k] * msg[(k, v)]
        return s

    def expand(vec, k, pos):
        shape = [1] * len(factors[k])
        shape[pos] = vec.size
        return vec.reshape(shape)

    def cavity_table(k):
        t = tables[k] / rho[k]
        for pos, v in enumerate(factors[k]):
            t = t + expand(log_belief(v) - msg[(k, v)], k, pos)
        return t

    converged = False
    for _ in range(max_iter):
        new = {}
        for k in big:
            t = tables[k] / rho[k]
            cav = [log_belief(v) - msg[(k, v)] for v in factors[k]]
            for pos, v in enumerate(factors[k]):
                s = t
                for p2, c in enumerate(cav):
                    if p2 != pos:
                        s = s + expand(c, k, p2)
                axes = tuple(a for a in range(len(factors[k])) if a != pos)
                m = logsumexp(s, axis=axes) if axes else s
                m = m - logsumexp(m)
                m = (1 - damping) * m + damping * msg[(k, v)]
                new[(k, v)] = m - logsumexp(m)
        change = max((np.abs(np.subtract(new[key], msg[key], where=np.isfinite(new[key]),
                                         out=np.zeros_like(new[key]))).max() for key in new),
                     default=0.0)   # (in log space: the strictest measure)
        msg = new
        if change < tol:
            converged = True
            break
    bv = []
    total = const
    for v in range(V):
        lb = log_belief(v)
        lb = lb - logsumexp(lb)
        p = np.exp(lb)
        bv.append(p)
        c = 1.0 - sum(rho[k] for k in big if v in factors[k])
        total += c * -(p * lb).sum() + (p * unary[v]).sum()
    bf = []
    for k, f in enumerate(factors):
        if len(f) == 0:
            bf.append(np.ones(1))
        elif len(f) == 1:
            bf.append(bv[f[0]])
        else:
            t = cavity_table(k)
            lp = t - logsumexp(t)
            p = np.exp(lp)
            bf.append(p)
            total += (p * tables[k]).sum() - rho[k] * (p * lp).sum()
    return total, bv, bf, converged


def dense_tables(card, factors, log_pot):
    """The flat log-potentials of ``factors`` as one dense table per factor
    (axes in the factor's variable order), as ``reference_trw`` reads them."""
    out, o = [], 0
    for f in factors:
        n = int(np.prod([card[v] for v in f]))
        out.append(log_pot[o:o + n].reshape([card[v] for v in f]))
        o += n
    return out


def assert_matches_reference(result, card, factors, log_pot, rho):
    """A TRW result (``fgl.engines.graph.trw.trw``) equals ``reference_trw``'s
    bound and beliefs (to 1e-9 and 1e-8); a case the reference does not
    converge on is skipped (hypothesis ``assume``)."""
    ref_z, ref_bv, ref_bf, ok = reference_trw(card, factors, dense_tables(card, factors, log_pot),
                                             rho, tol=1e-13)
    assume(ok)
    assert result.log_z == pytest.approx(ref_z, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(result.var_flat, np.concatenate(ref_bv), atol=1e-8)
    np.testing.assert_allclose(result.factor_beliefs,
                               np.concatenate([b.ravel() for b in ref_bf]), atol=1e-8)
