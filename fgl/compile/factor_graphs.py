"""Compiling general CRFs (Sutton & McCallum §1.4, §1.5) into factor graphs.

Any spec whose cliques are not a contiguous window of one chain — skip-edge
pair templates, tuples across several label layers, hidden layers, graph
input — compiles here.  Per *instance* (a sentence; a document when a pair
template says ``within document``; a graph from JSON lines) the compiler
lays out the label variables (one per layer and position or node), unrolls
every clique template into factors (Sutton & McCallum eq. 1.41: the template's
weights are tied across its factors), and builds the instance's
``FactorGraph`` once; training reuses it every iteration.

A template's *configurations* are the label tuples of its factor (row-major,
first variable slowest); its features pair an attribute with a
configuration (Sutton & McCallum eq. 1.54), restricted to configurations seen in
training (``support observed``, the default for templates with observations
over observed layers) or all of them.
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fgl.lang import ast
from fgl.compile.sequence import DEFAULT_SIGMA, _loc_error, _settings, train_settings
from fgl.errors import DataError
from fgl.engines.factor_graph import FactorGraph
from fgl.io.conll import Sentence
from fgl.engines.loopy_program import LoopyData, LoopyProgram
from fgl.features.observations import ObservationCompiler, TemplateAttributes, sentence_columns

MAX_CONFIGS = 100_000


@dataclass
class Layer:
    """A label layer: an output column or a hidden layer."""

    name: str
    labels: list[str]
    hidden: bool


@dataclass
class LoopyTemplate:
    """One clique template after compilation."""

    name: str
    layers: list[int]                # layer of each variable of its factors
    configs: list[tuple[int, ...]]   # the configurations that carry weights
    sigma: float
    support: str
    has_observations: bool

    @property
    def width(self) -> int:
        return len(self.layers)

    @property
    def patterns(self) -> list[tuple[int, ...]]:  # the name the model file uses
        return self.configs


@dataclass
class Instance:
    """The sentences (or graph) one factor graph covers, with its columns
    concatenated; ``bounds`` are each sentence's token offsets."""

    sentences: list[Sentence]
    bounds: list[int]
    cols: dict[str, list]
    gold: dict[str, list[str]] | None

    @property
    def size(self) -> int:
        return self.bounds[-1]


def _infer_settings(spec: ast.Spec) -> tuple[str, dict]:
    method = spec.infer_method[0] if spec.infer_method else "loopy"
    return method, _settings(spec.infer)


