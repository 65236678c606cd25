"""The compiler: checked spec + training data -> a program and its features.

It picks the engine from the spec: contiguous label windows of one chain ->
the exact pattern-sparse chain program (Ye et al. 2009 §3); ``segments`` declared
-> the exact high-order semi-Markov program (Cuong et al. 2014 §2).  It resolves each
template's label patterns (explicit, all, or observed in training data,
Ye et al. 2009 §4 / Cuong et al. 2014 §3.1), builds the pattern set Z, the forward-state
machine, and the feature table: one weight per (attribute, pattern) pair of a
template, restricted by default to pairs seen in training ("supported"
features) — or every pair with ``support = all``.  Templates without
observations (pure label-pattern weights, e.g. transitions) get every
pattern.

Observations are evaluated on *units*: tokens for a chain, candidate
segments (u, d) — unit u·L + d - 1 — for a semi-Markov model.
"""
from __future__ import annotations

import itertools
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence, Union

import numpy as np

from fgl.lang import ast
from fgl.engines.chain import ChainStructure
from fgl.errors import DataError, SpecError
from fgl.io.conll import Sentence
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.engines.programs import ChainProgram, EncodedData, SemiMarkovProgram, unit_ones
from fgl.compile.segmentation import segments_from_tags, tags_from_segments

