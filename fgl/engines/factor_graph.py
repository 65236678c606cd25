"""Discrete factor graphs in flat integer-array form (Sutton & McCallum §1.4.4, §1.5).

A general CRF instance — a linear chain plus skip edges (Sutton & McCallum §1.5.1),
or any other set of factors over discrete output variables — is compiled once
into the integer tables below and reused across training iterations; the
inference kernels of ``fgl.engines.loopy`` only ever see these arrays and a
flat array of log-potentials.

Layout
------
* ``card[v]``: the domain size of variable v.
* ``f_ptr``/``f_var`` (CSR): factor f touches variables
  ``f_var[f_ptr[f]:f_ptr[f+1]]``, in table order.
* ``tab_ptr``: factor f's log-potential table is
  ``log_pot[tab_ptr[f]:tab_ptr[f+1]]``, row-major over its variables (the
  first variable varies slowest), so entry ``i`` assigns position k the value
  ``(i // e_stride[e]) % card[f_var[e]]`` with ``e = f_ptr[f] + k``.
* An *edge* is a (factor, position) pair; its id is its index into
  ``f_var``.  Each edge carries two messages (factor->variable and
  variable->factor) of length ``card[f_var[e]]``, stored at
  ``msg_ptr[e]:msg_ptr[e+1]`` of flat message arrays.
* ``v_ptr``/``v_edge`` (CSR): the edges of each variable.
* ``var_ptr``: offsets of per-variable vectors (beliefs) in a flat array.

Tree-based reparameterisation (TRP, Wainwright, Jaakkola & Willsky 2001; the
schedule Sutton & McCallum §1.5.1 uses for skip-chain CRFs) needs spanning trees of
the bipartite variable–factor graph that together cover every edge, each
with a two-pass message order; ``spanning_trees`` and ``tree_schedule``
compute them once with networkx, as plain integer arrays.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    import networkx

# message directions in a schedule
VAR_TO_FACTOR = 0
FACTOR_TO_VAR = 1


@dataclass(eq=False)
class FactorGraph:
    """A discrete factor graph in flat integer-array form (built once per
    instance at compile time, reused across training iterations)."""

    card: np.ndarray      # [V] domain size of each variable
    f_ptr: np.ndarray     # [F+1] CSR over f_var
    f_var: np.ndarray     # [E] variable of each edge (factor, position)
    tab_ptr: np.ndarray   # [F+1] offsets of the factor tables in log_pot
    e_fac: np.ndarray     # [E] factor of each edge
    e_stride: np.ndarray  # [E] row-major stride of the edge's variable in its table
    msg_ptr: np.ndarray   # [E+1] offsets of each edge's message
    v_ptr: np.ndarray     # [V+1] CSR over v_edge
    v_edge: np.ndarray    # edges of each variable, by increasing edge id
    var_ptr: np.ndarray   # [V+1] offsets of per-variable vectors (cumulative card)
    _cache: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------
    # construction

    @classmethod
    def from_factors(cls, card: Sequence[int], factors: Sequence[Sequence[int]]) -> "FactorGraph":
        """Build the tables for variables of domain sizes ``card`` and factors
        given as variable-id sequences (table order; a variable at most once
        per factor; an empty factor is a constant)."""
        card = np.asarray(card, dtype=np.int64).reshape(-1)
        if card.size and card.min() < 1:
            raise ValueError("every variable needs a domain of size >= 1")
        V = card.size
        f_ptr = [0]
        f_var: list[int] = []
        sizes = []
        for j, fac in enumerate(factors):
            fac = [int(v) for v in fac]
            for v in fac:
                if not 0 <= v < V:
                    raise ValueError(f"factor {j} uses variable {v} outside 0..{V - 1}")
            if len(set(fac)) != len(fac):
                raise ValueError(f"factor {j} repeats a variable: {fac}")
            f_var.extend(fac)
            f_ptr.append(len(f_var))
            size = 1
            for v in fac:
                size *= int(card[v])
            sizes.append(size)
        f_ptr = np.asarray(f_ptr, dtype=np.int64)
        f_var = np.asarray(f_var, dtype=np.int64)
        F = len(sizes)
        E = f_var.size
        tab_ptr = np.zeros(F + 1, dtype=np.int64)
        tab_ptr[1:] = np.cumsum(np.asarray(sizes, dtype=np.int64))
        e_fac = np.repeat(np.arange(F, dtype=np.int64), np.diff(f_ptr))
        e_stride = np.ones(E, dtype=np.int64)
        for f in range(F):
            s = 1
            for e in range(f_ptr[f + 1] - 1, f_ptr[f] - 1, -1):
                e_stride[e] = s
                s *= int(card[f_var[e]])
        msg_ptr = np.zeros(E + 1, dtype=np.int64)
        msg_ptr[1:] = np.cumsum(card[f_var]) if E else []
        v_edge = np.argsort(f_var, kind="stable").astype(np.int64)
        v_ptr = np.zeros(V + 1, dtype=np.int64)
        v_ptr[1:] = np.cumsum(np.bincount(f_var, minlength=V)) if V else []
        var_ptr = np.zeros(V + 1, dtype=np.int64)
        var_ptr[1:] = np.cumsum(card) if V else []
        return cls(card, f_ptr, f_var, tab_ptr, e_fac, e_stride, msg_ptr, v_ptr, v_edge, var_ptr)

    # ------------------------------------------------------------------
    # sizes

    @property
    def n_vars(self) -> int:
        return int(self.card.size)

    @property
    def n_factors(self) -> int:
        return int(self.f_ptr.size - 1)

    @property
    def n_edges(self) -> int:
        return int(self.f_var.size)

    @property
    def n_table(self) -> int:
        """Length of a flat log-potential array, Σ_f Π_{v in f} card[v]."""
        return int(self.tab_ptr[-1])

    def factor_vars(self, f: int) -> np.ndarray:
        return self.f_var[self.f_ptr[f]:self.f_ptr[f + 1]]

    def degree(self) -> np.ndarray:
        """[V] number of factors touching each variable (d_v of the Bethe entropy)."""
        return np.diff(self.v_ptr)

    # ------------------------------------------------------------------
    # graph structure (networkx, build time only)

    def to_networkx(self) -> "networkx.Graph":
        """The bipartite graph: nodes ("v", i) and ("f", j), one edge per
        (factor, position) pair carrying its edge id as attribute ``edge``."""
        import networkx as nx  # build time only; kept out of import fgl

        g = nx.Graph()
        g.add_nodes_from((("v", i) for i in range(self.n_vars)), bipartite=0)
        g.add_nodes_from((("f", j) for j in range(self.n_factors)), bipartite=1)
        for e in range(self.n_edges):
            g.add_edge(("v", int(self.f_var[e])), ("f", int(self.e_fac[e])), edge=e)
        return g

    def _components(self) -> int:
        import networkx as nx  # build time only; kept out of import fgl

        if "components" not in self._cache:
            self._cache["components"] = nx.number_connected_components(self.to_networkx())
        return self._cache["components"]

    def n_cycles(self) -> int:
        """The cyclomatic number E - N + (connected components) of the
        bipartite graph: 0 exactly when it is a forest."""
        return self.n_edges - (self.n_vars + self.n_factors) + self._components()

    def is_tree(self) -> bool:
        """True when the bipartite graph is a forest (BP is then exact)."""
        return self.n_cycles() == 0

    def spanning_trees(self, max_trees: int | None = None, seed: int = 0) -> list[np.ndarray]:
        """TRP trees: edge-id arrays, each a spanning forest of the bipartite
        graph, that together cover every edge.

        Greedy cover by random-weight minimum spanning forests: edges not yet
        covered weigh U(0, 1), covered ones 1 + U(0, 1), so Kruskal takes
        every uncovered edge it can before any covered one and each new tree
        covers at least one new edge.  A forest needs a single tree.  Raises
        ValueError when ``max_trees`` trees do not cover the graph."""
        import networkx as nx  # build time only; kept out of import fgl

        key = ("trees", max_trees, seed)
        if key in self._cache:
            return self._cache[key]
        g = self.to_networkx()
        rng = np.random.default_rng(seed)
        covered = np.zeros(self.n_edges, dtype=bool)
        trees: list[np.ndarray] = []
        while not covered.all() or not trees:
            if max_trees is not None and len(trees) >= max_trees:
                raise ValueError(f"{max_trees} spanning trees cover only {int(covered.sum())} "
                                 f"of {self.n_edges} edges")
            noise = rng.random(self.n_edges)
            for u, v, d in g.edges(data=True):
                e = d["edge"]
                d["w"] = noise[e] + (1.0 if covered[e] else 0.0)
            forest = nx.minimum_spanning_tree(g, weight="w", algorithm="kruskal")
            edges = np.sort(np.fromiter((d["edge"] for _, _, d in forest.edges(data=True)),
                                        dtype=np.int64, count=forest.number_of_edges()))
            covered[edges] = True
            trees.append(edges)
        self._cache[key] = trees
        return trees

    def tree_schedule(self, tree_edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two-pass message order of exact BP on the forest ``tree_edges``:
        (edge ids, directions) for leaves-to-root then root-to-leaves, every
        component rooted at its lowest-numbered variable (or factor).
        Direction ``FACTOR_TO_VAR`` (1) or ``VAR_TO_FACTOR`` (0)."""
        tree_edges = np.asarray(tree_edges, dtype=np.int64)
        V = self.n_vars
        # nodes: variables 0..V-1, factors V..V+F-1
        adj: dict[int, list[tuple[int, int]]] = {}
        for e in tree_edges:
            v, f = int(self.f_var[e]), V + int(self.e_fac[e])
            adj.setdefault(v, []).append((f, int(e)))
            adj.setdefault(f, []).append((v, int(e)))
        seen: set[int] = set()
        up_e: list[int] = []
        up_d: list[int] = []
        down_e: list[int] = []
        down_d: list[int] = []
        for root in sorted(adj):
            if root in seen:
                continue
            seen.add(root)
            order = []  # (node, edge to parent), BFS
            queue = deque([root])
            while queue:
                node = queue.popleft()
                for nb, e in adj[node]:
                    if nb not in seen:
                        seen.add(nb)
                        order.append((nb, e))
                        queue.append(nb)
            for node, e in reversed(order):  # child -> parent
                up_e.append(e)
                up_d.append(FACTOR_TO_VAR if node >= V else VAR_TO_FACTOR)
            for node, e in order:            # parent -> child
                down_e.append(e)
                down_d.append(VAR_TO_FACTOR if node >= V else FACTOR_TO_VAR)
        return (np.asarray(up_e + down_e, dtype=np.int64),
                np.asarray(up_d + down_d, dtype=np.int64))

    def trp_schedule(self, trees: Sequence[np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """One TRP iteration: the tree schedules of ``trees`` (default
        ``spanning_trees()``) concatenated."""
        if trees is None:
            trees = self.spanning_trees()
        # trees from spanning_trees() are cached lists, so their identity keys
        # the schedule: training reuses it every evaluation
        key = ("trp", id(trees))
        hit = self._cache.get(key)
        if hit is not None and hit[0] is trees:
            return hit[1]
        parts = [self.tree_schedule(t) for t in trees]
        if parts:
            out = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        else:
            out = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        if any(k[0] == "trees" and v is trees for k, v in self._cache.items()):
            self._cache[key] = (trees, out)  # only trees this graph made: a bounded cache
        return out

    def flooding_schedule(self) -> tuple[np.ndarray, np.ndarray]:
        """One flooding iteration: every factor->variable message, then every
        variable->factor message (each phase reads only the other kind)."""
        if "flood" not in self._cache:
            E = self.n_edges
            self._cache["flood"] = (
                np.concatenate([np.arange(E), np.arange(E)]).astype(np.int64),
                np.concatenate([np.full(E, FACTOR_TO_VAR),
                                np.full(E, VAR_TO_FACTOR)]).astype(np.int64))
        return self._cache["flood"]

    def decode_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For back-tracking MAP decoding on a forest: (root variables, factors
        in BFS order, the edge joining each factor to its parent variable or
        -1 for a factor with no variables).  Every component is rooted at its
        lowest-numbered variable."""
        if "decode" in self._cache:
            return self._cache["decode"]
        V = self.n_vars
        seen_f = np.zeros(self.n_factors, dtype=bool)
        seen_v = np.zeros(V, dtype=bool)
        roots: list[int] = []
        order_f: list[int] = []
        order_e: list[int] = []
        for r in range(V):
            if seen_v[r]:
                continue
            seen_v[r] = True
            roots.append(r)
            queue = deque([r])
            while queue:
                v = queue.popleft()
                for e in self.v_edge[self.v_ptr[v]:self.v_ptr[v + 1]]:
                    f = int(self.e_fac[e])
                    if seen_f[f]:
                        continue
                    seen_f[f] = True
                    order_f.append(f)
                    order_e.append(int(e))
                    for e2 in range(self.f_ptr[f], self.f_ptr[f + 1]):
                        u = int(self.f_var[e2])
                        if not seen_v[u]:
                            seen_v[u] = True
                            queue.append(u)
        for f in np.flatnonzero(~seen_f):  # empty factors
            order_f.append(int(f))
            order_e.append(-1)
        out = (np.asarray(roots, np.int64), np.asarray(order_f, np.int64),
               np.asarray(order_e, np.int64))
        self._cache["decode"] = out
        return out
