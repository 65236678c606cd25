"""Instances of a factor-graph model and their unrolled factors (Sutton &
McCallum §1.4.4, eq. 1.41).

An *instance* is what one factor graph covers: a sentence, a document when
a pair template says ``within document``, or a graph read from JSON lines.
``Unroller`` lays out its label variables (one per layer and position or
node) and unrolls every clique template into factors with their
attributes; the compile (``fgl.compile.factor_graphs``), its distributed
passes and drawings read instances through it.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from fgl.compile.aggregates import Aggregator, check_edge_types
from fgl.compile.footprint import GraphCounts
from fgl.compile.frontend import Layer, label_id
from fgl.compile.pairs import estimate_pairs, linked_pairs
from fgl.data.sentence import Sentence
from fgl.engines.sequence.encoded import unit_ones
from fgl.errors import DataError
from fgl.features.observations import ObservationCompiler, TemplateAttributes, sentence_columns
from fgl.lang import ast
from fgl.lang.aggregates import needs_documents

FACTOR_CHUNK = 128   # factors whose attribute lists live at once while unrolling
SAMPLE_FACTORS = 1000  # factors per template whose attributes Unroller.census reads


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

    @property
    def partial(self) -> bool:
        """Whether some gold labels are given and some are not (a partially
        labelled graph: the unlabelled ones are None)."""
        return self.gold is not None and any(y is None for ys in self.gold.values() for y in ys)

    @property
    def edges(self) -> list | None:
        """The typed edges (a, b, type) of a graph instance; None for sentences."""
        return getattr(self.sentences[0], "edges", None)

    def sentence_at(self, p: int) -> tuple[Sentence, int]:
        """The sentence holding position ``p`` and p's index in it."""
        for s, (a, b) in enumerate(zip(self.bounds, self.bounds[1:])):
            if a <= p < b:
                return self.sentences[s], p - a
        raise IndexError(p)


def group_instances(spec: ast.Spec, sentences: Sequence[Sentence], with_gold: bool
                    ) -> list[Instance]:
    """Group sentences into instances — one per sentence, or one per
    document when a template links pairs ``within document`` — and
    concatenate their columns."""
    by_doc = any(t.within == "document" for t in spec.templates) or needs_documents(spec)
    groups: list[list[Sentence]] = []
    for sent in sentences:
        if by_doc and groups and groups[-1][-1].doc == sent.doc:
            groups[-1].append(sent)
        else:
            groups.append([sent])
    out = []
    for group in groups:
        cols: dict[str, list] = defaultdict(list)
        bounds, gold_ok = [0], True
        for sent in group:
            c, g = sentence_columns(spec, sent.rows, sent.lines, sent.file)
            gold_ok &= g is not None
            for k, v in c.items():
                cols[k].extend(v)
            bounds.append(bounds[-1] + len(sent.rows))
        if with_gold and not gold_ok:
            sent = group[0]
            if hasattr(sent, "node_ids"):   # a graph
                raise DataError(f"this graph has no label: {', '.join(map(repr, spec.outputs))} "
                                f"{'is' if len(spec.outputs) == 1 else 'are'} null or missing "
                                "on every node; training needs labelled nodes",
                                sent.file, sent.lines[0])
            raise DataError(f"this data has no label column(s) {', '.join(spec.outputs)}",
                            sent.file, sent.lines[0])
        gold = {o: cols[o] for o in spec.outputs} if gold_ok else None
        out.append(Instance(group, bounds, dict(cols), gold))
    return out


