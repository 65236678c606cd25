"""Compiling chain and segment models: spec + training data -> program.

A chain model (every template a contiguous label window ``y[t-k..t]``) runs
on the exact pattern-sparse chain program (Ye et al. 2009 §3); a segment
model (``segments`` declared) on the exact high-order semi-Markov program
(Cuong et al. 2014 §2).  Both are the same compilation over *units* —
tokens for a chain, candidate segments (u, d) at index u·L + d - 1 for a
segment model — so ``SequenceModel`` holds it once and ``ChainModel`` /
``SegmentModel`` supply only what differs: the units' attributes, the gold
segmentation, the program and how decoded segments become tags.  That is
why the two models share one module.

Training data is read twice when given as a re-readable source — labels
and patterns first (``read_gold``, ``template_plans``), then the feature
table (``fgl.compile.feature_table``) — and never held whole.  The units'
arrays are built by ``fgl.compile.unit_rows``; the memory estimate is
``fgl.compile.sequence_budget``'s.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Sequence, Union

import numpy as np

from fgl.compile.aggregates import Aggregator
from fgl.compile.bounds import attribute_bound, count_columns, token_columns, unit_items
from fgl.compile.budget import release_freed_memory
from fgl.compile.conjunctions import ConjunctionIndex
from fgl.compile.feature_table import FeatureTable
from fgl.compile.footprint import (
    Footprint,
    states_footprint,
)
from fgl.compile.frontend import (
    Layer,
    TemplatePlan,
    feature_sigma,
    label_id,
    loc_error,
    pattern_list,
    vocab_from_json,
    vocab_json,
    vocabularies,
    window_plans,
)
from fgl.compile.segmentation import segments_from_tags, span_limit, tags_from_segments
from fgl.compile.sequence_budget import (
    check_counts,
    check_encoding,
    check_input,
    check_made,
    model_footprint,
)
from fgl.compile.sequence_shards import encoded_data, widest
from fgl.compile.summaries import LabelSummary
from fgl.compile.unit_rows import KeyRows, UnitRows, append_units, batches, conjunction_rows
from fgl.data.schemes import chunks
from fgl.data.sentence import Sentence
from fgl.engines.sequence import constrained
from fgl.engines.sequence.chain_program import ChainProgram
from fgl.engines.sequence.encoded import EncodedData
from fgl.engines.sequence.segments_program import SegmentProgram
from fgl.engines.sequence.structure import ChainStructure
from fgl.errors import DataError
from fgl.features.model_input import check_model_input
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.features.span_arrays import Rows, stack
from fgl.lang import ast
from fgl.lang.settings import TrainSettings, resolve_train
from fgl.model import Confidences, Predictions, SegmentConfidence, TokenMarginals

# training data: sentences in memory, or a function giving a fresh pass over them
Sentences = Union[Sequence[Sentence], Callable[[], Iterable[Sentence]]]
Segment = tuple[int, int, str]
UnitAttributes = list[list[list[tuple[str, float]]]]


def uniform_view(values: np.ndarray) -> np.ndarray:
    """``values`` as a read-only view of one element (stride 0) when all are
    equal — one prior for every feature holds 8 bytes, not 8 per feature."""
    if len(values) and (values == values[0]).all():
        return np.broadcast_to(values[:1].copy(), values.shape)
    return values


class SequenceModel:
    """A compiled chain or segment model: its label layer, template plans,
    attribute vocabularies and program (the ``fgl.model.Model`` interface).
    Subclasses define the units and the program."""

    engine: ClassVar[str]
    const_key: ClassVar[str | None] = None   # an attribute scored once, not per unit

    def __init__(self, spec: ast.Spec, base_dir: Path, layer: Layer,
                 templates: list[TemplatePlan], patterns: list[tuple[int, ...]],
                 vocabs: list[dict[str, int]], row_ptr: np.ndarray, feat_pattern: np.ndarray,
                 lexicons: dict[str, frozenset[str]] | None = None):
        self.spec, self.base_dir, self.layers = spec, base_dir, [layer]
        self.templates, self.vocabs = templates, vocabularies(vocabs)
        states_footprint(len(layer.labels), patterns, spec.templates, "loading").check(
            spec.templates)   # (a model file's labels and patterns: before they are built)
        self.structure = ChainStructure.build(len(layer.labels), patterns)
        self.program = self._program(row_ptr, feat_pattern)
        self.feat_sigma = uniform_view(feature_sigma(templates, self.vocabs, row_ptr))
        self.attributes = TemplateAttributes(spec, base_dir, lexicons)
        self.aggregator = Aggregator(spec, self.attributes.observations)
        self.conjunctions = [ConjunctionIndex(vocab) for vocab in self.vocabs]
        self._key_rows: KeyRows | None = None   # vocabularies over attribute ids, for encode

    # ------------------------------------------------------------ per engine

    @classmethod
    def span_limit(cls, spec: ast.Spec, longest: int) -> int:
        """Units per token of data whose longest sequence has ``longest``
        tokens: the longest span one unit covers (1 for a chain)."""
        return 1

    def _program(self, row_ptr: np.ndarray, feat_pattern: np.ndarray):
        raise NotImplementedError

    @classmethod
    def declared_labels(cls, spec: ast.Spec) -> list[str] | None:
        """The spec's declared labels of the units, if any."""
        return None

    @classmethod
    def gold_segments(cls, spec: ast.Spec, tags: list[str], sent: Sentence) -> list[Segment]:
        """The gold (first token, last token, label) of a sentence's units,
        read off its ``tags``."""
        raise NotImplementedError

    @classmethod
    def unit_attributes(cls, attributes: TemplateAttributes, cols: dict[str, list], T: int,
                        L: int) -> UnitAttributes:
        """Per template, every unit's attribute items of a sentence of
        ``T`` tokens (its columns ``cols``), units covering up to ``L``."""
        raise NotImplementedError

    @classmethod
    def unit_rows(cls, attributes: TemplateAttributes, cols: list[dict[str, list]],
                  lengths: list[int], L: int) -> list[list[Rows]]:
        """``unit_attributes`` of several sentences (read together where the
        features allow it), ``out[sentence][template]``, as rows of
        attribute ids (``attributes.keys``)."""
        raise NotImplementedError

    def _tags(self, labels: np.ndarray, starts: np.ndarray | None) -> list[str]:
        raise NotImplementedError

    def _describe_engine(self) -> list[str]:
        raise NotImplementedError

    # ------------------------------------------------------------ the interface

    @property
    def labels(self) -> list[str]:
        return self.layers[0].labels

    @property
    def lexicons(self) -> dict[str, frozenset[str]]:
        return self.attributes.lexicons

    def unlabelled(self, data: EncodedData) -> int:
        """Sequence data is labelled throughout: 0."""
        return 0

    def initial_weights(self) -> np.ndarray:
        return np.zeros(self.program.n_features)

    def encode(self, sentences: Sequence[Sentence], with_gold: bool = False,
               jobs: int | None = None) -> EncodedData:
        """Encode sentences for the engine; attributes never seen in
        training have no weights and are skipped (``jobs`` changes nothing:
        tagging holds no per-thread tables worth a memory check)."""
        check_model_input(self, sentences, with_gold)   # (shaped as in training)
        L = self.span_limit(self.spec, max((len(s.rows) for s in sentences), default=1))
        items = unit_items(self.spec, L)
        if not with_gold:   # (training data: checked with the model, check_counts)
            check_input(L, self.structure, len(self.spec.templates), list(sentences), jobs or 1,
                        items=items)
        if self._key_rows is None:
            self._key_rows = KeyRows(self.attributes.keys, self.vocabs)
        seq_ptr = [0]
        units = UnitRows()
        gold: list[int] = []
        starts: list[int] = []
        for batch in self.aggregator.batches(batches(iter(sentences), len(sentences),
                                                     sum(items) * L)):
            read = [sentence_columns(self.spec, s.rows, s.lines, s.file) for s in batch]
            self.aggregator.complete_sentences([c for c, _ in read], batch)
            per_sentence = self.unit_rows(self.attributes, [c for c, _ in read],
                                           [len(s.rows) for s in batch], L)
            per_template = [stack(list(rows)) for rows in zip(*per_sentence)]
            del per_sentence
            self._encode_units(per_template, sum(len(s.rows) for s in batch) * L, units)
            for sent, (_, tags) in zip(batch, read):
                if with_gold:
                    self._encode_gold(sent, tags, gold, starts)
                seq_ptr.append(seq_ptr[-1] + len(sent.rows))
            check_made(self._key_rows.nbytes + units.nbytes, batch[-1],
                       "evaluating" if with_gold else "tagging")
        tok_ptr, tok_row, tok_val = units.arrays()
        return EncodedData(np.array(seq_ptr, dtype=np.int64), tok_ptr, tok_row, tok_val,
                           np.array(gold, dtype=np.int64) if with_gold else None,
                           np.array(starts, dtype=np.int64) if with_gold else None, L)

    def _encode_units(self, per_template: list[Rows], n_units: int, units: UnitRows) -> None:
        """Add ``n_units`` units, given their attribute rows per template."""
        unit, row, val = [], [], []
        for ti, (conj, rows) in enumerate(zip(self.conjunctions, per_template)):
            of_item = np.repeat(np.arange(n_units, dtype=np.int64), rows.lengths())
            r = self._key_rows.rows(ti, rows.key)
            keep = (r >= 0) & self._key_rows.scored(rows.key, self.const_key)
            unit.append(of_item[keep])
            row.append(r[keep])
            val.append(rows.val[keep])
            if conj:   # induced conjunctions (fgl.learn.induction)
                c_unit, c_row, c_val = conjunction_rows(conj, rows, self.attributes.keys)
                unit.append(c_unit)
                row.append(c_row)
                val.append(c_val)
        append_units(units, n_units, unit, row, val)

    def _encode_gold(self, sent: Sentence, tags: list[str] | None, gold: list[int],
                     starts: list[int]) -> None:
        """Add one sentence's gold labels and segment starts."""
        if tags is None:
            raise DataError("this data has no label column", sent.file, sent.lines[0])
        for u, v, y in self.gold_segments(self.spec, tags, sent):
            gold.extend([label_id(self.layers[0], y, sent.file, sent.lines[u], False)]
                        * (v - u + 1))
            starts.extend([1] + [0] * (v - u))

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int) -> Predictions:
        dec = self.program.decode(w, data, jobs)
        starts = dec.segment_starts or [None] * len(dec.assignments)
        return Predictions([self.layers[0].name],
                           [[self._tags(a, s)] for a, s in zip(dec.assignments, starts)],
                           dec.stats)

    def nbest(self, w: np.ndarray, data: EncodedData, k: int
              ) -> list[list[tuple[list[str], float]]]:
        """Per sequence, its k best labellings (tags) with their scores, best first."""
        return [[(self._tags(labels, starts), float(score))
                 for labels, starts, score in zip(*got)] for got in self.program.nbest(w, data, k)]

    def marginals(self, w: np.ndarray, data: EncodedData, jobs: int) -> TokenMarginals:
        m = self.program.marginals(w, data, jobs)
        return TokenMarginals([self.layers[0].name], [self.labels],
                              [[probs] for probs in m.per_instance], m.stats)

    def log_partition(self, w: np.ndarray, data: EncodedData, jobs: int) -> np.ndarray:
        return self.program.log_partition(w, data, jobs)

    def pattern_labels(self, template: int, pattern: int) -> tuple[str, ...]:
        """The labels of label pattern ``pattern`` (oldest first)."""
        return tuple(self.labels[y] for y in self.structure.patterns[pattern])

    def describe(self, data: EncodedData | None = None) -> list[str]:
        st = self.structure
        lines = [f"labels (n = {st.n_labels}): {' '.join(self.labels)}",
                 f"patterns |Z| = {len(st.patterns)}, maximum order "
                 f"{max(len(z) for z in st.patterns) - 1}",
                 f"forward states |P| = {st.n_forward}, backward states |S| = |P|·n = "
                 f"{st.n_backward}",
                 *self._describe_engine(),
                 f"features: {self.program.n_features}", "templates:"]
        row_len = np.diff(self.program.row_ptr)
        for tpl, vocab in zip(self.templates, self.vocabs):
            nfeat = int(row_len[list(vocab.values())].sum())
            lines.append(f"  {tpl.name}: window {tpl.width}, {len(tpl.patterns)} patterns, "
                         f"{len(vocab)} attributes, {nfeat} features, sigma {tpl.sigma:g}, "
                         f"support {tpl.support}"
                         + (f", min_count {tpl.min_count}" if tpl.min_count > 1 else ""))
        if data is not None:
            lines.append(f"training data: {data.n_sequences} sequences, {data.n_tokens} tokens")
            lines.append(self.footprint(data).line())
        return lines

    def footprint(self, data: EncodedData, jobs: int | None = None) -> Footprint:
        """The memory training on ``data`` takes."""
        row_len = np.diff(self.program.row_ptr)
        features = [int(row_len[list(vocab.values())].sum()) for vocab in self.vocabs]
        if jobs is None:
            jobs = resolve_train(self.spec).jobs
        return model_footprint(data.units_per_token, self.structure, features,
                          [f"makes {n:,} features" for n in features], len(row_len),
                          data.n_tokens, len(data.tok_ptr) - 1, len(data.tok_row),
                          int(np.diff(data.seq_ptr).max(initial=0)), data.n_sequences, jobs)

    # ------------------------------------------------------------ model files
    # fgl.model's file methods, as in FactorGraphModel: the same shape over other fields

    def header(self) -> dict:
        return {"layers": [{"name": self.layers[0].name, "labels": self.labels, "hidden": False}],
                "templates": [t.to_json() for t in self.templates],
                "patterns": [list(z) for z in self.structure.patterns],
                "vocabs": vocab_json(self.vocabs)}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"row_ptr": self.program.row_ptr, "feat_pattern": self.program.feat_pattern}

    @classmethod
    def from_header(cls, spec: ast.Spec, base_dir: Path, header: dict,
                    arrays: dict[str, np.ndarray]) -> "SequenceModel":
        (layer,) = header["layers"]
        return cls(spec, base_dir, Layer(str(layer["name"]), [str(y) for y in layer["labels"]]),
                   [TemplatePlan.from_json(t) for t in header["templates"]],
                   [tuple(int(v) for v in z) for z in header["patterns"]],
                   vocab_from_json(header["vocabs"]), arrays["row_ptr"], arrays["feat_pattern"],
                   header["lexicons"])

    # ------------------------------------------------------------ compiling

    @classmethod
    def compile(cls, spec: ast.Spec, sentences: Sentences, base_dir: Path | None = None,
                settings: TrainSettings | None = None, source: str = "<train>",
                ) -> tuple["SequenceModel", EncodedData]:
        """Compile a checked spec against training data (read from
        ``source``); returns the model and the encoded training data (with
        gold labels).  ``sentences`` is a list, or a function returning a
        fresh iterator over them (e.g. ``lambda: iter_conll(path)``): the
        data is then read twice and never held whole."""
        if not callable(sentences) and iter(sentences) is sentences:  # a one-pass iterator
            sentences = list(sentences)
        read = sentences if callable(sentences) else (lambda: sentences)
        base_dir = base_dir or Path(".")
        attributes = TemplateAttributes(spec, base_dir)
        layer, gold, spans = cls.read_gold(spec, read, source)
        settings = settings or resolve_train(spec)
        plans = cls.template_plans(spec, layer, gold, settings.sigma, settings.min_count)
        z_list = pattern_list(len(layer.labels), plans)
        jobs = settings.jobs
        lengths = [segs[-1][1] + 1 for segs in spans if segs]
        longest = max(lengths, default=1)
        span = cls.span_limit(spec, longest)
        check_counts(span, spec, plans, z_list, len(layer.labels), spans, jobs)

        def attribute_count() -> int:   # (a pass over the data, when the budget needs it)
            counts = count_columns(spec, read(), token_columns(spec))
            return attribute_bound(spec, counts, sum(lengths) * span, span)

        check_encoding(span, spec, plans, z_list, len(layer.labels), spans, jobs,
                       unit_items(spec, span), attribute_count)
        table = FeatureTable(cls, spec, plans, z_list, attributes, len(layer.labels), jobs,
                             longest)
        table.read(read, gold, spans, source)
        row_ptr, feat_pattern, vocabs, units = table.finish()
        units_per_token, lexicons = table.L, attributes.lexicons
        del table, attributes   # (the key table and memos: freed before the heap is trimmed)
        model = cls(spec, base_dir, layer, plans, z_list, vocabs, row_ptr, feat_pattern,
                    lexicons)
        data = encoded_data(units, gold, spans, units_per_token)
        release_freed_memory()
        return model, data

    @classmethod
    def read_gold(cls, spec: ast.Spec, read: Callable[[], Iterable[Sentence]], source: str
                  ) -> tuple[Layer, list[list[int]], list[list[tuple[int, int]]]]:
        """First pass (the labels' collect and merge over the one shard that
        is the whole data): the label layer, and per sentence the gold label
        id and (first, last) token of each gold segment (each token, in a
        chain)."""
        summary, tags, spans = cls.collect_gold(spec, read(), windows=False)
        layer = cls.gold_layer(spec, summary, source)
        index = layer.index
        return layer, [[index[y] for y in ys] for ys in tags], spans

    @classmethod
    def collect_gold(cls, spec: ast.Spec, sentences: Iterable[Sentence], windows: bool = True
                     ) -> tuple[LabelSummary, list[list[str]], list[list[tuple[int, int]]]]:
        """The collect step's labels over a shard: its ``LabelSummary`` (with
        the gold label windows of every length up to the widest template's,
        if ``windows``), and per sentence its gold tags and the (first, last)
        token of each gold segment.  Equal (first, last) pairs are one tuple
        object, shared by every sentence: a tuple per token took 13 MB on
        CoNLL-2000."""
        declared = cls.declared_layer(spec)
        width = widest(spec) if windows else 0
        tags: list[list[str]] = []
        spans: list[list[tuple[int, int]]] = []
        pairs: dict[tuple[int, int], tuple[int, int]] = {}
        labels: set[str] = set()
        found: set[tuple[str, ...]] = set()
        tokens = longest = 0
        for sent in sentences:
            segs = cls.sentence_gold(spec, sent, declared)
            seq = [sys.intern(y) for _, _, y in segs]
            tags.append(seq)
            spans.append([pairs.setdefault((u, v), (u, v)) for u, v, _ in segs])
            labels.update(seq)
            for m in range(1, width + 1):
                found.update(tuple(seq[t - m + 1:t + 1]) for t in range(m - 1, len(seq)))
            tokens += len(sent.rows)
            if segs:
                longest = max(longest, segs[-1][1] + 1)
        return (LabelSummary({spec.outputs[0]: labels}, found, len(tags), tokens, longest),
                tags, spans)

    @classmethod
    def gold_layer(cls, spec: ast.Spec, summary: LabelSummary, source: str) -> Layer:
        """The label layer the merged labels give: the declared labels, else
        those seen, sorted; a DataError when the data has no sequences."""
        if not summary.n_instances:
            raise DataError("the training data has no sequences", source, 0)
        return cls.declared_layer(spec) or Layer(spec.outputs[0],
                                                 sorted(summary.labels[spec.outputs[0]]))

    @classmethod
    def declared_layer(cls, spec: ast.Spec) -> Layer | None:
        """The label layer the spec declares, if it declares the labels."""
        declared = cls.declared_labels(spec)
        return Layer(spec.outputs[0], declared) if declared else None

    @classmethod
    def sentence_gold(cls, spec: ast.Spec, sent: Sentence, declared: Layer | None
                      ) -> list[Segment]:
        """A training sentence's gold segments (each token's, in a chain),
        refusing data without the label column and, when the spec declares
        its labels (``declared``), a label outside them."""
        tags = getattr(sent, "tags", None)    # (a prepared sentence: see FeatureTable)
        if tags is None:
            _, tags = sentence_columns(spec, sent.rows, sent.lines, sent.file)
        if tags is None:
            raise DataError(f"training data needs the label column '{spec.outputs[0]}'",
                            sent.file, sent.lines[0])
        segs = cls.gold_segments(spec, tags, sent)
        if declared is not None:
            for u, _, y in segs:
                label_id(declared, y, sent.file, sent.lines[u], True)
        return segs

    @classmethod
    def template_plans(cls, spec: ast.Spec, layer: Layer, gold: list[list[int]], sigma: float,
                       min_count: int = 1) -> list[TemplatePlan]:
        """Each template's plan: its label window over the gold label
        sequences ``gold`` (or a merged summary's gold windows), with the
        patterns seen there (or declared)."""
        def observed(lengths: list[int]) -> Iterable[tuple[int, ...]]:
            for seq in gold:
                for m in lengths:
                    for t in range(m - 1, len(seq)):
                        yield tuple(seq[t - m + 1:t + 1])

        return window_plans(spec, layer, observed, sigma, min_count)


