"""Tree-reweighted belief propagation: a convex free energy and an upper
bound on log Z (Wainwright, Jaakkola & Willsky 2005), for training CRFs on
factor graphs where the Bethe approximation of loopy BP has several fixed
points.

Counting numbers.  Every factor f of two or more variables has an
appearance probability ρ_f ∈ (0, 1]: the share of a cover of the factor
graph by *factor forests* (sets of factors whose bipartite factor graph is
acyclic, so that exact BP runs on them) that hold f.  The free energy

    log Z_ρ(θ) = max_b  Σ_f <b_f, θ_f> + Σ_f ρ_f H(b_f) + Σ_v c_v H(b_v),
    c_v = 1 - Σ_{f ∋ v} ρ_f,

maximised over locally consistent beliefs b, is the convex combination of
the forests' exact entropies, so it is concave in b, log Z_ρ is an upper
bound on log Z, convex in θ, and its gradient in θ_f(x) is b_f(x) at the
maximiser (Wainwright et al. 2005 §4-5; for factors of any arity the
forests are hyperforests, their entropies still exact: the "order-one
hypertree" case of that paper, §7).  ρ ≡ 1 on a forest is the Bethe free
energy, which is then exact.  Factors over one variable have no entropy of
their own: their θ joins the variable's (ρ = 1, as on every forest).

Messages.  With cavity messages n_{v->f} = b_v / M_{f->v},

    b_v(x_v)     ∝ exp(θ_v) Π_{f ∋ v} M_{f->v}(x_v)^{ρ_f}
    M_{f->v}(x_v) = ⊕_{x_f \\ x_v} exp(θ_f(x_f) / ρ_f) Π_{u ∈ f, u ≠ v} n_{u->f}(x_u)
    b_f(x_f)     ∝ exp(θ_f(x_f) / ρ_f) Π_{u ∈ f} n_{u->f}(x_u)

(θ_v: the variable's unary factors; ⊕ = Σ for the bound and the marginals,
max for reweighted max-product — one kernel, parameterised like
``fgl.engines.graph.bp_scaled``'s).  These are the fixed-point equations of
Wainwright et al. 2005 §5.2 written on a factor graph; ρ ≡ 1 gives ordinary
BP.  Messages are stored in log space, normalised.

Schedule.  The trees hanging off the graph's cycles (through factors with
ρ_f = 1) are passed once inward before the sweeps and once outward after
them, exact there as BP is on a tree (``fgl.engines.graph.peeling``): on
150 CoNLL-2003 skip-chain articles they hold two thirds of the variables.
Each of their messages is made once: inward, every message into a
variable but the one from its factor toward the core; outward, that one.
A sweep visits the other variables, the core, in index order (the next
sweep in reverse) -- those whose inputs have moved since their last visit
(selective sweeps, ``propagate``) -- and renews every message M_{f->v} into the visited
variable v from the cavities n_{u->f} of f's other variables (one
exponential per entry, from the running log beliefs), in the probability
domain by the scaled kernels of ``fgl.engines.graph.bp_scaled`` (falling
back to log-sum-exp when a message underflows), then adds ρ_f·ΔM to v's
log belief.  Renewing all the messages into one variable at once is the
norm-product order of Hazan & Shashua (2010, §5): an exact
block-coordinate step on the dual of the convex free energy (the block:
the multipliers that tie v's belief to its factors'), which takes fewer
sweeps than updating factor by factor.
Damping, optional, is in log space.  A sweep is one loop body
(``fgl.engines.graph.trw_sweep``) that calls nothing but the scaled kernels
and inline exp and log (``fgl.engines.vector_math``): passing a score of
arrays into a helper per message costs numba a reference count per array
and call, which had doubled the time of a sweep.  A sweep has converged when it moves no
variable's belief by ``tol`` (``_belief_shift``: b·|Δ log b|, and √b·|Δ log b| for a
small belief that grows many-fold): measured per sweep, not
per message, since on CoNLL-2003 skip chains the messages kept moving by
1e-4 for hundreds of sweeps while no belief moved by 1e-7.  With
potentials in the hundreds, though, beliefs are near-deterministic and a
sweep can move none while the messages still swap the factor beliefs'
modes (the bound off by hundreds): so a run is converged only when its
factor beliefs also agree with its variable beliefs (their marginals
within ``GROSS_INCONSISTENCY`` and ``INCONSISTENCY_PER_TOL`` x tol,
``trw_beliefs._factor_gap``), else it sweeps on.  Beliefs and the
bound: ``fgl.engines.graph.trw_beliefs``.

The cover, and so ρ, comes from ``fgl.engines.graph.forest_cover``.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from fgl import stopping
from fgl.engines.graph import bp_scaled
from fgl.engines.graph.factor_graph import FactorGraph, GraphArrays
from fgl.engines.graph.forest_cover import DEFAULT_FORESTS, appearance_probabilities
from fgl.engines.graph.loopy import (
    BPResult,
    assignment_score,
    backtrack,
    check_potentials,
    log_factor_message,
    normalise_log,
)
from fgl.engines.graph.peeling import SweepOrders, sweep_orders
from fgl.engines.graph.trw_beliefs import (
    TINY,
    beliefs,
    log_cavity_messages,
    variable_log_belief,
)
from fgl.engines.graph.trw_potentials import ReweightedPotentials, reweighted_potentials
from fgl.engines.graph.trw_sweep import SweepScratch, sweep
from fgl.engines.vector_math import exp_neg, log_pos
from fgl.jit import njit

# a run whose factor beliefs disagree with its variable beliefs (L1, ``trw_beliefs._factor_gap``)
# by more than GROSS_INCONSISTENCY, or INCONSISTENCY_PER_TOL x its tol, has not converged,
# however little its last sweep moved a belief: with potentials in the hundreds the beliefs
# are near-deterministic and a sweep can move none while the messages still swap the
# factor beliefs' modes.  (On 150 CoNLL-2003 skip-chain articles runs to tol 1e-3 and 1e-5
# ended at most 53 and 250 x tol apart, none past the limit: no extra sweeps there.)
GROSS_INCONSISTENCY = 0.1
INCONSISTENCY_PER_TOL = 1000.0
# adaptive damping: every STALL_WINDOW sweeps, a residual above STALL_RATIO times the
# last check's raises the damping (0.5, then halfway to 1, at most MOST_DAMPING); on 150
# CoNLL-2003 skip-chain articles, halving (0.5) left 1 of 150 at 100 sweeps, 0.9 left 39
STALL_WINDOW = 10
STALL_RATIO = 0.5
MOST_DAMPING = 0.95
# a belief that a sweep multiplies (or divides) by more than e^GROWTH counts by the square
# root of its value, not the value (``_belief_shift``): it may be small, but it is on its way
GROWTH = 1.0
# selective sweeps: a core variable is revisited once its inputs have moved by SELECTIVE x tol
# (``propagate``), so one left out would have moved its belief by less than tol
SELECTIVE = 0.5


class RunState(NamedTuple):
    """What a run carries from one call of ``propagate`` to the next, as
    one argument: the log messages ``L`` (a warm start or zeros), the
    variables' log beliefs ``lb``, their normalised log beliefs after the
    last sweep ``last``, what each variable's inputs have moved since its
    last visit ``stale`` (selective sweeps), and ``state``: [last residual,
    residual at the last stall check, damping]."""

    L: np.ndarray
    lb: np.ndarray
    last: np.ndarray
    stale: np.ndarray
    state: np.ndarray


# --------------------------------------------------------------------------
# kernels


@njit(cache=True, nogil=True, inline="always")
def _cavity(j, card, f_var, msg_ptr, var_ptr, L, lb, lcav, cav):
    """log n_{v->f} = lb_v - L_{f->v} for the variable v of factor slot
    (edge) j, shifted to max 0, into lcav (and its exponential into cav)
    at the message's offset; -inf where the variable's belief is 0."""
    v = f_var[j]
    o = var_ptr[v]
    m = msg_ptr[j]
    cv = card[v]
    mx = -np.inf
    for x in range(cv):
        t = lb[o + x]
        c = -np.inf if t == -np.inf else t - L[m + x]
        lcav[m + x] = c
        if c > mx:
            mx = c
    if mx == -np.inf:
        mx = 0.0
        for x in range(cv):
            lcav[m + x] = 0.0
    for x in range(cv):
        lcav[m + x] -= mx
        cav[m + x] = np.exp(lcav[m + x])


@njit(cache=True, nogil=True, inline="always")
def _belief_shift(lb, var_ptr, lq, p, visit):
    """The largest change of a variable's belief since ``lq`` (normalised
    log beliefs) was taken: max over v and x of b_v(x)·|Δ log b_v(x)|, the
    change of the log belief weighted by the belief (a value the belief
    rules out does not count; one it decides does, however small its message
    entries) — by the belief's square root where the log belief changed by
    more than ``GROWTH`` — of the variables ``visit``; ``lq`` then holds
    their beliefs now (``p``: scratch).  Weighted by the belief alone, a
    value below 1e-6 that a sweep multiplied a hundred-fold counted as a
    change below 1e-4: a warm start from messages that had ruled it out
    ended there, sweeps before the value took over (on 400 CoNLL-2003
    skip-chain articles, one article 4.7 below its bound, and L-BFGS failed
    its line searches on the jump).  Weighted by the square root throughout,
    runs on CoNLL-2002 Dutch took twice the sweeps, for small beliefs that
    drift slowly.  Measured over a whole sweep: the messages into a
    variable can change in ways that cancel, and on a loopy graph they can
    keep moving along directions that change no belief (the dual of the
    convex free energy need not have one optimum)."""
    res = 0.0
    for v in visit:
        o, e = var_ptr[v], var_ptr[v + 1]
        mx = -np.inf
        for x in range(o, e):
            mx = max(mx, lb[x])
        if mx == -np.inf:
            continue
        z = 0.0
        for x in range(o, e):
            p[x - o] = exp_neg(lb[x] - mx)
            z += p[x - o]
        shift = mx + log_pos(z)
        for x in range(o, e):
            new = lb[x] - shift
            old = lq[x]
            if new != old:
                if new == -np.inf or old == -np.inf:
                    res = np.inf
                else:
                    q = p[x - o] / z
                    d = abs(new - old)
                    res = max(res, (np.sqrt(q) if d > GROWTH else q) * d)
            lq[x] = new
    return res


@njit(cache=True, nogil=True, inline="always")
def _commit(e, new, exact, cv, rho, damping, use_max, f_var, msg_ptr, var_ptr, L, lb):
    """Write the log message new[:cv] over L_{f->v} and move lb_v by ρ_f
    times the change.  ``exact``: new is already normalised (the common,
    undamped probability-domain case); otherwise it is normalised
    (log-sum-exp 0, or max 0) and damped in log space first.  Returns
    whether lb_v needs recomputing (an entry became or stopped being -inf)."""
    m = msg_ptr[e]
    if damping > 0.0 or not exact:
        normalise_log(new, cv, use_max)
        if damping > 0.0:
            for x in range(cv):
                new[x] = (1.0 - damping) * new[x] + damping * L[m + x]
            normalise_log(new, cv, use_max)
    o = var_ptr[f_var[e]]
    redo = False
    for x in range(cv):
        old = L[m + x]
        v = new[x]
        if v != old:
            if v == -np.inf or old == -np.inf:
                redo = True
            else:
                lb[o + x] += rho * (v - old)
        L[m + x] = v
    return redo


@njit(cache=True, nogil=True)
def _update_message(e, pot: ReweightedPotentials, g: GraphArrays, L, lb, use_max, damping,
                    work: SweepScratch):
    """M_{f->v} for edge e = (f, v) from the cavities of f's other
    variables (``_commit``)."""
    log_pot, psi, psi_at, rho = pot.log_pot, pot.psi, pot.psi_at, pot.rho
    card, f_ptr, f_var, e_fac = g.card, g.f_ptr, g.f_var, g.e_fac
    msg_ptr, var_ptr = g.msg_ptr, g.var_ptr
    lcav, cav, out, new, tmp, acc = work.lcav, work.cav, work.out, work.new, work.tmp, work.acc
    f = e_fac[e]
    a = f_ptr[f]
    k = f_ptr[f + 1] - a
    for j in range(a, a + k):
        if j != e:
            _cavity(j, card, f_var, msg_ptr, var_ptr, L, lb, lcav, cav)
    v = f_var[e]
    cv = card[v]
    if k == 2:
        other = a + 1 if e == a else a
        bp_scaled.pairwise_message(psi, psi_at[f], cv, card[f_var[other]], e == a, cav,
                                    msg_ptr[other], use_max, out)
    else:
        bp_scaled.factor_message(e, psi, psi_at, g, cav, use_max, out, work.digits)
    z = 0.0
    low = np.inf
    for x in range(cv):
        low = min(low, out[x])
        if use_max:
            z = max(z, out[x])
        else:
            z += out[x]
    exact = z < np.inf and low > TINY   # (an entry at 0 may be an underflow)
    if exact:   # normalised here: its sum (or max) is z
        inv = 1.0 / z
        for x in range(cv):
            out[x] *= inv
            new[x] = np.log(out[x])
    else:   # underflow: the same message in log space, over θ_f/ρ_f and log cavities
        log_factor_message(e, log_pot, pot.theta_at[f], g, lcav, use_max, new, tmp, acc, rho[f])
    if _commit(e, new, exact, cv, rho[f], damping, use_max, f_var, msg_ptr, var_ptr, L, lb):
        variable_log_belief(v, log_pot, rho, g, L, lb)


@njit(cache=True, nogil=True)
def _tree_pass(visit, toward, mode, pot: ReweightedPotentials, g: GraphArrays, L, lb, use_max,
               work: SweepScratch):
    """One undamped pass over the peeled variables ``visit``: in peeling
    order (``mode`` 1) renewing each variable's messages from all its
    factors but the one ``toward`` the core, in reverse (``mode`` 2) only
    that one -- each message final when made, and made once
    (``fgl.engines.graph.peeling``).  Messages that ``sweep`` leaves
    pending are made in turn, variable by variable, so that each sees the
    ones before it."""
    every = np.empty(0)   # (no stale array: every variable is visited)
    if sweep(visit, toward, mode, pot, g, L, lb, use_max, 0.0, every, 0.0, work)[0] == 0:
        return
    n = visit.shape[0]
    for k in range(n):
        n_pending = sweep(visit[k:k + 1], toward, mode, pot, g, L, lb, use_max, 0.0, every, 0.0,
                          work)[0]
        for j in range(n_pending):
            _update_message(work.pending[j], pot, g, L, lb, use_max, 0.0, work)


@njit(cache=True, nogil=True)
def propagate(pot: ReweightedPotentials, g: GraphArrays, orders: SweepOrders, run: RunState,
              done, use_max, tol, max_iter):
    """Sweeps over the core variables (in index order, then reversed,
    alternately), each renewing every message into the variable, until a
    sweep moves no core variable's belief by ``tol`` or more
    (``_belief_shift``), at most ``max_iter``; returns (sweeps run, last
    residual, variables visited).  ``orders``: the core and the peeled variables
    (``fgl.engines.graph.peeling``); a fresh run first passes the messages
    of the peeled trees inward, and every call ends by passing them back
    out.
    ``run`` (``RunState``), updated in place: the log messages ``L``
    (warm start or zeros); the variables' log beliefs ``lb``, computed
    first when the run is fresh (``done`` 0); ``last``, their normalised
    log beliefs after the last sweep (taken first when fresh).  Sweeps are
    selective (``sweep``): a core variable is visited when its inputs have
    moved by ``SELECTIVE`` x tol since its last visit (``stale``, per
    variable; every one is visited in a fresh run's first sweep), so
    unvisited variables would have moved by less than that; on 150
    CoNLL-2003 skip-chain articles (mid-training weights, tol 1e-3) a
    fifth of the core still moved after two sweeps, a twentieth after
    five.  A run may go on in several calls (``fgl.stopping.passes``) with
    the same result as one: ``done`` counts the sweeps of the earlier calls
    and ``state`` carries [last residual, residual at the last stall check,
    damping]."""
    M = g.msg_ptr[g.msg_ptr.shape[0] - 1]
    return propagate_into(pot, g, orders, run, done, use_max, tol, max_iter, np.zeros(M),
                          np.zeros(M), np.empty(g.card.shape[0], np.int64),
                          np.empty(g.e_fac.shape[0], np.int64))


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def propagate_into(pot: ReweightedPotentials, g: GraphArrays, orders: SweepOrders, run: RunState,
                   done, use_max, tol, max_iter, lcav, cav, seen, pending):
    """``propagate`` with its largest scratch given: ``lcav`` and ``cav``
    (zeros, one entry per message), ``seen`` (one per variable) and
    ``pending`` (one per edge); a caller running many instances reuses
    them (``fgl.engines.graph.trw_training``)."""
    log_pot, rho = pot.log_pot, pot.rho
    card, f_ptr, tab_ptr, v_ptr, var_ptr = g.card, g.f_ptr, g.tab_ptr, g.v_ptr, g.var_ptr
    L, lb, last, stale, state = run.L, run.lb, run.last, run.stale, run.state
    fresh = done == 0
    V = card.shape[0]
    F = f_ptr.shape[0] - 1
    if fresh:
        for v in range(V):
            variable_log_belief(v, log_pot, rho, g, L, lb)
    max_card, max_deg, max_arity = bp_scaled.widths(card, v_ptr, f_ptr)
    max_tab = 1
    for f in range(F):
        max_tab = max(max_tab, tab_ptr[f + 1] - tab_ptr[f])
    out = np.empty(2 * max_card)
    new = np.empty(max_card)
    core = orders.core
    if fresh:
        _belief_shift(lb, var_ptr, last, new, core)
        stale[:] = np.inf
    moved = np.empty(max_deg * max_card)
    vals = np.empty(2 * max_deg * max_card)
    slots = np.empty(2 * max_deg, dtype=np.int64)
    eps = SELECTIVE * tol
    acc = np.empty(max_card)
    tmp = np.empty(max_tab)
    digits = np.zeros(max_arity, dtype=np.int64)
    if max_arity < 2:   # (nothing to pass: unary factors are the variables' own)
        return 0, 0.0, 0
    work = SweepScratch(lcav, cav, seen, pending, out, new, acc, tmp, digits, moved, vals, slots)
    if fresh:
        _tree_pass(orders.inward, orders.toward, 1, pot, g, L, lb, use_max, work)
    res, mark, damping = state[0], state[1], state[2]
    sweeps = max_iter
    visits = 0
    for it in range(done + 1, done + max_iter + 1):
        if it % STALL_WINDOW == 0:   # (adaptive damping: see ``trw``)
            if res > STALL_RATIO * mark:
                damping = min(MOST_DAMPING, 0.5 if damping < 0.5 else (1.0 + damping) / 2)
            mark = res
        visit = core if it % 2 == 1 else orders.core_back
        n_pending, n_seen = sweep(visit, orders.toward, 0, pot, g, L, lb, use_max, damping, stale,
                                  eps, work)
        for i in range(n_pending):
            _update_message(pending[i], pot, g, L, lb, use_max, damping, work)
        visits += n_seen
        res = _belief_shift(lb, var_ptr, last, new, seen[:n_seen])
        if res < tol:
            sweeps = it - done
            break
    if not eps > 0.0:   # (sweeps that visited all kept no account: all are stale)
        stale[:] = np.inf
    state[0], state[1], state[2] = res, mark, damping
    _tree_pass(orders.outward, orders.toward, 2, pot, g, L, lb, use_max, work)
    return sweeps, res, visits


# --------------------------------------------------------------------------
# API


DECODERS = ("max_product", "marginals")


def trw(graph: FactorGraph, log_pot: np.ndarray, *, rho: np.ndarray | None = None,
        forests: int = DEFAULT_FORESTS, use_max: bool = False, decode: str = "max_product",
        damping: float = 0.0, tol: float = 1e-8, max_iter: int = 500,
        init: tuple | None = None) -> BPResult:
    """Tree-reweighted sum- or max-product on one factor graph (module
    docstring).  ``rho``: the appearance probability of every factor
    (default ``appearance_probabilities(graph, forests)``).  Sum-product:
    ``log_z`` is the upper bound log Z_ρ ≥ log Z (equal on a forest),
    ``factor_beliefs`` its gradient at the fixed point.  Max-product:
    ``map_state`` is back-tracked on a forest (exact), else each variable's
    max-belief argmax, and ``log_z`` its exact score; with ``decode =
    "marginals"`` the MAP is instead each variable's argmax under the
    sum-product beliefs (max-marginal decoding of the same convex
    approximation training used, Wainwright 2006), which is also what a
    max-product run that does not converge within ``max_iter`` on a loopy
    graph falls back to (``iterations`` then counts both runs).  ``init``: a previous
    result's ``messages``.  ``residual``: the largest change of a
    variable's belief in the last sweep (``_belief_shift``).

    Sequential reweighted message passing is not guaranteed to converge
    (it can cycle, most often with period two); damping changes the path
    to the fixed point, not the fixed point, which is unique where the
    free energy is strictly concave.  So when a window of sweeps does not
    halve the residual, the sweeps that follow are damped more
    (``STALL_WINDOW``, ``STALL_RATIO``, ``MOST_DAMPING``), starting from
    ``damping``."""
    log_pot = check_potentials(graph, log_pot)
    if not 0.0 <= damping < 1.0:
        raise ValueError("damping must lie in [0, 1)")
    rho = _checked_rho(graph, rho, forests)
    if decode not in DECODERS:
        raise ValueError(f"decode must be one of {', '.join(DECODERS)}")
    by_marginals = use_max and decode == "marginals"
    use_max = use_max and not by_marginals
    M = int(graph.msg_ptr[-1])
    L = np.zeros(M) if init is None else np.array(init[0], dtype=np.float64)
    if L.shape != (M,):
        raise ValueError("init messages do not match the graph")
    pot = reweighted_potentials(graph, log_pot, rho)
    lb = np.empty(int(graph.var_ptr[-1]))
    sweeps = _Sweeps(pot, graph, L, lb, damping, use_max)
    _, res = sweeps.until(tol, max_iter)
    if use_max and not res < tol and not graph.is_tree():   # max-product did not settle
        r = trw(graph, log_pot, rho=rho, use_max=True, decode="marginals", damping=damping,
                tol=tol, max_iter=max_iter)
        return dataclasses.replace(r, iterations=sweeps.done + r.iterations)
    bv = np.empty(int(graph.var_ptr[-1]))
    bf = np.empty(graph.n_table)
    lcav = np.empty(M)
    log_z, gap = beliefs(pot, graph.arrays, L, lb, bool(use_max), bv, bf, lcav)
    worst = min(GROSS_INCONSISTENCY, INCONSISTENCY_PER_TOL * tol)
    agree = use_max or gap <= worst
    more = 1
    while not agree and sweeps.done < max_iter:   # (converged too early: GROSS_INCONSISTENCY)
        _, res = sweeps.run(min(more, max_iter - sweeps.done), 0.0)
        more *= 2
        if not res < tol:
            _, res = sweeps.until(tol, max_iter - sweeps.done)
        log_z, gap = beliefs(pot, graph.arrays, L, lb, False, bv, bf, lcav)
        agree = gap <= worst
    map_state = map_score = None
    if use_max or by_marginals:
        map_state = _decode(graph, log_pot, L, lb, bv, lcav, use_max)
        map_score = assignment_score(graph, log_pot, map_state)
        log_z = map_score
    return BPResult(log_z=log_z, var_flat=bv, var_ptr=graph.var_ptr, factor_beliefs=bf,
                    iterations=sweeps.done, residual=float(res),
                    converged=bool(res < tol and agree),
                    map_state=map_state, map_score=map_score, messages=(L,))


def _checked_rho(graph: FactorGraph, rho: np.ndarray | None, forests: int) -> np.ndarray:
    """``rho`` as a float array (default: the cover's), checked."""
    if rho is None:
        rho = appearance_probabilities(graph, forests)
    rho = np.ascontiguousarray(rho, dtype=np.float64)
    if rho.shape != (graph.n_factors,) or not ((rho > 0) & (rho <= 1)).all():
        raise ValueError("rho needs one value in (0, 1] per factor")
    return rho


class _Sweeps:
    """``propagate`` from the messages ``L`` (updated in place) as one run
    over several calls: its state, residual and scratch kept between
    them."""

    def __init__(self, pot: ReweightedPotentials, graph: FactorGraph, L: np.ndarray,
                 lb: np.ndarray, damping: float, use_max: bool):
        self.pot, self.graph, self.use_max = pot, graph, bool(use_max)
        self.run_state = RunState(L, lb, np.zeros_like(lb), np.zeros(graph.n_vars),
                                  np.array([np.inf, np.inf, float(damping)]))
        self.done = 0
        self.visits = 0   # (core variables visited, over all sweeps)
        self.orders = sweep_orders(graph, pot.rho)

    def run(self, n: int, tol: float) -> tuple[int, float]:
        """At most ``n`` more sweeps, until one moves no belief by ``tol``."""
        k, r, seen = propagate(self.pot, self.graph.arrays, self.orders, self.run_state,
                               self.done, self.use_max, float(tol), int(n))
        self.visits += int(seen)
        self.done += int(k)
        return k, r

    def until(self, tol: float, max_iter: int) -> tuple[int, float]:
        """``run`` in chunks when a training run could ask to stop
        (``fgl.stopping``); returns (sweeps run, last residual)."""
        return stopping.passes(lambda n: self.run(n, tol), int(max_iter), float(tol))


def _decode(graph: FactorGraph, log_pot: np.ndarray, L: np.ndarray, lb: np.ndarray,
            bv: np.ndarray, lcav: np.ndarray, use_max: bool) -> np.ndarray:
    """The MAP assignment: back-tracked over the cavity messages on a
    forest (max-product), else each variable's belief argmax."""
    map_state = np.empty(graph.n_vars, dtype=np.int64)
    if use_max and graph.is_tree():
        log_cavity_messages(graph.arrays, L, lb, lcav)
        roots, order_f, order_e = graph.decode_order()
        with np.errstate(divide="ignore"):
            backtrack(log_pot, graph.arrays, lcav, np.log(bv), roots, order_f, order_e,
                      map_state)
    else:
        map_state[:] = [int(np.argmax(bv[graph.var_ptr[v]:graph.var_ptr[v + 1]]))
                        for v in range(graph.n_vars)]
    return map_state
