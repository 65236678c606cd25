"""The trainer perceptron: the averaged structured perceptron (``fgl.learn.perceptron``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fgl.learn.trainer_options import PerceptronOptions
from fgl.learn.trainers.base import Fitted, RunContext, Trainer

if TYPE_CHECKING:
    from fgl.learn.learner import TrainingLog


def _fit(run: RunContext, model: Any, data: Any) -> Fitted:
    from fgl.learn.perceptron import train_perceptron

    s = run.settings.options(PerceptronOptions)
    return (model, *train_perceptron(model.program, data, epochs=s.epochs, batch=s.batch,
                                     w0=model.initial_weights(), progress=run.progress,
                                     should_stop=run.should_stop))


def _summary(log: "TrainingLog") -> str:
    return (f"{len(log.iterations)} epochs, {log.iterations[-1]['mistakes']} mistakes in the "
            f"last ({log.message})")


def _progress_line(row: dict) -> str:
    return f"epoch {row['iteration']:3d}  mistakes {row['mistakes']}  {row['seconds']:.1f}s"


PERCEPTRON = Trainer(
    title="the averaged structured perceptron over the engine's MAP decoding (Collins 2002 "
          "Fig. 1, §2.5)",
    chosen_when="`trainer = perceptron`",
    options=PerceptronOptions, fit=_fit, summary=_summary, progress_line=_progress_line,
    accepts=(("objective", "likelihood"), ("l1", 0), ("l1", 0.0)),
    hint=" (it runs `epochs` passes and has no prior)",
    override_hint=" (L-BFGS settings); --max-iter (max_iter) bounds its epochs and "
                  "--time-limit its time",
    kernels="tag")