class ChainModel(SequenceModel):
    """A linear-chain model of any order on the exact pattern-sparse chain
    program (Ye et al. 2009 §3).  The constant ``bias`` attribute of each
    template is scored once per call, not per token."""

    engine = "chain"
    const_key = "bias"

    def _program(self, row_ptr: np.ndarray, feat_pattern: np.ndarray) -> ChainProgram:
        const_rows = np.array([v["bias"] for v in self.vocabs if "bias" in v], dtype=np.int64)
        return ChainProgram(self.structure, row_ptr, feat_pattern, const_rows)

    @classmethod
    def declared_labels(cls, spec: ast.Spec) -> list[str] | None:
        declared = spec.label_sets.get(spec.outputs[0])
        return list(declared[0]) if declared else None

    @classmethod
    def gold_segments(cls, spec: ast.Spec, tags: list[str], sent: Sentence) -> list[Segment]:
        return [(t, t, y) for t, y in enumerate(tags)]

    @classmethod
    def unit_attributes(cls, attributes: TemplateAttributes, cols: dict[str, list], T: int,
                        L: int) -> UnitAttributes:
        return attributes(cols, T)

    @classmethod
    def unit_rows(cls, attributes: TemplateAttributes, cols: list[dict[str, list]],
                  lengths: list[int], L: int) -> list[list[Rows]]:
        return attributes.token_rows(cols, lengths)

    def _tags(self, labels: np.ndarray, starts: np.ndarray | None) -> list[str]:
        return [self.labels[i] for i in labels]

    def segment_confidences(self, w: np.ndarray, data: EncodedData, jobs: int,
                                tags: list[list[list[str]]], schemes: list[str],
                                ignore: tuple[str, ...]) -> Confidences:
        """Chunks of the predicted tags, each clamped to them (exact)."""
        program, st = self.program, self.structure
        index = {y: k for k, y in enumerate(self.layers[0].labels)}
        scoring = program.scoring(w)
        ones = np.ones(st.n_labels, dtype=np.int64)
        out = []
        for i, (seq,) in enumerate(tags):
            found = chunks(seq, schemes[0], ignore)
            span_u = [t for _, a, b in found for t in range(a, b)]
            pot = program.potentials(w, data, i, scoring)
            conf = constrained.confidences(
                pot.reshape(pot.shape[0], 1, -1), st.tables, ones, False, span_u,
                np.ones(len(span_u), dtype=np.int64), [index[seq[t]] for t in span_u],
                np.cumsum([0] + [b - a for _, a, b in found]))
            out.append([[SegmentConfidence(a, b, y, float(c))
                         for (y, a, b), c in zip(found, conf)]])
        return out

    def _describe_engine(self) -> list[str]:
        st = self.structure
        order = max(len(z) for z in st.patterns) - 1
        n = st.n_labels
        if order == 0:
            return [f"cost of one pass: n = {n} label scores per token, each token normalised "
                    f"on its own; no template links two labels, so there is no dynamic program "
                    f"across tokens (no transitions)"]
        return [f"cost of one pass: O(T·n·|P|) = {st.n_backward} transition updates per token"
                f" (a dense order-{order} chain would need n^{order + 1} = {n ** (order + 1)})"]


