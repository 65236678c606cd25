"""Belief propagation in the probability domain with scaled messages — the
fast path of ``fgl.engines.graph.loopy`` (Sutton & McCallum §1.4.4, §1.4.6).

Why one module of some 750 lines: the message passes and the read-out of
beliefs and Bethe log Z share one representation — ψ_f with its shift,
messages normalised to sum or max 1, partial products rescaled — and one
failure rule, a normaliser that is zero or not finite; split, those
invariants would be stated and kept in two places.  Most of the length is
the numba kernels, each written out for speed, as the notes below say.

The same updates as the log-space kernels of ``fgl.engines.graph.loopy``, on
potentials ψ_f = exp(θ_f - max θ_f) and messages normalised to sum 1 (max 1
for max-product) — the scaling remedy of Sutton & McCallum §1.4.6, as the
chain engine's scaled forward-backward uses it.  A factor->variable message
of a pairwise factor is then a matrix-vector product, with no exponential
and no logarithm (the log-space kernel takes ~n² of each per message):

    m_{f->v}(x_v) = ⊕_{x_u} ψ_f(x_u, x_v) μ_{u->f}(x_u)     (⊕ = Σ or max)

Where the time goes, and what is done about it:

* factor messages: under flooding a pairwise factor (nearly all of a skip
  chain's) sends both its messages from one sweep of its table; larger
  factors walk theirs with a mixed-radix counter — no division or modulo
  in any inner loop;
* a schedule of single updates (TRP's tree passes, Sutton & McCallum
  §1.5.1) is compiled once per run into rows holding each update's kind
  and offsets (``_compile_schedule``), so a pass looks nothing up; a
  pairwise message accumulates three output entries side by side;
* tied tables: templates tie weights, so many factors have equal tables
  (every transition factor of a chain); a table equal to the last one of
  its size shares that one's ψ (``_potentials``), read from cache rather
  than from a copy of its own;
* unary factors send a constant message, ψ_f normalised: it is written once
  per run and never recomputed, damped or counted in the residual; their
  beliefs are their variables' (``beliefs``): no table sweep and no
  logarithm of their own;
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

from typing import NamedTuple

import numpy as np

from fgl.engines.graph.factor_graph import GraphArrays
from fgl.jit import njit

RESCALE = 1e-150  # a partial product with a smaller largest entry is rescaled


SHARED_SIZES = 4096  # tables up to this size are checked against the last one of their size


class ScaledPotentials(NamedTuple):
    """The potentials of the scaled kernels (``scaled_potentials``)."""

    psi: np.ndarray      # the tables ψ_f, tied tables stored once
    psi_at: np.ndarray   # [F] offset of factor f's ψ_f in psi
    shift: np.ndarray    # [F] shift_f = max θ_f: θ_f = log ψ_f + shift_f


def scaled_potentials(log_pot: np.ndarray, tab_ptr: np.ndarray) -> ScaledPotentials:
    """ψ_f = exp(θ_f - shift_f) of every factor table of ``log_pot``
    (``_potentials``)."""
    psi = np.empty(int(tab_ptr[-1]))
    shift = np.empty(tab_ptr.shape[0] - 1)
    psi_at = np.empty(tab_ptr.shape[0] - 1, dtype=np.int64)
    used = _potentials(log_pot, tab_ptr, psi, shift, psi_at)
    return ScaledPotentials(psi[:used], psi_at, shift)


@njit(cache=True, nogil=True)
def _potentials(log_pot, tab_ptr, psi, shift, psi_at):
    """ψ_f = exp(θ_f - shift_f) per factor table, shift_f = max θ_f (0 for
    an all -inf table, whose ψ_f is all 0), at psi[psi_at[f]:]; returns how
    much of ``psi`` is used.  Templates tie weights, so many tables are
    equal (every transition factor of a chain without observations on its
    edges): a table equal to the last one of its size shares that one's ψ
    instead of taking n exponentials, and the kernels read it from cache
    rather than from a copy of its own."""
    last = np.full(SHARED_SIZES, -1, dtype=np.int64)  # the last factor of each table size
    used = 0
    for f in range(tab_ptr.shape[0] - 1):
        t0 = tab_ptr[f]
        n = tab_ptr[f + 1] - t0
        if n < SHARED_SIZES:
            g = last[n]
            if g >= 0 and equal_tables(log_pot, tab_ptr[g], t0, n):
                shift[f] = shift[g]
                psi_at[f] = psi_at[g]
                continue
            last[n] = f
        shift[f] = exp_shifted(log_pot, t0, n, psi, used)
        psi_at[f] = used
        used += n
    return used


@njit(cache=True, nogil=True, inline="always")
def equal_tables(a, s0, t0, n):
    """Whether a[s0:s0 + n] and a[t0:t0 + n] are equal entry by entry."""
    for i in range(n):
        if a[s0 + i] != a[t0 + i]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def exp_shifted(a, t0, n, psi, at, r=1.0):
    """psi[at:at + n] = exp((a[t0:t0 + n] - m) / r) with m their largest
    entry (0 when all are -inf: ψ all 0); returns m.  ``r``:
    tree-reweighted BP's ρ_f (its tables are θ_f / ρ_f, shifted by m /
    ρ_f).  libm's exp: an entry far below the largest must underflow to
    0, which the kernels' checks read, not stop at exp(-708)."""
    m = -np.inf
    for i in range(t0, t0 + n):
        if a[i] > m:
            m = a[i]
    if m == -np.inf:
        m = 0.0
    for i in range(n):
        psi[at + i] = np.exp((a[t0 + i] - m) / r)
    return m


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
def factor_message(e, psi, psi_at, g: GraphArrays, vf, use_max, out, digits):
    """m_{f->v} for edge e = (f, v) of a factor of any arity into
    out[:card[v]], unnormalised: a walk of the table (row-major, the last
    variable fastest) with a mixed-radix counter."""
    card, f_ptr, f_var, msg_ptr = g.card, g.f_ptr, g.f_var, g.msg_ptr
    tab_ptr, e_fac = g.tab_ptr, g.e_fac
    f = e_fac[e]
    a = f_ptr[f]
    k = f_ptr[f + 1] - a
    p0 = psi_at[f]
    pos = e - a
    for x in range(card[f_var[e]]):
        out[x] = 0.0
    for j in range(k):
        digits[j] = 0
    for i in range(tab_ptr[f + 1] - tab_ptr[f]):
        p = psi[p0 + i]
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
def _flood_factors(psi, psi_at, g: GraphArrays, vf, fv, use_max, damping, out, digits):
    """Every factor->variable message of the factors of two or more
    variables; returns the largest change, -1 when a normaliser
    failed.  A pairwise factor's two messages come from one sweep of its
    table, into out[:c0] and out[c0:c0+c1].  (The normalise-damp-commit
    step is written out here and in the two passes below: as a numba
    function called per message it made the pass three times slower.)"""
    card, f_ptr, f_var, msg_ptr = g.card, g.f_ptr, g.f_var, g.msg_ptr
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
            t0 = psi_at[f]
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
                factor_message(e, psi, psi_at, g, vf, use_max, out, digits)
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


