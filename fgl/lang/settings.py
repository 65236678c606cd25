"""Every setting a spec can give, in one table.

A spec sets training in ``train { ... }``, inference in ``infer METHOD(...)``
and per template options in ``template ...: ... (sigma = s, support = all)``.
Each ``SettingDef`` of ``all_settings()`` names its block and key, the
validator the checker (``fgl.lang.checks``) applies, the default, what reads
it, and — for a setting nothing implements yet — why the checker refuses
it.  The rows live beside what reads them: the train rows every trainer
reads here, each trainer's options in ``fgl.learn.trainer_options``, each
inference method's in its module of ``fgl.engines.graph.inference``, the
template options here; the overridable ones in ``fgl.lang.overrides``.
``resolve_train`` and ``resolve_infer`` give the values in effect once, as
typed settings (``TrainSettings``, ``InferSettings``), and
``template_options`` a template's; ``settings_markdown`` renders the table
as ``docs/settings.md``.
"""
from __future__ import annotations

from dataclasses import Field, dataclass, fields
from typing import Any, Mapping

from fgl.engines.graph.inference import DEFAULT_METHOD, inference_methods, method_names
from fgl.errors import FglError
from fgl.lang import ast
from fgl.lang.overrides import OVERRIDES
from fgl.learn.trainer_options import DEFAULT_TRAINER, named_options, option_rows, trainer_names
from fgl.setting_rows import POSITIVE, SettingDef, choice, whole_number

__all__ = ["SettingDef", "whole_number"]   # (the rows' types, for the checks and tests)


# ---------------------------------------------------------------- the table

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


def _train_rows() -> list[SettingDef]:
    """Each trainer's options (``fgl.learn.trainer_options``), then the
    train rows every trainer reads."""
    names = trainer_names()
    return [
        *option_rows(),
        SettingDef("train", "jobs", whole_number(0), 0,
                   "API: worker threads for training and tagging (fgl.api)",
                   "worker threads; 0 means one per core"),
        SettingDef("train", "trainer", choice(*names), DEFAULT_TRAINER,
                   "learner: the training method (fgl.learn.trainers)",
                   "the trainer: " + ", ".join(names) + " (the trainers table below says "
                   "what each is and reads)"),
        SettingDef("train", "min_count", whole_number(1), 1,
                   _COMPILERS.format("feature cut-off of every template without its own"),
                   MIN_COUNT_MEANING)]


