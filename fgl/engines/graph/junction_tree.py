"""Exact inference where it is cheap: the junction (clique) tree algorithm.

Belief propagation is exact on trees; a graph with cycles becomes a tree of
*cliques* once enough edges are added to make it chordal (Koller & Friedman
2009 ch. 10, clique trees; Sutton & McCallum §1.4.4 name the junction tree
as the exact method for general graphs whose cliques stay small).  The cost
is the size of the largest clique table — exponential in the treewidth — so
a chain with a gapped template ``(y[t-2], y[t])`` (treewidth 2) or a small
factorial CRF is exact at a price close to loopy BP's, while a document-wide
skip-chain is not and stays with BP.

Plan (built once per graph, cached on ``FactorGraph._cache``)
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

import heapq
from dataclasses import dataclass

import numpy as np
from numba import njit

from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.loopy import BPResult, assignment_score, check_potentials

_CACHE_KEY = "junction_tree"


# --------------------------------------------------------------------------
# the plan


@dataclass(eq=False)
class JunctionTreePlan:
    """A graph's clique tree as flat int64 arrays (``complete``), or, when
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
    # cliques: variables (CSR over c_var / c_card), table offsets, the tree
    c_ptr: np.ndarray | None = None
    c_var: np.ndarray | None = None
    c_card: np.ndarray | None = None
    ctab_ptr: np.ndarray | None = None   # offsets of clique tables
    post: np.ndarray | None = None       # cliques, children before parents; the root last
    parent: np.ndarray | None = None     # [C] parent clique, -1 for the root
    # separators with the parent (CSR over s_var / s_sstride: variables, their stride in
    # the separator table) and sep_ptr, the offsets of separator messages
    s_ptr: np.ndarray | None = None
    s_var: np.ndarray | None = None
    s_sstride: np.ndarray | None = None
    sep_ptr: np.ndarray | None = None
    # projections: for each clique position, the stride of its variable in a smaller
    # table (0 when absent) — the separator, seen from the clique (sc_*, aligned with
    # c_var) and from its parent (sp_* from sp_dptr[c], the parent's positions); each
    # factor's table (f_* from f_dptr[f], its clique's positions); each variable's
    # vector (v_* from v_dptr[v])
    sc_dstr: np.ndarray | None = None
    sp_dptr: np.ndarray | None = None
    sp_dstr: np.ndarray | None = None
    f_clique: np.ndarray | None = None
    f_dptr: np.ndarray | None = None
    f_dstr: np.ndarray | None = None
    e_card: np.ndarray | None = None     # [E] domain size of each edge's variable
    # belief reads, in order: block r_dst (a factor f, or a variable v as ~v) projected
    # from r_src (a clique c, or a factor f as ~f: a factor inside a larger one is read
    # from that one's belief, a variable from the smallest factor holding it) with the
    # strides r_dstr[r_dptr[k]:...] over the source's positions
    r_dst: np.ndarray | None = None
    r_src: np.ndarray | None = None
    r_dptr: np.ndarray | None = None
    r_dstr: np.ndarray | None = None
    widest: int = 1  # scratch the kernels need: at least the largest separator table

    def fits(self, max_table: int | None) -> bool:
        """True when the plan is complete and no clique table exceeds ``max_table``."""
        return self.complete and (max_table is None or self.largest_table <= max_table)