@dataclass
class Unroller:
    """Lays out each instance's label variables (layer-major: one per layer
    and position or node) and unrolls every clique template into factors
    (Sutton & McCallum eq. 1.41), evaluating their observations."""

    spec: ast.Spec
    layers: list[Layer]
    attributes: TemplateAttributes = field(repr=False)
    obs: ObservationCompiler = field(repr=False)

    @classmethod
    def for_spec(cls, spec: ast.Spec, base_dir: Path, layers: list[Layer],
                 lexicons: dict[str, frozenset[str]] | None = None) -> "Unroller":
        attributes = TemplateAttributes(spec, base_dir, lexicons)
        return cls(spec, layers, attributes, ObservationCompiler(spec, base_dir,
                                                                 attributes.lexicons))

    def instances(self, sentences: list[Sentence], with_gold: bool) -> list[Instance]:
        """Group sentences into instances and concatenate their columns."""
        by_doc = any(t.within == "document" for t in self.spec.templates)
        groups: list[list[Sentence]] = []
        for sent in sentences:
            if by_doc and groups and groups[-1][-1].doc == sent.doc:
                groups[-1].append(sent)
            else:
                groups.append([sent])
        outputs = self.spec.outputs
        out = []
        for group in groups:
            cols: dict[str, list] = defaultdict(list)
            bounds, gold_ok = [0], True
            for sent in group:
                c, g = sentence_columns(self.spec, sent.rows, sent.lines, sent.file)
                gold_ok &= g is not None
                for k, v in c.items():
                    cols[k].extend(v)
                bounds.append(bounds[-1] + len(sent.rows))
            if with_gold and not gold_ok:
                sent = group[0]
                raise DataError(f"this data has no label column(s) {', '.join(outputs)}",
                                sent.file, sent.lines[0])
            gold = {o: cols[o] for o in outputs} if gold_ok else None
            out.append(Instance(group, bounds, dict(cols), gold))
        return out

    def var_index(self, inst: Instance) -> tuple[np.ndarray, int]:
        """Variable id of (layer, position): layer-major."""
        n = inst.size
        return np.arange(len(self.layers) * n).reshape(len(self.layers), n), n

    def factors(self, inst: Instance) -> list[tuple[int, list[int], list[tuple[str, float]]]]:
        """Every factor of an instance: (template, variables, attributes)."""
        var, n = self.var_index(inst)
        out = []
        for ti, tpl in enumerate(self.spec.templates):
            refs = _variables(tpl)
            layer_of = [self.layer_index[var] for var, _, _ in refs]
            if all(index == "t" for _, _, index in refs):
                for a, b in zip(inst.bounds, inst.bounds[1:]):
                    sent_cols = {k: v[a:b] for k, v in inst.cols.items()}
                    attrs = self.attributes.evaluate(ti, sent_cols, b - a, None)
                    for t in range(b - a):
                        pos = [t + off for _, off, _ in refs]
                        if min(pos) < 0 or max(pos) >= b - a:
                            continue
                        out.append((ti, [int(var[l, a + p]) for l, p in zip(layer_of, pos)],
                                    attrs[t]))
                continue
            spans = self._pairs(tpl, inst)
            attrs = self.attributes.evaluate(ti, inst.cols, n, spans)
            for (i, j), items in zip(spans, attrs):
                ends = [i if index in ("i", "a") else j for _, _, index in refs]
                out.append((ti, [int(var[l, p]) for l, p in zip(layer_of, ends)], items))
        return out

    def _pairs(self, tpl: ast.Template, inst: Instance) -> list[tuple[int, int]]:
        """The (i, j) pairs — or (a, a) nodes, (a, b) edges — a template links."""
        n = inst.size
        if len(tpl.labels) == 1:  # a node template in a graph model
            return [(a, a) for a in range(n)]
        where = tpl.where
        edge = next((p for p in where if p.kind == "edge"), None)
        if edge is not None:
            graph = inst.sentences[0]
            cands = sorted({(s, t) for s, t, kind in graph.edges if kind == edge.value})
        else:
            eq = next((p for p in where if p.kind == "eq"), None)
            limit = next((int(p.value) for p in where if p.kind == "distance"), n)
            if eq is not None:
                left = self.obs.compile(eq.left)(inst.cols, n, [(p, p) for p in range(n)])
                right = self.obs.compile(eq.right)(inst.cols, n, [(p, p) for p in range(n)])
                at: dict[str, list[int]] = defaultdict(list)
                for i, items in enumerate(left):
                    for key in {tx for _, tx, _ in items}:
                        at[key].append(i)
                cands = sorted({(i, j) for j, items in enumerate(right)
                                for key in {tx for _, tx, _ in items}
                                for i in at.get(key, ()) if 0 < j - i <= limit})
            else:
                cands = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + limit + 1))]
        for pred in where:
            if pred.kind in ("edge", "distance") or not cands:
                continue
            keep = self._holds(pred, inst, cands)
            cands = [c for c, ok in zip(cands, keep) if ok]
        return cands

    def _holds(self, pred: ast.Predicate, inst: Instance, spans: list[tuple[int, int]]) -> list[bool]:
        n = inst.size
        left = self.obs.compile(pred.left)(inst.cols, n, spans)
        if pred.kind == "test":
            return [bool(items) for items in left]
        right = self.obs.compile(pred.right)(inst.cols, n, spans)
        same = [bool({tx for _, tx, _ in a} & {tx for _, tx, _ in b}) for a, b in zip(left, right)]
        return same if pred.kind == "eq" else [not s for s in same]

    @property
    def layer_index(self) -> dict[str, int]:
        index = {l.name: k for k, l in enumerate(self.layers)}
        if len(self.spec.outputs) == 1:
            index["y"] = 0
        return index



