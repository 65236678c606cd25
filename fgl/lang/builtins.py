"""The built-in observation functions of the language: their signatures,
McCallum's regex classes, and how an expression is spelled as an attribute name.

``BUILTINS`` is the table the checker validates calls against and the
observation evaluator (``fgl.features``, which implements the built-ins)
dispatches on; ``stdlib/BUILTINS.md`` is its reference.

Regex classes follow McCallum 2003 §4.1: character-level classes
over capitalisation and digits, where ``A`` = [A-Z], ``a`` = [a-z], ``D`` =
[0-9].
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fgl.lang import ast


@dataclass(frozen=True)
class Builtin:
    """Signature of a built-in.

    ``takes``: the kind of the argument expression (``"text"``, ``"number"``
    for number/vector columns, or ``None`` for zero-argument built-ins).
    ``params``: the types of the literal parameters after the argument.
    ``gives``: ``"text"`` (string items, indicator features), ``"test"``
    (a yes/no item) or ``"number"`` (real-valued items).
    ``doc``: one line for ``--help`` and the reference.
    """
    takes: str | None
    params: tuple[type, ...]
    gives: str
    doc: str


BUILTINS: dict[str, Builtin] = {
    "lower": Builtin("text", (), "text", "lowercase form of the token"),
    "prefix": Builtin("text", (int,), "text", "first n characters: prefix(word[t], 3)"),
    "suffix": Builtin("text", (int,), "text", "last n characters: suffix(word[t], 3)"),
    "shape": Builtin("text", (), "text",
                     "word shape: A for upper, a for lower, D for digit, runs collapsed "
                     "(Peter -> Aa, 1999 -> D)"),
    "longshape": Builtin("text", (), "text", "word shape without collapsing runs (Peter -> Aaaaa)"),
    "class": Builtin("text", (), "text",
                     "every regex class of McCallum 2003 §4.1 the token matches "
                     "(A, A+, Aa+, D+, ...)"),
    "regex": Builtin("text", (str,), "test",
                     'true when the token matches: regex(word[t], "^[A-Z]")'),
    "lexicon": Builtin("text", (str,), "test",
                       'true when the token is a line of the file: '
                       'lexicon(word[t], "cities.txt")'),
    "value": Builtin("number", (), "number", "the real value(s) of a number or vector column"),
    "bias": Builtin(None, (), "test", "always true: a per-label (or per-pattern) bias"),
    "bos": Builtin(None, (), "test", "true at the first token of a sequence"),
    "eos": Builtin(None, (), "test", "true at the last token of a sequence"),
    "either": Builtin("any", (), "text",
                      "pair templates: the expression (written with t) at both ends, "
                      "OR-combined (Sutton & McCallum eq. 1.61)"),
    "tokens": Builtin("text", (), "text", "every whitespace-separated word of the text (a bag)"),
    "length": Builtin(None, (), "text",
                      "segment models: the segment's length in tokens (length=3)"),
    "count": Builtin("any", (), "number",
                     "how many items its expression gives, as one real value: "
                     "count(word[u..v]) is the segment's length"),
    "pad": Builtin("text", (), "text",
                   "a column at offsets, with a marker where an offset falls outside the "
                   "sequence: pad(word[t-2]); pad(word[t-2], 1) marks only the first "
                   "position outside and gives nothing further out"),
    "zip": Builtin("any", (), "text",
                   "the ranges of a conjunction paired position by position, not crossed: "
                   "zip(word[u-1..v-1] & word[u..v])"),
}

# The aggregates ``AGG(EXPR over LINKS)``: what each gives per item of EXPR, over the nodes
# (other mentions) linked to a node (token); ``fgl.compile.aggregates`` computes them.
AGGREGATES: dict[str, str] = {
    "any": "1 when some linked node gives the item (an indicator)",
    "count": "how many linked nodes give the item",
    "sum": "the item's values summed over the linked nodes",
    "mean": "the item's values summed over the linked nodes, divided by their number",
    "most": "1 for the items the most linked nodes give (the majority; ties: all of them)",
    "norm": "GCN's degree-normalised propagation D^-1/2 (A+I) D^-1/2, applied hops times "
            "(Kipf & Welling 2017 §2; SGC)",
}
AGGREGATE_GIVES = {"any": "text", "most": "text"}   # the others give numbers

# McCallum 2003 §4.1: character-level regular expressions, mostly capitalisation and
# digit patterns; A = [A-Z], a = [a-z], D = [0-9].
REGEX_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx)) for name, rx in (
        ("A", r"[A-Z]"),
        ("A+", r"[A-Z]+"),
        ("Aa+", r"[A-Z][a-z]+"),
        ("Aa+Aa*", r"[A-Z][a-z]+[A-Z][a-z]*"),
        ("A.", r"[A-Z]\."),
        ("A.A.", r"([A-Z]\.)+"),
        ("a+", r"[a-z]+"),
        ("D", r"[0-9]"),
        ("D+", r"[0-9]+"),
        ("DD", r"[0-9][0-9]"),
        ("DDDD", r"[0-9][0-9][0-9][0-9]"),
        (".*D.*", r".*[0-9].*"),
        ("D+[.,]D+", r"[0-9]+[.,][0-9]+"),
        ("A+-A+", r"[A-Za-z]+-[A-Za-z]+"),
        ("P", r"[^A-Za-z0-9]+"),
        (".*A.*", r".*[A-Z].*"),
    )
)


# ---------------------------------------------------------------- attribute names

def ref_text(base: str, off: int) -> str:
    """A position in an attribute name: ``t``, ``t-1``, ``u+2``."""
    return base if off == 0 else f"{base}{off:+d}"


def call_tag(call: ast.Call) -> str:
    """The attribute name a call gives, with ``{}`` for its argument's (the
    braces of its parameters doubled, so ``regex(e, "^[0-9]{4}$")`` formats)."""
    params = [(repr(p) if isinstance(p, str) else str(p)).replace("{", "{{").replace("}", "}}")
              for p in call.params]
    return f"{call.func}({','.join(['{}'] + params)})"


def predicate_text(p: ast.Predicate) -> str:
    """A predicate of a ``where`` clause or an aggregate, as written (spaces dropped)."""
    if p.kind == "edge":
        return f"edge({p.ends[0]},{p.ends[1]},{p.value!r})"
    if p.kind == "distance":
        return f"j-i<={p.value}"
    if p.kind == "nearest":
        return "nearest"
    if p.kind == "test":
        return expr_text(p.left)
    return f"{expr_text(p.left)}{'==' if p.kind == 'eq' else '!='}{expr_text(p.right)}"


def aggregate_tag(agg: ast.Aggregate) -> str:
    """The attribute name an aggregate gives, with ``{}`` for its
    argument's: ``mean({} over edge(a,b,'cites'))``."""
    links = " or ".join(" and ".join(predicate_text(p) for p in link) for link in agg.links)
    within = f" within {agg.within}" if agg.within else ""
    options = "".join(f",{o.key}={o.value}" for o in agg.options)
    text = f"{agg.func}({{}} over {links}{within}{options})"
    return text.replace("{", "{{").replace("}", "}}").replace("{{}}", "{}", 1)


def expr_text(e: ast.ObsExpr) -> str:
    """An observation expression as written (spaces dropped): ``count``'s
    attribute name."""
    if isinstance(e, ast.Aggregate):
        return aggregate_tag(e).format(expr_text(e.arg))
    if isinstance(e, ast.ColumnRef):
        lo, hi = ref_text(e.lo_base, e.lo), ref_text(e.hi_base, e.hi)
        return f"{e.column}[{lo if (e.lo_base, e.lo) == (e.hi_base, e.hi) else lo + '..' + hi}]"
    if isinstance(e, ast.NameRef):
        return e.name
    if isinstance(e, ast.Call):
        return call_tag(e).format(expr_text(e.arg))
    sep = "&" if isinstance(e, ast.Conj) else "|"
    return sep.join(f"({expr_text(p)})" if isinstance(p, ast.Disj) else expr_text(p)
                    for p in e.parts)
