"""Belief propagation in the probability domain with scaled messages — the
fast path of ``fgl.engines.loopy`` (Sutton & McCallum §1.4.4, §1.4.6).

The same updates as the log-space kernels of ``fgl.engines.loopy``, on
potentials ψ_f = exp(θ_f - max θ_f) and messages normalised to sum 1 (max 1
for max-product) — the scaling remedy of Sutton & McCallum §1.4.6, as the
chain engine's scaled forward-backward uses it.  A factor->variable message
of a pairwise factor is then a matrix-vector product, with no exponential
and no logarithm (the log-space kernel takes ~n² of each per message):

    m_{f->v}(x_v) = ⊕_{x_u} ψ_f(x_u, x_v) μ_{u->f}(x_u)     (⊕ = Σ or max)

Where the time goes, and what is done about it:

* factor messages: a pairwise factor (nearly all of a skip chain's) sends
  both its messages from one sweep of its table; larger factors walk
  theirs with a mixed-radix counter — no division or modulo in any inner
  loop; the passes are written as single loops (per-message numba calls
  with array arguments measured three times slower);
* unary factors send a constant message, ψ_f normalised: it is written once
  per run and never recomputed, damped or counted in the residual;
* variable messages: flooding computes all of a variable's outgoing
  messages at once with prefix and suffix products (O(d) per variable,
  not O(d²) — skip cliques give degrees of 40 and more); a partial product
  whose largest entry drops below ``RESCALE`` is rescaled, so products of
  many small messages do not underflow;
* damping mixes normalised messages linearly, (1 - d)·new + d·old: it
  changes the path to a fixed point, not the fixed points.

The residual of a pass is the largest absolute change of any normalised
message entry, which bounds the change of the beliefs and so of the
gradient training needs (the log-space kernels measure theirs in log
space).  A message whose normaliser is zero or not finite (all its mass
underflowed, or an inconsistent clamped instance) makes a kernel return
False: the caller then runs the log-space kernels, which represent such
messages exactly.
"""
from __future__ import annotations

import numpy as np
from numba import njit

RESCALE = 1e-150  # a partial product with a smaller largest entry is rescaled


SHARED_SIZES = 4096  # tables up to this size are checked against the last one of their size


@njit(cache=True, nogil=True)
def potentials(log_pot, tab_ptr, psi, shift):
    """ψ_f = exp(θ_f - shift_f) per factor table, shift_f = max θ_f (0 for
    an all -inf table, whose ψ_f is all 0).  Templates tie weights, so many
    tables are equal (every transition factor of a chain without
    observations on its edges): a table equal to the last one of its size
    copies that one's ψ instead of taking n exponentials."""
    last = np.full(SHARED_SIZES, -1, dtype=np.int64)  # the last factor of each table size
    for f in range(tab_ptr.shape[0] - 1):
        t0 = tab_ptr[f]
        n = tab_ptr[f + 1] - t0
        if n < SHARED_SIZES:
            g = last[n]
            if g >= 0:
                s0 = tab_ptr[g]
                same = True
                for i in range(n):
                    if log_pot[s0 + i] != log_pot[t0 + i]:
                        same = False
                        break
                if same:
                    shift[f] = shift[g]
                    for i in range(n):
                        psi[t0 + i] = psi[s0 + i]
                    continue
            last[n] = f
        m = -np.inf
        for i in range(t0, t0 + n):
            if log_pot[i] > m:
                m = log_pot[i]
        if m == -np.inf:
            m = 0.0
        shift[f] = m
        for i in range(t0, t0 + n):
            psi[i] = np.exp(log_pot[i] - m)


@njit(cache=True, nogil=True)
def _scale(buf, n, use_max):
    """Divide buf[:n] by its sum (its max for max-product); False when that
    is zero or not finite."""
    s = 0.0
    if use_max:
        for x in range(n):
            if buf[x] > s:
                s = buf[x]
    else:
        for x in range(n):
            s += buf[x]
    if not (s > 0.0 and s < np.inf):
        return False
    inv = 1.0 / s
    for x in range(n):
        buf[x] *= inv
    return True