@dataclass
class LoopyModel:
    """Everything needed to score, train and tag a general CRF."""

    spec: ast.Spec
    base_dir: Path
    layers: list[Layer]
    templates: list[LoopyTemplate]
    vocabs: list[dict[str, int]]
    program: LoopyProgram
    feat_sigma: np.ndarray
    unroller: Unroller = field(repr=False)

    # the names the rest of fgl (API, model files) expects of a model
    @property
    def labels(self) -> list[str]:
        return self.layers[0].labels

    @property
    def attributes(self) -> TemplateAttributes:
        return self.unroller.attributes

    @classmethod
    def assemble(cls, spec: ast.Spec, base_dir: Path, layers: list[Layer],
                 templates: list[LoopyTemplate], vocabs: list[dict[str, int]],
                 row_ptr: np.ndarray, feat_config: np.ndarray,
                 lexicons: dict[str, frozenset[str]] | None = None) -> "LoopyModel":
        row_sigma = np.empty(len(row_ptr) - 1)
        row_template = np.empty(len(row_ptr) - 1, dtype=np.int64)
        for ti, (plan, vocab) in enumerate(zip(templates, vocabs)):
            row_sigma[list(vocab.values())] = plan.sigma
            row_template[list(vocab.values())] = ti
        cards = [int(np.prod([len(layers[l].labels) for l in t.layers])) for t in templates]
        method, settings = _infer_settings(spec)
        program = LoopyProgram(row_ptr, feat_config, row_template, np.array(cards, dtype=np.int64),
                               method, settings, any(layer.hidden for layer in layers))
        return cls(spec, base_dir, layers, templates, vocabs, program,
                   np.repeat(row_sigma, np.diff(row_ptr)),
                   Unroller.for_spec(spec, base_dir, layers, lexicons))

    def initial_weights(self, seed: int = 0) -> np.ndarray:
        """Zero weights, except small random ones (N(0, 0.1²), fixed seed) on
        templates touching a hidden layer: at zero the hidden values are
        interchangeable and the gradient keeps them so (Sutton & McCallum §1.4.3:
        the marginal likelihood is not concave and needs a starting point)."""
        w = np.zeros(self.program.n_features)
        hidden = [ti for ti, t in enumerate(self.templates)
                  if any(self.layers[l].hidden for l in t.layers)]
        if hidden:
            feat_tpl = np.repeat(self.program.row_template, np.diff(self.program.row_ptr))
            mask = np.isin(feat_tpl, hidden)
            w[mask] = np.random.default_rng(seed).normal(0.0, 0.1, int(mask.sum()))
        return w

    # ------------------------------------------------------------ encoding

    def encode(self, sentences: list[Sentence], with_gold: bool = False) -> LoopyData:
        return self.encode_instances(self.unroller.instances(sentences, with_gold), with_gold)

    def encode_instances(self, instances: list[Instance], with_gold: bool,
                         unrolled: list | None = None) -> LoopyData:
        """Factor graphs and factor attribute rows of the instances
        (``unrolled``: their factors, when the caller has them already)."""
        graphs, fac_ptr, rows, vals, fac_tpl, gold, inst_fptr = [], [0], [], [], [], [], [0]
        for k, inst in enumerate(instances):
            factors = unrolled[k] if unrolled is not None else self.unroller.factors(inst)
            var, n = self.unroller.var_index(inst)
            card = [len(self.layers[k].labels) for k in range(len(self.layers)) for _ in range(n)]
            graphs.append(FactorGraph.from_factors(card, [f[1] for f in factors]))
            for ti, _, items in factors:
                vocab = self.vocabs[ti]
                for key, v in items:
                    r = vocab.get(key)
                    if r is not None:
                        rows.append(r)
                        vals.append(v)
                fac_ptr.append(len(rows))
                fac_tpl.append(ti)
            inst_fptr.append(inst_fptr[-1] + len(factors))
            g = np.full(len(self.layers) * n, -1, dtype=np.int64)
            if with_gold and inst.gold is not None:
                for k, layer in enumerate(self.layers):
                    if layer.hidden:
                        continue
                    index = {y: i for i, y in enumerate(layer.labels)}
                    for p, y in enumerate(inst.gold[layer.name]):
                        if y not in index:
                            sent = _sentence_at(inst, p)
                            raise DataError(f"unknown label '{y}'; the model knows: "
                                            f"{', '.join(layer.labels)}", sent[0].file,
                                            sent[0].lines[sent[1]])
                        g[var[k, p]] = index[y]
            gold.append(g)
        return LoopyData(graphs, np.array(inst_fptr, dtype=np.int64),
                         np.array(fac_ptr, dtype=np.int64), np.array(rows, dtype=np.int64),
                         np.array(vals, dtype=np.float64), np.array(fac_tpl, dtype=np.int64),
                         gold, [i.size for i in instances], instances)

    # ------------------------------------------------------------ output

    def split_predictions(self, data: LoopyData, assignments: list[np.ndarray]
                          ) -> list[list[str] | list[tuple[str, ...]]]:
        """Per sentence, the predicted labels of the output layers (a tuple
        per token when there are several outputs)."""
        outs = [k for k, l in enumerate(self.layers) if not l.hidden]
        result = []
        for inst, x, n in zip(data.instances, assignments, data.sizes):
            x = x.reshape(len(self.layers), n)
            for a, b in zip(inst.bounds, inst.bounds[1:]):
                per_layer = [[self.layers[k].labels[i] for i in x[k, a:b]] for k in outs]
                result.append(per_layer[0] if len(outs) == 1 else list(zip(*per_layer)))
        return result

    def explain(self, data: LoopyData | None = None) -> str:
        method, settings = _infer_settings(self.spec)
        knobs = ", ".join(f"{k} = {v}" for k, v in settings.items())
        lines = [
            f"engine: {'exact enumeration' if method == 'exact' else 'loopy belief propagation'}"
            f"{' with the TRP schedule' if method == 'trp' else ''} over a factor graph per instance"
            " (Sutton & McCallum §1.4.4, §1.5)",
            "  why: some template is not a contiguous label window of one chain"
            " (pair/skip edges, several layers, hidden variables or graph input)",
            f"inference: {method}" + (f" ({knobs})" if knobs else ""),
            "layers: " + "; ".join(f"{l.name}{' (hidden)' if l.hidden else ''}: n = "
                                   f"{len(l.labels)}" for l in self.layers),
            f"features: {self.program.n_features}",
            "templates:",
        ]
        for tpl, vocab in zip(self.templates, self.vocabs):
            lines.append(f"  {tpl.name}: {tpl.width} variables, {len(tpl.configs)} "
                         f"configurations, {len(vocab)} attributes, sigma {tpl.sigma:g}")
        if data is not None:
            F = sum(g.n_factors for g in data.graphs)
            E = sum(g.n_edges for g in data.graphs)
            V = sum(g.n_vars for g in data.graphs)
            cyc = sum(g.n_cycles() for g in data.graphs)
            trees = sum(len(g.spanning_trees()) for g in data.graphs) if method == "trp" else 0
            lines.append(f"instances: {len(data.graphs)}; variables {V}, factors {F}, "
                         f"edges {E}, independent cycles {cyc}"
                         + (f", TRP trees {trees}" if method == "trp" else ""))
        return "\n".join(lines)