# the kinds of update of a compiled schedule (``_compile_schedule``)
TO_FACTOR, TO_FIRST, TO_SECOND, FROM_FACTOR = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _compile_schedule(card, f_ptr, f_var, psi_at, e_fac, msg_ptr, sched_edge, sched_dir):
    """A schedule of single updates (edge, direction 1 = factor->variable,
    0 = variable->factor) as rows (kind, edge, message offset in ``msgs``,
    its length, input, offset of ψ_f in ``psi``, input length), with
    everything a pass needs looked up once rather than at every pass:

    * TO_FACTOR (a variable->factor message): input = the variable;
    * TO_FIRST / TO_SECOND (a pairwise factor's message to its first /
      second variable): input = the offset of the other variable's message
      to the factor;
    * FROM_FACTOR (a larger factor's message): walked by ``factor_message``.

    Updates on unary factors' edges are left out: such a factor's message
    to its variable is constant (``propagate`` sets it once) and the
    variable's message to it only feeds the beliefs, which refresh it."""
    M = msg_ptr[msg_ptr.shape[0] - 1]
    prog = np.empty((sched_edge.shape[0], 7), dtype=np.int64)
    n = 0
    for k in range(sched_edge.shape[0]):
        e = sched_edge[k]
        f = e_fac[e]
        a = f_ptr[f]
        arity = f_ptr[f + 1] - a
        if arity < 2:
            continue
        v = f_var[e]
        row = prog[n]
        row[1] = e
        row[3] = card[v]
        row[5] = psi_at[f]
        if sched_dir[k] == 0:
            row[0] = TO_FACTOR
            row[2] = M + msg_ptr[e]
            row[4] = v
        else:
            row[2] = msg_ptr[e]
            if arity > 2:
                row[0] = FROM_FACTOR
            elif e == a:
                row[0] = TO_FIRST
                row[4] = msg_ptr[a + 1]
                row[6] = card[f_var[a + 1]]
            else:
                row[0] = TO_SECOND
                row[4] = msg_ptr[a]
                row[6] = card[f_var[a]]
        n += 1
    return prog[:n]