@njit(cache=True, nogil=True)
def _rescale(buf, n):
    """Scale buf[:n] up when its largest entry is below RESCALE (messages
    are defined up to a constant)."""
    m = 0.0
    for x in range(n):
        if buf[x] > m:
            m = buf[x]
    if 0.0 < m < RESCALE:
        inv = 1.0 / m
        for x in range(n):
            buf[x] *= inv


@njit(cache=True, nogil=True)
def _advance(digits, card, f_var, a, k):
    """Step the mixed-radix counter ``digits`` over the table of the factor
    whose k edges start at ``a`` (row-major: the last variable fastest)."""
    j = k - 1
    if j < 0:
        return
    digits[j] += 1
    while j > 0 and digits[j] == card[f_var[a + j]]:
        digits[j] = 0
        j -= 1
        digits[j] += 1


@njit(cache=True, nogil=True)
def _factor_message(e, psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, vf, use_max, out,
                    digits):
    """m_{f->v} for edge e = (f, v) of a factor of any arity into
    out[:card[v]], unnormalised: a walk of the table (row-major, the last
    variable fastest) with a mixed-radix counter."""
    f = e_fac[e]
    a = f_ptr[f]
    k = f_ptr[f + 1] - a
    t0 = tab_ptr[f]
    pos = e - a
    for x in range(card[f_var[e]]):
        out[x] = 0.0
    for j in range(k):
        digits[j] = 0
    for i in range(tab_ptr[f + 1] - t0):
        p = psi[t0 + i]
        if p != 0.0:
            for j in range(k):
                if j != pos:
                    p *= vf[msg_ptr[a + j] + digits[j]]
            x = digits[pos]
            if use_max:
                if p > out[x]:
                    out[x] = p
            else:
                out[x] += p
        _advance(digits, card, f_var, a, k)


@njit(cache=True, nogil=True)
def _flood_factors(psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, vf, fv, use_max, damping,
                   out, digits):
    """Every factor->variable message of the factors of two or more
    variables; returns the largest change, -1 when a normaliser
    failed.  A pairwise factor's two messages come from one sweep of its
    table, into out[:c0] and out[c0:c0+c1].  (The normalise-damp-commit
    step is written out here and in the two passes below: as a numba
    function called per message it made the pass three times slower.)"""
    res = 0.0
    for f in range(f_ptr.shape[0] - 1):
        a = f_ptr[f]
        k = f_ptr[f + 1] - a
        if k < 2:
            continue
        if k == 2:
            c0 = card[f_var[a]]
            c1 = card[f_var[a + 1]]
            m0 = msg_ptr[a]
            m1 = msg_ptr[a + 1]
            t0 = tab_ptr[f]
            for x1 in range(c1):
                out[c0 + x1] = 0.0
            for x0 in range(c0):
                u = vf[m0 + x0]
                row = t0 + x0 * c1
                s = 0.0
                if use_max:
                    for x1 in range(c1):
                        p = psi[row + x1]
                        q = p * vf[m1 + x1]
                        if q > s:
                            s = q
                        q = p * u
                        if q > out[c0 + x1]:
                            out[c0 + x1] = q
                else:
                    for x1 in range(c1):
                        p = psi[row + x1]
                        s += p * vf[m1 + x1]
                        out[c0 + x1] += p * u
                out[x0] = s
        b = 0
        for j in range(k):
            e = a + j
            cv = card[f_var[e]]
            if k > 2:
                _factor_message(e, psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, vf, use_max,
                                out, digits)
            # normalise, damp, commit out[b:b+cv]
            z = 0.0
            for x in range(b, b + cv):
                if use_max:
                    z = max(z, out[x])
                else:
                    z += out[x]
            if not (0.0 < z < np.inf):
                return -1.0
            inv = (1.0 - damping) / z
            off = msg_ptr[e] - b
            for x in range(b, b + cv):
                out[x] = out[x] * inv + damping * fv[off + x]
            if use_max and damping > 0.0:
                z = 0.0
                for x in range(b, b + cv):
                    z = max(z, out[x])
                for x in range(b, b + cv):
                    out[x] /= z
            for x in range(b, b + cv):
                old = fv[off + x]
                new = out[x]
                d = abs(new - old)
                if d > res:
                    res = d
                fv[off + x] = new
            if k == 2:
                b = cv
    return res


