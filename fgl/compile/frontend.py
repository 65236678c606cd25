"""The compile front end shared by every engine.

Whatever program a spec compiles to, the same questions come first: which
labels each layer has (declared, or those seen in training), the gold label
ids of the training data, each template's label patterns (explicit, all, or
those observed in training: Ye et al. 2009 §4, Cuong et al. 2014 §3.1) and
its prior sigma, and per attribute row its template and sigma.  This module
answers them once; ``fgl.compile.sequence`` (chain and segments) and
``fgl.compile.factor_graphs`` add only what is their own.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

import numpy as np

from fgl.errors import DataError, FglError, SpecError
from fgl.lang import ast
from fgl.lang.settings import template_options

if TYPE_CHECKING:   # (imported where used: this module loads without numba, for `fgl explain`)
    from fgl.compile.vocabulary import Vocabulary

# the most label patterns (configurations) one template may enumerate
MAX_PATTERNS = 200_000
# the longest label, in UTF-8 bytes (model files keep labels up to this: fgl.modelfile.model_header)
MAX_LABEL_BYTES = 4096


@dataclass
class Layer:
    """A label layer: an output column or a hidden layer (labels of at
    most MAX_LABEL_BYTES, else an FglError: a model of them could not be
    loaded)."""

    name: str
    labels: list[str]
    hidden: bool = False

    def __post_init__(self) -> None:
        for y in self.labels:
            if len(y) * 4 > MAX_LABEL_BYTES:    # (a character takes 1 to 4 bytes)
                size = len(y.encode("utf-8", "surrogatepass"))
                if size > MAX_LABEL_BYTES:
                    raise FglError(f"layer '{self.name}' has a label of {size:,} bytes "
                                   f"('{y[:20]}...'); a label has at most "
                                   f"{MAX_LABEL_BYTES:,} bytes (UTF-8)")

    @cached_property
    def index(self) -> dict[str, int]:
        return {y: i for i, y in enumerate(self.labels)}


@dataclass
class TemplatePlan:
    """One clique template after compilation: the layer of each of its
    variables (oldest first), the label patterns that carry weights, its
    prior sigma and which (attribute, pattern) pairs get a weight."""

    name: str
    layers: list[int]
    patterns: list[tuple[int, ...]]  # label-id tuples, one id per variable (or a suffix)
    sigma: float
    support: str                     # "observed" | "all"
    has_observations: bool
    min_count: int = 1               # the feature cut-off (fewer occurrences: no weights)

    @property
    def width(self) -> int:
        return len(self.layers)

    def to_json(self) -> dict:
        return {"name": self.name, "layers": self.layers,
                "patterns": [list(z) for z in self.patterns], "sigma": self.sigma,
                "support": self.support, "has_observations": self.has_observations,
                **({"min_count": self.min_count} if self.min_count != 1 else {})}

    @classmethod
    def from_json(cls, d: dict) -> "TemplatePlan":
        return cls(str(d["name"]), [int(v) for v in d["layers"]],
                   [tuple(int(v) for v in z) for z in d["patterns"]], float(d["sigma"]),
                   str(d["support"]), bool(d["has_observations"]), int(d.get("min_count", 1)))


def loc_error(message: str, loc: ast.Loc) -> SpecError:
    """A spec error at ``loc``."""
    return SpecError(message, loc.file, loc.line, loc.col)


def layer_labels(spec: ast.Spec, name: str, seen: Iterable[str]) -> list[str]:
    """The labels of output ``name``: declared in the spec, else the sorted
    labels ``seen`` in training."""
    declared = spec.label_sets.get(name)
    return list(declared[0]) if declared else sorted(set(seen))


def label_id(layer: Layer, label: str, file: str, line: int, declared: bool) -> int:
    """The id of ``label`` in ``layer``, or a DataError at ``file:line``
    (``declared``: the layer's labels are the spec's declared set)."""
    i = layer.index.get(label)
    if i is None:
        if declared:
            raise DataError(f"label '{label}' is not among the declared labels: "
                            f"{', '.join(layer.labels)}", file, line)
        raise DataError(f"unknown label '{label}'; the model knows: {', '.join(layer.labels)}",
                        file, line)
    return i


def resolve_patterns(tpl: ast.Template, layers: list[Layer], var_layers: list[int],
                     observed: Callable[[list[int]], Iterable[tuple[int, ...]]],
                     can_observe: bool = True, exact_length: bool = False
                     ) -> list[tuple[int, ...]]:
    """The label patterns of template ``tpl`` over variables in
    ``var_layers``: an explicit list, ``all`` (the default for windows of at
    most two labels and for templates over hidden layers), or the patterns
    ``observed`` in training — ``observed(lengths)`` yields the gold label
    tuples of those lengths (``observed upto``: every length 1..k+1).
    ``exact_length``: an explicit pattern must name every variable (a
    chain's may be a suffix of its window)."""
    width = len(var_layers)
    kind = tpl.patterns.kind if tpl.patterns is not None else None
    if kind is None:
        kind = "all" if width <= 2 or not can_observe else "observed"
    if kind == "list":
        out = []
        for pat in tpl.patterns.patterns:
            loc = getattr(pat, "loc", tpl.patterns.loc)
            if exact_length and len(pat) != width:
                raise loc_error(f"pattern {' '.join(pat)} has {len(pat)} labels; template "
                                f"'{tpl.name}' has {width} variables", loc)
            pat_layers = var_layers[-len(pat):] if len(pat) <= width else [var_layers[0]] * len(pat)
            ids = []
            for y, li in zip(pat, pat_layers):
                index = layers[li].index
                if y not in index:
                    raise loc_error(f"unknown label '{y}' in pattern of template '{tpl.name}';"
                                    f" the training data has: {', '.join(layers[li].labels)}",
                                    getattr(y, "loc", loc))
                ids.append(index[y])
            out.append(tuple(ids))
        return list(dict.fromkeys(out))
    if kind == "all" or not can_observe:
        sizes = [len(layers[li].labels) for li in var_layers]
        count = int(np.prod(sizes, dtype=object))
        if count > MAX_PATTERNS:
            raise loc_error(f"'patterns all' over template '{tpl.name}' makes {count} label "
                            f"patterns (more than {MAX_PATTERNS}); use 'patterns observed'",
                            tpl.patterns.loc if tpl.patterns else tpl.loc)
        return list(itertools.product(*(range(n) for n in sizes)))
    lengths = list(range(1, width + 1)) if kind == "observed_upto" else [width]
    return sorted(set(observed(lengths)), key=lambda z: (len(z), z))


def window_plans(spec: ast.Spec, layer: Layer,
                 observed: Callable[[list[int]], Iterable[tuple[int, ...]]], sigma: float,
                 min_count: int = 1) -> list[TemplatePlan]:
    """Each template of a chain or segment ``spec``: its plan over its
    label window y[t-k..t] of ``layer``, with the patterns declared or
    ``observed`` (the distinct gold windows of the lengths asked for)."""
    plans = []
    for tpl in spec.templates:
        width = 1 - min(ref.lo for ref in tpl.labels)  # y[t-k..t]: k + 1 labels
        patterns = resolve_patterns(tpl, [layer], [0] * width, observed)
        plans.append(template_plan(tpl, [0] * width, patterns, sigma,
                                   "observed" if tpl.observations else "all", min_count))
    return plans


def pattern_list(n_labels: int, plans: list[TemplatePlan]) -> list[tuple[int, ...]]:
    """The label patterns a sequence model's features refer to: every
    single label, then the templates' patterns, each once."""
    return list(dict.fromkeys([(y,) for y in range(n_labels)]
                              + [z for p in plans for z in p.patterns]))


def template_plan(tpl: ast.Template, var_layers: list[int], patterns: list[tuple[int, ...]],
                  sigma: float, default_support: str, min_count: int = 1) -> TemplatePlan:
    """A template's plan with its options (sigma, support, min_count) resolved."""
    opts = template_options(tpl, sigma, min_count)
    return TemplatePlan(tpl.name, var_layers, patterns, opts.sigma,
                        opts.support or default_support, bool(tpl.observations), opts.min_count)


def keep_counted(counts: np.ndarray, row_template: np.ndarray,
                 templates: list[TemplatePlan]) -> np.ndarray | None:
    """Which attribute rows reach their template's ``min_count`` (``counts``:
    each row's occurrences in training); None when no template cuts."""
    cut = np.array([t.min_count for t in templates], dtype=np.int64)
    if not len(cut) or (cut <= 1).all():
        return None
    return counts >= cut[row_template]


def row_templates(vocabs: list[dict[str, int]], n_rows: int) -> np.ndarray:
    """The template of every attribute row."""
    out = np.zeros(n_rows, dtype=np.int64)
    for ti, vocab in enumerate(vocabs):
        out[np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))] = ti
    return out


