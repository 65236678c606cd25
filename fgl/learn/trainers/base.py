"""What a trainer is: one training method behind one interface.

In the style of CRFsuite's one file per trainer: each module of this
package (``lbfgs`` for L-BFGS and OWL-QN, ``sgd``, ``perceptron``, ``ecrn``,
``induction``) declares a ``Trainer`` — the
train settings it reads, the engines it trains, what it supports around
it (checkpoints, partially labelled data, a Dask cluster) — and a
``fit`` that trains a compiled model within a run (``RunContext``: a
``fgl.learn.run.TrainingRun``).
``fgl.learn.trainers`` lists them, chooses one for a spec and refuses, with
one generic check, every setting the chosen one does not read.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

from fgl.lang import ast
from fgl.lang.settings import TrainSettings

if TYPE_CHECKING:
    from fgl.learn.checkpoint import TrainingState
    from fgl.learn.learner import TrainingLog
    from fgl.model import Model
    from fgl.registry import Engine

# train settings every trainer reads (the compilers read min_count, every trainer runs on jobs)
READ_BY_ALL = ("jobs", "min_count", "trainer")

Fitted = tuple["Model", np.ndarray, "TrainingLog"]   # (the model, possibly grown; weights; log)


class RunContext(Protocol):
    """What a trainer's ``fit`` reads of the run it trains in
    (``fgl.learn.run.TrainingRun``)."""

    settings: TrainSettings
    resume_state: "TrainingState | None"    # the checkpoint's state, when resuming
    dev_score: Callable[["Model", np.ndarray], float] | None   # development F1, if given
    progress: Callable[[dict], None] | None

    @property
    def jobs(self) -> int: ...

    def should_stop(self) -> str | None: ...

    def initial_weights(self, model: "Model") -> np.ndarray: ...

    def checkpointer(self, model: "Model") -> Callable[["TrainingState", bool], None] | None: ...


@dataclass(frozen=True, kw_only=True)
class Trainer:
    """One training method.

    ``options``: its options class (``fgl.learn.trainer_options``), whose
    fields are the train settings it ``reads`` besides ``READ_BY_ALL``; any
    other in the spec (or overridden by the caller) is refused at the
    setting, unless ``accepts`` holds it at that value (an override also
    when the options' ``BOUNDS`` map it to an option: ``overrides_read``).
    ``name``: the options' ``NAME`` (`trainer = NAME`) unless given (a
    trainer the spec's shape chooses, sharing or without a name).  ``engines``: the
    engines (``fgl.registry``) it trains, None for all.  ``check_spec``
    refuses, at its location, a spec the method cannot train (beyond its
    engine).  ``fit(run, model, data)`` trains; ``summary(log)`` is the
    command line's closing line about it."""

    name: str = ""
    title: str                      # what it is, with the paper it follows
    chosen_when: str                # which spec runs it
    options: type
    fit: Callable[["RunContext", "Model", Any], Fitted]
    summary: Callable[["TrainingLog"], str]
    progress_line: Callable[[dict], str]
    fit_objective: Callable[["RunContext", "Model", Any], Fitted] | None = None
    display: str = ""               # how refusals name it (default: "trainer NAME")
    engines: tuple[str, ...] | None = None
    checkpoints: bool = False       # saves checkpoints and resumes from them
    partial_labels: bool = False    # trains on data with unlabelled nodes
    accepts: tuple[tuple[str, object], ...] = ()   # unread settings allowed at one value
    hint: str = ""                  # why it reads no more (added to a refusal)
    override_hint: str = ""         # added to a refusal of overrides
    check_spec: Callable[[ast.Spec, "Engine", str], None] | None = None  # (spec, engine, why)
    kernels: str | None = "train"   # which kernels it compiles on a first run (train, tag)

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.options.NAME)
        if not self.display:
            object.__setattr__(self, "display", f"trainer {self.name}")

    @property
    def reads(self) -> tuple[str, ...]:
        """The train settings it reads besides ``READ_BY_ALL``: its options."""
        return tuple(f.name for f in fields(self.options))

    @property
    def overrides_read(self) -> tuple[str, ...]:
        """Overrides it reads beyond ``reads`` (its options' ``BOUNDS``)."""
        return tuple(self.options.BOUNDS)

    @property
    def distributed(self) -> bool:
        """Whether it trains on a Dask cluster (any objective, ``fit_objective``)."""
        return self.fit_objective is not None

    def reads_setting(self, key: str, value: object) -> bool:
        """Whether the train setting ``key`` = ``value`` is one it reads (or accepts)."""
        return key in READ_BY_ALL or key in self.reads or (key, value) in self.accepts
