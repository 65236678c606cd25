"""The clique tree of the junction-tree algorithm (Koller & Friedman 2009
ch. 10), built once per graph as flat integer arrays for the calibration
kernels of ``fgl.engines.graph.junction_tree``.

Plan (built once per graph, cached on ``FactorGraph.cache``)
-------------------------------------------------------------
1. The interaction graph: variables adjacent when they share a factor.
2. An elimination order by the greedy min-fill heuristic (ties: the smaller
   clique table, then the lower variable id), Koller & Friedman §9.4.3.
   Eliminating v makes {v} ∪ neighbours(v) a clique; the clique of v hangs
   under the clique of the first-eliminated variable among its other
   members (the elimination tree, which has the running-intersection
   property).  A parent contained in its child is merged into the child.  All
   component roots hang under one empty root clique, so forests and
   constant factors need no special case.
3. Each factor goes to the clique of its first-eliminated variable (which
   holds all of its variables); each variable reads its marginal from the
   clique of its own elimination.
4. Every table offset the kernels need, and per projection (clique onto
   separator, factor or variable) the stride of each clique variable in the
   smaller table, as flat int64 arrays; the kernels walk a clique table
   with an odometer over its digits, so no index map is ever stored.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from fgl.engines.graph.factor_graph import FactorGraph

_CACHE_KEY = "junction_tree"


# --------------------------------------------------------------------------
# the plan


class CliqueTreeArrays(NamedTuple):
    """A clique tree as flat int64 arrays, one argument of the kernels."""

    # cliques: variables (CSR over c_var / c_card), table offsets, the tree
    c_ptr: np.ndarray
    c_var: np.ndarray
    c_card: np.ndarray
    ctab_ptr: np.ndarray   # offsets of clique tables
    post: np.ndarray       # cliques, children before parents; the root last
    parent: np.ndarray     # [C] parent clique, -1 for the root
    # separators with the parent (CSR over s_var / s_sstride: variables, their stride in
    # the separator table) and sep_ptr, the offsets of separator messages
    s_ptr: np.ndarray
    s_var: np.ndarray
    s_sstride: np.ndarray
    sep_ptr: np.ndarray
    # projections: for each clique position, the stride of its variable in a smaller
    # table (0 when absent) — the separator, seen from the clique (sc_*, aligned with
    # c_var) and from its parent (sp_* from sp_dptr[c], the parent's positions); each
    # factor's table (f_* from f_dptr[f], its clique's positions)
    sc_dstr: np.ndarray
    sp_dptr: np.ndarray
    sp_dstr: np.ndarray
    f_clique: np.ndarray
    f_dptr: np.ndarray
    f_dstr: np.ndarray
    e_card: np.ndarray     # [E] domain size of each edge's variable
    # belief reads, in order: block r_dst (a factor f, or a variable v as ~v) projected
    # from r_src (a clique c, or a factor f as ~f: a factor inside a larger one is read
    # from that one's belief, a variable from the smallest factor holding it) with the
    # strides r_dstr[r_dptr[k]:...] over the source's positions
    r_dst: np.ndarray
    r_src: np.ndarray
    r_dptr: np.ndarray
    r_dstr: np.ndarray


@dataclass(eq=False)
class JunctionTreePlan:
    """A graph's clique tree (``arrays``, when ``complete``), or, when
    building stopped at a clique table larger than ``limit``, only the
    sizes found so far (``complete`` False: ``treewidth`` and
    ``largest_table`` are then lower bounds of what the heuristic gives).

    ``treewidth`` is the largest clique size - 1, ``largest_table`` the
    largest clique table (product of the clique's domain sizes) and
    ``total_table`` the sum of all clique tables (the work of one pass)."""

    treewidth: int
    largest_table: int
    total_table: int
    n_cliques: int
    complete: bool
    limit: int | None = None
    arrays: CliqueTreeArrays | None = None
    widest: int = 1  # scratch the kernels need: at least the largest separator table

    def fits(self, max_table: int | None) -> bool:
        """True when the plan is complete and no clique table exceeds ``max_table``."""
        return self.complete and (max_table is None or self.largest_table <= max_table)


def junction_tree_plan(graph: FactorGraph, max_table: int | None = None) -> JunctionTreePlan:
    """The clique tree of ``graph`` (cached on the graph).  With
    ``max_table``, building stops at the first clique whose table is larger
    and the plan returned is incomplete (``plan.fits(max_table)`` False)."""
    hit = graph.cache.get(_CACHE_KEY)
    if hit is not None and (hit.complete or (max_table is not None and max_table <= hit.limit)):
        return hit
    plan = _build_plan(graph, max_table)
    graph.cache[_CACHE_KEY] = plan
    return plan


def _fill_in(adj: list[set], u: int) -> int:
    """Edges missing among the neighbours of u (what eliminating u adds)."""
    nb = list(adj[u])
    missing = 0
    for i, a in enumerate(nb):
        near = adj[a]
        for b in nb[i + 1:]:
            if b not in near:
                missing += 1
    return missing


def _table(card: list[int], vs) -> int:
    size = 1
    for v in vs:
        size *= card[v]
    return size


def elimination_cliques(graph: FactorGraph, max_table: int | None = None
                        ) -> tuple[list[int], list[list[int]], int | None]:
    """Greedy min-fill elimination (ties: smaller clique table, then lower
    variable id).  Returns the order, each eliminated variable's clique
    (itself first, then its neighbours at elimination, sorted), and None —
    or, when a clique table would exceed ``max_table``, the order and
    cliques so far and that table's size."""
    V = graph.n_vars
    card = [int(c) for c in graph.card]
    adj: list[set] = [set() for _ in range(V)]
    for f in range(graph.n_factors):
        vs = [int(v) for v in graph.factor_vars(f)]
        for a in vs:
            adj[a].update(vs)
    for v in range(V):
        adj[v].discard(v)
    version = [0] * V
    done = [False] * V
    heap = [(_fill_in(adj, u), card[u] * _table(card, adj[u]), u, 0) for u in range(V)]
    heapq.heapify(heap)
    order: list[int] = []
    cliques: list[list[int]] = []
    while heap:
        _, _, u, ver = heapq.heappop(heap)
        if done[u] or ver != version[u]:
            continue
        nb = sorted(adj[u])
        size = card[u] * _table(card, nb)
        if max_table is not None and size > max_table:
            cliques.append([u] + nb)
            return order, cliques, size
        order.append(u)
        cliques.append([u] + nb)
        done[u] = True
        added = []
        for i, a in enumerate(nb):
            near = adj[a]
            for b in nb[i + 1:]:
                if b not in near:
                    near.add(b)
                    adj[b].add(a)
                    added.append((a, b))
        for a in nb:
            adj[a].discard(u)
        touched = set(nb)
        for a, b in added:
            touched |= adj[a] & adj[b]
        for x in touched:
            version[x] += 1
            heapq.heappush(heap, (_fill_in(adj, x), card[x] * _table(card, adj[x]), x,
                                  version[x]))
    return order, cliques, None


def _strides(cards: list[int]) -> list[int]:
    out = [1] * len(cards)
    for k in range(len(cards) - 2, -1, -1):
        out[k] = out[k + 1] * cards[k + 1]
    return out


def _build_plan(graph: FactorGraph, max_table: int | None) -> JunctionTreePlan:
    """Steps 2-4 of the module docstring's plan."""
    card = [int(c) for c in graph.card]
    order, elim, over = elimination_cliques(graph, max_table)
    if over is not None:
        worst = max(len(c) for c in elim) - 1
        return JunctionTreePlan(worst, over, 0, len(elim), False, max_table)
    pos = {u: k for k, u in enumerate(order)}
    members, par, home = _elimination_tree(elim, pos)
    ids = [k for k in range(len(order)) if home[k] == k]
    new = {k: i for i, k in enumerate(ids)}
    root = len(ids)  # the empty root, after the cliques
    cvars = [sorted(members[k]) for k in ids] + [[]]
    parent = [new[par[k]] if par[k] != -1 else root for k in ids] + [-1]
    # the clique of the variable eliminated k-th (and so of variable v: var_clique[v])
    elim_clique = [new[home[k]] for k in range(len(order))]
    var_clique = {v: elim_clique[pos[v]] for v in range(graph.n_vars)}
    c_ptr, c_var, c_card, ctab = [0], [], [], [0]
    for vs in cvars:
        c_var += vs
        c_card += [card[v] for v in vs]
        c_ptr.append(len(c_var))
        ctab.append(ctab[-1] + _table(card, vs))
    fvars = [[int(v) for v in graph.factor_vars(f)] for f in range(graph.n_factors)]
    fstr = [_strides([card[v] for v in vs]) for vs in fvars]
    f_clique = [elim_clique[min(pos[v] for v in vs)] if vs else root for vs in fvars]
    f_dptr, f_dstr = [], []
    for f, vs in enumerate(fvars):
        assert set(vs) <= set(cvars[f_clique[f]])
        f_dptr.append(len(f_dstr))
        f_dstr += _positions(cvars[f_clique[f]], vs, fstr[f])
    seps = _separators(card, cvars, parent)
    reads = _belief_reads(graph, card, cvars, fvars, fstr, f_clique, var_clique)
    real = [_table(card, vs) for vs in cvars[:-1]]

    def arr(x: list[int]) -> np.ndarray:
        return np.asarray(x, dtype=np.int64)

    arrays = CliqueTreeArrays(
        c_ptr=arr(c_ptr), c_var=arr(c_var), c_card=arr(c_card), ctab_ptr=arr(ctab),
        post=arr(_post_order(parent, root)), parent=arr(parent),
        **{k: arr(v) for k, v in seps.items()},
        f_clique=arr(f_clique), f_dptr=arr(f_dptr), f_dstr=arr(f_dstr),
        e_card=graph.card[graph.f_var].astype(np.int64),
        **{k: arr(v) for k, v in reads.items()})
    return JunctionTreePlan(
        treewidth=max((len(vs) for vs in cvars[:-1]), default=1) - 1,
        largest_table=max(real, default=1), total_table=int(sum(real)), n_cliques=len(ids),
        complete=True, limit=max_table, arrays=arrays,
        widest=max([1] + [b - a for a, b in zip(seps["sep_ptr"], seps["sep_ptr"][1:])]
                   + [int(x) for x in np.diff(graph.tab_ptr)] + card))


def _elimination_tree(elim: list[list[int]], pos: dict[int, int]
                      ) -> tuple[list[set], list[int], list[int]]:
    """The elimination tree of the cliques ``elim`` (in elimination order;
    ``pos``: each variable's place in it), every parent contained in its
    child merged into the child.  Returns each clique's members, its parent
    (-1: a root) and ``home``: the clique that absorbed it (itself when it
    survives)."""
    K = len(elim)
    members = [set(c) for c in elim]
    par = [-1] * K
    children: list[set] = [set() for _ in range(K)]
    for k, c in enumerate(elim):
        if len(c) > 1:
            p = min(pos[x] for x in c[1:])
            par[k] = p
            children[p].add(k)
    # merge every parent contained in its child into the child (never the other
    # way: a child holds its own variable, eliminated before the parent's)
    alive = [True] * K
    into = list(range(K))
    for k in range(K):
        if not alive[k]:
            continue
        while par[k] != -1 and members[par[k]] <= members[k]:
            p = par[k]
            gp = par[p]
            children[p].discard(k)
            for ch in children[p]:
                par[ch] = k
                children[k].add(ch)
            if gp != -1:
                children[gp].discard(p)
                children[gp].add(k)
            par[k] = gp
            alive[p] = False
            into[p] = k
    home = list(range(K))
    for k in range(K):
        while not alive[home[k]]:
            home[k] = into[home[k]]
    return members, par, home


def _post_order(parent: list[int], root: int) -> list[int]:
    """The cliques, children before parents (in index order), the root last."""
    kids: list[list[int]] = [[] for _ in parent]
    for c in range(len(parent)):
        if parent[c] >= 0:
            kids[parent[c]].append(c)
    post: list[int] = []
    stack = [(root, False)]
    while stack:
        c, expanded = stack.pop()
        if expanded:
            post.append(c)
            continue
        stack.append((c, True))
        for d in reversed(kids[c]):
            stack.append((d, False))
    return post


def _positions(clique: list[int], target: list[int], strides: list[int]) -> list[int]:
    """Per position of ``clique``: its variable's stride in the target table, or 0."""
    at = dict(zip(target, strides))
    return [at.get(v, 0) for v in clique]


def _separators(card: list[int], cvars: list[list[int]], parent: list[int]
                ) -> dict[str, list[int]]:
    """The separator of each clique with its parent: its variables and
    their strides (s_*), the offsets of its messages (sep_ptr) and the
    projections onto it from the clique (sc_dstr) and from the parent
    (sp_*), as ``CliqueTreeArrays`` fields."""
    s_ptr, s_var, s_sst, sep, sc, sp_ptr, sp = [0], [], [], [0], [], [], []
    for c in range(len(cvars)):
        shared = [] if parent[c] < 0 else [v for v in cvars[c] if v in cvars[parent[c]]]
        st = _strides([card[v] for v in shared])
        s_var += shared
        s_sst += st
        s_ptr.append(len(s_var))
        sep.append(sep[-1] + _table(card, shared))
        sc += _positions(cvars[c], shared, st)
        sp_ptr.append(len(sp))
        if parent[c] >= 0:
            sp += _positions(cvars[parent[c]], shared, st)
    return {"s_ptr": s_ptr, "s_var": s_var, "s_sstride": s_sst, "sep_ptr": sep,
            "sc_dstr": sc, "sp_dptr": sp_ptr, "sp_dstr": sp}


def _belief_reads(graph: FactorGraph, card: list[int], cvars: list[list[int]],
                  fvars: list[list[int]], fstr: list[list[int]], f_clique: list[int],
                  var_clique: dict[int, int]) -> dict[str, list[int]]:
    """The order and sources of the belief blocks: factors contained in no
    other factor (and not repeating an earlier one) from their clique, the
    others from the smallest such factor holding them when that is smaller
    than their clique, and each variable from the smallest factor holding
    it (else its clique, ``var_clique``).  Calibrated blocks are consistent,
    so reading a marginal off a smaller one is exact and walks fewer
    entries."""
    F = len(fvars)
    sets = [frozenset(vs) for vs in fvars]
    size = [_table(card, vs) for vs in fvars]
    by_var: dict[int, list[int]] = {}
    for f, vs in enumerate(fvars):
        for v in vs:
            by_var.setdefault(v, []).append(f)

    def holders(f: int) -> list[int]:
        if not fvars[f]:
            return []
        return [g for g in by_var[fvars[f][0]] if g != f and sets[f] <= sets[g]]

    direct = [not any(sets[g] != sets[f] or g < f for g in holders(f)) for f in range(F)]
    ctab = [_table(card, vs) for vs in cvars]
    dst, src, dptr, dstr = [], [], [], []

    def read(target: int, source: int, positions: list[int], at: dict[int, int]) -> None:
        dst.append(target)
        src.append(source)
        dptr.append(len(dstr))
        dstr.extend(at.get(v, 0) for v in positions)

    later = []
    for f in range(F):
        if direct[f]:
            c = f_clique[f]
            read(f, c, cvars[c], dict(zip(fvars[f], fstr[f])))
        else:
            later.append(f)
    for f in later:
        best = min((g for g in holders(f) if direct[g]), key=lambda g: (size[g], g))
        at = dict(zip(fvars[f], fstr[f]))
        if size[best] < ctab[f_clique[f]]:
            read(f, ~best, fvars[best], at)
        else:
            read(f, f_clique[f], cvars[f_clique[f]], at)
    for v in range(graph.n_vars):
        if v in by_var:
            g = min(by_var[v], key=lambda g: (size[g], g))
            read(~v, ~g, fvars[g], {v: 1})
        else:
            c = var_clique[v]
            read(~v, c, cvars[c], {v: 1})
    return {"r_dst": dst, "r_src": src, "r_dptr": dptr, "r_dstr": dstr}
