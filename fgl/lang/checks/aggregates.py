"""Checks of aggregates, ``AGG(EXPR over LINKS [within SCOPE] [, hops = k])``:
the aggregate's name, where it may stand, the links (graph edges, or a
token's other mentions as a skip template selects them), the scope, the
options, and its expression, read at the linked node b or mention j."""
from __future__ import annotations

from fgl.lang.ast import Aggregate, Call, Conj, Disj, NameRef, Predicate
from fgl.lang.builtins import AGGREGATE_GIVES, AGGREGATES
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.context import Context
from fgl.lang.checks.messages import WITHIN_SCOPES
from fgl.lang.checks.text import did_you_mean, loc_of, show

AGGREGATE_OPTIONS = ("hops",)
_EXAMPLE = {True: 'mean(tokens(words[b]) over edge(a, b, "cites"))',
            False: "any(lower(word[j-1]) over word[i] == word[j] within document)"}
# where an aggregate may stand: the observations of templates and named observations
_READABLE = (Context.TOKEN, Context.PAIR, Context.GRAPH_NODE, Context.GRAPH_PAIR)


class AggregateChecks(CheckerBase):
    def aggregate(self, e: Aggregate) -> str | None:
        """Check an aggregate; return what it gives ("text" for any/most,
        "number" for the others), None when it is broken."""
        ok = self._aggregate_place(e)
        if e.func not in AGGREGATES:
            self.error(loc_of(e.func, e.loc),
                       f"unknown aggregate '{e.func}'; expected one of: {', '.join(AGGREGATES)}"
                       f"{did_you_mean(e.func, AGGREGATES)}, as in {_EXAMPLE[self.graph]}")
            ok = False
        for link in e.links:
            ok &= self._aggregate_link(link)
        ok &= self._aggregate_scope(e)
        ok &= self._aggregate_options(e)
        with self.reading(Context.AGGREGATE):
            nested = next(_aggregates_in(e.arg, self.obs, set()), None)
            if nested is not None:
                self.error(nested.loc, "an aggregate cannot be read inside another one; for "
                                       "nodes two links away write hops = 2")
                ok = False
            elif self.expr(e.arg) is None:
                ok = False
        return AGGREGATE_GIVES.get(e.func, "number") if ok else None

    def _aggregate_place(self, e: Aggregate) -> bool:
        if self.spec.segments is not None:
            self.error(e.loc, "aggregates read linked nodes or other mentions of a token, but a "
                              "segment model reads segments; use them in a token or graph model")
            return False
        if self.ctx is Context.EITHER:
            self.error(e.loc, "an aggregate inside either(...) is meaningless: it is read at "
                              "the pair's first end already; write it outside either(...)")
            return False
        if self.ctx not in _READABLE:
            self.error(e.loc, "an aggregate is an observation of a template or an `obs`; a "
                              "`where` clause cannot test one")
            return False
        return True

    def _aggregate_link(self, link: list[Predicate]) -> bool:
        """One alternative of ``over``: a conjunction of predicates, which
        in a graph must follow an edge."""
        before = len(self.errors)
        with self.reading(Context.GRAPH_WHERE if self.graph else Context.WHERE):
            for p in link:
                self.predicate(p, self.graph)
        if self.graph and not any(p.kind == "edge" for p in link):
            self.error(link[0].loc, 'an aggregate over a graph reads the nodes an edge links: '
                                    'each alternative needs edge(a, b, "type") (a\'s targets) or '
                                    'edge(b, a, "type") (its sources)')
        nearest = next((p for p in link if p.kind == "nearest"), None)
        if nearest is not None and not self.graph:
            self.error(nearest.loc, "`nearest` picks one mention of a pair template's chain; "
                                    "an aggregate reads every other mention: remove it")
        return len(self.errors) == before

    def _aggregate_scope(self, e: Aggregate) -> bool:
        if e.within is None:
            return True
        loc = loc_of(e.within, e.loc)
        if self.graph:
            self.error(loc, "`within` bounds the mentions of a sequence, but a graph model "
                            "(`input graph`) links nodes by its edges only; remove it")
            return False
        if e.within not in WITHIN_SCOPES:
            self.error(loc, f"unknown scope '{e.within}' for `within`; expected `within sentence` "
                            f"(the default) or `within document`"
                            f"{did_you_mean(e.within, WITHIN_SCOPES)}")
            return False
        return True

    def _aggregate_options(self, e: Aggregate) -> bool:
        ok, seen = True, set()
        for o in e.options:
            if o.key not in AGGREGATE_OPTIONS:
                self.error(o.loc, f"unknown option '{o.key}' of an aggregate; expected "
                                  f"{', '.join(AGGREGATE_OPTIONS)}, as in norm(..., hops = 2)"
                                  f"{did_you_mean(o.key, AGGREGATE_OPTIONS)}")
                ok = False
            elif o.key in seen:
                self.error(o.loc, f"option '{o.key}' is given twice")
                ok = False
            elif not (isinstance(o.value, int) and not isinstance(o.value, bool)
                      and o.value >= 1):
                self.error(loc_of(o.value, o.loc),
                           f"hops needs a whole number >= 1 (1: the linked nodes themselves, 2: "
                           f"theirs too); found {show(o.value)}")
                ok = False
            seen.add(o.key)
        return ok


def _aggregates_in(e, named: dict, seen: set[str]):
    """The aggregates inside ``e``, through named observations."""
    if isinstance(e, Aggregate):
        yield e
    elif isinstance(e, NameRef) and e.name in named and e.name not in seen:
        seen.add(e.name)
        yield from _aggregates_in(named[e.name].expr, named, seen)
    elif isinstance(e, Call) and e.arg is not None:
        yield from _aggregates_in(e.arg, named, seen)
    elif isinstance(e, (Conj, Disj)):
        for p in e.parts:
            yield from _aggregates_in(p, named, seen)
