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

The feature table has one weight per (attribute, pattern) pair of a
template, restricted by default to pairs seen in training ("supported"
features) or every pair with ``support = all``; templates without
observations get every pattern.  Training data is read twice when given as
a re-readable source — labels and patterns first, then features — and never
held whole.
"""
from __future__ import annotations

import sys
from array import array
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Sequence, Union

import numpy as np

from fgl.compile import footprint as sizes
from fgl.compile.budget import memory_budget
from fgl.compile.conjunctions import ConjunctionIndex
from fgl.compile.footprint import (
    BYTES_PER_UNIT_MADE,
    BYTES_PER_UNIT_MADE_TEMPLATE,
    PY_PER_TRANSITION,
    STATES_ADVICE,
    Footprint,
    SizedOnly,
    chain_states,
    only_sizing,
    sequence_footprint,
    states_footprint,
)
from fgl.compile.frontend import (
    Layer,
    TemplatePlan,
    feature_sigma,
    keep_counted,
    label_id,
    loc_error,
    prior_sigma,
    resolve_patterns,
    template_plan,
    train_min_count,
    vocab_from_json,
    vocab_json,
)
from fgl.compile.segmentation import segments_from_tags, tags_from_segments
from fgl.engines.sequence import constrained
from fgl.engines.sequence.chain_program import ChainProgram
from fgl.engines.sequence.encoded import EncodedData, unit_ones
from fgl.engines.sequence.semimarkov_program import SemiMarkovProgram
from fgl.engines.sequence.structure import ChainStructure
from fgl.errors import DataError
from fgl.features.model_input import check_model_input
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.features.span_arrays import KeyTable, Rows, stack
from fgl.io.conll import Sentence
from fgl.io.schemes import chunks
from fgl.lang import ast
from fgl.lang.settings import train_settings
from fgl.model import Confidences, Predictions, SegmentConfidence, TokenMarginals

# training data: sentences in memory, or a function giving a fresh pass over them
Sentences = Union[Sequence[Sentence], Callable[[], Iterable[Sentence]]]
Segment = tuple[int, int, str]
UnitAttributes = list[list[list[tuple[str, float]]]]


class UnitRows:
    """Every unit's attribute rows and values, appended unit by unit into
    flat arrays (CSR); values are stored only once one differs from 1."""

    def __init__(self) -> None:
        self.ptr, self.rows = array("q", [0]), array("i")
        self.vals: array | None = None

    def add(self, rows: list[int], vals: list[float]) -> None:
        if self.vals is None and vals.count(1.0) != len(vals):
            self.vals = array("d", [1.0]) * len(self.rows)
        self.rows.extend(rows)
        if self.vals is not None:
            self.vals.extend(vals)
        self.ptr.append(len(self.rows))

    def extend(self, lengths: np.ndarray, rows: np.ndarray, vals: np.ndarray) -> None:
        """Units of ``lengths`` rows each, their rows and values in turn."""
        if self.vals is None and not np.all(vals == 1.0):
            self.vals = array("d", [1.0]) * len(self.rows)
        self.rows.frombytes(rows.astype(np.int32).tobytes())
        if self.vals is not None:
            self.vals.frombytes(vals.astype(np.float64).tobytes())
        ends = len(self.rows) - int(lengths.sum()) + np.cumsum(lengths, dtype=np.int64)
        self.ptr.frombytes(ends.tobytes())

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit pointers, rows, values) sharing the buffers."""
        rows = np.frombuffer(self.rows, dtype=np.int32)
        vals = unit_ones(len(rows)) if self.vals is None else np.frombuffer(self.vals)
        return np.frombuffer(self.ptr, dtype=np.int64), rows, vals


class KeyRows:
    """Per template, the vocabulary as an array over attribute ids of a
    ``KeyTable``: the row of each id, -1 for none (grown with the table)."""

    def __init__(self, keys: KeyTable, vocabs: list[dict[str, int]]):
        self.keys = keys
        self.by_id = []
        for vocab in vocabs:
            ids = np.array([keys.key_id(k) for k in vocab], dtype=np.int64)
            by_id = np.full(len(keys), -1, dtype=np.int64)
            by_id[ids] = np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))
            self.by_id.append(by_id)

    def table(self, ti: int) -> np.ndarray:
        """Template ``ti``'s array, grown to every id of the key table."""
        by_id = self.by_id[ti]
        if len(by_id) < len(self.keys):
            grown = np.full(max(len(self.keys), 2 * len(by_id)), -1, dtype=np.int64)
            grown[:len(by_id)] = by_id
            by_id = self.by_id[ti] = grown
        return by_id

    def rows(self, ti: int, ids: np.ndarray) -> np.ndarray:
        return self.table(ti)[ids]

    def scored(self, ids: np.ndarray, const_key: str | None) -> np.ndarray | bool:
        """Which of ``ids`` are scored per unit (all but the constant key's)."""
        const = self.keys.index.get(const_key) if const_key is not None else None
        return True if const is None else ids != const


