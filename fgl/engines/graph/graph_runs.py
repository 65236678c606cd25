"""A factor-graph data set's instances a run at a time, for stochastic
gradient training (``Program.instance_runs`` of ``FactorGraphProgram``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from fgl.engines.program import InferenceStats, RunGradient
from fgl.engines.sequence.encoded import dot_at, run_layout


class GraphRuns:
    """A factor-graph data set's instances a run i0..i1-1 at a time
    (``Program.instance_runs``, for stochastic gradient training): the
    features a run reads — those of the attribute rows of its factors — and
    its loss and gradient there, counted into scratch vectors read and
    cleared at those features only.

    Instances run by BP keep a ``WarmStart`` per side (the model, and the
    clamped program with hidden variables) at the spec's BP settings (no
    loose start: nothing here refines it); with ``carry`` each instance's
    next run starts from the messages its last one converged to.  Under TRW
    (``infer trw``, and ``auto`` for the instances it does not run exactly)
    the fixed point is unique, so a warm start changes the sweeps, not the
    answer; under loopy BP and TRP it can change which fixed point a run
    reaches."""

    def __init__(self, program: Any, data: Any, carry: bool):
        self.program, self.data = program, data
        self.row_ptr = np.asarray(program.row_ptr, dtype=np.int64)
        n_rows = len(self.row_ptr) - 1
        self.keep = np.ones(n_rows, dtype=np.bool_)
        self.mark = np.zeros(n_rows, dtype=np.bool_)
        self.no_rows = np.zeros(0, dtype=np.int64)
        self.last: tuple | None = None
        self.sides = [self._side(carry, False)]
        if program.has_hidden:
            self.sides.append(self._side(carry, True))
        self.gold = np.zeros(program.n_features) if not program.has_hidden else None

    def _side(self, carry: bool, clamped: bool) -> tuple:
        warm = self.program.warm_start(self.data, carry)
        if warm is not None:
            warm.tol = warm.floor
        return (clamped, warm, np.zeros(self.program.n_features),
                self.program.message_scratch(self.data))

    def support(self, i0: int, i1: int) -> np.ndarray:
        """The features of the attribute rows of instances i0..i1-1's factors
        (kept for the last run asked: a step asks ``support``, then
        ``gradient``)."""
        if self.last is None or self.last[0] != (i0, i1):
            f0, f1 = int(self.data.inst_fptr[i0]), int(self.data.inst_fptr[i1])
            self.last = ((i0, i1), run_layout(self.data.fac_ptr, self.data.fac_row, f0, f1,
                                              self.no_rows, self.keep, self.mark,
                                              self.row_ptr)[1])
        return self.last[1]

    def gradient(self, w: np.ndarray, i0: int, i1: int) -> RunGradient:
        index = self.support(i0, i1)
        found, totals = [], []
        for clamped, warm, counts, msgs in self.sides:
            runs = self.program.expect_instances(w, self.data, i0, i1, clamped, warm, counts,
                                                 msgs)
            if warm is not None:
                warm.accept_instances(i0, i1)
            totals.append((sum(r.log_z for r in runs), counts[index].copy()))
            counts[index] = 0.0
            found.extend(runs if not clamped else [])
        log_z, values = totals[0]
        if self.gold is None:
            gold_log_z, gold = totals[1]
        else:
            for i in range(i0, i1):
                self.program.add_gold_counts(self.data, i, self.gold)
            gold = self.gold[index]
            self.gold[index] = 0.0
            gold_log_z = dot_at(w, index, gold)
        return RunGradient(float(log_z - gold_log_z), index, values - gold,
                           InferenceStats.of(found))
