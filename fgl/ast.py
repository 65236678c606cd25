"""The spec's abstract syntax: plain dataclasses, one per construct.

The lark grammar (``grammar/fgl.lark``) is the single source of the syntax;
``fgl.parser`` turns its parse tree into these nodes, ``fgl.checks`` validates
them, and ``fgl.compiler`` consumes them.  Every node carries a ``Loc`` so any
later stage can report ``file:line:col``.
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

@dataclass
class Column:
    """One column of the data file, in file order.

    ``kind`` is ``"text"`` (default), ``"number"`` (one float) or ``"vector"``
    (comma-separated floats in one column).
    """
    name: str
    kind: str
    loc: Loc


# ---------------------------------------------------------------- observations

@dataclass
class ColumnRef:
    """``word[t-2..t+2]``: a column read at positions ``t+lo .. t+hi``."""
    column: str
    lo: int
    hi: int
    loc: Loc


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
    positions ``t+lo .. t+hi``.  ``var`` is ``"y"`` or an output column name."""
    var: str
    lo: int
    hi: int
    loc: Loc


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
    the constant bias.  ``patterns`` is None when the spec does not say.
    """
    name: str
    labels: list[LabelRef]
    patterns: PatternSpec | None
    observations: list[ObsExpr]
    options: list[Setting]
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
