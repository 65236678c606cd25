"""The compiler: checked spec + training data -> a program and its features.

It picks the engine from the clique templates (contiguous label windows of
one chain -> the exact pattern-sparse chain program of seed 000 §3), resolves
each template's label patterns (explicit, all, or observed in training data,
seed 000 §4 / seed 002 §3.1), builds the pattern set Z, the forward-state
machine, and the feature table: one weight per (attribute, pattern) pair of a
template, restricted by default to pairs seen in training ("supported"
features) — or every pair with ``support = all``.  Templates without
observations (pure label-pattern weights, e.g. transitions) get every
pattern.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import ast
from .engines.chain import ChainStructure
from .errors import DataError, SpecError
from .io import Sentence
from .observations import TemplateAttributes, sentence_columns
from .program import ChainProgram, EncodedData

DEFAULT_SIGMA = 10.0
MAX_ALL_PATTERNS = 200_000


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
    program: ChainProgram
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
        const_rows = np.array([v["bias"] for v in vocabs if "bias" in v], dtype=np.int64)
        return cls(spec, base_dir, labels, templates, vocabs,
                   ChainProgram(structure, row_ptr, feat_pattern, const_rows), feat_sigma,
                   TemplateAttributes(spec, base_dir, lexicons))

    @property
    def label_index(self) -> dict[str, int]:
        return {y: i for i, y in enumerate(self.labels)}

    def encode(self, sentences: list[Sentence], with_gold: bool = False) -> EncodedData:
        """Encode sentences for the engines; attributes never seen in
        training have no weights and are skipped."""
        lab = self.label_index
        const = self.program.row_is_const
        seq_ptr, tok_ptr, rows, vals, gold = [0], [0], [], [], []
        for sent in sentences:
            cols, labels = sentence_columns(self.spec, sent.rows, sent.lines, sent.file)
            T = len(sent.rows)
            per_template = self.attributes(cols, T)
            for t in range(T):
                for vocab, tpl_rows in zip(self.vocabs, per_template):
                    for key, v in tpl_rows[t]:
                        r = vocab.get(key)
                        if r is not None and not const[r]:
                            rows.append(r)
                            vals.append(v)
                tok_ptr.append(len(rows))
            if with_gold:
                if labels is None:
                    raise DataError("this data has no label column", sent.file, sent.lines[0])
                for label, line in zip(labels, sent.lines):
                    if label not in lab:
                        raise DataError(f"unknown label '{label}'; the model knows: "
                                        f"{', '.join(self.labels)}", sent.file, line)
                    gold.append(lab[label])
            seq_ptr.append(seq_ptr[-1] + T)
        return EncodedData(np.array(seq_ptr, dtype=np.int64), np.array(tok_ptr, dtype=np.int64),
                           np.array(rows, dtype=np.int64), np.array(vals, dtype=np.float64),
                           np.array(gold, dtype=np.int64) if with_gold else None)

    def n_features(self) -> int:
        return self.program.n_features

    def explain(self) -> str:
        """The compiled program, its sizes, and why this engine."""
        st = self.program.structure
        n, P, S = st.n_labels, st.n_forward, st.n_backward
        order = max(len(z) for z in st.patterns) - 1
        lines = [
            f"engine: exact pattern-sparse chain (seed 000 §3)",
            f"  why: every template is a contiguous label window y[t-k..t] of one chain,"
            f" so inference is exact in O(T·n·|P|)",
            f"labels (n = {n}): {' '.join(self.labels)}",
            f"patterns |Z| = {len(st.patterns)}, maximum order {order}",
            f"forward states |P| = {P}, backward states |S| = |P|·n = {S}",
            f"cost of one pass: O(T·n·|P|) = {S} transition updates per token"
            f" (a dense order-{order} chain would need n^{order + 1} = {n ** (order + 1)})",
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


def _labels(spec: ast.Spec, gold_names: list[list[str]]) -> list[str]:
    declared = spec.label_sets.get(spec.outputs[0])
    if declared is not None:
        return list(declared[0])
    return sorted({y for seq in gold_names for y in seq})


def compile_model(spec: ast.Spec, sentences: list[Sentence], base_dir: Path | None = None,
                  overrides: dict[str, object] | None = None, source: str = "<train>",
                  ) -> tuple[CompiledModel, EncodedData]:
    """Compile a checked spec against training data (read from ``source``);
    returns the model and the encoded training data (with gold labels)."""
    if not sentences:
        raise DataError("the training data has no sequences", source, 0)
    base_dir = base_dir or Path(".")
    settings = {**train_settings(spec), **(overrides or {})}
    attributes = TemplateAttributes(spec, base_dir)

    columns, gold_names = [], []
    for sent in sentences:
        cols, labels = sentence_columns(spec, sent.rows, sent.lines, sent.file)
        if labels is None:
            raise DataError("training data needs the label column "
                            f"'{spec.outputs[0]}'", sent.file, sent.lines[0])
        columns.append(cols)
        gold_names.append(labels)
    labels = _labels(spec, gold_names)
    index = {y: i for i, y in enumerate(labels)}
    gold = []
    for sent, names in zip(sentences, gold_names):
        ids = []
        for y, line in zip(names, sent.lines):
            if y not in index:
                raise DataError(f"label '{y}' is not among the declared labels: "
                                f"{', '.join(labels)}", sent.file, line)
            ids.append(index[y])
        gold.append(ids)

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

    # attribute rows and their supported patterns
    vocabs: list[dict[str, int]] = [{} for _ in plans]
    row_patterns: list[set[int]] = []
    row_template: list[int] = []
    token_rows: list[list[list[tuple[int, float]]]] = []
    pattern_sets = [{z: z_index[z] for z in p.patterns} for p in plans]
    lengths = [sorted({len(z) for z in p.patterns}) for p in plans]
    for cols, seq in zip(columns, gold):
        T = len(seq)
        per_template = attributes(cols, T)
        seq_rows: list[list[tuple[int, float]]] = [[] for _ in range(T)]
        for ti, plan in enumerate(plans):
            vocab, pset = vocabs[ti], pattern_sets[ti]
            for t in range(T):
                matched = []
                if plan.support == "observed":
                    for m in lengths[ti]:
                        if m <= t + 1:
                            z = pset.get(tuple(seq[t - m + 1:t + 1]))
                            if z is not None:
                                matched.append(z)
                for key, v in per_template[ti][t]:
                    r = vocab.get(key)
                    if r is None:
                        r = vocab[key] = len(row_patterns)
                        row_patterns.append(set())
                        row_template.append(ti)
                    row_patterns[r].update(matched)
                    seq_rows[t].append((r, v))
        token_rows.append(seq_rows)
    for r, ti in enumerate(row_template):
        if plans[ti].support == "all":
            row_patterns[r] = set(pattern_sets[ti].values())

    row_ptr = np.zeros(len(row_patterns) + 1, dtype=np.int64)
    row_ptr[1:] = np.cumsum([len(p) for p in row_patterns])
    feat_pattern = np.fromiter((z for p in row_patterns for z in sorted(p)), dtype=np.int64,
                               count=int(row_ptr[-1]))
    model = CompiledModel.assemble(spec, base_dir, labels, plans, z_list, vocabs, row_ptr,
                                   feat_pattern, attributes.lexicons)

    seq_ptr = np.zeros(len(gold) + 1, dtype=np.int64)
    seq_ptr[1:] = np.cumsum([len(s) for s in gold])
    tok_ptr, rows, vals = [0], [], []
    const = model.program.row_is_const
    for seq_rows in token_rows:
        for items in seq_rows:
            for r, v in items:
                if not const[r]:
                    rows.append(r)
                    vals.append(v)
            tok_ptr.append(len(rows))
    data = EncodedData(seq_ptr, np.array(tok_ptr, dtype=np.int64), np.array(rows, dtype=np.int64),
                       np.array(vals, dtype=np.float64),
                       np.fromiter((y for s in gold for y in s), dtype=np.int64,
                                   count=int(seq_ptr[-1])))
    return model, data
