"""Semantic checks of a parsed spec.

``check_spec`` returns every mistake it finds, in source order, each a
``SpecError`` at the offending token that says what was found and what was
expected; ``validate`` raises the first.  Names and labels produced by
``fgl.parser`` carry their own ``.loc`` (see ``fgl.parser.Located``); for
hand-built specs the enclosing node's Loc is used instead.
"""
from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Callable

from fgl.lang.ast import Call, ColumnRef, Conj, Disj, LabelRef, Loc, NameRef, ObsDef, Predicate, Setting, Spec, Template
from fgl.features.builtins import BUILTINS
from fgl.errors import SpecError

COLUMN_KINDS = ("text", "number", "vector")
INFER_METHODS = ("exact", "loopy", "trp")

NONCONTIGUOUS_WINDOW = ("template labels {labels} are not a contiguous window y[t-k..t]; "
                        "only chain windows are supported by the exact chain engine")
NONCONTIGUOUS_SEGMENT_WINDOW = ("template labels {labels} are not a contiguous window s[j-k..j]; "
                                "only windows of consecutive segments are supported by the exact "
                                "semi-Markov engine")
SEGMENT_BOUNDARIES = ("bio", "change")
NEED_SEGMENTS = "declare `segments max L` for a semi-Markov (segment) model"
INPUT_FORMATS = ("conll", "graph")
WITHIN_SCOPES = ("sentence", "document")
NEED_GRAPH = "declare `input graph` for graph-structured instances (JSON lines)"
NEEDS_WHERE = ("a pair template {labels} needs a `where` clause saying which pairs are linked, as in "
               "`where word[i] == word[j]` (or `within document` to link every pair of a document)")
NEEDS_EDGE = ('a pair template {labels} needs a `where` clause saying which pairs are linked: '
              'in a graph model, `where edge(a, b, "type")`')
SEGMENTS_AND_PAIRS = "segments and pair templates cannot be combined"
GRAPH_TEMPLATES = ('in a graph model (`input graph`) templates range over nodes: y[a] for one node, or '
                   '(y[a], y[b]) where edge(a, b, "type") for two linked nodes')

ZERO_ARG = sorted(n for n, b in BUILTINS.items() if b.takes is None)
FUNCTIONS = sorted(n for n, b in BUILTINS.items() if b.takes is not None)


# ---------------------------------------------------------------- setting validators
# Each returns None when the value is fine, else what was expected.

def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _positive(v):
    return None if _is_num(v) and v > 0 else "a positive number"


def _non_negative(v):
    return None if _is_num(v) and v >= 0 else "a number >= 0"


def _int_at_least(low: int):
    def check(v):
        ok = isinstance(v, int) and not isinstance(v, bool) and v >= low
        return None if ok else ("a whole number > 0" if low == 1 else f"a whole number >= {low}")
    return check


def _choice(*names: str):
    def check(v):
        return None if isinstance(v, str) and v in names else "one of: " + ", ".join(names)
    return check


def _damping(v):
    return None if _is_num(v) and 0 <= v < 1 else "a number d with 0 <= d < 1"


TEMPLATE_OPTIONS = {"sigma": _positive, "support": _choice("observed", "all")}
TRAIN_SETTINGS = {"sigma": _positive, "max_iter": _int_at_least(1), "tol": _positive,
                  "jobs": _int_at_least(0), "trainer": _choice("lbfgs"), "l1": _non_negative}
INFER_SETTINGS: dict[str, dict[str, Callable]] = {
    "exact": {"max_states": _int_at_least(1)},
    "loopy": {"damping": _damping, "max_iter": _int_at_least(1), "tol": _positive,
              "schedule": _choice("flooding")},  # (residual BP: not implemented)
    "trp": {"max_iter": _int_at_least(1), "tol": _positive, "trees": _int_at_least(1)},
}


# ---------------------------------------------------------------- helpers

def _loc(x, fallback: Loc) -> Loc:
    loc = getattr(x, "loc", None)
    return loc if isinstance(loc, Loc) else fallback


def _did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _offsets(lo: int, hi: int, lo_base: str = "t", hi_base: str | None = None) -> str:
    """``t-2..t+2``, ``u-1``, ``u..v``: an offset range as written."""
    hi_base = lo_base if hi_base is None else hi_base

    def one(base: str, k: int) -> str:
        return base if k == 0 else f"{base}{k:+d}"
    if (lo_base, lo) == (hi_base, hi):
        return one(lo_base, lo)
    return f"{one(lo_base, lo)}..{one(hi_base, hi)}"


def _column_ref(e: ColumnRef) -> str:
    return f"{e.column}[{_offsets(e.lo, e.hi, e.lo_base, e.hi_base)}]"


def _label_ref(r: LabelRef) -> str:
    return f"{r.var}[{_offsets(r.lo, r.hi, r.index)}]"


def labels_text(refs: list[LabelRef]) -> str:
    """A template's labels as written: `y[t-2..t]` or `(y[i], y[j])`."""
    shown = ", ".join(_label_ref(r) for r in refs)
    return shown if len(refs) == 1 else f"({shown})"


