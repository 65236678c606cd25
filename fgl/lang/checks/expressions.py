"""Checks of observation expressions: column references (read where the
context allows), names, built-in calls and either(...) (Sutton & McCallum
eq. 1.61)."""
from __future__ import annotations

import math

from fgl.lang.ast import SKIP_COLUMN, Aggregate, Call, ColumnRef, Conj, Disj, NameRef
from fgl.lang.builtins import AGGREGATES, BUILTINS, expr_text
from fgl.lang.checks.context import Context
from fgl.lang.checks.indexes import IndexChecks
from fgl.lang.checks.messages import FUNCTIONS, NEED_SEGMENTS, ZERO_ARG
from fgl.lang.checks.text import did_you_mean, loc_of, offsets, show
from fgl.lang.items import (
    MAX_ITEMS,
    POSITIONAL_FUNCTIONS,
    longest_segment,
    most_items,
    range_ref,
    range_width,
)
from fgl.lang.lexicons import LexiconRefused, lexicon_file
from fgl.lang.regexes import check_regex

_GIVES = {"text": "text", "number": "numbers", "test": "a yes/no test"}
MAX_OFFSET = 500  # the farthest a column may be read from its position (word[t+500])
_SATURATED = 10 ** 30  # item counts at least this are "more than" it (never multiplied further)


class _Saturating(dict):
    """Named observations' item counts, each held at ``_SATURATED`` at most:
    a chain of self-conjunctions (``obs o2 = o1 & o1``) squares the count
    at every step, which exact integers would follow to millions of digits."""

    def __setitem__(self, name: str, count: int) -> None:
        super().__setitem__(name, min(count, _SATURATED))


