"""The factor-graph program: a CRF's factor graphs plus its feature table.

It answers the learner's questions by the spec's inference method
(Sutton & McCallum §1.4.4): the junction tree where the cliques fit (exact),
else loopy BP — Σ log Z is then the Bethe approximation and the expected
counts are factor beliefs (at a BP fixed point the Bethe log Z's gradient in
θ_f(x) is b_f(x)) — or tree-reweighted BP (a convex bound, ``trw``); with
hidden layers the gold side is the *clamped* program — the same graph with
the observed variables fixed — so the objective is the marginal likelihood
log Z(y, x) - log Z(x) of Sutton & McCallum eq. 1.46-1.52.
``infer exact`` swaps BP for enumeration (with its size check).

Training evaluates the objective at a sequence of nearby weights, so the
learner may hand ``expectations`` a ``WarmStart``: BP then starts every
instance from the messages of an earlier run — the learner's current
iterate — (near a fit, a few passes instead of dozens) and stops at the
tolerance the ``WarmStart`` holds, which the learner tightens when its line
search shows the gradient is too inexact.  The state is the caller's
object, passed in and updated in place — nothing is kept on the program —
and decoding, marginals and log Z always start cold, so they stay functions
of the weights alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from fgl import stopping
from fgl.engines import parallel
from fgl.engines.graph import (
    clique_tree,
    forest_cover,
    junction_tree,
    loopy,
    table_kernels,
    trw_training,
)
from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.inference import inference_method
from fgl.engines.graph.inference.method import InferenceMethod
from fgl.engines.graph.warm_start import (
    LOOSEST_TOL,
    START_FACTOR,
    TIGHTEST_TOL,
    WarmStart,
)
from fgl.engines.parallel import blocks, map_instances, ordered_reduce
from fgl.engines.program import Decoding, Expectations, InferenceStats, InstanceRuns, Marginals
from fgl.engines.sequence.encoded import unit_ones
from fgl.errors import FglError


class RunSummary(NamedTuple):
    """What an evaluation keeps of one instance's inference run."""

    log_z: float
    iterations: int
    residual: float
    converged: bool


@dataclass
class FactorGraphData:
    """Instances as factor graphs plus the CSR of each factor's attributes."""

    graphs: list[FactorGraph]
    inst_fptr: np.ndarray   # [N+1] first factor of each instance
    fac_ptr: np.ndarray     # [F+1] CSR over fac_row / fac_val
    fac_row: np.ndarray     # attribute rows (int32 from the compile)
    fac_val: np.ndarray     # their values (a read-only view of one 1.0 when all are 1)
    fac_tpl: np.ndarray     # [F] template of each factor
    gold: list[np.ndarray]  # per instance: gold value of each variable, -1 if hidden
    sizes: list[int]        # positions (or nodes) per instance
    instances: list = field(default_factory=list, repr=False)
    # per instance, labels given as evidence (-1: free) that decode and marginals clamp
    # (a partially labelled graph's), or None for none; training reads gold, not this
    evidence: list | None = None
    # what programs derive from these instances once (``FactorGraphProgram.trw_blocks``)
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_sequences(self) -> int:
        return len(self.graphs)

    @property
    def n_tokens(self) -> int:
        return int(sum(self.sizes))

    def subset(self, i0: int, i1: int) -> "FactorGraphData":
        """Instances ``i0..i1-1`` on their own (views of the arrays; what
        programs derive from instances, ``cache``, is made anew)."""
        f0, f1 = int(self.inst_fptr[i0]), int(self.inst_fptr[i1])
        a, b = int(self.fac_ptr[f0]), int(self.fac_ptr[f1])
        values = unit_ones(b - a) if self.fac_val.strides == (0,) else self.fac_val[a:b]
        return FactorGraphData(
            self.graphs[i0:i1], self.inst_fptr[i0:i1 + 1] - f0, self.fac_ptr[f0:f1 + 1] - a,
            self.fac_row[a:b], values, self.fac_tpl[f0:f1], self.gold[i0:i1],
            self.sizes[i0:i1], self.instances[i0:i1],
            None if self.evidence is None else self.evidence[i0:i1])


