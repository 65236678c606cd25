"""Starting a loopy model from the weights of its exact part.

A skip-chain or relational spec is a model an exact engine can train (its
chain, or its nodes alone) plus templates that link positions (``where``
pairs, graph edges) and make its factor graphs loopy.  The likelihood of
the whole model under tree-reweighted BP is convex (Wainwright et al.
2005; Sutton & McCallum §1.4.4), so where L-BFGS starts changes only how
long it takes, not where it ends.  Started at zero, it spends its first
hundreds of iterations learning what the chain alone learns, each
evaluation paying for BP over the loops; started at the weights of the
spec without its linking templates (trained exactly, at a chain's cost
per evaluation, Ye et al. 2009 §3), with the linking templates' weights
at zero, it spends them where the loops matter.  On 150 CoNLL-2003
articles with clique skip edges (``examples/bench_skip_training.py``)
the skip chain then took 308 iterations instead of 562 to the same
objective (132.838), and the two stages together half the time of the
cold start.

``train { start = ... }``: ``exact_part`` trains the part first, ``zero``
starts every weight at zero, ``auto`` (the default) is ``exact_part``
where the spec has such a part (``exact_part``: below) and zero
otherwise.  A resumed run continues from its checkpoint instead.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from fgl import registry
from fgl.lang import ast
from fgl.model import Model

# the part trains until its objective improves by less than PART_TOL over the rule's period
# (or the run's `tol`, when looser), within its own iteration limit (the default max_iter)
# whatever the run's: it is a start, and the whole spec goes on from it to its own rule.  On
# 150 CoNLL-2003 clique skip-chain articles the part took 175 evaluations at 1e-3 where it took
# 272 at the default tol 1e-5, and the skip chain after it 194 where 190 (the same objective to
# 7 digits); on all 946, 347 where 571, and 623 where 615
PART_TOL = 1e-3
PART_MAX_ITER = 1000


def links_positions(tpl: ast.Template) -> bool:
    """Whether a template links positions of two indices (a ``where`` pair,
    a graph edge) rather than reading labels at one index (``y[t-1..t]``,
    a graph node's ``y[a]``)."""
    return bool(tpl.where) or len({r.index for r in tpl.labels}) > 1


def exact_part(spec: ast.Spec) -> ast.Spec | None:
    """``spec`` without its templates that link positions, when that
    leaves a model an exact engine trains and the spec itself needs a
    factor graph: a chain or semi-Markov spec (the registry's choice), or
    a graph spec whose nodes are then independent.  None for specs without
    such a part: no linking template, nothing left without them, hidden
    layers (their weights start at random, ``initial_weights``), several
    label layers (their cross-layer cliques stay loopy)."""
    kept = [t for t in spec.templates if not links_positions(t)]
    if (not kept or len(kept) == len(spec.templates) or spec.hidden
            or len(spec.outputs) > 1 or registry.choose(spec).engine.exact):
        return None
    part = dataclasses.replace(spec, templates=kept, infer=[], infer_method=None)
    if spec.input_format != "graph" and not registry.choose(part).engine.exact:
        return None   # a gapped window stays a factor graph: no exact part
    return part


def planned(spec: ast.Spec, start: object, resumed: bool) -> ast.Spec | None:
    """The part to train first under the ``start`` setting (None: start at zero)."""
    if resumed or start not in ("auto", "exact_part"):
        return None
    return exact_part(spec)


def feature_numbers(model: Model, templates: set[str]) -> dict[tuple, int]:
    """{(template, attribute, labels): feature number} of ``model``'s
    features in ``templates`` (as ``fgl inspect`` names them)."""
    arrays = model.arrays()
    row_ptr, feat_pattern = arrays["row_ptr"], arrays["feat_pattern"]
    out: dict[tuple, int] = {}
    for t, (plan, vocab) in enumerate(zip(model.templates, model.vocabs)):
        if plan.name not in templates:
            continue
        labels: dict[int, tuple[str, ...]] = {}
        for key, row in vocab.items():
            for k in range(int(row_ptr[row]), int(row_ptr[row + 1])):
                p = int(feat_pattern[k])
                if p not in labels:
                    labels[p] = model.pattern_labels(t, p)
                out[(plan.name, key, labels[p])] = k
    return out


def transfer(part: Model, w_part: np.ndarray, model: Model) -> tuple[np.ndarray, int]:
    """``model``'s starting weights: each feature the part also has at the
    part's weight, the others at ``model.initial_weights()``; and how many
    were carried over."""
    names = {p.name for p in part.templates}
    w0 = model.initial_weights()
    theirs = feature_numbers(part, names)
    carried = 0
    for key, k in feature_numbers(model, names).items():
        j = theirs.get(key)
        if j is not None:
            w0[k] = w_part[j]
            carried += 1
    return w0, carried


@dataclass
class PartStart:
    """The exact part of a run's spec, compiled against its training data."""

    spec: ast.Spec
    model: Model
    data: Any

    @property
    def templates(self) -> list[str]:
        return [t.name for t in self.spec.templates]

    def plan(self) -> str:
        """What the run does first, and why (``TrainingRun.plan``)."""
        return (f"start: the exact part first ({', '.join(self.templates)}), on the "
                f"{registry.choose(self.spec).engine.title}; then every template from its "
                "weights, the linking ones from zero\n  why: `start = auto` (the default) or "
                "`exact_part`: a convex objective ends where it ends from any start, and the "
                "exact part learns its weights at a chain's cost per evaluation")

    def train(self, *, max_iter: int, tol: float, jobs: int, memory: int | None,
              should_stop: Callable[[], str | None], verbose: bool) -> tuple[np.ndarray, dict]:
        """The part's weights by L-BFGS (exact, keeping the correction pairs
        of the loopy run it starts: ``memory``, else ``APPROXIMATE_MEMORY``),
        and the summary of its run (the ``start`` entry of the training log)."""
        from fgl.learn.learner import optimiser_memory, train_lbfgs
        from fgl.learn.trainers.lbfgs import iteration_line

        t0 = time.perf_counter()

        def show(row: dict) -> None:
            print("start " + iteration_line(row), file=sys.stderr)

        w, log = train_lbfgs(self.model.program, self.data, self.model.feat_sigma,
                             max_iter=max_iter, tol=tol, jobs=jobs,
                             w0=self.model.initial_weights(), should_stop=should_stop,
                             progress=show if verbose else None,
                             memory=optimiser_memory(memory, approximate=True))
        return w, {"templates": self.templates, "engine": registry.choose(self.spec).engine.name,
                   "iterations": len(log.iterations), "evaluations": log.evaluations,
                   "seconds": time.perf_counter() - t0, "objective": log.objective,
                   "message": log.message}
