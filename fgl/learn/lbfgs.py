"""Limited-memory BFGS with a strong-Wolfe line search, for the learner.

Nocedal & Wright, *Numerical Optimization* (2nd ed., 2006): L-BFGS
(Algorithm 7.5) with the initial scaling γ = sᵀy / yᵀy (eq. 7.20), its
direction −H·g from the compact representation of H (Byrd, Nocedal &
Schnabel 1994; ``fgl.learn.compact_form``: the two-loop recursion's
matrix, in two passes over the pairs rather than 2m + 1), and the line
search of Algorithm 3.5 with ``zoom`` (Algorithm 3.6) using safeguarded
cubic interpolation (§3.5).  The defaults
follow CRFsuite's L-BFGS (6 corrections, c1 = 1e-4, c2 = 0.9, first step
1/‖g‖), so both trainers take comparable paths.

It lives here rather than in scipy for its memory, which is what the
problem needs: the iterate, the direction, one trial point, the trial's
gradient (the objective hands over a fresh array per evaluation, kept
rather than copied) and 2·m correction vectors in single precision.  The
iterate's gradient is needed during a line search only to form the next
pair's y, so it waits there inside the history: once the direction is
computed the oldest pair is dropped (it is never used again) and the
gradient's bits are parked in the freed row, which the new pair then
overwrites — one full-length vector fewer, the same bits.

When the line search finds no acceptable step the optimiser *recovers*
rather than stopping, a bounded number of times: it asks the objective to
become more precise (the ``tighten`` hook — approximate inference run to a
smaller tolerance; exact objectives have nothing to tighten), re-evaluates
the current point if it did, forgets the correction pairs (they were
measured with the old, inexact gradients) and searches again along the
steepest-descent direction with CRFsuite's first step 1/‖g‖.  An
approximate objective already at its most precise is retried along
steepest descent once, without re-evaluating; when that search fails too,
no step lowers it by more than its error (``precision``), and the run ends
converged to that precision.  Each
recovery is reported (``on_recovery``) and kept in the result.  It gives
up when that restart could change nothing — the failed search already was
steepest descent from an empty memory and nothing was tightened — or after
``max_recoveries``.  A run whose line searches all succeed takes exactly
the steps it took without this.

The initial matrix H₀ may take a shape: ``scale`` (per weight, s_k)
makes it γ·diag(s²) instead of γI, which is L-BFGS run on the weights
w_k / s_k (Nocedal & Wright §7.2 allow any positive definite H₀; eq. 7.20's
γ is then taken in those coordinates).  The learner gives the priors'
shape, σ_k / max σ, where templates have priors of their own: the
objective's curvature along a weight is at least 1/σ_k², so a skip
factor's weights at σ = 0.5 are 400 times as stiff as a chain's at σ = 10,
which one γ cannot fit (``fgl.learn.learner.prior_shape``).  The history
stores its pairs in those coordinates, ŝ = s / s_k and ŷ = y·s_k (ŝᵀŷ =
sᵀy), and a direction is s ⊙ (−Ĥ·(s ⊙ g)).

Between iterations everything the method carries is an ``LBFGSState`` —
iterate, objective, gradient, correction pairs, counters and, when another
iteration follows, the next direction (computed from all the pairs, the
oldest then dropped) — handed to a ``checkpoint`` hook after every
iteration; ``minimize_lbfgs(resume=state)`` continues from one exactly as
the run it came from would have (the learner's checkpoints,
``fgl.learn.checkpoint``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from fgl.jit import njit
from fgl.learn.chunked import run_chunked
from fgl.learn.lbfgs_history import History

Function = Callable[[np.ndarray], tuple[float, np.ndarray]]
Callback = Callable[[int, float, np.ndarray, np.ndarray, int], bool]


@dataclass
class LBFGSResult:
    x: np.ndarray
    f: float
    g: np.ndarray
    iterations: int
    evaluations: int
    converged: bool
    message: str
    # one dict per recovery from a failed line search: iteration, message, objective
    # and gradient_norm at the point it restarted from, evaluations so far, and
    # reevaluated (whether that point was evaluated again, after tighten())
    recoveries: list[dict] = field(default_factory=list)


def recovery_note(count: int) -> str:
    """What a final message adds about recoveries (nothing when none)."""
    return "" if count == 0 else \
        f" ({count} line-search recover{'y' if count == 1 else 'ies'} on the way)"


@njit(cache=True, nogil=True)
def _step_to(x, d, step, out, c0, c1, chunk):
    """out = x + step·d over chunks ``c0``..``c1``-1, in one pass (numpy's
    takes two)."""
    n = x.shape[0]
    for i in range(c0 * chunk, min(n, c1 * chunk)):
        out[i] = x[i] + step * d[i]


@dataclass
class LBFGSState:
    """What L-BFGS carries from iteration ``iteration`` to the next: the
    iterate ``x`` with its objective ``f`` and gradient ``g``, the
    correction pairs, the evaluation count, the recoveries so far and the
    ``direction`` of the next line search (None: to be computed from all
    the pairs; given: the pairs left once the oldest was dropped).  The
    arrays are the optimiser's own (not copies): read them in the
    ``checkpoint`` hook, do not keep them.  Once the hook returns, the
    optimiser parks ``g`` in the history for the line search and sets it
    to None here; ``gradient()`` reads it back until the search ends."""

    x: np.ndarray
    f: float
    g: np.ndarray | None
    iteration: int
    evaluations: int
    history: History
    recoveries: list[dict]
    direction: np.ndarray | None = None

    def gradient(self) -> np.ndarray:
        """``g``, or a copy of it from the history while it is parked there."""
        return self.g if self.g is not None else self.history.unpark()


def iteration_done(callback: Callback | None, checkpoint: Callable[[LBFGSState], None] | None,
                   state: LBFGSState) -> bool:
    """Tell ``callback`` and then ``checkpoint`` that an iteration ended at
    ``state``; whether the callback asks to stop."""
    stop = callback is not None and callback(state.iteration, state.f, state.x, state.g,
                                             state.evaluations)
    if checkpoint is not None:
        checkpoint(state)
    return stop


def _cubic_minimiser(a: float, fa: float, da: float, b: float, fb: float, db: float) -> float:
    """The minimiser of the cubic through (a, fa, da) and (b, fb, db)
    (Nocedal & Wright eq. 3.59), or NaN when it has none."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    if disc < 0.0:
        return math.nan
    d2 = math.copysign(math.sqrt(disc), b - a)
    denom = db - da + 2.0 * d2
    if denom == 0.0:
        return math.nan
    return b - (b - a) * (db + d2 - d1) / denom