def junction_tree_plan(graph: FactorGraph, max_table: int | None = None) -> JunctionTreePlan:
    """The clique tree of ``graph`` (cached on the graph).  With
    ``max_table``, building stops at the first clique whose table is larger
    and the plan returned is incomplete (``plan.fits(max_table)`` False)."""
    hit = graph._cache.get(_CACHE_KEY)
    if hit is not None and (hit.complete or (max_table is not None and max_table <= hit.limit)):
        return hit
    plan = _build_plan(graph, max_table)
    graph._cache[_CACHE_KEY] = plan
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
    card = [int(c) for c in graph.card]
    order, elim, over = elimination_cliques(graph, max_table)
    if over is not None:
        worst = max(len(c) for c in elim) - 1
        return JunctionTreePlan(worst, over, 0, len(elim), False, max_table)
    K = len(order)
    pos = {u: k for k, u in enumerate(order)}
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

    def rep(k: int) -> int:
        while not alive[k]:
            k = into[k]
        return k

    ids = [k for k in range(K) if alive[k]]
    new = {k: i for i, k in enumerate(ids)}
    C = len(ids) + 1  # + the empty root
    root = C - 1
    cvars = [sorted(members[k]) for k in ids] + [[]]
    parent = [new[par[k]] if par[k] != -1 else root for k in ids] + [-1]
    kids: list[list[int]] = [[] for _ in range(C)]
    for c in range(C - 1):
        kids[parent[c]].append(c)
    # post order: children before parents, the root last
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
    c_ptr, c_var, c_card, ctab = [0], [], [], [0]
    for vs in cvars:
        c_var += vs
        c_card += [card[v] for v in vs]
        c_ptr.append(len(c_var))
        ctab.append(ctab[-1] + _table(card, vs))

    def dstr(c: int, target: list[int], strides: list[int]) -> list[int]:
        """Per position of clique c: its variable's stride in the target table, or 0."""
        at = dict(zip(target, strides))
        return [at.get(v, 0) for v in cvars[c]]

    s_ptr, s_var, s_sst, sep, sc, sp_ptr, sp = [0], [], [], [0], [], [], []
    for c in range(C):
        shared = [] if parent[c] < 0 else [v for v in cvars[c] if v in cvars[parent[c]]]
        st = _strides([card[v] for v in shared])
        s_var += shared
        s_sst += st
        s_ptr.append(len(s_var))
        sep.append(sep[-1] + _table(card, shared))
        sc += dstr(c, shared, st)
        sp_ptr.append(len(sp))
        if parent[c] >= 0:
            sp += dstr(parent[c], shared, st)
    f_clique, f_ptr, f_d = [], [], []
    fvars = [[int(v) for v in graph.factor_vars(f)] for f in range(graph.n_factors)]
    fstr = [_strides([card[v] for v in vs]) for vs in fvars]
    for f, vs in enumerate(fvars):
        c = new[rep(min(pos[v] for v in vs))] if vs else root
        assert set(vs) <= set(cvars[c])
        f_clique.append(c)
        f_ptr.append(len(f_d))
        f_d += dstr(c, vs, fstr[f])
    reads = _belief_reads(graph, card, cvars, fvars, fstr, f_clique, new, rep, pos)
    real = [_table(card, vs) for vs in cvars[:-1]]
    real = [_table(card, vs) for vs in cvars[:-1]]

    def arr(x: list[int]) -> np.ndarray:
        return np.asarray(x, dtype=np.int64)

    return JunctionTreePlan(
        treewidth=max((len(vs) for vs in cvars[:-1]), default=1) - 1,
        largest_table=max(real, default=1), total_table=int(sum(real)), n_cliques=C - 1,
        complete=True, limit=max_table,
        c_ptr=arr(c_ptr), c_var=arr(c_var), c_card=arr(c_card), ctab_ptr=arr(ctab),
        post=arr(post), parent=arr(parent), s_ptr=arr(s_ptr), s_var=arr(s_var),
        s_sstride=arr(s_sst), sep_ptr=arr(sep), sc_dstr=arr(sc), sp_dptr=arr(sp_ptr),
        sp_dstr=arr(sp), f_clique=arr(f_clique), f_dptr=arr(f_ptr), f_dstr=arr(f_d),
        e_card=graph.card[graph.f_var].astype(np.int64),
        **{k: arr(v) for k, v in reads.items()},
        widest=max([1] + [b - a for a, b in zip(sep, sep[1:])]
                   + [int(x) for x in np.diff(graph.tab_ptr)] + card))


