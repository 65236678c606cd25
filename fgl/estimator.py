"""``fgl.CRFEstimator``: fgl's CRF under scikit-learn's estimator contract.

``fgl.CRF`` reads and checks its spec when it is made; scikit-learn wants a
constructor that only stores its parameters (so ``clone``, ``set_params``
and ``GridSearchCV`` can make fresh copies), checks in ``fit`` and keeps
what training learns in attributes ending in ``_``.  ``CRFEstimator`` is
that face: ``fit`` builds and trains an ``fgl.CRF`` (``crf_``).

It needs no scikit-learn: ``get_params``/``set_params`` are written here
after scikit-learn's rules (the parameters are the constructor's
arguments), and ``__sklearn_tags__`` imports scikit-learn only when
scikit-learn itself asks.  With ``spec=None`` it reads sklearn-crfsuite's
input — per token a dict of features — and trains the model
sklearn-crfsuite trains on it (``fgl.io.feature_dicts``); with a spec, ``X``
holds rows of the spec's input columns, as ``fgl.CRF`` takes.

sklearn-crfsuite's parameters map exactly onto fgl's objective.  CRFsuite
minimises ``-Σ_i log p(y_i | x_i) + c1·Σ|w| + c2·Σw²`` over the *sum* of the
training sequences' log-likelihoods; fgl minimises the same sum plus
``l1·Σ|w| + Σw² / (2σ²)`` (``fgl.learn.learner``), so ``l1 = c1`` and
``σ = 1 / sqrt(2·c2)`` (``c2 = 0``: no L2 term, a σ of ``NO_L2_SIGMA``).
``min_freq`` becomes fgl's ``min_count`` (``docs/sklearn.md`` says how the
two cut-offs count).
"""
from __future__ import annotations

import inspect
import math
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from fgl.errors import FglError
from fgl.io.dict_tokens import collector_paused
from fgl.io.feature_dicts import LABEL, MODEL_NAME, FeatureDictSpec
from fgl.lang import ast
from fgl.lang.overrides import OVERRIDE_DEFS

METRICS = ("token_accuracy", "sequence_accuracy", "f1")
# the sigma standing for c2 = 0 (no L2 term): its 1/σ² = 1e-300 adds less than one part in
# 1e290 to any objective, below double precision
NO_L2_SIGMA = 1e150


def crfsuite_regularisation(c1: float | None, c2: float | None
                            ) -> tuple[float | None, float | None]:
    """(l1, sigma) of CRFsuite's ``c1`` and ``c2`` (None: not given):
    ``l1 = c1``, ``sigma = 1 / sqrt(2 c2)`` (``NO_L2_SIGMA`` for ``c2 = 0``)."""
    for name, value in (("c1", c1), ("c2", c2)):
        if value is not None and not (isinstance(value, (int, float, np.integer, np.floating))
                                      and not isinstance(value, bool)
                                      and math.isfinite(value) and value >= 0):
            raise FglError(f"{name} must be a number >= 0 (CRFsuite's {name}); found {value!r}")
    sigma = None if c2 is None else (1.0 / math.sqrt(2.0 * float(c2)) if c2 > 0 else NO_L2_SIGMA)
    return (None if c1 is None else float(c1)), sigma


def min_count_of(min_freq: float | None) -> int | None:
    """fgl's ``min_count`` for sklearn-crfsuite's ``min_freq`` (a feature is
    kept when its count reaches ``min_freq``, so whole counts from
    ``ceil(min_freq)``; 0 keeps everything)."""
    if min_freq is None:
        return None
    if not (isinstance(min_freq, (int, float, np.integer, np.floating))
            and not isinstance(min_freq, bool) and math.isfinite(min_freq) and min_freq >= 0):
        raise FglError(f"min_freq must be a number >= 0 (CRFsuite's feature.minfreq); found "
                       f"{min_freq!r}")
    return max(1, math.ceil(min_freq))


class NotFittedError(FglError, ValueError, AttributeError):
    """The estimator is used before ``fit`` (an ``AttributeError`` and a
    ``ValueError``, as scikit-learn's own ``NotFittedError``, which the
    error raised also is when scikit-learn is installed)."""


