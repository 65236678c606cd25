"""The spec's abstract syntax: plain dataclasses, one per construct.

The lark grammar (``grammar/fgl.lark``) is the single source of the syntax;
``fgl.lang.parser`` turns its parse tree into these nodes, ``fgl.lang.checks``
validates them, and the compilers (``fgl.compile.frontend``, then
``fgl.compile.sequence`` or ``fgl.compile.factor_graphs``) consume them.
Every node carries a ``Loc`` so any later stage can report ``file:line:col``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int


# ---------------------------------------------------------------- inputs

SKIP_COLUMN = "_"
"""The name of a data column a spec skips (``columns word, _, pos, chunk``)."""


@dataclass
class Column:
    """One column of the data file, in file order.

    ``kind`` is ``"text"`` (default), ``"number"`` (one float) or ``"vector"``
    (comma-separated floats in one column).  A column named ``_``
    (``SKIP_COLUMN``, any number of times) is a data column the spec does
    not read.
    """
    name: str
    kind: str
    loc: Loc


# ---------------------------------------------------------------- observations

@dataclass
class ColumnRef:
    """``word[t-2..t+2]``: a column read at positions ``t+lo .. t+hi``.

    In a segment model positions are relative to the segment's first token
    ``u`` or last token ``v``: ``word[u]`` (first), ``word[v]`` (last),
    ``word[u-1]`` (just before), ``word[v+1]`` (just after), ``word[u..v]``
    (every token inside).  In a pair template positions are relative to its
    two ends ``i`` and ``j`` (``word[i]``, ``word[j+1]``), and in a graph
    model to its nodes ``a`` and ``b`` (``title[a]``; offsets must be 0).
    ``lo_base``/``hi_base`` name the variable each end is relative to.
    """
    column: str
    lo: int
    hi: int
    loc: Loc
    lo_base: str = "t"
    hi_base: str = "t"


@dataclass
class NameRef:
    """A bare name: a named observation (``obs w = ...``) or a zero-argument
    built-in (``bias``, ``bos``, ``eos``)."""
    name: str
    loc: Loc


@dataclass
class Call:
    """``func(expr, param, ...)``: a built-in applied to an expression.

    ``params`` are the literal arguments after the first (an int for
    ``prefix``/``suffix``, a string for ``regex``/``lexicon``).
    """
    func: str
    arg: "ObsExpr"
    params: list[Union[int, float, str]]
    loc: Loc


@dataclass
class Conj:
    """``a & b & ...``: conjunction (cross product of the parts' items)."""
    parts: list["ObsExpr"]
    loc: Loc


@dataclass
class Disj:
    """``a | b | ...``: disjunction (union of the parts' items)."""
    parts: list["ObsExpr"]
    loc: Loc


@dataclass
class Aggregate(Call):
    """``AGG(EXPR over LINKS [within SCOPE] [, hops = k])``: ``EXPR`` read at
    the nodes a node ``a`` is linked to (graphs: ``edge(a, b, "cites")``,
    ``b`` the neighbour) or at the other mentions ``j`` of a token ``i``
    (``word[i] == word[j] within document``), combined by ``func`` (``any``,
    ``count``, ``sum``, ``mean``, ``most``, ``norm``).  ``links`` holds the
    alternatives joined by ``or``, each a conjunction of predicates (a
    ``where`` clause); ``options`` the settings after the comma (``hops``).
    A Call whose ``params`` are empty, so walkers of calls see its ``arg``."""
    links: list[list["Predicate"]] = field(default_factory=list)
    within: str | None = None
    options: list["Setting"] = field(default_factory=list)


ObsExpr = Union[ColumnRef, NameRef, Call, Conj, Disj]


@dataclass
class ObsDef:
    """``obs NAME = EXPR``."""
    name: str
    expr: ObsExpr
    loc: Loc


# ---------------------------------------------------------------- templates

@dataclass
class LabelRef:
    """``y[t-2..t]`` or ``y[t]``: label variables of output ``var`` at
    positions ``t+lo .. t+hi``.  ``var`` is ``"y"`` or an output column name.
    In a segment model, ``s[j-2..j]`` are the labels of the current segment
    j and the two before it (``var`` "s", ``index`` "j").  In a pair
    template ``(y[i], y[j])`` the two refs have index "i" and "j"; in a graph
    model ``y[a]`` / ``(y[a], y[b])`` have index "a" / "b"."""
    var: str
    lo: int
    hi: int
    loc: Loc
    index: str = "t"


@dataclass
class Segments:
    """``segments max L [NP = 6, VP = 4] from bio|change [adjacent
    distinct]``: a semi-Markov model with segments of at most L tokens
    (per-label limits optional, above or below L); ``boundary`` says how
    token labels in data make segments: ``"bio"`` (a B- prefix or a type
    change starts a segment; each O token is a segment, or each run of O
    with ``distinct``) or ``"change"`` (a label change starts a segment);
    ``distinct``: no two adjacent segments have the same label."""
    max_length: int
    per_label: dict[str, int]
    boundary: str
    loc: Loc
    distinct: bool = False


@dataclass
class PatternSpec:
    """Which label patterns a template ranges over.

    kind: ``"all"`` (every label sequence of the window's length),
    ``"observed"`` (those of the window's length seen in training data),
    ``"observed_upto"`` (those of every length 1..window seen in training),
    ``"list"`` (the explicit ``patterns``; each a tuple of label strings,
    oldest first, of length <= the window, aligned to end at ``t``).
    """
    kind: str
    patterns: list[tuple[str, ...]]
    loc: Loc


@dataclass
class Setting:
    """``key = value`` inside a settings block or a template's options."""
    key: str
    value: Union[int, float, str]
    loc: Loc


@dataclass
class Template:
    """``template NAME: LABELS [patterns ...] [~ OBS, ...] [(key = v, ...)]``.

    ``labels`` holds one LabelRef for a window ``y[t-k..t]`` or several for a
    tuple ``(y[t-2], y[t])``.  ``observations`` are expressions (a NameRef for
    a named ``obs``); an empty list means the template's only observation is
    the constant bias.  ``patterns`` is None when the spec does not say.  A
    pair template ``(y[i], y[j]) where ... within document`` carries its
    predicates in ``where`` and its scope ("sentence" or "document") in
    ``within``.
    """
    name: str
    labels: list[LabelRef]
    patterns: PatternSpec | None
    observations: list[ObsExpr]
    options: list[Setting]
    loc: Loc
    where: list["Predicate"] = field(default_factory=list)
    within: str | None = None


@dataclass
class Predicate:
    """One conjunct of a pair template's ``where`` clause.

    kind ``"eq"`` / ``"ne"``: ``left == right`` / ``left != right`` — the two
    observation expressions share (do not share) an item; ``"test"``: the
    expression ``left`` yields an item (``regex(word[i], "^[A-Z]")``);
    ``"distance"``: ``j - i <= value``; ``"nearest"``: of the pairs the
    other conjuncts allow, only each i's with the smallest j (a chain of
    skip edges through the repeats of a word, not a clique); ``"edge"``:
    the graph has an edge a -> b of type ``value`` (``edge(a, b, "cites")``;
    ``ends`` ("b", "a") for ``edge(b, a, ...)``, an edge b -> a).
    """
    kind: str
    left: "ObsExpr | None"
    right: "ObsExpr | None"
    value: Union[int, str, None]
    loc: Loc
    ends: tuple[str, str] = ("a", "b")


@dataclass
class Hidden:
    """``hidden z = [z0 z1 z2]``: a latent label layer, one variable per
    position, never observed (Sutton & McCallum §1.4.3)."""
    name: str
    labels: list[str]
    loc: Loc


# ---------------------------------------------------------------- whole spec

@dataclass
class Spec:
    """A whole model spec, as written."""
    file: str
    text: str
    name: str | None
    columns: list[Column]
    outputs: list[str]
    output_locs: list[Loc]
    label_sets: dict[str, tuple[list[str], Loc]] = field(default_factory=dict)
    observations: list[ObsDef] = field(default_factory=list)
    templates: list[Template] = field(default_factory=list)
    train: list[Setting] = field(default_factory=list)
    infer: list[Setting] = field(default_factory=list)
    infer_method: tuple[str, Loc] | None = None
    segments: Segments | None = None
    hidden: list[Hidden] = field(default_factory=list)
    input_format: str = "conll"   # "conll" or "graph" (`input graph`: JSON lines)
