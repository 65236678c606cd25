"""Every setting a spec can give, in one table.

A spec sets training in ``train { ... }``, inference in ``infer METHOD(...)``
and per template options in ``template ...: ... (sigma = s, support = all)``.
Each ``SettingDef`` of ``SETTINGS`` names its block and key, the validator the
checker (``fgl.lang.checks``) applies, the default, what reads it, and — for a
setting nothing implements yet — why the checker refuses it.  ``resolve_train``
and ``resolve_infer`` give the values in effect once, as typed settings
(``TrainSettings``, ``InferSettings``), and ``template_options`` a template's;
``settings_markdown`` renders the table as ``docs/settings.md``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

from fgl.errors import FglError
from fgl.lang import ast

INFER_METHODS = ("auto", "junction_tree", "exact", "loopy", "trp", "trw")
DEFAULT_INFER_METHOD = "auto"   # exact junction tree where its tables fit, TRW elsewhere
DEFAULT_MAX_TABLE = 1_000_000   # the largest clique table `infer junction_tree` may build
# ... and the largest `infer auto` builds rather than run BP: the junction tree's work is
# its clique tables, BP's a few passes over the factor tables, so past about this size
# (a factorial CRF over POS x chunk labels: cliques of 40·40·17 = 27200 entries against
# factors of 1600) BP is cheaper by an order of magnitude
AUTO_MAX_TABLE = 10_000
# train settings a caller may override
OVERRIDES = ("sigma", "max_iter", "tol", "jobs", "l1", "min_count")


# ---------------------------------------------------------------- validators

@dataclass(frozen=True)
class Rule:
    """A validator: ``rule(value)`` is None when the value is fine, else
    what was expected (``rule.expected``)."""
    expected: str
    accepts: Callable[[object], bool]

    def __call__(self, value: object) -> str | None:
        return None if self.accepts(value) else self.expected


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def whole_number(low: int) -> Rule:
    """A whole number >= ``low``."""
    return Rule("a whole number > 0" if low == 1 else f"a whole number >= {low}",
                lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low)


def _choice(*names: str) -> Rule:
    return Rule("one of: " + ", ".join(names), lambda v: isinstance(v, str) and v in names)


POSITIVE = Rule("a positive number", lambda v: _is_num(v) and v > 0)
NON_NEGATIVE = Rule("a number >= 0", lambda v: _is_num(v) and v >= 0)
DAMPING = Rule("a number d with 0 <= d < 1", lambda v: _is_num(v) and 0 <= v < 1)


# ---------------------------------------------------------------- the table

@dataclass(frozen=True)
class SettingDef:
    """One setting: ``key`` in ``block`` ("train", "infer auto", "infer
    junction_tree", "infer exact", "infer loopy", "infer trp", "infer trw" or
    "template")."""
    block: str
    key: str
    validator: Rule
    default: object | None          # None: no default (see ``meaning``)
    read_by: str                    # what reads it
    meaning: str                    # one line for the docs
    refusal: str | None = None      # why the checker refuses it (nothing implements it)


_LEARNER = "learner: {} (fgl.learn.learner)"
_ENGINE = "{} engine: {} (fgl.engines.graph.factor_graph_program)"
_COMPILERS = "compilers: {} (fgl.compile.sequence, fgl.compile.factor_graphs)"
_INDUCTION = "feature induction: {} (fgl.learn.induction)"

# what min_count counts (docs/settings.md; CRF++'s -f and CRFsuite's minfreq compared in
# docs/crfpp.md and docs/sklearn.md)
MIN_COUNT_MEANING = (
    "feature cut-off, as CRF++'s -f: an attribute of a template gets weights only when it "
    "occurs at least this often in the training data, counted before it is paired with "
    "labels — once per token (per gold segment in a segment model, per factor in a "
    "factor-graph model) where the template's observations give it, whatever its value and "
    "label; 1 keeps every attribute seen")

SETTINGS: tuple[SettingDef, ...] = (
    SettingDef("train", "sigma", POSITIVE, 10.0,
               _COMPILERS.format("prior sigma of every template without its own"),
               "Gaussian prior sigma of the weights (L2 regularisation)"),
    SettingDef("train", "max_iter", whole_number(1), 200,
               _LEARNER.format("L-BFGS iteration limit"), "the most L-BFGS iterations"),
    SettingDef("train", "tol", POSITIVE, 1e-5,
               _LEARNER.format("L-BFGS stopping tolerance"),
               "stop when the objective improves by less than this (relative) over 10 iterations"),
    SettingDef("train", "jobs", whole_number(0), 0,
               "API: worker threads for training and tagging (fgl.api)",
               "worker threads; 0 means one per core"),
    SettingDef("train", "objective", _choice("likelihood", "piecewise", "pseudo_likelihood"),
               "likelihood",
               "learner: what L-BFGS minimises (fgl.learn.learner, fgl.learn.local_objectives)",
               "likelihood (exact, or Bethe/BP for factor graphs); piecewise or "
               "pseudo_likelihood: local, convex objectives without inference, for factor-graph "
               "models (Sutton & McCallum §1.4.4)"),
    SettingDef("train", "bp_start", _choice("auto", "cold", "warm"), "auto",
               _LEARNER.format("where BP starts at each evaluation"),
               "factor graphs under BP: cold starts every evaluation from uniform messages, so "
               "the objective is a function of the weights; warm starts from the messages of the "
               "current iterate (fewer passes, but where BP has several fixed points the "
               "objective then depends on the path and line searches fail more often); auto: "
               "warm under tree-reweighted BP (`infer trw`, `auto`: one fixed point), cold under "
               "`loopy` and `trp`, cold on a Dask cluster"),
    SettingDef("train", "trainer", _choice("lbfgs", "sgd", "perceptron", "ecrn"), "lbfgs",
               "learner: the training method (fgl.learn.learner, fgl.learn.sgd, "
               "fgl.learn.perceptron, fgl.learn.crn)",
               "lbfgs: maximum likelihood (or the `objective`) by L-BFGS, OWL-QN when l1 > 0; "
               "sgd: the same L2-regularised likelihood by stochastic gradient descent, a step "
               "per run of `batch` instances (Bottou 2012; CRFsuite's l2sgd; reads sigma, "
               "epochs, batch, learning_rate, period and delta, refuses max_iter, tol and l1); "
               "perceptron: the averaged structured perceptron over the engine's MAP decoding "
               "(Collins 2002; reads epochs and batch, refuses sigma, max_iter, tol and l1); "
               "ecrn: the "
               "empirical co-occurrence rate network (Zhu et al., eq. 5), first-order chain "
               "models only — weights set in one pass to log relative frequencies p(y | a) and "
               "co-occurrence rates CR(y'; y | a), decoded by the chain Viterbi (reads no "
               "other train setting but jobs)"),
    SettingDef("train", "epochs", whole_number(1), 10,
               "learner: perceptron and SGD passes over the data (fgl.learn.perceptron, "
               "fgl.learn.sgd)",
               "trainers perceptron and sgd: the most passes over the training data (the "
               "perceptron stops earlier at an epoch without mistakes, sgd by `period` and "
               "`delta`)"),
    SettingDef("train", "batch", whole_number(1), 1,
               "learner: perceptron and SGD mini-batch (fgl.learn.perceptron, fgl.learn.sgd)",
               "trainers perceptron and sgd: consecutive instances that make one update (1: "
               "Collins' online perceptron, per-instance SGD); the order of these runs is "
               "shuffled every epoch"),
    SettingDef("train", "learning_rate", POSITIVE, None,
               "learner: SGD's initial rate (fgl.learn.sgd)",
               "trainer sgd: the rate η0 of the schedule η0 / (1 + λ η0 t) (t: instances seen, "
               "λ: the prior's 1/(N σ²)); absent, it is calibrated on a sample of 1000 "
               "instances (Bottou 2012 §5.2: rates a factor 2 apart from 0.1, the best kept)"),
    SettingDef("train", "period", whole_number(1), 10,
               "learner: SGD's stopping rule (fgl.learn.sgd)",
               "trainer sgd: stop when the best objective so far improved by less than "
               "`delta` (relative) over this many epochs (CRFsuite's l2sgd rule)"),
    SettingDef("train", "delta", NON_NEGATIVE, 1e-4,
               "learner: SGD's stopping rule (fgl.learn.sgd)",
               "trainer sgd: the least relative improvement of the objective over `period` "
               "epochs that keeps training (0: train all `epochs`)"),
    SettingDef("train", "induce_rounds", whole_number(1), 10,
               _INDUCTION.format("rounds"),
               "feature induction (a template with `induce`): the most rounds of scoring "
               "candidates, adding the best and retraining"),
    SettingDef("train", "induce_per_round", whole_number(1), 1000,
               _INDUCTION.format("features added per round"),
               "feature induction: the most features added in one round"),
    SettingDef("train", "induce_min_gain", NON_NEGATIVE, 5.0,
               _INDUCTION.format("gain threshold"),
               "feature induction: the least mean-field likelihood gain a feature needs to be "
               "added (McCallum 2003 eq. 2)"),
    SettingDef("train", "induce_iter", whole_number(1), 10,
               _INDUCTION.format("L-BFGS iterations per round"),
               "feature induction: L-BFGS iterations between rounds (then max_iter at the end)"),
    SettingDef("train", "induce_pool", whole_number(1), 1000,
               _INDUCTION.format("conjunction pool"),
               "feature induction: conjunctions are built among this many tests of highest "
               "gain (atomic or induced)"),
    SettingDef("train", "induce_transitions", Rule("0 or 1", lambda v: v in (0, 1)
                                                   and not isinstance(v, bool)), 0,
               _INDUCTION.format("copies on label pairs"),
               "feature induction: 1 also adds each induced feature on the label pairs the "
               "training data shows where its test holds (McCallum 2003 §3.2)"),
    SettingDef("train", "induce_margin", NON_NEGATIVE, 0.5,
               _INDUCTION.format("token margin"),
               "feature induction: gains are measured on the tokens whose gold label's "
               "probability is not ahead of every other by this much (0: mislabelled ones "
               "only)"),
    SettingDef("train", "l1", NON_NEGATIVE, 0.0,
               "learner: OWL-QN instead of L-BFGS when above 0 (fgl.learn.owlqn)",
               "L1 penalty c: the objective adds c·Σ|w| and many weights become exactly 0; "
               "with the Gaussian prior of sigma it is the elastic net (for L1 alone, a large "
               "sigma such as 1e6)"),
    SettingDef("train", "min_count", whole_number(1), 1,
               _COMPILERS.format("feature cut-off of every template without its own"),
               MIN_COUNT_MEANING),
    SettingDef("infer auto", "max_table", whole_number(1), AUTO_MAX_TABLE,
               _ENGINE.format("auto", "junction-tree size limit"),
               "per instance: the exact junction tree when its largest clique table has at most "
               "this many entries, tree-reweighted BP (`infer trw`, the settings below) "
               "otherwise"),
    # the trw rows below, for the instances auto leaves to tree-reweighted BP
    SettingDef("infer auto", "damping", DAMPING, 0.0,
               _ENGINE.format("auto", "message damping of TRW"),
               "TRW instances: keep this share of each old message (0: none; raised by itself "
               "when the residual stalls)"),
    SettingDef("infer auto", "max_iter", whole_number(1), 100,
               _ENGINE.format("auto", "iteration limit of TRW"),
               "TRW instances: the most sweeps over the variables"),
    SettingDef("infer auto", "tol", POSITIVE, 1e-5,
               _ENGINE.format("auto", "convergence tolerance of TRW"),
               "TRW instances: stop when no variable's belief moves by more than this in one "
               "sweep"),
    SettingDef("infer junction_tree", "max_table", whole_number(1), DEFAULT_MAX_TABLE,
               _ENGINE.format("junction-tree", "size limit"),
               "the largest clique table (entries) an instance may need; a larger one is an "
               "error (exact inference, Koller & Friedman 2009 ch. 10)"),
    SettingDef("infer exact", "max_states", whole_number(1), 1_000_000,
               _ENGINE.format("exact", "enumeration size limit"),
               "the most joint label assignments one instance may have"),
    SettingDef("infer loopy", "damping", DAMPING, 0.0,
               _ENGINE.format("loopy", "message damping"),
               "keep this share of each old message (0: none)"),
    # these rows and the TRP ones share a shape by design: a table row per block and key
    SettingDef("infer loopy", "max_iter", whole_number(1), 200,
               _ENGINE.format("loopy", "iteration limit"), "the most passes of the schedule"),
    SettingDef("infer loopy", "tol", POSITIVE, 1e-8,
               _ENGINE.format("loopy", "convergence tolerance"),
               "stop when no message changes by more than this in one pass"),
    SettingDef("infer loopy", "schedule", _choice("flooding"), None, "nothing (refused)",
               "the message schedule",
               refusal="only the flooding schedule exists for `infer loopy` (use `infer trp` "
                       "for tree schedules; residual BP is not implemented)"),
    # the shape of the loopy rows above, by design: a table row per block and key
    SettingDef("infer trp", "max_iter", whole_number(1), 200,
               _ENGINE.format("TRP", "iteration limit"), "the most passes over the trees"),
    SettingDef("infer trp", "tol", POSITIVE, 1e-8,
               _ENGINE.format("TRP", "convergence tolerance"),
               "stop when no message changes by more than this in one pass"),
    SettingDef("infer trp", "trees", whole_number(1), None,
               _ENGINE.format("TRP", "number of spanning trees"),
               "the most spanning trees of the TRP schedule (Sutton & McCallum §1.5.1); "
               "absent: as many as cover every edge"),
    # tree-reweighted BP (fgl.engines.graph.trw): the loopy rows' shape, plus its own knobs
    SettingDef("infer trw", "damping", DAMPING, 0.0,
               _ENGINE.format("TRW", "message damping (start)"),
               "keep this share of each old message (0: none); raised by itself when a window "
               "of sweeps does not bring the residual down"),
    SettingDef("infer trw", "max_iter", whole_number(1), 100,
               _ENGINE.format("TRW", "iteration limit"), "the most sweeps over the variables"),
    SettingDef("infer trw", "tol", POSITIVE, 1e-5,
               _ENGINE.format("TRW", "convergence tolerance"),
               "stop when no variable's belief moves by more than this in one sweep (the "
               "change of its log belief over the sweep, weighted by the belief); training "
               "starts at 100x this (at most 1e-3) and refines down to it as its steps shrink"),
    SettingDef("infer trw", "forests", whole_number(1), 10,
               _ENGINE.format("TRW", "forests of the cover"),
               "the fewest factor forests whose shares give the appearance probabilities ρ_f "
               "(more are made until every factor is in one; Wainwright et al. 2005)"),
    SettingDef("infer trw", "rho", Rule("a number r with 0 < r <= 1",
                                        lambda v: _is_num(v) and 0 < v <= 1), None,
               _ENGINE.format("TRW", "appearance probability override"),
               "one ρ for every factor of two or more variables instead of the cover's; the "
               "free energy stays convex when ρ·(most factors at one variable) <= 1, but only "
               "the cover's ρ make log Z an upper bound; absent: the cover's"),
    SettingDef("infer trw", "decode", _choice("max_product", "marginals"), "max_product",
               _ENGINE.format("TRW", "MAP decoder"),
               "max_product: reweighted max-product, each variable's max-belief argmax (exact "
               "back-tracking on trees; the marginals' when it does not converge); marginals: "
               "each variable's most probable value under the TRW marginals"),
    SettingDef("template", "sigma", POSITIVE, None,
               _COMPILERS.format("prior sigma of this template's weights"),
               "Gaussian prior sigma of this template's weights; absent: the train sigma"),
    SettingDef("template", "support", _choice("observed", "all"), None,
               _COMPILERS.format("which weights exist"),
               "weights for the (attribute, pattern) pairs seen in training, or for all; "
               "absent: observed for templates with observations (the engine decides)"),
    SettingDef("template", "min_count", whole_number(1), None,
               _COMPILERS.format("feature cut-off of this template"),
               "the cut-off for this template's attributes (see the train min_count); "
               "absent: the train min_count"),
    SettingDef("template", "induce", whole_number(1), None,
               _INDUCTION.format("the candidate tests"),
               "this unary template's attributes are candidate tests for feature induction "
               "(McCallum 2003), not features: training adds (test, label) features and "
               "conjunctions of up to this many tests by likelihood gain (the induce_* train "
               "settings)"),
)


def block_settings(block: str) -> dict[str, SettingDef]:
    """The settings of ``block``, by key, in table order."""
    return {s.key: s for s in SETTINGS if s.block == block}


def _defaults(block: str) -> dict[str, object]:
    return {k: s.default for k, s in block_settings(block).items() if s.default is not None}


# ---------------------------------------------------------------- values in effect

def check_override(key: str, value: object) -> None:
    """Raise ``FglError`` unless ``value`` is a valid override (from the
    command line or the API) of the train setting ``key``."""
    if key not in OVERRIDES:
        raise FglError(f"unknown train setting override '{key}'; expected one of: "
                       f"{', '.join(OVERRIDES)}")
    problem = block_settings("train")[key].validator(value)
    if problem:
        raise FglError(f"the {key} override must be {problem}; found {value!r}")


def _train_default(key: str):
    return block_settings("train")[key].default


@dataclass(frozen=True)
class InductionSettings:
    """The ``induce_*`` train settings (feature induction, McCallum 2003)."""

    rounds: int = _train_default("induce_rounds")
    per_round: int = _train_default("induce_per_round")
    min_gain: float = _train_default("induce_min_gain")
    iterations: int = _train_default("induce_iter")
    pool: int = _train_default("induce_pool")
    margin: float = _train_default("induce_margin")
    transitions: bool = bool(_train_default("induce_transitions"))


@dataclass(frozen=True)
class TrainSettings:
    """The train settings in effect, resolved once (``resolve_train``):
    every default, then the spec's ``train { ... }``, then the caller's
    overrides (``overridden`` names those)."""

    sigma: float
    max_iter: int
    tol: float
    jobs: int
    objective: str
    bp_start: str
    trainer: str
    epochs: int
    batch: int
    l1: float
    min_count: int
    induction: InductionSettings
    learning_rate: float | None = None
    period: int = _train_default("period")
    delta: float = _train_default("delta")
    overridden: frozenset[str] = frozenset()

    def value(self, key: str) -> object:
        """The value of the train setting ``key`` (as the spec names it)."""
        if key.startswith("induce_"):
            field = {"induce_iter": "iterations"}.get(key, key[len("induce_"):])
            return getattr(self.induction, field)
        return getattr(self, key)


def resolve_train(spec: ast.Spec, overrides: Mapping[str, object] | None = None
                  ) -> TrainSettings:
    """The train settings in effect: every default, then the spec's
    ``train { ... }`` values, then the non-None ``overrides`` (each checked
    with ``check_override``).  The perceptron's and SGD's passes are
    bounded by ``epochs``, or by a ``max_iter`` override (``--max-iter``)
    when given."""
    values = _defaults("train")
    values.update((s.key, s.value) for s in spec.train)
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    for key, value in given.items():
        check_override(key, value)
    values.update(given)
    if values["trainer"] in ("perceptron", "sgd") and "max_iter" in given:
        values["epochs"] = given["max_iter"]
    induction = InductionSettings(
        rounds=int(values["induce_rounds"]), per_round=int(values["induce_per_round"]),
        min_gain=float(values["induce_min_gain"]), iterations=int(values["induce_iter"]),
        pool=int(values["induce_pool"]), margin=float(values["induce_margin"]),
        transitions=bool(values["induce_transitions"]))
    return TrainSettings(
        sigma=float(values["sigma"]), max_iter=int(values["max_iter"]), tol=float(values["tol"]),
        jobs=int(values["jobs"]), objective=str(values["objective"]),
        bp_start=str(values["bp_start"]), trainer=str(values["trainer"]),
        epochs=int(values["epochs"]), batch=int(values["batch"]), l1=float(values["l1"]),
        min_count=int(values["min_count"]), induction=induction,
        learning_rate=None if "learning_rate" not in values else float(values["learning_rate"]),
        period=int(values["period"]), delta=float(values["delta"]),
        overridden=frozenset(given))


@dataclass(frozen=True)
class InferSettings:
    """The inference method and its settings in effect (``resolve_infer``);
    a setting the method does not have is None."""

    method: str
    max_iter: int | None = None
    tol: float | None = None
    damping: float | None = None
    trees: int | None = None       # TRP: the most spanning trees (None: as many as cover)
    forests: int | None = None     # TRW: the fewest forests of the cover
    rho: float | None = None       # TRW: one appearance probability (None: the cover's)
    decode: str | None = None      # TRW: the MAP decoder
    max_table: int | None = None   # auto, junction_tree: the largest clique table
    max_states: int | None = None  # exact: the most joint assignments

    def items(self) -> list[tuple[str, object]]:
        """The method's settings in effect, in the order of the table."""
        return [(k, getattr(self, k)) for k in block_settings(f"infer {self.method}")
                if getattr(self, k, None) is not None]