def _not_fitted(message: str) -> NotFittedError:
    try:
        from sklearn.exceptions import NotFittedError as SklearnNotFitted
    except ImportError:
        return NotFittedError(message)
    both = type("NotFittedError", (NotFittedError, SklearnNotFitted),
                {"__module__": __name__, "__doc__": NotFittedError.__doc__})
    return both(message)


class CRFEstimator:
    """A CRF with scikit-learn's estimator contract.

    Parameters
    ----------
    spec:
        The model: a path to a ``.fgl`` file, the spec text, or a parsed
        ``Spec`` (anything ``fgl.CRF`` takes); ``None`` (default) for
        sklearn-crfsuite's input, a dict of features per token, with the
        model sklearn-crfsuite trains on it: state features over the
        attributes, first-order transitions (``docs/sklearn.md``).
    sigma, max_iter, tol, l1, jobs, verbose, time_limit:
        As for ``fgl.CRF`` (None: the spec's ``train`` settings, else fgl's
        defaults).
    c1, c2:
        sklearn-crfsuite's names of the penalties: ``c1`` is ``l1``, ``c2``
        is ``1 / (2 sigma^2)`` (both objectives sum the log-likelihoods;
        ``c2 = 0``: no L2 term).  Give ``c2`` or ``sigma``, ``c1`` or ``l1``.
    min_freq:
        sklearn-crfsuite's feature cut-off, fgl's ``min_count``:
        ``ceil(min_freq)`` (at least 1), counted as ``docs/sklearn.md`` says.
    all_possible_states, all_possible_transitions:
        sklearn-crfsuite's options of the same names, for ``spec=None``:
        a weight for every (attribute, label) pair / every label pair, not
        only those seen in training.
    """

    def __init__(self, spec: str | Path | ast.Spec | None = None, *, sigma: float | None = None,
                 max_iter: int | None = None, tol: float | None = None, l1: float | None = None,
                 c1: float | None = None, c2: float | None = None,
                 min_freq: float | None = None, jobs: int | None = None,
                 verbose: bool = False, time_limit: float | None = None,
                 all_possible_states: bool = False, all_possible_transitions: bool = False):
        self.spec = spec
        self.sigma = sigma
        self.max_iter = max_iter
        self.tol = tol
        self.l1 = l1
        self.c1 = c1
        self.c2 = c2
        self.min_freq = min_freq
        self.jobs = jobs
        self.verbose = verbose
        self.time_limit = time_limit
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions

    # ------------------------------------------------------------ parameters

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters and their values (``deep`` is
        accepted for scikit-learn; no parameter is an estimator)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "CRFEstimator":
        """Set parameters by name; checked at the next ``fit``."""
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters: {', '.join(names)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        given = [f"{k}={_short(v)}" for k, v in self.get_params().items()
                 if not _same(v, defaults[k])]
        return f"{type(self).__name__}({', '.join(given)})"

    def __sklearn_tags__(self):
        """scikit-learn's tags (called by scikit-learn only): a supervised
        estimator whose X is not a 2-D array, and not a classifier, so
        cross-validation splits sequences with plain ``KFold``."""
        from sklearn.utils import InputTags, Tags, TargetTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=True),
                    input_tags=InputTags(two_d_array=False, dict=True, string=True))

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "crf_")

    def __getstate__(self) -> dict:
        """Pickling (``joblib.dump``): the trained CRF travels as its model
        file's bytes (``fgl.CRF.save``)."""
        state = dict(self.__dict__)
        if "crf_" in state:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "model.fglm"
                state["crf_"].save(path)
                state["crf_"] = path.read_bytes()
            state.pop("coef_")            # (the model file's weights)
        return state

    def __setstate__(self, state: dict) -> None:
        from fgl.api import CRF
        if isinstance(state.get("crf_"), bytes):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "model.fglm"
                path.write_bytes(state["crf_"])
                crf = CRF.load(path, jobs=state.get("jobs"))
            crf.verbose, crf.training_log = bool(state.get("verbose")), state.get("training_log_")
            state["crf_"], state["coef_"] = crf, crf.weights
        self.__dict__.update(state)

    # ------------------------------------------------------------ training

    FITTED = ("crf_", "feature_dicts_", "classes_", "coef_", "training_log_", "dev_score_")

    def fit(self, X: Sequence[Sequence[Any]], y: Sequence[Sequence[Any]],
            X_dev: Sequence[Sequence[Any]] | None = None,
            y_dev: Sequence[Sequence[Any]] | None = None) -> "CRFEstimator":
        """Check the parameters, build the model and train it on sequences
        ``X`` (feature dicts per token with ``spec=None``, else rows of the
        spec's input columns) and label sequences ``y``.  ``X_dev``,
        ``y_dev`` (sklearn-crfsuite's): development data, scored after
        training — ``dev_score_``, token accuracy in 0-1, printed with
        ``verbose``."""
        from fgl.api import CRF
        X, y = list(X), list(y)
        if (X_dev is None) != (y_dev is None):
            raise FglError("give X_dev and y_dev together (development sequences and their "
                           "labels), or neither")
        overrides = self._check_params()
        for name in self.FITTED:
            self.__dict__.pop(name, None)
        dicts = prepared = None
        if self.spec is None:   # the dicts read once, into the attributes' arrays
            with collector_paused():
                dicts, prepared = FeatureDictSpec.for_training(
                    X, y, all_possible_states=bool(self.all_possible_states),
                    all_possible_transitions=bool(self.all_possible_transitions))
        crf = CRF(self.spec if dicts is None else dicts.text + labels_statement(y),
                  verbose=bool(self.verbose), time_limit=self.time_limit, **overrides)
        if dicts is None:
            crf.fit(_plain_rows(X), y)
        else:   # prepared sentences: the attributes go straight to the compiler
            crf.fit_sentences(prepared)
        crf.feature_dicts = dicts
        self.adopt(crf)
        if X_dev is not None:
            self.dev_score_ = self.score(X_dev, y_dev)
            if self.verbose:
                import sys
                print(f"development data: token accuracy {self.dev_score_:.4f}",
                      file=sys.stderr)
        return self

    def adopt(self, crf) -> None:
        """Take the trained ``fgl.CRF`` ``crf`` as this estimator's model, with
        what it learnt (the fitted attributes)."""
        self.crf_ = crf
        if crf.feature_dicts is not None:
            self.feature_dicts_ = crf.feature_dicts
        labels = {layer.name: list(layer.labels) for layer in crf.model.layers
                  if not layer.hidden}
        self.classes_ = next(iter(labels.values())) if len(labels) == 1 else labels
        self.coef_ = crf.weights
        self.training_log_ = crf.training_log

    # ------------------------------------------------------------ model files

    def save(self, path: str | Path) -> None:
        """Write the trained model as an fgl model file (``fgl.CRF.save``):
        with feature dicts, the file keeps the attributes' names, so
        ``load``, ``fgl.CRF.load`` and ``fgl inspect`` show them."""
        self._fitted().save(path)

    @classmethod
    def load(cls, path: str | Path, jobs: int | None = None) -> "CRFEstimator":
        """A fitted estimator from a model file (written by ``save`` or
        ``fgl train``): ``spec`` is None for a model trained on feature dicts,
        else the model's spec text."""
        from fgl.api import CRF
        crf = CRF.load(path, jobs=jobs)
        dicts = crf.feature_dicts
        if dicts is None and crf.spec.name == MODEL_NAME:
            raise FglError(f"{path}: a model trained on feature dicts by an older fgl, which "
                           "did not keep the attributes' names; train it again")
        est = cls(None if dicts is not None else crf.spec.text, jobs=jobs)
        if dicts is not None:
            est.all_possible_states = dicts.all_possible_states
            est.all_possible_transitions = dicts.all_possible_transitions
        est.adopt(crf)
        return est

    def _check_params(self) -> dict[str, object]:
        """What fit refuses before any work (the numbers are checked by
        ``fgl.CRF``, with the same messages as the CLI's); returns the
        overrides fgl.CRF is given: one per row of ``fgl.lang.overrides``,
        each the parameter of that name (sklearn-crfsuite's c1, c2 and
        min_freq give l1, sigma and min_count)."""
        if self.spec is not None and not isinstance(self.spec, (str, Path, ast.Spec)):
            raise FglError(f"spec must be a path to a .fgl file, spec text, a parsed Spec or "
                           f"None (feature dicts); found {type(self.spec).__name__}")
        if self.c2 is not None and self.sigma is not None:
            raise FglError("give sigma or c2, not both: c2 (sklearn-crfsuite's name) is "
                           "1 / (2 sigma^2)")
        if self.c1 is not None and self.l1 is not None:
            raise FglError("give l1 or c1, not both: c1 (sklearn-crfsuite's name) is l1")
        c1_l1, c2_sigma = crfsuite_regularisation(self.c1, self.c2)
        l1 = self.l1 if self.c1 is None else c1_l1
        sigma = self.sigma if self.c2 is None else c2_sigma
        for name in ("all_possible_states", "all_possible_transitions"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise FglError(f"{name} must be True or False; found {value!r}")
            if value and self.spec is not None:
                raise FglError(f"{name} shapes the model built for feature dicts (spec=None); "
                               "with a spec, write it there: `(support = all)` on a state "
                               "template, `patterns all` on a transition template")
        given = {row.key: getattr(self, row.key, None) for row in OVERRIDE_DEFS}
        return {**given, "l1": l1, "sigma": sigma, "min_count": min_count_of(self.min_freq)}

    # ------------------------------------------------------------ prediction

    def _fitted(self):
        crf = getattr(self, "crf_", None)
        if crf is None:
            raise _not_fitted(f"this {type(self).__name__} is not fitted yet; call fit(X, y)")
        return crf

    def _rows(self, X: Sequence[Sequence[Any]]) -> list:
        """``X`` as the trained spec's rows."""
        crf = self._fitted()
        if crf.feature_dicts is None:
            return _plain_rows(list(X))
        return crf.dict_rows(X)

    def predict(self, X: Sequence[Sequence[Any]]) -> list[list]:
        """The most likely label sequence of each sequence (with several
        output layers, a tuple of labels per token), all in one batch."""
        with collector_paused():     # (objects without cycles, made per sequence)
            return self._fitted().predict(self._plain(X))

    def _plain(self, X: Sequence[Sequence[Any]]) -> list:
        """``X`` for the CRF, which converts feature dicts itself."""
        return list(X) if self._fitted().feature_dicts is not None else _plain_rows(list(X))

    def predict_single(self, xseq: Sequence[Any]) -> list:
        """``predict`` of one sequence."""
        return self.predict([xseq])[0]

    def predict_marginals(self, X: Sequence[Sequence[Any]]) -> list[list[dict]]:
        """Per sequence, per token, ``{label: probability}`` (sklearn-crfsuite's
        shape); with several output layers ``{layer: {label: probability}}``."""
        return self._fitted().predict_marginals(self._plain(X))

    def predict_marginals_single(self, xseq: Sequence[Any]) -> list[dict]:
        """``predict_marginals`` of one sequence."""
        return self.predict_marginals([xseq])[0]

    def predict_nbest(self, X: Sequence[Sequence[Any]], k: int) -> list[list[tuple]]:
        """Per sequence its ``k`` best labellings, best first, as ``(labels,
        p(labels | x))`` (``fgl.CRF.predict_nbest``: exact, chain and segment
        models)."""
        return self._fitted().predict_nbest(self._plain(X), k)

    def predict_probability(self, X: Sequence[Sequence[Any]]) -> list[float]:
        """p(y | x) of each sequence's predicted labelling (python-crfsuite's
        ``Tagger.probability`` of what ``Tagger.tag`` returns)."""
        return self._fitted().predict_probability(self._plain(X))

    def score(self, X: Sequence[Sequence[Any]], y: Sequence[Sequence[Any]]) -> float:
        """Token accuracy as a fraction in 0-1, as scikit-learn's scorers
        (and sklearn-crfsuite's ``score``) give it: the share of tokens whose
        labels (every output layer's) are right.  (``fgl.CRF.score`` and the
        command line report percent.)"""
        return self._fitted().score(self._plain(X), _text_labels(y)) / 100.0

    # ------------------------------------------------------------ looking inside

    # sklearn-crfsuite's attributes mean what CRFsuite's model file holds: the
    # features whose weight is not 0 and the attributes they use; the all_* names
    # keep every feature the model has (0 or not)

    @property
    def state_features_(self) -> dict[tuple[str, str], float]:
        """{(attribute, label): weight} of the non-zero state weights, as
        sklearn-crfsuite gives them — with feature dicts, the attribute
        named as python-crfsuite names it (``word.lower():the``)."""
        return {k: w for k, w in self.all_state_features_.items() if w != 0.0}

    @property
    def all_state_features_(self) -> dict[tuple[str, str], float]:
        """``state_features_`` with the weights that are 0 as well."""
        return self._fitted().state_features_

    @property
    def attributes_(self) -> list[str]:
        """The attributes with a non-zero state weight, in the order first
        met in training (sklearn-crfsuite's ``attributes_``; the same order
        after ``save``/``load``), by the feature-dict names with
        ``spec=None``."""
        used = {a for a, _ in self.state_features_}
        return [a for a in self.all_attributes_ if a in used]

    @property
    def all_attributes_(self) -> list[str]:
        """Every attribute of the templates with observations that has
        weights (0 or not), in the order first met in training."""
        crf = self._fitted()
        name = crf.attribute_name or (lambda key: key)
        keys = [key for plan, vocab in zip(crf.model.templates, crf.model.vocabs)
                if plan.has_observations for key in vocab]
        return list(dict.fromkeys(name(key) for key in keys))

    @property
    def transition_features_(self) -> dict[tuple[str, str], float]:
        """{(label from, label to): weight} of the non-zero transition weights."""
        return {k: w for k, w in self.all_transition_features_.items() if w != 0.0}

    @property
    def all_transition_features_(self) -> dict[tuple[str, str], float]:
        """``transition_features_`` with the weights that are 0 as well."""
        return self._fitted().transition_features_


def labels_statement(y: Sequence[Sequence[Any]]) -> str:
    """The ``labels`` statement declaring the labels of ``y`` in the order
    first seen, as CRFsuite numbers them (so ``classes_`` lists them so,
    and a model file keeps the order); empty when ``y`` has none."""
    labels = dict.fromkeys(str(v) for seq in y for v in seq)
    if not labels:
        return ""
    quoted = " ".join('"' + label.replace("\\", "\\\\").replace('"', '\\"')
                      .replace("\n", "\\n").replace("\t", "\\t") + '"' for label in labels)
    return f"labels {LABEL} = [{quoted}]\n"


def _plain_rows(X: list) -> list:
    """Rows for a spec; feature dicts are refused with what to do."""
    for i, seq in enumerate(X):
        if any(isinstance(token, dict) for token in seq):
            raise FglError(f"sequence {i} holds a dict per token (sklearn-crfsuite's feature "
                           "dicts), but the estimator has a spec, whose columns are read from "
                           "rows of values; leave spec=None to train on feature dicts")
    return X


def _same(a: object, b: object) -> bool:
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):      # (arrays compare element-wise)
        return False


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "...'"