def _conjunction_rows(conj: ConjunctionIndex, rows: Rows, keys: KeyTable
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit, row, value) of the induced conjunctions present in each unit."""
    names, vals = keys.keys, rows.val.tolist()
    ids = rows.key.tolist()
    unit, row, val = [], [], []
    for n, (a, b) in enumerate(zip(rows.ptr[:-1].tolist(), rows.ptr[1:].tolist())):
        if a < b:
            for r, v in conj.rows(dict(zip([names[k] for k in ids[a:b]], vals[a:b]))):
                unit.append(n)
                row.append(r)
                val.append(v)
    return (np.array(unit, dtype=np.int64), np.array(row, dtype=np.int64),
            np.array(val, dtype=np.float64))


def _add_units(units: UnitRows, n_units: int, unit: list[np.ndarray], row: list[np.ndarray],
               val: list[np.ndarray]) -> None:
    """Add ``n_units`` units from (unit, row, value) items given template by
    template: each unit's rows in template order, then item order."""
    of_unit = np.concatenate(unit) if unit else np.zeros(0, dtype=np.int64)
    order = np.argsort(of_unit, kind="stable")
    units.extend(np.bincount(of_unit, minlength=n_units),
                 np.concatenate(row)[order] if unit else of_unit,
                 np.concatenate(val)[order] if unit else np.zeros(0))


# sentences whose features are computed together: large enough that array work
# outweighs its per-call overhead, small enough to keep a batch's span items in memory
BATCH_TOKENS = 1024