class _LineSearch:
    """Find a step along ``d`` meeting the strong Wolfe conditions
    (Algorithms 3.5 and 3.6).  Evaluates ``fun`` at ``x + step·d`` in the
    caller's ``trial`` buffer, which holds the accepted point on return.
    Only the gradient of the point being tried is held — a bracket end is
    (step, f, dphi) — so a search holds two full-length gradients at most
    (the iterate's and the trial's); the rare search that runs out of
    evaluations evaluates its best point once more (``_best``)."""

    def __init__(self, fun: Function, c1: float, c2: float, max_evals: int, jobs: int = 1):
        self.fun, self.c1, self.c2, self.max_evals, self.jobs = fun, c1, c2, max_evals, jobs
        self.evaluations = 0
        # how many times its own error estimate the objective's errors are, as failed
        # searches measured them (``measure``)
        self.underestimate = 1.0

    def measure(self, error: float) -> None:
        """After a failed search with slack ``2·error`` (0: an exact
        objective, nothing to measure): when its shortest step's objective
        lay above the iterate's by more than ``error`` (``noise``: two
        evaluations of nearly one point disagreeing), the objective's error
        is taken that many times larger from then on — its estimate was
        too low (slowly converging BP stops farther from its fixed point
        than its tolerance says) — and stays proportional to the estimate
        as ``tighten`` makes the objective more precise."""
        if error > 0.0:
            self.underestimate = max(self.underestimate,
                                     self.underestimate * self.noise() / error)

    def _point(self, x, d, step, trial):
        run_chunked(_step_to, len(x), self.jobs, x, d, float(step), trial)

    def _eval(self, x, d, step, trial):
        self._point(x, d, step, trial)
        f, g = self.fun(trial)
        self.evaluations += 1
        if step < self.shortest[0]:
            self.shortest = (step, f)
        return f, g, float(g @ d)

    def noise(self) -> float:
        """After a search: how far its shortest step's objective lies above
        f0 beyond what the slope predicts there — at a step that changes the
        objective by less than a tenth of that, the difference between two
        evaluations of nearly one point (0 when none lies above, or the
        step was not that short).  An approximate objective's error measured
        rather than estimated (Shi, Xie, Byrd & Nocedal 2022 §2 take the
        noise level as known)."""
        step, f = self.shortest
        if not math.isfinite(f):
            return 0.0
        gap = f - self.f0 - step * self.dphi0
        return gap if gap > 0.0 and 10.0 * step * abs(self.dphi0) < gap else 0.0

    def search(self, x, f0, d, dphi0, step, trial, slack=0.0):
        """(f, g) at an accepted step, or None when ``max_evals`` run out
        without any step of sufficient decrease.  ``slack``: twice the
        objective's error, which the sufficient-decrease test allows (the
        relaxed Armijo condition of Shi, Xie, Byrd & Nocedal 2022 §2)."""
        self.evaluations = 0
        self.f0, self.dphi0, self.slack = f0, dphi0, slack
        self.shortest = (math.inf, math.nan)   # (step, f) of the shortest step tried
        lo = (0.0, f0, dphi0)  # (step, f, dphi): best sufficient decrease so far
        while self.evaluations < self.max_evals:
            g = None   # (the last trial's gradient is freed before the next evaluation)
            f, g, dphi = self._eval(x, d, step, trial)
            if not math.isfinite(f):
                step = 0.5 * (lo[0] + step)  # stepped out of the domain: come back
                continue
            point = (step, f, dphi)
            if f > f0 + self.c1 * step * dphi0 + slack or (lo[0] > 0.0 and f >= lo[1]):
                g = None   # (not held while zooming)
                return self._zoom(x, d, trial, lo, point)
            if abs(dphi) <= -self.c2 * dphi0:
                return f, g
            if dphi >= 0.0:
                g = None
                return self._zoom(x, d, trial, point, lo)
            lo = point
            step *= 2.0
        return self._best(x, d, trial, lo)

    def _zoom(self, x, d, trial, lo, hi):
        """Shrink the bracket between ``lo`` (sufficient decrease, lowest f)
        and ``hi``."""
        f0, dphi0 = self.f0, self.dphi0
        while self.evaluations < self.max_evals:
            a, b = lo[0], hi[0]
            step = _cubic_minimiser(a, lo[1], lo[2], b, hi[1], hi[2])
            # safeguard: stay well inside the bracket, else bisect
            inner_lo, inner_hi = sorted((a + 0.1 * (b - a), b - 0.1 * (b - a)))
            if not inner_lo <= step <= inner_hi:
                step = 0.5 * (a + b)
            g = None
            f, g, dphi = self._eval(x, d, step, trial)
            if not math.isfinite(f):
                hi = (step, math.inf, math.nan)  # forces bisection next
                continue
            point = (step, f, dphi)
            # (against the start, the relaxed Armijo test alone: a point within the slack of f0
            # may lie above it by noise; against a trial, a lower objective)
            if f > f0 + self.c1 * step * dphi0 + self.slack or (lo[0] > 0.0 and f >= lo[1]):
                hi = point
                continue
            if abs(dphi) <= -self.c2 * dphi0:
                return f, g
            if dphi * (b - a) >= 0.0:
                hi = lo
            lo = point
        return self._best(x, d, trial, lo)

    def _best(self, x, d, trial, lo):
        """Out of evaluations: settle for the best step of sufficient
        decrease, if any, evaluated again for its gradient."""
        if lo[0] == 0.0:
            return None
        self._point(x, d, lo[0], trial)
        self.evaluations += 1
        return self.fun(trial)


