"""Tree-reweighted BP over a block of training instances in one kernel call.

A training evaluation under ``infer trw`` runs, per instance, the factor
tables θ_f from the weights (Sutton & McCallum eq. 1.54), the reweighted
tables ψ, the sweeps of ``fgl.engines.graph.trw.propagate`` to the
tolerance, the beliefs and the bound (``trw_beliefs.beliefs``), and the
belief-expected feature counts.  Each step is a compiled kernel; called
instance by instance from Python, each call checks and unpacks its
arguments and allocates fresh arrays (a few MB per article: page faults),
all while holding the GIL.  ``expect_block`` makes the same calls, with
the same arguments and in the same order as ``fgl.engines.graph.trw.trw``
(sum-product) and the factor-graph program's per-instance path, for a
whole block of instances without leaving compiled code, with scratch sized
for the block's largest instance and reused by each: the same messages
and bound, bit for bit, and the same counts to rounding — the kernel makes
the table of factors with the same attribute rows once (``tied_factors``:
a skip chain's transitions) and gathers their counts from their summed
beliefs (``tests/engines/graph/test_trw_training.py``).
On 150 CoNLL-2003 skip-chain articles (a clique per name) an evaluation
took 0.85-0.98x the per-instance path's time on one thread, 0.88-0.93x on
two (docs/language.md, "What a sweep visits").

The kernel reads the instances' graphs from flat arrays: every
``GraphArrays`` and ``SweepOrders`` field of every instance concatenated,
with offsets (``InstanceArrays``, built once per data set and counting
numbers ρ), and writes the messages of every instance into one flat
array, whose slices a ``WarmStart`` keeps.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fgl.engines.graph.factor_graph import FactorGraph, GraphArrays
from fgl.engines.graph.peeling import SweepOrders, sweep_orders
from fgl.engines.graph.table_kernels import (
    clamp,
    factor_tables,
    feature_expectations,
    tied_tables,
)
from fgl.engines.graph.trw import (
    GROSS_INCONSISTENCY,
    INCONSISTENCY_PER_TOL,
    RunState,
    propagate_into,
)
from fgl.engines.graph.trw_beliefs import beliefs
from fgl.engines.graph.trw_potentials import ReweightedPotentials, reweighted_tables
from fgl.jit import njit

GRAPH_FIELDS = GraphArrays._fields
ORDER_FIELDS = SweepOrders._fields


class InstanceArrays(NamedTuple):
    """Every instance's graph arrays and sweep orders, concatenated field
    by field (``graph[k]`` is ``GRAPH_FIELDS[k]``, ``orders[k]``
    ``ORDER_FIELDS[k]``), instance i's part of field k at
    ``graph_at[k, i]:graph_at[k, i + 1]``; ``rho`` and ``gold`` (-1:
    hidden) likewise at ``rho_at`` and ``gold_at``; instance i's messages
    at ``msg_at[i]:msg_at[i + 1]`` of a flat message array."""

    graph: tuple
    graph_at: np.ndarray
    orders: tuple
    orders_at: np.ndarray
    rho: np.ndarray
    rho_at: np.ndarray
    gold: np.ndarray
    gold_at: np.ndarray
    msg_at: np.ndarray


class FeatureRows(NamedTuple):
    """The factor graph program's attribute rows (``FactorGraphData`` and
    ``FactorGraphProgram``) that ``table_kernels`` read, as one argument,
    and ``rep``: per factor, the factor of its instance (numbered from the
    instance's first) whose θ table is its own (``tied_factors``)."""

    inst_fptr: np.ndarray
    fac_ptr: np.ndarray
    fac_row: np.ndarray
    fac_val: np.ndarray
    row_ptr: np.ndarray
    feat_config: np.ndarray
    dense: np.ndarray
    rep: np.ndarray


def tied_factors(graphs: list[FactorGraph], inst_fptr: np.ndarray, fac_ptr: np.ndarray,
                 fac_row: np.ndarray, fac_val: np.ndarray) -> np.ndarray:
    """``FeatureRows.rep`` of every instance (``table_kernels.tied_tables``):
    in a skip chain every chain edge's transition table is one table, made
    once per instance, its ψ taken once per ρ and its beliefs summed where
    it lies; on 100 CoNLL-2002 Dutch articles nine tenths of the table
    entries were chain edges'."""
    parts = []
    for i, g in enumerate(graphs):
        f0 = int(inst_fptr[i])
        parts.append(tied_tables(g.tab_ptr, g.f_ptr, fac_ptr[f0:f0 + g.n_factors + 1],
                                 fac_row, fac_val))
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


class BlockMessages(NamedTuple):
    """Where each pick's sweeps start and where its messages end, as one
    argument: pick k starts from ``inits[init_at[k]:]`` (from zeros when
    ``init_at[k]`` < 0), and instance i leaves its final messages in
    ``msgs[msg_at[i]:msg_at[i + 1]]`` (``InstanceArrays.msg_at``)."""

    inits: np.ndarray
    init_at: np.ndarray
    msgs: np.ndarray


class BlockSettings(NamedTuple):
    """The settings of a block's runs, as one argument: ``damping``,
    ``tol`` and ``max_iter`` as for ``trw.trw``, and ``clamped``: the
    factor tables clamped to the gold labels."""

    damping: float
    tol: float
    max_iter: int
    clamped: bool


class BlockRuns(NamedTuple):
    """Per pick, what its run ended with (written by ``expect_block``): the
    bound ``log_z``, the ``sweeps`` run, the last ``residual``, and whether
    it ``converged``."""

    log_z: np.ndarray
    sweeps: np.ndarray
    residual: np.ndarray
    converged: np.ndarray


def block_runs(n: int) -> BlockRuns:
    """Empty ``BlockRuns`` for ``n`` picks."""
    return BlockRuns(np.empty(n), np.empty(n, dtype=np.int64), np.empty(n),
                     np.empty(n, dtype=np.bool_))


def _joined(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The arrays ``parts`` concatenated, and where each starts (and the end)."""
    at = np.zeros(len(parts) + 1, dtype=np.int64)
    at[1:] = np.cumsum([len(p) for p in parts])
    return (np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)), at


def instance_arrays(graphs: list[FactorGraph], rhos: list[np.ndarray],
                    gold: list[np.ndarray]) -> InstanceArrays:
    """The flat ``InstanceArrays`` of ``graphs`` under counting numbers
    ``rhos`` (one array per graph), with their ``gold`` labels.  Each
    graph's own arrays then become views of the joined ones (``_share``):
    one copy of every graph in memory, not two (on all of CoNLL-2003's
    skip chains, 36 MB)."""
    graph, graph_at = zip(*(_joined([getattr(g.arrays, f) for g in graphs])
                            for f in GRAPH_FIELDS))
    _share(graphs, graph, graph_at)
    orders = [sweep_orders(g, r) for g, r in zip(graphs, rhos)]
    order, order_at = zip(*(_joined([getattr(o, f) for o in orders]) for f in ORDER_FIELDS))
    rho, rho_at = _joined([np.ascontiguousarray(r, dtype=np.float64) for r in rhos])
    labels, gold_at = _joined([np.asarray(y, dtype=np.int64) for y in gold])
    msg_at = np.zeros(len(graphs) + 1, dtype=np.int64)
    msg_at[1:] = np.cumsum([int(g.msg_ptr[-1]) for g in graphs])
    return InstanceArrays(tuple(graph), np.stack(graph_at), tuple(order), np.stack(order_at),
                          rho, rho_at, labels, gold_at, msg_at)


def _share(graphs: list[FactorGraph], joined: tuple, at: tuple) -> None:
    """Point every graph's arrays at its slices of the ``joined`` ones (the
    same values), freeing its own."""
    for i, g in enumerate(graphs):
        views = [joined[k][at[k][i]:at[k][i + 1]] for k in range(len(GRAPH_FIELDS))]
        for name, view in zip(GRAPH_FIELDS, views):
            setattr(g, name, view)
        g.arrays = GraphArrays(*views)


@njit(cache=True, nogil=True, inline="always")
def _graph(a: InstanceArrays, i):
    """Instance i's ``GraphArrays`` (views)."""
    g, at = a.graph, a.graph_at
    return GraphArrays(g[0][at[0, i]:at[0, i + 1]], g[1][at[1, i]:at[1, i + 1]],
                       g[2][at[2, i]:at[2, i + 1]], g[3][at[3, i]:at[3, i + 1]],
                       g[4][at[4, i]:at[4, i + 1]], g[5][at[5, i]:at[5, i + 1]],
                       g[6][at[6, i]:at[6, i + 1]], g[7][at[7, i]:at[7, i + 1]],
                       g[8][at[8, i]:at[8, i + 1]], g[9][at[9, i]:at[9, i + 1]])


@njit(cache=True, nogil=True, inline="always")
def _orders(a: InstanceArrays, i):
    """Instance i's ``SweepOrders`` (views)."""
    o, at = a.orders, a.orders_at
    return SweepOrders(o[0][at[0, i]:at[0, i + 1]], o[1][at[1, i]:at[1, i + 1]],
                       o[2][at[2, i]:at[2, i + 1]], o[3][at[3, i]:at[3, i + 1]],
                       o[4][at[4, i]:at[4, i + 1]])


# (constants passed to a kernel go as np.int64(0), np.bool_(False): a bare 0 or False is typed
# as a literal, and numba compiles the callee once more for it, ~10 s on a cold cache, where the
# per-instance path's compilation of the same kernels serves both)


@njit(cache=True, nogil=True)
def _run(pot, g, orders, run: RunState, done, tol, n, scratch):
    """At most ``n`` more sweeps after ``done`` (``trw._Sweeps.run``):
    (sweeps run, residual).  ``scratch``: (lcav, cav, seen, pending) of
    ``trw.propagate_into``, at least as long as it needs (zeroed here, as
    ``trw.propagate`` makes them)."""
    lcav, cav, seen, pending = scratch
    M = run.L.shape[0]
    lcav[:M] = 0.0
    cav[:M] = 0.0
    k, res, _ = propagate_into(pot, g, orders, run, done, np.bool_(False), tol, n, lcav[:M],
                               cav[:M], seen[:g.card.shape[0]], pending[:g.e_fac.shape[0]])
    return k, res


@njit(cache=True, nogil=True)
def _finite_or_ruled_out(table, tab_ptr, rep):
    """Whether every log-potential of the tables made (those of factors
    that are their own ``rep``) is finite or -inf (``loopy.check_potentials``)."""
    for f in range(rep.shape[0]):
        if rep[f] == f:
            for i in range(tab_ptr[f], tab_ptr[f + 1]):
                if not table[i] < np.inf:
                    return False
    return True


@njit(cache=True, nogil=True)
def expect_block(picks, a: InstanceArrays, feats: FeatureRows, w, messages: BlockMessages,
                 settings: BlockSettings, counts, runs: BlockRuns):
    """Tree-reweighted sum-product on each instance ``picks[k]``: the
    steps of ``trw.trw`` (undecoded) from the factor tables of weights
    ``w`` (``feats``; with ``settings.clamped``, clamped to the gold
    labels), from the messages ``messages`` gives it, with the
    ``settings``' damping, tol and max_iter.  Writes the final messages
    into ``messages.msgs``, adds the belief-expected feature counts to
    ``counts`` and per pick its bound, sweeps, last residual and whether it
    converged to ``runs``.  Returns -1, or the first k whose
    log-potentials hold NaN or +inf (nothing from it on is run)."""
    inits, init_at, msgs = messages.inits, messages.init_at, messages.msgs
    damping, tol, max_iter, clamped = (settings.damping, settings.tol, settings.max_iter,
                                       settings.clamped)
    worst = min(GROSS_INCONSISTENCY, INCONSISTENCY_PER_TOL * tol)
    # scratch for the largest instance, reused by each (fresh arrays per instance cost
    # page faults: a few MB each)
    most_table, most_flat, most_vars, most_factors, most_msgs, most_edges = 1, 1, 1, 1, 1, 1
    for k in range(picks.shape[0]):
        i = picks[k]
        at = a.graph_at
        most_table = max(most_table, a.graph[3][at[3, i + 1] - 1])    # tab_ptr[-1]
        most_flat = max(most_flat, a.graph[9][at[9, i + 1] - 1])     # var_ptr[-1]
        most_vars = max(most_vars, at[0, i + 1] - at[0, i])          # card
        most_factors = max(most_factors, at[1, i + 1] - at[1, i])    # f_ptr
        most_msgs = max(most_msgs, a.msg_at[i + 1] - a.msg_at[i])
        most_edges = max(most_edges, at[4, i + 1] - at[4, i])       # e_fac
    table_s, psi_s, bf_s = np.empty(most_table), np.empty(most_table), np.empty(most_table)
    lb_s, last_s, bv_s = np.empty(most_flat), np.empty(most_flat), np.empty(most_flat)
    stale_s, lcav_s = np.empty(most_vars), np.empty(most_msgs)
    psi_at_s = np.empty(most_factors, dtype=np.int64)
    theta_at_s = np.empty(most_factors, dtype=np.int64)
    own = np.arange(most_factors)   # (clamped tables differ: every factor its own)
    sweep_s = (np.empty(most_msgs), np.empty(most_msgs), np.empty(most_vars, dtype=np.int64),
               np.empty(most_edges, dtype=np.int64))
    for k in range(picks.shape[0]):
        i = picks[k]
        g = _graph(a, i)
        orders = _orders(a, i)
        rho = a.rho[a.rho_at[i]:a.rho_at[i + 1]]
        f0, f1 = feats.inst_fptr[i], feats.inst_fptr[i + 1]
        n_table = g.tab_ptr[g.tab_ptr.shape[0] - 1]
        table = table_s[:n_table]
        rep = own[:f1 - f0] if clamped else feats.rep[f0:f1]
        factor_tables(f0, f1, g.tab_ptr, feats.fac_ptr, feats.fac_row, feats.fac_val,
                      feats.row_ptr, feats.feat_config, feats.dense, w, rep, table)
        if clamped:
            clamp(g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_stride,
                  a.gold[a.gold_at[i]:a.gold_at[i + 1]], table)
        if not _finite_or_ruled_out(table, g.tab_ptr, rep):
            return k
        L = msgs[a.msg_at[i]:a.msg_at[i + 1]]
        if init_at[k] >= 0:
            L[:] = inits[init_at[k]:init_at[k] + L.shape[0]]
        else:
            L[:] = 0.0
        psi = psi_s[:n_table]
        psi_at = psi_at_s[:g.f_ptr.shape[0] - 1]
        psi_at[:] = 0
        used = reweighted_tables(table, rho, g.tab_ptr, g.f_ptr, rep, psi, psi_at)
        theta_at = theta_at_s[:f1 - f0]
        for f in range(f1 - f0):
            theta_at[f] = g.tab_ptr[rep[f]]
        pot = ReweightedPotentials(table, rho, psi[:used], psi_at, theta_at)
        n_flat = g.var_ptr[g.var_ptr.shape[0] - 1]
        lb = lb_s[:n_flat]
        last = last_s[:n_flat]
        last[:] = 0.0
        stale = stale_s[:g.card.shape[0]]
        stale[:] = 0.0
        run = RunState(L, lb, last, stale, np.array([np.inf, np.inf, damping]))
        done, res = _run(pot, g, orders, run, np.int64(0), tol, max_iter, sweep_s)
        bv = bv_s[:n_flat]
        bf = bf_s[:n_table]
        lcav = lcav_s[:L.shape[0]]
        bound, gap = beliefs(pot, g, L, lb, np.bool_(False), bv, bf, lcav)
        agree = gap <= worst
        more = 1
        while not agree and done < max_iter:   # (converged too early: trw.GROSS_INCONSISTENCY)
            n, res = _run(pot, g, orders, run, done, 0.0, min(more, max_iter - done), sweep_s)
            done += n
            more *= 2
            if not res < tol:
                n, res = _run(pot, g, orders, run, done, tol, max_iter - done, sweep_s)
                done += n
            bound, gap = beliefs(pot, g, L, lb, np.bool_(False), bv, bf, lcav)
            agree = gap <= worst
        feature_expectations(f0, f1, g.tab_ptr, feats.fac_ptr, feats.fac_row, feats.fac_val,
                             feats.row_ptr, feats.feat_config, feats.dense, bf, rep, counts)
        runs.log_z[k] = bound
        runs.sweeps[k] = done
        runs.residual[k] = res
        runs.converged[k] = res < tol and agree
    return -1