def _initial_messages(warm: WarmStart | None, picks: np.ndarray, msg_at: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Where each pick's TRW run starts (``trw_training.BlockMessages``'s
    ``inits`` and ``init_at``, -1: cold): the messages ``warm`` keeps —
    as a rule the slices of one evaluation's message array at the
    instances' own offsets, which is then read in place; else copied into
    one array (a copy of every message per evaluation, and one more at the
    peak)."""
    init_at = np.full(len(picks), -1, dtype=np.int64)
    starts = [warm.start[i] if warm is not None else None for i in picks]
    bases = {id(st[0].base) for st in starts if st is not None}
    if len(bases) == 1:
        base = next(st[0].base for st in starts if st is not None)
        origin = base.__array_interface__["data"][0] if isinstance(base, np.ndarray) else None
        if origin is not None and base.ndim == 1 and base.dtype == np.float64 and all(
                st is None or (st[0].__array_interface__["data"][0] - origin
                               == 8 * int(msg_at[i]) and len(st[0]) == msg_at[i + 1] - msg_at[i])
                for st, i in zip(starts, picks)):
            for k, (st, i) in enumerate(zip(starts, picks)):
                if st is not None:
                    init_at[k] = msg_at[i]
            return base, init_at
    parts, at = [], 0
    for k, st in enumerate(starts):
        if st is not None:
            init_at[k] = at
            parts.append(st[0])
            at += len(st[0])
    return (np.concatenate(parts) if parts else np.empty(0)), init_at


def _too_big(graph: FactorGraph, max_table: int) -> str:
    """What `infer junction_tree` says of an instance whose cliques do not fit."""
    plan = clique_tree.junction_tree_plan(graph, max_table)
    tw = f"{'at least ' if not plan.complete else ''}{plan.treewidth}"
    return (f"infer junction_tree: an instance ({graph.n_vars} variables, {graph.n_factors} "
            f"factors) needs a clique table of {plan.largest_table} entries (treewidth {tw}), "
            f"more than max_table = {max_table}; raise it (`infer junction_tree(max_table = "
            f"{plan.largest_table})` if the memory and time are affordable: 8 bytes and some "
            "work per entry), or drop the `infer` line for the default (exact where the "
            "cliques fit, loopy BP elsewhere), or use `infer loopy` / `infer trp` (approximate)")


@dataclass
class FactorGraphProgram:
    """Feature k belongs to attribute row r when ``row_ptr[r] <= k <
    row_ptr[r+1]`` and weights configuration ``feat_config[k]`` of its
    factor's table."""

    row_ptr: np.ndarray
    feat_config: np.ndarray
    row_template: np.ndarray
    template_size: np.ndarray
    method: str              # the inference method's name (fgl.engines.graph.inference)
    settings: Any            # the infer block in effect (fgl.lang.settings.InferSettings)
    has_hidden: bool

    @property
    def inference(self) -> InferenceMethod:
        """The table entry of the spec's inference method."""
        return inference_method(self.method)

    @property
    def n_features(self) -> int:
        return len(self.feat_config)

    @cached_property
    def dense_rows(self) -> np.ndarray:
        """Per attribute row, whether it weights its template's table from
        configuration 0 in order (``table_kernels.factor_tables`` adds it as a block)."""
        return table_kernels.dense_rows(self.row_ptr, self.feat_config)

    def pattern_bounds(self) -> np.ndarray:
        """Per feature, one past the largest configuration of its template's
        table (a model file's arrays are checked against it)."""
        rows = np.repeat(np.arange(len(self.row_ptr) - 1), np.diff(self.row_ptr))
        return np.asarray(self.template_size, dtype=np.int64)[self.row_template[rows]]

    def factor_tables(self, w: np.ndarray, data: FactorGraphData, i: int) -> np.ndarray:
        """The flat log-potential tables θ_f of instance i."""
        g = data.graphs[i]
        out = np.empty(g.n_table)
        table_kernels.factor_tables(int(data.inst_fptr[i]), int(data.inst_fptr[i + 1]),
                                    g.tab_ptr, data.fac_ptr, data.fac_row, data.fac_val,
                                    self.row_ptr, self.feat_config, self.dense_rows, w,
                                    np.arange(g.n_factors, dtype=np.int64), out)
        return out

    def evidence_tables(self, w: np.ndarray, data: FactorGraphData, i: int) -> np.ndarray:
        """``factor_tables`` clamped to instance i's ``data.evidence``, if any."""
        table = self.factor_tables(w, data, i)
        ev = data.evidence[i] if data.evidence is not None else None
        if ev is not None:
            g = data.graphs[i]
            table_kernels.clamp(g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_stride, ev, table)
        return table

    def add_counts(self, data: FactorGraphData, i: int, table_weights: np.ndarray,
                   out: np.ndarray) -> None:
        """out[k] += Σ over instance i's factors of value · table_weights at
        feature k's configuration (``table_weights`` in the flat layout of
        ``factor_tables``: beliefs give expected counts, a one-hot table the
        gold counts)."""
        g = data.graphs[i]
        table_kernels.feature_expectations(
            int(data.inst_fptr[i]), int(data.inst_fptr[i + 1]), g.tab_ptr, data.fac_ptr,
            data.fac_row, data.fac_val, self.row_ptr, self.feat_config, self.dense_rows,
            table_weights, np.arange(g.n_factors, dtype=np.int64), out)

    def warm_start(self, data: FactorGraphData, carry: bool | None = True
                   ) -> WarmStart | None:
        """A fresh (cold) ``WarmStart`` for ``data`` with the spec's BP
        settings (tol, max_iter, damping), carrying messages between runs
        when ``carry`` (None: under TRW, whose fixed point is unique, so a
        warm start changes only the path to it); None when no instance
        runs BP (``infer exact``,
        ``infer junction_tree``, or ``auto`` with every instance exact).
        Under TRW (``trw``, ``auto``) training starts at ``START_FACTOR``
        times the spec's tol (at most ``LOOSEST_TOL``) and ``refine``
        brings it down to the spec's: TRW's fixed point is unique, so a
        looser run is the same objective, less precise — unlike the Bethe
        objective's, whose noise can move it between fixed points."""
        method = self.inference
        if not method.keeps_messages:
            return None
        if data.graphs and all(self.junction_tree_plan(g) is not None for g in data.graphs):
            return None
        n, s = data.n_sequences, self.settings
        tol = float(s.tol)
        start = max(tol, min(float(f"{START_FACTOR * tol:.12g}"), LOOSEST_TOL)) \
            if method.convex else tol
        convex = method.convex
        carry = convex if carry is None else carry
        return WarmStart([None] * n, [None] * n, [True] * n, start, int(s.max_iter),
                         float(s.damping or 0.0), carry=carry, floor=tol,
                         size=sum(g.n_vars for g in data.graphs),
                         tightest=tol / 100.0 if convex else TIGHTEST_TOL)

    def junction_tree_plan(self, graph: FactorGraph) -> clique_tree.JunctionTreePlan | None:
        """The junction-tree plan that runs ``graph`` exactly under ``infer
        auto`` or ``infer junction_tree`` (its largest clique table within
        ``max_table``; cached on the graph), else None."""
        if not self.inference.junction_tree:
            return None
        limit = int(self.settings.max_table)
        plan = clique_tree.junction_tree_plan(graph, limit)
        return plan if plan.fits(limit) else None

    def infer(self, graph: FactorGraph, table: np.ndarray, use_max: bool = False,
              init=None, tol: float | None = None, max_iter: int | None = None,
              damping: float | None = None) -> loopy.BPResult:
        """Run the spec's inference method on one instance (``tol``,
        ``max_iter`` and ``damping``, when given, replace the spec's BP
        settings).  ``auto``: the exact junction tree when the instance's
        clique tables fit ``max_table``, else tree-reweighted BP (its convex
        objective trains where the Bethe one stalls: docs/language.md); the
        junction tree ignores ``init`` and returns no messages."""
        method = self.inference
        if method.junction_tree:
            if self.junction_tree_plan(graph) is not None:
                return junction_tree.junction_tree(graph, table, use_max=use_max,
                                                   max_table=int(self.settings.max_table))
            if method.run is None:
                raise FglError(_too_big(graph, int(self.settings.max_table)))
        return method.run(self, graph, table, use_max=use_max, init=init, tol=tol,
                          max_iter=max_iter, damping=damping)

    def appearance_probabilities(self, graph: FactorGraph) -> np.ndarray:
        """``infer trw``'s ρ per factor of ``graph``: the spec's ``rho``
        (``fgl.engines.graph.forest_cover.uniform_appearance``), else the cover's
        (``fgl.engines.graph.forest_cover.appearance_probabilities``); cached on the graph."""
        s = self.settings
        if s.rho is not None:
            return forest_cover.uniform_appearance(graph, float(s.rho))
        return forest_cover.appearance_probabilities(
            graph, int(s.forests or forest_cover.DEFAULT_FORESTS))

    def _expect(self, w: np.ndarray, data: FactorGraphData, jobs: int, clamped: bool,
                warm: WarmStart | None) -> Expectations:
        if warm is not None and not len(warm.start) == len(warm.latest) == data.n_sequences:
            raise ValueError(f"the warm start holds {len(warm.start)} instances; the data "
                             f"has {data.n_sequences}")
        # blocks fixed by the data, their counts added in order: the same sums for any jobs
        # (fgl.engines.parallel.ordered_reduce); one count array per thread, not per instance
        cuts = blocks(np.concatenate([[0], np.cumsum([g.n_table for g in data.graphs])]),
                      parallel.GRAPH_BLOCK_COST)
        msgs = self.message_scratch(data, warm)
        counts = np.zeros(self.n_features)
        runs: list[RunSummary] = []

        def compute(k: int, scratch: np.ndarray) -> tuple[np.ndarray, list]:
            scratch.fill(0.0)
            stopping.check()
            return scratch, self.expect_instances(w, data, *cuts[k], clamped, warm, scratch,
                                                  msgs)

        def combine(k: int, result: tuple[np.ndarray, list]) -> None:
            np.add(counts, result[0], out=counts)
            runs.extend(result[1])

        ordered_reduce(jobs, len(cuts), compute, combine, lambda: (np.zeros(self.n_features),),
                       parallel.GRAPH_SETS)
        return Expectations(float(sum(r.log_z for r in runs)), counts, InferenceStats.of(runs))

    def message_scratch(self, data: FactorGraphData, warm: WarmStart | None = None
                        ) -> np.ndarray | None:
        """Room for the messages of every instance ``trw_blocks`` runs (None:
        none).  With ``warm``, an array of an earlier evaluation that its
        starts do not read (a rejected trial's, or the start before the
        accepted one), made when there is none: two arrays over a training
        run, where a fresh one per evaluation had three alive at the peak
        (the start, the last trial's, the new; 23 MB each on all of Dutch
        CoNLL-2002's skip chains)."""
        batch = self.trw_blocks(data)
        if batch is None:
            return None
        if warm is None:
            return np.empty(int(batch[0].msg_at[-1]))
        read = {id(st[0].base) for st in warm.start if st is not None}
        free = next((b for b in warm.buffers if id(b) not in read), None)
        if free is None:
            free = np.empty(int(batch[0].msg_at[-1]))
            warm.buffers.append(free)
        return free

    def expect_instances(self, w: np.ndarray, data: FactorGraphData, i0: int, i1: int,
                         clamped: bool, warm: WarmStart | None, counts: np.ndarray,
                         msgs: np.ndarray | None) -> list[RunSummary]:
        """Instances i0..i1-1 in data order on this thread: their expected
        counts added to ``counts`` (clamped to the gold labels when
        ``clamped``), BP started and recorded by ``warm`` when given, the
        kernel's instances (``trw_blocks``) in runs with their messages in
        ``msgs`` (``message_scratch``); the summary of each run."""
        batch = self.trw_blocks(data)
        found: list[RunSummary] = []
        i = i0
        while i < i1:   # (in data order: runs of kernel instances, the others one by one)
            j = i
            while batch is not None and j < i1 and batch[2][j]:
                j += 1
            if j > i:
                found.extend(self._trw_block(w, batch, np.arange(i, j), clamped, warm, msgs,
                                             counts))
                i = j
                continue
            stopping.check()   # (between instances: a training run's stop request)
            g = data.graphs[i]
            table = self.factor_tables(w, data, i)
            if clamped:
                table_kernels.clamp(g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_stride,
                                    data.gold[i], table)
            if warm is None:
                res = self.infer(g, table)
            else:
                res = self.infer(g, table, init=warm.start[i], tol=warm.tol,
                                 max_iter=warm.max_iter, damping=warm.damping)
                warm.record(i, res)
            self.add_counts(data, i, res.factor_beliefs, counts)
            found.append(RunSummary(res.log_z, res.iterations, res.residual, res.converged))
            i += 1
        return found

    def trw_blocks(self, data: FactorGraphData
                   ) -> tuple[trw_training.InstanceArrays, trw_training.FeatureRows,
                              np.ndarray] | None:
        """What ``trw_training.expect_block`` reads of ``data`` (built once
        per data set and ρ setting) and which instances it runs: those
        under tree-reweighted BP (``infer trw``; ``auto``: the instances too
        big to run exactly).  None when there are none."""
        method = self.inference
        if not method.blocks:
            return None
        s = self.settings
        key = ("trw_blocks", s.rho, s.forests, s.max_table if method.junction_tree else None)
        if key not in data.cache:
            picks = np.array([self.junction_tree_plan(g) is None for g in data.graphs],
                             dtype=bool)
            data.cache[key] = None if not picks.any() else (
                trw_training.instance_arrays(
                    data.graphs, [self.appearance_probabilities(g) for g in data.graphs],
                    data.gold),
                trw_training.FeatureRows(
                    np.asarray(data.inst_fptr, dtype=np.int64), data.fac_ptr, data.fac_row,
                    data.fac_val, self.row_ptr, self.feat_config, self.dense_rows,
                    trw_training.tied_factors(data.graphs, data.inst_fptr, data.fac_ptr,
                                              data.fac_row, data.fac_val)),
                picks)
        return data.cache[key]

    def _trw_block(self, w: np.ndarray, batch: tuple, picks: np.ndarray, clamped: bool,
                   warm: WarmStart | None, msgs: np.ndarray, counts: np.ndarray
                   ) -> list[RunSummary]:
        """Instances ``picks`` through ``trw_training.expect_block`` (one
        kernel call): their counts added to ``counts`` in order, their
        messages into ``msgs`` (kept by ``warm``); the summary of each run."""
        arrays, feats, _ = batch
        s = self.settings
        inits, init_at = _initial_messages(warm, picks, arrays.msg_at)
        n = len(picks)
        runs = trw_training.block_runs(n)
        settings = trw_training.BlockSettings(
            float((s.damping or 0.0) if warm is None else warm.damping),
            float(s.tol if warm is None else warm.tol),
            int(s.max_iter if warm is None else warm.max_iter), bool(clamped))
        bad = trw_training.expect_block(
            picks, arrays, feats, w, trw_training.BlockMessages(inits, init_at, msgs), settings,
            counts, runs)
        if bad >= 0:
            raise ValueError("log-potentials must be finite or -inf")
        if warm is not None:
            for k, i in enumerate(picks):
                warm.keep(int(i), bool(runs.converged[k]),
                          (msgs[arrays.msg_at[i]:arrays.msg_at[i + 1]],))
        return [RunSummary(float(runs.log_z[k]), int(runs.sweeps[k]), float(runs.residual[k]),
                           bool(runs.converged[k])) for k in range(n)]

    def expectations(self, w: np.ndarray, data: FactorGraphData, jobs: int = 1,
                     warm: WarmStart | None = None) -> Expectations:
        """Σ Bethe log Z(x) and the belief-expected feature counts; with
        ``warm`` (from ``warm_start(data)``), BP starts from its ``start``
        messages, stops by its rule, and leaves this run's messages in its
        ``latest``."""
        return self._expect(w, data, jobs, False, warm)

    def gold_configurations(self, data: FactorGraphData, i: int) -> np.ndarray:
        """The gold configuration of every factor of instance i (its flat
        index into the factor's table)."""
        g = data.graphs[i]
        out = np.empty(g.n_factors, dtype=np.int64)
        table_kernels.gold_index(data.gold[i], g.f_ptr, g.f_var, g.e_stride, out)
        return out

    def mistakes(self, w: np.ndarray, data: FactorGraphData, i0: int, i1: int
                 ) -> np.ndarray | None:
        """Gold minus MAP-decoded feature counts of instances i0..i1-1, each
        decoded alone by the spec's max-product inference (the perceptron's
        correction, ``fgl.learn.perceptron``); None when every decoding is
        the gold one."""
        delta, wrong = np.zeros(len(w)), False
        for i in range(i0, i1):
            g = data.graphs[i]
            state = self.infer(g, self.factor_tables(w, data, i), use_max=True).map_state
            if np.array_equal(state, data.gold[i]):
                continue
            wrong = True
            self._count_assignment(data, i, data.gold[i], 1.0, delta)
            self._count_assignment(data, i, state, -1.0, delta)
        return delta if wrong else None

    def _count_assignment(self, data: FactorGraphData, i: int, assignment: np.ndarray,
                          weight: float, out: np.ndarray) -> None:
        """out += ``weight`` times the feature counts of ``assignment`` of instance i."""
        g = data.graphs[i]
        config = np.empty(g.n_factors, dtype=np.int64)
        table_kernels.gold_index(assignment, g.f_ptr, g.f_var, g.e_stride, config)
        onehot = np.zeros(g.n_table)
        onehot[g.tab_ptr[:-1] + config] = weight
        self.add_counts(data, i, onehot, out)

    def add_gold_counts(self, data: FactorGraphData, i: int, out: np.ndarray) -> None:
        """out += the feature counts of instance i's gold assignment."""
        self._count_assignment(data, i, data.gold[i], 1.0, out)

    def instance_runs(self, data: FactorGraphData, carry: bool = True) -> InstanceRuns:
        """``data``'s instances a run at a time
        (``fgl.engines.graph.graph_runs.GraphRuns``)."""
        from fgl.engines.graph.graph_runs import GraphRuns
        return GraphRuns(self, data, carry)

    def gold_counts(self, data: FactorGraphData) -> np.ndarray:
        """Feature counts of the gold assignment (fully observed models)."""
        counts = np.zeros(self.n_features)
        for i in range(data.n_sequences):
            self._count_assignment(data, i, data.gold[i], 1.0, counts)
        return counts

    def clamped_expectations(self, w: np.ndarray, data: FactorGraphData, jobs: int = 1,
                             warm: WarmStart | None = None) -> Expectations:
        """The clamped program's log Z(y, x) and expected counts
        (Sutton & McCallum eq. 1.47, 1.52): the observed variables fixed to their gold
        labels, the hidden ones summed out.  ``warm`` as for ``expectations``
        (a WarmStart of its own: the clamped fixed point is another)."""
        return self._expect(w, data, jobs, True, warm)

    def decode(self, w: np.ndarray, data: FactorGraphData, jobs: int = 1) -> Decoding:
        """Max-product MAP assignment of every instance's variables."""
        def work(i: int) -> loopy.BPResult:
            return self.infer(data.graphs[i], self.evidence_tables(w, data, i), use_max=True)

        results = map_instances(jobs, data.n_sequences, work)
        return Decoding([r.map_state for r in results], stats=InferenceStats.each(results))

    def _beliefs(self, w: np.ndarray, data: FactorGraphData, jobs: int) -> list[loopy.BPResult]:
        return map_instances(jobs, data.n_sequences,
                             lambda i: self.infer(data.graphs[i], self.factor_tables(w, data, i)))

    def marginals(self, w: np.ndarray, data: FactorGraphData, jobs: int = 1) -> Marginals:
        """Per instance, the (approximate) marginal of every variable: a
        list of one belief vector per variable (conditioned on
        ``data.evidence``, when given)."""
        results = map_instances(jobs, data.n_sequences, lambda i: self.infer(
            data.graphs[i], self.evidence_tables(w, data, i)))
        return Marginals([r.var_beliefs for r in results], InferenceStats.each(results))

    def log_partition(self, w: np.ndarray, data: FactorGraphData, jobs: int = 1) -> np.ndarray:
        """Bethe log Z(x) of every instance (exact on trees and with
        ``infer exact``)."""
        return np.array([r.log_z for r in self._beliefs(w, data, jobs)])