def _variables(tpl: ast.Template) -> list[tuple[str, int, str]]:
    """The template's variables as (layer, offset, index), oldest first:
    ``y[t-1..t]`` is two variables, ``(y[i], y[j])`` two."""
    return [(r.var, off, r.index) for r in tpl.labels for off in range(r.lo, r.hi + 1)]


def _sentence_at(inst: Instance, p: int) -> tuple[Sentence, int]:
    for s, (a, b) in enumerate(zip(inst.bounds, inst.bounds[1:])):
        if a <= p < b:
            return inst.sentences[s], p - a
    raise IndexError(p)


def needs_loopy(spec: ast.Spec) -> bool:
    """True when some clique is not a contiguous window of one chain."""
    if spec.hidden or spec.input_format == "graph" or len(spec.outputs) > 1:
        return True
    return spec.segments is None and any(
        tpl.where or any(r.index != "t" or r.var != tpl.labels[0].var for r in tpl.labels)
        for tpl in spec.templates)


def _layers(spec: ast.Spec, instances: list[Instance]) -> list[Layer]:
    layers = []
    for name in spec.outputs:
        declared = spec.label_sets.get(name)
        labels = list(declared[0]) if declared else sorted(
            {y for inst in instances for y in inst.gold[name]})
        layers.append(Layer(name, labels, False))
    layers += [Layer(h.name, list(h.labels), True) for h in spec.hidden]
    return layers


