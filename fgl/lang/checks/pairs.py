"""Checks of pair templates: (y[i], y[j]) where ... over the positions of an
instance (skip chains, Sutton & McCallum §1.5) and (y[a], y[b]) where
edge(a, b, "type") over the nodes of a graph; their `where` clauses."""
from __future__ import annotations

from fgl.lang.ast import LabelRef, Loc, Predicate, Template
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.context import Context
from fgl.lang.checks.messages import (
    GRAPH_TEMPLATES,
    NEED_GRAPH,
    NEEDS_EDGE,
    NEEDS_WHERE,
    SEGMENTS_AND_PAIRS,
    WITHIN_SCOPES,
)
from fgl.lang.checks.text import did_you_mean, label_ref, labels_text, loc_of, show
from fgl.lang.settings import whole_number

# what a template check returns: its window length, its declared labels, what they are called
Window = tuple[int | None, list[str] | None, str]


class PairChecks(CheckerBase):
    def pair_template(self, tpl: Template, where: list[Predicate], within) -> Window:
        """A pair template (y[i], y[j]) where ...: two labels of one layer at
        two positions i < j of an instance."""
        refs = tpl.labels
        if self.spec.segments is not None:
            self.error(refs[0].loc if refs else tpl.loc,
                       f"{SEGMENTS_AND_PAIRS}: a segment model links consecutive segments only; "
                       f"found {labels_text(refs)}")
            self.check_where(where, within)
            return None, None, ""
        shape_ok = (len(refs) == 2 and [r.index for r in refs] == ["i", "j"]
                    and all(r.lo == 0 and r.hi == 0 for r in refs))
        outs = [self.label_output(r) for r in refs]
        layer = None
        if not shape_ok:
            var = refs[0].var if refs else "y"
            self.error(refs[0].loc if refs else tpl.loc,
                       f"a pair template links two labels, at i and then at j, as in ({var}[i], "
                       f"{var}[j]) where word[i] == word[j]; found {labels_text(refs)}")
        elif None not in outs and outs[0] != outs[1]:
            self.two_layers(refs, "i", "j")
        else:
            layer = outs[0]
            if not where and within is None:
                self.error(refs[0].loc, NEEDS_WHERE.format(labels=labels_text(refs)))
        self.check_where(where, within)
        return (2 if shape_ok else None), self.declared_labels(layer), "the declared labels"

    def graph_template(self, tpl: Template, where: list[Predicate], within) -> Window:
        """A template of a graph model: y[a] (one node) or (y[a], y[b]) where
        edge(a, b, "type") [and ...] (two linked nodes)."""
        refs = tpl.labels
        bad = next((r for r in refs if r.index not in ("a", "b")), None)
        if bad is not None:
            self.error(bad.loc, f"{GRAPH_TEMPLATES}; found {label_ref(bad)}")
            self.check_where(where, within, graph=True)
            return None, None, ""
        outs = [self.label_output(r) for r in refs]
        offsets_ok = True
        for r in refs:
            if r.lo != 0 or r.hi != 0:
                offsets_ok = False
                self.error(r.loc, f'a graph node has no neighbours by offset; use an edge '
                                  f'template, as in (y[a], y[b]) where edge(a, b, "cites"); '
                                  f'found {label_ref(r)}')
        window, layer = None, None
        if len(refs) == 1:
            r = refs[0]
            if r.index != "a":
                self.error(r.loc, f"a one-node template labels its node a, as in {r.var}[a]; "
                                  f"found {label_ref(r)}")
            elif offsets_ok:
                window, layer = 1, outs[0]
            if where:
                self.error(where[0].loc, "a `where` clause belongs to a pair template (y[a], "
                                         "y[b]); a one-node template y[a] has none")
                where = []
        elif len(refs) != 2 or [r.index for r in refs] != ["a", "b"]:
            var = refs[0].var
            self.error(refs[0].loc, f'a pair template in a graph model links two nodes, a and '
                                    f'then b, as in ({var}[a], {var}[b]) where edge(a, b, '
                                    f'"cites"); found {labels_text(refs)}')
        elif None not in outs and outs[0] != outs[1]:
            self.two_layers(refs, "a", "b")
        elif offsets_ok:
            window, layer = 2, outs[0]
            if not any(p.kind == "edge" for p in where):
                self.error(refs[0].loc, NEEDS_EDGE.format(labels=labels_text(refs)))
        self.check_where(where, within, graph=True)
        return window, self.declared_labels(layer), "the declared labels"

    def two_layers(self, refs: list[LabelRef], first: str, second: str) -> None:
        """The error for a pair template whose labels (at positions or nodes
        ``first`` and ``second``) belong to two layers."""
        var = refs[0].var
        self.error(refs[1].loc, f"a pair template links two labels of one layer, as in "
                                f"({var}[{first}], {var}[{second}]); found {labels_text(refs)}")

    def check_where(self, where: list[Predicate], within, graph: bool = False) -> None:
        """The predicates of a `where` clause and the `within` scope."""
        with self.reading(Context.GRAPH_WHERE if graph else Context.WHERE):
            for p in where:
                self.predicate(p, graph)
                if p.kind == "edge" and p.ends == ("b", "a"):
                    self.error(p.loc, f'a pair template (y[a], y[b]) follows its edges from a '
                                      f'to b: write edge(a, b, "{p.value}"); edge(b, a, ...) '
                                      f'is for aggregates (the nodes citing a)')
        if within is None:
            return
        loc = loc_of(within, where[0].loc if where else Loc(self.spec.file, 1, 1))
        if graph:
            self.error(loc, "`within` bounds the pairs of a sequence, but a graph model (`input "
                            "graph`) links nodes by its edges only; remove it")
        elif within not in WITHIN_SCOPES:
            self.error(loc, f"unknown scope '{within}' for `within`; expected `within sentence` "
                            f"(the default) or `within document`"
                            f"{did_you_mean(within, WITHIN_SCOPES)}")

    def predicate(self, p: Predicate, graph: bool) -> None:
        """One predicate of a `where` clause."""
        if p.kind in ("eq", "ne", "test"):
            for side in (p.left, p.right) if p.kind != "test" else (p.left,):
                if side is not None:
                    self.expr(side)
        elif p.kind == "distance":
            if graph:
                self.error(p.loc, 'j - i <= N measures positions in a sequence, but a graph model '
                                  '(`input graph`) has none; link nodes with edge(a, b, "type")')
            elif whole_number(1)(p.value):
                self.error(loc_of(p.value, p.loc),
                           f"`j - i <= N` needs a whole number N >= 1 (the ends of a pair have "
                           f"i < j); found {show(p.value)}")
        elif p.kind == "nearest":
            if graph:
                self.error(p.loc, "`nearest` picks the closest following position in a "
                                  "sequence, but a graph model (`input graph`) has none; link "
                                  'nodes with edge(a, b, "type")')
        elif p.kind == "edge":
            if not graph:
                self.error(p.loc, f"edge(a, b, ...) links nodes of a graph, but the input is not "
                                  f"a graph; {NEED_GRAPH}")
            elif p.ends[0] == p.ends[1]:
                self.error(p.loc, f"edge({p.ends[0]}, {p.ends[1]}, ...) links a node to itself; "
                                  f"write edge(a, b, ...) or edge(b, a, ...)")
            elif not isinstance(p.value, str) or not p.value:
                self.error(loc_of(p.value, p.loc), f'edge(a, b, "type") needs the edge type as a '
                                                   f'non-empty "string"; found {show(p.value)}')
        else:
            self.error(p.loc, f"unknown predicate kind {show(p.kind)}; expected one of: "
                              f"eq, ne, test, distance, nearest, edge")