def _show(v) -> str:
    return f"'{v}'" if isinstance(v, str) else repr(v)


def _end_loc(spec: Spec) -> Loc:
    lines = spec.text.rstrip().split("\n") if spec.text.strip() else [""]
    return Loc(spec.file, len(lines), len(lines[-1]) + 1)


# ---------------------------------------------------------------- the checker

class _Checker:
    def __init__(self, spec: Spec, base_dir: Path | None):
        self.spec = spec
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.errors: list[SpecError] = []
        self.columns = {}
        for c in spec.columns:
            self.columns.setdefault(c.name, c)
        self.outputs = list(dict.fromkeys(spec.outputs))
        self.inputs = [n for n in self.columns if n not in self.outputs]
        self.obs: dict[str, ObsDef] = {}
        for d in spec.observations:
            self.obs.setdefault(d.name, d)
        self._kinds: dict[str, str | None] = {}
        self._in_progress: set[str] = set()
        self.graph = spec.input_format == "graph"
        self.hidden = {}
        for h in spec.hidden:
            self.hidden.setdefault(h.name, h)
        # where column refs may be read, by what is being checked: "token"
        # (t), "segment" (u, v), "pair" / "where" (i, j), "either" (t inside
        # either(...)), "graph_node" (a), "graph_pair" / "graph_where" (a, b)
        self.default_ctx = "graph_node" if self.graph else "segment" if spec.segments is not None else "token"
        self.ctx = self.default_ctx

    def error(self, loc: Loc, message: str) -> None:
        self.errors.append(SpecError(message, loc.file, loc.line, loc.col))

    def run(self) -> list[SpecError]:
        self.check_input()
        self.check_columns()
        self.check_outputs()
        self.check_label_sets()
        self.check_hidden()
        self.check_segments()
        self.check_observations()
        self.check_templates()
        self.check_settings(self.spec.train, TRAIN_SETTINGS, "train")
        self.check_infer()
        return sorted(self.errors, key=lambda e: (e.line, e.col))

    # ------------------------------------------------------------ input, columns, outputs, labels
    def check_input(self) -> None:
        fmt = self.spec.input_format
        if fmt not in INPUT_FORMATS:
            self.error(_loc(fmt, Loc(self.spec.file, 1, 1)),
                       f"unknown input format '{fmt}'; expected `input conll` (token columns, the default) or "
                       f"`input graph` (JSON lines of nodes and edges){_did_you_mean(fmt, INPUT_FORMATS)}")

    def once(self, seen: dict[str, Loc], name: str, loc: Loc, error_loc: Loc, what: str,
             verb: str) -> bool:
        """Record ``name``; report it (at ``error_loc``) if it was seen
        before.  True when it is a duplicate."""
        first = seen.get(name)
        if first is not None:
            self.error(error_loc, f"duplicate {what} '{name}'; it is already {verb} at "
                                  f"{first.line}:{first.col}")
            return True
        seen[name] = loc
        return False

    def check_columns(self) -> None:
        seen: dict[str, Loc] = {}
        for c in self.spec.columns:
            self.once(seen, c.name, c.loc, c.loc, "column", "declared")
            if c.kind not in COLUMN_KINDS:
                self.error(_loc(c.kind, c.loc),
                           f"unknown column kind '{c.kind}' for '{c.name}'; expected one of: "
                           f"{', '.join(COLUMN_KINDS)}{_did_you_mean(c.kind, COLUMN_KINDS)}")
        if not self.spec.columns:
            self.error(_end_loc(self.spec), "no `columns` statement; declare the data file's "
                                            "columns in order, as in `columns word, pos, chunk`")

    def check_outputs(self) -> None:
        spec = self.spec
        if not spec.outputs:
            where = spec.columns[0].loc if spec.columns else _end_loc(spec)
            self.error(where, "no `output` statement; name the label column, as in `output chunk`")
        seen: set[str] = set()
        for name, loc in zip(spec.outputs, spec.output_locs):
            if name in seen:
                self.error(loc, f"output '{name}' is named twice")
            seen.add(name)
            col = self.columns.get(name)
            if col is None and name in self.hidden:
                self.error(loc, f"'{name}' is a hidden layer: its values are never observed, so it cannot be "
                                f"an `output`; outputs are label columns of the data: "
                                f"{', '.join(self.columns) or '(none)'}")
            elif col is None:
                self.error(loc, f"unknown output column '{name}'; expected one of the declared columns: "
                                f"{', '.join(self.columns) or '(none)'}{_did_you_mean(name, self.columns)}")
            elif col.kind != "text" and col.kind in COLUMN_KINDS:
                self.error(loc, f"output '{name}' is a {col.kind} column; an output must be a text "
                                f"column (its values are the labels)")

    def check_label_sets(self) -> None:
        for name, (labels, loc) in self.spec.label_sets.items():
            if name in self.hidden and name not in self.columns:
                h = self.hidden[name]
                self.error(_loc(name, loc), f"`labels {name}`: '{name}' is a hidden layer; its labels are "
                                            f"given in `hidden {name} = [...]` (at {h.loc.line}:{h.loc.col})")
                continue
            if name not in self.outputs:
                self.error(_loc(name, loc), f"`labels {name}` does not name an output; expected one of the "
                                            f"outputs: {', '.join(self.outputs) or '(none)'}"
                                            f"{_did_you_mean(name, self.outputs)}")
            if not labels:
                self.error(loc, f"the label set of '{name}' is empty; list its labels, as in [B-NP I-NP O]")
            seen: set[str] = set()
            for label in labels:
                if label in seen:
                    self.error(_loc(label, loc), f"duplicate label '{label}' in the labels of '{name}'")
                seen.add(label)

    def check_hidden(self) -> None:
        seen: dict[str, Loc] = {}
        for h in self.spec.hidden:
            name_loc = _loc(h.name, h.loc)
            self.once(seen, h.name, h.loc, name_loc, "hidden layer", "declared")
            col = self.columns.get(h.name)
            if col is not None:
                what = "output" if h.name in self.outputs else "column"
                self.error(name_loc, f"hidden layer '{h.name}' clashes with the {what} '{h.name}' (declared at "
                                     f"{col.loc.line}:{col.loc.col}); a hidden layer is never in the data, "
                                     f"choose another name")
            elif h.name == "y":
                self.error(name_loc, "hidden layer 'y' clashes with y, the output in templates; choose another name")
            if len(h.labels) < 2:
                self.error(h.loc, f"hidden layer '{h.name}' needs at least 2 labels, as in "
                                  f"`hidden {h.name} = [{h.name}0 {h.name}1]`; found {len(h.labels)}")
            labels: set[str] = set()
            for label in h.labels:
                if label in labels:
                    self.error(_loc(label, h.loc), f"duplicate label '{label}' in hidden layer '{h.name}'")
                labels.add(label)
            if self.spec.segments is not None and h is self.spec.hidden[0]:
                self.error(h.loc, "hidden layers cannot be combined with `segments`; a segment model "
                                  "labels segments, not positions")

    # ------------------------------------------------------------ segments
    def check_segments(self) -> None:
        seg = self.spec.segments
        if seg is None:
            return
        if self.graph:
            self.error(seg.loc, "`segments` cannot be used with `input graph`: a graph has no token sequence "
                                "to cut into segments")
        problem = _int_at_least(1)(seg.max_length)
        if problem:
            self.error(_loc(seg.max_length, seg.loc),
                       f"segments: max must be {problem}, the longest segment in tokens; "
                       f"found {_show(seg.max_length)}")
        for label, n in seg.per_label.items():
            problem = _int_at_least(1)(n)
            if problem:
                self.error(_loc(n, _loc(label, seg.loc)),
                           f"segments: the maximum length of '{label}' must be {problem}; found {_show(n)}")
        if seg.boundary not in SEGMENT_BOUNDARIES:
            self.error(_loc(seg.boundary, seg.loc),
                       f"unknown segment boundary '{seg.boundary}'; expected `from bio` (B- starts a "
                       f"segment) or `from change` (a label change starts one)"
                       f"{_did_you_mean(seg.boundary, SEGMENT_BOUNDARIES)}")
        names = self.segment_labels()
        if names is not None:
            for label in seg.per_label:
                if label not in names:
                    self.error(_loc(label, seg.loc),
                               f"unknown label '{label}' in `segments max`; expected one of the segment "
                               f"labels{self.segment_labels_origin()}: {', '.join(names)}"
                               f"{_did_you_mean(label, names)}")

    def segment_labels(self) -> list[str] | None:
        """The segment labels the declared labels of the (single) output
        make, or None when they are unknown: with `from bio` the labels with
        any B-/I- prefix removed, with `from change` the labels themselves."""
        seg = self.spec.segments
        if seg is None or len(self.outputs) != 1 or seg.boundary not in SEGMENT_BOUNDARIES:
            return None
        declared = self.spec.label_sets.get(self.outputs[0], (None,))[0]
        if declared is None:
            return None
        if seg.boundary == "bio":
            declared = [x[2:] if x[:2] in ("B-", "I-") and len(x) > 2 else x for x in declared]
        return list(dict.fromkeys(str(x) for x in declared))

    def segment_labels_origin(self) -> str:
        out = self.outputs[0]
        return (f" (the labels of '{out}' without B-/I-)" if self.spec.segments.boundary == "bio"
                else f" (the labels of '{out}')")

    # ------------------------------------------------------------ observations
    def check_observations(self) -> None:
        seen: dict[str, Loc] = {}
        for d in self.spec.observations:
            name_loc = _loc(d.name, d.loc)
            if self.once(seen, d.name, d.loc, name_loc, "observation", "defined"):
                self.expr(d.expr)              # its first definition is checked below
            if d.name in BUILTINS:
                self.error(name_loc, f"observation name '{d.name}' clashes with the built-in "
                                     f"'{d.name}'; choose another name")
        for name in self.obs:
            self.obs_kind(name)
        self.check_cycles()

    def obs_kind(self, name: str) -> str | None:
        """The kind of a named observation, checking its definition once."""
        if name in self._kinds:
            return self._kinds[name]
        if name in self._in_progress:          # a cycle: reported by check_cycles
            return None
        self._in_progress.add(name)
        saved, self.ctx = self.ctx, self.default_ctx
        kind = self.expr(self.obs[name].expr)
        self.ctx = saved
        self._in_progress.discard(name)
        self._kinds[name] = kind
        return kind

    def check_cycles(self) -> None:
        order = {n: i for i, n in enumerate(self.obs)}
        edges: dict[str, list[NameRef]] = {n: list(_name_refs(d.expr)) for n, d in self.obs.items()}
        reported: set[frozenset] = set()

        def visit(name: str, path: list[str]) -> None:
            if name in path:
                cycle = path[path.index(name):]
                if frozenset(cycle) not in reported:
                    reported.add(frozenset(cycle))
                    k = min(range(len(cycle)), key=lambda i: order[cycle[i]])
                    cycle = cycle[k:] + cycle[:k]
                    nxt = cycle[1] if len(cycle) > 1 else cycle[0]
                    ref = next(r for r in edges[cycle[0]] if r.name == nxt)
                    self.error(ref.loc, "observations refer to each other in a cycle: "
                                        + " -> ".join(cycle + [cycle[0]]))
                return
            if name in done:
                return
            for ref in edges[name]:
                if ref.name in self.obs:
                    visit(ref.name, path + [name])
            done.add(name)

        done: set[str] = set()
        for name in self.obs:
            visit(name, [])

    def expr(self, e) -> str | None:
        """Check an observation expression; return what it gives: "text",
        "number", "test" (yes/no), or None when it is broken."""
        if isinstance(e, ColumnRef):
            return self.column_ref(e)
        if isinstance(e, NameRef):
            return self.name_ref(e)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, (Conj, Disj)):
            kinds = [self.expr(p) for p in e.parts]
            if None in kinds:
                return None
            return "number" if "number" in kinds else "text" if "text" in kinds else "test"
        raise TypeError(f"not an observation expression: {e!r}")

    def base_problem(self, e: ColumnRef) -> str | None:
        """What is wrong with where ``e`` reads, in the current context (None
        when it is fine)."""
        bases, c, shown, ctx = {e.lo_base, e.hi_base}, e.column, _column_ref(e), self.ctx
        if not self.graph and bases & {"a", "b"}:
            return (f"{shown} reads a graph node (a, b) but the input is not a graph; {NEED_GRAPH}, or read "
                    f"relative to the token t, as in {c}[t]")
        if self.graph:
            if bases - {"a", "b"}:
                return (f"in a graph model (`input graph`) read node attributes at a node, as in {c}[a] "
                        f"(or {c}[b], the second node of a pair template); found {shown}")
            if e.lo != 0 or e.hi != 0:
                return (f'a graph node has no neighbours by offset; use an edge template, as in (y[a], y[b]) '
                        f'where edge(a, b, "cites"); found {shown}')
            if len(bases) > 1:
                return f"bad range {shown}: read one node at a time, as in {c}[a] or {c}[b]"
            if "b" in bases and ctx == "graph_node":
                return (f"{shown} reads node b, but only a pair template (y[a], y[b]) has a second node; "
                        f"read the node as {c}[a]")
            return None
        if ctx == "token" and bases & {"u", "v"}:
            return (f"{shown} reads relative to a segment (u is its first token, v its "
                    f"last) but this is not a segment model; {NEED_SEGMENTS}, or read relative to "
                    f"the token t, as in {c}[t]")
        if ctx == "token" and bases & {"i", "j"}:
            return (f"{shown} reads an end of a pair template, but this is not one; i and j are the two ends "
                    f"of a pair template (y[i], y[j]) where ...; read relative to the token t, as in {c}[t]")
        if ctx == "segment" and bases - {"u", "v"}:
            return (f"in a segment model, read columns relative to the segment: {c}[u] (first "
                    f"token), {c}[v] (last), {c}[u-1] (before), {c}[v+1] (after), {c}[u..v] "
                    f"(inside); found {shown}")
        if ctx == "pair" and bases - {"i", "j"}:
            return (f"in a pair template, read columns at its ends, as in {c}[i] or {c}[j+1], or at both "
                    f"ends with either(...), as in either(lower({c}[t])); found {shown}")
        if ctx == "where" and bases - {"i", "j"}:
            return (f"a `where` clause reads columns at the pair's ends, as in {c}[i] == {c}[j]; "
                    f"found {shown}")
        if ctx == "either" and bases - {"t"}:
            return (f"either(...) applies its expression at both ends i and j; write it with t, as in "
                    f"either(lower({c}[t])); found {shown}")
        if bases == {"i", "j"}:
            return (f"bad offset range {shown}: i and j cannot be combined in one range; "
                    f"read {c}[i] and {c}[j] separately")
        return None

    def column_ref(self, e: ColumnRef) -> str | None:
        problem = self.base_problem(e)
        if problem:
            self.error(e.loc, problem)
        elif e.lo_base == e.hi_base:
            if e.lo > e.hi:
                self.error(e.loc, f"bad offset range {_offsets(e.lo, e.hi, e.lo_base)}: "
                                  f"the start must not come after the end")
        elif (e.lo_base, e.hi_base) == ("v", "u"):     # u <= v
            if e.lo >= e.hi:
                self.error(e.loc, f"bad offset range {_offsets(e.lo, e.hi, 'v', 'u')}: the start must not "
                                  f"come after the end (u, the first token, is never after v, the last)")
            else:
                self.error(e.loc, f"bad offset range {_offsets(e.lo, e.hi, 'v', 'u')}: its order depends on "
                                  f"the segment's length; ranges between u and v must run from a u-based "
                                  f"to a v-based end or keep one base, as in {e.column}[u-1..v+1]")
        col = self.columns.get(e.column)
        if col is None:
            self.error(e.loc, f"unknown column '{e.column}'; expected one of: {', '.join(self.inputs) or '(none)'}"
                              f"{_did_you_mean(e.column, self.inputs)}")
            return None
        if e.column in self.outputs:
            self.error(e.loc, f"'{e.column}' is an output (label) column; observations may only read input columns")
            return None
        return {"text": "text", "number": "number", "vector": "number"}.get(col.kind)

    def name_ref(self, e: NameRef) -> str | None:
        at_t = e.name in self.obs or e.name in ("bos", "eos")
        what = "the named observation" if e.name in self.obs else "the built-in"
        if at_t and self.ctx == "pair":
            self.error(e.loc, f"{what} '{e.name}' is read at t, but a pair template has two ends i and j; "
                              f"read it at both ends with either({e.name}), or write its expression with "
                              f"word[i] / word[j]")
            return None
        if at_t and self.ctx == "where":
            self.error(e.loc, f"a `where` clause cannot use {what} '{e.name}' (it is read at t); write the "
                              f"expression with the pair's ends, as in word[i] == word[j]")
            return None
        if e.name in ("bos", "eos") and self.graph:
            self.error(e.loc, f"'{e.name}' marks an end of a sequence, but a graph model (`input graph`) "
                              f"has no sequence; use bias or node attributes instead")
            return None
        if e.name in self.obs:
            return self.obs_kind(e.name)
        b = BUILTINS.get(e.name)
        if b is not None:
            if e.name == "length" and self.spec.segments is None:
                self.error(e.loc, f"'length' is the length of a segment but this is not a segment model; "
                                  f"{NEED_SEGMENTS}")
                return None
            if b.takes is None:
                return b.gives
            self.error(e.loc, f"'{e.name}' is a function and needs an argument, as in {e.name}(word[t])")
            return None
        hint = f"; '{e.name}' is a column: read it as {e.name}[t]" if e.name in self.columns else ""
        self.error(e.loc, f"undefined observation '{e.name}'; expected a name defined with `obs` or one of "
                          f"{', '.join(ZERO_ARG)}{_did_you_mean(e.name, list(self.obs) + ZERO_ARG)}{hint}")
        return None

    def call(self, e: Call) -> str | None:
        b = BUILTINS.get(e.func)
        if b is None:
            self.expr(e.arg)
            self.error(e.loc, f"unknown function '{e.func}'; expected one of: {', '.join(FUNCTIONS)}"
                              f"{_did_you_mean(e.func, FUNCTIONS)}")
            return None
        if b.takes is None:
            self.error(e.loc, f"'{e.func}' takes no argument; write it bare: {e.func}")
            return b.gives
        if e.func == "either":
            return self.either(e)
        arg_kind = self.expr(e.arg)
        self.params(e, b.params)
        if arg_kind is not None and arg_kind != b.takes:
            what = (f"'{e.arg.column}' is {self.columns[e.arg.column].kind}" if isinstance(e.arg, ColumnRef)
                    else "its argument gives " + {"text": "text", "number": "numbers", "test": "a yes/no test"}[arg_kind])
            need = "a text column" if b.takes == "text" else "a number or vector column"
            self.error(e.arg.loc, f"{e.func}() needs {need}; {what}")
        return b.gives

    def either(self, e: Call) -> str | None:
        """``either(expr)``: the expression, written with t, at both ends of
        a pair template; it gives what its expression gives."""
        self.params(e, BUILTINS["either"].params)
        if self.ctx != "pair":
            hint = ("; in a graph model read both nodes directly, as in title[a] | title[b]"
                    if self.graph else "")
            self.error(e.loc, f"either(...) is only for the observations of a pair template (y[i], y[j]), "
                              f"as in ~ either(lower(word[t])){hint}")
            return None
        self.ctx = "either"
        kind = self.expr(e.arg)
        self.ctx = "pair"
        return kind

    def params(self, e: Call, types: tuple[type, ...]) -> None:
        if len(e.params) != len(types):
            wanted = ("no parameters" if not types else
                      f"{len(types)} parameter{'s' if len(types) > 1 else ''} "
                      f"({', '.join('a whole number' if t is int else 'a string' for t in types)})")
            self.error(e.loc, f"{e.func}() takes {wanted} after its argument; found {len(e.params)}")
            return
        for p, t in zip(e.params, types):
            loc = _loc(p, e.loc)
            if t is int:
                if not (isinstance(p, int) and not isinstance(p, bool) and p > 0):
                    self.error(loc, f"{e.func}() needs a positive whole number, as in {e.func}(word[t], 3); "
                                    f"found {_show(p)}")
            elif not isinstance(p, str):
                self.error(loc, f"{e.func}() needs a \"string\" parameter; found {_show(p)}")
            elif e.func == "regex":
                try:
                    re.compile(p)
                except re.error as x:
                    self.error(loc, f"bad regular expression {_show(p)}: {x}")
            elif e.func == "lexicon" and self.base_dir is not None:
                path = Path(p) if Path(p).is_absolute() else self.base_dir / p
                if not path.is_file():
                    self.error(loc, f"lexicon file {_show(p)} not found (looked for {path})")

    # ------------------------------------------------------------ templates
    def check_templates(self) -> None:
        if not self.spec.templates:
            self.error(_end_loc(self.spec), "no `template` statement; a model needs at least one, "
                                            "as in `template state: y[t] ~ word[t]`")
        seen: dict[str, Loc] = {}
        for tpl in self.spec.templates:
            self.once(seen, tpl.name, tpl.loc, _loc(tpl.name, tpl.loc), "template", "defined")
            self.template(tpl)

    def label_output(self, r: LabelRef) -> str | None:
        """The label layer (an output or a hidden layer) ``r`` names, or None
        (with an error) when it names none."""
        if r.var == "y":
            if len(self.outputs) > 1:
                self.error(r.loc, f"'y' is ambiguous: there are several outputs ({', '.join(self.outputs)}); "
                                  f"name one instead, as in {self.outputs[-1]}[t]")
                return None
            return self.outputs[0] if self.outputs else None
        if r.var in self.outputs or r.var in self.hidden:
            return r.var
        what = "an input column" if r.var in self.columns else "not an output"
        hint = (f"; segment labels are s[j-k..j] and need a segment model: {NEED_SEGMENTS}"
                if r.var == "s" and r.var not in self.columns and self.spec.segments is None else "")
        hidden = f" or a hidden layer: {', '.join(self.hidden)}" if self.hidden else ""
        self.error(r.loc, f"'{r.var}' is {what}; template labels must be y or an output: "
                          f"{', '.join(self.outputs) or '(none)'}{hidden}"
                          f"{_did_you_mean(r.var, ['y'] + self.outputs + list(self.hidden))}{hint}")
        return None

    def declared_labels(self, layer: str | None) -> list[str] | None:
        """The labels declared for an output (`labels`) or a hidden layer."""
        if layer is None:
            return None
        if layer in self.hidden and layer not in self.outputs:
            return list(self.hidden[layer].labels)
        return self.spec.label_sets.get(layer, (None,))[0]

    def template(self, tpl: Template) -> None:
        where = getattr(tpl, "where", None) or []
        within = getattr(tpl, "within", None)
        indexes = {r.index for r in tpl.labels}
        ctx = self.default_ctx
        if self.graph:
            window, declared, names = self.graph_template(tpl, where, within)
            if len(tpl.labels) > 1 or where:
                ctx = "graph_pair"
        elif indexes & {"a", "b"}:
            r = next(r for r in tpl.labels if r.index in ("a", "b"))
            self.error(r.loc, f"{_label_ref(r)} labels a graph node but the input is not a graph; {NEED_GRAPH}, "
                              f"or use token labels, as in y[t]")
            window, declared, names = None, None, ""
            self.check_where(where, within)
        elif "i" in indexes or where or within is not None:
            window, declared, names = self.pair_template(tpl, where, within)
            ctx = "pair"
        elif self.spec.segments is not None or "j" in indexes:
            window, declared, names = self.segment_window(tpl)
        else:
            window, declared, names = self.token_window(tpl)
        if tpl.patterns is not None and tpl.patterns.kind == "list":
            self.patterns(tpl, window, declared, names)
        self.ctx = ctx
        for e in tpl.observations:
            self.expr(e)
        self.ctx = self.default_ctx
        self.check_settings(tpl.options, TEMPLATE_OPTIONS, f"template '{tpl.name}'", noun="option")

    def token_window(self, tpl: Template):
        """A template over token labels: a chain window y[t-k..t] of one
        layer, or a tuple across several layers (a cross-layer factor, any
        offsets).  Returns its window length (None when broken), the declared
        labels (None when unknown or mixed) and what they are called."""
        outs = [self.label_output(r) for r in tpl.labels]
        layers = {o if o is not None else "?" + r.var for o, r in zip(outs, tpl.labels)}
        if len(layers) > 1:
            for r in tpl.labels:
                if r.lo > r.hi:
                    self.error(r.loc, f"bad offset range {_offsets(r.lo, r.hi, r.index)}: "
                                      f"the start must not come after the end")
            return sum(max(r.hi - r.lo + 1, 0) for r in tpl.labels), None, ""
        window = self.window(tpl, "t", "y", NONCONTIGUOUS_WINDOW)
        return window, self.declared_labels(outs[0] if outs else None), "the declared labels"

    def pair_template(self, tpl: Template, where: list[Predicate], within):
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
                       f"a pair template links two labels, at i and then at j, as in ({var}[i], {var}[j]) "
                       f"where word[i] == word[j]; found {labels_text(refs)}")
        elif None not in outs and outs[0] != outs[1]:
            self.error(refs[1].loc, f"a pair template links two labels of one layer, as in "
                                    f"({refs[0].var}[i], {refs[0].var}[j]); found {labels_text(refs)}")
        else:
            layer = outs[0]
            if not where and within is None:
                self.error(refs[0].loc, NEEDS_WHERE.format(labels=labels_text(refs)))
        self.check_where(where, within)
        return (2 if shape_ok else None), self.declared_labels(layer), "the declared labels"

    def graph_template(self, tpl: Template, where: list[Predicate], within):
        """A template of a graph model: y[a] (one node) or (y[a], y[b]) where
        edge(a, b, "type") [and ...] (two linked nodes)."""
        refs = tpl.labels
        bad = next((r for r in refs if r.index not in ("a", "b")), None)
        if bad is not None:
            self.error(bad.loc, f"{GRAPH_TEMPLATES}; found {_label_ref(bad)}")
            self.check_where(where, within, graph=True)
            return None, None, ""
        outs = [self.label_output(r) for r in refs]
        offsets_ok = True
        for r in refs:
            if r.lo != 0 or r.hi != 0:
                offsets_ok = False
                self.error(r.loc, f'a graph node has no neighbours by offset; use an edge template, as in '
                                  f'(y[a], y[b]) where edge(a, b, "cites"); found {_label_ref(r)}')
        window, layer = None, None
        if len(refs) == 1:
            r = refs[0]
            if r.index != "a":
                self.error(r.loc, f"a one-node template labels its node a, as in {r.var}[a]; found {_label_ref(r)}")
            elif offsets_ok:
                window, layer = 1, outs[0]
            if where:
                self.error(where[0].loc, "a `where` clause belongs to a pair template (y[a], y[b]); "
                                         "a one-node template y[a] has none")
                where = []
        elif len(refs) != 2 or [r.index for r in refs] != ["a", "b"]:
            var = refs[0].var
            self.error(refs[0].loc, f'a pair template in a graph model links two nodes, a and then b, as in '
                                    f'({var}[a], {var}[b]) where edge(a, b, "cites"); found {labels_text(refs)}')
        elif None not in outs and outs[0] != outs[1]:
            self.error(refs[1].loc, f"a pair template links two labels of one layer, as in "
                                    f"({refs[0].var}[a], {refs[0].var}[b]); found {labels_text(refs)}")
        elif offsets_ok:
            window, layer = 2, outs[0]
            if not any(p.kind == "edge" for p in where):
                self.error(refs[0].loc, NEEDS_EDGE.format(labels=labels_text(refs)))
        self.check_where(where, within, graph=True)
        return window, self.declared_labels(layer), "the declared labels"

    def check_where(self, where: list[Predicate], within, graph: bool = False) -> None:
        """The predicates of a `where` clause and the `within` scope."""
        self.ctx = "graph_where" if graph else "where"
        for p in where:
            if p.kind in ("eq", "ne", "test"):
                for side in (p.left, p.right) if p.kind != "test" else (p.left,):
                    if side is not None:
                        self.expr(side)
            elif p.kind == "distance":
                if graph:
                    self.error(p.loc, 'j - i <= N measures positions in a sequence, but a graph model '
                                      '(`input graph`) has none; link nodes with edge(a, b, "type")')
                elif _int_at_least(1)(p.value):
                    self.error(_loc(p.value, p.loc), f"`j - i <= N` needs a whole number N >= 1 (the ends of a "
                                                     f"pair have i < j); found {_show(p.value)}")
            elif p.kind == "edge":
                if not graph:
                    self.error(p.loc, f"edge(a, b, ...) links nodes of a graph, but the input is not a graph; "
                                      f"{NEED_GRAPH}")
                elif not isinstance(p.value, str) or not p.value:
                    self.error(_loc(p.value, p.loc), f'edge(a, b, "type") needs the edge type as a non-empty '
                                                     f'"string"; found {_show(p.value)}')
            else:
                self.error(p.loc, f"unknown predicate kind {_show(p.kind)}; expected one of: "
                                  f"eq, ne, test, distance, edge")
        self.ctx = self.default_ctx
        if within is None:
            return
        if graph:
            self.error(_loc(within, where[0].loc if where else Loc(self.spec.file, 1, 1)),
                       "`within` bounds the pairs of a sequence, but a graph model (`input graph`) links "
                       "nodes by its edges only; remove it")
        elif within not in WITHIN_SCOPES:
            self.error(_loc(within, where[0].loc if where else Loc(self.spec.file, 1, 1)),
                       f"unknown scope '{within}' for `within`; expected `within sentence` (the default) "
                       f"or `within document`{_did_you_mean(within, WITHIN_SCOPES)}")

    def segment_window(self, tpl: Template):
        """A segment template s[j-k..j]: as ``token_window``, with the labels
        the segments can take."""
        if self.spec.segments is None:
            r = next(r for r in tpl.labels if r.index == "j")
            self.error(r.loc, f"segment labels {_label_ref(r)} need a segment model; {NEED_SEGMENTS}, or "
                              f"use token labels, as in y[t-1..t]")
            return None, None, ""
        bad = next((r for r in tpl.labels if r.index != "j"), None)
        if bad is not None:
            self.error(bad.loc, f"in a segment model, templates range over segment labels s[j-k..j]; "
                                f"found {_label_ref(bad)}")
            return None, None, ""
        for r in tpl.labels:
            if r.var != "s":
                self.error(r.loc, f"segment labels are written s, as in s[j-1..j]; found {_label_ref(r)}")
        window = self.window(tpl, "j", "s", NONCONTIGUOUS_SEGMENT_WINDOW)
        declared = self.segment_labels()
        return window, declared, "the segment labels" + (self.segment_labels_origin() if declared else "")

    def window(self, tpl: Template, index: str, var: str, noncontiguous: str) -> int | None:
        """The length of the template's label window (of one layer) ending at
        ``index`` (None, with an error, when the labels are not one)."""
        ranges_ok = True
        for r in tpl.labels:
            if r.lo > r.hi:
                ranges_ok = False
                self.error(r.loc, f"bad offset range {_offsets(r.lo, r.hi, r.index)}: "
                                  f"the start must not come after the end")
        if len(tpl.labels) == 1 and ranges_ok:
            r = tpl.labels[0]
            if r.hi != 0:
                self.error(r.loc, f"label window must end at {index}, as in {var}[{index}-2..{index}]; "
                                  f"found {_label_ref(r)}")
                return None
            return r.hi - r.lo + 1
        if len(tpl.labels) > 1 and ranges_ok:
            positions = [k for r in tpl.labels for k in range(r.lo, r.hi + 1)]
            if positions[-1] == 0 and positions == list(range(positions[0], 1)):
                return len(positions)
            self.error(tpl.labels[0].loc, noncontiguous.format(labels=labels_text(tpl.labels)))
        return None

    def patterns(self, tpl: Template, window: int | None, declared: list[str] | None, where: str) -> None:
        for pat in tpl.patterns.patterns:
            loc = _loc(pat, tpl.patterns.loc)
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
                        self.error(_loc(label, loc), f"unknown label '{label}' in pattern; expected one of "
                                                     f"{where}: {', '.join(declared)}"
                                                     f"{_did_you_mean(label, declared)}")

    # ------------------------------------------------------------ settings
    def check_settings(self, settings: list[Setting], allowed: dict[str, Callable], where: str,
                       noun: str = "setting") -> None:
        seen: dict[str, Loc] = {}
        for s in settings:
            if s.key in seen:
                first = seen[s.key]
                self.error(s.loc, f"{where}: {noun} '{s.key}' is given twice (first at {first.line}:{first.col})")
            seen.setdefault(s.key, s.loc)
            if s.key not in allowed:
                if not allowed:
                    self.error(s.loc, f"{where} takes no {noun}s; found '{s.key}'")
                else:
                    self.error(s.loc, f"unknown {noun} '{s.key}' for {where}; expected one of: "
                                      f"{', '.join(allowed)}{_did_you_mean(s.key, allowed)}")
                continue
            problem = allowed[s.key](s.value)
            if problem:
                self.error(s.loc, f"{where}: {s.key} must be {problem}; found {_show(s.value)}")

    def check_infer(self) -> None:
        if self.spec.infer_method is None:
            return
        method, loc = self.spec.infer_method
        if method not in INFER_SETTINGS:
            self.error(_loc(method, loc), f"unknown inference method '{method}'; expected one of: "
                                          f"{', '.join(INFER_METHODS)}{_did_you_mean(method, INFER_METHODS)}")
            return
        self.check_settings(self.spec.infer, INFER_SETTINGS[method], f"infer {method}")


def _name_refs(e):
    """Every NameRef inside an observation expression, in source order."""
    if isinstance(e, NameRef):
        yield e
    elif isinstance(e, Call):
        yield from _name_refs(e.arg)
    elif isinstance(e, (Conj, Disj)):
        for p in e.parts:
            yield from _name_refs(p)


# ---------------------------------------------------------------- API

def check_spec(spec: Spec, base_dir: Path | None = None) -> list[SpecError]:
    """Every semantic error in ``spec``, in source order.  ``base_dir`` is
    where relative file names (lexicons) are looked up; None skips that."""
    return _Checker(spec, base_dir).run()


def validate(spec: Spec, base_dir: Path | None = None) -> Spec:
    """Return ``spec`` unchanged if it has no semantic errors, else raise the first."""
    errors = check_spec(spec, base_dir)
    if errors:
        raise errors[0]
    return spec