@njit(cache=True, nogil=True, inline="always")
def pairwise_message(psi, t0, n_out, n_in, to_first, vf, m, use_max, out):
    """m_{f->v} of a pairwise factor whose ψ_f (row-major) starts at t0,
    from the other variable's message vf[m:m+n_in]: to the first variable
    (``to_first``) out[x0] = ⊕_x1 ψ[x0, x1] μ(x1), else out[x1] = ⊕_x0
    ψ[x0, x1] μ(x0).  Three output entries accumulate side by side, each in
    a register and in ascending order of the summed index (independent
    chains the processor overlaps; one at a time waits on each addition)."""
    step_out = n_in if to_first else 1
    step_in = 1 if to_first else n_out
    x = 0
    while x < n_out:
        w = min(3, n_out - x)   # entries x .. x+w-1 (the last ones repeated when w < 3)
        r0 = t0 + x * step_out
        r1 = r0 + min(1, w - 1) * step_out
        r2 = r0 + (w - 1) * step_out
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for y in range(n_in):
            u = vf[m + y]
            i = y * step_in
            if use_max:
                s0 = max(s0, psi[r0 + i] * u)
                s1 = max(s1, psi[r1 + i] * u)
                s2 = max(s2, psi[r2 + i] * u)
            else:
                s0 += psi[r0 + i] * u
                s1 += psi[r1 + i] * u
                s2 += psi[r2 + i] * u
        out[x] = s0
        out[x + min(1, w - 1)] = s1
        out[x + w - 1] = s2
        x += w


@njit(cache=True, nogil=True)
def _variable_message(v, e, card, v_ptr, v_edge, msg_ptr, fv, out):
    """m_{v->f} = Π_{g ∋ v, g != f} m_{g->v} for edge e = (f, v) into
    out[:card[v]], unnormalised (a partial product is rescaled when its
    largest entry drops below ``RESCALE``)."""
    cv = card[v]
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


