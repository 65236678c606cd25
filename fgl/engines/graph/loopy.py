"""Belief propagation on discrete factor graphs (Sutton & McCallum §1.4.4, §1.5.1).

General CRFs need marginals p(y_c | x) for the gradient and the most likely
assignment for prediction (Sutton & McCallum §1.4.4).  On a tree, belief propagation
— the generalisation of forward-backward — gives both exactly; on a graph
with cycles (a skip-chain CRF, Sutton & McCallum §1.5.1) the same message updates
give the loopy-BP approximation, whose fixed points are the stationary
points of the Bethe free energy (Yedidia et al., cited in
Sutton & McCallum §1.4.4).

Messages live in log space and are renormalised after every update (subtract
their log-sum-exp, or their max for max-product), the log-domain remedy of
Sutton & McCallum §1.4.6.  For an edge e = (f, v):

    m_{f->v}(x_v) = ⊕_{x_f : x_f[v] = x_v} θ_f(x_f) + Σ_{u in f, u != v} m_{u->f}(x_u)
    m_{v->f}(x_v) = Σ_{g ∋ v, g != f} m_{g->v}(x_v)

with ⊕ = log-sum-exp (sum-product) or max (max-product): one kernel,
``log_factor_message``, parameterised by ``use_max``.  Damping mixes each new
factor->variable message with the old one in log space,
``(1 - d)·new + d·old``, then renormalises.

A run is a *schedule* of (edge, direction) updates repeated until the largest
change of any message within one pass drops below ``tol``:

* flooding: every factor->variable message, then every variable->factor
  message (the parallel schedule);
* TRP (tree-based reparameterisation, Wainwright et al. 2001 — the schedule
  Sutton & McCallum §1.5.1 uses for skip-chain CRFs): for each spanning tree of a
  cover, the leaves-to-root then root-to-leaves passes of exact BP on that
  tree, messages on edges outside the tree held fixed as extra inputs.

Both schedules are integer arrays built by
``fgl.engines.graph.factor_graph.FactorGraph``;
the kernels below run them over the flat arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fgl import stopping
from fgl.engines.graph import bp_scaled
from fgl.engines.graph.factor_graph import FactorGraph, GraphArrays
from fgl.jit import njit

NEG_INF = -np.inf


@dataclass
class BPResult:
    """The outcome of one inference call."""

    log_z: float                    # Bethe log Z (exact on trees); max-product: score of map_state
    var_flat: np.ndarray            # normalised (max-)marginals, all variables, var_ptr layout
    var_ptr: np.ndarray             # [V+1] offsets of each variable's block in var_flat
    factor_beliefs: np.ndarray      # flat, tab_ptr layout, each block normalised
    iterations: int
    residual: float                 # largest change of a normalised message entry, last pass
    converged: bool
    map_state: np.ndarray | None = None   # decoded assignment (max-product and exact)
    map_score: float | None = None        # its score Σ_f θ_f(x_f)
    # (factor->var, var->factor) messages, normalised, probability domain: for warm starts
    messages: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def var_beliefs(self) -> list[np.ndarray]:
        """The normalised (max-)marginal of each variable."""
        p = self.var_ptr
        return [self.var_flat[p[v]:p[v + 1]] for v in range(len(p) - 1)]


# --------------------------------------------------------------------------
# kernels


@njit(cache=True, nogil=True)
def normalise_log(buf, n, use_max):
    """Shift buf[:n] so its log-sum-exp (or max) is 0; an all -inf vector
    (no mass anywhere) becomes uniform."""
    m = -np.inf
    for x in range(n):
        if buf[x] > m:
            m = buf[x]
    if m == -np.inf:
        for x in range(n):
            buf[x] = 0.0
        return
    c = m
    if not use_max:
        a = 0.0
        for x in range(n):
            a += np.exp(buf[x] - m)
        c = m + np.log(a)
    for x in range(n):
        buf[x] -= c


@njit(cache=True, nogil=True)
def log_factor_message(e, log_pot, t0, g: GraphArrays, vf, use_max, out, tmp, acc, r=1.0):
    """m_{f->v} for edge e = (f, v) into out[:card[v]] (normalised), over
    the table log_pot[t0:] / r (tree-reweighted BP's θ_f / ρ_f; BP's r is
    1; t0 is f's own table, ``tab_ptr[f]``, or a tied factor's)."""
    card, f_ptr, f_var, tab_ptr = g.card, g.f_ptr, g.f_var, g.tab_ptr
    e_fac, e_stride, msg_ptr = g.e_fac, g.e_stride, g.msg_ptr
    f = e_fac[e]
    a = f_ptr[f]
    b = f_ptr[f + 1]
    n = tab_ptr[f + 1] - tab_ptr[f]
    cv = card[f_var[e]]
    st = e_stride[e]
    for x in range(cv):
        out[x] = -np.inf
    for i in range(n):
        s = log_pot[t0 + i] / r
        for j in range(a, b):
            if j != e:
                s += vf[msg_ptr[j] + (i // e_stride[j]) % card[f_var[j]]]
        tmp[i] = s
        x = (i // st) % cv
        if s > out[x]:
            out[x] = s
    if not use_max:
        for x in range(cv):
            acc[x] = 0.0
        for i in range(n):
            x = (i // st) % cv
            if out[x] > -np.inf:
                acc[x] += np.exp(tmp[i] - out[x])
        for x in range(cv):
            if acc[x] > 0.0:
                out[x] += np.log(acc[x])
    normalise_log(out, cv, use_max)


@njit(cache=True, nogil=True)
def _variable_message(e, card, f_var, msg_ptr, v_ptr, v_edge, fv, use_max, out):
    """m_{v->f} for edge e = (f, v) into out[:card[v]] (normalised)."""
    v = f_var[e]
    cv = card[v]
    for x in range(cv):
        out[x] = 0.0
    for j in range(v_ptr[v], v_ptr[v + 1]):
        e2 = v_edge[j]
        if e2 != e:
            o = msg_ptr[e2]
            for x in range(cv):
                out[x] += fv[o + x]
    normalise_log(out, cv, use_max)


@njit(cache=True, nogil=True)
def _commit(msg, off, new, n, damping, use_max):
    """Write new (damped in log space, then renormalised) over msg[off:off+n];
    return the largest absolute change (inf when an entry becomes or stops
    being -inf)."""
    if damping > 0.0:
        for x in range(n):
            new[x] = (1.0 - damping) * new[x] + damping * msg[off + x]
        normalise_log(new, n, use_max)
    change = 0.0
    for x in range(n):
        old = msg[off + x]
        v = new[x]
        if v != old:
            d = abs(v - old)
            if d > change:
                change = d
        msg[off + x] = v
    return change


@njit(cache=True, nogil=True)
def _propagate(log_pot, g: GraphArrays, sched_edge, sched_dir, use_max, damping, tol, max_iter,
               fv, vf):
    """Repeat the schedule (edge, direction 1 = factor->variable,
    0 = variable->factor) until one pass changes no message by ``tol`` or
    more; returns (passes run, largest change in the last pass)."""
    card, f_ptr, f_var, tab_ptr = g.card, g.f_ptr, g.f_var, g.tab_ptr
    msg_ptr, v_ptr, v_edge = g.msg_ptr, g.v_ptr, g.v_edge
    max_card = 1
    for v in range(card.shape[0]):
        max_card = max(max_card, card[v])
    max_tab = 1
    for f in range(f_ptr.shape[0] - 1):
        max_tab = max(max_tab, tab_ptr[f + 1] - tab_ptr[f])
    out = np.empty(max_card)
    acc = np.empty(max_card)
    tmp = np.empty(max_tab)
    res = np.inf
    for it in range(1, max_iter + 1):
        res = 0.0
        for k in range(sched_edge.shape[0]):
            e = sched_edge[k]
            cv = card[f_var[e]]
            if sched_dir[k] == 1:
                log_factor_message(e, log_pot, tab_ptr[g.e_fac[e]], g, vf, use_max, out, tmp, acc)
                c = _commit(fv, msg_ptr[e], out, cv, damping, use_max)
            else:
                _variable_message(e, card, f_var, msg_ptr, v_ptr, v_edge, fv, use_max, out)
                c = _commit(vf, msg_ptr[e], out, cv, 0.0, use_max)
            if c > res:
                res = c
        if res < tol:
            return it, res
    return max_iter, res


@njit(cache=True, nogil=True)
def _log_beliefs(log_pot, g: GraphArrays, fv, vf, log_bv, log_bf):
    """Log beliefs, each block normalised to log-sum-exp 0:
    b_v ∝ exp Σ_{f ∋ v} m_{f->v},  b_f ∝ exp(θ_f + Σ_{v in f} m_{v->f})."""
    card, f_ptr, f_var, tab_ptr, e_stride = g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_stride
    msg_ptr, v_ptr, v_edge, var_ptr = g.msg_ptr, g.v_ptr, g.v_edge, g.var_ptr
    for v in range(card.shape[0]):
        o = var_ptr[v]
        cv = card[v]
        for x in range(cv):
            log_bv[o + x] = 0.0
        for j in range(v_ptr[v], v_ptr[v + 1]):
            m = msg_ptr[v_edge[j]]
            for x in range(cv):
                log_bv[o + x] += fv[m + x]
        normalise_log(log_bv[o:o + cv], cv, False)
    for f in range(f_ptr.shape[0] - 1):
        t0 = tab_ptr[f]
        n = tab_ptr[f + 1] - t0
        for i in range(n):
            s = log_pot[t0 + i]
            for j in range(f_ptr[f], f_ptr[f + 1]):
                s += vf[msg_ptr[j] + (i // e_stride[j]) % card[f_var[j]]]
            log_bf[t0 + i] = s
        normalise_log(log_bf[t0:t0 + n], n, False)


@njit(cache=True, nogil=True)
def _bethe(log_pot, g: GraphArrays, log_bv, log_bf):
    """Σ_f Σ_x b_f (θ_f - log b_f) + Σ_v (d_v - 1) Σ_x b_v log b_v, 0 log 0 = 0."""
    card, v_ptr, var_ptr = g.card, g.v_ptr, g.var_ptr
    total = 0.0
    for i in range(log_bf.shape[0]):
        lb = log_bf[i]
        if lb > -np.inf:
            total += np.exp(lb) * (log_pot[i] - lb)
    for v in range(card.shape[0]):
        d = v_ptr[v + 1] - v_ptr[v]
        if d == 1:
            continue
        s = 0.0
        for k in range(var_ptr[v], var_ptr[v + 1]):
            lb = log_bv[k]
            if lb > -np.inf:
                s += np.exp(lb) * lb
        total += (d - 1) * s
    return total


@njit(cache=True, nogil=True)
def _argmax_var(card, var_ptr, log_bv, v):
    """The value of variable v with the highest (max-)belief, the first on ties."""
    best = -np.inf
    bx = 0
    for x in range(card[v]):
        if log_bv[var_ptr[v] + x] > best:
            best = log_bv[var_ptr[v] + x]
            bx = x
    return bx


@njit(cache=True, nogil=True)
def _argmax_beliefs(g: GraphArrays, log_bv, out):
    """Each variable's ``_argmax_var`` into out."""
    for v in range(g.card.shape[0]):
        out[v] = _argmax_var(g.card, g.var_ptr, log_bv, v)


