"""Which indexes a column reference may read in the current context: t in
a chain, u and v in a segment model (Cuong et al. 2014 §2), i and j at the
ends of a pair template, a and b at graph nodes."""
from __future__ import annotations

from fgl.lang.ast import ColumnRef
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.context import Context
from fgl.lang.checks.messages import NEED_GRAPH, NEED_SEGMENTS
from fgl.lang.checks.text import column_ref


class IndexChecks(CheckerBase):
    def base_problem(self, e: ColumnRef) -> str | None:
        """What is wrong with where ``e`` reads, in the current context (None
        when it is fine)."""
        bases, c, shown, ctx = {e.lo_base, e.hi_base}, e.column, column_ref(e), self.ctx
        if not self.graph and bases & {"a", "b"}:
            return (f"{shown} reads a graph node (a, b) but the input is not a graph; "
                    f"{NEED_GRAPH}, or read relative to the token t, as in {c}[t]")
        if ctx is Context.AGGREGATE and not self.graph and bases - {"j"}:
            return (f"inside an aggregate the observation is read at the other mentions j (the "
                    f"token itself is i), as in any(lower({c}[j-1]) over word[i] == word[j]); "
                    f"found {shown}")
        if self.graph:
            return self.graph_problem(e, bases, shown)
        if ctx is Context.TOKEN and bases & {"u", "v"}:
            return (f"{shown} reads relative to a segment (u is its first token, v its "
                    f"last) but this is not a segment model; {NEED_SEGMENTS}, or read relative to "
                    f"the token t, as in {c}[t]")
        if ctx is Context.TOKEN and bases & {"i", "j"}:
            return (f"{shown} reads an end of a pair template, but this is not one; i and j are "
                    f"the two ends of a pair template (y[i], y[j]) where ...; read relative to "
                    f"the token t, as in {c}[t]")
        if ctx is Context.SEGMENT and bases - {"u", "v"}:
            return (f"in a segment model, read columns relative to the segment: {c}[u] (first "
                    f"token), {c}[v] (last), {c}[u-1] (before), {c}[v+1] (after), {c}[u..v] "
                    f"(inside); found {shown}")
        if ctx is Context.PAIR and bases - {"i", "j"}:
            return (f"in a pair template, read columns at its ends, as in {c}[i] or {c}[j+1], or "
                    f"at both ends with either(...), as in either(lower({c}[t])); found {shown}")
        if ctx is Context.WHERE and bases - {"i", "j"}:
            return (f"a `where` clause reads columns at the pair's ends, as in {c}[i] == {c}[j]; "
                    f"found {shown}")
        if ctx is Context.EITHER and bases - {"t"}:
            return (f"either(...) applies its expression at both ends i and j; write it with t, "
                    f"as in either(lower({c}[t])); found {shown}")
        if bases == {"i", "j"}:
            return (f"bad offset range {shown}: i and j cannot be combined in one range; "
                    f"read {c}[i] and {c}[j] separately")
        return None

    def graph_problem(self, e: ColumnRef, bases: set[str], shown: str) -> str | None:
        """As ``base_problem``, in a graph model (`input graph`)."""
        c = e.column
        if self.ctx is Context.AGGREGATE and bases != {"b"}:
            return (f"inside an aggregate the observation is read at the linked nodes b (the "
                    f"node itself is a), as in mean(tokens({c}[b]) over edge(a, b, \"cites\")); "
                    f"found {shown}")
        if bases - {"a", "b"}:
            return (f"in a graph model (`input graph`) read node attributes at a node, as in "
                    f"{c}[a] (or {c}[b], the second node of a pair template); found {shown}")
        if e.lo != 0 or e.hi != 0:
            return (f'a graph node has no neighbours by offset; use an edge template, as in '
                    f'(y[a], y[b]) where edge(a, b, "cites"); found {shown}')
        if len(bases) > 1:
            return f"bad range {shown}: read one node at a time, as in {c}[a] or {c}[b]"
        if "b" in bases and self.ctx is Context.GRAPH_NODE:
            return (f"{shown} reads node b, but only a pair template (y[a], y[b]) has a second "
                    f"node; read the node as {c}[a]")
        return None