def sequence_scorer(metric: str = "token_accuracy") -> Callable[[Any, Any, Any], float]:
    """A scorer for ``cross_val_score(..., scoring=)`` and ``GridSearchCV``
    (a callable ``(estimator, X, y) -> float``, higher is better, a fraction
    in 0-1 as scikit-learn's scorers give):
    ``"token_accuracy"`` (the default of ``score``), ``"sequence_accuracy"``
    (the share of sequences with every label right) or ``"f1"`` (micro F1
    of the chunks or labels ``fgl.evaluation.evaluate`` finds, scheme ``auto``)."""
    if metric not in METRICS:
        raise FglError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")

    def score(estimator: CRFEstimator, X: Any, y: Any) -> float:
        if metric == "token_accuracy":
            return estimator.score(X, y)
        y, pred = _text_labels(y), estimator.predict(X)
        if metric == "sequence_accuracy":
            return sum(list(p) == g for p, g in zip(pred, y)) / max(len(y), 1)
        if any(isinstance(label, tuple) for seq in y for label in seq):
            raise FglError("the f1 scorer scores one output layer; this model has several "
                           "(score each with fgl.CRF.evaluate)")
        from fgl.evaluation.evaluate import evaluate
        return evaluate(y, pred).overall.f1 / 100.0
    score.__name__ = f"fgl_{metric}"
    return score


def _text_labels(y: Sequence[Sequence[Any]]) -> list[list]:
    """Label sequences as fgl predicts them: text, a tuple per token with
    several output layers."""
    return [[tuple(str(v) for v in label) if isinstance(label, (list, tuple)) else str(label)
             for label in seq] for seq in y]