@njit(cache=True, nogil=True)
def backtrack(log_pot, g: GraphArrays, vf, log_bv, roots, order_f, order_e, out):
    """Max-product decoding on a forest from the log variable->factor
    messages ``vf`` and log max-marginals ``log_bv``: each root (``roots``,
    ``order_f``, ``order_e``: ``FactorGraph.decode_order``) takes the argmax
    of its max-marginal, then every factor, in BFS order, the best entry
    consistent with its (already decoded) parent variable, scored by the
    max-product messages from its children's subtrees — so ties stay
    consistent."""
    card, f_ptr, f_var, tab_ptr = g.card, g.f_ptr, g.f_var, g.tab_ptr
    e_stride, msg_ptr, var_ptr = g.e_stride, g.msg_ptr, g.var_ptr
    for v in range(card.shape[0]):
        out[v] = -1
    for k in range(roots.shape[0]):
        out[roots[k]] = _argmax_var(card, var_ptr, log_bv, roots[k])
    for k in range(order_f.shape[0]):
        f = order_f[k]
        ep = order_e[k]
        if ep < 0:
            continue
        xp = out[f_var[ep]]
        t0 = tab_ptr[f]
        n = tab_ptr[f + 1] - t0
        best = -np.inf
        bi = xp * e_stride[ep]
        for i in range(n):
            if (i // e_stride[ep]) % card[f_var[ep]] != xp:
                continue
            s = log_pot[t0 + i]
            for j in range(f_ptr[f], f_ptr[f + 1]):
                if j != ep:
                    s += vf[msg_ptr[j] + (i // e_stride[j]) % card[f_var[j]]]
            if s > best:
                best = s
                bi = i
        for j in range(f_ptr[f], f_ptr[f + 1]):
            if j != ep:
                out[f_var[j]] = (bi // e_stride[j]) % card[f_var[j]]


@njit(cache=True, nogil=True)
def _score(log_pot, g: GraphArrays, y):
    """Σ_f θ_f(y_f) of a full assignment y."""
    f_ptr, f_var, tab_ptr, e_stride = g.f_ptr, g.f_var, g.tab_ptr, g.e_stride
    total = 0.0
    for f in range(f_ptr.shape[0] - 1):
        i = 0
        for j in range(f_ptr[f], f_ptr[f + 1]):
            i += y[f_var[j]] * e_stride[j]
        total += log_pot[tab_ptr[f] + i]
    return total


# --------------------------------------------------------------------------
# API


def check_potentials(graph: FactorGraph, log_pot) -> np.ndarray:
    """``log_pot`` as a flat float array, checked against the graph's tables."""
    log_pot = np.ascontiguousarray(log_pot, dtype=np.float64).reshape(-1)
    if log_pot.shape[0] != graph.n_table:
        raise ValueError(f"log_pot has {log_pot.shape[0]} entries; the graph's tables need "
                         f"{graph.n_table}")
    if log_pot.size and not log_pot.max() < np.inf:   # (NaN or +inf; one pass)
        raise ValueError("log-potentials must be finite or -inf")
    return log_pot


def belief_propagation(graph: FactorGraph, log_pot: np.ndarray, *, schedule: str = "flooding",
                       use_max: bool = False, damping: float = 0.0, tol: float = 1e-10,
                       max_iter: int = 500, trees: Sequence[np.ndarray] | None = None,
                       init: tuple[np.ndarray, np.ndarray] | None = None,
                       log_domain: bool = False) -> BPResult:
    """Loopy (exact on forests) sum- or max-product BP (Sutton & McCallum §1.4.4).

    ``schedule`` is "flooding" or "trp" (trees from ``trees``, default
    ``graph.spanning_trees()``; Sutton & McCallum §1.5.1).  ``init`` warm-starts from a
    previous result's ``messages``.  Sum-product: ``log_z`` is the Bethe
    approximation (exact on a forest), beliefs the approximate marginals.
    Max-product: beliefs are the normalised max-marginals, ``map_state`` the
    decoded assignment (back-tracking on a forest, per-variable belief argmax
    otherwise) and ``log_z`` = ``map_score`` its exact score.

    On a forest, TRP (default trees, undamped) stops after its one exact
    pass, reporting residual 0.  The scaled probability-domain kernels of
    ``fgl.engines.graph.bp_scaled`` run first; when a message underflows there (or
    ``log_domain`` is set) the log-space kernels of this module run instead,
    from the same start."""
    log_pot = check_potentials(graph, log_pot)
    if not 0.0 <= damping < 1.0:
        raise ValueError("damping must lie in [0, 1)")
    if schedule == "flooding":
        sched_edge, sched_dir = graph.flooding_schedule()
    elif schedule == "trp":
        sched_edge, sched_dir = graph.trp_schedule(trees)
    else:
        raise ValueError(f"unknown schedule {schedule!r} (flooding or trp)")
    M = int(graph.msg_ptr[-1])
    if init is None:
        fv0 = vf0 = None
    else:
        fv0 = np.array(init[0], dtype=np.float64)
        vf0 = np.array(init[1], dtype=np.float64)
        if fv0.shape != (M,) or vf0.shape != (M,):
            raise ValueError("init messages do not match the graph")
    # on a forest the default TRP cover is one tree, and one undamped pass over it is
    # exact BP: no second pass to see that nothing changes
    exact_pass = schedule == "trp" and trees is None and damping == 0.0 and graph.is_tree()
    args = (graph, log_pot, sched_edge, sched_dir, schedule == "flooding", bool(use_max),
            float(damping), float(tol), 1 if exact_pass else int(max_iter))
    result = None if log_domain else _run_scaled(*args, fv0, vf0)
    if result is None:
        with np.errstate(divide="ignore"):
            result = _run_log(*args, None if fv0 is None else np.log(fv0),
                              None if vf0 is None else np.log(vf0))
    if exact_pass:
        result.residual, result.converged = 0.0, True
    return result


def _run_scaled(g: FactorGraph, log_pot, sched_edge, sched_dir, flooding, use_max, damping, tol,
                max_iter, fv, vf) -> BPResult | None:
    """BP by ``fgl.engines.graph.bp_scaled``; None when a normaliser failed."""
    M = int(g.msg_ptr[-1])
    msgs = np.empty(2 * M)  # factor->variable messages, then variable->factor ones
    if fv is None:  # uniform, normalised
        c = g.card[g.f_var]
        msgs[:M] = np.repeat(np.ones(c.size) if use_max else 1.0 / c, c)
        msgs[M:] = msgs[:M]
    else:
        msgs[:M] = fv
        msgs[M:] = vf
    fv, vf = msgs[:M], msgs[M:]
    pot = bp_scaled.scaled_potentials(log_pot, g.tab_ptr)
    it, res, ok = stopping.passes(   # (in chunks: a training run's stop request is heard)
        lambda n: bp_scaled.propagate(pot, g.arrays, sched_edge, sched_dir, flooding, use_max,
                                      damping, tol, n, msgs),
        max_iter, tol)
    if not ok:
        return None
    bv = np.empty(int(g.var_ptr[-1]))
    bf = np.empty(g.n_table)
    log_z, ok = bp_scaled.beliefs(log_pot, pot, g.arrays, fv, vf, use_max, bv, bf)
    if not ok:
        return None
    map_state = None
    if use_max:
        with np.errstate(divide="ignore"):
            map_state = _decode(g, log_pot, np.log(vf), np.log(bv))
    return _result(g, log_pot, float(log_z), bv, bf, it, res, tol, map_state, (fv, vf))


def _run_log(g: FactorGraph, log_pot, sched_edge, sched_dir, flooding, use_max, damping, tol,
             max_iter, fv, vf) -> BPResult:
    """BP by the log-space kernels of this module (messages returned in the
    probability domain, like ``_run_scaled``'s)."""
    M = int(g.msg_ptr[-1])
    fv = np.zeros(M) if fv is None else fv
    vf = np.zeros(M) if vf is None else vf
    it, res = stopping.passes(
        lambda n: _propagate(log_pot, g.arrays, sched_edge, sched_dir, use_max, damping, tol, n,
                             fv, vf),
        max_iter, tol)
    log_bv = np.empty(int(g.var_ptr[-1]))
    log_bf = np.empty(g.n_table)
    _log_beliefs(log_pot, g.arrays, fv, vf, log_bv, log_bf)
    map_state = None
    if use_max:
        map_state = _decode(g, log_pot, vf, log_bv)
        log_z = 0.0
    else:
        log_z = float(_bethe(log_pot, g.arrays, log_bv, log_bf))
    return _result(g, log_pot, log_z, np.exp(log_bv), np.exp(log_bf), it, res, tol, map_state,
                   (np.exp(fv), np.exp(vf)))


def _decode(g: FactorGraph, log_pot, log_vf, log_bv) -> np.ndarray:
    """The max-product assignment from log variable->factor messages and log
    max-marginals: back-tracking on a forest, each belief's argmax otherwise."""
    map_state = np.empty(g.n_vars, dtype=np.int64)
    if g.is_tree():
        roots, order_f, order_e = g.decode_order()
        backtrack(log_pot, g.arrays, log_vf, log_bv, roots, order_f, order_e, map_state)
    else:
        _argmax_beliefs(g.arrays, log_bv, map_state)
    return map_state


def _result(g: FactorGraph, log_pot, log_z, bv, bf, it, res, tol, map_state, messages
            ) -> BPResult:
    map_score = None
    if map_state is not None:
        map_score = assignment_score(g, log_pot, map_state)
        log_z = map_score
    return BPResult(log_z=log_z, var_flat=bv, var_ptr=g.var_ptr, factor_beliefs=bf,
                    iterations=int(it), residual=float(res), converged=bool(res < tol),
                    map_state=map_state, map_score=map_score, messages=messages)


def assignment_score(graph: FactorGraph, log_pot: np.ndarray, y: np.ndarray) -> float:
    """Σ_f θ_f(y_f), the score of a full assignment y."""
    return float(_score(log_pot, graph.arrays, y))