@njit(cache=True, nogil=True)
def _flood_variables(card, v_ptr, v_edge, msg_ptr, fv, vf, use_max, pre, suf):
    """Every variable->factor message, m_{v->f} = Π_{g ∋ v, g != f} m_{g->v},
    by prefix and suffix products (O(d) per variable); returns the largest
    change, -1 when a normaliser failed."""
    res = 0.0
    for v in range(card.shape[0]):
        cv = card[v]
        j0 = v_ptr[v]
        d = v_ptr[v + 1] - j0
        for x in range(cv):
            pre[x] = 1.0
        for k in range(1, d):
            o = msg_ptr[v_edge[j0 + k - 1]]
            big = 0.0
            for x in range(cv):
                p = pre[(k - 1) * cv + x] * fv[o + x]
                pre[k * cv + x] = p
                big = max(big, p)
            if 0.0 < big < RESCALE:
                for x in range(cv):
                    pre[k * cv + x] /= big
        for x in range(cv):
            suf[x] = 1.0
        for k in range(d - 1, -1, -1):
            o = msg_ptr[v_edge[j0 + k]]
            z = 0.0
            for x in range(cv):
                p = pre[k * cv + x] * suf[x]
                pre[k * cv + x] = p
                if use_max:
                    z = max(z, p)
                else:
                    z += p
            if not (0.0 < z < np.inf):
                return -1.0
            inv = 1.0 / z
            big = 0.0
            for x in range(cv):
                old = vf[o + x]
                new = pre[k * cv + x] * inv
                dd = abs(new - old)
                if dd > res:
                    res = dd
                vf[o + x] = new
                suf[x] *= fv[o + x]
                big = max(big, suf[x])
            if 0.0 < big < RESCALE:
                for x in range(cv):
                    suf[x] /= big
    return res


@njit(cache=True, nogil=True)
def _scheduled_pass(psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, v_ptr, v_edge, sched_edge,
                    sched_dir, msgs, use_max, damping, out, digits):
    """One pass of a schedule of single updates (edge, direction 1 =
    factor->variable, 0 = variable->factor), as TRP's tree passes are;
    returns the largest change, -1 when a normaliser failed.
    Updates touching unary factors are skipped: their factor->variable
    messages are constant and the variable->factor ones only feed beliefs."""
    M = msgs.shape[0] // 2
    fv = msgs[:M]
    vf = msgs[M:]
    res = 0.0
    for k in range(sched_edge.shape[0]):
        e = sched_edge[k]
        f = e_fac[e]
        a = f_ptr[f]
        if f_ptr[f + 1] - a < 2:
            continue
        v = f_var[e]
        cv = card[v]
        if sched_dir[k] == 1:
            off = msg_ptr[e]
            damp = damping
            if f_ptr[f + 1] - a == 2:
                t0 = tab_ptr[f]
                if e == a:      # out[x0] = ⊕_x1 ψ[x0, x1] μ(x1)
                    c1 = card[f_var[a + 1]]
                    m = msg_ptr[a + 1]
                    for x0 in range(cv):
                        row = t0 + x0 * c1
                        s = 0.0
                        if use_max:
                            for x1 in range(c1):
                                s = max(s, psi[row + x1] * vf[m + x1])
                        else:
                            for x1 in range(c1):
                                s += psi[row + x1] * vf[m + x1]
                        out[x0] = s
                else:           # out[x1] = ⊕_x0 ψ[x0, x1] μ(x0)
                    m = msg_ptr[a]
                    for x1 in range(cv):
                        out[x1] = 0.0
                    for x0 in range(card[f_var[a]]):
                        u = vf[m + x0]
                        row = t0 + x0 * cv
                        if use_max:
                            for x1 in range(cv):
                                out[x1] = max(out[x1], psi[row + x1] * u)
                        else:
                            for x1 in range(cv):
                                out[x1] += psi[row + x1] * u
            else:
                _factor_message(e, psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, vf,
                                use_max, out, digits)
        else:
            off = M + msg_ptr[e]
            damp = 0.0
            for x in range(cv):
                out[x] = 1.0
            for j in range(v_ptr[v], v_ptr[v + 1]):
                e2 = v_edge[j]
                if e2 == e:
                    continue
                o = msg_ptr[e2]
                big = 0.0
                for x in range(cv):
                    out[x] *= fv[o + x]
                    big = max(big, out[x])
                if 0.0 < big < RESCALE:
                    for x in range(cv):
                        out[x] /= big
        # normalise, damp, commit
        z = 0.0
        for x in range(cv):
            if use_max:
                z = max(z, out[x])
            else:
                z += out[x]
        if not (0.0 < z < np.inf):
            return -1.0
        inv = (1.0 - damp) / z
        for x in range(cv):
            out[x] = out[x] * inv + damp * msgs[off + x]
        if use_max and damp > 0.0:
            z = 0.0
            for x in range(cv):
                z = max(z, out[x])
            for x in range(cv):
                out[x] /= z
        for x in range(cv):
            old = msgs[off + x]
            new = out[x]
            d = abs(new - old)
            if d > res:
                res = d
            msgs[off + x] = new
    return res


