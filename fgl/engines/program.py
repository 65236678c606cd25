"""What every compiled program offers the learner and the models.

A *program* is an engine's batch interface: the integer tables of one
compiled model plus the methods that answer, for a batch of encoded
instances, the three questions of inference — Σ log Z with the expected
feature counts, the MAP assignment, and the marginals — so the learner
(``fgl.learn.learner``) is one piece of code for every engine.  Results come
back as the dataclasses below; nothing is stored on the program between
calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


@dataclass
class InferenceStats:
    """How approximate inference went over a batch (loopy belief
    propagation): instances run, how many stopped at ``max_iter`` without
    converging, the most iterations used and the largest final residual."""

    instances: int = 0
    not_converged: int = 0
    max_iterations: int = 0
    max_residual: float = 0.0
    sweeps: int = 0   # iterations (passes, sweeps) summed over the instances
    # per instance, in data order (``each``: decoding and marginals; training
    # keeps the summary only); 0 iterations: solved exactly (junction tree)
    iterations: list[int] | None = None
    residuals: list[float] | None = None
    converged: list[bool] | None = None

    @classmethod
    def of(cls, results: list) -> "InferenceStats":
        """Summarise per-instance results that have ``converged``,
        ``iterations`` and ``residual``."""
        return cls(len(results), sum(not r.converged for r in results),
                   max((r.iterations for r in results), default=0),
                   max((r.residual for r in results), default=0.0),
                   sum(r.iterations for r in results))

    @classmethod
    def each(cls, results: list) -> "InferenceStats":
        """``of(results)``, keeping every instance's iterations, final
        residual and whether it converged."""
        stats = cls.of(results)
        stats.iterations = [int(r.iterations) for r in results]
        stats.residuals = [float(r.residual) for r in results]
        stats.converged = [bool(r.converged) for r in results]
        return stats


@dataclass
class Expectations:
    """Σ_i log Z(x_i) over a batch and the expected feature counts
    E[f_k] summed over it (``stats``: None for exact engines)."""

    log_z: float
    counts: np.ndarray
    stats: InferenceStats | None = None


@dataclass
class RunGradient:
    """A run of instances i0..i1-1 (``InstanceRuns.gradient``): its loss
    Σ_i [log Z(x_i) - log Z(y_i, x_i)] (the gold score w·F(x_i, y_i) in
    place of log Z(y_i, x_i) when every variable is observed) and the
    loss's gradient — expected minus gold (or clamped-expected) counts — at
    the features ``index`` lists (the run's ``support``, distinct ids),
    0 at every other."""

    loss: float
    index: np.ndarray
    values: np.ndarray
    stats: InferenceStats | None = None


class InstanceRuns(Protocol):
    """A data set's instances taken a run i0..i1-1 at a time
    (``Program.instance_runs``): what stochastic gradient training reads."""

    def support(self, i0: int, i1: int) -> np.ndarray:
        """The features the run's loss reads (the index of its gradient):
        ``gradient`` reads the weights there only."""

    def gradient(self, w: np.ndarray, i0: int, i1: int) -> RunGradient:
        """The run's loss and gradient at the weights ``w`` (read at the
        run's ``support`` only)."""


@dataclass
class Decoding:
    """The MAP assignment of every instance of a batch.

    ``assignments[i]`` holds the label id of every variable of instance i in
    the program's own order (tokens for chains; layer-major variables for
    factor graphs); ``segment_starts[i]`` marks with 1 the first token of
    each segment (segment programs only, else None)."""

    assignments: list[np.ndarray]
    segment_starts: list[np.ndarray] | None = None
    stats: InferenceStats | None = None


@dataclass
class Marginals:
    """Per instance, the marginal distribution of every variable:
    ``per_instance[i]`` is a [variables, labels] array (exact engines: the
    tokens of a sequence; factor graphs: a list of per-variable vectors)."""

    per_instance: list[Any]
    stats: InferenceStats | None = None


class Program(Protocol):
    """The engine interface (``ChainProgram``, ``SegmentProgram``,
    ``FactorGraphProgram``).  ``data`` is the engine's own encoded batch."""

    n_features: int
    has_hidden: bool

    def expectations(self, w: np.ndarray, data: Any, jobs: int, warm: Any = None
                     ) -> Expectations:
        """Σ_i log Z(x_i) and the expected feature counts under the model;
        ``warm``: state an approximate engine carries between calls (its
        ``warm_start(data)``), None for exact engines."""

    def pattern_bounds(self) -> np.ndarray:
        """Per feature, one past the largest label pattern (or factor
        configuration) id its ``feat_pattern`` entry may hold."""

    def gold_counts(self, data: Any) -> np.ndarray:
        """Feature counts of the gold assignment (fully observed data)."""

    def mistakes(self, w: np.ndarray, data: Any, i0: int, i1: int) -> np.ndarray | None:
        """Gold minus MAP-decoded feature counts of instances i0..i1-1 (the
        perceptron's correction), None when every decoding is the gold one."""

    def instance_runs(self, data: Any, carry: bool = True) -> InstanceRuns:
        """``data``'s instances a run at a time (``InstanceRuns``);
        approximate inference then starts each instance from its own last
        run's messages when ``carry``."""

    def warm_start(self, data: Any, carry: bool | None = True) -> Any:
        """The state approximate inference carries between evaluations
        (``expectations(warm=)``), None when every instance runs exactly;
        messages are carried when ``carry`` (None: where the inference
        method's fixed point is unique)."""

    def clamped_expectations(self, w: np.ndarray, data: Any, jobs: int, warm: Any = None
                             ) -> Expectations:
        """log Z(y, x) of the program clamped to the observed labels and its
        expected counts (Sutton & McCallum eq. 1.47, 1.52); needed only when
        ``has_hidden``."""

    def decode(self, w: np.ndarray, data: Any, jobs: int) -> Decoding:
        """The MAP assignment of every instance."""

    def marginals(self, w: np.ndarray, data: Any, jobs: int) -> Marginals:
        """Every variable's marginal distribution."""

    def log_partition(self, w: np.ndarray, data: Any, jobs: int) -> np.ndarray:
        """log Z(x_i) of every instance."""
