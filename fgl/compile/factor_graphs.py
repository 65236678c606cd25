"""Compiling general CRFs (Sutton & McCallum §1.4, §1.5) into factor graphs.

Any spec whose cliques are not a contiguous window of one chain — skip-edge
pair templates, gapped tuples of one chain such as ``(y[t-2], y[t])``,
tuples across several label layers, hidden layers, graph input — compiles
here.  Per *instance* (a sentence; a document when a pair
template says ``within document``; a graph from JSON lines) the compiler
lays out the label variables and unrolls every clique template into
factors (``fgl.compile.unrolling``; Sutton & McCallum eq. 1.41: the
template's weights are tied across its factors), reads the templates'
configurations and features off the gold factors
(``fgl.compile.factor_features``), and builds the instance's
``FactorGraph`` once; training reuses it every iteration.

A partially labelled graph (some nodes' labels null: the within-network
setting of Sen et al. 2008) trains as a model with hidden variables does:
an unlabelled node's gold value is -1, so the learner's gold side is the
clamped program and the objective the marginal likelihood log Z(y_obs, x) -
log Z(x) (Sutton & McCallum §1.4.3); its labels, configurations and
features are read off the labelled nodes only.  Tagging such a graph clamps
the given labels as evidence (``FactorGraphData.evidence``) and predicts the rest.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar, Sequence

import numpy as np

from fgl.compile.factor_features import collect_factors, feature_rows, template_plans
from fgl.compile.footprint import Footprint, GraphCounts, factor_graph_footprint
from fgl.compile.frontend import (
    Layer,
    TemplatePlan,
    feature_sigma,
    row_templates,
    vocab_from_json,
    vocab_json,
    vocabularies,
)
from fgl.compile.graph_shards import collect_labels, graph_layers, template_layers
from fgl.compile.unrolling import (
    AttributeKeys,
    Instance,
    UnrolledFactors,
    Unroller,
    gold_assignment,
    group_instances,
)
from fgl.data.schemes import chunks
from fgl.data.sentence import Sentence
from fgl.engines.graph.clique_tree import junction_tree_plan
from fgl.engines.graph.factor_graph import FactorGraph
from fgl.engines.graph.factor_graph_program import FactorGraphData, FactorGraphProgram
from fgl.engines.graph.inference import inference_method
from fgl.engines.graph.inference.auto import AUTO_MAX_TABLE
from fgl.engines.graph.table_kernels import clamp
from fgl.engines.parallel import map_instances
from fgl.engines.sequence.encoded import unit_ones
from fgl.errors import DataError, FglError
from fgl.features.model_input import check_model_input
from fgl.lang import ast
from fgl.lang.settings import (
    InferSettings,
    TrainSettings,
    resolve_infer,
    resolve_train,
)
from fgl.model import Confidences, Predictions, SegmentConfidence, TokenMarginals


class FactorGraphModel:
    """A general CRF (Sutton & McCallum §1.4, §1.5): a factor graph per
    instance, run by the exact junction tree where its cliques are small
    (Koller & Friedman 2009 ch. 10), loopy belief propagation, TRP or
    enumeration (``fgl.engines.graph.factor_graph_program``); the ``fgl.model.Model``
    interface."""

    engine: ClassVar[str] = "factor graph"

    def __init__(self, spec: ast.Spec, base_dir: Path, layers: list[Layer],
                 templates: list[TemplatePlan], vocabs: list[dict[str, int]],
                 row_ptr: np.ndarray, feat_config: np.ndarray,
                 lexicons: dict[str, frozenset[str]] | None = None):
        self.spec, self.base_dir, self.layers = spec, base_dir, layers
        self.templates, self.vocabs = templates, vocabularies(vocabs)
        self.feat_sigma = feature_sigma(templates, self.vocabs, row_ptr)
        cards = [int(np.prod([len(layers[li].labels) for li in t.layers])) for t in templates]
        settings = resolve_infer(spec)
        self.program = FactorGraphProgram(row_ptr, feat_config,
                                          row_templates(self.vocabs, len(row_ptr) - 1),
                                          np.array(cards, dtype=np.int64), settings.method,
                                          settings,
                                          any(layer.hidden for layer in layers))
        self.unroller = Unroller.for_spec(spec, base_dir, layers, lexicons)

    @property
    def lexicons(self) -> dict[str, frozenset[str]]:
        return self.unroller.attributes.lexicons

    def initial_weights(self, seed: int = 0) -> np.ndarray:
        """Zero weights, except small random ones (N(0, 0.1²), fixed seed) on
        templates touching a hidden layer: at zero the hidden values are
        interchangeable and the gradient keeps them so (Sutton & McCallum
        §1.4.3: the marginal likelihood is not concave and needs a starting
        point)."""
        w = np.zeros(self.program.n_features)
        hidden = [ti for ti, t in enumerate(self.templates)
                  if any(self.layers[li].hidden for li in t.layers)]
        if hidden:
            feat_tpl = np.repeat(self.program.row_template, np.diff(self.program.row_ptr))
            mask = np.isin(feat_tpl, hidden)
            w[mask] = np.random.default_rng(seed).normal(0.0, 0.1, int(mask.sum()))
        return w

    # ------------------------------------------------------------ encoding

    def encode(self, sentences: Sequence[Sentence], with_gold: bool = False,
               jobs: int | None = None) -> FactorGraphData:
        """Unroll and encode sentences; refused, before unrolling, when
        inference over them on ``jobs`` threads (None: the spec's) would
        exceed the memory budget.  The given
        labels of a partially labelled graph are its ``evidence``, which
        decoding and marginals clamp (a label the model does not know is a
        DataError at its line)."""
        check_model_input(self, sentences, with_gold)   # (shaped as in training)
        instances = group_instances(self.spec, sentences, with_gold)
        _footprint(self.spec, self.layers, [t.layers for t in self.templates],
                   self.unroller.census(instances), self._features_per_template(),
                   len(self.program.row_template),
                   resolve_train(self.spec).jobs if jobs is None else jobs, training=False
                   ).check(self.spec.templates)
        keys = AttributeKeys.empty(len(self.templates))
        data = self.encode_instances(instances, [self.unroller.unroll(inst, keys)
                                                 for inst in instances],
                                     [gold_assignment(inst, self.layers, False)
                                      if with_gold and inst.gold is not None
                                      else np.full(len(self.layers) * inst.size, -1,
                                                   dtype=np.int64)
                                      for inst in instances], keys)
        if any(inst.partial for inst in instances):   # given labels: evidence to clamp
            data.evidence = [gold_assignment(inst, self.layers, False) if inst.partial else None
                             for inst in instances]
        if self.program.inference.junction_tree:   # the clique tables, planned
            self.footprint(data, jobs, training=False).check(self.spec.templates)
        return data

    def encode_instances(self, instances: list[Instance], unrolled: list[UnrolledFactors],
                         golds: list[np.ndarray], keys: AttributeKeys) -> FactorGraphData:
        """Factor graphs and factor attribute rows of the ``instances``, given
        their factors (``Unroller.unroll``, numbering attribute keys by
        ``keys``) and gold assignments; keys the model has no row for are
        dropped."""
        key_row = np.full(len(keys.template), -1, dtype=np.int32)
        for vocab, known in zip(keys.vocabs, self.vocabs):
            if vocab:
                key_row[list(vocab.values())] = known.lookup(list(vocab))
        graphs, fac_ptr, rows, vals = [], [np.zeros(1, dtype=np.int64)], [], []
        for inst, u in zip(instances, unrolled):
            card = [len(layer.labels) for layer in self.layers for _ in range(inst.size)]
            graphs.append(FactorGraph.from_csr(card, u.var_ptr, u.var))
            row = key_row[u.key]
            known = row >= 0
            kept = np.zeros(known.size + 1, dtype=np.int64)   # kept among the first i items
            np.cumsum(known, out=kept[1:])
            fac_ptr.append(fac_ptr[-1][-1] + kept[u.item_ptr[1:]])
            rows.append(row[known])
            value = u.value[known]
            vals.append(None if (value == 1.0).all() else value)   # (None: all 1)
        n_factors = [len(u) for u in unrolled]
        inst_fptr = np.zeros(len(n_factors) + 1, dtype=np.int64)
        np.cumsum(n_factors, out=inst_fptr[1:])
        fac_val = unit_ones(sum(r.size for r in rows)) if all(v is None for v in vals) else \
            _concat([np.ones(r.size) if v is None else v for r, v in zip(rows, vals)], np.float64)
        return FactorGraphData(graphs, inst_fptr, np.concatenate(fac_ptr),
                               _concat(rows, np.int32), fac_val,
                               _concat([u.template for u in unrolled], np.int64),
                               golds, [i.size for i in instances], instances)

    # ------------------------------------------------------------ inference

    @property
    def _outputs(self) -> list[int]:
        return [k for k, layer in enumerate(self.layers) if not layer.hidden]

    def _per_sentence(self, data: FactorGraphData, per_instance: list, fn) -> list[list]:
        """``fn(layer-major values of instance i reshaped [layers, n], a, b)``
        for every output layer of every sentence [a, b) of every instance."""
        out = []
        for inst, values, n in zip(data.instances, per_instance, data.sizes):
            values = np.asarray(values).reshape((len(self.layers), n) + np.shape(values)[1:])
            for a, b in zip(inst.bounds, inst.bounds[1:]):
                out.append([fn(k, values[k, a:b]) for k in self._outputs])
        return out

    def decode(self, w: np.ndarray, data: FactorGraphData, jobs: int) -> Predictions:
        dec = self.program.decode(w, data, jobs)
        for state, ev in zip(dec.assignments, _evidence(data)):
            if ev is not None:   # (also a given node in no factor keeps its label)
                state[ev >= 0] = ev[ev >= 0]
        labels = self._per_sentence(data, dec.assignments,
                                    lambda k, ids: [self.layers[k].labels[i] for i in ids])
        return Predictions([self.layers[k].name for k in self._outputs], labels, dec.stats)

    def marginals(self, w: np.ndarray, data: FactorGraphData, jobs: int) -> TokenMarginals:
        m = self.program.marginals(w, data, jobs)
        beliefs = [_stack(b) for b in m.per_instance]
        for b, ev in zip(beliefs, _evidence(data)):
            if ev is not None:   # a given label has probability 1
                given = np.flatnonzero(ev >= 0)
                b[given] = 0.0
                b[given, ev[given]] = 1.0
        probs = self._per_sentence(data, beliefs,
                                   lambda k, p: p[:, :len(self.layers[k].labels)].copy())
        outs = [self.layers[k] for k in self._outputs]
        return TokenMarginals([o.name for o in outs], [o.labels for o in outs], probs, m.stats)

    def log_partition(self, w: np.ndarray, data: FactorGraphData, jobs: int) -> np.ndarray:
        return self.program.log_partition(w, data, jobs)

    def nbest(self, w: np.ndarray, data: FactorGraphData, k: int) -> list:
        """Refused: k-best labellings and sequence probabilities are exact
        only on the chain and segment engines."""
        raise FglError("n-best labellings and labelling probabilities need the chain or "
                       "segment engine (exact dynamic programs over a sequence); this spec "
                       "runs on the factor-graph engine, whose MAP and log Z are approximate "
                       "where the graph has loops; use marginals (--marginals) or segment "
                       "confidences (--confidence) instead")

    def unlabelled(self, data: FactorGraphData) -> int:
        """Output-layer variables of ``data`` without a gold label (the
        unlabelled nodes of partially labelled graphs, counted per layer)."""
        out = 0
        for g, n in zip(data.gold, data.sizes):
            for k in self._outputs:
                out += int((g[k * n:(k + 1) * n] < 0).sum())
        return out

    def segment_confidences(self, w: np.ndarray, data: FactorGraphData, jobs: int,
                                tags: list[list[list[str]]], schemes: list[str],
                                ignore: tuple[str, ...]) -> Confidences:
        """Chunks of every output layer's tags, clamped as evidence: log Z of
        the clamped instance minus log Z, by the spec's inference (exact by
        junction tree, else the Bethe approximation)."""
        program = self.program
        outputs = [k for k, layer in enumerate(self.layers) if not layer.hidden]
        first_sentence = np.cumsum([0] + [len(inst.sentences) for inst in data.instances])

        def instance(i: int) -> list[list[list[SegmentConfidence]]]:
            g, inst, n = data.graphs[i], data.instances[i], data.sizes[i]
            table = program.factor_tables(w, data, i)
            log_z = program.infer(g, table).log_z
            result = []
            for a, per_layer in zip(inst.bounds, tags[first_sentence[i]:first_sentence[i + 1]]):
                layers = []
                for k, scheme, seq in zip(outputs, schemes, per_layer):
                    label_ids = {y: c for c, y in enumerate(self.layers[k].labels)}
                    segs = []
                    for y, u, v in chunks(seq, scheme, ignore):
                        evidence = np.full(g.n_vars, -1, dtype=np.int64)
                        for t in range(u, v):
                            evidence[k * n + a + t] = label_ids[seq[t]]
                        clamped = table.copy()
                        clamp(g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_stride, evidence, clamped)
                        c = np.exp(program.infer(g, clamped).log_z - log_z)
                        segs.append(SegmentConfidence(u, v, y, float(min(c, 1.0))))
                    layers.append(segs)
                result.append(layers)
            return result

        return [per for inst in map_instances(jobs, data.n_sequences, instance) for per in inst]

    def _features_per_template(self) -> list[int]:
        return np.bincount(self.program.row_template, weights=np.diff(self.program.row_ptr),
                           minlength=len(self.templates)).astype(np.int64).tolist()

    def footprint(self, data: FactorGraphData, jobs: int | None = None,
                  training: bool = True) -> Footprint:
        """The memory training on ``data`` takes (``training`` False: running
        the model over it), from its factor graphs and (``infer auto`` /
        ``junction_tree``) their junction-tree plans, which are made here and
        kept on the graphs for training or inference."""
        N, T = data.n_sequences, len(self.templates)
        inst = np.repeat(np.arange(N), np.diff(data.inst_fptr))
        factors = np.bincount(inst * T + data.fac_tpl, minlength=N * T).reshape(N, T)
        items = (np.bincount(data.fac_tpl, weights=np.diff(data.fac_ptr), minlength=T)
                 / np.maximum(factors.sum(axis=0), 1))
        cliques = None
        if self.program.inference.junction_tree:
            plans = [self.program.junction_tree_plan(g) for g in data.graphs]
            cliques = np.array([p.total_table if p else 0 for p in plans], dtype=np.int64)
        counts = GraphCounts(factors, np.array(data.sizes, dtype=np.int64), items, cliques)
        if jobs is None:
            jobs = resolve_train(self.spec).jobs
        return _footprint(self.spec, self.layers, [t.layers for t in self.templates], counts,
                          self._features_per_template(), len(self.program.row_template), jobs,
                          training)

    def pattern_labels(self, template: int, pattern: int) -> tuple[str, ...]:
        """The labels of configuration ``pattern`` of ``template``'s table
        (row-major over its variables, the first slowest)."""
        out = []
        for li in reversed(self.templates[template].layers):
            labels = self.layers[li].labels
            pattern, y = divmod(pattern, len(labels))
            out.append(labels[y])
        return tuple(reversed(out))

    def describe(self, data: FactorGraphData | None = None) -> list[str]:
        method, settings = self.program.method, self.program.settings
        knobs = ", ".join(f"{k} = {v}" for k, v in settings.items())
        lines = [
            f"inference: {method}" + (f" ({knobs})" if knobs else ""),
            "layers: " + "; ".join(f"{layer.name}{' (hidden)' if layer.hidden else ''}: n = "
                                   f"{len(layer.labels)}" for layer in self.layers),
            f"features: {self.program.n_features}",
            "templates:",
        ]
        factors = np.bincount(data.fac_tpl, minlength=len(self.templates)) if data else None
        for ti, (tpl, vocab) in enumerate(zip(self.templates, self.vocabs)):
            lines.append(f"  {tpl.name}: {tpl.width} variables, {len(tpl.patterns)} "
                         f"configurations, {len(vocab)} attributes, sigma {tpl.sigma:g}"
                         + (f", min_count {tpl.min_count}" if tpl.min_count > 1 else "")
                         + (f", {factors[ti]} factors in the data" if data else ""))
        if data is not None:
            F = sum(g.n_factors for g in data.graphs)
            E = sum(g.n_edges for g in data.graphs)
            V = sum(g.n_vars for g in data.graphs)
            cyc = sum(g.n_cycles() for g in data.graphs)
            free = self.unlabelled(data) if self.program.has_hidden else 0
            lines.append(f"training data: {data.n_sequences} instances, {data.n_tokens} "
                         "positions" + (f", {free} unlabelled (marginalised: the marginal "
                                        "likelihood, Sutton & McCallum §1.4.3)" if free else ""))
            lines.append(f"instances: {len(data.graphs)}; variables {V}, factors {F}, "
                         f"edges {E}, independent cycles {cyc}")
            lines += self.program.inference.describe(self.program, data.graphs)
            if cyc == 0 and data.graphs:
                lines.append("no instance has a cycle: every factor graph is a tree or forest, "
                             "on which belief propagation is exact, not loopy (Sutton & McCallum "
                             "§1.4.4)")
            big = max(range(len(data.graphs)), key=lambda i: data.graphs[i].n_vars, default=None)
            if big is not None:
                g = data.graphs[big]
                lines.append(f"largest instance: #{big}, {g.n_vars} variables, "
                             f"{g.n_factors} factors, {g.n_cycles()} independent cycles")
            lines += junction_tree_summary(settings, data.graphs)
            lines.append(self.footprint(data).line())
        return lines

    # ------------------------------------------------------------ model files
    # fgl.model's file methods, as in SequenceModel: the same shape over other fields

    def header(self) -> dict:
        return {"layers": [{"name": layer.name, "labels": layer.labels, "hidden": layer.hidden}
                           for layer in self.layers],
                "templates": [t.to_json() for t in self.templates],
                "vocabs": vocab_json(self.vocabs)}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"row_ptr": self.program.row_ptr, "feat_pattern": self.program.feat_config}

    @classmethod
    def from_header(cls, spec: ast.Spec, base_dir: Path, header: dict,
                    arrays: dict[str, np.ndarray]) -> "FactorGraphModel":
        layers = [Layer(str(d["name"]), [str(y) for y in d["labels"]], bool(d["hidden"]))
                  for d in header["layers"]]
        return cls(spec, base_dir, layers, [TemplatePlan.from_json(t) for t in header["templates"]],
                   vocab_from_json(header["vocabs"]), arrays["row_ptr"], arrays["feat_pattern"],
                   header["lexicons"])

    # ------------------------------------------------------------ compiling

    @classmethod
    def compile(cls, spec: ast.Spec, sentences: Sequence[Sentence], base_dir: Path | None = None,
                settings: TrainSettings | None = None, source: str = "<train>",
                ) -> tuple["FactorGraphModel", FactorGraphData]:
        """Compile a general CRF against training data: lay out and unroll
        every instance once, then read the templates' configurations and
        features off the gold assignments — the steps of
        ``fgl.compile.graph_shards`` over the one shard that is the whole
        data.  The model's memory is estimated before each large
        allocation — the factors, counted without unrolling them; the
        features, counted before they are made; the junction trees' clique
        tables, planned before training fills them — and a model over the
        budget is refused (``fgl.compile.footprint``)."""
        if callable(sentences):
            sentences = list(sentences())
        if not sentences:
            raise DataError("the training data has no sequences", source, 0)
        base_dir = base_dir or Path(".")
        instances = group_instances(spec, sentences, with_gold=True)
        layers = graph_layers(spec, collect_labels(spec, instances))   # (one shard: merged)
        unroller = Unroller.for_spec(spec, base_dir, layers)
        settings = settings or resolve_train(spec)
        jobs = settings.jobs
        var_layers = template_layers(spec, unroller)
        unroller.check_aggregate_edges(instances)
        counts = unroller.census(instances)
        _footprint(spec, layers, var_layers, counts, [0] * len(var_layers), 0, jobs
                   ).check(spec.templates)
        keys = AttributeKeys.empty(len(spec.templates))
        unrolled = [unroller.unroll(inst, keys) for inst in instances]
        golds = [gold_assignment(inst, layers, True) for inst in instances]
        found = collect_factors(layers, var_layers, unrolled, golds, keys, 0)
        templates = template_plans(spec, layers, unroller.layer_index, found.configs,
                                   settings.sigma, settings.min_count)
        rows = feature_rows(templates, layers, found.rows).cut(templates)
        del found
        _footprint(spec, layers, var_layers, counts, rows.counts(), len(rows.template), jobs
                   ).check(spec.templates)
        model = cls(spec, base_dir, layers, templates, rows.vocabs, *rows.arrays(),
                    unroller.attributes.lexicons)
        del rows   # (its per-row configuration sets, freed before encoding)
        data = model.encode_instances(instances, unrolled, golds, keys)
        if model.unlabelled(data):   # partially labelled graphs: unlabelled nodes are latent
            model.program.has_hidden = True
        del unrolled   # (freed before the junction trees are planned)
        model.footprint(data, jobs).check(spec.templates)  # with the junction trees' cliques
        return model, data


ADVICE = ("link fewer pairs (a stricter `where`, `and nearest`, a `distance`, `within "
          "sentence` rather than `within document`), use fewer labels, patterns or "
          "observations, or give a larger budget")


def _footprint(spec: ast.Spec, layers: list[Layer], var_layers: list[list[int]],
               counts: GraphCounts, features: list[int], attributes: int, jobs: int,
               training: bool = True) -> Footprint:
    """``factor_graph_footprint`` for templates over ``var_layers``."""
    cards = [[len(layers[li].labels) for li in vl] for vl in var_layers]
    tables = [math.prod(c) for c in cards]
    made = counts.factors.sum(axis=0)
    notes = [f"makes about {int(f):,} factors of {t:,} table entries"
             + (f" and {n:,} features" if n else "")
             for f, t, n in zip(made, tables, features)]
    return factor_graph_footprint(counts, [len(c) for c in cards], tables,
                                  [sum(c) for c in cards], [len(layer.labels) for layer in layers],
                                  features, attributes, notes, ADVICE,
                                  method=resolve_infer(spec).method,
                                  jobs=jobs, training=training)


def junction_tree_summary(settings: InferSettings, graphs: list[FactorGraph]) -> list[str]:
    """What the junction tree (Koller & Friedman 2009 ch. 10) makes of the
    instances: the treewidth and largest clique table found by min-fill
    elimination, and which instances run exactly and which by tree-reweighted BP."""
    method, limit = inference_method(settings.method), int(settings.max_table or AUTO_MAX_TABLE)
    plans = [junction_tree_plan(g, limit) for g in graphs]
    fit = [p for p in plans if p.fits(limit)]
    over = [p for p in plans if not p.fits(limit)]
    found = []
    if fit:
        ratio = max(p.total_table / max(g.n_table, 1) for p, g in zip(plans, graphs)
                    if p.fits(limit))
        found.append(f"treewidth {max(p.treewidth for p in fit)}, largest clique table "
                     f"{max(p.largest_table for p in fit)}, at most "
                     f"{max(p.total_table for p in fit)} clique-table entries per instance "
                     f"(up to {ratio:.3g}x its factor-table entries, the work of one BP pass)"
                     + (" where it fits" if over else ""))
    if over:
        worst = max(over, key=lambda p: (p.largest_table, p.treewidth))
        found.append(f"{len(over)} instance{'s' if len(over) > 1 else ''} over max_table "
                     f"(up to treewidth >= {worst.treewidth}, a clique table of "
                     f">= {worst.largest_table} entries)")
    lines = [f"junction tree (min-fill, max_table = {limit}): " + "; ".join(found)]
    n = len(plans)
    if method.junction_tree and method.run is not None:
        lines.append(f"runs: {len(fit)} of {n} instances exact by junction tree, "
                     f"{len(over)} by {method.fallback}")
    elif method.junction_tree:
        lines.append(f"runs: {len(fit)} of {n} instances exact by junction tree"
                     + (f"; {len(over)} too large (inference on them is an error: raise "
                        "max_table or drop the `infer` line)" if over else ""))
    elif all(g.is_tree() for g in graphs):
        lines.append(f"runs: every instance by `infer {method.name}`, exact here (no instance "
                     "has a cycle)")
    else:
        lines.append(f"runs: every instance by `infer {method.name}`; without the `infer` line "
                     f"{len(fit)} of {n} would run exactly by junction tree")
    return lines


def _evidence(data: FactorGraphData) -> list:
    """Per instance, the labels given as evidence (-1: free), or None."""
    return data.evidence if data.evidence is not None else [None] * data.n_sequences


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """``parts`` as one array of ``dtype`` (empty when there are none)."""
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _stack(beliefs: list[np.ndarray]) -> np.ndarray:
    """Per-variable belief vectors as one [variables, max card] array."""
    width = max((len(b) for b in beliefs), default=0)
    out = np.zeros((len(beliefs), width))
    for i, b in enumerate(beliefs):
        out[i, :len(b)] = b
    return out
