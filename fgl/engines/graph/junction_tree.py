"""Exact inference where it is cheap: the junction (clique) tree algorithm.

Belief propagation is exact on trees; a graph with cycles becomes a tree of
*cliques* once enough edges are added to make it chordal (Koller & Friedman
2009 ch. 10, clique trees; Sutton & McCallum §1.4.4 name the junction tree
as the exact method for general graphs whose cliques stay small).  The cost
is the size of the largest clique table — exponential in the treewidth — so
a chain with a gapped template ``(y[t-2], y[t])`` (treewidth 2) or a small
factorial CRF is exact at a price close to loopy BP's, while a document-wide
skip-chain is not and stays with BP.  The clique tree is planned once per
graph (``fgl.engines.graph.clique_tree``); this module calibrates it.

Calibration (one numba kernel for both semirings, torch-struct style)
---------------------------------------------------------------------
In log space with ⊕ = log-sum-exp (sum-product) or max (max-product):

    β_c = Σ_{f assigned to c} θ_f + Σ_{children d} μ_{d→c}        (collect)
    μ_{d→c}(s) = ⊕_{x_d : x_d[S] = s} β_d(x_d)
    log Z = ⊕ β_root,  b_root = β_root
    μ_{c→d}(s) = ⊕_{x_c : x_c[S] = s} b_c(x_c) - μ_{d→c}(s)        (distribute)
    b_d = β_d + μ_{c→d}

the Hugin form of Koller & Friedman §10.3 (belief-update message passing:
dividing out the upward message instead of re-summing the other children);
where μ_{d→c}(s) = -inf, β_d is -inf at every entry with separator s, so
the quotient is taken as -inf.  Factor and variable beliefs are the
⊕-projections of the calibrated clique beliefs (exp(b_c - log Z), summed
or maximised), normalised per block; a factor inside a larger factor, and
a variable, are read off the smaller calibrated block that holds them.

MAP (max-product): the root takes its best entry of β_root, then every
clique, parents first, the best entry of β_d among those agreeing with the
separator values its parent fixed — the variables of d outside the
separator are new by the running-intersection property, so the decoded
assignment is consistent and its score is the maximum.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.graph.clique_tree import CliqueTreeArrays, JunctionTreePlan, junction_tree_plan
from fgl.engines.graph.factor_graph import FactorGraph, GraphArrays
from fgl.engines.graph.loopy import BPResult, assignment_score, check_potentials
from fgl.jit import njit


class CalibrationWork(NamedTuple):
    """The scratch arrays of one calibration (``junction_tree``)."""

    beta: np.ndarray      # collected clique potentials β_c, clique-table layout
    belief: np.ndarray    # calibrated clique log beliefs b_c
    up: np.ndarray        # upward separator messages μ_{d→c}
    down: np.ndarray      # downward separator messages μ_{c→d}
    acc: np.ndarray       # at least the largest separator table
    idx: np.ndarray       # projection of each entry of the largest clique table
    digits: np.ndarray    # an odometer over the largest clique


# --------------------------------------------------------------------------
# kernels


@njit(cache=True, nogil=True)
def _odometer(cards, dstr, n, idx, digits):
    """idx[i] = the entry of a smaller table that entry i of a clique table
    (variables of domain sizes ``cards``, row-major, n entries) projects
    onto, each variable weighing ``dstr`` there: an odometer over the
    clique's digits, amortised one step per entry."""
    k = cards.shape[0]
    for j in range(k):
        digits[j] = 0
    s = 0
    for i in range(n):
        idx[i] = s
        j = k - 1
        while j >= 0:
            digits[j] += 1
            s += dstr[j]
            if digits[j] < cards[j]:
                break
            s -= dstr[j] * cards[j]
            digits[j] = 0
            j -= 1


@njit(cache=True, nogil=True)
def _project(src, s0, n, idx, out, use_max, acc):
    """out[s] = ⊕ of src[s0 + i] over the entries i with idx[i] = s
    (``acc``: scratch of at least len(out))."""
    m = out.shape[0]
    for s in range(m):
        out[s] = -np.inf
    for i in range(n):
        x = src[s0 + i]
        s = idx[i]
        if x > out[s]:
            out[s] = x
    if not use_max:
        for s in range(m):
            acc[s] = 0.0
        for i in range(n):
            s = idx[i]
            if out[s] > -np.inf:
                acc[s] += np.exp(src[s0 + i] - out[s])
        for s in range(m):
            if acc[s] > 0.0:
                out[s] += np.log(acc[s])


@njit(cache=True, nogil=True)
def _reduce(x, use_max):
    """⊕ of a whole block."""
    m = -np.inf
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
    if use_max or m == -np.inf:
        return m
    s = 0.0
    for i in range(x.shape[0]):
        s += np.exp(x[i] - m)
    return m + np.log(s)


