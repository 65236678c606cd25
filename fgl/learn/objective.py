"""What L-BFGS minimises: the ``TrainingObjective`` protocol, and the
likelihood objective every program offers.

Objective (Sutton & McCallum eq. 1.21): the negative conditional
log-likelihood plus a Gaussian (L2) prior with a per-feature sigma (per
template, Cuong et al. 2014 footnote 5),

    f(w) = Σ_i [log Z(x_i) - log Z(y_i, x_i)] + Σ_k w_k² / (2 σ_k²),

where Z(y, x) is the program clamped to the gold labels — exp(w·F(x, y))
when every variable is observed, a sum over the hidden ones otherwise
(Sutton & McCallum eq. 1.46-1.48).  Its gradient (Sutton & McCallum eq.
1.22, 1.52): expected minus clamped-expected feature counts plus w / σ².
The program supplies both (``fgl.engines.program.Program``).

Under approximate inference (loopy BP / TRP / TRW, Sutton & McCallum
§1.4.4) the objective is the Bethe (or the convex TRW) approximation and
its gradient the beliefs' expected counts — the two agree only at a BP fixed
point, to the tolerance BP ran to.  Where BP has several fixed points
(strong couplings around loops) the one reached depends on the starting
messages, so under ``bp_start = "cold"`` every evaluation starts BP from
uniform messages, and the objective is a function of the weights.
``bp_start = "warm"`` instead starts each instance from its messages at
the optimiser's current iterate (the ``WarmStart`` the ``Objective`` owns, one for the model
and one for the clamped program; ``train_lbfgs`` calls ``accept()`` whenever
the iterate moves to the last evaluated point): fewer passes per evaluation,
every trial point of one line search from the same messages, but an
objective that depends on the path.  (Measured on 100 CoNLL-2003 articles,
skip chain, TRP to 1e-4, 60 iterations: cold 184 evaluations, 21 s, final
objective 949 and no failed line search; warm 371 evaluations, 163 s,
objective 1130 and four.)  ``bp_start = "auto"``, the default, is warm
where the fixed point is unique (TRW: a start changes only the path to it,
and the objective is a function of the weights to BP's tolerance, which
``precision`` gives the line search) and cold elsewhere.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from fgl.engines.parallel import resolve_jobs
from fgl.engines.program import InferenceStats, Program
from fgl.jit import njit

BP_SETTINGS = ("tol", "max_iter", "damping")
# ``bp_start``: whether BP carries messages between evaluations (None: where its fixed point
# is unique, the program decides: ``Program.warm_start``)
BP_STARTS = {"auto": None, "cold": False, "warm": True}
# how many of BP's errors (``WarmStart.error``) a resumed warm-started run may be off the
# saved objective: restarted cold, TRW stopped 2.3 errors from the warm run's value on a
# small skip chain (tol 1e-4) — the error per variable grows as the tolerance shrinks
RESUME_ERRORS = 10.0


class TrainingObjective(Protocol):
    """f(w) and ∇f(w) for ``fgl.learn.learner.train_lbfgs``, with what the
    learner asks of it around the line search.  ``ExactObjective`` gives the
    answers of an objective without approximate inference."""

    stats: InferenceStats | None   # the last evaluation's approximate inference, if any

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]: ...

    def approximate(self) -> bool:
        """Whether evaluations run approximate inference that ``tighten`` can refine."""

    def tighten(self) -> str | None:
        """Make later evaluations more precise and say how; None: nothing changed."""

    def refine(self, decrease: float, objective: float) -> str | None:
        """After an iteration that lowered f by ``decrease`` to
        ``objective``: make later evaluations more precise if they are too
        coarse for steps that small, and say how; None: nothing changed."""

    def accept(self) -> None:
        """The last evaluation's weights are the optimiser's new iterate."""

    def bp_settings(self) -> dict | None:
        """Inference settings to save in a checkpoint (None: none)."""

    def restore_bp_settings(self, saved: dict | None) -> None:
        """Put back what ``bp_settings`` returned."""

    def resume_slack(self, f: float) -> float:
        """How far an evaluation at a checkpoint's weights may be from the
        objective ``f`` saved there for a resume to go on."""

    def precision(self, f: float) -> float:
        """How far an evaluation near the objective value ``f`` may be from
        the exact objective (0: exact but for rounding); the line search
        allows for it (``fgl.learn.lbfgs``)."""


def same_evaluation(f: float) -> float:
    """``resume_slack`` of an objective that is a function of the weights:
    rounding."""
    return 1e-8 * max(1.0, abs(f))


class ExactObjective:
    """The ``TrainingObjective`` answers of an objective with no approximate
    inference: nothing to tighten, accept, save or restore."""

    stats: InferenceStats | None = None

    def approximate(self) -> bool:
        return False

    def tighten(self) -> str | None:
        return None

    def refine(self, decrease: float, objective: float) -> str | None:
        return None

    def accept(self) -> None:
        pass

    def bp_settings(self) -> dict | None:
        return None

    def restore_bp_settings(self, saved: dict | None) -> None:
        pass

    def resume_slack(self, f: float) -> float:
        return same_evaluation(f)

    def precision(self, f: float) -> float:
        return 0.0


@njit(cache=True, nogil=True)
def subtract_at(grad, index, values):
    """grad[index] -= values in place, with no gathered copies (``index``
    distinct)."""
    for i in range(index.shape[0]):
        grad[index[i]] -= values[i]


@njit(cache=True, nogil=True)
def add_prior(grad, w, inv_var):
    """grad += w / σ² in place; returns Σ w² / (2σ²).  ``inv_var`` holds
    1/σ² per weight, or one value for all."""
    total = 0.0
    same = inv_var.shape[0] == 1
    for k in range(w.shape[0]):
        p = (inv_var[0] if same else inv_var[k]) * w[k]
        grad[k] += p
        total += p * w[k]
    return 0.5 * total


def inverse_variance(sigma: np.ndarray) -> np.ndarray:
    """1/σ² per weight for ``add_prior``, or one value when all are equal."""
    sigma = np.asarray(sigma, dtype=np.float64)
    if sigma.size and (sigma == sigma.flat[0]).all():  # one prior for every weight
        sigma = sigma.flat[:1]
    return 1.0 / np.square(sigma)


class Objective:
    """The likelihood objective (module docstring): f(w) and ∇f(w) for a
    program on encoded training data, a ``TrainingObjective``.

    With every variable observed, the gold side is the score w·F(x, y) of
    the gold counts F, computed once here; with hidden variables it is the
    clamped program, run at every evaluation.  ``stats`` holds the last
    evaluation's approximate-inference statistics (None for exact engines).

    A program that runs BP (``warm_start(data)``, the loopy program) gets
    a ``WarmStart`` per side, held here (``warm``, ``warm_clamped``): BP's
    settings, which ``tighten`` changes, and under ``bp_start = "warm"`` the
    messages — each evaluation then starts BP from those of the last
    evaluation ``accept()`` was called after (cold until the first).  Under
    ``"cold"`` (the default) every evaluation starts from uniform messages.
    """

    def __init__(self, program: Program, data: object, sigma: np.ndarray, jobs: int = 0,
                 bp_start: str = "auto"):
        if bp_start not in BP_STARTS:
            raise ValueError(f"bp_start must be one of {', '.join(BP_STARTS)}, not {bp_start!r}")
        self.program, self.data, self.jobs = program, data, resolve_jobs(jobs)
        self.inv_var = inverse_variance(sigma)
        # the gold counts as (index, value) of their nonzeros: most features never fire
        # at a gold label (support = all), and a full-length copy would be one more vector
        self.gold: tuple[np.ndarray, np.ndarray] | None = None
        if not program.has_hidden:
            counts = program.gold_counts(data)
            index = np.flatnonzero(counts)
            self.gold = (index.astype(np.int32) if len(counts) < 2**31 else index,
                         counts[index])
        self.stats: InferenceStats | None = None
        carry = BP_STARTS[bp_start]
        self.warm = program.warm_start(data, carry)
        self.warm_clamped = program.warm_start(data, carry) if program.has_hidden else None

    def approximate(self) -> bool:
        """Whether some instance runs BP (which ``tighten`` can refine)."""
        return self.bp_settings() is not None

    def tighten(self) -> str | None:
        """Make the following evaluations more precise — BP to a tenth of
        its tolerance, with twice the passes and, if instances did not
        converge, damped (``WarmStart.tighten``) — and say so; None when
        there is nothing to tighten (exact engines and ``infer exact``, or
        BP at its tightest)."""
        if self.warm is None:
            return None
        note = self.warm.tighten()
        clamped = self.warm_clamped.tighten() if self.warm_clamped is not None else None
        if clamped is not None and clamped != note:
            note = f"{note or 'model: unchanged'}; clamped program: {clamped}"
        return note

    def refine(self, decrease: float, objective: float, size: int | None = None
               ) -> str | None:
        """BP's tolerance refined on both sides after a step that lowered
        the objective by ``decrease`` (``WarmStart.refine``: TRW training
        starts loose; ``size``: the whole data set's variables, when this
        is a part); says what changed, None when nothing did."""
        notes = [warm.refine(decrease, objective, size)
                 for warm in (self.warm, self.warm_clamped)
                 if warm is not None]
        return next((note for note in notes if note), None)

    @property
    def variables(self) -> int:
        """The variables BP runs over (0 without BP)."""
        return self.warm.size if self.warm is not None else 0

    def bp_settings(self) -> dict | None:
        """BP's settings per side as recoveries and refinements left them
        (for a checkpoint), None when no BP runs."""
        sides = {"model": self.warm, "clamped": self.warm_clamped}
        saved = {side: {k: getattr(warm, k) for k in BP_SETTINGS}
                 for side, warm in sides.items() if warm is not None}
        return saved or None

    def restore_bp_settings(self, saved: dict | None) -> None:
        """Put back what ``bp_settings`` returned."""
        for side, warm in {"model": self.warm, "clamped": self.warm_clamped}.items():
            if warm is not None and saved and side in saved:
                warm.tol = float(saved[side]["tol"])
                warm.max_iter = int(saved[side]["max_iter"])
                warm.damping = float(saved[side]["damping"])

    def resume_slack(self, f: float) -> float:
        """Rounding, and ``RESUME_ERRORS`` times BP's error on each side
        whose messages were carried (``WarmStart.error``): they are not
        saved, so BP restarts cold at the saved weights and stops at
        another point within its tolerance."""
        return same_evaluation(f) + RESUME_ERRORS * sum(
            warm.error(f) for warm in (self.warm, self.warm_clamped)
            if warm is not None and warm.carry)

    def precision(self, f: float) -> float:
        """BP's error on each side (``WarmStart.error``): a run to tol can
        put log Z off by about tol per variable, or tol relative to ``f``."""
        return sum(warm.error(f) for warm in (self.warm, self.warm_clamped) if warm is not None)

    def accept(self) -> None:
        """The weights of the last evaluation are the optimiser's new
        iterate: later evaluations start BP from that evaluation's messages
        (``WarmStart.accept``)."""
        for warm in (self.warm, self.warm_clamped):
            if warm is not None:
                warm.accept()

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        if self.gold is not None:   # the gold score first: its gather is freed before
            index, values = self.gold   # the expectations' gradient and scratch exist
            gold_log_z = float(w[index] @ values)
        model = self.program.expectations(w, self.data, self.jobs, warm=self.warm)
        grad = model.counts  # the program's fresh array: update it in place
        if self.gold is None:
            gold = self.program.clamped_expectations(w, self.data, self.jobs,
                                                     warm=self.warm_clamped)
            gold_log_z = gold.log_z
            grad -= gold.counts
        else:
            subtract_at(grad, index, values)
        self.stats = model.stats
        prior = add_prior(grad, w, self.inv_var) if len(w) else 0.0
        return float(model.log_z - gold_log_z + prior), grad