TEMPLATE_SETTINGS: tuple[SettingDef, ...] = (
    SettingDef("template", "sigma", POSITIVE, None,
               _COMPILERS.format("prior sigma of this template's weights"),
               "Gaussian prior sigma of this template's weights; absent: the train sigma"),
    SettingDef("template", "support", choice("observed", "all"), None,
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


def all_settings() -> tuple[SettingDef, ...]:
    """Every setting a spec can give: the train rows (each trainer's
    options), each inference method's (``fgl.engines.graph.inference``)
    and the template options — read when asked, so a registered trainer or
    inference method is in it."""
    infer = [row for method in inference_methods() for row in method.settings]
    return (*_train_rows(), *infer, *TEMPLATE_SETTINGS)


def infer_methods() -> tuple[str, ...]:
    """The methods `infer NAME` accepts."""
    return method_names()


def block_settings(block: str) -> dict[str, SettingDef]:
    """The settings of ``block``, by key, in table order."""
    return {s.key: s for s in all_settings() if s.block == block}


def _defaults(block: str) -> dict[str, object]:
    return {k: s.default for k, s in block_settings(block).items() if s.default is not None}


# ---------------------------------------------------------------- values in effect

@dataclass(frozen=True)
class Overrides:
    """The caller's overrides of train settings (``fgl.lang.overrides``),
    checked once, here: ``(key, value)`` pairs in ``OVERRIDES`` order."""

    given: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, values: Mapping[str, object] | None = None, **keywords: object) -> Overrides:
        """The overrides ``values`` and ``keywords`` give (None: not
        given); ``FglError`` for an unknown setting or a bad value."""
        given = {**(values or {}), **keywords}
        unknown = [k for k in given if k not in OVERRIDES]
        if unknown:
            raise FglError(f"unknown train setting override '{unknown[0]}'; expected one of: "
                           f"{', '.join(OVERRIDES)}")
        rows = block_settings("train")
        for key, value in given.items():
            problem = rows[key].validator(value) if value is not None else None
            if problem:
                raise FglError(f"the {key} override must be {problem}; found {value!r}")
        return cls(tuple((k, given[k]) for k in OVERRIDES if given.get(k) is not None))

    def as_dict(self) -> dict[str, object]:
        """The overrides given, by key."""
        return dict(self.given)


@dataclass(frozen=True)
class TrainSettings:
    """The train settings in effect, resolved once (``resolve_train``):
    every row's default, then the spec's ``train { ... }``, then the
    caller's overrides (``overridden`` names those).  ``values`` holds
    every train setting by key, a registered trainer's options too; a
    trainer reads its own through ``options`` (its options class,
    ``fgl.learn.trainer_options``), the rest of fgl the settings every
    run has whatever its trainer: ``trainer``, ``jobs``, ``min_count`` and
    ``sigma`` (the prior of every template without its own, which the
    compilers read), or any by ``value(key)``."""

    values: tuple[tuple[str, object], ...]
    overridden: frozenset[str] = frozenset()

    def value(self, key: str) -> object:
        """The value of the train setting ``key`` (as the spec names it)."""
        return dict(self.values)[key]

    @property
    def trainer(self) -> str:
        """The `trainer` setting: the name of the trainer the spec asks for."""
        return str(self.value("trainer"))

    @property
    def jobs(self) -> int:
        """Worker threads; 0: one per core."""
        return int(self.value("jobs"))

    @property
    def min_count(self) -> int:
        """The feature cut-off of every template without its own."""
        return int(self.value("min_count"))

    @property
    def sigma(self) -> float:
        """The Gaussian prior's sigma of every template without its own."""
        return float(self.value("sigma"))

    def options(self, cls: type | None = None) -> Any:
        """The options object of ``cls`` (default: the class of the trainer
        ``trainer`` names, ``fgl.learn.trainer_options``) with the values in
        effect; a whole number given for a real-valued option becomes a
        float."""
        cls = cls or named_options(self.trainer)
        found = dict(self.values)
        return cls(**{f.name: _typed(f, found.get(f.name)) for f in fields(cls)})


def _typed(f: Field, value: object) -> object:
    """``value`` as the option ``f`` holds it: a float where it is declared
    one (a spec's ``sigma = 3`` reads as the int 3)."""
    real = "float" in str(f.type)
    return float(value) if real and type(value) is int else value


def resolve_train(spec: ast.Spec, overrides: Overrides | Mapping[str, object] | None = None
                  ) -> TrainSettings:
    """The train settings in effect: every default, then the spec's
    ``train { ... }`` values, then the ``overrides`` (a mapping is checked
    as ``Overrides.of`` checks it).  An override a trainer's options
    ``BOUNDS`` maps (sgd's and the perceptron's ``max_iter``) sets that
    option instead (their ``epochs``)."""
    if not isinstance(overrides, Overrides):
        overrides = Overrides.of(overrides)
    values = _defaults("train")
    values.update((s.key, s.value) for s in spec.train)
    given = overrides.as_dict()
    values.update(given)
    trainer = str(values["trainer"])
    bounds = named_options(trainer).BOUNDS if trainer in trainer_names() else {}
    values.update((bounds[k], v) for k, v in given.items() if k in bounds)
    return TrainSettings(tuple(values.items()), frozenset(given))


class InferSettings:
    """The inference method and its settings in effect (``resolve_infer``):
    ``settings.KEY`` is the value of the method's setting KEY, None for a
    setting of another method (``fgl.engines.graph.inference``).  Every key
    is a plain attribute: the engine reads them per instance."""

    def __init__(self, method: str, **values: object):
        known = dict.fromkeys(s.key for m in inference_methods() for s in m.settings)
        self.__dict__.update(known, **values, method=method, _given=tuple(values))

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("InferSettings are frozen")

    def replace(self, **changes: object) -> InferSettings:
        """These settings with ``changes`` (as ``dataclasses.replace``)."""
        return InferSettings(self.method, **{**self.values, **changes})

    @property
    def values(self) -> dict[str, object]:
        """The settings given or defaulted, by key."""
        return {k: self.__dict__[k] for k in self._given}

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, InferSettings) and self.method == other.method
                and self.values == other.values)

    def __hash__(self) -> int:
        return hash((self.method, tuple(sorted(self.values.items()))))

    def __repr__(self) -> str:
        return f"InferSettings({self.method!r}, {self.values!r})"

    def __reduce__(self) -> tuple:
        return _infer_settings, (self.method, self.values)

    def items(self) -> list[tuple[str, object]]:
        """The method's settings in effect, in the order of the table."""
        values = self.values
        return [(k, values[k]) for k in block_settings(f"infer {self.method}")
                if values.get(k) is not None]


def _infer_settings(method: str, values: dict) -> InferSettings:
    return InferSettings(method, **values)


def resolve_infer(spec: ast.Spec) -> InferSettings:
    """The inference method (default ``auto``: the exact junction tree for
    each instance whose clique tables fit ``max_table``, tree-reweighted BP
    for the others) and its settings in effect: the defaults, then the spec's
    values.  TRP's ``trees`` has no default: absent means as many trees as
    it takes to cover every edge."""
    method = spec.infer_method[0] if spec.infer_method else DEFAULT_METHOD
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
            "Every setting a spec can give, generated from the tables (`fgl/lang/settings.py`, "
            "`fgl/learn/trainer_options.py`, `fgl/engines/graph/inference/`) by "
            "`python -m fgl.learn.trainers > docs/settings.md`; a test keeps this page in step. "
            "Settings read by nothing are refused by the checker.", "",
            "| block | key | type / range | default | read by | meaning |",
            "|---|---|---|---|---|---|"]
    for s in all_settings():
        default = "—" if s.default is None else str(s.default)
        read_by = f"{s.read_by}: {s.refusal}" if s.refusal else s.read_by
        rows.append(f"| {s.block} | `{s.key}` | {s.validator.expected} | {default} | {read_by} "
                    f"| {s.meaning} |")
    return "\n".join(rows) + "\n"