class Iterate:
    """A minimiser's state: the iterate ``x``, its objective ``f`` and
    gradient ``g``, the evaluations so far and the recoveries."""

    def __init__(self, x: np.ndarray, f: float, g: np.ndarray, evaluations: int,
                 recoveries: list[dict]):
        self.x, self.f, self.g = x, f, g
        self.evaluations, self.recoveries = evaluations, recoveries

    def result(self, iterations: int, converged: bool, message: str) -> LBFGSResult:
        return LBFGSResult(self.x, self.f, self.g, iterations, self.evaluations, converged,
                           message + recovery_note(len(self.recoveries)), self.recoveries)

    def stationary(self, epsilon: float, gradient: np.ndarray | None = None) -> bool:
        """‖gradient‖ ≤ ``epsilon``·max(1, ‖x‖) (CRFsuite's test; the
        gradient ``g`` unless another — OWL-QN's pseudo-gradient — is given)."""
        g = self.g if gradient is None else gradient
        return float(np.linalg.norm(g)) <= epsilon * max(1.0, float(np.linalg.norm(self.x)))

    def recovered(self, record: dict, on_recovery: Callable[[dict], None] | None) -> None:
        self.recoveries.append(record)
        if on_recovery is not None:
            on_recovery(record)


class Stop(NamedTuple):
    """Why a run ends where its line search failed."""

    message: str
    converged: bool = False


