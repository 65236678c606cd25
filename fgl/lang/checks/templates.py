"""Checks of clique templates (Sutton & McCallum §1.4.1): which kind each
is, its label window, its patterns, and its observations read in the
template's context."""
from __future__ import annotations

from fgl.lang.ast import Loc, Template
from fgl.lang.checks.context import Context
from fgl.lang.checks.expressions import MAX_OFFSET
from fgl.lang.checks.messages import (
    NEED_GRAPH,
    NEED_SEGMENTS,
    NONCONTIGUOUS_SEGMENT_WINDOW,
    REPEATED_LABEL,
)
from fgl.lang.checks.pairs import PairChecks, Window
from fgl.lang.checks.text import did_you_mean, end_loc, label_ref, labels_text, loc_of, offsets


class TemplateChecks(PairChecks):
    def check_templates(self) -> None:
        if not self.spec.templates:
            self.error(end_loc(self.spec), "no `template` statement; a model needs at least one, "
                                           "as in `template state: y[t] ~ word[t]`")
        seen: dict[str, Loc] = {}
        for tpl in self.spec.templates:
            self.once(seen, tpl.name, tpl.loc, loc_of(tpl.name, tpl.loc), "template", "defined")
            self.template(tpl)

    def template(self, tpl: Template) -> None:
        where = getattr(tpl, "where", None) or []
        within = getattr(tpl, "within", None)
        far = next((r for r in tpl.labels if max(abs(r.lo), abs(r.hi)) > MAX_OFFSET), None)
        if far is not None:     # before any check walks the window's positions
            self.error(far.loc, f"offset {max(abs(far.lo), abs(far.hi))} in {far.var}[...] is "
                                f"beyond the limit of {MAX_OFFSET} positions")
            return
        indexes = {r.index for r in tpl.labels}
        ctx = self.default_ctx
        if self.graph:
            window, declared, names = self.graph_template(tpl, where, within)
            if len(tpl.labels) > 1 or where:
                ctx = Context.GRAPH_PAIR
        elif indexes & {"a", "b"}:
            r = next(r for r in tpl.labels if r.index in ("a", "b"))
            self.error(r.loc, f"{label_ref(r)} labels a graph node but the input is not a graph; "
                              f"{NEED_GRAPH}, or use token labels, as in y[t]")
            window, declared, names = None, None, ""
            self.check_where(where, within)
        elif "i" in indexes or where or within is not None:
            window, declared, names = self.pair_template(tpl, where, within)
            ctx = Context.PAIR
        elif self.spec.segments is not None or "j" in indexes:
            window, declared, names = self.segment_window(tpl)
        else:
            window, declared, names = self.token_window(tpl)
        if tpl.patterns is not None and tpl.patterns.kind == "list":
            self.patterns(tpl, window, declared, names)
        with self.reading(ctx):
            for e in tpl.observations:
                if self.expr(e) is not None:
                    self.check_items(e)
        self.check_settings(tpl.options, "template", f"template '{tpl.name}'", noun="option")

    def token_window(self, tpl: Template) -> Window:
        """A template over token labels: a chain window y[t-k..t] of one
        layer, a gapped tuple of one layer such as (y[t-2], y[t]) (a clique
        of the factor-graph engine, exact by junction tree while cliques stay
        small), or a tuple across several layers (a cross-layer factor, any
        offsets).  Returns its window length (None when broken), the declared
        labels (None when unknown or mixed) and what they are called."""
        outs = [self.label_output(r) for r in tpl.labels]
        layers = {o if o is not None else "?" + r.var for o, r in zip(outs, tpl.labels)}
        if len(layers) > 1:
            for r in tpl.labels:
                if r.lo > r.hi:
                    self.error(r.loc, f"bad offset range {offsets(r.lo, r.hi, r.index)}: "
                                      f"the start must not come after the end")
            seen: set[tuple[str, int]] = set()
            for o, r in zip(outs, tpl.labels):
                for k in range(r.lo, r.hi + 1):
                    if (o or r.var, k) in seen:
                        self.error(tpl.labels[0].loc, REPEATED_LABEL.format(
                            labels=labels_text(tpl.labels), ref=f"{r.var}[{offsets(k, k)}]"))
                        return None, None, ""
                    seen.add((o or r.var, k))
            return sum(max(r.hi - r.lo + 1, 0) for r in tpl.labels), None, ""
        window = self.window(tpl, "t", "y", None)
        return window, self.declared_labels(outs[0] if outs else None), "the declared labels"

    def segment_window(self, tpl: Template) -> Window:
        """A segment template s[j-k..j] (Cuong et al. 2014 §2): as
        ``token_window``, with the labels the segments can take."""
        if self.spec.segments is None:
            r = next(r for r in tpl.labels if r.index == "j")
            self.error(r.loc, f"segment labels {label_ref(r)} need a segment model; "
                              f"{NEED_SEGMENTS}, or use token labels, as in y[t-1..t]")
            return None, None, ""
        bad = next((r for r in tpl.labels if r.index != "j"), None)
        if bad is not None:
            self.error(bad.loc, f"in a segment model, templates range over segment labels "
                                f"s[j-k..j]; found {label_ref(bad)}")
            return None, None, ""
        for r in tpl.labels:
            if r.var != "s":
                self.error(r.loc, f"segment labels are written s, as in s[j-1..j]; "
                                  f"found {label_ref(r)}")
        window = self.window(tpl, "j", "s", NONCONTIGUOUS_SEGMENT_WINDOW)
        declared = self.segment_labels()
        origin = self.segment_labels_origin() if declared else ""
        return window, declared, "the segment labels" + origin

    def window(self, tpl: Template, index: str, var: str, noncontiguous: str | None
               ) -> int | None:
        """The length of the template's label window (of one layer) ending at
        ``index`` (None, with an error, when the labels are not one).  With
        ``noncontiguous`` None a tuple of labels at any distinct offsets —
        (y[t-2], y[t]), (y[t-3], y[t-1], y[t]) — is a gapped clique of as many
        variables; else the message for a tuple that is not a window."""
        ranges_ok = True
        for r in tpl.labels:
            if r.lo > r.hi:
                ranges_ok = False
                self.error(r.loc, f"bad offset range {offsets(r.lo, r.hi, r.index)}: "
                                  f"the start must not come after the end")
        if len(tpl.labels) == 1 and ranges_ok:
            r = tpl.labels[0]
            if r.hi != 0:
                self.error(r.loc, f"label window must end at {index}, as in "
                                  f"{var}[{index}-2..{index}]; found {label_ref(r)}")
                return None
            return r.hi - r.lo + 1
        if len(tpl.labels) > 1 and ranges_ok:
            positions = [k for r in tpl.labels for k in range(r.lo, r.hi + 1)]
            if positions[-1] == 0 and positions == list(range(positions[0], 1)):
                return len(positions)
            if noncontiguous is None:
                twice = next((k for i, k in enumerate(positions) if k in positions[:i]), None)
                if twice is None:
                    return len(positions)
                self.error(tpl.labels[0].loc, REPEATED_LABEL.format(
                    labels=labels_text(tpl.labels),
                    ref=f"{tpl.labels[0].var}[{offsets(twice, twice, index)}]"))
                return None
            self.error(tpl.labels[0].loc, noncontiguous.format(labels=labels_text(tpl.labels)))
        return None

    def patterns(self, tpl: Template, window: int | None, declared: list[str] | None,
                 where: str) -> None:
        """An explicit `patterns [...]` list: lengths and labels."""
        for pat in tpl.patterns.patterns:
            loc = loc_of(pat, tpl.patterns.loc)
            shown = "[" + " ".join(pat) + "]"
            if not pat:
                self.error(loc, "empty pattern []; a pattern lists one label per position")
            elif window is not None and len(pat) > window:
                self.error(loc, f"pattern {shown} has {len(pat)} labels but the window "
                                f"{labels_text(tpl.labels)} "
                                f"has only {window} position{'s' if window > 1 else ''}")
            if declared is not None:
                for label in pat:
                    if label not in declared:
                        self.error(loc_of(label, loc),
                                   f"unknown label '{label}' in pattern; expected one of "
                                   f"{where}: {', '.join(declared)}"
                                   f"{did_you_mean(label, declared)}")