def resolve_infer(spec: ast.Spec) -> InferSettings:
    """The inference method (default ``auto``: the exact junction tree for
    each instance whose clique tables fit ``max_table``, tree-reweighted BP
    for the others) and its settings in effect: the defaults, then the spec's
    values.  TRP's ``trees`` has no default: absent means as many trees as
    it takes to cover every edge."""
    method = spec.infer_method[0] if spec.infer_method else DEFAULT_INFER_METHOD
    values = _defaults(f"infer {method}")
    values.update((s.key, s.value) for s in spec.infer)
    return InferSettings(method, **values)


@dataclass(frozen=True)
class TemplateOptions:
    """A template's options in effect (``template_options``)."""

    sigma: float
    min_count: int
    support: str | None = None   # None: the engine decides (observed, or all)
    induce: int | None = None    # feature induction's conjunction size, if marked


def template_options(tpl: ast.Template, sigma: float, min_count: int = 1) -> TemplateOptions:
    """A template's options in effect: its ``sigma`` and ``min_count``
    (default: the train settings') and ``support`` only when given (its
    default depends on the engine, so the compilers choose it)."""
    given = {s.key: s.value for s in tpl.options}
    return TemplateOptions(float(given.get("sigma", sigma)), int(given.get("min_count", min_count)),
                           given.get("support"), given.get("induce"))


# ---------------------------------------------------------------- docs

def settings_markdown() -> str:
    """The table as Markdown: the text of ``docs/settings.md``."""
    rows = ["# Settings", "",
            "Every setting a spec can give, generated from `fgl/lang/settings.py` by",
            "`settings_markdown()`. Settings read by nothing are refused by the checker.", "",
            "| block | key | type / range | default | read by | meaning |",
            "|---|---|---|---|---|---|"]
    for s in SETTINGS:
        default = "—" if s.default is None else str(s.default)
        read_by = f"{s.read_by}: {s.refusal}" if s.refusal else s.read_by
        rows.append(f"| {s.block} | `{s.key}` | {s.validator.expected} | {default} | {read_by} "
                    f"| {s.meaning} |")
    return "\n".join(rows) + "\n"