@njit(cache=True, nogil=True)
def _widths(card, v_ptr, f_ptr):
    """(largest domain, largest variable degree, largest factor arity): the
    sizes of a kernel's scratch buffers."""
    max_card = 1
    max_deg = 1
    for v in range(card.shape[0]):
        max_card = max(max_card, card[v])
        max_deg = max(max_deg, v_ptr[v + 1] - v_ptr[v])
    max_arity = 1
    for f in range(f_ptr.shape[0] - 1):
        max_arity = max(max_arity, f_ptr[f + 1] - f_ptr[f])
    return max_card, max_deg, max_arity


@njit(cache=True, nogil=True)
def propagate(psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, v_ptr, v_edge, sched_edge,
              sched_dir, flooding, use_max, damping, tol, max_iter, msgs):
    """Run BP passes until one changes no message by ``tol`` or more.
    ``flooding``: each pass updates every factor->variable message, then
    every variable->factor one; otherwise it follows the schedule.  Unary
    factors' messages are set once, first.  ``msgs``: the factor->variable
    messages, then the variable->factor ones.  Returns (passes run, last
    residual, ok): ok False when a normaliser failed."""
    M = msgs.shape[0] // 2
    fv = msgs[:M]
    vf = msgs[M:]
    F = f_ptr.shape[0] - 1
    max_card, max_deg, max_arity = _widths(card, v_ptr, f_ptr)
    out0 = np.empty(2 * max_card)
    pre = np.empty(max_deg * max_card)
    digits = np.zeros(max_arity, dtype=np.int64)
    for f in range(F):
        if f_ptr[f + 1] - f_ptr[f] == 1:
            e = f_ptr[f]
            cv = card[f_var[e]]
            o = msg_ptr[e]
            fv[o:o + cv] = psi[tab_ptr[f]:tab_ptr[f] + cv]
            if not _scale(fv[o:o + cv], cv, use_max):
                return 0, np.inf, False
    res = np.inf
    for it in range(1, max_iter + 1):
        if flooding:
            res = _flood_factors(psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, vf, fv,
                                 use_max, damping, out0, digits)
            if res >= 0.0:
                r2 = _flood_variables(card, v_ptr, v_edge, msg_ptr, fv, vf, use_max, pre, out0)
                res = -1.0 if r2 < 0.0 else max(res, r2)
        else:
            res = _scheduled_pass(psi, card, f_ptr, f_var, tab_ptr, e_fac, msg_ptr, v_ptr,
                                  v_edge, sched_edge, sched_dir, msgs, use_max, damping, out0,
                                  digits)
        if res < 0.0:
            return it, np.inf, False
        if res < tol:
            return it, res, True
    return max_iter, res, True