@dataclass
class Unroller:
    """Lays out each instance's label variables (layer-major: one per layer
    and position or node) and unrolls every clique template into factors
    (Sutton & McCallum eq. 1.41), evaluating their observations."""

    spec: ast.Spec
    layers: list[Layer]
    attributes: TemplateAttributes = field(repr=False)
    obs: ObservationCompiler = field(repr=False)
    aggregator: Aggregator | None = field(default=None, repr=False)

    @classmethod
    def for_spec(cls, spec: ast.Spec, base_dir: Path, layers: list[Layer],
                 lexicons: dict[str, frozenset[str]] | None = None) -> "Unroller":
        """An unroller whose observations read lexicons relative to
        ``base_dir`` (or the given loaded ``lexicons``)."""
        attributes = TemplateAttributes(spec, base_dir, lexicons)
        return cls(spec, layers, attributes, ObservationCompiler(spec, base_dir,
                                                                 attributes.lexicons))

    def with_aggregates(self, inst: Instance) -> Instance:
        """``inst`` with its aggregates' columns (``fgl.compile.aggregates``)
        among its columns, computed on first need."""
        if self.aggregator is None:
            self.aggregator = Aggregator(self.spec, self.attributes.observations)
        self.aggregator.complete(inst.cols, inst.bounds, inst.edges)
        return inst

    def check_aggregate_edges(self, instances: list[Instance]) -> None:
        """Training graphs: every edge type an aggregate follows is there
        (``fgl.compile.aggregates.check_edge_types``)."""
        if self.spec.input_format == "graph":
            check_edge_types(self.spec, {t for inst in instances for _, _, t in inst.edges or ()})

    def var_index(self, inst: Instance) -> tuple[np.ndarray, int]:
        """Variable id of (layer, position): layer-major."""
        n = inst.size
        return np.arange(len(self.layers) * n).reshape(len(self.layers), n), n

    def factors(self, inst: Instance) -> list[tuple[int, list[int], list[tuple[str, float]]]]:
        """Every factor of an instance: (template, variables, attributes)."""
        return [f for chunk in self.factor_chunks(inst) for f in chunk]

    def factor_chunks(self, inst: Instance
                      ) -> Iterator[list[tuple[int, list[int], list[tuple[str, float]]]]]:
        """``factors(inst)`` a part at a time, in order: a sentence's factors
        of a chain template, up to ``FACTOR_CHUNK`` of a pair or node template."""
        inst = self.with_aggregates(inst)
        var, n = self.var_index(inst)
        for ti, tpl in enumerate(self.spec.templates):
            refs = variables(tpl)
            layer_of = [self.layer_index[var] for var, _, _ in refs]
            if all(index == "t" for _, _, index in refs):
                for a, b in zip(inst.bounds, inst.bounds[1:]):
                    sent_cols = {k: v[a:b] for k, v in inst.cols.items()}
                    attrs = self.attributes.evaluate(ti, sent_cols, b - a, None)
                    out = []
                    for t in range(b - a):
                        pos = [t + off for _, off, _ in refs]
                        if min(pos) < 0 or max(pos) >= b - a:
                            continue
                        out.append((ti, [int(var[li, a + p]) for li, p in zip(layer_of, pos)],
                                    attrs[t]))
                    yield out
                continue
            spans = self.pairs(tpl, inst)
            for lo in range(0, len(spans), FACTOR_CHUNK):
                part = spans[lo:lo + FACTOR_CHUNK]
                attrs = self.attributes.evaluate(ti, inst.cols, n, part)
                yield [(ti, [int(var[li, i if index in ("i", "a") else j])
                             for li, (_, _, index) in zip(layer_of, refs)], items)
                       for (i, j), items in zip(part, attrs)]

    def pairs(self, tpl: ast.Template, inst: Instance) -> list[tuple[int, int]]:
        """The pairs a pair (or graph) template links on ``inst``: within
        each of its sentences unless the template says ``within document``
        (an instance is a document when another template, or an aggregate,
        reads one)."""
        if tpl.within == "document" or inst.edges is not None or len(inst.bounds) == 2:
            return linked_pairs(tpl, inst.cols, inst.size, inst.edges, self.obs)
        out = []
        for a, b in zip(inst.bounds, inst.bounds[1:]):
            part = {k: v[a:b] for k, v in inst.cols.items()}
            out += [(i + a, j + a) for i, j in linked_pairs(tpl, part, b - a, None, self.obs)]
        return out

    def unroll(self, inst: Instance, keys: "AttributeKeys") -> "UnrolledFactors":
        """``factors(inst)`` in array form, its attribute keys numbered by
        ``keys``, a chunk at a time (``factor_chunks``): the Python lists of
        one chunk live only while it is turned into arrays (150 CoNLL-2002
        articles with skip cliques, 1.3 million attribute items: 198 MB as
        lists, 11 MB as arrays; tracemalloc)."""
        parts = [_chunk_arrays(chunk, keys) for chunk in self.factor_chunks(inst)]
        template, widths, var, lengths, key, value = (
            np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dtype)
            for k, dtype in enumerate((np.int64, np.int64, np.int64, np.int64, np.int32,
                                       np.float64)))
        var_ptr = np.zeros(len(template) + 1, dtype=np.int64)
        np.cumsum(widths, out=var_ptr[1:])
        item_ptr = np.zeros(len(template) + 1, dtype=np.int64)
        np.cumsum(lengths, out=item_ptr[1:])
        return UnrolledFactors(template, var_ptr, var, item_ptr, key,
                               unit_ones(len(value)) if (value == 1.0).all() else value)

    def census(self, instances: list[Instance]) -> GraphCounts:
        """What ``factors`` would make, without making it: each template's
        factors on each instance (pair templates' estimated by
        ``fgl.compile.pairs.estimate_pairs``) and its attribute items per
        factor, read off a sample of up to ``SAMPLE_FACTORS`` factors."""
        T = len(self.spec.templates)
        factors = np.zeros((len(instances), T), dtype=np.int64)
        items, sampled = np.zeros(T), np.zeros(T)
        for k, inst in enumerate(instances):
            inst = self.with_aggregates(inst)
            for ti, tpl in enumerate(self.spec.templates):
                refs = variables(tpl)
                offsets = [off for _, off, index in refs if index == "t"]
                if len(offsets) == len(refs):
                    lengths = np.diff(inst.bounds)
                    factors[k, ti] = np.maximum(
                        0, lengths - max(0, max(offsets)) - max(0, -min(offsets))).sum()
                    if sampled[ti] < SAMPLE_FACTORS:
                        a, b = inst.bounds[0], inst.bounds[1]
                        rows = self.attributes.evaluate(
                            ti, {c: v[a:b] for c, v in inst.cols.items()}, b - a, None)
                        items[ti] += sum(len(r) for r in rows)
                        sampled[ti] += len(rows)
                    continue
                factors[k, ti], sample = estimate_pairs(tpl, inst.cols, inst.size, inst.edges,
                                                        self.obs)
                if sampled[ti] < SAMPLE_FACTORS and sample:
                    rows = self.attributes.evaluate(ti, inst.cols, inst.size, sample)
                    items[ti] += sum(len(r) for r in rows)
                    sampled[ti] += len(rows)
        return GraphCounts(factors, np.array([inst.size for inst in instances], dtype=np.int64),
                           items / np.maximum(sampled, 1))

    @property
    def layer_index(self) -> dict[str, int]:
        index = {layer.name: k for k, layer in enumerate(self.layers)}
        if len(self.spec.outputs) == 1:
            index["y"] = 0
        return index


