"""Which engine a spec needs, and why: the one place an engine is chosen.

Each ``Engine`` names the model class that compiles and runs it and a test
that, given a checked spec, returns the reason this engine is the one (or
None).  ``choose`` asks them in order — the general factor-graph engine
first, since any non-chain clique needs it; then segments; the exact chain
otherwise — and ``explain`` and model files read the choice from here.
What differs between engines outside the compile package is declared on
the ``Engine`` (segments, what evaluation's ``auto`` scheme means, how a
Dask cluster compiles it), so nothing outside this module and
``fgl.compile`` branches on the kind of a model or program.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fgl.engines.first_run import Kernels
from fgl.engines.graph.inference import inference_method
from fgl.errors import FglError
from fgl.lang import ast
from fgl.lang.checks import labels_text
from fgl.lang.settings import TrainSettings, resolve_infer
from fgl.model import Model


def _no_scheme(spec: ast.Spec) -> str | None:
    return None


def _segment_scheme(spec: ast.Spec) -> str | None:
    """A segment model ``from change`` writes one run of a label per
    segment: its own segments are the runs."""
    return "runs" if spec.segments.boundary == "change" else None


@dataclass(frozen=True)
class Engine:
    """An engine: its name, the model class that implements it, what it is
    (with the paper it follows), when a spec needs it, and what it can do:

    - ``objectives``: what `train { objective = ... }` may be;
    - ``segmented``: its variables are segments of tokens (Cuong et al.
      2014 §2), so drawings show the segmentation over the tokens;
    - ``auto_scheme``: the evaluation scheme ``auto`` means for a spec
      (None: the tags' own scheme, ``fgl.data.schemes``);
    - ``distributed_compile``: which shard steps compile it, mapped over a
      Dask cluster's shards by ``fgl.distributed.compile``: ``"sequence"``
      (``fgl.compile.sequence_shards``: gold labels, then attributes) or
      ``"graph"`` (``fgl.compile.graph_shards``: labels, then factors);
    - ``kernels``: per task ("train", "tag") the numba kernels whose cache
      tells a first run on this machine (``fgl.engines.first_run``);
    - ``exact``: its inference is exact for every spec it runs (False: it
      may run approximate inference, so training may start from the spec's
      exact part, ``fgl.learn.exact_start``)."""

    name: str
    model_class: str   # "module:Class", imported when ``model`` is first asked for
    title: str
    needed_because: Callable[[ast.Spec], str | None]
    objectives: tuple[str, ...] = ("likelihood",)
    segmented: bool = False
    auto_scheme: Callable[[ast.Spec], str | None] = _no_scheme
    distributed_compile: str = "sequence"
    kernels: tuple[Kernels, ...] = ()
    exact: bool = True

    @property
    def model(self) -> type[Model]:
        """The model class that implements the engine (its module, and the
        kernels it runs, imported on first use: choosing an engine needs
        neither)."""
        module, _, name = self.model_class.partition(":")
        return getattr(importlib.import_module(module), name)


def _factor_graph_reason(spec: ast.Spec) -> str | None:
    if spec.input_format == "graph":
        return "the input is graph-structured (`input graph`): one factor graph per graph"
    if spec.hidden:
        names = ", ".join(h.name for h in spec.hidden)
        return (f"the spec has hidden layers ({names}), summed out by clamped inference "
                "(Sutton & McCallum §1.4.3)")
    if len(spec.outputs) > 1:
        return (f"the spec has several label layers ({', '.join(spec.outputs)}), linked per "
                "position (a factorial CRF, Sutton & McCallum §1.4.1)")
    if spec.segments is not None:
        return None
    for tpl in spec.templates:
        if tpl.where or any(r.index != "t" or r.var != tpl.labels[0].var for r in tpl.labels):
            return (f"template '{tpl.name}' links {labels_text(tpl.labels)}, which is not a "
                    "contiguous label window of one chain (a skip edge or pair)")
        positions = [k for r in tpl.labels for k in range(r.lo, r.hi + 1)]
        if len(tpl.labels) > 1 and positions != list(range(1 - len(positions), 1)):
            return (f"template '{tpl.name}' links {labels_text(tpl.labels)}, not a contiguous "
                    "window y[t-k..t]: a clique with a gap (or out of order, or not ending at "
                    "t), unrolled into a factor graph per sequence")
    return None


def _segments_reason(spec: ast.Spec) -> str | None:
    if spec.segments is None:
        return None
    return ("the spec declares `segments`; templates range over segment label windows "
            "s[j-k..j], so inference is exact in O(T·|P|·Σ_y L_y), L_y the length limit of "
            "label y")


def _chain_reason(spec: ast.Spec) -> str | None:
    if all(len(t.labels) == 1 and t.labels[0].lo == t.labels[0].hi for t in spec.templates):
        return ("every template reads one label y[t] and none links two, so each token's "
                "label is predicted on its own (a maximum-entropy classifier per token): "
                "exact in O(T·n)")
    return ("every template is a contiguous label window y[t-k..t] of one chain, so "
            "inference is exact in O(T·n·|P|)")


ENGINES: tuple[Engine, ...] = (
    Engine("factor graph", "fgl.compile.factor_graphs:FactorGraphModel",
           "exact junction tree or belief propagation over a factor graph per instance "
           "(Koller & Friedman 2009 ch. 10; Sutton & McCallum §1.4.4, §1.5)",
           _factor_graph_reason, ("likelihood", "piecewise", "pseudo_likelihood"),
           distributed_compile="graph", exact=False,
           kernels=(Kernels("train", "fgl.engines.graph.table_kernels", ("feature_expectations",),
                            70),
                    Kernels("tag", "fgl.engines.graph.table_kernels", ("factor_tables",), 30))),
    Engine("segments", "fgl.compile.sequence:SegmentModel",
           "exact high-order semi-Markov (Cuong et al. 2014 §2)",
           _segments_reason, segmented=True, auto_scheme=_segment_scheme,
           kernels=(Kernels("train", "fgl.engines.sequence.segments_batch",
                            ("_expectations_factored", "_expectations_scaled"), 30),
                    Kernels("tag", "fgl.engines.sequence.segments_batch", ("batch_viterbi",),
                            12))),
    Engine("chain", "fgl.compile.sequence:ChainModel",
           "exact pattern-sparse chain (Ye et al. 2009 §3)", _chain_reason,
           kernels=(Kernels("train", "fgl.engines.sequence.chain",
                            ("_expectations_first_order", "_expectations_factored",
                             "_expectations_scaled"), 15),
                    Kernels("tag", "fgl.engines.sequence.chain", ("batch_viterbi",), 6))),
)


@dataclass(frozen=True)
class Choice:
    """The engine chosen for a spec and the reason."""

    engine: Engine
    reason: str

    @property
    def model(self) -> type[Model]:
        return self.engine.model

    def title(self, spec: ast.Spec, acyclic: bool = False) -> str:
        """What runs, with the spec's inference method for factor graphs
        (``acyclic``: every instance's factor graph is known to be a tree
        or forest, where belief propagation is exact)."""
        if self.engine.name != "factor graph":
            return self.engine.title
        settings = resolve_infer(spec)
        return inference_method(settings.method).title(settings, acyclic)


def choose(spec: ast.Spec) -> Choice:
    """The engine ``spec`` needs, and why."""
    for engine in ENGINES:
        reason = engine.needed_because(spec)
        if reason is not None:
            return Choice(engine, reason)
    raise AssertionError("the chain engine takes every spec the others do not")


def by_name(name: str) -> Engine:
    """The engine called ``name`` (as model files record it)."""
    for engine in ENGINES:
        if engine.name == name:
            return engine
    raise FglError(f"unknown engine '{name}'; this fgl has: "
                   f"{', '.join(e.name for e in ENGINES)}")


def explain(spec: ast.Spec, model: Model | None = None, data: object | None = None) -> str:
    """The engine chosen for ``spec`` and why, then the compiled program's
    sizes when a ``model`` (compiled against ``data``) is given."""
    choice = choose(spec)
    graphs = getattr(data, "graphs", None)
    acyclic = bool(graphs) and all(g.is_tree() for g in graphs)
    lines = [f"engine: {choice.title(spec, acyclic)}", f"  why: {choice.reason}"]
    if model is not None:
        lines += model.describe(data)
    return "\n".join(lines)


def compile_model(spec: ast.Spec, sentences: object, base_dir: Path | None = None,
                  settings: TrainSettings | None = None, source: str = "<train>"
                  ) -> tuple[Model, object]:
    """Compile ``spec`` against training ``sentences`` with the engine it
    needs; returns the model and the encoded training data."""
    return choose(spec).model.compile(spec, sentences, base_dir or Path("."), settings, source)