DEFAULT_SIGMA = 10.0
# training data: sentences in memory, or a function giving a fresh pass over them
Sentences = Union[Sequence[Sentence], Callable[[], Iterable[Sentence]]]
MAX_ALL_PATTERNS = 200_000


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

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit pointers, rows, values) sharing the buffers."""
        rows = np.frombuffer(self.rows, dtype=np.int32)
        vals = unit_ones(len(rows)) if self.vals is None else np.frombuffer(self.vals)
        return np.frombuffer(self.ptr, dtype=np.int64), rows, vals


@dataclass
class TemplatePlan:
    """One clique template after compilation."""

    name: str
    width: int                      # labels in the window, k + 1
    patterns: list[tuple[int, ...]]  # label-id tuples, oldest first
    sigma: float
    support: str                     # "observed" | "all"
    has_observations: bool


@dataclass
class CompiledModel:
    """Everything needed to score, train and tag: labels, templates, the
    attribute vocabularies and the program.  Saved by ``fgl.model_io``."""

    spec: ast.Spec
    base_dir: Path
    labels: list[str]
    templates: list[TemplatePlan]
    vocabs: list[dict[str, int]]     # per template: attribute key -> row id
    program: ChainProgram | SemiMarkovProgram
    feat_sigma: np.ndarray
    attributes: TemplateAttributes = field(repr=False)

    @classmethod
    def assemble(cls, spec: ast.Spec, base_dir: Path, labels: list[str],
                 templates: list[TemplatePlan], patterns: list[tuple[int, ...]],
                 vocabs: list[dict[str, int]], row_ptr: np.ndarray, feat_pattern: np.ndarray,
                 lexicons: dict[str, frozenset[str]] | None = None) -> "CompiledModel":
        """Build the program and per-feature sigmas from the compiled parts
        (used by the compiler and by model loading)."""
        structure = ChainStructure.build(len(labels), patterns)
        row_sigma = np.empty(len(row_ptr) - 1)
        for plan, vocab in zip(templates, vocabs):
            row_sigma[list(vocab.values())] = plan.sigma
        feat_sigma = np.repeat(row_sigma, np.diff(row_ptr))
        if spec.segments is None:
            const_rows = np.array([v["bias"] for v in vocabs if "bias" in v], dtype=np.int64)
            program = ChainProgram(structure, row_ptr, feat_pattern, const_rows)
        else:
            program = SemiMarkovProgram(structure, row_ptr, feat_pattern,
                                        spec.segments.max_length, _label_limits(spec, labels))
        return cls(spec, base_dir, labels, templates, vocabs, program, feat_sigma,
                   TemplateAttributes(spec, base_dir, lexicons))

    @property
    def label_index(self) -> dict[str, int]:
        return {y: i for i, y in enumerate(self.labels)}

    @property
    def units_per_token(self) -> int:
        return 1 if self.spec.segments is None else self.spec.segments.max_length

    def unit_attributes(self, cols: dict[str, list], T: int) -> list[list[list[tuple[str, float]]]]:
        """Per template, the (attribute, value) lists of every unit."""
        return _unit_attributes(self.attributes, cols, T, self.units_per_token,
                                self.spec.segments is not None)

    def encode(self, sentences: list[Sentence], with_gold: bool = False) -> EncodedData:
        """Encode sentences for the engines; attributes never seen in
        training have no weights and are skipped."""
        const_key = _const_key(self.spec)
        seq_ptr = [0]
        units = UnitRows()
        gold: list[int] = []
        starts: list[int] = []
        for sent in sentences:
            cols, tags = sentence_columns(self.spec, sent.rows, sent.lines, sent.file)
            T = len(sent.rows)
            per_template = self.unit_attributes(cols, T)
            for unit in range(T * self.units_per_token):
                rows, vals = [], []
                for vocab, tpl_rows in zip(self.vocabs, per_template):
                    for key, v in tpl_rows[unit]:
                        r = vocab.get(key)
                        if r is not None and key != const_key:
                            rows.append(r)
                            vals.append(v)
                units.add(rows, vals)
            if with_gold:
                if tags is None:
                    raise DataError("this data has no label column", sent.file, sent.lines[0])
                ids, st = self._gold(tags, sent)
                gold.extend(ids)
                starts.extend(st)
            seq_ptr.append(seq_ptr[-1] + T)
        tok_ptr, tok_row, tok_val = units.arrays()
        return EncodedData(np.array(seq_ptr, dtype=np.int64), tok_ptr, tok_row, tok_val,
                           np.array(gold, dtype=np.int64) if with_gold else None,
                           np.array(starts, dtype=np.int64) if with_gold else None,
                           self.units_per_token)

    def _gold(self, tags: list[str], sent: Sentence) -> tuple[list[int], list[int]]:
        """Gold label ids per token and segment starts (every token starts
        one in a chain model)."""
        lab = self.label_index
        if self.spec.segments is None:
            segs = [(t, t, y) for t, y in enumerate(tags)]
        else:
            segs = segments_from_tags(tags, self.spec.segments, sent)
        ids, starts = [0] * len(tags), [0] * len(tags)
        for u, v, y in segs:
            if y not in lab:
                raise DataError(f"unknown label '{y}'; the model knows: {', '.join(self.labels)}",
                                sent.file, sent.lines[u])
            ids[u:v + 1] = [lab[y]] * (v - u + 1)
            starts[u] = 1
        return ids, starts

    def tags(self, labels: np.ndarray, starts: np.ndarray | None) -> list[str]:
        """Token tags of one decoded sequence (segments back to BIO tags or
        label runs in a segment model)."""
        if starts is None:
            return [self.labels[i] for i in labels]
        segs, u = [], 0
        for t in range(1, len(labels) + 1):
            if t == len(labels) or starts[t]:
                segs.append((u, t - 1, self.labels[labels[u]]))
                u = t
        return tags_from_segments(segs, len(labels), self.spec.segments.boundary)

    def explain(self) -> str:
        """The compiled program, its sizes, and why this engine."""
        st = self.program.structure
        n, P, S = st.n_labels, st.n_forward, st.n_backward
        order = max(len(z) for z in st.patterns) - 1
        if self.spec.segments is None:
            lines = [
                "engine: exact pattern-sparse chain (Ye et al. 2009 §3)",
                "  why: every template is a contiguous label window y[t-k..t] of one chain,"
                " so inference is exact in O(T·n·|P|)",
            ]
            cost = (f"cost of one pass: O(T·n·|P|) = {S} transition updates per token"
                    f" (a dense order-{order} chain would need n^{order + 1} = {n ** (order + 1)})")
        else:
            L = self.program.max_length
            limits = ", ".join(f"{y} {m}" for y, m in zip(self.labels, self.program.label_max)
                               if m != L)
            lines = [
                "engine: exact high-order semi-Markov (Cuong et al. 2014 §2)",
                "  why: the spec declares segments; templates range over segment label"
                " windows s[j-k..j], so inference is exact in O(T·L·n·|P|)",
                f"maximum segment length L = {L}" + (f" (per label: {limits})" if limits else ""),
            ]
            cost = (f"cost of one pass: O(T·L·n·|P|) = {L}·{S} = {L * S} span-transition"
                    f" updates per token")
        lines += [
            f"labels (n = {n}): {' '.join(self.labels)}",
            f"patterns |Z| = {len(st.patterns)}, maximum order {order}",
            f"forward states |P| = {P}, backward states |S| = |P|·n = {S}",
            cost,
            f"features: {self.program.n_features}",
            "templates:",
        ]
        for tpl, vocab in zip(self.templates, self.vocabs):
            nfeat = int(sum(self.program.row_ptr[r + 1] - self.program.row_ptr[r]
                            for r in vocab.values()))
            lines.append(f"  {tpl.name}: window {tpl.width}, {len(tpl.patterns)} patterns, "
                         f"{len(vocab)} attributes, {nfeat} features, sigma {tpl.sigma:g}, "
                         f"support {tpl.support}")
        return "\n".join(lines)


def _unit_attributes(attributes: TemplateAttributes, cols: dict[str, list], T: int, L: int,
                     segments: bool) -> list[list[list[tuple[str, float]]]]:
    """Attributes per template of every unit: per token, or per candidate
    segment (u, d) at index u·L + d - 1 (empty past the end)."""
    if not segments:
        return attributes(cols, T)
    spans = [(u, u + d - 1) for u in range(T) for d in range(1, L + 1) if u + d <= T]
    per_template = attributes(cols, T, spans)
    out = []
    for rows in per_template:
        units: list[list[tuple[str, float]]] = [[] for _ in range(T * L)]
        for (u, v), items in zip(spans, rows):
            units[u * L + v - u] = items
        out.append(units)
    return out


def _const_key(spec: ast.Spec) -> str | None:
    """The attribute a chain program scores on its own, not per token: the
    constant ``bias`` row of each template (``ChainProgram.const_rows``)."""
    return "bias" if spec.segments is None else None


def _label_limits(spec: ast.Spec, labels: list[str]) -> np.ndarray:
    seg = spec.segments
    limits = np.full(len(labels), seg.max_length, dtype=np.int64)
    for name, m in seg.per_label.items():
        if name not in labels:
            raise _loc_error(f"segment length limit for unknown label '{name}'; the labels are: "
                             f"{', '.join(labels)}", getattr(name, "loc", seg.loc))
        limits[labels.index(name)] = min(int(m), seg.max_length)
    return limits


def _loc_error(message: str, loc: ast.Loc) -> SpecError:
    return SpecError(message, loc.file, loc.line, loc.col)


def _settings(items: list[ast.Setting]) -> dict[str, object]:
    return {s.key: s.value for s in items}


def train_settings(spec: ast.Spec) -> dict[str, object]:
    """The spec's ``train { ... }`` block as a dict."""
    return _settings(spec.train)