def _recover(state: Iterate, fun: Function, it: int, tried: int,
             tighten: Callable[[], str | None] | None, max_recoveries: int, fresh: bool,
             on_recovery: Callable[[dict], None] | None, error: float = 0.0) -> Stop | None:
    """After the line search of iteration ``it`` failed in ``tried``
    evaluations: recover (module docstring) — tighten the objective and
    re-evaluate the iterate if it can be tightened — or say why training
    stops there (None: recovered; restart along steepest descent).  An
    approximate objective at its most precise (``error``: what an
    evaluation may be off by) is retried once along steepest descent; when
    that fails too, no step lowers it by more than its error, which is
    convergence to the precision the objective has."""
    failed = "the line search found no step that decreases the objective"
    if len(state.recoveries) >= max_recoveries:
        return Stop(failed if not state.recoveries else
                    f"{failed} at iteration {it}, the limit of recoveries reached")
    note = tighten() if tighten is not None else None
    if note is None and tighten is not None and fresh:   # approximate, at its most precise
        if error > 0.0:
            return Stop(f"converged to the objective's precision: along steepest descent no "
                        f"step lowers it by more than twice its error (±{error:.2g}, "
                        "approximate inference at its tolerance)", converged=True)
        return Stop(f"{failed} at iteration {it}, even along steepest descent, and the "
                    "objective cannot be made more precise: stopped with the best weights")
    if fresh and note is None:  # the same search again would fail the same way
        return Stop(failed if not state.recoveries else (
            f"{failed} at iteration {it}, even along steepest descent, and the objective "
            "cannot be made more precise"))
    actions = [] if note is not None or tighten is None else \
        ["the objective is at its most precise"]
    if note is not None:
        actions.append(f"{note}; re-evaluated the current point")
        state.f, state.g = fun(state.x)
        state.evaluations += 1
    actions.append("cleared the L-BFGS memory and retried along steepest descent")
    state.recovered({"iteration": it,
                     "message": f"iteration {it}: the line search found no acceptable step in "
                                f"{tried} evaluations; " + "; ".join(actions),
                     "objective": float(state.f), "gradient_norm": float(np.linalg.norm(state.g)),
                     "evaluations": state.evaluations, "reevaluated": note is not None},
                    on_recovery)
    return None


