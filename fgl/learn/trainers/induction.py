"""The trainer induction: feature induction (``fgl.learn.induction``,
McCallum 2003), chosen by a template marked ``(induce = k)``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fgl.errors import SpecError
from fgl.lang import ast
from fgl.lang.settings import resolve_train
from fgl.learn.trainer_options import InductionOptions, LBFGSOptions
from fgl.learn.trainers.base import Fitted, RunContext, Trainer
from fgl.learn.trainers.lbfgs import iteration_line, run_summary

if TYPE_CHECKING:
    from fgl.registry import Engine


_ALONE = ("feature induction trains by L-BFGS alone: no other trainer, l1, local objective, "
          "checkpoints or resume")


def candidates(spec: ast.Spec) -> ast.Template | None:
    """The template marked ``(induce = k)``, whose attributes are the
    candidate tests, or None: no feature induction."""
    return next((t for t in spec.templates if any(o.key == "induce" for o in t.options)), None)


def check_spec(spec: ast.Spec, engine: "Engine", reason: str) -> None:
    """Refuse, at the template of candidates, feature induction on another
    engine than the chain's and under another trainer than L-BFGS."""
    tpl = candidates(spec)
    where = (tpl.loc.file, tpl.loc.line, tpl.loc.col)
    if engine.name not in INDUCTION.engines:
        raise SpecError("feature induction (`induce`) works on chain models; this spec runs "
                        f"on the {engine.name} engine", *where)
    if resolve_train(spec).trainer != LBFGSOptions.NAME:
        raise SpecError(f"{_ALONE} with `induce`", *where)


def _fit(run: RunContext, model: Any, data: Any) -> Fitted:
    from fgl.learn.induction import train_with_induction

    s = run.settings.options(InductionOptions)
    return train_with_induction(model, data, s, max_iter=s.max_iter, tol=s.tol,
                                jobs=run.jobs, progress=run.progress,
                                should_stop=run.should_stop, dev_score=run.dev_score)


def _progress_line(row: dict) -> str:
    if "round" not in row:   # (an L-BFGS iteration between rounds)
        return iteration_line(row)
    dev = f"  dev F1 {row['dev']:.2f}" if "dev" in row else ""
    return (f"round {row['round']:3d}  scored {row['scored']}  added {row['added']}  "
            f"features {row['features']}  objective {row['objective']:.6g}{dev}  "
            f"{row['seconds']:.1f}s  e.g. {'; '.join(row['first'])}")


INDUCTION = Trainer(
    name="induction", display="feature induction",
    title="feature induction (McCallum 2003): rounds of scoring candidate conjunctions by "
          "their likelihood gain, adding the best and retraining by L-BFGS",
    chosen_when="a template marked (induce = k) holds its candidate tests",
    options=InductionOptions,
    fit=_fit, summary=run_summary, progress_line=_progress_line, engines=("chain",),
    accepts=(("objective", "likelihood"), ("bp_start", "cold"), ("l1", 0), ("l1", 0.0)),
    hint=f" ({_ALONE})", override_hint=f" ({_ALONE})",
    check_spec=check_spec, kernels=None)