def _batches(sentences: Iterable[Sentence], limit: int) -> Iterable[list[Sentence]]:
    """The first ``limit`` sentences in batches of about ``BATCH_TOKENS`` tokens."""
    batch: list[Sentence] = []
    size = 0
    for i, sent in enumerate(sentences):
        if i >= limit:
            break
        batch.append(sent)
        size += len(sent.rows)
        if size >= BATCH_TOKENS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


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
        self.templates, self.vocabs = templates, vocabs
        states_footprint(len(layer.labels), patterns, spec.templates, "loading").check(
            spec.templates)   # (a model file's labels and patterns: before they are built)
        self.structure = ChainStructure.build(len(layer.labels), patterns)
        self.program = self._program(row_ptr, feat_pattern)
        self.feat_sigma = feature_sigma(templates, vocabs, row_ptr)
        self.attributes = TemplateAttributes(spec, base_dir, lexicons)
        self.conjunctions = [ConjunctionIndex(vocab) for vocab in vocabs]
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
    def _declared(cls, spec: ast.Spec) -> list[str] | None:
        """The spec's declared labels of the units, if any."""
        return None

    @classmethod
    def _gold_segments(cls, spec: ast.Spec, tags: list[str], sent: Sentence) -> list[Segment]:
        raise NotImplementedError

    @classmethod
    def _unit_attributes(cls, attributes: TemplateAttributes, cols: dict[str, list], T: int,
                         L: int) -> UnitAttributes:
        raise NotImplementedError

    @classmethod
    def _unit_rows(cls, attributes: TemplateAttributes, cols: list[dict[str, list]],
                   lengths: list[int], L: int) -> list[list[Rows]]:
        """``_unit_attributes`` of several sentences (read together where the
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

    def initial_weights(self) -> np.ndarray:
        return np.zeros(self.program.n_features)

    def encode(self, sentences: Sequence[Sentence], with_gold: bool = False) -> EncodedData:
        """Encode sentences for the engine; attributes never seen in
        training have no weights and are skipped."""
        check_model_input(self, sentences, with_gold)   # (shaped as in training)
        L = self.span_limit(self.spec, max((len(s.rows) for s in sentences), default=1))
        if self._key_rows is None:
            self._key_rows = KeyRows(self.attributes.keys, self.vocabs)
        seq_ptr = [0]
        units = UnitRows()
        gold: list[int] = []
        starts: list[int] = []
        for batch in _batches(iter(sentences), len(sentences)):
            read = [sentence_columns(self.spec, s.rows, s.lines, s.file) for s in batch]
            per_sentence = self._unit_rows(self.attributes, [c for c, _ in read],
                                           [len(s.rows) for s in batch], L)
            per_template = [stack(list(rows)) for rows in zip(*per_sentence)]
            del per_sentence
            self._encode_units(per_template, sum(len(s.rows) for s in batch) * L, units)
            for sent, (_, tags) in zip(batch, read):
                if with_gold:
                    self._encode_gold(sent, tags, gold, starts)
                seq_ptr.append(seq_ptr[-1] + len(sent.rows))
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
                c_unit, c_row, c_val = _conjunction_rows(conj, rows, self.attributes.keys)
                unit.append(c_unit)
                row.append(c_row)
                val.append(c_val)
        _add_units(units, n_units, unit, row, val)

    def _encode_gold(self, sent: Sentence, tags: list[str] | None, gold: list[int],
                     starts: list[int]) -> None:
        """Add one sentence's gold labels and segment starts."""
        if tags is None:
            raise DataError("this data has no label column", sent.file, sent.lines[0])
        for u, v, y in self._gold_segments(self.spec, tags, sent):
            gold.extend([label_id(self.layers[0], y, sent.file, sent.lines[u], False)]
                        * (v - u + 1))
            starts.extend([1] + [0] * (v - u))

    def decode(self, w: np.ndarray, data: EncodedData, jobs: int) -> Predictions:
        dec = self.program.decode(w, data, jobs)
        starts = dec.segment_starts or [None] * len(dec.assignments)
        return Predictions([self.layers[0].name],
                           [[self._tags(a, s)] for a, s in zip(dec.assignments, starts)],
                           dec.stats)

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
            jobs = int(train_settings(self.spec)["jobs"])
        return _footprint(data.units_per_token, self.structure, features,
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
                overrides: dict | None = None, source: str = "<train>",
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
        layer, gold, spans = cls._read_gold(spec, read, source)
        plans = cls._plans(spec, layer, gold, prior_sigma(spec, overrides),
                           train_min_count(spec, overrides))
        z_list = list(dict.fromkeys([(y,) for y in range(len(layer.labels))]
                                    + [z for p in plans for z in p.patterns]))
        jobs = int(train_settings(spec, overrides)["jobs"])
        longest = max((segs[-1][1] + 1 for segs in spans if segs), default=1)
        _check_counts(cls.span_limit(spec, longest), spec, plans, z_list, len(layer.labels),
                      spans, jobs)
        table = _FeatureTable(cls, spec, plans, z_list, attributes, len(layer.labels), jobs,
                              longest)
        table.read(read, gold, spans, source)
        row_ptr, feat_pattern, vocabs, units = table.finish()
        model = cls(spec, base_dir, layer, plans, z_list, vocabs, row_ptr, feat_pattern,
                    attributes.lexicons)
        seq_ptr = np.zeros(len(gold) + 1, dtype=np.int64)
        seq_ptr[1:] = np.cumsum([segs[-1][1] + 1 if segs else 0 for segs in spans])
        gold_tokens, starts = [], []
        for segs, seq in zip(spans, gold):
            for (u, v), y in zip(segs, seq):
                gold_tokens.extend([y] * (v - u + 1))
                starts.extend([1] + [0] * (v - u))
        data = EncodedData(seq_ptr, *units, np.array(gold_tokens, dtype=np.int64),
                           np.array(starts, dtype=np.int64), table.L)
        return model, data

    @classmethod
    def _read_gold(cls, spec: ast.Spec, read: Callable[[], Iterable[Sentence]], source: str
                   ) -> tuple[Layer, list[list[int]], list[list[tuple[int, int]]]]:
        """First pass: the label layer, and per sentence the gold label id and
        (first, last) token of each gold segment (each token, in a chain)."""
        declared = cls._declared(spec)
        declared_layer = Layer(spec.outputs[0], declared) if declared else None
        gold_segs: list[list[Segment]] = []
        for sent in read():
            tags = getattr(sent, "tags", None)    # (a prepared sentence: see _FeatureTable)
            if tags is None:
                _, tags = sentence_columns(spec, sent.rows, sent.lines, sent.file)
            if tags is None:
                raise DataError(f"training data needs the label column '{spec.outputs[0]}'",
                                sent.file, sent.lines[0])
            segs = cls._gold_segments(spec, tags, sent)
            if declared_layer is not None:
                for u, _, y in segs:
                    label_id(declared_layer, y, sent.file, sent.lines[u], True)
            gold_segs.append([(u, v, sys.intern(y)) for u, v, y in segs])
        if not gold_segs:
            raise DataError("the training data has no sequences", source, 0)
        layer = declared_layer or Layer(spec.outputs[0], sorted(
            {y for segs in gold_segs for _, _, y in segs}))
        index = layer.index
        gold = [[index[y] for _, _, y in segs] for segs in gold_segs]
        spans = [[(u, v) for u, v, _ in segs] for segs in gold_segs]
        return layer, gold, spans

    @classmethod
    def _plans(cls, spec: ast.Spec, layer: Layer, gold: list[list[int]], sigma: float,
               min_count: int = 1) -> list[TemplatePlan]:
        def observed(lengths: list[int]) -> Iterable[tuple[int, ...]]:
            for seq in gold:
                for m in lengths:
                    for t in range(m - 1, len(seq)):
                        yield tuple(seq[t - m + 1:t + 1])

        plans = []
        for tpl in spec.templates:
            width = 1 - min(ref.lo for ref in tpl.labels)  # y[t-k..t]: k + 1 labels
            patterns = resolve_patterns(tpl, [layer], [0] * width, observed)
            plans.append(template_plan(tpl, [0] * width, patterns, sigma,
                                       "observed" if tpl.observations else "all", min_count))
        return plans


class _FeatureTable:
    """Second pass of compiling: attribute rows, their supported patterns and
    every unit's rows (flat CSR arrays filled sentence by sentence)."""

    def __init__(self, model_cls: type[SequenceModel], spec: ast.Spec, plans: list[TemplatePlan],
                 z_list: list[tuple[int, ...]], attributes: TemplateAttributes, n_labels: int,
                 jobs: int, longest: int):
        self.cls, self.spec, self.plans, self.attributes = model_cls, spec, plans, attributes
        self.L = model_cls.span_limit(spec, longest)
        self.structure, self.jobs = ChainStructure.build(n_labels, z_list), jobs
        self.n_sequences = self.n_tokens = self.longest = 0
        self.n_z = len(z_list)
        z_index = {z: i for i, z in enumerate(z_list)}
        self.pattern_sets = [{z: z_index[z] for z in p.patterns} for p in plans]
        self.lengths = [sorted({len(z) for z in p.patterns}) for p in plans]
        self.vocabs: list[dict[str, int]] = [{} for _ in plans]
        # supported patterns per row: the first in row_first (-1: none yet),
        # any others as codes row·|Z| + pattern in row_more — most rows have
        # one, and a set per row is costly
        self.row_first = array("q")
        self.row_more: set[int] = set()
        self.row_template = array("i")
        self.units = UnitRows()
        self.key_rows: KeyRows | None = None
        # occurrences of each row's attribute at gold units, for the cut-off (min_count)
        self.row_count = np.zeros(0, dtype=np.int64) if any(
            p.min_count > 1 for p in plans) else None

    def read(self, read: Callable[[], Iterable[Sentence]], gold: list[list[int]],
             spans: list[list[tuple[int, int]]], source: str) -> None:
        # with spans (L > 1) most units are not gold ones: they may carry any
        # attribute of a gold unit, so every row is made before any unit is added
        passes = [(True, False), (False, True)] if self.L > 1 else [(True, True)]
        for make_rows, add_units in passes:
            n_read = 0
            for batch in _batches(read(), len(gold)):
                per_sentence = self._unit_rows(batch)
                per_template = [stack(list(rows)) for rows in zip(*per_sentence)]
                del per_sentence
                self.add([len(s.rows) for s in batch], gold[n_read:n_read + len(batch)],
                         spans[n_read:n_read + len(batch)], per_template, make_rows, add_units)
                n_read += len(batch)
            if n_read != len(gold):
                raise DataError(f"the training data changed while it was read: {len(gold)} "
                                f"sequences on the first pass, {n_read} on a later one",
                                source, 0)

    def _unit_rows(self, batch: list[Sentence]) -> list[list[Rows]]:
        """Every unit's rows of the sentences of a batch, per template.  A
        *prepared* sentence (one with ``tags`` and ``unit_rows(keys)``, as
        ``fgl.io.feature_dicts`` makes of feature dicts) gives its rows
        itself, with the keys the spec's observations would give."""
        if self.L == 1 and all(hasattr(s, "unit_rows") for s in batch):
            return [s.unit_rows(self.attributes.keys) for s in batch]
        cols = [sentence_columns(self.spec, s.rows, s.lines, s.file)[0] for s in batch]
        return self.cls._unit_rows(self.attributes, cols, [len(s.rows) for s in batch], self.L)

    def add(self, lengths: list[int], seqs: list[list[int]], spans: list[list[tuple[int, int]]],
            per_template: list[Rows], make_rows: bool = True, add_units: bool = True) -> None:
        """Training sentences of ``lengths`` tokens, given their units'
        attribute rows per template (sentence after sentence): rows for the
        attributes of their gold units (numbered in order of first
        appearance: template, sentence, unit, item), their supported
        patterns (``make_rows``), and every unit's rows (``add_units``) —
        array work over attribute ids, no Python step per (unit, attribute).
        In one call doing both, a unit keeps only attributes that have a row
        when it is reached, which is all of them when every unit is a gold
        one (a chain)."""
        L = self.L
        if add_units:
            self.n_sequences, self.n_tokens = self.n_sequences + len(lengths), \
                self.n_tokens + sum(lengths)
            self.longest = max(self.longest, *lengths)
        if self.key_rows is None:
            self.key_rows = KeyRows(self.attributes.keys, self.vocabs)
        # gold segment j covers unit u·L + v - u of its sentence (with L = 1,
        # unit t is token t); units and segments numbered across the sentences
        first_unit = np.cumsum([0] + [T * L for T in lengths])
        n_units = int(first_unit[-1])
        gold_unit = np.array([first + u * L + v - u for first, segs in zip(first_unit, spans)
                              for u, v in segs], dtype=np.int64)
        j_of_unit = np.full(n_units, -1, dtype=np.int64)
        j_of_unit[gold_unit] = np.arange(len(gold_unit), dtype=np.int64)
        of_items = [np.repeat(np.arange(n_units, dtype=np.int64), rows.lengths())
                    for rows in per_template]
        if make_rows:
            self._new_rows(per_template, of_items, j_of_unit,
                           np.repeat(np.arange(len(lengths)), [T * L for T in lengths]))
        unit_items, row_items, val_items = [], [], []
        for ti, (plan, rows, of_item) in enumerate(zip(self.plans, per_template, of_items)):
            j_item = j_of_unit[of_item]
            r = self.key_rows.table(ti)[rows.key]
            if make_rows and self.row_count is not None:
                self._count(r[(j_item >= 0) & (r >= 0)])
            if make_rows and plan.support == "observed":
                self._support(ti, seqs, r, j_item)
            if not add_units:
                continue
            keep = (r >= 0) & self.key_rows.scored(rows.key, self.cls.const_key)
            unit_items.append(of_item[keep])
            row_items.append(r[keep])
            val_items.append(rows.val[keep])
        if add_units:
            _add_units(self.units, n_units, unit_items, row_items, val_items)

    def _count(self, rows: np.ndarray) -> None:
        """Count one occurrence of each of ``rows`` (attribute rows at gold
        units; a unit holds an attribute once)."""
        n = len(self.row_template)
        if len(self.row_count) < n:
            grown = np.zeros(max(n, 2 * len(self.row_count)), dtype=np.int64)
            grown[:len(self.row_count)] = self.row_count
            self.row_count = grown
        np.add.at(self.row_count, rows, 1)

    def _cut(self) -> None:
        """Drop the attribute rows below their template's ``min_count``
        (``fgl.lang.settings``): from the vocabularies, the supported
        patterns and every unit; the rows left are renumbered in order."""
        n = len(self.row_template)
        template = np.frombuffer(self.row_template, dtype=np.int32)
        keep = keep_counted(self.row_count[:n], template, self.plans)
        if keep is None or keep.all():
            return
        new = np.full(n, -1, dtype=np.int64)
        new[keep] = np.arange(int(keep.sum()))
        for vocab in self.vocabs:
            for key in [k for k, r in vocab.items() if not keep[r]]:
                del vocab[key]
            for key, r in vocab.items():
                vocab[key] = int(new[r])
        self.row_first = array("q", np.frombuffer(self.row_first, dtype=np.int64)[keep]
                               .tobytes())
        self.row_template = array("i", template[keep].tobytes())
        n_z = self.n_z
        self.row_more = {int(new[c // n_z]) * n_z + c % n_z for c in self.row_more
                         if keep[c // n_z]}
        unit_ptr, unit_rows, values = self.units.arrays()
        kept = keep[unit_rows]
        within = np.zeros(len(kept) + 1, dtype=np.int64)
        np.cumsum(kept, out=within[1:])
        units = UnitRows()
        units.ptr = array("q", within[unit_ptr].tobytes())
        units.rows = array("i", new[unit_rows[kept]].astype(np.int32).tobytes())
        if self.units.vals is not None:
            units.vals = array("d", values[kept].tobytes())
        self.units = units
        self.key_rows = None

    def _new_rows(self, per_template: list[Rows], of_items: list[np.ndarray],
                  j_of_unit: np.ndarray, sentence_of_unit: np.ndarray) -> None:
        """Rows for the attributes of gold units that have none yet, numbered
        in order of first appearance (sentence, template, unit, item)."""
        order_keys = []
        for ti, (rows, of_item) in enumerate(zip(per_template, of_items)):
            new = (j_of_unit[of_item] >= 0) & (self.key_rows.table(ti)[rows.key] < 0)
            where = np.flatnonzero(new)
            uniq, first = np.unique(rows.key[where], return_index=True)
            order_keys.append((sentence_of_unit[of_item[where[first]]],
                               np.full(len(uniq), ti), where[first], uniq))
        sent, tpl, item, ids = (np.concatenate(k) for k in zip(*order_keys))
        order = np.lexsort((item, tpl, sent))
        names = self.attributes.keys.keys
        start = len(self.row_first)
        for row, (ti, k) in enumerate(zip(tpl[order].tolist(), ids[order].tolist()), start):
            self.key_rows.by_id[ti][k] = row
            self.vocabs[ti][names[k]] = row
        self.row_first.extend([-1] * len(order))
        self.row_template.extend(tpl[order].tolist())

    def _support(self, ti: int, seqs: list[list[int]], r: np.ndarray, j_item: np.ndarray
                 ) -> None:
        """Record the patterns matched at gold segment j (numbered across the
        sentences' label sequences ``seqs``) as supported by the rows of j's
        attributes (each row's first in ``row_first``, others in
        ``row_more``)."""
        pset, n_z = self.pattern_sets[ti], self.n_z
        matched = [[z for m in self.lengths[ti] if m <= j + 1
                    for z in [pset.get(tuple(seq[j - m + 1:j + 1]))] if z is not None]
                   for seq in seqs for j in range(len(seq))]
        n_matched = np.array([len(z) for z in matched], dtype=np.int64)
        z_flat = np.array([z for zs in matched for z in zs], dtype=np.int64)
        z_ptr = np.concatenate([[0], np.cumsum(n_matched)])
        gold = j_item >= 0
        rows, js = r[gold], j_item[gold]
        per = n_matched[js]
        if not per.sum():
            return
        pair_row = np.repeat(rows, per)
        within = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
        pair_z = z_flat[np.repeat(z_ptr[js], per) + within]
        first = np.frombuffer(self.row_first, dtype=np.int64)
        uniq, at = np.unique(pair_row, return_index=True)
        unset = first[uniq] < 0
        first[uniq[unset]] = pair_z[at[unset]]
        other = pair_z != first[pair_row]
        self.row_more.update((pair_row[other] * n_z + pair_z[other]).tolist())

    def finish(self) -> tuple[np.ndarray, np.ndarray, list[dict[str, int]], tuple]:
        """(row_ptr, feat_pattern, vocabularies, unit arrays), with rows
        numbered by how often they occur, so the weights scored for most
        tokens share cache lines (about 10% faster per evaluation on
        CoNLL-2000).  Rows below their template's ``min_count`` are dropped
        first."""
        if self.row_count is not None:
            self._cut()
        unit_ptr, unit_rows, values = self.units.arrays()
        order = np.argsort(-np.bincount(unit_rows, minlength=len(self.row_template)),
                           kind="stable")
        new_id = np.empty(len(order), dtype=np.int32)
        new_id[order] = np.arange(len(order))
        for vocab in self.vocabs:
            for key, r in vocab.items():
                vocab[key] = int(new_id[r])
        for lo in range(0, len(unit_rows), 1 << 20):  # renumber in place, a block at a time
            block = unit_rows[lo:lo + (1 << 20)]
            block[:] = new_id[block]
        row_ptr, feat_pattern = self._table(new_id)
        return row_ptr, feat_pattern, self.vocabs, (unit_ptr, unit_rows, values)

    def _check_size(self, template: np.ndarray, first: np.ndarray) -> None:
        """Count the features before making them and refuse, at the template
        that makes most, a model whose training would exceed the memory
        budget (``fgl.compile.footprint``)."""
        rows = np.bincount(template, minlength=len(self.plans))
        counts = []
        for ti, plan in enumerate(self.plans):
            if plan.support == "all":
                counts.append(int(rows[ti]) * len(self.pattern_sets[ti]))
            else:
                counts.append(int(np.count_nonzero(first[template == ti] >= 0)))
        counts[0] += len(self.row_more)   # (observed extra patterns; their template aside)
        notes = [f"would make {n:,} features (" + (
            f"{rows[ti]} attributes x {len(self.pattern_sets[ti])} patterns, support = all"
            if plan.support == "all" else f"{n:,} (attribute, pattern) pairs") + ")"
            for ti, (n, plan) in enumerate(zip(counts, self.plans))]
        fp = _footprint(self.L, self.structure, counts, notes, len(template), self.n_tokens,
                        len(self.units.ptr) - 1, len(self.units.rows), self.longest,
                        self.n_sequences, self.jobs)
        fp.check(self.spec.templates)
        if only_sizing(sum(counts)):   # (fgl explain: the estimate, not the table)
            st = self.structure
            raise SizedOnly([
                f"labels (n = {st.n_labels}), patterns |Z| = {len(st.patterns)}, maximum order "
                f"{max(len(z) for z in st.patterns) - 1}",
                f"forward states |P| = {st.n_forward}, backward states |S| = |P|·n = "
                f"{st.n_backward}",
                f"features: {sum(counts):,} (counted, not built: more than "
                f"{sizes.SIZED_ONLY_FEATURES:,}; `fgl train` builds them)", "templates:",
                *[f"  {tpl.name}: {int(rows[ti]):,} attributes, {note}"
                  for ti, (tpl, note) in enumerate(zip(self.spec.templates, notes))],
                f"training data: {self.n_sequences} sequences, {self.n_tokens} tokens",
                fp.line()], fp)

    def _table(self, new_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The features as CSR over the renumbered rows: a row's supported
        patterns, or every pattern of its template when the template has
        ``support = all``; patterns ascending within a row."""
        n_z = self.n_z
        first = np.frombuffer(self.row_first, dtype=np.int64)
        template = np.frombuffer(self.row_template, dtype=np.int32)
        self._check_size(template, first)
        rows = np.arange(len(first))
        every = np.array([plan.support == "all" for plan in self.plans])
        observed = ~every[template] & (first >= 0)
        more = np.fromiter(self.row_more, dtype=np.int64, count=len(self.row_more))
        pair_row, pair_z = [rows[observed], more // n_z], [first[observed], more % n_z]
        for ti in np.flatnonzero(every):
            tpl_rows = rows[template == ti]
            zs = np.array(sorted(self.pattern_sets[ti].values()), dtype=np.int64)
            pair_row.append(np.repeat(tpl_rows, len(zs)))
            pair_z.append(np.tile(zs, len(tpl_rows)))
        row_id = new_id[np.concatenate(pair_row)].astype(np.int64)
        z = np.concatenate(pair_z)
        order = np.argsort(row_id * n_z + z, kind="stable")
        row_ptr = np.zeros(len(first) + 1, dtype=np.int64)
        row_ptr[1:] = np.cumsum(np.bincount(row_id, minlength=len(first)))
        return row_ptr, z[order]


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
    def _declared(cls, spec: ast.Spec) -> list[str] | None:
        declared = spec.label_sets.get(spec.outputs[0])
        return list(declared[0]) if declared else None

    @classmethod
    def _gold_segments(cls, spec: ast.Spec, tags: list[str], sent: Sentence) -> list[Segment]:
        return [(t, t, y) for t, y in enumerate(tags)]

    @classmethod
    def _unit_attributes(cls, attributes: TemplateAttributes, cols: dict[str, list], T: int,
                         L: int) -> UnitAttributes:
        return attributes(cols, T)

    @classmethod
    def _unit_rows(cls, attributes: TemplateAttributes, cols: list[dict[str, list]],
                   lengths: list[int], L: int) -> list[list[Rows]]:
        return [[attributes.interned(rows) for rows in attributes(c, T)]
                for c, T in zip(cols, lengths)]

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
        seg = spec.segments
        return min(max([seg.max_length, *seg.per_label.values()]), max(longest, 1))

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

    def _program(self, row_ptr: np.ndarray, feat_pattern: np.ndarray) -> SemiMarkovProgram:
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
        return SemiMarkovProgram(self.structure, row_ptr, feat_pattern, limits, const_rows,
                                 seg.distinct)

    @classmethod
    def _gold_segments(cls, spec: ast.Spec, tags: list[str], sent: Sentence) -> list[Segment]:
        return segments_from_tags(tags, spec.segments, sent)

    @classmethod
    def _unit_attributes(cls, attributes: TemplateAttributes, cols: dict[str, list], T: int,
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
    def _unit_rows(cls, attributes: TemplateAttributes, cols: list[dict[str, list]],
                   lengths: list[int], L: int) -> list[list[Rows]]:
        """``_unit_attributes`` as rows of attribute ids: span (u, d) at unit
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


ADVICE = ("use support = observed, fewer patterns or fewer observations (in a segment model, "
          "a shorter `segments max`), or give a larger budget")


def _footprint(span: int, structure: ChainStructure, features: list[int], notes: list[str],
               attributes: int, tokens: int, units: int, unit_rows: int, longest: int,
               n_sequences: int, jobs: int) -> Footprint:
    """``sequence_footprint`` of a model whose units cover up to ``span`` tokens."""
    return sequence_footprint(features, notes, ADVICE, attributes=attributes, tokens=tokens,
                              units=units, unit_rows=unit_rows, longest=longest, span=span,
                              n_labels=structure.n_labels, n_forward=structure.n_forward,
                              n_patterns=len(structure.patterns), n_sequences=n_sequences,
                              jobs=jobs)


def _check_counts(span: int, spec: ast.Spec, plans: list[TemplatePlan],
                  z_list: list[tuple[int, ...]], n_labels: int,
                  spans: list[list[tuple[int, int]]], jobs: int) -> None:
    """Refuse, from the counts the first pass over the data gives (labels,
    label patterns, tokens, the longest sequence), a model whose state
    machine, units and inference scratch alone would exceed the memory
    budget — before any of them is made — at the `segments max` when the
    candidate segments take most, else at the template of the most label
    patterns when the label states and inference take more than the data.
    Features count as a lower bound here (one attribute per pattern of a
    ``support = all`` template; the vocabularies are not read yet):
    ``_FeatureTable._check_size`` counts them exactly before they are made,
    and refuses what is left (a chain's training data, say)."""
    n_forward, n_states = chain_states(n_labels, z_list)
    lengths = [segs[-1][1] + 1 if segs else 0 for segs in spans]
    longest, tokens = max(lengths, default=1), sum(lengths)
    features = [len(p.patterns) if p.support == "all" else 0 for p in plans]
    fp = sequence_footprint(features, [""] * len(plans), ADVICE, attributes=0, tokens=tokens,
                            units=tokens * span, unit_rows=0, longest=longest, span=span,
                            n_labels=n_labels, n_forward=n_forward, n_patterns=len(z_list),
                            n_sequences=len(spans), jobs=jobs)
    fp.parts["label states"] = float(n_states * PY_PER_TRANSITION)
    fp.parts["training data"] += float(longest * span * (
        BYTES_PER_UNIT_MADE + BYTES_PER_UNIT_MADE_TEMPLATE * len(plans)))
    if fp.total <= memory_budget():
        return
    per_span = fp.parts["inference"] + fp.parts["training data"]
    if span > 1 and per_span >= fp.parts["label states"]:   # (span > 1: a segment model)
        fp.advice = ("use a shorter `segments max` (or shorter per-label limits), split the "
                     "longest sequences, or give a larger budget")
        fp.refuse(f"`segments max {span}` makes {longest * span:,} candidate segments in the "
                  f"longest sequence ({longest:,} tokens x {span} lengths; {tokens * span:,} in "
                  f"all)", spec.segments.loc)
    if fp.parts["label states"] + fp.parts["inference"] < fp.parts["training data"]:
        return   # (a chain's data, read already: the exact count after the rows refuses it)
    ti = max(range(len(plans)), key=lambda t: (len(plans[t].patterns), -t))
    tpl = spec.templates[ti]
    fp.advice = STATES_ADVICE
    fp.refuse(f"template '{tpl.name}' has {len(plans[ti].patterns):,} label patterns over "
              f"{n_labels:,} labels: with the others, {n_forward:,} forward states x {n_labels:,} "
              f"labels = {n_states:,} label-state transitions, each scored at every "
              f"{'unit' if span > 1 else 'token'} of sequences of up to {longest:,} tokens",
              tpl.loc)