def _iteration_end(s: Iterate, it: int, history: History, d: np.ndarray,
                   callback: Callback | None, checkpoint: Callable[[LBFGSState], None] | None,
                   epsilon: float, last: bool) -> tuple[LBFGSState, str | None]:
    """After iteration ``it`` reached ``s``: tell ``callback``; unless
    training ends there (the callback, ``s`` stationary, or ``last``), the
    next direction into ``d`` and the oldest pair dropped; then the state
    to ``checkpoint``.  Returns it and why training ends ("callback",
    "converged"; None: it goes on, or ends at the iteration limit)."""
    ending = "callback" if callback is not None and callback(it, s.f, s.x, s.g,
                                                             s.evaluations) else None
    if ending is None and s.stationary(epsilon):
        ending = "converged"
    going = ending is None and not last
    if going:
        history.direction(s.g, d)
        history.drop_oldest()
    state = LBFGSState(s.x, s.f, s.g, it, s.evaluations, history, s.recoveries,
                       d if going else None)
    if checkpoint is not None:
        checkpoint(state)
    return state, ending


def _resumed(resume: LBFGSState, epsilon: float) -> tuple[Iterate, np.ndarray | None]:
    """The iterate a resumed run goes on from, and the direction of its next
    line search (None: the iterate is stationary).  A state without one
    gets it, and loses its oldest pair, as if handed over so."""
    s = Iterate(np.array(resume.x, dtype=np.float64), resume.f, resume.gradient(),
                resume.evaluations, list(resume.recoveries))
    if resume.direction is None:
        if s.stationary(epsilon):
            return s, None
        resume.direction = resume.history.direction(s.g, np.empty(s.x.shape[0]))
        resume.history.drop_oldest()
    return s, resume.direction


def _steepest(history: History, g: np.ndarray) -> tuple[np.ndarray, float]:
    """The direction of an empty ``history`` (-g, or -g in H₀'s shape) and
    CRFsuite's first step along it, 1/‖g‖ (in H₀'s coordinates)."""
    scaled = g if history.scale is None else g * history.scale
    return history.direction(g, np.empty(g.shape[0])), 1.0 / float(np.linalg.norm(scaled))


def _start(fun: Function, x0: np.ndarray, m: int, jobs: int, epsilon: float,
           resume: LBFGSState | None, converged: str, scale: np.ndarray | None
           ) -> LBFGSResult | tuple:
    """Where a run starts: (iterate, history, iteration, direction, first
    step, whether the direction is steepest descent from an empty memory),
    or its result when it starts at a stationary point."""
    if resume is None:
        x = np.array(x0, dtype=np.float64)  # (a copy: the caller's x0 is left as it was)
        s = Iterate(x, *fun(x), 1, [])
        if s.stationary(epsilon):
            return s.result(0, True, "the initial point is stationary")
        history = History(m, jobs, scale)
        return s, history, 1, *_steepest(history, s.g), True
    # where the interrupted run was after its callback at iteration resume.iteration
    resume.history.jobs, resume.history.scale = jobs, scale
    s, d = _resumed(resume, epsilon)
    if d is None:
        return s.result(resume.iteration, True, converged)
    return s, resume.history, resume.iteration + 1, d, 1.0, False


