"""Each trainer's options: one frozen dataclass per trainer, one field per
train setting it reads, with its default, validator and meaning (in the
manner of CRFsuite's ``exchange_options``: name, default, help).

Data only, so the language (``fgl.lang.settings``) reads it without
loading a learner: the `trainer` choices, the train rows of the settings
table, ``TrainSettings``' defaults, ``fgl train --help`` and
``docs/settings.md`` derive from these classes.  A trainer
(``fgl.learn.trainers``) names its class in ``Trainer.options``; a new
named trainer registers its class with ``register_trainer_options``
(``fgl.learn.trainers.register_trainer`` does).
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from fgl.setting_rows import NON_NEGATIVE, POSITIVE, Rule, SettingDef, choice, whole_number


def option(default: Any, rule: Rule, meaning: str) -> Any:
    """A field of an options class: its default (None: none, see the
    meaning), the rule a value must pass and one line for the docs."""
    return field(default=default, metadata={"rule": rule, "meaning": meaning})


# options several trainers read, declared alike in each (fresh fields per class)

def _epochs() -> Any:
    return option(10, whole_number(1),
                  "trainers perceptron and sgd: the most passes over the training data (the "
                  "perceptron stops earlier at an epoch without mistakes, sgd by `period` and "
                  "`delta`)")


def _batch() -> Any:
    return option(1, whole_number(1),
                  "trainers perceptron and sgd: consecutive instances that make one update (1: "
                  "Collins' online perceptron, per-instance SGD); the order of these runs is "
                  "shuffled every epoch")


def _sigma() -> Any:
    return option(10.0, POSITIVE, "Gaussian prior sigma of the weights (L2 regularisation); "
                                  "the prior of every template without its own `sigma`")


def _max_iter() -> Any:
    return option(1000, whole_number(1), "the most L-BFGS iterations (a run stopped there, "
                                         "unconverged, warns)")


def _start() -> Any:
    return option("auto", choice("auto", "zero", "exact_part"),
                  "where the weights start: exact_part trains the spec without its templates "
                  "that link positions (skip and pair templates, graph edges) by its exact "
                  "engine first and starts from its weights (the linking ones at zero); zero "
                  "starts every weight at zero; auto: exact_part where the spec needs a factor "
                  "graph and has such a part, zero otherwise")


def _tol() -> Any:
    return option(1e-5, POSITIVE, "stop when the objective improves by less than this "
                                  "(relative) over 10 iterations")


@dataclass(frozen=True)
class LBFGSOptions:
    """lbfgs: maximum likelihood (or the `objective`) by L-BFGS, OWL-QN when l1 > 0."""

    NAME: ClassVar[str] = "lbfgs"   # `trainer = lbfgs`

    sigma: float = _sigma()
    max_iter: int = _max_iter()
    tol: float = _tol()
    objective: str = option(
        "likelihood", choice("likelihood", "piecewise", "pseudo_likelihood"),
        "likelihood (exact, or Bethe/BP for factor graphs); piecewise or pseudo_likelihood: "
        "local, convex objectives without inference, for factor-graph models (Sutton & "
        "McCallum §1.4.4)")
    bp_start: str = option(
        "auto", choice("auto", "cold", "warm"),
        "factor graphs under BP: cold starts every evaluation from uniform messages, so the "
        "objective is a function of the weights; warm starts from the messages of the current "
        "iterate (fewer passes, but where BP has several fixed points the objective then "
        "depends on the path and line searches fail more often); auto: warm under "
        "tree-reweighted BP (`infer trw`, `auto`: one fixed point), cold under `loopy` and "
        "`trp`, cold on a Dask cluster")
    l1: float = option(
        0.0, NON_NEGATIVE,
        "L1 penalty c: OWL-QN instead of L-BFGS when above 0; the objective adds c·Σ|w| and "
        "many weights become exactly 0; with the Gaussian prior of sigma it is the elastic "
        "net (for L1 alone, a large sigma such as 1e6)")
    start: str = _start()
    memory: int | None = option(
        None, Rule("a whole number from 1 to 64", lambda v: isinstance(v, int)
                   and not isinstance(v, bool) and 1 <= v <= 64),
        "L-BFGS and OWL-QN: the correction pairs kept (CRFsuite's num_memories); absent: 6 "
        "(CRFsuite's) for chain and semi-Markov specs, 24 for specs on the factor-graph "
        "engine (loopy, skip and relational models) and their exact part, where an "
        "evaluation costs many times the optimiser's step and fewer of them pay")
    BOUNDS: ClassVar[dict[str, str]] = {}   # override -> the option it bounds instead


@dataclass(frozen=True)
class SGDOptions:
    """sgd: the L2-regularised likelihood by stochastic gradient descent."""

    NAME: ClassVar[str] = "sgd"   # `trainer = sgd`

    sigma: float = _sigma()
    epochs: int = _epochs()
    batch: int = _batch()
    learning_rate: float | None = option(
        None, POSITIVE,
        "trainer sgd: the rate η0 of the schedule η0 / (1 + λ η0 t) (t: instances seen, λ: the "
        "prior's 1/(N σ²)); absent, it is calibrated on a sample of 1000 instances (Bottou "
        "2012 §5.2: rates a factor 2 apart from 0.1, the best kept)")
    period: int = option(10, whole_number(1),
                         "trainer sgd: stop when the best objective so far improved by less "
                         "than `delta` (relative) over this many epochs (CRFsuite's l2sgd rule)")
    delta: float = option(1e-4, NON_NEGATIVE,
                          "trainer sgd: the least relative improvement of the objective over "
                          "`period` epochs that keeps training (0: train all `epochs`)")
    start: str = _start()
    BOUNDS: ClassVar[dict[str, str]] = {"max_iter": "epochs"}   # --max-iter bounds its epochs


@dataclass(frozen=True)
class PerceptronOptions:
    """perceptron: the averaged structured perceptron (Collins 2002)."""

    NAME: ClassVar[str] = "perceptron"   # `trainer = perceptron`

    epochs: int = _epochs()
    batch: int = _batch()
    BOUNDS: ClassVar[dict[str, str]] = {"max_iter": "epochs"}   # --max-iter bounds its epochs


@dataclass(frozen=True)
class ECRNOptions:
    """ecrn: the empirical co-occurrence rate network (Zhu et al., eq. 5): reads nothing."""

    NAME: ClassVar[str] = "ecrn"   # `trainer = ecrn`

    BOUNDS: ClassVar[dict[str, str]] = {}


@dataclass(frozen=True)
class InductionOptions:
    """Feature induction (McCallum 2003), chosen by a template marked ``induce``."""

    sigma: float = _sigma()
    max_iter: int = _max_iter()
    tol: float = _tol()
    induce_rounds: int = option(10, whole_number(1),
                                "feature induction (a template with `induce`): the most rounds "
                                "of scoring candidates, adding the best and retraining")
    induce_per_round: int = option(1000, whole_number(1),
                                   "feature induction: the most features added in one round")
    induce_min_gain: float = option(5.0, NON_NEGATIVE,
                                    "feature induction: the least mean-field likelihood gain a "
                                    "feature needs to be added (McCallum 2003 eq. 2)")
    induce_iter: int = option(10, whole_number(1),
                              "feature induction: L-BFGS iterations between rounds (then "
                              "max_iter at the end)")
    induce_pool: int = option(1000, whole_number(1),
                              "feature induction: conjunctions are built among this many tests "
                              "of highest gain (atomic or induced)")
    induce_transitions: int = option(0, Rule("0 or 1", lambda v: v in (0, 1)
                                             and not isinstance(v, bool)),
                                     "feature induction: 1 also adds each induced feature on "
                                     "the label pairs the training data shows where its test "
                                     "holds (McCallum 2003 §3.2)")
    induce_margin: float = option(0.5, NON_NEGATIVE,
                                  "feature induction: gains are measured on the tokens whose "
                                  "gold label's probability is not ahead of every other by "
                                  "this much (0: mislabelled ones only)")
    BOUNDS: ClassVar[dict[str, str]] = {}


# `trainer = NAME` -> its options (the first is the default trainer)
_NAMED: dict[str, type] = {o.NAME: o for o in (LBFGSOptions, SGDOptions, PerceptronOptions,
                                                ECRNOptions)}
# options of trainers chosen by the spec's shape rather than by name
_CHOSEN_BY_SHAPE: dict[str, type] = {"feature induction": InductionOptions}
DEFAULT_TRAINER = LBFGSOptions.NAME


def register_trainer_options(name: str, options: type) -> None:
    """Make ``trainer = name`` valid, reading the fields of ``options``
    (a frozen dataclass of ``option`` fields, with ``BOUNDS``)."""
    if not name.isidentifier() or name in _NAMED:
        raise ValueError(f"trainer name {name!r} is taken or not a word")
    _NAMED[name] = options


def unregister_trainer_options(name: str) -> None:
    """Take a name ``register_trainer_options`` added back out."""
    if name == DEFAULT_TRAINER:
        raise ValueError("the default trainer stays")
    _NAMED.pop(name, None)


def trainer_names() -> tuple[str, ...]:
    """The values `trainer = NAME` accepts."""
    return tuple(_NAMED)


def named_options(name: str) -> type:
    """The options class of the trainer `trainer = name` names."""
    return _NAMED[name]


def _declared(f: Any) -> tuple:
    return f.default, f.metadata["rule"].expected, f.metadata["meaning"]


def option_rows() -> list[SettingDef]:
    """One train row per option, in declaration order; an option several
    trainers read is declared alike in each (same default, rule and
    meaning), and its row names them all."""
    readers: dict[str, list[str]] = {}
    first: dict[str, Any] = {}
    for name, options in {**_NAMED, **_CHOSEN_BY_SHAPE}.items():
        for f in fields(options):
            if f.name in first and _declared(first[f.name]) != _declared(f):
                raise ValueError(f"option {f.name} of {name} differs from the same option of "
                                 f"{readers[f.name][0]}")
            first.setdefault(f.name, f)
            readers.setdefault(f.name, []).append(name)
    return [SettingDef("train", key, f.metadata["rule"],
                       None if f.default is MISSING else f.default,
                       "trainers: " + ", ".join(readers[key]), f.metadata["meaning"])
            for key, f in first.items()]