def _window(tpl: ast.Template) -> int:
    """Labels in the template's window y[t-k..t] (written as a range or as
    a tuple of positions; the checker ensures it is contiguous)."""
    return 1 - min(ref.lo for ref in tpl.labels)


def _resolve_patterns(tpl: ast.Template, labels: list[str], gold: list[list[int]]
                      ) -> list[tuple[int, ...]]:
    width = _window(tpl)
    spec = tpl.patterns
    kind = spec.kind if spec is not None else ("all" if width <= 2 else "observed")
    if kind == "list":
        index = {y: i for i, y in enumerate(labels)}
        out = []
        for pat in spec.patterns:
            for y in pat:
                if y not in index:
                    # the parser attaches a location to each label and pattern
                    loc = getattr(y, "loc", getattr(pat, "loc", spec.loc))
                    raise _loc_error(f"unknown label '{y}' in pattern of template '{tpl.name}';"
                                     f" the training data has: {', '.join(labels)}", loc)
            out.append(tuple(index[y] for y in pat))
        return list(dict.fromkeys(out))
    if kind == "all":
        count = len(labels) ** width
        if count > MAX_ALL_PATTERNS:
            loc = spec.loc if spec else tpl.loc
            raise _loc_error(f"'patterns all' over a window of {width} labels makes {count} "
                             f"patterns; use 'patterns observed'", loc)
        return list(itertools.product(range(len(labels)), repeat=width))
    lengths = range(1, width + 1) if kind == "observed_upto" else [width]
    seen: dict[tuple[int, ...], None] = {}
    for seq in gold:
        for m in lengths:
            for t in range(m - 1, len(seq)):
                seen.setdefault(tuple(seq[t - m + 1:t + 1]), None)
    return sorted(seen, key=lambda z: (len(z), z))