@njit(cache=True, nogil=True)
def _clique_index(c, c_ptr, c_card, dptr0, dstr, ctab_ptr, idx, digits):
    """_odometer over clique c's table with strides dstr[dptr0:...]."""
    k0 = c_ptr[c]
    k = c_ptr[c + 1] - k0
    _odometer(c_card[k0:k0 + k], dstr[dptr0:dptr0 + k], ctab_ptr[c + 1] - ctab_ptr[c], idx,
              digits)


@njit(cache=True, nogil=True)
def _calibrate(log_pot, tab_ptr, t: CliqueTreeArrays, use_max, w: CalibrationWork):
    """Collect then distribute (module docstring) into ``w.beta`` and
    ``w.belief``; returns ⊕ β_root."""
    c_ptr, c_card, ctab_ptr, post, parent = t.c_ptr, t.c_card, t.ctab_ptr, t.post, t.parent
    sep_ptr, sc_dstr, sp_dptr, sp_dstr = t.sep_ptr, t.sc_dstr, t.sp_dptr, t.sp_dstr
    f_clique, f_dptr, f_dstr = t.f_clique, t.f_dptr, t.f_dstr
    beta, belief, up, down, acc, idx, digits = w
    for i in range(beta.shape[0]):
        beta[i] = 0.0
    for f in range(f_clique.shape[0]):
        c = f_clique[f]
        c0 = ctab_ptr[c]
        t0 = tab_ptr[f]
        _clique_index(c, c_ptr, c_card, f_dptr[f], f_dstr, ctab_ptr, idx, digits)
        for i in range(ctab_ptr[c + 1] - c0):
            beta[c0 + i] += log_pot[t0 + idx[i]]
    K = post.shape[0]
    for k in range(K - 1):  # collect: children before parents
        c = post[k]
        p = parent[c]
        msg = up[sep_ptr[c]:sep_ptr[c + 1]]
        _clique_index(c, c_ptr, c_card, c_ptr[c], sc_dstr, ctab_ptr, idx, digits)
        _project(beta, ctab_ptr[c], ctab_ptr[c + 1] - ctab_ptr[c], idx, msg, use_max, acc)
        _clique_index(p, c_ptr, c_card, sp_dptr[c], sp_dstr, ctab_ptr, idx, digits)
        p0 = ctab_ptr[p]
        for j in range(ctab_ptr[p + 1] - p0):
            beta[p0 + j] += msg[idx[j]]
    r = post[K - 1]
    for i in range(ctab_ptr[r], ctab_ptr[r + 1]):
        belief[i] = beta[i]
    log_z = _reduce(belief[ctab_ptr[r]:ctab_ptr[r + 1]], use_max)
    for k in range(K - 2, -1, -1):  # distribute: parents before children
        c = post[k]
        p = parent[c]
        o = sep_ptr[c]
        msg = down[o:sep_ptr[c + 1]]
        _clique_index(p, c_ptr, c_card, sp_dptr[c], sp_dstr, ctab_ptr, idx, digits)
        _project(belief, ctab_ptr[p], ctab_ptr[p + 1] - ctab_ptr[p], idx, msg, use_max, acc)
        for s in range(msg.shape[0]):
            u = up[o + s]
            msg[s] = msg[s] - u if u > -np.inf else -np.inf
        _clique_index(c, c_ptr, c_card, c_ptr[c], sc_dstr, ctab_ptr, idx, digits)
        c0 = ctab_ptr[c]
        for i in range(ctab_ptr[c + 1] - c0):
            belief[c0 + i] = beta[c0 + i] + msg[idx[i]]
    return log_z


@njit(cache=True, nogil=True)
def _beliefs(g: GraphArrays, t: CliqueTreeArrays, w: CalibrationWork, log_z, use_max, bf, bv):
    """Factor and variable (max-)marginals, each block normalised to sum 1,
    in the order of the plan's reads.  The calibrated clique log beliefs
    ``w.belief`` first become exp(b_c - log Z) in place (log Z the ⊕ of the
    root: the max for max-product), one exp per clique entry; every block
    is then the sum (max) of its source's entries."""
    f_ptr, tab_ptr, var_ptr = g.f_ptr, g.tab_ptr, g.var_ptr
    c_ptr, c_card, ctab_ptr, e_card = t.c_ptr, t.c_card, t.ctab_ptr, t.e_card
    r_dst, r_src, r_dptr, r_dstr = t.r_dst, t.r_src, t.r_dptr, t.r_dstr
    prob, idx, digits = w.belief, w.idx, w.digits
    for i in range(prob.shape[0]):
        prob[i] = 0.0 if log_z == -np.inf else np.exp(prob[i] - log_z)
    for k in range(r_dst.shape[0]):
        c = r_src[k]
        if c >= 0:
            src = prob
            s0 = ctab_ptr[c]
            n = ctab_ptr[c + 1] - s0
            cards = c_card[c_ptr[c]:c_ptr[c + 1]]
        else:
            g = ~c
            src = bf
            s0 = tab_ptr[g]
            n = tab_ptr[g + 1] - s0
            cards = e_card[f_ptr[g]:f_ptr[g + 1]]
        d = r_dst[k]
        out = bf[tab_ptr[d]:tab_ptr[d + 1]] if d >= 0 else bv[var_ptr[~d]:var_ptr[~d + 1]]
        _odometer(cards, r_dstr[r_dptr[k]:r_dptr[k] + cards.shape[0]], n, idx, digits)
        for s in range(out.shape[0]):
            out[s] = 0.0
        if use_max:
            for i in range(n):
                if src[s0 + i] > out[idx[i]]:
                    out[idx[i]] = src[s0 + i]
        else:
            for i in range(n):
                out[idx[i]] += src[s0 + i]
        total = 0.0
        for s in range(out.shape[0]):
            total += out[s]
        if total > 0.0:
            for s in range(out.shape[0]):
                out[s] /= total


