"""BP state a training run carries from one evaluation of a data set to
the next (``WarmStart``): the messages its instances' runs started from and
ended with, and BP's settings — the tolerance that TRW training starts
loose and refines as the optimiser's steps shrink, and that ``tighten``
lowers after a failed line search.  Made by
``FactorGraphProgram.warm_start``, read by its evaluations.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fgl.engines.graph import loopy

# how far WarmStart.tighten goes: the tolerance (messages are log-space doubles), the
# passes (a multiple of the spec's: an instance that does not converge runs them all at
# every evaluation) and the damping
TIGHTEST_TOL = 1e-12
MOST_PASSES_FACTOR = 8
MOST_DAMPING = 0.9
# TRW training starts BP this many times looser than the spec's tol (at most LOOSEST_TOL)
# and refines it tenfold as the optimiser's steps shrink (WarmStart.refine)
START_FACTOR = 100.0
LOOSEST_TOL = 1e-3
# the error of log Z from TRW run to tol, per variable and unit of tol, that a step must
# beat: on 150 CoNLL-2003 skip-chain articles (31,723 variables) runs to 1e-3, 1e-4 and
# 1e-5 were 0.004, 0.017 and 0.14 tol per variable from runs to 1e-9
ERROR_PER_VARIABLE = 0.1


@dataclass
class WarmStart:
    """BP state a caller carries from one evaluation of a data set to the
    next (made by ``FactorGraphProgram.warm_start``, owned by the caller, e.g. the
    learner's ``Objective``; one per data set and per clamped/unclamped
    program, since their fixed points differ).

    ``tol``, ``max_iter`` and ``damping`` are BP's settings for these runs,
    initially the spec's; ``tighten`` changes them.  ``converged[i]`` says
    whether instance i's last run converged (exact instances always do).
    ``floor`` is the spec's tol when training starts looser (TRW:
    ``refine``), else equal to ``tol``; ``size`` counts the variables of
    the data set (the error of a run to tol grows with it).

    With ``carry`` (a warm start proper), ``latest[i]`` holds the
    (factor->variable, variable->factor) messages instance i's last run
    ended with — None when it did not converge (messages that are no fixed
    point are no start worth keeping) — and ``start[i]`` those the next run
    starts from (None: cold).  ``accept()`` makes the last run's messages
    the start of the following ones; until then every run starts from the
    same messages, so all trial points of one line search start from the
    iterate's fixed point.  Without ``carry`` every run starts cold and no
    messages are kept: the objective is then a function of the weights even
    where BP has several fixed points, which a warm start makes depend on
    the path (the learner's default, train { bp_start = cold })."""

    start: list
    latest: list
    converged: list
    tol: float
    max_iter: int
    damping: float = 0.0
    most_iter: int = 0  # the most passes tighten goes to (0: MOST_PASSES_FACTOR·max_iter)
    carry: bool = True
    floor: float = 0.0  # the tol refine goes down to (0: tol, nothing to refine)
    size: int = 0       # the variables of the data set
    tightest: float = TIGHTEST_TOL   # the tol tighten goes down to
    # the message arrays its runs have written (``FactorGraphProgram.message_scratch``)
    buffers: list = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not self.most_iter:
            self.most_iter = MOST_PASSES_FACTOR * self.max_iter
        if not self.floor:
            self.floor = self.tol

    def refine(self, decrease: float, objective: float, size: int | None = None) -> str | None:
        """An inexact objective made exact as training needs it: when the
        optimiser's last step lowered the ``objective`` by ``decrease``, less
        than BP's tolerance times the larger of |objective| and
        ``ERROR_PER_VARIABLE`` x ``size`` (the error a run to that tolerance
        can make), the tolerance is cut tenfold (down to ``floor``) — the
        errors of an inexact gradient method must shrink with its steps
        (Friedlander & Schmidt 2012).  On a CoNLL-2003 skip-chain article
        a TRW run to 1e-3 took a third of the sweeps of one to 1e-5.  Says
        what changed; None when nothing did.  ``size``: the variables of
        the whole data set when this one is a part of it (a Dask shard)."""
        if not (decrease < self.error(objective, size) and self.tol > self.floor * (1.0 + 1e-9)):
            return None
        tol = self.tol / 10.0
        tol = self.floor if tol <= self.floor * (1.0 + 1e-6) else tol   # (onto it, unrounded)
        note = f"BP tolerance {self.tol:g} -> {tol:g} (the objective fell by {decrease:.2g})"
        self.tol = tol
        return note

    def error(self, objective: float, size: int | None = None) -> float:
        """What runs to this tolerance can put an ``objective`` off by: tol
        times the larger of |objective| and ``ERROR_PER_VARIABLE`` x the
        variables (``size``, default the data set's)."""
        return self.tol * max(abs(objective),
                              ERROR_PER_VARIABLE * (self.size if size is None else size))

    def accept(self) -> None:
        """Start the following runs from the messages the last run ended
        with (nothing without ``carry``)."""
        if self.carry:
            self.start = list(self.latest)

    def accept_instances(self, i0: int, i1: int) -> None:
        """``accept`` for instances i0..i1-1 alone: their next runs start
        from the messages their last ones ended with (stochastic gradient
        training: each instance from its own previous pass)."""
        if self.carry:
            self.start[i0:i1] = self.latest[i0:i1]

    def record(self, i: int, result: loopy.BPResult) -> None:
        """Keep what instance i's run leaves for the following ones."""
        self.keep(i, result.converged, result.messages)

    def keep(self, i: int, converged: bool, messages: tuple) -> None:
        """``record`` of a run that ended with ``messages``."""
        self.converged[i] = converged
        if self.carry:
            self.latest[i] = messages if converged else None

    def tighten(self) -> str | None:
        """tol / 10 (at most to ``tightest``) with twice the passes (at most
        ``most_iter``), and when the last runs left instances unconverged,
        twice the passes and more damping (0.5, then halfway to 1, at most
        ``MOST_DAMPING``: damping changes the path to a fixed point, not the
        fixed points); says what changed, None when nothing could.  Under
        TRW ``tightest`` is a hundredth of the spec's tol: its objective is
        exact to the tolerance, which the line search allows for
        (``error``), but where the objective is ill-conditioned a search
        can still fail at the spec's tol while the optimum lies many errors
        lower (a small skip chain stopped 12 errors, 0.008, above it); two
        more decades cost sweeps at the end of training only."""
        tol = max(self.tol / 10.0, min(self.tol, self.tightest))
        stalled = sum(not c for c in self.converged)
        max_iter = self.max_iter if tol == self.tol and not stalled else \
            max(self.max_iter, min(2 * self.max_iter, self.most_iter))
        damping = self.damping
        if stalled:
            damping = max(self.damping, min(0.5 if self.damping < 0.5 else (1.0 + self.damping) / 2,
                                            MOST_DAMPING))
        changes = []
        if tol < self.tol * (1.0 - 1e-6):   # (not a rounding step onto the floor)
            changes.append(f"BP tolerance {self.tol:g} -> {tol:g}")
        if max_iter != self.max_iter:
            changes.append(f"at most {self.max_iter} -> {max_iter} passes")
        if damping != self.damping:
            changes.append(f"damping {self.damping:g} -> {damping:g} ({stalled} of "
                           f"{len(self.converged)} instances did not converge)")
        self.tol, self.max_iter, self.damping = tol, max_iter, damping
        return ", ".join(changes) or None