@njit(cache=True, nogil=True)
def beliefs(psi, shift, card, f_ptr, f_var, tab_ptr, msg_ptr, v_ptr, v_edge, var_ptr, fv, vf,
            use_max, bv, bf):
    """Normalised variable and factor beliefs, b_v ∝ Π_{f ∋ v} m_{f->v} and
    b_f ∝ ψ_f Π_{v in f} m_{v->f} (refreshing every variable->factor message
    first, unary factors' included), and for sum-product the Bethe log Z
    (Sutton & McCallum §1.4.4)

        Σ_f Σ_x b_f (θ_f - log b_f) + Σ_v (d_v - 1) Σ_x b_v log b_v,

    0 log 0 = 0, with θ_f - log b_f = shift_f + log Z_f - Σ_{v in f} log m_{v->f}
    (Z_f the normaliser of b_f), so the logarithms are taken of messages,
    not of table entries.  Returns (Bethe log Z, or 0 for max-product; ok)."""
    V = card.shape[0]
    max_card, max_deg, max_arity = _widths(card, v_ptr, f_ptr)
    digits = np.zeros(max_arity, dtype=np.int64)
    marg = np.empty(max_arity * max_card)   # a factor's per-variable belief marginals
    if _flood_variables(card, v_ptr, v_edge, msg_ptr, fv, vf, use_max,
                        np.empty(max_deg * max_card), np.empty(max_card)) < 0.0:
        return np.nan, False
    total = 0.0
    for v in range(V):
        o = var_ptr[v]
        cv = card[v]
        for x in range(cv):
            bv[o + x] = 1.0
        for j in range(v_ptr[v], v_ptr[v + 1]):
            m = msg_ptr[v_edge[j]]
            for x in range(cv):
                bv[o + x] *= fv[m + x]
            _rescale(bv[o:o + cv], cv)
        if not _scale(bv[o:o + cv], cv, False):
            return np.nan, False
        d = v_ptr[v + 1] - v_ptr[v]
        if d != 1 and not use_max:
            s = 0.0
            for x in range(cv):
                b = bv[o + x]
                if b > 0.0:
                    s += b * np.log(b)
            total += (d - 1) * s
    for f in range(f_ptr.shape[0] - 1):
        a = f_ptr[f]
        k = f_ptr[f + 1] - a
        t0 = tab_ptr[f]
        n = tab_ptr[f + 1] - t0
        z = 0.0
        if k == 2:
            m0 = msg_ptr[a]
            m1 = msg_ptr[a + 1]
            c1 = card[f_var[a + 1]]
            for x0 in range(card[f_var[a]]):
                u = vf[m0 + x0]
                row = t0 + x0 * c1
                for x1 in range(c1):
                    p = psi[row + x1] * u * vf[m1 + x1]
                    bf[row + x1] = p
                    z += p
        else:
            for j in range(k):
                digits[j] = 0
            for i in range(n):
                p = psi[t0 + i]
                for j in range(k):
                    p *= vf[msg_ptr[a + j] + digits[j]]
                bf[t0 + i] = p
                z += p
                _advance(digits, card, f_var, a, k)
        if not (0.0 < z < np.inf):
            return np.nan, False
        inv = 1.0 / z
        for i in range(t0, t0 + n):
            bf[i] *= inv
        if use_max:
            continue
        # Σ_x b_f(x) (θ_f(x) - log b_f(x)) through the belief's marginals
        total += shift[f] + np.log(z)
        mo = 0
        for j in range(k):
            for x in range(card[f_var[a + j]]):
                marg[mo + x] = 0.0
            mo += card[f_var[a + j]]
        if k == 2:
            c0 = card[f_var[a]]
            c1 = card[f_var[a + 1]]
            for x0 in range(c0):
                for x1 in range(c1):
                    p = bf[t0 + x0 * c1 + x1]
                    marg[x0] += p
                    marg[c0 + x1] += p
        else:
            for j in range(k):
                digits[j] = 0
            for i in range(n):
                mo = 0
                for j in range(k):
                    marg[mo + digits[j]] += bf[t0 + i]
                    mo += card[f_var[a + j]]
                _advance(digits, card, f_var, a, k)
        mo = 0
        for j in range(k):
            m = msg_ptr[a + j]
            for x in range(card[f_var[a + j]]):
                b = marg[mo + x]
                if b > 0.0:
                    total -= b * np.log(vf[m + x])
            mo += card[f_var[a + j]]
    return total, True
