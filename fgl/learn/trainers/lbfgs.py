"""The trainers lbfgs and owlqn: the likelihood (or a local objective) by
L-BFGS, or with an L1 penalty by OWL-QN (``fgl.learn.learner.train_lbfgs``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fgl.learn.trainer_options import LBFGSOptions
from fgl.learn.trainers.base import Fitted, RunContext, Trainer

if TYPE_CHECKING:
    from fgl.learn.learner import TrainingLog
    from fgl.learn.objective import TrainingObjective


def fit_lbfgs(run: RunContext, model: Any, data: Any,
              objective: "TrainingObjective | None" = None) -> Fitted:
    """Train ``model`` on ``data`` within ``run``: the likelihood, or the
    spec's local objective, or the given ``objective`` (a Dask cluster's),
    by L-BFGS — OWL-QN when the run's l1 is above 0."""
    from fgl import registry
    from fgl.engines import background_compile
    from fgl.learn.learner import optimiser_memory, train_lbfgs
    from fgl.learn.local_objectives import LocalObjective

    # (on a cold cache, the second process compiles the optimiser's kernels too)
    background_compile.also_call("fgl.learn.lbfgs:compile_optimiser")
    s = run.settings.options(LBFGSOptions)
    # (from the spec's engine, not the objective: a cluster's learns of BP at its first call)
    memory = optimiser_memory(s.memory, not registry.choose(model.spec).engine.exact)
    if objective is None and s.objective != "likelihood":
        objective = LocalObjective(s.objective, model.program, data, model.feat_sigma, run.jobs)
    weights, log = train_lbfgs(
        model.program, data, model.feat_sigma, max_iter=s.max_iter, tol=s.tol, jobs=run.jobs,
        w0=run.initial_weights(model), progress=run.progress, objective=objective,
        bp_start=s.bp_start, should_stop=run.should_stop, checkpoint=run.checkpointer(model),
        resume=run.resume_state, l1=s.l1, memory=memory)
    return model, weights, log


def fit_objective(run: RunContext, model: Any, objective: "TrainingObjective") -> Fitted:
    """``fit_lbfgs`` on a given objective (a Dask cluster's), with no local data."""
    return fit_lbfgs(run, model, None, objective)


def iteration_line(row: dict) -> str:
    """One iteration's (or recovery's) progress line."""
    if "recovery" in row:
        return (f"  recovery at {row['seconds']:.1f}s (evals {row['evaluations']}, "
                f"{row['spent']:.1f}s since the last iterate): {row['recovery']}")
    bp = row.get("inference")
    if bp is None:
        effort = ""
    elif bp.max_iterations == 0:    # every instance run by the junction tree
        effort = f"  exact (junction tree), {bp.instances} instances"
    else:
        mean = bp.sweeps / max(bp.instances, 1)
        effort = (f"  BP: <= {bp.max_iterations} iterations ({mean:.0f} mean), residual "
                  f"{bp.max_residual:.2g}, {bp.not_converged}/{bp.instances} not converged")
    refined = f"; {row['refined']}" if "refined" in row else ""
    return (f"iter {row['iteration']:4d}  objective {row['objective']:.6g}  "
            f"|grad| {row['gradient_norm']:.4g}  evals {row['evaluations']}  "
            f"{row['seconds']:.1f}s{effort}{refined}")


def run_summary(log: "TrainingLog") -> str:
    """The closing line's account of an L-BFGS run."""
    return (f"{len(log.iterations)} iterations, {log.evaluations} evaluations, "
            f"{len(log.recoveries)} line-search recoveries, objective {log.objective:.6g} "
            f"({log.message})")


LBFGS = Trainer(
    display="trainer lbfgs (the default)",
    title="maximum likelihood (or the `objective`) by L-BFGS (Nocedal & Wright 2006 §7.2; "
          "Sutton & McCallum §1.4.5), with recoveries from failed line searches",
    chosen_when="the default (`trainer = lbfgs`), l1 = 0",
    options=LBFGSOptions, fit=fit_lbfgs, fit_objective=fit_objective, summary=run_summary,
    progress_line=iteration_line, checkpoints=True, partial_labels=True)

OWLQN = Trainer(
    name="owlqn",
    title="L1-penalised likelihood (the elastic net with sigma) by OWL-QN (Andrew & Gao "
          "2007): many weights exactly 0",
    chosen_when="`trainer = lbfgs` (the default) with l1 > 0",
    options=LBFGSOptions, fit=fit_lbfgs, fit_objective=fit_objective, summary=run_summary,
    progress_line=iteration_line, checkpoints=True, partial_labels=True)