@njit(cache=True, nogil=True)
def _backtrack(t: CliqueTreeArrays, w: CalibrationWork, out):
    """MAP decoding from the collect pass (module docstring)."""
    c_ptr, c_var, c_card, ctab_ptr, post = t.c_ptr, t.c_var, t.c_card, t.ctab_ptr, t.post
    s_ptr, s_var, s_sstride, sc_dstr = t.s_ptr, t.s_var, t.s_sstride, t.sc_dstr
    beta, idx, digits = w.beta, w.idx, w.digits
    for v in range(out.shape[0]):
        out[v] = -1
    K = post.shape[0]
    for k in range(K - 1, -1, -1):  # the root first, then parents before children
        c = post[k]
        target = 0
        for j in range(s_ptr[c], s_ptr[c + 1]):
            target += out[s_var[j]] * s_sstride[j]
        _clique_index(c, c_ptr, c_card, c_ptr[c], sc_dstr, ctab_ptr, idx, digits)
        c0 = ctab_ptr[c]
        best = -np.inf
        bi = -1
        for i in range(ctab_ptr[c + 1] - c0):
            if idx[i] == target and (bi < 0 or beta[c0 + i] > best):
                best = beta[c0 + i]
                bi = i
        for j in range(c_ptr[c + 1] - 1, c_ptr[c] - 1, -1):  # row-major: last fastest
            out[c_var[j]] = bi % c_card[j]
            bi //= c_card[j]


# --------------------------------------------------------------------------
# API


def _calibration_work(plan: JunctionTreePlan) -> CalibrationWork:
    """Fresh scratch arrays for one calibration by ``plan``."""
    t = plan.arrays
    n_tab = int(t.ctab_ptr[-1])
    n_sep = int(t.sep_ptr[-1])
    return CalibrationWork(np.empty(n_tab), np.empty(n_tab), np.empty(n_sep), np.empty(n_sep),
                           np.empty(plan.widest),
                           np.empty(max(plan.largest_table, 1), dtype=np.int64),
                           np.empty(max(plan.treewidth + 1, 1), dtype=np.int64))


def junction_tree(graph: FactorGraph, log_pot: np.ndarray, *, use_max: bool = False,
                  max_table: int | None = None) -> BPResult:
    """Exact sum- or max-product inference by clique-tree calibration
    (Koller & Friedman 2009 ch. 10; Sutton & McCallum §1.4.4), as a
    ``BPResult`` like ``fgl.engines.graph.enumeration.exact``'s.

    Sum-product: ``log_z`` is the exact log partition function, beliefs the
    exact marginals (each block summing to 1), ``map_state`` None.
    Max-product: beliefs are the normalised max-marginals, ``map_state`` a
    most likely assignment (back-tracking from the root clique) and
    ``log_z`` = ``map_score`` its exact score.  ``iterations`` 0, residual
    0, converged, no messages.  Raises ValueError when a clique table of the
    plan (``junction_tree_plan``) exceeds ``max_table``."""
    log_pot = check_potentials(graph, log_pot)
    plan = junction_tree_plan(graph, max_table)
    if not plan.fits(max_table):
        raise ValueError(f"the junction tree needs a clique table of {plan.largest_table} "
                         f"entries (treewidth {'>= ' if not plan.complete else ''}"
                         f"{plan.treewidth}; max_table={max_table})")
    work = _calibration_work(plan)
    g = graph
    log_z = _calibrate(log_pot, g.tab_ptr, plan.arrays, bool(use_max), work)
    bf = np.empty(g.n_table)
    bv = np.empty(int(g.var_ptr[-1]))
    _beliefs(g.arrays, plan.arrays, work, log_z, bool(use_max), bf, bv)
    map_state = None
    map_score = None
    if use_max:
        map_state = np.empty(g.n_vars, dtype=np.int64)
        _backtrack(plan.arrays, work, map_state)
        map_score = assignment_score(g, log_pot, map_state)
        log_z = map_score
    return BPResult(log_z=float(log_z), var_flat=bv, var_ptr=g.var_ptr, factor_beliefs=bf,
                    iterations=0, residual=0.0, converged=True, map_state=map_state,
                    map_score=map_score)
