"""Beliefs, the bound and its checks at a set of tree-reweighted BP
messages (``fgl.engines.graph.trw``): b_v, b_f and log Z_ρ of Wainwright,
Jaakkola & Willsky 2005 §5.2 (the module docstring of ``trw`` has the
equations), the local consistency of b_f with b_v a fixed point has
(``_factor_gap``, ``_marginal_gap``), and the cavity messages max-product back-tracking
reads.  Log space, but for the pairwise factor beliefs, which are taken
from the scaled tables of ``fgl.engines.graph.bp_scaled`` (one exponential
per variable value, not per table entry) unless they underflow."""
from __future__ import annotations

import numpy as np

from fgl.engines.graph.factor_graph import GraphArrays
from fgl.engines.vector_math import exp_neg
from fgl.jit import njit

TINY = 1e-280   # a probability-domain entry below this is redone in log space


@njit(cache=True, nogil=True, inline="always")
def variable_log_belief(v, log_pot, rho, g: GraphArrays, L, lb):
    """lb_v = Σ_{unary f ∋ v} θ_f + Σ_{other f ∋ v} ρ_f L_{f->v} (unnormalised)."""
    card, f_ptr, tab_ptr, e_fac = g.card, g.f_ptr, g.tab_ptr, g.e_fac
    v_ptr, v_edge, msg_ptr, var_ptr = g.v_ptr, g.v_edge, g.msg_ptr, g.var_ptr
    o = var_ptr[v]
    cv = card[v]
    for x in range(cv):
        lb[o + x] = 0.0
    for j in range(v_ptr[v], v_ptr[v + 1]):
        e = v_edge[j]
        f = e_fac[e]
        if f_ptr[f + 1] - f_ptr[f] == 1:
            t0 = tab_ptr[f]
            for x in range(cv):
                lb[o + x] += log_pot[t0 + x]
        else:
            r = rho[f]
            m = msg_ptr[e]
            for x in range(cv):
                lb[o + x] += r * L[m + x]


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def beliefs(pot, g: GraphArrays, L, lb, use_max, bv, bf, lcav):
    """Normalised variable and factor beliefs from the messages ``L``, and
    for sum-product the bound

        Σ_f <b_f, θ_f> + Σ_f ρ_f H(b_f) + Σ_v (1 - Σ_{f ∋ v} ρ_f) H(b_v)

    (unary factors: <b_v, θ_f> and no entropy; 0 log 0 = 0).  Returns (the
    bound, the largest disagreement of a factor's belief with its
    variables', ``_factor_gap``, each taken while the factor's belief is at
    hand), both 0 for max-product; ``pot``: ``trw.ReweightedPotentials``;
    ``lcav``: scratch of one entry per message.  A factor of two or more
    variables reads its θ at ``pot.theta_at[f]`` and *adds* its belief to
    ``bf`` there: its own table, or, tied to another factor's table
    (``table_kernels.tied_tables``), the sum of the beliefs of all the
    factors tied to it, which is all their expected counts need
    (``table_kernels.feature_expectations``) — one table in cache instead
    of one written per chain edge."""
    log_pot, rho, theta_at = pot.log_pot, pot.rho, pot.theta_at
    card, f_ptr, f_var, tab_ptr, e_fac = g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_fac
    e_stride, msg_ptr, v_ptr, v_edge, var_ptr = g.e_stride, g.msg_ptr, g.v_ptr, g.v_edge, g.var_ptr
    V = card.shape[0]
    F = f_ptr.shape[0] - 1
    ecav = np.empty(2 * card.max()) if V else np.empty(0)   # (scratch: pairwise beliefs)
    most = 1
    for f in range(F):
        t0 = tab_ptr[f]
        most = max(most, tab_ptr[f + 1] - t0)
        if theta_at[f] == t0:   # (a table of its own: beliefs are added to it)
            for i in range(t0, tab_ptr[f + 1]):
                bf[i] = 0.0
    cells = np.empty(most)   # (scratch: one factor's belief)
    total = 0.0
    worst = 0.0
    for v in range(V):
        variable_log_belief(v, log_pot, rho, g, L, lb)
        o = var_ptr[v]
        cv = card[v]
        mx = -np.inf
        for x in range(cv):
            mx = max(mx, lb[o + x])
        if mx == -np.inf:
            mx = 0.0
        z = 0.0
        for x in range(cv):
            bv[o + x] = exp_neg(lb[o + x] - mx)
            z += bv[o + x]
        h = 0.0
        lz = np.log(z)
        inv = 1.0 / z
        for x in range(cv):
            if bv[o + x] > 0.0:
                p = bv[o + x] * inv
                bv[o + x] = p
                h -= p * (lb[o + x] - mx - lz)
        c = 1.0
        for j in range(v_ptr[v], v_ptr[v + 1]):
            f = e_fac[v_edge[j]]
            if f_ptr[f + 1] - f_ptr[f] >= 2:
                c -= rho[f]
        total += c * h
    for f in range(F):
        a = f_ptr[f]
        k = f_ptr[f + 1] - a
        t0 = tab_ptr[f]
        n = tab_ptr[f + 1] - t0
        if k == 0:
            bf[t0] = 1.0
            total += log_pot[t0]
            continue
        if k == 1:
            o = var_ptr[f_var[a]]
            for x in range(n):
                b = bv[o + x]
                bf[t0 + x] = b
                if b > 0.0:
                    total += b * log_pot[t0 + x]
            continue
        for e in range(a, a + k):
            v = f_var[e]
            o = var_ptr[v]
            m = msg_ptr[e]
            for x in range(card[v]):
                t = lb[o + x]
                lcav[m + x] = -np.inf if t == -np.inf else t - L[m + x]
        th = theta_at[f]
        if k == 2:
            n0, n1, m0, m1 = card[f_var[a]], card[f_var[a + 1]], msg_ptr[a], msg_ptr[a + 1]
            share = _scaled_pairwise_belief(log_pot, pot.psi, pot.psi_at[f], th, n0, n1, lcav,
                                            m0, m1, rho[f], cells, ecav)
            if share != share:   # (NaN: underflow, redone in log space)
                share = _pairwise_belief(log_pot, th, n0, n1, lcav, m0, m1, rho[f], cells, ecav)
            total += share
            for i in range(n):
                bf[th + i] += cells[i]
            if not use_max:   # (the belief's marginals are in ecav)
                worst = max(worst, _marginal_gap(ecav, 0, n0, bv, var_ptr[f_var[a]]),
                            _marginal_gap(ecav, n0, n1, bv, var_ptr[f_var[a + 1]]))
            continue
        mx = -np.inf
        r = rho[f]
        for i in range(n):
            s = log_pot[th + i] / r
            if s > -np.inf:
                for e in range(a, a + k):
                    s += lcav[msg_ptr[e] + (i // e_stride[e]) % card[f_var[e]]]
            cells[i] = s
            mx = max(mx, s)
        z = 0.0
        for i in range(n):
            if cells[i] > -np.inf:
                z += np.exp(cells[i] - mx)
        lz = mx + np.log(z)
        for i in range(n):
            s = cells[i]
            if s > -np.inf:
                lp = s - lz
                p = np.exp(lp)
                cells[i] = p
                if p > 0.0:
                    total += p * (log_pot[th + i] - r * lp)
            else:
                cells[i] = 0.0
        for i in range(n):
            bf[th + i] += cells[i]
        if not use_max:
            worst = max(worst, _factor_gap(f, card, f_ptr, f_var, tab_ptr, e_stride, var_ptr,
                                           bv, cells, ecav))
    return (0.0, 0.0) if use_max else (total, worst)


@njit(cache=True, nogil=True, inline="always")
def _scaled_pairwise_belief(log_pot, psi, p0, t0, n0, n1, lcav, m0, m1, r, bf, c):
    """``_pairwise_belief`` from the factor's scaled table ψ_f (at p0 in
    ``psi``, ``fgl.engines.graph.bp_scaled``; θ_f at t0 in ``log_pot``,
    the belief into bf[:n0·n1]) and the exponentials of its
    two cavities: n0 + n1 exponentials (in one loop) and one logarithm
    instead of one per entry (``c``: scratch of n0 + n1, left holding the
    belief's marginals).  log b_f is θ_f/ρ_f plus the log cavities less
    log z, with log z taken at an anchor entry at least 1/(n0·n1) of z (the
    largest entry of the row of largest mass).  NaN when that entry falls
    below ``TINY`` (entries ψ_f lost to underflow might then matter):
    ``_pairwise_belief`` redoes it."""
    for k, m, n in ((0, m0, n0), (n0, m1, n1)):
        mx = -np.inf
        for x in range(n):
            mx = max(mx, lcav[m + x])
        if mx == -np.inf:
            return np.nan
        for x in range(n):
            c[k + x] = lcav[m + x] - mx
    for x in range(n0 + n1):
        c[x] = exp_neg(c[x])
    z = 0.0
    a0 = 0
    for x0 in range(n0):   # (c[x0] becomes row x0's mass once the row is made)
        c0 = c[x0]
        row = x0 * n1
        s = 0.0
        for x1 in range(n1):
            q = psi[p0 + x0 * n1 + x1] * c0 * c[n0 + x1]
            bf[row + x1] = q
            s += q
        c[x0] = s
        z += s
        if s > c[a0]:
            a0 = x0
    row = a0 * n1
    a1 = 0
    for x1 in range(1, n1):
        if bf[row + x1] > bf[row + a1]:
            a1 = x1
    top = bf[row + a1]
    if not (top >= TINY and z < np.inf):
        return np.nan
    lz = log_pot[t0 + row + a1] / r + lcav[m0 + a0] + lcav[m1 + a1] - np.log(top / z)
    return _normalised_share(n0, n1, lcav, m0, m1, r, z, lz, bf, c)


@njit(cache=True, nogil=True, inline="always")
def _pairwise_belief(log_pot, t0, n0, n1, lcav, m0, m1, r, bf, c):
    """``beliefs`` of one pairwise factor (θ_f at t0, n0 x n1, cavities at
    m0 and m1): b_f into bf[:n0·n1], and its share <b_f, θ_f> + ρ_f H(b_f)
    of the bound — one exponential per entry, no index arithmetic (``c``:
    scratch of n0 + n1, left holding the belief's marginals, as
    ``_normalised_share`` leaves them)."""
    mx = -np.inf
    for x0 in range(n0):
        for x1 in range(n1):
            s = log_pot[t0 + x0 * n1 + x1] / r + lcav[m0 + x0] + lcav[m1 + x1]
            bf[x0 * n1 + x1] = s
            mx = max(mx, s)
    z = 0.0
    for i in range(n0 * n1):
        bf[i] = np.exp(bf[i] - mx) if bf[i] > -np.inf else 0.0
        z += bf[i]
    if z == 0.0:   # (no assignment possible: the bound is -inf elsewhere)
        for x in range(n0 + n1):
            c[x] = 0.0
        return 0.0
    return _normalised_share(n0, n1, lcav, m0, m1, r, z, mx + np.log(z), bf, c)


@njit(cache=True, nogil=True, inline="always")
def _normalised_share(n0, n1, lcav, m0, m1, r, z, lz, bf, marg):
    """Divide a pairwise factor's unnormalised belief (in bf, summing to z)
    by z and return its share <b_f, θ_f> + ρ_f H(b_f) of the bound.  With
    log b_f = θ_f/ρ_f + lcav_0 + lcav_1 - lz the θ_f terms cancel:

        <b_f, θ_f> - ρ_f <b_f, log b_f> = -ρ_f (<b_0, lcav_0> + <b_1, lcav_1> - lz)

    over the belief's marginals b_0, b_1 (into ``marg``, n0 + n1): a
    multiply-add per entry and none of θ's rounding.  A row's sum is kept
    in a register and the second marginal is added to label by label
    across each row (a vector update): no sum is carried through memory
    from one entry to the next."""
    inv = 1.0 / z
    second = marg[n0:n0 + n1]
    second[:] = 0.0
    for x0 in range(n0):
        cells = bf[x0 * n1:(x0 + 1) * n1]
        s = 0.0
        for x1 in range(n1):
            p = cells[x1] * inv
            cells[x1] = p
            s += p
            second[x1] += p
        marg[x0] = s
    total = 0.0
    for x in range(n0):
        if marg[x] > 0.0:
            total += marg[x] * lcav[m0 + x]
    for x in range(n1):
        if second[x] > 0.0:
            total += second[x] * lcav[m1 + x]
    return -r * (total - lz)


@njit(cache=True, nogil=True, inline="always")
def _marginal_gap(marg, at, n, bv, o):
    """Σ_x |marg[at + x] - bv[o + x]| over a variable's n values: how far a
    factor belief's marginal is from the variable's belief."""
    gap = 0.0
    for x in range(n):
        gap += abs(marg[at + x] - bv[o + x])
    return gap


@njit(cache=True, nogil=True, inline="always")
def _factor_gap(f, card, f_ptr, f_var, tab_ptr, e_stride, var_ptr, bv, bf, marg):
    """How far the belief of factor f (over three or more variables; in
    bf[:size]) is from agreeing with its variables': the largest ``_marginal_gap`` of its
    marginals, Σ_{x_f: x_v = x} b_f(x_f), over its variables v (0 at a
    fixed point, where beliefs are locally consistent; pairwise factors'
    come with their beliefs, ``_normalised_share``).  ``marg``: scratch of
    the largest domain."""
    a, k = f_ptr[f], f_ptr[f + 1] - f_ptr[f]
    n = tab_ptr[f + 1] - tab_ptr[f]
    worst = 0.0
    for e in range(a, a + k):
        v = f_var[e]
        for x in range(card[v]):
            marg[x] = 0.0
        for i in range(n):
            marg[(i // e_stride[e]) % card[v]] += bf[i]
        worst = max(worst, _marginal_gap(marg, 0, card[v], bv, var_ptr[v]))
    return worst


@njit(cache=True, nogil=True)
def log_cavity_messages(g: GraphArrays, L, lb, out):
    """log n_{v->f} for every edge (for max-product back-tracking on a
    forest, where they are BP's variable->factor messages)."""
    card, f_ptr, f_var, msg_ptr, var_ptr, e_fac = (g.card, g.f_ptr, g.f_var, g.msg_ptr,
                                                   g.var_ptr, g.e_fac)
    for e in range(f_var.shape[0]):
        v = f_var[e]
        o = var_ptr[v]
        m = msg_ptr[e]
        for x in range(card[v]):
            t = lb[o + x]
            if f_ptr[e_fac[e] + 1] - f_ptr[e_fac[e]] < 2:
                out[m + x] = t
            else:
                out[m + x] = -np.inf if t == -np.inf else t - L[m + x]
