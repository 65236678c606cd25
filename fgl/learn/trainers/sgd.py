"""The trainer sgd: the L2-regularised likelihood by stochastic gradient
descent (``fgl.learn.sgd``), CRFsuite's l2sgd in kind."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fgl.learn.trainer_options import SGDOptions
from fgl.learn.trainers.base import Fitted, RunContext, Trainer

if TYPE_CHECKING:
    from fgl.learn.learner import TrainingLog


def _fit(run: RunContext, model: Any, data: Any) -> Fitted:
    from fgl.learn.sgd import train_sgd
    from fgl.learn.sgd_state import SGDState

    s = run.settings.options(SGDOptions)
    resume = run.resume_state
    if resume is not None and not isinstance(resume, SGDState):
        from fgl.errors import FglError
        raise FglError("trainer sgd: the checkpoint was written by L-BFGS; resume it with "
                       "the trainer that wrote it")
    weights, log = train_sgd(
        model.program, data, model.feat_sigma, epochs=s.epochs, batch=s.batch,
        learning_rate=s.learning_rate, period=s.period, delta=s.delta,
        w0=run.initial_weights(model), progress=run.progress, should_stop=run.should_stop,
        checkpoint=run.checkpointer(model), resume=resume)
    return model, weights, log


def _summary(log: "TrainingLog") -> str:
    epochs = [r for r in log.iterations if "learning_rate" in r]
    if not epochs:
        return f"no epoch finished, objective {log.objective:.6g} ({log.message})"
    last = epochs[-1]
    return (f"{last['iteration']} epochs, learning rate {last['eta0']:.4g} -> "
            f"{last['learning_rate']:.4g}, objective {log.objective:.6g} ({log.message})")


def _progress_line(row: dict) -> str:
    if "calibration" in row:
        return (f"  calibration {row['trial']}: rate {row['calibration']:.4g}  sample "
                f"objective {row['objective']:.6g} ({row['sample']} instances)")
    return (f"epoch {row['iteration']:3d}  objective {row['objective']:.6g}  "
            f"rate {row['learning_rate']:.4g}  {row['seconds']:.1f}s")


SGD = Trainer(
    title="the L2-regularised likelihood by stochastic gradient descent, a step per run of "
          "`batch` instances, the rate calibrated on a sample or given (Bottou 2012 §5; "
          "Vishwanathan et al. 2006 §2; CRFsuite's l2sgd)",
    chosen_when="`trainer = sgd`",
    options=SGDOptions, fit=_fit,
    summary=_summary, progress_line=_progress_line, checkpoints=True,
    accepts=(("objective", "likelihood"), ("l1", 0), ("l1", 0.0), ("bp_start", "cold")),
    hint=" (it runs `epochs` passes, stopping by `period` and `delta`, with the L2 prior "
         "only; BP starts each instance from its previous pass)",
    override_hint=" (L-BFGS settings); --max-iter (max_iter) bounds its epochs and "
                  "--time-limit its time")