@njit(cache=True, nogil=True)
def _scheduled_pass(psi, psi_at, g: GraphArrays, prog, msgs, use_max, damping, out, digits):
    """One pass of a compiled schedule (``_compile_schedule``), as TRP's
    tree passes are; returns the largest change, -1 when a normaliser
    failed.  Damping applies to factor->variable messages only."""
    card, msg_ptr, v_ptr, v_edge = g.card, g.msg_ptr, g.v_ptr, g.v_edge
    M = msgs.shape[0] // 2
    fv = msgs[:M]
    vf = msgs[M:]
    res = 0.0
    for k in range(prog.shape[0]):
        kind = prog[k, 0]
        e = prog[k, 1]
        off = prog[k, 2]
        cv = prog[k, 3]
        damp = damping
        if kind == TO_FACTOR:
            damp = 0.0
            _variable_message(prog[k, 4], e, card, v_ptr, v_edge, msg_ptr, fv, out)
        elif kind == FROM_FACTOR:
            factor_message(e, psi, psi_at, g, vf, use_max, out, digits)
        else:
            pairwise_message(psi, prog[k, 5], cv, prog[k, 6], kind == TO_FIRST, vf, prog[k, 4],
                              use_max, out)
        # normalise, damp, commit
        z = 0.0
        if use_max:
            for x in range(cv):
                z = max(z, out[x])
        else:
            for x in range(cv):
                z += out[x]
        if not (0.0 < z < np.inf):
            return -1.0
        inv = (1.0 - damp) / z
        if damp > 0.0:
            for x in range(cv):
                out[x] = out[x] * inv + damp * msgs[off + x]
            if use_max:
                z = 0.0
                for x in range(cv):
                    z = max(z, out[x])
                for x in range(cv):
                    out[x] /= z
        else:
            for x in range(cv):
                out[x] *= inv
        for x in range(cv):
            d = abs(out[x] - msgs[off + x])
            if d > res:
                res = d
            msgs[off + x] = out[x]
    return res


@njit(cache=True, nogil=True)
def widths(card, v_ptr, f_ptr):
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
def propagate(pot: ScaledPotentials, g: GraphArrays, sched_edge, sched_dir, flooding, use_max,
              damping, tol, max_iter, msgs):
    """Run BP passes until one changes no message by ``tol`` or more.
    ``pot``: the potentials (``scaled_potentials``).  ``flooding``: each
    pass updates every factor->variable message, then every
    variable->factor one; otherwise it follows the schedule, compiled once
    (``_compile_schedule``).  Unary factors' messages are set once, first.
    ``msgs``: the factor->variable messages, then the variable->factor
    ones.  Returns (passes run, last residual, ok): ok False when a
    normaliser failed."""
    psi, psi_at = pot.psi, pot.psi_at
    card, f_ptr, f_var, e_fac = g.card, g.f_ptr, g.f_var, g.e_fac
    msg_ptr, v_ptr, v_edge = g.msg_ptr, g.v_ptr, g.v_edge
    M = msgs.shape[0] // 2
    fv = msgs[:M]
    vf = msgs[M:]
    F = f_ptr.shape[0] - 1
    max_card, max_deg, max_arity = widths(card, v_ptr, f_ptr)
    out0 = np.empty(2 * max_card)
    pre = np.empty(max_deg * max_card)
    digits = np.zeros(max_arity, dtype=np.int64)
    for f in range(F):
        if f_ptr[f + 1] - f_ptr[f] == 1:
            e = f_ptr[f]
            cv = card[f_var[e]]
            o = msg_ptr[e]
            fv[o:o + cv] = psi[psi_at[f]:psi_at[f] + cv]
            if not _scale(fv[o:o + cv], cv, use_max):
                return 0, np.inf, False
    prog = np.empty((0, 7), dtype=np.int64)
    if not flooding:
        prog = _compile_schedule(card, f_ptr, f_var, psi_at, e_fac, msg_ptr, sched_edge, sched_dir)
    res = np.inf
    for it in range(1, max_iter + 1):
        if flooding:
            res = _flood_factors(psi, psi_at, g, vf, fv, use_max, damping, out0, digits)
            if res >= 0.0:
                r2 = _flood_variables(card, v_ptr, v_edge, msg_ptr, fv, vf, use_max, pre, out0)
                res = -1.0 if r2 < 0.0 else max(res, r2)
        else:
            res = _scheduled_pass(psi, psi_at, g, prog, msgs, use_max, damping, out0, digits)
        if res < 0.0:
            return it, np.inf, False
        if res < tol:
            return it, res, True
    return max_iter, res, True