def _chunk_arrays(factors: list[tuple[int, list[int], list[tuple[str, float]]]],
                  keys: "AttributeKeys") -> tuple[np.ndarray, ...]:
    """A chunk of factors as arrays: templates, widths, variables, item
    counts, attribute keys (numbered by ``keys``) and values."""
    F = len(factors)
    lengths = np.fromiter((len(items) for _, _, items in factors), np.int64, F)
    widths = np.fromiter((len(vs) for _, vs, _ in factors), np.int64, F)
    n = int(lengths.sum())
    return (np.fromiter((ti for ti, _, _ in factors), np.int64, F), widths,
            np.fromiter((v for _, vs, _ in factors for v in vs), np.int64, int(widths.sum())),
            lengths,
            np.fromiter((keys.number(ti, key) for ti, _, items in factors for key, _ in items),
                        np.int32, n),
            np.fromiter((v for _, _, items in factors for _, v in items), np.float64, n))


@dataclass
class AttributeKeys:
    """The attribute keys met while unrolling, numbered in the order first
    met across templates (``vocabs[t]`` maps template t's keys to numbers;
    ``template[k]`` is key k's template) — the numbering
    ``fgl.compile.factor_features.FeatureRows`` gives its rows."""

    vocabs: list[dict[str, int]]
    template: list[int] = field(default_factory=list)

    @classmethod
    def empty(cls, n_templates: int) -> "AttributeKeys":
        return cls([{} for _ in range(n_templates)])

    def number(self, ti: int, key: str) -> int:
        """Key ``key`` of template ``ti``: its number, a new one if unmet."""
        k = self.vocabs[ti].get(key)
        if k is None:
            k = self.vocabs[ti][key] = len(self.template)
            self.template.append(ti)
        return k


@dataclass
class UnrolledFactors:
    """One instance's factors (``Unroller.factors``) as flat arrays: factor
    f of template ``template[f]`` over variables ``var[var_ptr[f]:var_ptr[f+1]]``
    with attribute keys ``key[item_ptr[f]:item_ptr[f+1]]`` (numbered by
    ``AttributeKeys``, int32) of values ``value[...]`` (a read-only view of
    one 1.0 when all are 1)."""

    template: np.ndarray
    var_ptr: np.ndarray
    var: np.ndarray
    item_ptr: np.ndarray
    key: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return int(self.template.size)


def variables(tpl: ast.Template) -> list[tuple[str, int, str]]:
    """The template's variables as (layer, offset, index), oldest first:
    ``y[t-1..t]`` is two variables, ``(y[i], y[j])`` two."""
    return [(r.var, off, r.index) for r in tpl.labels for off in range(r.lo, r.hi + 1)]


def gold_assignment(inst: Instance, layers: list[Layer], declared: bool) -> np.ndarray:
    """The gold label id of every variable of an instance (layer-major;
    -1 for hidden variables and unlabelled nodes)."""
    n = inst.size
    g = np.full(len(layers) * n, -1, dtype=np.int64)
    for k, layer in enumerate(layers):
        if layer.hidden:
            continue
        index = layer.index
        for p, y in enumerate(inst.gold[layer.name]):
            if y is None:   # an unlabelled node of a partially labelled graph
                continue
            i = index.get(y)
            if i is None:
                sent, t = inst.sentence_at(p)
                i = label_id(layer, y, sent.file, sent.lines[t], declared)
            g[k * n + p] = i
    return g