def compile_loopy_model(spec: ast.Spec, sentences: list[Sentence], base_dir: Path | None = None,
                        overrides: dict[str, object] | None = None, source: str = "<train>",
                        ) -> tuple[LoopyModel, LoopyData]:
    """Compile a general CRF against training data."""
    if not sentences:
        raise DataError("the training data has no sequences", source, 0)
    base_dir = base_dir or Path(".")
    settings = {**train_settings(spec), **(overrides or {})}
    sigma = float(settings.get("sigma", DEFAULT_SIGMA))
    unroller = Unroller.for_spec(spec, base_dir, [])
    instances = unroller.instances(sentences, with_gold=True)
    layers = unroller.layers = _layers(spec, instances)
    index = unroller.layer_index

    unrolled = [unroller.factors(inst) for inst in instances]
    golds = []
    for inst in instances:
        _, n = unroller.var_index(inst)
        g = np.full(len(layers) * n, -1, dtype=np.int64)
        for k, layer in enumerate(layers):
            if not layer.hidden:
                lab = {y: i for i, y in enumerate(layer.labels)}
                for p, y in enumerate(inst.gold[layer.name]):
                    if y not in lab:
                        sent, t = _sentence_at(inst, p)
                        raise DataError(f"label '{y}' is not among the declared labels: "
                                        f"{', '.join(layer.labels)}", sent.file, sent.lines[t])
                    g[k * n + p] = lab[y]
        golds.append(g)

    templates: list[LoopyTemplate] = []
    for ti, tpl in enumerate(spec.templates):
        tl = [index[var] for var, _, _ in _variables(tpl)]
        cards = [len(layers[l].labels) for l in tl]
        observed = not any(layers[l].hidden for l in tl)
        seen = sorted({tuple(int(g[v]) for v in vs) for inst_f, g in zip(unrolled, golds)
                       for t, vs, _ in inst_f if t == ti}) if observed else []
        kind = tpl.patterns.kind if tpl.patterns else None
        if kind == "list":
            configs = []
            for pat in tpl.patterns.patterns:
                if len(pat) != len(tl):
                    raise _loc_error(f"pattern {' '.join(pat)} has {len(pat)} labels; template "
                                     f"'{tpl.name}' has {len(tl)} variables",
                                     getattr(pat, "loc", tpl.patterns.loc))
                try:
                    configs.append(tuple(layers[l].labels.index(y) for l, y in zip(tl, pat)))
                except ValueError:
                    raise _loc_error(f"unknown label in pattern {' '.join(pat)} of template "
                                     f"'{tpl.name}'", getattr(pat, "loc", tpl.patterns.loc)) from None
        elif kind in ("observed", "observed_upto") and observed:
            configs = seen
        else:
            total = int(np.prod(cards))
            if total > MAX_CONFIGS:
                raise _loc_error(f"template '{tpl.name}' has {total} label configurations; "
                                 "use 'patterns observed' or fewer variables", tpl.loc)
            configs = list(itertools.product(*(range(c) for c in cards)))
        opts = _settings(tpl.options)
        support = str(opts.get("support", "observed" if tpl.observations and observed else "all"))
        templates.append(LoopyTemplate(tpl.name, tl, configs, float(opts.get("sigma", sigma)),
                                       support, bool(tpl.observations)))

    # features: (attribute row, configuration) pairs
    vocabs: list[dict[str, int]] = [{} for _ in templates]
    row_configs: list[set[int]] = []
    row_tpl: list[int] = []
    strides = []
    for tpl in templates:
        cards = [len(layers[l].labels) for l in tpl.layers]
        strides.append([int(np.prod(cards[k + 1:])) for k in range(len(cards))])
    config_sets = [{sum(c * s for c, s in zip(conf, st)) for conf in tpl.configs}
                   for tpl, st in zip(templates, strides)]
    for inst_f, g in zip(unrolled, golds):
        for ti, vs, items in inst_f:
            tpl = templates[ti]
            gold_cfg = None
            if tpl.support == "observed":
                gold_cfg = sum(int(g[v]) * s for v, s in zip(vs, strides[ti]))
                if gold_cfg not in config_sets[ti]:
                    gold_cfg = None
            for key, _ in items:
                r = vocabs[ti].get(key)
                if r is None:
                    r = vocabs[ti][key] = len(row_configs)
                    row_configs.append(set())
                    row_tpl.append(ti)
                if gold_cfg is not None:
                    row_configs[r].add(gold_cfg)
    for r, ti in enumerate(row_tpl):
        if templates[ti].support != "observed":
            row_configs[r] = set(config_sets[ti])
    row_ptr = np.zeros(len(row_configs) + 1, dtype=np.int64)
    row_ptr[1:] = np.cumsum([len(c) for c in row_configs])
    feat_config = np.fromiter((c for cs in row_configs for c in sorted(cs)), dtype=np.int64,
                              count=int(row_ptr[-1]))
    model = LoopyModel.assemble(spec, base_dir, layers, templates, vocabs, row_ptr, feat_config,
                                unroller.attributes.lexicons)
    return model, model.encode_instances(instances, with_gold=True, unrolled=unrolled)