@njit(cache=True, nogil=True)
def _variable_belief(log_pot, g: GraphArrays, fv, use_max, v, bv):
    """b_v ∝ Π_{f ∋ v} m_{f->v} into bv (normalised), and v's part of the
    Bethe log Z: (d_v - 1 - u_v) Σ_x b_v log b_v + Σ_{unary f ∋ v} Σ_x b_v θ_f
    (u_v unary factors; see ``beliefs``; 0 for max-product).  NaN when the
    belief's normaliser failed."""
    card, f_ptr, tab_ptr, e_fac = g.card, g.f_ptr, g.tab_ptr, g.e_fac
    msg_ptr, v_ptr, v_edge, var_ptr = g.msg_ptr, g.v_ptr, g.v_edge, g.var_ptr
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
        return np.nan
    if use_max:
        return 0.0
    n_entropy = v_ptr[v + 1] - v_ptr[v] - 1
    total = 0.0
    for j in range(v_ptr[v], v_ptr[v + 1]):
        f = e_fac[v_edge[j]]
        if f_ptr[f + 1] - f_ptr[f] != 1:
            continue
        n_entropy -= 1
        t0 = tab_ptr[f]
        for x in range(cv):
            if bv[o + x] > 0.0:
                total += bv[o + x] * log_pot[t0 + x]
    if n_entropy != 0:
        s = 0.0
        for x in range(cv):
            b = bv[o + x]
            if b > 0.0:
                s += b * np.log(b)
        total += n_entropy * s
    return total


@njit(cache=True, nogil=True)
def _pairwise_belief(psi, p0, t0, c0, c1, vf, m0, m1, bf, marg):
    """b_f(x0, x1) ∝ ψ_f(x0, x1) m_{v0->f}(x0) m_{v1->f}(x1), ψ_f at
    psi[p0:], into bf[t0:] (normalised) and its two marginals into marg[:c0]
    and marg[c0:c0+c1], from one sweep of the table; returns the normaliser
    Z_f."""
    for x in range(c0 + c1):
        marg[x] = 0.0
    z = 0.0
    for x0 in range(c0):
        u = vf[m0 + x0]
        row = t0 + x0 * c1
        prow = p0 + x0 * c1
        s = 0.0
        for x1 in range(c1):
            p = psi[prow + x1] * u * vf[m1 + x1]
            bf[row + x1] = p
            s += p
            marg[c0 + x1] += p
        marg[x0] = s
        z += s
    if 0.0 < z < np.inf:
        inv = 1.0 / z
        for i in range(t0, t0 + c0 * c1):
            bf[i] *= inv
        for x in range(c0 + c1):
            marg[x] *= inv
    return z


@njit(cache=True, nogil=True)
def _factor_belief(psi, psi_at, card, f_ptr, f_var, tab_ptr, msg_ptr, vf, f, digits, bf, marg):
    """``_pairwise_belief`` for a factor of any arity (a walk of its table
    with a mixed-radix counter): b_f normalised into bf, its per-variable
    marginals one after another into marg; returns Z_f."""
    a = f_ptr[f]
    k = f_ptr[f + 1] - a
    t0 = tab_ptr[f]
    n = tab_ptr[f + 1] - t0
    z = 0.0
    for j in range(k):
        digits[j] = 0
    for i in range(n):
        p = psi[psi_at[f] + i]
        for j in range(k):
            p *= vf[msg_ptr[a + j] + digits[j]]
        bf[t0 + i] = p
        z += p
        _advance(digits, card, f_var, a, k)
    if not (0.0 < z < np.inf):
        return z
    inv = 1.0 / z
    for i in range(t0, t0 + n):
        bf[i] *= inv
    mo = 0
    for j in range(k):
        for x in range(card[f_var[a + j]]):
            marg[mo + x] = 0.0
        mo += card[f_var[a + j]]
    for j in range(k):
        digits[j] = 0
    for i in range(n):
        mo = 0
        for j in range(k):
            marg[mo + digits[j]] += bf[t0 + i]
            mo += card[f_var[a + j]]
        _advance(digits, card, f_var, a, k)
    return z