class SegmentModel(SequenceModel):
    """A (high-order) semi-Markov model on the exact semi-Markov program
    (Cuong et al. 2014 §2): labels belong to segments of up to L tokens (a
    limit per label), adjacent segments optionally distinct.  The constant
    ``bias`` attribute of each template is scored once per call, not per
    span."""

    engine = "segments"
    const_key = "bias"

    @classmethod
    def span_limit(cls, spec: ast.Spec, longest: int) -> int:
        """The longest label limit, clamped to the longest sequence."""
        return span_limit(spec.segments, longest)

    def segment_confidences(self, w: np.ndarray, data: EncodedData, jobs: int,
                                tags: list[list[list[str]]], schemes: list[str],
                                ignore: tuple[str, ...]) -> Confidences:
        """The model's own predicted segments, from its Viterbi segmentation
        (the one its tags were written from), exactly; ``schemes`` play no part."""
        program, labels = self.program, self.layers[0].labels
        dec = program.decode(w, data, jobs)
        out = []
        for i, (ids, starts) in enumerate(zip(dec.assignments, dec.segment_starts)):
            first = np.flatnonzero(starts).tolist()
            segs = [(u, v, int(ids[u])) for u, v in zip(first, first[1:] + [len(ids)])
                    if labels[ids[u]] not in ignore]
            pot = program.potentials(w, data, i)
            conf = constrained.confidences(
                pot, program.machine.tables, program.limits, program.distinct,
                [u for u, _, _ in segs], [v - u for u, v, _ in segs],
                [program.rank[y] for _, _, y in segs], np.arange(len(segs) + 1))
            out.append([[SegmentConfidence(u, v, labels[y], float(c))
                         for (u, v, y), c in zip(segs, conf)]])
        return out

    def _program(self, row_ptr: np.ndarray, feat_pattern: np.ndarray) -> SegmentProgram:
        seg = self.spec.segments
        limits = np.full(len(self.labels), seg.max_length, dtype=np.int64)
        for name, m in seg.per_label.items():
            if name not in self.labels:
                raise loc_error(f"segment length limit for unknown label '{name}'; the labels "
                                f"are: {', '.join(self.labels)}", getattr(name, "loc", seg.loc))
            limits[self.labels.index(name)] = int(m)
        if seg.distinct and len(self.labels) < 2:
            raise loc_error(f"`adjacent distinct` needs two segment labels or more; the data has "
                            f"only '{self.labels[0]}'", seg.loc)
        const_rows = np.array([v["bias"] for v in self.vocabs if "bias" in v], dtype=np.int64)
        return SegmentProgram(self.structure, row_ptr, feat_pattern, limits, const_rows,
                              seg.distinct)

    @classmethod
    def gold_segments(cls, spec: ast.Spec, tags: list[str], sent: Sentence) -> list[Segment]:
        return segments_from_tags(tags, spec.segments, sent)

    @classmethod
    def unit_attributes(cls, attributes: TemplateAttributes, cols: dict[str, list], T: int,
                        L: int) -> UnitAttributes:
        """Per template, the attributes of candidate segment (u, d) at unit
        u·L + d - 1 (empty past the end), from token tables where the
        template allows it (``TemplateAttributes.segments``)."""
        out = []
        for rows in attributes.segments(cols, T, L):
            units: list[list[tuple[str, float]]] = []
            k = 0
            for u in range(T):
                m = min(L, T - u)
                units.extend(rows[k:k + m])
                units.extend([[]] * (L - m))
                k += m
            out.append(units)
        return out

    @classmethod
    def unit_rows(cls, attributes: TemplateAttributes, cols: list[dict[str, list]],
                  lengths: list[int], L: int) -> list[list[Rows]]:
        """``unit_attributes`` as rows of attribute ids: span (u, d) at unit
        u·L + d - 1, empty units past the end."""
        out = []
        for T, per_template in zip(lengths, attributes.segment_rows(cols, lengths, L)):
            widths = np.minimum(L, T - np.arange(T, dtype=np.int64))
            first = np.repeat(np.cumsum(widths) - widths, widths)
            unit = (np.repeat(np.arange(T, dtype=np.int64) * L, widths)
                    + np.arange(int(widths.sum()), dtype=np.int64) - first)
            units = []
            for rows in per_template:
                n = np.zeros(T * L, dtype=np.int64)
                n[unit] = rows.lengths()
                ptr = np.zeros(T * L + 1, dtype=np.int64)
                np.cumsum(n, out=ptr[1:])
                units.append(Rows(ptr, rows.key, rows.val))
            out.append(units)
        return out

    def _tags(self, labels: np.ndarray, starts: np.ndarray | None) -> list[str]:
        segs, u = [], 0
        for t in range(1, len(labels) + 1):
            if t == len(labels) or starts[t]:
                segs.append((u, t - 1, self.labels[labels[u]]))
                u = t
        return tags_from_segments(segs, len(labels), self.spec.segments.boundary)

    def _describe_engine(self) -> list[str]:
        program, P = self.program, self.structure.n_forward
        L, total = program.max_length, int(program.label_max.sum())
        limits = ", ".join(f"{y} {m}" for y, m in zip(self.labels, program.label_max) if m != L)
        return [f"maximum segment length L = {L}" + (f" (per label: {limits})" if limits else "")
                + (", no two adjacent segments with the same label" if program.distinct else ""),
                f"cost of one pass: O(T·|P|·Σ_y L_y) = {P}·{total} = {P * total} "
                f"span-transition updates per token (fewer in sequences shorter than a limit)"]