class ExpressionChecks(IndexChecks):
    def expr(self, e) -> str | None:
        """Check an observation expression; return what it gives: "text",
        "number", "test" (yes/no), or None when it is broken."""
        if isinstance(e, ColumnRef):
            return self.column_ref(e)
        if isinstance(e, NameRef):
            return self.name_ref(e)
        if isinstance(e, Aggregate):
            return self.aggregate(e)     # (fgl.lang.checks.aggregates)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, (Conj, Disj)):
            kinds = [self.expr(p) for p in e.parts]
            if isinstance(e, Conj):
                self.cross_product(e)
            if None in kinds:
                return None
            return "number" if "number" in kinds else "text" if "text" in kinds else "test"
        raise TypeError(f"not an observation expression: {e!r}")

    def check_items(self, e) -> None:
        """Refuse an expression giving more than ``MAX_ITEMS`` items at one
        position: a conjunction multiplies its parts' items, so a few wide
        windows conjoined give millions of attributes per token."""
        if isinstance(e, NameRef):
            return          # checked where it is defined
        n = self.items(e)
        if n > MAX_ITEMS:
            shown = (f"{n:,}" if n < 10**15 else f"about 10^{int(math.log10(n))}"
                     if n < _SATURATED else f"more than 10^{int(math.log10(_SATURATED))}")
            self.error(e.loc, f"this expression gives up to {shown} items per position (a "
                              f"conjunction & multiplies the items of its parts), more than "
                              f"the {MAX_ITEMS:,} allowed; conjoin fewer or narrower parts")

    def items(self, e) -> int:
        """The most items ``e`` gives at one position (a text read by
        tokens(...) counting as one word)."""
        if not isinstance(self._items, _Saturating):
            self._items = _Saturating(self._items)
        return min(most_items(e, self.obs, longest_segment(self.spec), memo=self._items),
                   _SATURATED)

    def cross_product(self, e: Conj) -> None:
        """Warn when a conjunction crosses two ranges of several positions:
        every combination, where aligned pairs are usually meant."""
        ranges = [r for r in (range_ref(p, self.obs) for p in e.parts)
                  if r is not None and range_width(r) != (False, 1)]
        if len(ranges) >= 2:
            a, b = (f"{r.column}[{offsets(r.lo, r.hi, r.lo_base, r.hi_base)}]" for r in ranges[:2])
            self.warn(e.loc, f"{a} & {b} makes every combination of the two ranges (a cross "
                             f"product); for pairs aligned position by position write "
                             f"zip({a} & {b})")

    def column_ref(self, e: ColumnRef) -> str | None:
        problem = self.base_problem(e)
        far = max(abs(e.lo), abs(e.hi))
        if problem:
            self.error(e.loc, problem)
        elif far > MAX_OFFSET:
            self.error(e.loc, f"offset {far} in {e.column}[...] is beyond the limit of "
                              f"{MAX_OFFSET} positions (each offset is an attribute per token)")
        elif e.lo_base == e.hi_base:
            if e.lo > e.hi:
                self.error(e.loc, f"bad offset range {offsets(e.lo, e.hi, e.lo_base)}: "
                                  f"the start must not come after the end")
        elif (e.lo_base, e.hi_base) == ("v", "u"):     # u <= v
            shown = offsets(e.lo, e.hi, 'v', 'u')
            if e.lo >= e.hi:
                self.error(e.loc, f"bad offset range {shown}: the start must not come after the "
                                  f"end (u, the first token, is never after v, the last)")
            else:
                self.error(e.loc, f"bad offset range {shown}: its order depends on the segment's "
                                  f"length; ranges between u and v must run from a u-based to a "
                                  f"v-based end or keep one base, as in {e.column}[u-1..v+1]")
        col = self.columns.get(e.column)
        if col is None and e.column == SKIP_COLUMN:
            self.error(e.loc, "`_` marks a data column the spec skips; give the column a name in "
                              "`columns` to read it")
            return None
        if col is None:
            self.error(e.loc, f"unknown column '{e.column}'; expected one of: "
                              f"{', '.join(self.inputs) or '(none)'}"
                              f"{did_you_mean(e.column, self.inputs)}")
            return None
        if e.column in self.outputs:
            self.error(e.loc, f"'{e.column}' is an output (label) column; observations may only "
                              f"read input columns")
            return None
        return {"text": "text", "number": "number", "vector": "number"}.get(col.kind)

    def name_ref(self, e: NameRef) -> str | None:
        at_t = e.name in self.obs or e.name in ("bos", "eos")
        what = "the named observation" if e.name in self.obs else "the built-in"
        if at_t and self.ctx is Context.PAIR:
            self.error(e.loc, f"{what} '{e.name}' is read at t, but a pair template has two ends "
                              f"i and j; read it at both ends with either({e.name}), or write its "
                              f"expression with word[i] / word[j]")
            return None
        if at_t and self.ctx is Context.WHERE:
            self.error(e.loc, f"a `where` clause cannot use {what} '{e.name}' (it is read at "
                              f"t); write the expression with the pair's ends, as in "
                              f"word[i] == word[j]")
            return None
        if e.name in ("bos", "eos") and self.graph:
            self.error(e.loc, f"'{e.name}' marks an end of a sequence, but a graph model (`input "
                              f"graph`) has no sequence; use bias or node attributes instead")
            return None
        if e.name in self.obs:
            return self.obs_kind(e.name)
        b = BUILTINS.get(e.name)
        if b is not None:
            if e.name == "length" and self.spec.segments is None:
                self.error(e.loc, f"'length' is the length of a segment but this is not a "
                                  f"segment model; {NEED_SEGMENTS}")
                return None
            if b.takes is None:
                return b.gives
            self.error(e.loc, f"'{e.name}' is a function and needs an argument, as in "
                              f"{e.name}(word[t])")
            return None
        hint = f"; '{e.name}' is a column: read it as {e.name}[t]" if e.name in self.columns else ""
        self.error(e.loc, f"undefined observation '{e.name}'; expected a name defined with `obs` "
                          f"or one of {', '.join(ZERO_ARG)}"
                          f"{did_you_mean(e.name, list(self.obs) + ZERO_ARG)}{hint}")
        return None

    def call(self, e: Call) -> str | None:
        b = BUILTINS.get(e.func)
        if b is None and e.func in AGGREGATES:
            self.expr(e.arg)
            example = ('(tokens(words[b]) over edge(a, b, "cites"))' if self.graph else
                       "(lower(word[j-1]) over word[i] == word[j] within document)")
            self.error(e.loc, f"{e.func}(...) is an aggregate: it reads its expression at the "
                              f"linked nodes or other mentions named after `over`, as in "
                              f"{e.func}{example}")
            return None
        if b is None:
            self.expr(e.arg)
            self.error(e.loc, f"unknown function '{e.func}'; expected one of: "
                              f"{', '.join(FUNCTIONS)}{did_you_mean(e.func, FUNCTIONS)}")
            return None
        if b.takes is None:
            self.error(e.loc, f"'{e.func}' takes no argument; write it bare: {e.func}")
            return b.gives
        if e.func == "either":
            return self.either(e)
        if e.func == "zip":
            return self.zip(e)
        padded = _pad_of(e.arg, self.obs) if e.func not in ("count", "pad") else None
        if padded is not None:
            outer = Call(e.func, padded.arg, e.params, e.loc)
            hint = (f"write pad(...) outermost, as in pad({expr_text(outer)})"
                    if e.func in POSITIONAL_FUNCTIONS else f"apply {e.func}() to the column itself")
            self.error(e.loc, f"{e.func}() cannot read pad(...): it would read the start and end "
                              f"markers as tokens; {hint}")
        if e.func == "pad":
            return self.pad(e)
        arg_kind = self.expr(e.arg)
        if e.func == "count":
            self.params(e, b.params)
            return None if arg_kind is None else b.gives
        self.params(e, b.params)
        if arg_kind is not None and arg_kind != b.takes:
            what = (f"'{e.arg.column}' is {self.columns[e.arg.column].kind}"
                    if isinstance(e.arg, ColumnRef) else "its argument gives " + _GIVES[arg_kind])
            need = "a text column" if b.takes == "text" else "a number or vector column"
            self.error(e.arg.loc, f"{e.func}() needs {need}; {what}")
        return b.gives

    def either(self, e: Call) -> str | None:
        """``either(expr)``: the expression, written with t, at both ends of
        a pair template; it gives what its expression gives."""
        self.params(e, BUILTINS["either"].params)
        if self.ctx is not Context.PAIR:
            hint = ("; in a graph model read both nodes directly, as in title[a] | title[b]"
                    if self.graph else "")
            self.error(e.loc, f"either(...) is only for the observations of a pair template "
                              f"(y[i], y[j]), as in ~ either(lower(word[t])){hint}")
            return None
        with self.reading(Context.EITHER):
            return self.expr(e.arg)

    def positional(self, e, what: str, example: str) -> bool:
        """``e`` reads a text column position by position (a column reference,
        under text built-ins and ``pad``); else an error.  ``e`` is checked."""
        kind = self.expr(e)
        if kind is None:
            return False
        if range_ref(e, self.obs) is None or kind != "text":
            self.error(e.loc, f"{what} reads a text column at offsets, possibly under "
                              f"{', '.join(f for f in POSITIONAL_FUNCTIONS if f != 'pad')} or pad, "
                              f"as in {example}; found "
                              + (f"an expression that gives {_GIVES[kind]}" if kind != "text"
                                 else "an expression that is not one column range"))
            return False
        return True

    def pad(self, e: Call) -> str | None:
        """``pad(e[, n])``: a column at offsets, with markers outside the
        sequence (within ``n`` positions of it)."""
        self.params(e, (int,) if e.params else BUILTINS["pad"].params)
        if self.graph:
            self.error(e.loc, "pad(...) marks offsets before the start or after the end of a "
                              "sequence, but a graph model (`input graph`) has no sequence")
            return None
        ok = self.positional(e.arg, "pad(...)", "pad(word[t-2]) or pad(lower(word[u-1]))")
        return "text" if ok else None

    def zip(self, e: Call) -> str | None:
        """``zip(a & b & ...)``: ranges of equal length paired position by
        position (Cuong et al. 2014 §3.2.2)."""
        self.params(e, BUILTINS["zip"].params)
        example = "zip(word[u-1..v-1] & word[u..v]) or zip(word[t-2..t] & pos[t-2..t])"
        if not isinstance(e.arg, Conj):
            self.expr(e.arg)
            self.error(e.arg.loc, f"zip(...) pairs the ranges of a conjunction position by "
                                  f"position; write them joined by &, as in {example}")
            return None
        if self.graph:
            self.error(e.loc, "zip(...) pairs column ranges at offsets, but a graph model "
                              "(`input graph`) has no offsets")
            return None
        if not all([self.positional(p, "each part of zip(...)", example) for p in e.arg.parts]):
            return None
        refs = [range_ref(p, self.obs) for p in e.arg.parts]
        widths = [range_width(r) for r in refs]
        for p, r, w in zip(e.arg.parts, refs, widths):
            if w != widths[0]:
                def shown(x: ColumnRef, w: tuple[bool, int]) -> str:
                    n = (f"the segment's length{w[1]:+d}" if w[1] else "the segment's length"
                         ) if w[0] else f"{w[1]} position{'s' if w[1] > 1 else ''}"
                    return f"{x.column}[{offsets(x.lo, x.hi, x.lo_base, x.hi_base)}] ({n})"
                self.error(p.loc, f"zip(...) pairs its ranges position by position, so they "
                                  f"must be equally long; {shown(refs[0], widths[0])} and "
                                  f"{shown(r, w)} are not, as in {example}")
                return None
        return "text"

    def params(self, e: Call, types: tuple[type, ...]) -> None:
        if len(e.params) != len(types):
            wanted = ("no parameters" if not types else
                      f"{len(types)} parameter{'s' if len(types) > 1 else ''} "
                      f"({', '.join('a whole number' if t is int else 'a string' for t in types)})")
            self.error(e.loc, f"{e.func}() takes {wanted} after its argument; "
                              f"found {len(e.params)}")
            return
        for p, t in zip(e.params, types):
            loc = loc_of(p, e.loc)
            if t is int:
                if not (isinstance(p, int) and not isinstance(p, bool) and p > 0):
                    self.error(loc, f"{e.func}() needs a positive whole number, as in "
                                    f"{e.func}(word[t], 3); found {show(p)}")
            elif not isinstance(p, str):
                self.error(loc, f"{e.func}() needs a \"string\" parameter; found {show(p)}")
            elif e.func == "regex":
                why = check_regex(p)
                if why is not None:
                    self.error(loc, f"bad regular expression {show(p)}: {why}")
            elif e.func == "lexicon" and self.base_dir is not None:
                try:
                    path = lexicon_file(p, self.base_dir)
                except LexiconRefused as x:
                    self.error(loc, str(x))
                else:   # read as training will read it
                    from fgl.data.inputs import InputError, read_capped

                    try:
                        read_capped(path).decode("utf-8")
                    except InputError as x:
                        self.error(loc, f"lexicon file {show(p)}: {x.message}")
                    except UnicodeDecodeError as x:
                        self.error(loc, f"lexicon file {show(p)} is not UTF-8 text ({x.reason} "
                                        f"at byte {x.start}); save it as UTF-8")
                    except OSError as x:
                        self.error(loc, f"cannot read lexicon file {show(p)}: "
                                        f"{x.strerror or x}")


def _pad_of(e, named: dict) -> Call | None:
    """``e`` when it is pad(...), directly or through names, else None."""
    seen: set[str] = set()
    while isinstance(e, NameRef) and e.name in named and e.name not in seen:
        seen.add(e.name)
        e = named[e.name].expr
    return e if isinstance(e, Call) and e.func == "pad" else None