def feature_sigma(templates: list[TemplatePlan], vocabs: list[dict[str, int]],
                  row_ptr: np.ndarray) -> np.ndarray:
    """The prior sigma of every feature: its template's (Cuong et al. 2014,
    footnote 5: one sigma per template, e.g. per order)."""
    sigma = np.array([t.sigma for t in templates], dtype=np.float64)
    rows = row_templates(vocabs, len(row_ptr) - 1)
    return np.repeat(sigma[rows] if len(templates) else np.zeros(len(rows)), np.diff(row_ptr))


def vocab_json(vocabs: list[Vocabulary]) -> list[dict]:
    """Attribute vocabularies as JSON: the keys in the order they were
    first met in training (the order a vocabulary iterates in; a model file
    keeps it, so ``CRFEstimator.attributes_`` lists them in CRFsuite's order
    after loading too), each with its row."""
    out = []
    for vocab in vocabs:
        ids, rows = vocab.id_rows()
        out.append({"keys": vocab.names(ids), "rows": rows.tolist()})
    return out


def vocab_from_json(items: list) -> list[Vocabulary]:
    """``vocab_json``'s inverse; a ``Vocabulary`` among ``items`` (a model
    file's, built from its arrays) is taken as it is."""
    from fgl.compile.vocabulary import Vocabulary

    out = []
    for v in items:
        if isinstance(v, Vocabulary):
            out.append(v)
            continue
        vocab = Vocabulary()
        vocab.assign(v["keys"], np.array(v["rows"], dtype=np.int64))
        out.append(vocab)
    return out


def vocabularies(vocabs: list[Mapping[str, int]]) -> list[Vocabulary]:
    """``vocabs`` as ``Vocabulary`` objects (those that are not, copied)."""
    from fgl.compile.vocabulary import Vocabulary

    return [v if isinstance(v, Vocabulary) else Vocabulary(v) for v in vocabs]
