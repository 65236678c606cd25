"""How much memory a model takes while it trains, estimated before it is made.

Each engine's compiler counts what it is about to allocate — features,
states and span units for chain and segment models, factors, factor-table
entries and messages for general CRFs — and hands the counts to a byte
model here, which prices them per part and per template.  ``Footprint.check``
refuses a model above the budget (``fgl.compile.budget``) at the template
that takes most, and ``Footprint.line`` is what ``fgl explain`` prints.
The byte costs were measured with ``tracemalloc`` (Python objects while a
general CRF is unrolled) and read off the engines' arrays.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import numpy as np

from fgl.compile.budget import budget_source, memory_budget
from fgl.engines.graph.inference import inference_method
from fgl.engines.parallel import GRAPH_SETS, resolve_jobs
from fgl.errors import SpecError
from fgl.lang import ast
from fgl.sizes import format_size

# one feature while training: its weight, gradient, prior, pattern index, and
# the L-BFGS memory's 2 x 10 vectors of the weights' length; every further
# thread sums a gradient of its own
BYTES_PER_FEATURE = 8 * 24
# one chain or segment unit's attribute rows: pointer, row id and value; one token's
# gold label and segment while compiling (Python objects, tracemalloc)
BYTES_PER_UNIT, BYTES_PER_UNIT_ROW, PY_PER_TOKEN = 8, 12, 150
# one attribute's vocabulary entry (its key and the bookkeeping of its features)
PY_PER_ATTRIBUTE = 150
# a general CRF's unrolled factor as arrays (``fgl.compile.unrolling.UnrolledFactors``):
# its template and offsets, per variable and per (attribute key, value) item; the
# encoder's per-instance rows and their concatenation add BYTES_PER_ITEM_LISTED per item
UNROLLED_PER_FACTOR, UNROLLED_PER_VARIABLE, UNROLLED_PER_ITEM, BYTES_PER_ITEM_LISTED = 24, 8, 12, 12
# the cached spanning trees and schedules of BP, per graph edge
BP_CACHE_PER_EDGE = 40
# one transition s = p·y of a chain or segment model's state machine while
# ``ChainStructure.build`` makes it (its label tuple, index entry and the
# seven tables; tracemalloc peak 210-310 bytes: fgl.engines.sequence.structure)
PY_PER_TRANSITION = 320
# one span unit's transient arrays while a sentence's units are made, per
# template (pointers, counts, item positions) and in all (unit numbers, sentence
# numbers, gold segments); measured with `segments max 100` on 100k tokens
BYTES_PER_UNIT_MADE, BYTES_PER_UNIT_MADE_TEMPLATE = 40, 24
# one attribute item while its batch of sentences is encoded: its key as a Python string
# in the batch's lists, the keys joined and encoded, and the per-item arrays that number
# them (tracemalloc peak 397 bytes per item of ``ChainModel.unit_rows``, 2,187 items per
# token)
PY_PER_ITEM_MADE = 450
# the most attribute items of a batch of sentences encoded together
# (``fgl.compile.unit_rows.batches``): a batch of widely conjoined observations holds
# fewer tokens
BATCH_ITEMS = 1 << 18


class SizedOnly(Exception):
    """Raised instead of building a feature table of more than
    ``SIZED_ONLY_FEATURES`` features while ``sizing_only`` is in force
    (``fgl explain``): ``lines`` say what the model would be, from the counts
    made so far, and ``footprint`` its memory."""

    def __init__(self, lines: list[str], footprint: "Footprint"):
        super().__init__("\n".join(lines))
        self.lines, self.footprint = lines, footprint


# a feature table this large is only sized, not built, while sizing_only is in force
SIZED_ONLY_FEATURES = 2_000_000
_sizing_only = contextvars.ContextVar("fgl_sizing_only", default=False)


@contextlib.contextmanager
def sizing_only():
    """While in force, a compiler about to build a feature table of more
    than ``SIZED_ONLY_FEATURES`` features raises ``SizedOnly`` with its
    counts and estimate instead (``fgl explain`` prints them)."""
    token = _sizing_only.set(True)
    try:
        yield
    finally:
        _sizing_only.reset(token)


def only_sizing(n_features: int) -> bool:
    """Whether a table of ``n_features`` features is to be sized, not built."""
    return _sizing_only.get() and n_features > SIZED_ONLY_FEATURES


class OverBudgetError(SpecError):
    """A model refused for its memory, located at the template that takes
    most; ``footprint`` is the estimate (``footprint.line()`` says it)."""

    def __init__(self, message: str, loc: ast.Loc, footprint: "Footprint"):
        super().__init__(message, loc.file, loc.line, loc.col)
        self.footprint = footprint


@dataclass
class Footprint:
    """Bytes per part (``parts``) and per template (``by_template``, the
    share each template accounts for); ``notes[t]`` says what template t
    makes, ``advice`` what makes a model smaller."""

    parts: dict[str, float]
    by_template: list[float]
    notes: list[str]
    advice: str
    purpose: str = "training"

    @property
    def total(self) -> int:
        return int(sum(self.parts.values()))

    def line(self) -> str:
        """``memory: about 1.2 GB for training (budget 12 GB)``, with the
        parts, and what to do when it is over."""
        budget = memory_budget()
        parts = ", ".join(f"{k} {format_size(v)}" for k, v in self.parts.items() if v)
        over = (f"; over the budget ({budget_source()}): {self.advice}"
                if self.total > budget else "")
        return (f"memory: about {format_size(self.total)} for {self.purpose} (budget "
                f"{format_size(budget)}): {parts}{over}")

    def check(self, templates: list[ast.Template]) -> None:
        """Refuse, at the template that takes most, a model over the budget."""
        budget = memory_budget()
        if self.total <= budget:
            return
        ti = int(np.argmax(self.by_template))
        tpl = templates[ti]
        self.refuse(f"template '{tpl.name}' {self.notes[ti]}", tpl.loc)

    def refuse(self, what: str, loc: ast.Loc) -> None:
        """Raise the over-budget message: ``what`` (the template or setting
        that takes most, and what it makes), located at ``loc``."""
        parts = ", ".join(f"{k} {format_size(v)}" for k, v in
                          sorted(self.parts.items(), key=lambda kv: -kv[1]) if v)
        raise OverBudgetError(f"{what}; the model needs about {format_size(self.total)} for "
                              f"{self.purpose} ({parts}), more than the "
                              f"{format_size(memory_budget())} memory budget "
                              f"({budget_source()}): {self.advice}", loc, self)


def _threads(jobs: int, n: int) -> int:
    return max(1, min(resolve_jobs(jobs), n))


def sequence_footprint(features: list[int], notes: list[str], advice: str, *, attributes: int,
                       tokens: int, units: int, unit_rows: int, longest: int, span: int,
                       n_labels: int, n_forward: int, n_patterns: int, n_sequences: int,
                       jobs: int) -> Footprint:
    """A chain (``span`` 1) or segment model's bytes: ``features`` per
    template and their ``attributes``, the training data's ``tokens``,
    ``units`` and the units' attribute rows, and per thread the
    forward-backward scratch of the ``longest`` sequence (α, β, marginals
    and potentials over |P| forward and |S| = |P|·n backward states per
    unit: ``fgl.engines.sequence.span_lattice.workspace``)."""
    threads = _threads(jobs, n_sequences)
    per_feature = BYTES_PER_FEATURE + 8 * (threads - 1)
    S = n_forward * n_labels
    scratch = 8 * longest * (span * (2 * S + n_patterns) + 4 * n_forward + 2 * S + 2 * n_labels)
    parts = {"features": float(sum(features) * per_feature),
             "attributes": float(attributes * PY_PER_ATTRIBUTE),
             "training data": float(tokens * PY_PER_TOKEN + units * BYTES_PER_UNIT
                                    + unit_rows * BYTES_PER_UNIT_ROW),
             "inference": float(threads * scratch)}
    total_f = max(sum(features), 1)
    rest = parts["attributes"] + parts["training data"] + parts["inference"]
    return Footprint(parts, [f * per_feature + rest * f / total_f for f in features], notes,
                     advice)


STATES_ADVICE = ("use fewer labels (declare them, or merge rare ones), a lower Markov order or "
                 "fewer label patterns, or give a larger budget")


def chain_states(n_labels: int, patterns) -> tuple[int, int]:
    """(|P|, |S| = |P|·n) of the state machine of ``patterns`` over
    ``n_labels`` labels, counted without building it (O(Σ |z|)): the empty
    state, every label and every proper prefix of a pattern."""
    prefixes = {tuple(z[:k]) for z in patterns for k in range(2, len(z))}
    n_forward = 1 + n_labels + len(prefixes)
    return n_forward, n_forward * n_labels


def states_footprint(n_labels: int, patterns, templates: list[ast.Template],
                     purpose: str = "training") -> Footprint:
    """The bytes of building a chain or segment model's state machine alone
    (what loading a model makes before its arrays), charged to the template
    of the most label patterns."""
    n_forward, n_states = chain_states(n_labels, patterns)
    parts = {"label states": float(n_states * PY_PER_TRANSITION)}
    by_template = [0.0] * len(templates)
    notes = [""] * len(templates)
    if templates:
        longest = max(range(len(templates)),   # (the widest label window)
                      key=lambda t: 1 - min((ref.lo for ref in templates[t].labels), default=0))
        by_template[longest] = parts["label states"]
        notes[longest] = (f"makes {n_labels:,} labels x {n_forward:,} forward states = "
                          f"{n_states:,} label-state transitions")
    return Footprint(parts, by_template, notes, STATES_ADVICE, purpose)


@dataclass
class GraphCounts:
    """What unrolling makes, per instance and template: ``factors[i, t]``,
    ``positions[i]`` (positions or nodes), the mean attribute items per
    factor of each template, and optionally each instance's junction-tree
    clique-table entries (0 where BP runs it)."""

    factors: np.ndarray
    positions: np.ndarray
    items: np.ndarray
    cliques: np.ndarray | None = None


def factor_graph_footprint(counts: GraphCounts, widths: list[int], tables: list[int],
                           messages: list[int], layer_cards: list[int], features: list[int],
                           attributes: int, notes: list[str], advice: str, *, method: str,
                           jobs: int, training: bool = True) -> Footprint:
    """A general CRF's bytes.  Per template: its factors' variables
    (``widths``), table entries (``tables``) and message entries
    (``messages``, the sum of its variables' domain sizes); the label
    layers' sizes; ``features`` per template and their ``attributes``
    (known once the data is read: zeros before).  Parts: the unrolled factors' arrays
    (while compiling), the factor graphs with their attribute rows and BP's
    cached schedules, the features, and per thread the inference scratch of
    the largest instances (factor tables, ψ, beliefs, messages; clique
    tables under the junction tree).  ``training`` False: the weights of the
    features, no learner."""
    F = counts.factors.astype(np.float64)
    w, tab, msg = (np.asarray(x, dtype=np.float64) for x in (widths, tables, messages))
    items = counts.items.astype(np.float64)
    n_vars = counts.positions * len(layer_cards)
    var_entries = counts.positions * float(sum(layer_cards))
    table_i, msg_i, edge_i = F @ tab, F @ msg, F @ w
    # which instances run BP (cached schedules) and which the junction tree (clique tables;
    # before the plans are made, the factor tables stand in for them)
    # (the method's ``junction_tree`` and ``messages``: fgl.engines.graph.inference)
    inference = inference_method(method)
    if counts.cliques is None:
        bp = np.full(len(F), inference.messages)
        cliques = table_i if inference.junction_tree else np.zeros_like(table_i)
    else:
        cliques = counts.cliques.astype(np.float64)
        bp = (cliques == 0) & inference.messages if inference.junction_tree else np.full(
            len(F), inference.messages)
    per_tpl_f = F.sum(axis=0)
    unroll = per_tpl_f * (UNROLLED_PER_FACTOR + UNROLLED_PER_VARIABLE * w
                          + (UNROLLED_PER_ITEM + BYTES_PER_ITEM_LISTED) * items)
    graph = per_tpl_f * 8 * (4 + 5 * w + 2 * items) + F[bp].sum(axis=0) * w * BP_CACHE_PER_EDGE
    scratch_i = 8 * (3 * table_i + 3 * msg_i + 2 * var_entries + F.sum(axis=1) + 2 * edge_i
                     + 2 * cliques)
    n = len(counts.positions)
    threads = _threads(jobs, n)
    largest = np.sort(scratch_i)[::-1][:threads]
    # count arrays: the sum and GRAPH_SETS per thread (ordered_reduce; one on one thread)
    runs = 1 + (GRAPH_SETS * threads if threads > 1 else 1)
    per_feature = BYTES_PER_FEATURE + 8 * runs if training else 16
    feat = np.asarray(features, dtype=np.float64) * per_feature
    parts = {"unrolling": float(unroll.sum()),
             "factor graphs": float(graph.sum() + 8 * 4 * n_vars.sum()),
             "features": float(feat.sum()), "attributes": float(attributes * PY_PER_ATTRIBUTE),
             "inference": float(largest.sum())}
    # the inference scratch by each template's share of the table entries
    share = (F * tab).sum(axis=0) / max(float((F * tab).sum()), 1.0)
    by_template = unroll + graph + feat + share * parts["inference"]
    return Footprint(parts, [float(b) for b in by_template], notes, advice,
                     "training" if training else "inference")
