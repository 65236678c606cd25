"""The Python API, in the scikit-learn style: ``CRF(spec).fit(X, y)``.

``X`` is a list of sequences, each a list of token rows holding the spec's
input columns in order (strings; numbers and vectors as text or floats);
``y`` is the list of label sequences — with several output layers, one
tuple of labels per token.  For ``input graph`` specs ``X`` may instead be
graphs — dicts shaped as a line of a graph file, or ``GraphInstance``s as
``read`` returns them — which carry their own labels: ``fit(graphs)``,
``predict(graphs)`` (one label per node, in node order; a partially
labelled graph keeps its given labels, clamped as evidence, and only its
unlabelled nodes are predicted), ``evaluate(graphs)``.
``fit_file``/``predict_file`` read data files directly.  Quiet by default;
``verbose=True`` prints one line per training iteration.  Every engine is
reached through the one model interface
(``fgl.model.Model``), chosen by ``fgl.registry``.

Why one module of some 700 lines: ``CRF`` is the API's one class, and each
of its methods is a short call into the package (training in ``fgl.learn``,
inference through the model, files in ``fgl.io`` and ``fgl.modelfile``); split into mixins, what
a user can call would be spread over modules.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Iterator, Sequence

import numpy as np

from fgl import registry
from fgl.data.sentence import Sentence
from fgl.errors import FglError
from fgl.evaluation.evaluate import Report, evaluate, evaluate_layers
from fgl.io.conll import iter_conll, read_conll
from fgl.io.feature_dicts import META_KEY as DICTS_KEY
from fgl.io.feature_dicts import MODEL_NAME, FeatureDictSpec, from_dicts_message
from fgl.io.graphs import GraphInstance, graph_instance, read_graphs, scoring
from fgl.io.rows import Rows, apart, as_sentences, label_fields
from fgl.io.sources import expand, files_label
from fgl.lang import ast
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec, read_spec
from fgl.lang.settings import Overrides, resolve_train
from fgl.learn.trainers import setting_errors
from fgl.model import Model, Predictions, TokenMarginals, output_layers
from fgl.modelfile.model_files import check_writable, load_model, save_model
from fgl.modelfile.training_curve import META_KEY as CURVE_KEY
from fgl.modelfile.training_curve import training_curve
from fgl.report.inspect import inspection, state_features, transition_features

if TYPE_CHECKING:   # (training's modules load its kernels: imported when a fit runs)
    from fgl.learn.learner import TrainingLog
    from fgl.learn.run import TrainingRun

DICTS_SOURCE = "<feature dicts>"   # the file of the sentences _inputs makes of feature dicts
# train settings each trainer does not read (refused at the setting)


def _nonempty(sentences: Sequence[Sentence]) -> list[int]:
    """The indexes of the sentences with tokens (an empty one needs no inference)."""
    return [i for i, s in enumerate(sentences) if s.rows]


def _filled(n: int, keep: list[int], values: Sequence, empty: Callable[[], Any]) -> list:
    """``n`` results: ``values`` at the indexes ``keep``, ``empty()`` elsewhere."""
    out = [empty() for _ in range(n)]
    for i, v in zip(keep, values):
        out[i] = v
    return out


def eval_scheme(spec: ast.Spec, scheme: str) -> str:
    """The evaluation scheme for ``spec``'s output: ``"auto"`` means what
    its engine declares (``Engine.auto_scheme``: a segment model ``from
    change`` is scored by its own segments, ``"runs"``)."""
    if scheme.lower() == "auto":
        return registry.choose(spec).engine.auto_scheme(spec) or scheme
    return scheme


class CRF:
    """A CRF defined by an fgl spec.

    Parameters
    ----------
    spec:
        Path to a ``.fgl`` file, the spec text itself, or a parsed ``Spec``.
    sigma, max_iter, tol, l1, min_count, jobs (``overrides``):
        Override the spec's ``train`` settings (Gaussian prior sigma, L-BFGS
        iteration limit — the epochs of sgd and the perceptron —,
        relative-improvement stopping tolerance, L1 penalty — above 0
        trains by OWL-QN —, the feature cut-off: an attribute gets weights
        only when it occurs at least this often in the training data,
        CRF++'s ``-f``; threads for per-sequence work, 0 every core); None
        (default) keeps the spec's.  The keywords are the rows of
        ``fgl.lang.overrides`` (``docs/settings.md``), checked once into an
        ``fgl.lang.settings.Overrides``.
    verbose:
        Print one line per training iteration.
    time_limit:
        Stop training after this many seconds, keeping the iterate reached.
    checkpoint, checkpoint_every, checkpoint_seconds:
        Save the training run to the file ``checkpoint`` every
        ``checkpoint_every`` iterations (default 10), also whenever
        ``checkpoint_seconds`` have passed since the last save, and when
        training stops; ``fit*(resume=that file)`` continues it exactly
        (``fgl.learn.checkpoint``).  A checkpoint is also a model file.
    dask, dask_workers:
        Train ``fit_file`` on a Dask cluster (``fgl.distributed``): ``dask``
        a scheduler address (``"tcp://host:8786"``) or a
        ``distributed.Client``, or ``dask_workers`` = N worker processes on
        this machine; ``fit_file`` then takes a path, a glob or a list of
        them, and each worker reads and encodes its own shards.
    """

    def __init__(self, spec: str | Path | ast.Spec, *, verbose: bool = False,
                 time_limit: float | None = None, checkpoint: str | Path | None = None,
                 checkpoint_every: int = 10, checkpoint_seconds: float | None = None,
                 dask: Any = None, dask_workers: int | None = None, **overrides: Any):
        if isinstance(spec, ast.Spec):
            self.spec = spec
        elif isinstance(spec, Path) or (isinstance(spec, str) and "\n" not in spec
                                        and (spec.endswith(".fgl") or spec.startswith("stdlib:"))):
            self.spec = read_spec(spec)
        else:
            self.spec = validate(parse_spec(str(spec), "<spec>"))
        self.overrides = Overrides.of(overrides)
        self.settings = resolve_train(self.spec, self.overrides)
        for error in setting_errors(self.spec)[:1]:   # (a setting the trainer does not read)
            raise error
        self.jobs, self.verbose = self.settings.jobs, verbose
        if time_limit is not None and not time_limit > 0:
            raise FglError(f"time_limit must be a positive number of seconds; found {time_limit}")
        self.time_limit = time_limit
        if not (isinstance(checkpoint_every, int) and checkpoint_every >= 1):
            raise FglError(f"checkpoint_every must be a whole number of iterations >= 1; found "
                           f"{checkpoint_every}")
        if checkpoint_seconds is not None and not checkpoint_seconds > 0:
            raise FglError("checkpoint_seconds must be a positive number of seconds; found "
                           f"{checkpoint_seconds}")
        self.checkpoint = None if checkpoint is None else check_writable(checkpoint,
                                                                               "checkpoint")
        self.checkpoint_every, self.checkpoint_seconds = checkpoint_every, checkpoint_seconds
        if dask is not None or dask_workers is not None:
            from fgl.distributed.cluster import check_target
            check_target(dask, dask_workers)
        self.dask, self.dask_workers = dask, dask_workers
        self._run: TrainingRun | None = None   # the last training run (request_stop's)
        self.model: Model | None = None
        self.weights: np.ndarray | None = None
        self.training_log: TrainingLog | None = None
        self.training_meta: dict = {}   # a loaded model file's training metadata
        # set when the model reads sklearn-crfsuite's feature dicts (fgl.CRFEstimator with
        # spec=None): X then holds a dict of features per token, and the model file keeps the
        # attributes' names
        self.feature_dicts: FeatureDictSpec | None = None
        self.path: str | None = None   # the model file ``load`` read

    def __repr__(self) -> str:
        name = self.spec.file if not self.spec.file.startswith("<") else (self.spec.name or "spec")
        state = (f"trained, {len(self.weights)} features" if self.weights is not None
                 else "not trained")
        return f"CRF({name!r}, engine={self.engine.engine.name}, {state})"

    def _repr_svg_(self) -> str | None:
        """A notebook's picture of the model: its templates' clique shapes
        over a few positions (``fgl.report.draw.structure_drawing``); None
        (the text repr) without matplotlib."""
        from fgl.report.draw import structure_drawing

        try:
            return structure_drawing(self.spec).svg()
        except FglError:
            return None

    def draw(self, data: str | Path | Sequence[Rows] | None = None, instance: int = 0,
             tokens: str | tuple[int | None, int | None] | None = None,
             encoding: str = "utf-8", short_lines: str = "error") -> Any:
        """A picture (``fgl.report.draw.Drawing``: ``.save("g.svg")``, shown by
        a notebook) of instance ``instance`` of ``data`` — a data file, or
        sequences of rows as for ``predict`` — cut to ``tokens`` ("A:B" or
        (A, B)); a trained CRF colours it by its predictions.  Without
        data: the templates' structure."""
        from fgl.report.draw import draw_instance, parse_tokens, structure_drawing

        if data is None:
            return structure_drawing(self.spec)
        sentences = self.read(data, encoding, short_lines) if isinstance(data, (str, Path)) \
            else as_sentences(data, None, "draw")
        window = parse_tokens(tokens) if isinstance(tokens, str) else tokens
        return draw_instance(self.spec, sentences, instance, window, Path(self.spec.file).parent,
                             self if self.weights is not None else None)

    @property
    def engine(self) -> registry.Choice:
        """The engine this spec compiles to, and why."""
        return registry.choose(self.spec)

    # ------------------------------------------------------------ data

    def read(self, path: str | Path | Sequence[str | Path], encoding: str = "utf-8",
             short_lines: str = "error") -> list[Sentence]:
        """Read a data file in the spec's input format (CoNLL columns, or
        JSON-lines graphs for `input graph` specs).  ``short_lines`` is what
        a column file's lines with too few fields get: "error", "pad" or
        "skip" (``fgl.io.conll.read_conll``).  ``path`` may also be ``-``
        (standard input), a glob (``"data/tr*.txt"``, sorted) or a list of
        them: the files are read in order as one, each file's documents
        apart from the others' (``fgl.io.sources``)."""
        self._check_reads_files()
        files = expand(path)
        if self.spec.input_format == "graph":
            return [g for f in files for g in read_graphs(f, self.spec, encoding)]
        return list(apart(read_conll(f, encoding=encoding, column_names=self._column_names,
                                      short_lines=short_lines) for f in files))

    def _source(self, path: str | Path | Sequence[str | Path], encoding: str,
                short_lines: str) -> Callable[[], Iterable[Sentence]]:
        """A re-readable source over data files (column files are streamed)."""
        self._check_reads_files()
        files = expand(path)
        if self.spec.input_format == "graph":
            return lambda: [g for f in files for g in read_graphs(f, self.spec, encoding)]
        return lambda: apart(iter_conll(f, encoding=encoding, column_names=self._column_names,
                                         short_lines=short_lines) for f in files)

    def _check_reads_files(self) -> None:
        """A model trained on feature dicts reads them from Python, not files."""
        if self.weights is not None and (self.feature_dicts is not None
                                         or self.spec.name == MODEL_NAME):
            raise FglError(from_dicts_message(self.path or "this model"))

    def dict_rows(self, X: Any) -> Any:
        """With a feature-dict model, ``X`` (a dict of features per token) as
        rows of its spec; else ``X`` as it is."""
        if self.feature_dicts is None or isinstance(X, (str, Path)):
            return X
        vocab = self._fitted().vocabs[0]     # the state template over the bag comes first
        return self.feature_dicts.rows(list(X), self.feature_dicts.known_words(vocab))

    def _graphs(self, X: Any, what: str) -> list[GraphInstance] | None:
        """``X`` as graphs, when the spec reads graphs and ``X`` holds them
        (``GraphInstance``s, or dicts shaped as a graph file's lines: errors
        name ``<what graphs>:k`` for the k-th); else None."""
        if self.spec.input_format != "graph" or isinstance(X, (str, Path)) or not len(X):
            return None
        if all(isinstance(g, GraphInstance) for g in X):
            return list(X)
        if all(isinstance(g, dict) for g in X):
            return [graph_instance(g, self.spec, f"<{what} graphs>", k)
                    for k, g in enumerate(X, 1)]
        return None

    def _inputs(self, X: Any, documents: Sequence[Hashable] | None, what: str
                ) -> list[Sentence]:
        """Graphs as they are (``_graphs``), else sequences of rows as
        sentences; with a feature-dict model, each sequence of dicts as it is
        (``_encode`` encodes them straight from the vocabularies)."""
        graphs = self._graphs(X, what)
        if graphs is not None:
            return graphs
        if self.feature_dicts is not None and not isinstance(X, (str, Path)):
            return [Sentence(list(seq), list(range(1, len(seq) + 1)), i, DICTS_SOURCE)
                    for i, seq in enumerate(X)]
        return as_sentences(X, None, what, documents)

    def _encode(self, model: Model, sentences: Sequence[Sentence]) -> Any:
        """``model.encode``; sentences of feature dicts (``_inputs``) go the
        short way, from the dicts to the model's attribute rows
        (``FeatureDictSpec.encode``: 8 times faster than text rows the
        spec's observations read back)."""
        from fgl.engines.first_run import note_first_compile
        note_first_compile(self.engine.engine, "tag")   # (inference compiles its kernels once)
        if self.feature_dicts is not None and sentences and sentences[0].file == DICTS_SOURCE:
            return self.feature_dicts.encode([(s.doc, s.rows) for s in sentences], model.vocabs)
        return model.encode(sentences, jobs=self.jobs)

    @property
    def _column_names(self) -> list[str]:
        """The spec's columns (for data errors: a file holding all of them)."""
        return [c.name for c in self.spec.columns]

    # ------------------------------------------------------------ training

    def fit(self, X: Sequence[Rows], y: Sequence[Sequence] | None = None,
            documents: Sequence[Hashable] | None = None,
            resume: str | Path | None = None) -> "CRF":
        """Train on sequences ``X`` with label sequences ``y``.  ``documents``
        (one id per sequence; consecutive equal ids form a document) is what
        ``within document`` templates link across; by default every
        sequence is a document of its own.  ``resume``: a checkpoint of a
        run on the same data to continue.  Graphs (``input graph``) carry
        their labels, so ``y`` is None; a node whose label is None (or
        missing) is unlabelled and marginalised."""
        graphs = self._graphs(X, "train")
        if graphs is not None:
            if y is not None:
                raise ValueError("train: graphs carry their own labels (node attributes); "
                                 "pass y=None")
            return self.fit_sentences(graphs, resume=resume)
        if y is None:
            raise ValueError("train: y (the label sequences) is missing")
        sentences = [s for s in as_sentences(X, y, "train", documents) if s.rows]
        return self.fit_sentences(sentences, resume=resume)   # (an empty sequence adds nothing)

    def fit_file(self, path: str | Path, encoding: str = "utf-8",
                 short_lines: str = "error", resume: str | Path | None = None,
                 dev: str | Path | None = None) -> "CRF":
        """Train on a data file holding the spec's columns (``short_lines``
        as for ``read``; ``resume`` as for ``fit``; ``dev``: a development
        file feature induction scores after every round).  Chain and
        segment models read a column file twice rather than holding it.
        ``path`` (and ``dev``) may be ``-``, a glob or a list of them, read
        in order as one file (``read``).  With ``dask``/``dask_workers``
        set, training runs on the cluster (``fgl.distributed``)."""
        if self.dask is not None or self.dask_workers is not None:
            from fgl.distributed.training import fit_on_cluster
            return fit_on_cluster(self, path, dask=self.dask, workers=self.dask_workers,
                                  encoding=encoding, short_lines=short_lines, resume=resume)
        return self.fit_sentences(self._source(path, encoding, short_lines),
                                  source=files_label(expand(path)), resume=resume, dev=dev)

    def compile(self, X: Sequence[Rows], y: Sequence[Sequence],
                documents: Sequence[Hashable] | None = None) -> "CRF":
        """Compile the spec against labelled data without training: labels,
        patterns and features are fixed and the weights are the engine's
        starting point."""
        self.model, _ = self._compile(as_sentences(X, y, "train", documents))
        self.weights = self.model.initial_weights()
        return self

    def _compile(self, sentences: Any, source: str = "<train>", spec: ast.Spec | None = None
                 ) -> tuple[Model, Any]:
        """Compile this CRF's spec (or ``spec``, with the engine it needs)."""
        base = Path(self.spec.file).parent if not self.spec.file.startswith("<") else Path(".")
        if spec is None:
            return self.engine.model.compile(self.spec, sentences, base, self.settings, source)
        return registry.choose(spec).model.compile(spec, sentences, base, self.settings, source)

    def fit_sentences(self, sentences: Any, source: str = "<train>",
                      resume: str | Path | None = None, dev: Any = None) -> "CRF":
        """Train on already-read sentences (rows hold inputs and the labels),
        or on a function returning a fresh iterator over them; ``source``
        names them in error messages; ``resume`` as for ``fit``, ``dev`` as
        for ``fit_file`` (a path or read sentences)."""
        if self.dask is not None or self.dask_workers is not None:
            raise FglError("distributed training (dask, dask_workers) reads its data on the "
                           "workers: train with fit_file(path or glob), not on sentences held "
                           "here")
        run = self.training_run(resume, dev)
        run.check()
        saved = run.load_resumed()
        t0 = time.perf_counter()
        part = run.exact_part()
        if part is not None and isinstance(sentences, Iterator):
            sentences = list(sentences)   # compiled twice: the spec and its exact part
        model, data = self._compile(sentences, source)
        if part is not None:
            run.start_from(part, *self._compile(sentences, source, part))
        del sentences  # the encoded data is all training needs (frees them if ours)
        run.check_resumed(saved, model)
        free = run.check_data(model, data)
        if self.verbose:
            print(f"compiled in {time.perf_counter() - t0:.1f}s: "
                  f"{sum(len(layer.labels) for layer in model.layers)} labels, "
                  f"{model.program.n_features} features, {data.n_sequences} instances"
                  + (f", {free} unlabelled nodes (marginalised)" if free else ""),
                  file=sys.stderr)
        compiled = time.perf_counter() - t0
        self.model, self.weights, self.training_log = run.fit(model, data)
        self.training_log.compile_seconds = compiled
        if self.verbose and self.training_log.evaluations:
            print(self.training_log.time_account(), file=sys.stderr)
        return self

    def training_run(self, resume: str | Path | None = None, dev: Any = None,
                     progress: Callable[[dict], None] | None = None) -> TrainingRun:
        """A training run of this CRF's spec, settings and run options (the
        one ``request_stop`` then reaches)."""
        from fgl.learn.run import TrainingRun

        self._run = TrainingRun(
            self.spec, self.engine, self.settings, checkpoint=self.checkpoint,
            checkpoint_every=self.checkpoint_every, checkpoint_seconds=self.checkpoint_seconds,
            resume=resume, time_limit=self.time_limit, verbose=self.verbose, progress=progress,
            dev_score=None if dev is None else self._dev_score(dev))
        return self._run

    @property
    def training_started(self) -> bool:
        """Whether a fit's optimiser has begun (``fgl.cli.train``'s signals)."""
        return self._run is not None and self._run.started

    def request_stop(self, reason: str) -> None:
        """Ask a training run in progress (another thread, a signal handler)
        to end at its next safe point — after the current iteration, or
        inside an evaluation (between instances, between chunks of BP
        passes: ``fgl.stopping``), keeping the last finished iteration's
        weights — and giving ``reason`` as the log's message."""
        if self._run is not None:
            self._run.request_stop(reason)

    def _dev_score(self, dev: Any) -> Callable[[Model, np.ndarray], float]:
        """F1 on development sentences (a path or read sentences), for
        feature induction's per-round report."""
        paths = isinstance(dev, (str, Path)) or (
            isinstance(dev, (list, tuple)) and all(isinstance(d, (str, Path)) for d in dev))
        sentences = self.read(dev) if paths else list(dev)
        column = self._column_names.index(self.spec.outputs[0])
        gold = [s.column(column) for s in sentences]

        def score(model: Model, w: np.ndarray) -> float:
            pred = model.decode(w, model.encode(sentences), self.jobs).layer(model.layers[0].name)
            return evaluate(gold, pred).overall.f1
        return score

    def _fitted(self) -> Model:
        if self.model is None or self.weights is None:
            raise RuntimeError("this CRF is not trained yet; call fit() or CRF.load()")
        return self.model

    def tag_sentences(self, sentences: Sequence[Sentence]) -> Predictions:
        """MAP labels of every output layer, with inference statistics (an
        empty sequence gets empty label sequences)."""
        model = self._fitted()
        keep = _nonempty(sentences)
        if len(keep) == len(sentences):
            return model.decode(self.weights, self._encode(model, sentences), self.jobs)
        outputs = [layer.name for layer in output_layers(model.layers)]
        pred = model.decode(self.weights, self._encode(model, [sentences[i] for i in keep]),
                            self.jobs) if keep else None
        return Predictions(outputs, _filled(len(sentences), keep, pred.labels if pred else [],
                                            lambda: [[] for _ in outputs]),
                           pred.stats if pred else None)

    def predict_sentences(self, sentences: Sequence[Sentence]) -> list[list]:
        return self.tag_sentences(sentences).tokens()

    def predict(self, X: Sequence[Rows], documents: Sequence[Hashable] | None = None
                ) -> list[list]:
        """The most likely label sequence of each input sequence (with
        several output layers, a tuple of labels per token)."""
        return self.predict_sentences(self._inputs(X, documents, "predict"))

    def tag_file(self, path: str | Path, encoding: str = "utf-8", short_lines: str = "error"
                 ) -> tuple[list[Sentence], Predictions]:
        """Read a data file (``short_lines`` as for ``read``) and decode it:
        its sentences and predictions."""
        sentences = self.read(path, encoding, short_lines)
        return sentences, self.tag_sentences(sentences)

    def predict_file(self, path: str | Path, encoding: str = "utf-8", short_lines: str = "error"
                     ) -> tuple[list[Sentence], list[list]]:
        """Read a data file and predict its labels."""
        sentences, pred = self.tag_file(path, encoding, short_lines)
        return sentences, pred.tokens()

    def marginals(self, X: Sequence[Rows], documents: Sequence[Hashable] | None = None
                  ) -> TokenMarginals:
        """Per-token label marginals of every output layer (graphs: per node,
        a given label of a partially labelled graph with probability 1)."""
        model = self._fitted()
        sentences = self._inputs(X, documents, "predict")
        keep = _nonempty(sentences)
        got = model.marginals(self.weights, self._encode(model, [sentences[i] for i in keep]),
                              self.jobs) if keep else None
        if len(keep) == len(sentences):
            return got
        outputs = output_layers(model.layers)
        probs = _filled(len(sentences), keep, got.probs if got else [],
                        lambda: [np.zeros((0, len(layer.labels))) for layer in outputs])
        return TokenMarginals([layer.name for layer in outputs],
                              [layer.labels for layer in outputs], probs,
                              got.stats if got else None)

    def predict_marginals(self, X: Sequence[Rows], documents: Sequence[Hashable] | None = None
                          ) -> list[list[dict]]:
        """P(y_t = label | x) for every token, as one ``{label: p}`` dict per
        token; with several output layers, ``{layer: {label: p}}``."""
        m = self.marginals(X, documents)
        if len(m.outputs) == 1:
            return m.dicts()
        per_layer = [m.dicts(name) for name in m.outputs]
        return [[dict(zip(m.outputs, tok)) for tok in zip(*seqs)] for seqs in zip(*per_layer)]

    def predict_nbest(self, X: Sequence[Rows], k: int,
                      documents: Sequence[Hashable] | None = None) -> list[list[tuple]]:
        """Per sequence its ``k`` best labellings, best first, as ``(labels,
        p(labels | x))``, exactly (chain and segment engines; ``fgl.labellings``)."""
        return self.nbest_sentences(self._inputs(X, documents, "predict"), k)

    def predict_probability(self, X: Sequence[Rows],
                            documents: Sequence[Hashable] | None = None) -> list[float]:
        """p(y | x) of each sequence's predicted labelling (``predict``'s)."""
        return [best[0][1] for best in self.predict_nbest(X, 1, documents)]

    def nbest_sentences(self, sentences: Sequence[Sentence], k: int) -> list[list[tuple]]:
        """``predict_nbest`` of sentences as ``read`` returns them."""
        from fgl.labellings import nbest_labellings
        model = self._fitted()
        return nbest_labellings(model, self.weights, sentences, k,
                                lambda s: self._encode(model, s), self.jobs)

    def marginals_sentences(self, sentences: Sequence[Sentence]) -> TokenMarginals:
        """``marginals`` of sentences as ``read`` returns them."""
        from fgl.confidence import token_marginals
        return token_marginals(self._fitted(), self.weights, sentences, self.jobs)

    def segment_confidences(self, X: Sequence[Rows], documents: Sequence[Hashable] | None = None,
                            *, scheme: str = "auto", ignore: Iterable[str] = ("O",)) -> list:
        """Per sequence, its predicted segments as ``(start, end, label,
        confidence)`` (tokens start..end-1; ``fgl.confidence``): the chunks of
        the predicted tags under ``scheme`` (a segment model's own segments),
        without those labelled as in ``ignore``, each with P(its predicted
        labels | x) by constrained forward-backward (Sutton & McCallum
        §1.3.3); with several output layers, ``{layer: [...]}``."""
        sentences = as_sentences(self.dict_rows(X), None, "predict", documents)
        found = self.segment_confidences_sentences(sentences, scheme=scheme, ignore=ignore)
        names = [layer.name for layer in output_layers(self._fitted().layers)]
        if len(names) == 1:
            return [per_layer[0] for per_layer in found]
        return [dict(zip(names, per_layer)) for per_layer in found]

    def segment_confidences_sentences(self, sentences: Sequence[Sentence],
                                      predictions: Predictions | None = None, *,
                                      scheme: str = "auto", ignore: Iterable[str] = ("O",)
                                      ) -> list[list[list]]:
        """``segment_confidences`` of read sentences, per sentence and output
        layer (``predictions``: their ``tag_sentences``, when at hand)."""
        from fgl.confidence import segment_confidences
        model = self._fitted()
        pred = predictions if predictions is not None else self.tag_sentences(sentences)
        return segment_confidences(model, self.weights, sentences, self.jobs, pred,
                                   eval_scheme(self.spec, scheme), ignore)

    def log_partition(self, X: Sequence[Rows], documents: Sequence[Hashable] | None = None
                      ) -> list[float]:
        """log Z(x) of each input instance (a sequence, or a document for
        ``within document`` templates) under the current weights (the Bethe
        approximation for loopy models)."""
        model = self._fitted()
        sentences = self._inputs(X, documents, "predict")
        keep = _nonempty(sentences)
        if len(keep) == len(sentences):   # (one value per instance: a document, if linked)
            data = self._encode(model, sentences)
            return [float(v) for v in model.log_partition(self.weights, data, self.jobs)]
        if documents is not None:
            raise FglError("log_partition: an empty sequence among documents; drop it first")
        values = model.log_partition(self.weights, self._encode(
            model, [sentences[i] for i in keep]), self.jobs) if keep else []
        # (an empty sequence has one labelling, of score 0)
        return _filled(len(sentences), keep, [float(v) for v in values], lambda: 0.0)

    def score(self, X: Sequence[Rows], y: Sequence[Sequence],
              documents: Sequence[Hashable] | None = None) -> float:
        """Token accuracy of the predictions against ``y``, in percent
        (0-100, like ``Report.accuracy`` and every score fgl reports); with
        several output layers a token is right when every layer's label is."""
        pred = self.predict(X, documents)
        norm = [[tuple(label_fields(v)) if isinstance(v, (list, tuple)) else str(v) for v in seq]
                for seq in y]
        total = sum(len(s) for s in y)
        right = sum(a == b for p, g in zip(pred, norm) for a, b in zip(p, g))
        return 100.0 * right / max(total, 1)

    def evaluate(self, X: Sequence[Rows], y: Sequence[Sequence] | None = None,
                 documents: Sequence[Hashable] | None = None, *,
                 scheme: str | dict[str, str] = "auto", ignore: Iterable[str] = ("O",),
                 labels: Iterable[str] | None = None) -> Report | dict[str, Report]:
        """A conlleval-style ``Report`` (token and sequence accuracy, chunk or
        per-label P/R/F1, confusion counts; every score in percent); with
        several output layers (``y`` holding a tuple of labels per token),
        a dict ``{layer: Report}``.  ``scheme``: bio, iob1, iobes, io, iob,
        plain, runs or auto (each layer chooses; a segment model ``from
        change`` is scored by runs), or ``{layer: scheme}`` (unnamed layers:
        auto).  ``ignore``, ``labels``: as in ``fgl.evaluation.evaluate.evaluate``.

        Graphs (``input graph``; ``y`` None) are scored on the nodes whose
        labels the model is not given (``fgl.io.graphs.scoring``): every
        node of a fully labelled graph; in a partially labelled one the
        nodes marked ``"withheld": true``, their labels the gold answers,
        while the other given labels are clamped as evidence."""
        graphs = self._graphs(X, "evaluate")
        if graphs is not None:
            if y is not None:
                raise ValueError("evaluate: graphs carry their own gold labels; pass y=None")
            scored = scoring(graphs, self.spec)
            pred = self.tag_sentences(graphs)
            y = [list(zip(*(scored.gold[o][k] for o in pred.outputs)))
                 if len(pred.outputs) > 1 else scored.gold[pred.outputs[0]][k]
                 for k in range(len(scored.graphs))]
            pred = Predictions(pred.outputs, [[[seq[j] for j in nodes] for seq in pred.labels[i]]
                                              for i, nodes in zip(scored.graphs, scored.nodes)],
                               pred.stats)
        elif y is None:
            raise ValueError("evaluate: y (the gold label sequences) is missing")
        else:
            pred = self.tag_sentences(self._inputs(X, documents, "predict"))
        per_layer = scheme if isinstance(scheme, dict) else dict.fromkeys(pred.outputs, scheme)
        unknown = set(per_layer) - set(pred.outputs)
        if unknown:
            raise FglError(f"scheme names {', '.join(sorted(unknown))}, but the output layers "
                           f"are {', '.join(pred.outputs)}")
        return evaluate_layers(y, {name: pred.layer(name) for name in pred.outputs},
                               {name: eval_scheme(self.spec, per_layer.get(name, "auto"))
                                for name in pred.outputs}, ignore, labels)

    def explain(self, path: str | Path | None = None, encoding: str = "utf-8",
                short_lines: str = "error", sentences: list | None = None) -> str:
        """The engine chosen for the spec and why; with training data (or
        once fitted, without any), the compiled program's sizes as well.
        ``sentences``: the data of ``path`` when already read."""
        if path is None:
            return registry.explain(self.spec, self.model)
        if sentences is None:
            sentences = self.read(path, encoding, short_lines)
        model, data = self._compile(sentences, files_label(expand(path)))
        return registry.explain(self.spec, model, data)

    # ------------------------------------------------------------ files

    def save(self, path: str | Path) -> None:
        """Write a model file (spec, vocabularies and weights; no pickle)."""
        model = self._fitted()
        meta = {}
        if self.training_log is not None:
            meta = self._training_meta()
            if self.training_log.induced:   # feature induction: the features in order added
                meta["induced"] = self.training_log.induced
            meta[CURVE_KEY] = training_curve(self.training_log)   # (fgl report draws it)
        elif CURVE_KEY in self.training_meta:   # (a loaded model saved again keeps its curve)
            meta[CURVE_KEY] = self.training_meta[CURVE_KEY]
        if self.feature_dicts is not None:   # the feature-dict attributes' names
            meta[DICTS_KEY] = self.feature_dicts.to_json()
        save_model(path, model, self.weights, meta)

    @classmethod
    def load(cls, path: str | Path, jobs: int | None = None) -> "CRF":
        """Read a model file written by ``save``."""
        model, weights, meta = load_model(path)
        crf = cls(model.spec, jobs=jobs)
        if DICTS_KEY in meta:
            crf.feature_dicts = FeatureDictSpec.from_json(meta.pop(DICTS_KEY), str(path),
                                                          [c.name for c in model.spec.columns])
        crf.model, crf.weights, crf.training_meta = model, weights, meta
        crf.path = str(path)
        return crf

    # ------------------------------------------------------------ looking inside

    def inspect(self, top: int = 10, template: str | None = None) -> dict:
        """The model's weights by template (the strongest ``top`` per
        template, or a label matrix for a two-label template without
        observations) and its training metadata, as plain data
        (``fgl.report.inspect``; ``fgl inspect MODEL`` prints it)."""
        return inspection(self._fitted(), self.weights, self._training_meta(), top, template,
                          self.attribute_name)

    @property
    def state_features_(self) -> dict[tuple[str, str], float]:
        """{(attribute, label): weight} of the one-label templates with
        observations (sklearn-crfsuite's meaning); a feature-dict model
        names the attributes as python-crfsuite does (``word.lower():the``)."""
        return state_features(self._fitted(), self.weights, self.attribute_name)

    @property
    def attribute_name(self) -> Callable[[str], str] | None:
        """How attributes are shown: by their feature-dict names, if any."""
        return None if self.feature_dicts is None else self.feature_dicts.attribute_name

    @property
    def transition_features_(self) -> dict[tuple[str, str], float]:
        """{(label from, label to): weight} of the two-label templates
        without observations (sklearn-crfsuite's meaning)."""
        return transition_features(self._fitted(), self.weights)

    def _training_meta(self) -> dict:
        """What training left: the log's summary, or the loaded file's
        (without its curve: ``report`` draws that)."""
        if self.training_log is not None:
            return self.training_log.summary(self.settings.trainer)
        return {k: v for k, v in self.training_meta.items() if k != CURVE_KEY}

    def report(self, data: str | Path | Sequence[str | Path] | None = None, *,
               encoding: str = "utf-8", short_lines: str = "error", **options: Any) -> Any:
        """A report of this trained model (``fgl.report.model_report.ModelReport``: one
        self-contained HTML page; ``.save("r.html")``, shown by a notebook):
        the spec, the engine and why, the training curve, the strongest
        weights; with labelled ``data`` (a file, glob or list) the
        evaluation, the confusion matrix and an instance browser.
        ``options``: ``fgl.report.model_report.build_report``'s (``first``, ``worst``,
        ``scheme``)."""
        from fgl.report.model_report import build_report

        sentences = None if data is None else self.read(data, encoding, short_lines)
        return build_report(self, sentences, **options)