def minimize_lbfgs(fun: Function, x0: np.ndarray, *, m: int = 6, max_iter: int = 200,
                   epsilon: float = 1e-5, c1: float = 1e-4, c2: float = 0.9,
                   max_linesearch: int = 20,
                   callback: Callback | None = None,
                   tighten: Callable[[], str | None] | None = None,
                   on_recovery: Callable[[dict], None] | None = None,
                   max_recoveries: int = 5,
                   checkpoint: Callable[[LBFGSState], None] | None = None,
                   resume: LBFGSState | None = None, jobs: int = 1,
                   precision: Callable[[float], float] | None = None,
                   scale: np.ndarray | None = None) -> LBFGSResult:
    """Minimise ``fun`` (f and a fresh gradient array) from ``x0`` on ``jobs`` threads.

    Stops after ``max_iter`` iterations, when ‖g‖ ≤ ``epsilon``·max(1, ‖x‖)
    (CRFsuite's test), when the line search finds no acceptable step and
    recovering (module docstring) is exhausted or could change nothing, or
    when ``callback(iteration, f, x, g, evaluations)`` returns True.

    ``tighten()`` makes ``fun`` more precise from then on and says how
    (None: nothing left to tighten); ``on_recovery(record)`` hears of each
    recovery as it happens — the record also lands in ``result.recoveries``.
    ``checkpoint(state)`` is called after every iteration's callback;
    ``resume`` (a state a checkpoint saw, with the same ``m``) continues
    from there — ``x0`` is then ignored and ``fun`` not called at it; the
    optimiser then treats it as a state it handed over (it may set its
    ``direction``, park its gradient and drop its oldest pair).
    ``precision(f)``: how far an evaluation near ``f`` may be from the
    exact objective (approximate inference run to a tolerance); the line
    search accepts a step whose objective is within twice that of
    sufficient decrease (Shi, Xie, Byrd & Nocedal 2022 §2), so that noise
    below the tolerance in force fails no search; failed searches correct
    an error estimate that is too low (``_LineSearch.measure``).
    ``scale`` (one positive value per weight) shapes H₀ (module docstring).
    """
    search = _LineSearch(fun, c1, c2, max_linesearch, jobs)
    converged = f"gradient norm below {epsilon:g}·max(1, |x|)"
    start = _start(fun, x0, m, jobs, epsilon, resume, converged, scale)
    if isinstance(start, LBFGSResult):
        return start
    s, history, it, d, step, fresh = start
    trial, state = np.empty(s.x.shape[0]), resume
    while it <= max_iter:
        dphi0 = float(s.g @ d)
        if not dphi0 < 0.0:  # not a descent direction (rounding): restart along -g
            history = History(m, jobs, scale)   # (new arrays: state keeps its own)
            d = _steepest(history, s.g)[0]
            dphi0 = float(s.g @ d)
        history.park(s.g)
        if state is not None and state.history is history:   # (else it keeps its own g)
            state.g = None
        s.g = None
        error = search.underestimate * precision(s.f) if precision is not None else 0.0
        found = search.search(s.x, s.f, d, dphi0, step, trial, 2.0 * error)
        s.evaluations += search.evaluations
        if found is None:
            search.measure(error)
            s.g = history.unpark()
            stop = _recover(s, fun, it, search.evaluations, tighten, max_recoveries, fresh,
                            on_recovery, error)
            if stop is not None:
                return s.result(it - 1, stop.converged, stop.message)
            if s.stationary(epsilon):
                return s.result(it - 1, True, converged)
            history = History(m, jobs, scale)
            (d, step), fresh = _steepest(history, s.g), True
            continue
        fresh = False
        (s.f, g_new), found = found, None
        history.record(trial, s.x, g_new, None)
        s.x, trial = trial, s.x  # the accepted point becomes the iterate
        s.g, g_new = g_new, None   # (held by ``s`` alone: parked at the next search)
        state, ending = _iteration_end(s, it, history, d, callback, checkpoint, epsilon,
                                       it >= max_iter)
        if ending == "callback":
            return s.result(it, True, "stopped by the callback")
        if ending == "converged":
            return s.result(it, True, converged)
        step = 1.0
        it += 1
    return s.result(max_iter, False, f"reached the iteration limit ({max_iter})")


def compile_optimiser() -> None:
    """Compile L-BFGS's kernels (here, ``fgl.learn.lbfgs_history``,
    ``fgl.learn.compact_form``) by minimising a small ill-conditioned
    quadratic for a few iterations (every kernel of an iteration runs; their
    types do not depend on the problem): what the L-BFGS trainer has a
    second process compile on a cold cache (``fgl.engines.background_compile``)
    while the first compiles its model's."""
    scale = np.linspace(1.0, 50.0, 64)

    def quadratic(x: np.ndarray) -> tuple[float, np.ndarray]:
        return 0.5 * float(scale @ (x * x)), scale * x

    minimize_lbfgs(quadratic, np.ones(64), max_iter=8)
