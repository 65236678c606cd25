"""Which variables a sweep of tree-reweighted BP (``fgl.engines.graph.trw``)
visits: those whose messages can still change.

A message M_{f->v} is a function of the cavities of f's other variables
alone, so a variable none of whose neighbours has moved since its last
visit would get the messages it has.  Sweeping only the *stale* variables
makes a sweep cost what is still moving, not the whole core (residual
scheduling in the spirit of Elidan, McGraw & Koller 2006, kept to the
sweep order).  A move is the spread of the change of a variable's log
belief over its values (a shift of them all moves nothing); moves below
``ACTIVITY_PER_TOL`` x the run's tol are added up per variable and passed
on once their sum exceeds it, so none is lost.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.jit import njit

# a variable's neighbours are revisited once its belief has moved by more than this x tol
# (the convergence test's measure of a move, ``trw._belief_shift``, is never larger)
ACTIVITY_PER_TOL = 0.1


class Activity(NamedTuple):
    """One TRW run's record of which core variables are stale (module
    docstring).  An empty ``stale`` visits every variable (the tree
    passes)."""

    stale: np.ndarray    # [V] bool
    moved: np.ndarray    # [V] spread of the log belief's change not yet passed on
    eps: np.ndarray      # [1] ACTIVITY_PER_TOL x the run's tol
    seen: np.ndarray     # the variables the last sweep visited (then the pending ones)
    before: np.ndarray   # [max card] scratch: a belief before its visit


def activity(n_vars: int, n_edges: int, max_card: int, track: bool) -> Activity:
    """An ``Activity`` for a graph (every variable stale), or, without
    ``track``, the empty one that visits every variable."""
    n = n_vars if track else 0
    return Activity(np.ones(n, dtype=np.bool_), np.zeros(n), np.zeros(1),
                    np.empty(n_vars + n_edges if track else 0, dtype=np.int64),
                    np.empty(max(1, max_card)))


@njit(cache=True, nogil=True, inline="always")
def note_move(v, cv, o, lb, before, damping, active, f_ptr, f_var, e_fac, v_ptr, v_edge):
    """After a visit of v: add how far its log belief moved (the spread of
    the change over its values: a shift of all of them moves nothing) to
    ``active.moved``, and once that passes ``active.eps[0]`` mark v's
    neighbours stale (``Activity``).  Damped, v itself stays stale while
    it moves: its messages have not reached their values."""
    lo = np.inf
    hi = -np.inf
    for x in range(cv):
        a, b = before[x], lb[o + x]
        if a == -np.inf or b == -np.inf:
            if a != b:
                lo, hi = -np.inf, np.inf
            continue
        lo = min(lo, b - a)
        hi = max(hi, b - a)
    if hi < lo:   # (no value left: nothing moved)
        return
    spread = hi - lo
    eps = active.eps[0]
    if damping > 0.0 and spread > eps:
        active.stale[v] = True
    active.moved[v] += spread
    if active.moved[v] > eps:
        active.moved[v] = 0.0
        mark_neighbours(v, active.stale, f_ptr, f_var, e_fac, v_ptr, v_edge)


@njit(cache=True, nogil=True, inline="always")
def mark_neighbours(v, stale, f_ptr, f_var, e_fac, v_ptr, v_edge):
    """stale[u] = True for every other u sharing a factor of two or more
    variables with v."""
    for j in range(v_ptr[v], v_ptr[v + 1]):
        f = e_fac[v_edge[j]]
        if f_ptr[f + 1] - f_ptr[f] >= 2:
            for s in range(f_ptr[f], f_ptr[f + 1]):
                if f_var[s] != v:
                    stale[f_var[s]] = True