def _belief_reads(graph: FactorGraph, card: list[int], cvars: list[list[int]],
                  fvars: list[list[int]], fstr: list[list[int]], f_clique: list[int], new: dict,
                  rep, pos: dict) -> dict[str, list[int]]:
    """The order and sources of the belief blocks: factors contained in no
    other factor (and not repeating an earlier one) from their clique, the
    others from the smallest such factor holding them when that is smaller
    than their clique, and each variable from the smallest factor holding
    it (else its clique).  Calibrated blocks are consistent, so reading a
    marginal off a smaller one is exact and walks fewer entries."""
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
            c = new[rep(pos[v])]
            read(~v, c, cvars[c], {v: 1})
    return {"r_dst": dst, "r_src": src, "r_dptr": dptr, "r_dstr": dstr}


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
def _calibrate(log_pot, tab_ptr, c_ptr, c_card, ctab_ptr, post, parent, sep_ptr, sc_dstr,
               sp_dptr, sp_dstr, f_clique, f_dptr, f_dstr, use_max, beta, belief, up, down,
               acc, idx, digits):
    """Collect then distribute (module docstring); returns ⊕ β_root."""
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
def _beliefs(prob, log_z, f_ptr, tab_ptr, e_card, var_ptr, c_ptr, c_card, ctab_ptr, r_dst, r_src,
             r_dptr, r_dstr, use_max, bf, bv, idx, digits):
    """Factor and variable (max-)marginals, each block normalised to sum 1,
    in the order of the plan's reads.  The calibrated clique log beliefs
    ``prob`` first become exp(b_c - log Z) in place (log Z the ⊕ of the
    root: the max for max-product), one exp per clique entry; every block
    is then the sum (max) of its source's entries."""
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
def _backtrack(beta, c_ptr, c_var, c_card, ctab_ptr, post, s_ptr, s_var, s_sstride, sc_dstr,
               out, idx, digits):
    """MAP decoding from the collect pass (module docstring)."""
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


def junction_tree(graph: FactorGraph, log_pot: np.ndarray, *, use_max: bool = False,
                  max_table: int | None = None) -> BPResult:
    """Exact sum- or max-product inference by clique-tree calibration
    (Koller & Friedman 2009 ch. 10; Sutton & McCallum §1.4.4), as a
    ``BPResult`` like ``fgl.engines.graph.loopy.exact``'s.

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
    p = plan
    n_tab = int(p.ctab_ptr[-1])
    n_sep = int(p.sep_ptr[-1])
    beta = np.empty(n_tab)
    belief = np.empty(n_tab)
    up = np.empty(n_sep)
    down = np.empty(n_sep)
    acc = np.empty(p.widest)
    idx = np.empty(max(p.largest_table, 1), dtype=np.int64)
    digits = np.empty(max(p.treewidth + 1, 1), dtype=np.int64)
    g = graph
    log_z = _calibrate(log_pot, g.tab_ptr, p.c_ptr, p.c_card, p.ctab_ptr, p.post, p.parent,
                       p.sep_ptr, p.sc_dstr, p.sp_dptr, p.sp_dstr, p.f_clique, p.f_dptr,
                       p.f_dstr, bool(use_max), beta, belief, up, down, acc, idx, digits)
    bf = np.empty(g.n_table)
    bv = np.empty(int(g.var_ptr[-1]))
    _beliefs(belief, log_z, g.f_ptr, g.tab_ptr, p.e_card, g.var_ptr, p.c_ptr, p.c_card,
             p.ctab_ptr, p.r_dst, p.r_src, p.r_dptr, p.r_dstr, bool(use_max), bf, bv, idx, digits)
    map_state = None
    map_score = None
    if use_max:
        map_state = np.empty(g.n_vars, dtype=np.int64)
        _backtrack(beta, p.c_ptr, p.c_var, p.c_card, p.ctab_ptr, p.post, p.s_ptr, p.s_var,
                   p.s_sstride, p.sc_dstr, map_state, idx, digits)
        map_score = assignment_score(g, log_pot, map_state)
        log_z = map_score
    return BPResult(log_z=float(log_z), var_flat=bv, var_ptr=g.var_ptr, factor_beliefs=bf,
                    iterations=0, residual=0.0, converged=True, map_state=map_state,
                    map_score=map_score)
