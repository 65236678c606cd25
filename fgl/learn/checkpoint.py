"""Training checkpoints: save a run between two iterations, resume it exactly.

A checkpoint is a model file (``fgl.modelfile.model_files``) of the iterate's
weights — ``fgl tag`` and ``fgl eval`` use it as they use a model — whose
metadata says where training was (iteration, objective, evaluations, the
learner's objective history for its stopping rule, the log so far and
BP's settings, which recoveries tighten) and whose ``state_*`` arrays hold
the rest of the L-BFGS state: the gradient and the correction pairs, and
the next direction when the state has one (``LBFGSState.direction``).

Format ``version`` 2 (the metadata's ``version``; none in version 1, which
never holds a direction): the direction, when there is one, is the
``state_direction`` array, and the pairs are those left once the oldest was
dropped (``fgl.learn.lbfgs``).
``train_lbfgs(resume=...)`` continues from it to the same iterates an
uninterrupted run reaches — exactly where every evaluation is a function
of the weights (exact engines; BP with ``bp_start = cold``, the default);
under ``bp_start = warm`` BP's messages are not saved and restart from the
checkpoint's iterate (under TRW the same fixed point, to BP's tolerance).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from fgl.errors import FglError, ModelFileError, shorten
from fgl.learn.lbfgs import History, LBFGSState
from fgl.learn.sgd_state import KIND as SGD_KIND
from fgl.learn.sgd_state import SGDState

KIND = "fgl-checkpoint"
VERSION = 2
ROW_KEYS = ("iteration", "objective", "gradient_norm", "evaluations", "seconds")


@dataclass
class TrainingState:
    """A training run between two iterations (what a checkpoint holds).

    ``objectives``: the objective at each iteration since the last
    recovery (the learner's relative-improvement test reads them);
    ``rows``: the log's iteration rows (without inference statistics);
    ``bp``: BP's settings per side ({"model": {...}, "clamped": {...}})
    as recoveries left them, None for objectives without BP."""

    lbfgs: LBFGSState
    m: int
    objectives: list[float]
    rows: list[dict]
    recoveries: list[dict]
    eval_seconds: float
    seconds: float
    bp: dict | None

    @property
    def iteration(self) -> int:
        """The L-BFGS iterations done."""
        return self.lbfgs.iteration

    @property
    def objective(self) -> float:
        """The objective at the iterate."""
        return self.lbfgs.f

    @property
    def weights(self) -> np.ndarray:
        """The iterate."""
        return self.lbfgs.x

    def meta(self) -> dict:
        """The JSON part of the checkpoint."""
        return {"kind": KIND, "version": VERSION, "iteration": self.lbfgs.iteration,
                "objective": self.lbfgs.f,
                "evaluations": self.lbfgs.evaluations, "m": self.m,
                "optimizer_recoveries": self.lbfgs.recoveries, "objectives": self.objectives,
                "rows": [{k: row[k] for k in ROW_KEYS} for row in self.rows],
                "recoveries": self.recoveries, "eval_seconds": self.eval_seconds,
                "seconds": self.seconds, "bp": self.bp}

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the checkpoint (besides the weights, ``lbfgs.x``)."""
        direction = self.lbfgs.direction
        return {"gradient": np.asarray(self.lbfgs.gradient(), dtype=np.float64),
                **({} if direction is None else {"direction": direction}),
                **{f"lbfgs_{k}": v for k, v in self.lbfgs.history.arrays().items()}}


class Checkpointable(Protocol):
    """What a trainer's state gives a checkpoint (``TrainingState``,
    ``fgl.learn.sgd_state.SGDState``)."""

    seconds: float

    @property
    def iteration(self) -> int: ...

    @property
    def objective(self) -> float: ...

    @property
    def weights(self) -> np.ndarray: ...

    def meta(self) -> dict: ...

    def arrays(self) -> dict[str, np.ndarray]: ...


def save_checkpoint(path: str | Path, model, state: Checkpointable, meta: dict) -> None:
    """Write ``state`` of a run training ``model`` to ``path`` (atomically,
    as a model file); ``meta`` adds what a model file's metadata says."""
    from fgl.modelfile.model_files import save_model  # (model files: read and written on demand)
    save_model(path, model, state.weights, {**meta, "checkpoint": state.meta()}, state.arrays())


def load_checkpoint(path: str | Path) -> tuple[object, TrainingState | SGDState]:
    """The model and training state saved at ``path`` (an ``SGDState`` for
    the trainer sgd's); ModelFileError when it is no intact checkpoint (a
    plain model file included)."""
    name = str(path)
    from fgl.modelfile.model_files import MAX_STATE_PAIRS, read_model_file
    model, weights, meta, arrays = read_model_file(path)
    saved = meta.get("checkpoint")
    if isinstance(saved, dict) and saved.get("kind") == SGD_KIND:
        try:
            return model, SGDState.restore(weights, saved, arrays)
        except (KeyError, TypeError, ValueError) as e:
            raise ModelFileError(f"corrupt checkpoint: {type(e).__name__}: {e}", name) from None
    if not isinstance(saved, dict) or saved.get("kind") != KIND:
        raise ModelFileError("a model file, not a training checkpoint: resume from the file "
                             "given to --checkpoint", name)
    try:
        n = weights.shape[0]
        gradient = arrays["gradient"]
        if gradient.shape != (n,) or gradient.dtype != np.float64 \
                or not np.isfinite(gradient).all():
            raise ValueError("the gradient does not match the weights")
        m = saved["m"]
        if not isinstance(m, int) or isinstance(m, bool) or not 1 <= m <= MAX_STATE_PAIRS:
            raise ValueError(f"m = {m!r}: L-BFGS keeps 1 to {MAX_STATE_PAIRS} correction pairs")
        direction = _direction(saved, arrays, n)
        history = History.restore(m, n, {k: arrays[f"lbfgs_{k}"] for k in ("s", "y", "rho", "yy")})
        _check_pairs(history, gradient)
        f = float(saved["objective"])
        if not math.isfinite(f):
            raise ValueError("the objective is not finite")
        lbfgs = LBFGSState(weights, f, gradient, int(saved["iteration"]),
                           int(saved["evaluations"]), history,
                           list(saved["optimizer_recoveries"]), direction)
        rows = [{**{k: row[k] for k in ROW_KEYS}, "inference": None} for row in saved["rows"]]
        state = TrainingState(lbfgs, m, [float(v) for v in saved["objectives"]], rows,
                              list(saved["recoveries"]), float(saved["eval_seconds"]),
                              float(saved["seconds"]), _bp_settings(saved["bp"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ModelFileError(f"corrupt checkpoint: {type(e).__name__}: {e}", name) from None
    return model, state


MAX_BP_ITER = 2**31 - 1   # (the settings table's bound on max_iter)


def _bp_settings(saved: object) -> dict | None:
    """BP's settings per side as a checkpoint holds them (None: none);
    ValueError unless each side ("model", "clamped") gives a tolerance above
    0, a whole number of passes from 1 and a damping in [0, 1), as BP takes
    them: an edited checkpoint's were a traceback in the resumed run."""
    if saved is None:
        return None
    if not isinstance(saved, dict) or not set(saved) <= {"model", "clamped"}:
        raise ValueError("BP's settings are not one object per side (model, clamped)")
    for side, bp in saved.items():
        if not isinstance(bp, dict) or set(bp) != {"tol", "max_iter", "damping"}:
            raise ValueError(f"BP's {side} settings are not tol, max_iter and damping")
        tol, passes, damping = bp["tol"], bp["max_iter"], bp["damping"]
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                      for v in (tol, passes, damping))
        if not (numbers and math.isfinite(tol) and tol > 0 and isinstance(passes, int)
                and 1 <= passes <= MAX_BP_ITER and 0 <= damping < 1):
            raise ValueError(f"BP's {side} settings {shorten(str(bp), 200)} are not a "
                             f"tolerance above 0, passes from 1 to {MAX_BP_ITER} and a "
                             "damping in [0, 1)")
    return saved


def _check_pairs(history: History, gradient: np.ndarray) -> None:
    """ValueError unless the saved correction pairs are ones L-BFGS keeps
    (ρ = 1/sᵀy and yᵀy positive and finite) and give a finite direction:
    an edited checkpoint's ρ = inf, say, makes the compact form's matrix
    singular at the first step of the resumed run."""
    rows = history.order
    if not rows:
        return
    if not (np.isfinite(history.rho[rows]).all() and (history.rho[rows] > 0).all()
            and np.isfinite(history.yy[rows]).all() and (history.yy[rows] > 0).all()):
        raise ValueError("its L-BFGS pairs' rho or yy are not positive finite numbers")
    with np.errstate(all="ignore"):
        try:
            direction = history.direction(gradient, np.empty_like(gradient))
        except np.linalg.LinAlgError:
            direction = None
    if direction is None or not np.isfinite(direction).all():
        raise ValueError("its L-BFGS pairs give no finite direction")


def _direction(saved: dict, arrays: dict[str, np.ndarray], n: int) -> np.ndarray | None:
    """The next direction a checkpoint holds (None: none); ValueError when
    its format version is unknown or the direction is not n finite values."""
    version = saved.get("version", 1)
    if version not in (1, VERSION):
        raise ValueError(f"checkpoint format version {version!r}: this fgl reads 1 to {VERSION}")
    direction = arrays.get("direction")
    if direction is None:
        return None
    direction = np.asarray(direction, dtype=np.float64)
    if direction.shape != (n,) or not np.isfinite(direction).all():
        raise ValueError("the direction is not one finite value per weight")
    return direction


def check_same_model(saved, model, name: str) -> None:
    """Refuse to resume the checkpoint ``name`` (whose model is ``saved``)
    when its spec or compiled features differ from ``model``, what the spec
    compiles to on this data."""
    if saved.spec.text != model.spec.text:
        raise FglError(f"{name}: the checkpoint was trained from another spec; resume with the "
                       "spec of the run that wrote it")
    mine, theirs = model.arrays(), saved.arrays()
    if saved.header() != model.header() or mine.keys() != theirs.keys() or not all(
            np.array_equal(mine[k], theirs[k]) for k in mine):
        raise FglError(f"{name}: the checkpoint's labels, features or prior differ from what "
                       "the spec compiles to on this data with these settings; resume with the "
                       "training data and overrides (--sigma) of the run that wrote it")