def _feature_table(plans: list[TemplatePlan], pattern_sets: list[dict], row_first: array,
                   row_more: set[int], row_template: array, new_id: np.ndarray, n_z: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The features as CSR over the renumbered rows: a row's supported
    patterns (its first, plus codes row·|Z| + pattern in ``row_more``), or
    every pattern of its template when the template has ``support = all``;
    patterns ascending within a row."""
    first = np.frombuffer(row_first, dtype=np.int64)
    template = np.frombuffer(row_template, dtype=np.int32)
    rows = np.arange(len(first))
    every = np.array([plan.support == "all" for plan in plans])
    observed = ~every[template] & (first >= 0)
    more = np.fromiter(row_more, dtype=np.int64, count=len(row_more))
    pair_row, pair_z = [rows[observed], more // n_z], [first[observed], more % n_z]
    for ti in np.flatnonzero(every):
        tpl_rows = rows[template == ti]
        zs = np.array(sorted(pattern_sets[ti].values()), dtype=np.int64)
        pair_row.append(np.repeat(tpl_rows, len(zs)))
        pair_z.append(np.tile(zs, len(tpl_rows)))
    row_id = new_id[np.concatenate(pair_row)].astype(np.int64)
    z = np.concatenate(pair_z)
    order = np.argsort(row_id * n_z + z, kind="stable")
    row_ptr = np.zeros(len(first) + 1, dtype=np.int64)
    row_ptr[1:] = np.cumsum(np.bincount(row_id, minlength=len(first)))
    return row_ptr, z[order]


def compile_model(spec: ast.Spec, sentences: Sentences, base_dir: Path | None = None,
                  overrides: dict[str, object] | None = None, source: str = "<train>",
                  ) -> tuple[CompiledModel, EncodedData]:
    """Compile a checked spec against training data (read from ``source``);
    returns the model and the encoded training data (with gold labels).

    ``sentences`` is a list, or a function returning a fresh iterator over
    them (e.g. ``lambda: iter_conll(path)``): the data is then read twice —
    labels and patterns first, then features — and never held whole."""
    if not callable(sentences) and iter(sentences) is sentences:  # a one-pass iterator
        sentences = list(sentences)
    read = sentences if callable(sentences) else (lambda: sentences)
    base_dir = base_dir or Path(".")
    settings = {**train_settings(spec), **(overrides or {})}
    attributes = TemplateAttributes(spec, base_dir)
    L = 1 if spec.segments is None else spec.segments.max_length
    chain = spec.segments is None

    # gold units: per sentence the tags (chain: one unit per token) or the
    # (first token, last token, label) of each gold segment
    declared = spec.label_sets.get(spec.outputs[0]) if chain else None
    gold_units: list[list] = []
    for sent in read():
        _, tags = sentence_columns(spec, sent.rows, sent.lines, sent.file)
        if tags is None:
            raise DataError(f"training data needs the label column '{spec.outputs[0]}'",
                            sent.file, sent.lines[0])
        units = ([(t, t, y) for t, y in enumerate(tags)] if chain
                 else segments_from_tags(tags, spec.segments, sent))
        if declared:
            for u, _, y in units:
                if y not in declared[0]:
                    raise DataError(f"label '{y}' is not among the declared labels: "
                                    f"{', '.join(declared[0])}", sent.file, sent.lines[u])
        gold_units.append([sys.intern(y) for _, _, y in units] if chain
                          else [(u, v, sys.intern(y)) for u, v, y in units])
    if not gold_units:
        raise DataError("the training data has no sequences", source, 0)
    labels = list(declared[0]) if declared else sorted(
        {y for units in gold_units for y in (units if chain else (seg[2] for seg in units))})
    index = {y: i for i, y in enumerate(labels)}
    gold = [[index[y] for y in units] if chain else [index[y] for _, _, y in units]
            for units in gold_units]
    spans = None if chain else [[(u, v) for u, v, _ in units] for units in gold_units]
    del gold_units

    sigma = float(settings.get("sigma", DEFAULT_SIGMA))
    plans = []
    for tpl in spec.templates:
        opts = _settings(tpl.options)
        plans.append(TemplatePlan(
            tpl.name, _window(tpl), _resolve_patterns(tpl, labels, gold),
            float(opts.get("sigma", sigma)),
            str(opts.get("support", "observed" if tpl.observations else "all")),
            bool(tpl.observations)))
    singles = [(y,) for y in range(len(labels))]
    z_list = list(dict.fromkeys(singles + [z for p in plans for z in p.patterns]))
    z_index = {z: i for i, z in enumerate(z_list)}

    # attribute rows, their supported patterns, and every unit's rows (flat
    # CSR arrays filled sentence by sentence, to keep memory low)
    vocabs: list[dict[str, int]] = [{} for _ in plans]
    # supported patterns per row: the first in row_first (-1: none yet), any
    # others as codes row·|Z| + pattern in row_more — most rows have one, and
    # a set per row is costly
    n_z = len(z_list)
    row_first = array("q")
    row_more: set[int] = set()
    row_template = array("i")
    units = UnitRows()
    const_key = _const_key(spec)
    pattern_sets = [{z: z_index[z] for z in p.patterns} for p in plans]
    lengths = [sorted({len(z) for z in p.patterns}) for p in plans]
    n_read = 0
    for i, sent in enumerate(read()):
        if i >= len(gold):
            break
        n_read += 1
        cols, _ = sentence_columns(spec, sent.rows, sent.lines, sent.file)
        seq = gold[i]
        T = len(sent.rows)
        per_template = _unit_attributes(attributes, cols, T, L, not chain)
        # gold segment j covers unit u·L + v - u; a chain's unit t is token t
        gold_unit = None if chain else {u * L + v - u: j for j, (u, v) in enumerate(spans[i])}
        seq_rows: list[list[int]] = [[] for _ in range(T * L)]
        seq_vals: list[list[float]] = [[] for _ in range(T * L)]
        for ti, plan in enumerate(plans):
            vocab, pset = vocabs[ti], pattern_sets[ti]
            for unit, items in enumerate(per_template[ti]):
                j = unit if chain else gold_unit.get(unit)
                if j is None:  # not a gold segment: only attributes seen on gold ones
                    for key, v in items:
                        r = vocab.get(key)
                        if r is not None and key != const_key:
                            seq_rows[unit].append(r)
                            seq_vals[unit].append(v)
                    continue
                matched = []
                if plan.support == "observed":
                    for m in lengths[ti]:
                        if m <= j + 1:
                            z = pset.get(tuple(seq[j - m + 1:j + 1]))
                            if z is not None:
                                matched.append(z)
                for key, v in items:
                    r = vocab.get(key)
                    if r is None:
                        r = vocab[key] = len(row_first)
                        row_first.append(-1)
                        row_template.append(ti)
                    for z in matched:
                        first = row_first[r]
                        if first < 0:
                            row_first[r] = z
                        elif first != z:
                            row_more.add(r * n_z + z)
                    if key != const_key:
                        seq_rows[unit].append(r)
                        seq_vals[unit].append(v)
        for r_list, v_list in zip(seq_rows, seq_vals):
            units.add(r_list, v_list)
    if n_read != len(gold):
        raise DataError(f"the training data changed while it was read: {len(gold)} sequences "
                        f"on the first pass, {n_read} on the second", source, 0)

    # number rows by how often they occur, so the weights scored for most
    # tokens share cache lines (about 10% faster per evaluation on CoNLL-2000)
    unit_ptr, unit_rows, values = units.arrays()
    order = np.argsort(-np.bincount(unit_rows, minlength=len(row_template)), kind="stable")
    new_id = np.empty(len(order), dtype=np.int32)
    new_id[order] = np.arange(len(order))
    for vocab in vocabs:
        for key, r in vocab.items():
            vocab[key] = int(new_id[r])
    for lo in range(0, len(unit_rows), 1 << 20):  # renumber in place, a block at a time
        block = unit_rows[lo:lo + (1 << 20)]
        block[:] = new_id[block]
    row_ptr, feat_pattern = _feature_table(plans, pattern_sets, row_first, row_more, row_template,
                                           new_id, n_z)
    model = CompiledModel.assemble(spec, base_dir, labels, plans, z_list, vocabs, row_ptr,
                                   feat_pattern, attributes.lexicons)
    seq_ptr = np.zeros(len(gold) + 1, dtype=np.int64)
    if chain:
        seq_ptr[1:] = np.cumsum([len(seq) for seq in gold])
        gold_tokens = [y for seq in gold for y in seq]
        starts = [1] * len(gold_tokens)
    else:
        seq_ptr[1:] = np.cumsum([sum(v - u + 1 for u, v in segs) for segs in spans])
        gold_tokens, starts = [], []
        for segs, seq in zip(spans, gold):
            for (u, v), y in zip(segs, seq):
                gold_tokens.extend([y] * (v - u + 1))
                starts.extend([1] + [0] * (v - u))
    data = EncodedData(seq_ptr, unit_ptr, unit_rows, values,
                       np.array(gold_tokens, dtype=np.int64), np.array(starts, dtype=np.int64), L)
    return model, data
