"""One sweep of tree-reweighted BP (``fgl.engines.graph.trw``) over a list
of variables: each visit renews the messages into one variable from the
cavities of its factors' other variables (the norm-product order of Hazan
& Shashua 2010, §5), in the probability domain of
``fgl.engines.graph.bp_scaled``, and keeps the account of selective sweeps
(``_spread``).  The schedule, the log-space fallback and the stopping rule
are ``trw``'s.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.graph import bp_scaled
from fgl.engines.graph.factor_graph import GraphArrays
from fgl.engines.graph.loopy import normalise_log
from fgl.engines.graph.trw_beliefs import TINY
from fgl.engines.graph.trw_potentials import ReweightedPotentials
from fgl.engines.vector_math import exp_neg, log_pos
from fgl.jit import njit


class SweepScratch(NamedTuple):
    """The scratch arrays of one TRW run's kernels, as one argument
    (``fgl.engines.graph.trw.propagate_into`` makes them for its graph):
    per message, ``lcav`` (log cavities) and ``cav`` (their exponentials);
    per variable, ``seen`` (the variables a sweep visited); per edge,
    ``pending`` (the messages a sweep left to ``trw``'s log-space update);
    per value of the widest variable, ``out`` (twice), ``new`` and ``acc``
    (a message in the making; ``acc`` is also ``sweep``'s log belief of a
    variable before its visit); per entry of the largest table, ``tmp``;
    per variable of the widest factor, ``digits`` (a table walk's
    counter); per slot and value of the busiest variable, ``moved`` and
    ``vals`` (twice), and per slot ``slots`` (twice; ``sweep``)."""

    lcav: np.ndarray
    cav: np.ndarray
    seen: np.ndarray
    pending: np.ndarray
    out: np.ndarray
    new: np.ndarray
    acc: np.ndarray
    tmp: np.ndarray
    digits: np.ndarray
    moved: np.ndarray
    vals: np.ndarray
    slots: np.ndarray


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def sweep(visit, toward, mode, pot: ReweightedPotentials, g: GraphArrays, L, lb, use_max, damping,
          stale, eps, work: SweepScratch):
    """One sweep (module docstring) over the variables ``visit``, in
    their order, and the messages into them that need neither
    log space nor a recomputed belief -- every one, as a rule -- written out
    in one loop body: no call passes arrays, so no reference counting runs
    per message.  The others (a message entry underflowing, or one that is
    or was 0) are left untouched and listed in ``work.pending`` for
    ``_update_message``; returns (how many are pending, how many variables
    were visited, listed in ``work.seen``).  ``mode`` 0 renews every message
    into a variable v; 1 (a tree's inward pass) all but the one from
    ``toward[v]``, 2 (its outward pass) only that one.

    A visit takes the exponentials of all its pairwise factors' cavities
    in one loop, then the logarithms of all its new messages in another
    (``fgl.engines.vector_math``: SIMD code, where libm's are a call per
    value); the messages into v depend on the other variables' cavities
    alone, so computing them all before committing any changes nothing.
    ``work.vals`` and ``work.slots``: scratch of twice v's degree times its
    domain, and twice its degree (per slot of v: where its cavity is, -1
    for a factor of three or more variables, -2 for one not renewed; then
    where its new message is, -1 for none).

    Selective sweeps (when ``stale`` is not empty): a variable is visited
    only when ``stale``, what its inputs have moved since its last visit,
    reaches ``eps``; a visit resets it and adds to each neighbour's the
    range over values of the change of the visited variable's cavity
    toward their shared factor (``_spread``).  With ``eps`` 0 every
    variable is visited and no account kept.  ``work.moved`` and
    ``work.acc``: scratch of a variable's message changes and log belief."""
    psi, psi_at, rho = pot.psi, pot.psi_at, pot.rho
    card, f_ptr, f_var, e_fac = g.card, g.f_ptr, g.f_var, g.e_fac
    msg_ptr, v_ptr, v_edge, var_ptr = g.msg_ptr, g.v_ptr, g.v_edge, g.var_ptr
    cav, out, digits, pending, seen = work.cav, work.out, work.digits, work.pending, work.seen
    moved, before, vals, slots = work.moved, work.acc, work.vals, work.slots
    V = visit.shape[0]
    track = stale.shape[0] > 0 and eps > 0.0   # (eps 0: every variable is visited)
    half = vals.shape[0] // 2   # (cavities in vals[:half], new messages in vals[half:])
    deg = slots.shape[0] // 2   # (per slot of v: its cavity's offset, then its message's)
    n_pending = 0
    n_seen = 0
    for k in range(V):
        v = visit[k]
        if track:
            if stale[v] < eps:
                continue
            stale[v] = 0.0
            for x in range(card[v]):
                before[x] = lb[var_ptr[v] + x]
        seen[n_seen] = v
        n_seen += 1
        o = var_ptr[v]
        cv = card[v]
        j0 = v_ptr[v]
        j1 = v_ptr[v + 1]
        nc = 0   # cavities of the pairwise factors' other variables, log, shifted to max 0
        for j in range(j0, j1):
            e = v_edge[j]
            f = e_fac[e]
            a = f_ptr[f]
            n = f_ptr[f + 1] - a
            if n < 2 or (mode != 0 and (f == toward[v]) == (mode == 1)):
                slots[j - j0] = -2   # (not renewed in this pass)
                continue
            if n > 2:
                slots[j - j0] = -1   # (cavities taken in place, below)
                continue
            s = a + 1 if e == a else a
            ou = var_ptr[f_var[s]]
            mu = msg_ptr[s]
            cu = card[f_var[s]]
            mx = -np.inf
            for x in range(cu):
                t = lb[ou + x]
                t = -np.inf if t == -np.inf else t - L[mu + x]
                vals[nc + x] = t
                mx = max(mx, t)
            if mx == -np.inf:   # (no value possible: all ones, as the messages had)
                for x in range(cu):
                    vals[nc + x] = 0.0
            else:
                for x in range(cu):
                    vals[nc + x] -= mx
            slots[j - j0] = nc
            nc += cu
        for i in range(nc):
            vals[i] = exp_neg(vals[i])
        nm = 0   # the new messages, normalised, at vals[half + nm:]
        for j in range(j0, j1):
            slots[deg + j - j0] = -1
            at = slots[j - j0]
            if at == -2:
                continue
            e = v_edge[j]
            f = e_fac[e]
            a = f_ptr[f]
            n = f_ptr[f + 1] - a
            m = msg_ptr[e]
            if at >= 0:
                s = a + 1 if e == a else a
                bp_scaled.pairwise_message(psi, psi_at[f], cv, card[f_var[s]], e == a, vals, at,
                                           use_max, out)
            else:
                for s in range(a, a + n):   # cavities of f's other variables, in place
                    if s == e:
                        continue
                    u = f_var[s]
                    ou = var_ptr[u]
                    mu = msg_ptr[s]
                    mx = -np.inf
                    for x in range(card[u]):
                        t = lb[ou + x]
                        t = -np.inf if t == -np.inf else t - L[mu + x]
                        cav[mu + x] = t
                        mx = max(mx, t)
                    for x in range(card[u]):
                        cav[mu + x] = exp_neg(cav[mu + x] - mx) if mx > -np.inf else 1.0
                bp_scaled.factor_message(e, psi, psi_at, g, cav, use_max, out, digits)
            z = 0.0
            low = np.inf
            for x in range(cv):
                low = min(low, out[x])
                z = max(z, out[x]) if use_max else z + out[x]
            ok = z < np.inf and low > TINY
            for x in range(cv):
                ok = ok and L[m + x] > -np.inf
            if not ok:
                pending[n_pending] = e
                n_pending += 1
                if track:   # (made later, by a change not measured: v's neighbours are revisited)
                    for x in range(cv):
                        moved[(j - j0) * cv + x] = 0.0
                    for i in range(j0, j1):
                        h = e_fac[v_edge[i]]
                        for s in range(f_ptr[h], f_ptr[h + 1]):
                            stale[f_var[s]] = np.inf
                continue
            inv = 1.0 / z
            for x in range(cv):
                vals[half + nm + x] = out[x] * inv
            slots[deg + j - j0] = nm
            nm += cv
        for i in range(half, half + nm):
            vals[i] = log_pos(vals[i])
        for j in range(j0, j1):
            at = slots[deg + j - j0]
            if at < 0:
                continue
            e = v_edge[j]
            m = msg_ptr[e]
            for x in range(cv):
                out[x] = vals[half + at + x]
            if damping > 0.0:   # in log space, then normalised again
                for x in range(cv):
                    out[x] = (1.0 - damping) * out[x] + damping * L[m + x]
                normalise_log(out, cv, use_max)
            r = rho[e_fac[e]]
            q = (j - j0) * cv
            for x in range(cv):
                d = out[x] - L[m + x]
                moved[q + x] = d
                lb[o + x] += r * d   # (ρ_f times the message's change)
                L[m + x] = out[x]
        if track:
            _spread(v, j0, rho, g, lb, o, before, stale, damping, moved)
    return n_pending, n_seen


@njit(cache=True, nogil=True, inline="always")
def _spread(v, j0, rho, g: GraphArrays, lb, o, before, stale, damping, moved):
    """After a visit of v whose messages moved by ``moved`` (per slot of
    v's, then per value) and its log belief from ``before`` to lb[o:]: the
    cavity n_{v->f} = lb_v - L_{f->v} moved by Δlb_v - ΔL_{f->v}, and f's
    message to another variable u by at most that change's range over v's
    values (a message is a log-sum or a max of the cavities plus fixed
    potentials), so u's log belief by at most ρ_f times it: added to
    ``stale[u]``.  Damped messages have moved only part of the way, damping
    / (1 - damping) times their change is left, added to v's own."""
    card, f_ptr, f_var, e_fac, v_ptr, v_edge = g.card, g.f_ptr, g.f_var, g.e_fac, g.v_ptr, g.v_edge
    cv = card[v]
    for x in range(cv):   # (Δlb_v, into before; 0 where it stays -inf)
        t = lb[o + x]
        before[x] = 0.0 if t == before[x] else t - before[x]
    left = damping / (1.0 - damping) if damping > 0.0 else 0.0
    for j in range(j0, v_ptr[v + 1]):
        f = e_fac[v_edge[j]]
        a = f_ptr[f]
        n = f_ptr[f + 1] - a
        if n < 2:
            continue
        q = (j - j0) * cv
        lo = hi = before[0] - moved[q]
        for x in range(1, cv):
            d = before[x] - moved[q + x]
            lo, hi = min(lo, d), max(hi, d)
        shift = hi - lo
        if not shift < np.inf:   # (an entry that became or stopped being -inf: unknown)
            shift = np.inf
        for s in range(a, a + n):
            if f_var[s] != v:
                stale[f_var[s]] += rho[f] * shift
        if left > 0.0:
            own = 0.0
            for x in range(cv):
                own = max(own, abs(moved[q + x]))
            stale[v] += left * rho[f] * 2.0 * own
