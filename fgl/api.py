"""The Python API, in the scikit-learn style: ``CRF(spec).fit(X, y)``.

``X`` is a list of sequences, each a list of token rows holding the spec's
input columns in order (strings; numbers and vectors as text or floats);
``y`` is the list of label sequences.  ``fit_files``/``predict_file`` read
CoNLL column files directly.  Quiet by default; ``verbose=True`` prints one
line per training iteration.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from fgl.lang import ast
from fgl.lang.checks import validate
from fgl.compile.sequence import CompiledModel, Sentences, compile_model, train_settings
from fgl.io.evaluate import Report, evaluate
from fgl.io.graphs import read_graphs
from fgl.io.conll import Sentence, iter_conll, read_conll
from fgl.compile.factor_graphs import LoopyModel, compile_loopy_model, needs_loopy
from fgl.learn.learner import TrainingLog, train_lbfgs
from fgl.io.model_files import load_model, save_model
from fgl.lang.parser import parse_spec, read_spec
from fgl.engines.programs import EncodedData

Rows = Sequence[Sequence[object]]


def _as_sentences(X: Sequence[Rows], y: Sequence[Sequence[str]] | None, what: str) -> list[Sentence]:
    if y is not None and len(X) != len(y):
        raise ValueError(f"{what}: X has {len(X)} sequences but y has {len(y)}")
    out = []
    for i, rows in enumerate(X):
        if y is not None and len(rows) != len(y[i]):
            raise ValueError(f"{what}: sequence {i} has {len(rows)} tokens but {len(y[i])} labels")
        fields = [[_text(v) for v in row] + ([y[i][j]] if y is not None else [])
                  for j, row in enumerate(rows)]
        out.append(Sentence(fields, list(range(1, len(rows) + 1)), 0, f"<{what} sequence {i}>"))
    return out


def _text(v: object) -> str:
    if isinstance(v, (list, tuple, np.ndarray)):
        return ",".join(repr(float(x)) for x in v)
    return str(v)


class CRF:
    """A CRF defined by an fgl spec.

    Parameters
    ----------
    spec:
        Path to a ``.fgl`` file, the spec text itself, or a parsed ``Spec``.
    sigma, max_iter, tol:
        Override the spec's ``train`` settings (Gaussian prior sigma, L-BFGS
        iteration limit, relative-improvement stopping tolerance).
    jobs:
        Threads for per-sequence work; 0 means every core.
    verbose:
        Print one line per training iteration.
    """

    def __init__(self, spec: str | Path | ast.Spec, *, sigma: float | None = None,
                 max_iter: int | None = None, tol: float | None = None, jobs: int = 0,
                 verbose: bool = False):
        if isinstance(spec, ast.Spec):
            self.spec = spec
        elif isinstance(spec, Path) or (isinstance(spec, str) and "\n" not in spec
                                        and spec.endswith(".fgl")):
            self.spec = read_spec(spec)
        else:
            self.spec = validate(parse_spec(str(spec), "<spec>"))
        self.overrides = {k: v for k, v in
                          (("sigma", sigma), ("max_iter", max_iter), ("tol", tol)) if v is not None}
        self.jobs, self.verbose = jobs, verbose
        self.model: CompiledModel | None = None
        self.weights: np.ndarray | None = None
        self.training_log: TrainingLog | None = None

    # ------------------------------------------------------------ training

    def fit(self, X: Sequence[Rows], y: Sequence[Sequence[str]]) -> "CRF":
        """Train on sequences ``X`` with label sequences ``y``."""
        return self.fit_sentences(_as_sentences(X, y, "train"))

    def fit_file(self, path: str | Path, encoding: str = "utf-8") -> "CRF":
        """Train on a data file holding the spec's columns (CoNLL columns,
        or JSON-lines graphs for `input graph` specs).  A chain or segment
        model reads a column file twice rather than holding it."""
        if self.spec.input_format == "graph" or needs_loopy(self.spec):
            return self.fit_sentences(self.read(path, encoding), source=str(path))
        return self.fit_sentences(lambda: iter_conll(path, encoding=encoding), source=str(path))

    def read(self, path: str | Path, encoding: str = "utf-8") -> list[Sentence]:
        """Read a data file in the spec's input format."""
        if self.spec.input_format == "graph":
            return read_graphs(path, self.spec, encoding)
        return read_conll(path, encoding=encoding)

    def compile(self, X: Sequence[Rows], y: Sequence[Sequence[str]]) -> "CRF":
        """Compile the spec against labelled data without training: labels,
        patterns and features are fixed and every weight is zero."""
        self.model, _ = self._compile(_as_sentences(X, y, "train"))
        self.weights = np.zeros(self.model.program.n_features)
        return self

    def _compile(self, sentences: Sentences, source: str = "<train>"):
        base = Path(self.spec.file).parent if not self.spec.file.startswith("<") else Path(".")
        compile_fn = compile_loopy_model if needs_loopy(self.spec) else compile_model
        return compile_fn(self.spec, sentences, base, self.overrides, source)

    def fit_sentences(self, sentences: Sentences, source: str = "<train>") -> "CRF":
        """Train on already-read sentences (rows hold inputs and the label),
        or on a function returning a fresh iterator over them (chain and
        segment models); ``source`` names them in error messages."""
        t0 = time.perf_counter()
        model, data = self._compile(sentences, source)
        del sentences  # the encoded data is all training needs (frees them if ours)
        settings = {**train_settings(self.spec), **self.overrides}
        if self.verbose:
            print(f"compiled in {time.perf_counter() - t0:.1f}s: {len(model.labels)} labels, "
                  f"{model.program.n_features} features, {data.n_sequences} instances",
                  file=sys.stderr)
        progress = _print_progress if self.verbose else None
        w0 = model.initial_weights() if isinstance(model, LoopyModel) else None
        self.weights, self.training_log = train_lbfgs(
            model.program, data, model.feat_sigma,
            max_iter=int(settings.get("max_iter", 200)), tol=float(settings.get("tol", 1e-5)),
            jobs=self.jobs, w0=w0, progress=progress)
        self.model = model
        return self

    # ------------------------------------------------------------ inference

    def _fitted(self) -> CompiledModel:
        if self.model is None or self.weights is None:
            raise RuntimeError("this CRF is not trained yet; call fit() or CRF.load()")
        return self.model

    def predict_sentences(self, sentences: list[Sentence]) -> list[list[str]]:
        model = self._fitted()
        data = model.encode(sentences)
        if isinstance(model, LoopyModel):
            return model.split_predictions(data, model.program.decode(self.weights, data, self.jobs))
        labels, starts = model.program.decode(self.weights, data, self.jobs)
        out = []
        for k in range(data.n_sequences):
            a, b = data.seq_ptr[k], data.seq_ptr[k + 1]
            out.append(model.tags(labels[a:b], None if starts is None else starts[a:b]))
        return out

    def predict(self, X: Sequence[Rows]) -> list[list[str]]:
        """The most likely label sequence of each input sequence."""
        return self.predict_sentences(_as_sentences(X, None, "predict"))

    def predict_file(self, path: str | Path, encoding: str = "utf-8") -> tuple[list[Sentence], list[list[str]]]:
        sentences = self.read(path, encoding)
        return sentences, self.predict_sentences(sentences)

    def predict_marginals(self, X: Sequence[Rows]) -> list[list[dict[str, float]]]:
        """P(y_t = label | x) for every token, as one dict per token."""
        model = self._fitted()
        sentences = _as_sentences(X, None, "predict")
        data = model.encode(sentences)
        if isinstance(model, LoopyModel):  # beliefs of the first output layer
            out = []
            for inst, beliefs, n in zip(data.instances, model.program.variable_marginals(
                    self.weights, data), data.sizes):
                for a, b in zip(inst.bounds, inst.bounds[1:]):
                    out.append([dict(zip(model.labels, map(float, beliefs[p]))) for p in range(a, b)])
            return out
        out = []
        for marg in model.program.label_marginals(self.weights, data):
            out.append([dict(zip(model.labels, map(float, row))) for row in marg])
        return out

    def log_partition(self, X: Sequence[Rows]) -> list[float]:
        """log Z(x) of each input sequence under the current weights."""
        model = self._fitted()
        data = model.encode(_as_sentences(X, None, "predict"))
        if isinstance(model, LoopyModel):
            return [model.program.infer(g, model.program.factor_tables(self.weights, data, i)).log_z
                    for i, g in enumerate(data.graphs)]
        return [model.program.expectations(self.weights, _one(data, i), 1)[0]
                for i in range(data.n_sequences)]

    def score(self, X: Sequence[Rows], y: Sequence[Sequence[str]]) -> float:
        """Token accuracy (0-1) of the predictions against ``y``."""
        pred = self.predict(X)
        total = sum(len(s) for s in y)
        return sum(a == b for p, g in zip(pred, y) for a, b in zip(p, g)) / max(total, 1)

    def evaluate(self, X: Sequence[Rows], y: Sequence[Sequence[str]]) -> Report:
        """conlleval-style report: accuracy, per-chunk-type and per-label P/R/F1."""
        return evaluate([list(s) for s in y], self.predict(X))

    # ------------------------------------------------------------ files

    def save(self, path: str | Path) -> None:
        """Write a model file (spec, vocabularies and weights; no pickle)."""
        model = self._fitted()
        meta = {}
        if self.training_log is not None:
            meta = {"iterations": len(self.training_log.iterations),
                    "objective": self.training_log.objective,
                    "seconds": self.training_log.seconds}
        save_model(path, model, self.weights, meta)

    @classmethod
    def load(cls, path: str | Path, jobs: int = 0) -> "CRF":
        """Read a model file written by ``save``."""
        model, weights, _ = load_model(path)
        crf = cls(model.spec, jobs=jobs)
        crf.model, crf.weights = model, weights
        return crf


def _one(data: EncodedData, i: int) -> EncodedData:
    """Sequence ``i`` of ``data`` on its own."""
    a, b = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1])
    m = data.units_per_token
    lo, hi = int(data.tok_ptr[a * m]), int(data.tok_ptr[b * m])
    return EncodedData(np.array([0, b - a]), data.tok_ptr[a * m:b * m + 1] - lo,
                       data.tok_row[lo:hi], data.tok_val[lo:hi], None, None, m)


def _print_progress(row: dict) -> None:
    print(f"iter {row['iteration']:4d}  objective {row['objective']:.6g}  "
          f"|grad| {row['gradient_norm']:.4g}  evals {row['evaluations']}  "
          f"{row['seconds']:.1f}s", file=sys.stderr)