@njit(cache=True, nogil=True)
def beliefs(log_pot, pot: ScaledPotentials, g: GraphArrays, fv, vf, use_max, bv, bf):
    """Normalised variable and factor beliefs, b_v ∝ Π_{f ∋ v} m_{f->v} and
    b_f ∝ ψ_f Π_{v in f} m_{v->f} (refreshing every variable->factor message
    first, unary factors' included), and for sum-product the Bethe log Z
    (Sutton & McCallum §1.4.4)

        Σ_f Σ_x b_f (θ_f - log b_f) + Σ_v (d_v - 1) Σ_x b_v log b_v,

    0 log 0 = 0.  A unary factor's belief is its variable's (b_f ∝ ψ_f
    m_{v->f} ∝ Π_{g ∋ v} m_{g->v}, its own message being ψ_f normalised), so
    its term, Σ_x b_v θ_f - Σ_x b_v log b_v, joins the variable's.  Any
    other factor's uses θ_f - log b_f = shift_f + log Z_f - Σ_{v in f} log
    m_{v->f} (Z_f the normaliser of b_f), so the logarithms are taken of
    messages, not of table entries.  ``fv``, ``vf``: the messages of
    ``propagate``.  Returns (Bethe log Z, or 0 for max-product; ok)."""
    psi, psi_at, shift = pot.psi, pot.psi_at, pot.shift
    card, f_ptr, f_var, tab_ptr = g.card, g.f_ptr, g.f_var, g.tab_ptr
    msg_ptr, v_ptr, v_edge, var_ptr = g.msg_ptr, g.v_ptr, g.v_edge, g.var_ptr
    max_card, max_deg, max_arity = widths(card, v_ptr, f_ptr)
    digits = np.zeros(max_arity, dtype=np.int64)
    marg = np.empty(max_arity * max_card)   # a factor's per-variable belief marginals
    if _flood_variables(card, v_ptr, v_edge, msg_ptr, fv, vf, use_max,
                        np.empty(max_deg * max_card), np.empty(max_card)) < 0.0:
        return np.nan, False
    total = 0.0
    for v in range(card.shape[0]):
        total += _variable_belief(log_pot, g, fv, use_max, v, bv)
    if not total == total:   # (NaN: a belief's normaliser failed)
        return np.nan, False
    for f in range(f_ptr.shape[0] - 1):
        a = f_ptr[f]
        k = f_ptr[f + 1] - a
        t0 = tab_ptr[f]
        if k == 1:
            o = var_ptr[f_var[a]]
            for x in range(card[f_var[a]]):
                bf[t0 + x] = bv[o + x]
            continue
        if k == 2:
            z = _pairwise_belief(psi, psi_at[f], t0, card[f_var[a]], card[f_var[a + 1]], vf,
                                 msg_ptr[a], msg_ptr[a + 1], bf, marg)
        else:
            z = _factor_belief(psi, psi_at, card, f_ptr, f_var, tab_ptr, msg_ptr, vf, f, digits,
                               bf, marg)
        if not (0.0 < z < np.inf):
            return np.nan, False
        if use_max:
            continue
        total += shift[f] + np.log(z)
        mo = 0
        for j in range(k):
            m = msg_ptr[a + j]
            for x in range(card[f_var[a + j]]):
                b = marg[mo + x]
                if b > 0.0:
                    total -= b * np.log(vf[m + x])
            mo += card[f_var[a + j]]
    return total, True
