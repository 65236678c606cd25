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

from .ast import Call, ColumnRef, Conj, Disj, LabelRef, Loc, NameRef, ObsDef, Setting, Spec, Template
from .builtins import BUILTINS
from .errors import SpecError

COLUMN_KINDS = ("text", "number", "vector")
INFER_METHODS = ("exact", "loopy", "trp")

NONCONTIGUOUS_WINDOW = ("template labels {labels} are not a contiguous window y[t-k..t]; "
                        "only chain windows are supported by the exact chain engine")
NONCONTIGUOUS_SEGMENT_WINDOW = ("template labels {labels} are not a contiguous window s[j-k..j]; "
                                "only windows of consecutive segments are supported by the exact "
                                "semi-Markov engine")
SEGMENT_BOUNDARIES = ("bio", "change")
NEED_SEGMENTS = "declare `segments max L` for a semi-Markov (segment) model"

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
    "exact": {},
    "loopy": {"damping": _damping, "max_iter": _int_at_least(1), "tol": _positive,
              "schedule": _choice("flooding", "residual")},
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


def _labels_text(refs: list[LabelRef]) -> str:
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

    def error(self, loc: Loc, message: str) -> None:
        self.errors.append(SpecError(message, loc.file, loc.line, loc.col))

    def run(self) -> list[SpecError]:
        self.check_columns()
        self.check_outputs()
        self.check_label_sets()
        self.check_segments()
        self.check_observations()
        self.check_templates()
        self.check_settings(self.spec.train, TRAIN_SETTINGS, "train")
        self.check_infer()
        return sorted(self.errors, key=lambda e: (e.line, e.col))

    # ------------------------------------------------------------ columns, outputs, labels
    def check_columns(self) -> None:
        seen: dict[str, Loc] = {}
        for c in self.spec.columns:
            if c.name in seen:
                first = seen[c.name]
                self.error(c.loc, f"duplicate column '{c.name}'; it is already declared at "
                                  f"{first.line}:{first.col}")
            seen.setdefault(c.name, c.loc)
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
            if col is None:
                self.error(loc, f"unknown output column '{name}'; expected one of the declared columns: "
                                f"{', '.join(self.columns) or '(none)'}{_did_you_mean(name, self.columns)}")
            elif col.kind != "text" and col.kind in COLUMN_KINDS:
                self.error(loc, f"output '{name}' is a {col.kind} column; an output must be a text "
                                f"column (its values are the labels)")

    def check_label_sets(self) -> None:
        for name, (labels, loc) in self.spec.label_sets.items():
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

    # ------------------------------------------------------------ segments
    def check_segments(self) -> None:
        seg = self.spec.segments
        if seg is None:
            return
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
            if d.name in seen:
                first = seen[d.name]
                self.error(name_loc, f"duplicate observation '{d.name}'; it is already defined at "
                                     f"{first.line}:{first.col}")
                self.expr(d.expr)              # its first definition is checked below
            seen.setdefault(d.name, d.loc)
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
        kind = self.expr(self.obs[name].expr)
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

    def column_ref(self, e: ColumnRef) -> str | None:
        bases = {e.lo_base, e.hi_base}
        if self.spec.segments is None and bases & {"u", "v"}:
            self.error(e.loc, f"{_column_ref(e)} reads relative to a segment (u is its first token, v its "
                              f"last) but this is not a segment model; {NEED_SEGMENTS}, or read relative to "
                              f"the token t, as in {e.column}[t]")
        elif self.spec.segments is not None and "t" in bases:
            c = e.column
            self.error(e.loc, f"in a segment model, read columns relative to the segment: {c}[u] (first "
                              f"token), {c}[v] (last), {c}[u-1] (before), {c}[v+1] (after), {c}[u..v] "
                              f"(inside); found {_column_ref(e)}")
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
        arg_kind = self.expr(e.arg)
        self.params(e, b.params)
        if arg_kind is not None and arg_kind != b.takes:
            what = (f"'{e.arg.column}' is {self.columns[e.arg.column].kind}" if isinstance(e.arg, ColumnRef)
                    else "its argument gives " + {"text": "text", "number": "numbers", "test": "a yes/no test"}[arg_kind])
            need = "a text column" if b.takes == "text" else "a number or vector column"
            self.error(e.arg.loc, f"{e.func}() needs {need}; {what}")
        return b.gives

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
            if tpl.name in seen:
                first = seen[tpl.name]
                self.error(_loc(tpl.name, tpl.loc), f"duplicate template '{tpl.name}'; it is already defined "
                                                    f"at {first.line}:{first.col}")
            seen.setdefault(tpl.name, tpl.loc)
            self.template(tpl)

    def label_output(self, r: LabelRef) -> str | None:
        if r.var == "y":
            if len(self.outputs) > 1:
                self.error(r.loc, f"'y' is ambiguous: there are several outputs ({', '.join(self.outputs)}); "
                                  f"name one instead, as in {self.outputs[-1]}[t]")
                return None
            return self.outputs[0] if self.outputs else None
        if r.var in self.outputs:
            return r.var
        what = "an input column" if r.var in self.columns else "not an output"
        hint = (f"; segment labels are s[j-k..j] and need a segment model: {NEED_SEGMENTS}"
                if r.var == "s" and r.var not in self.columns and self.spec.segments is None else "")
        self.error(r.loc, f"'{r.var}' is {what}; template labels must be y or an output: "
                          f"{', '.join(self.outputs) or '(none)'}{_did_you_mean(r.var, ['y'] + self.outputs)}"
                          f"{hint}")
        return None

    def template(self, tpl: Template) -> None:
        if self.spec.segments is not None or any(r.index == "j" for r in tpl.labels):
            window, declared, where = self.segment_window(tpl)
        else:
            window, declared, where = self.token_window(tpl)
        if tpl.patterns is not None and tpl.patterns.kind == "list":
            self.patterns(tpl, window, declared, where)
        for e in tpl.observations:
            self.expr(e)
        self.check_settings(tpl.options, TEMPLATE_OPTIONS, f"template '{tpl.name}'", noun="option")

    def token_window(self, tpl: Template):
        """A chain template y[t-k..t]: its window length (None when broken),
        the declared labels of its output (None when unknown) and their name."""
        outs = [self.label_output(r) for r in tpl.labels]
        window = self.window(tpl, "t", "y", NONCONTIGUOUS_WINDOW)
        output = outs[0] if outs and all(o == outs[0] for o in outs) else None
        declared = self.spec.label_sets.get(output, (None,))[0] if output else None
        return window, declared, "the declared labels"

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
        """The length of the template's label window ending at ``index``
        (None, with an error, when the labels are not one)."""
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
            contiguous = (len({r.var for r in tpl.labels}) == 1 and positions[-1] == 0
                          and positions == list(range(positions[0], 1)))
            if contiguous:
                return len(positions)
            self.error(tpl.labels[0].loc, noncontiguous.format(labels=_labels_text(tpl.labels)))
        return None

    def patterns(self, tpl: Template, window: int | None, declared: list[str] | None, where: str) -> None:
        for pat in tpl.patterns.patterns:
            loc = _loc(pat, tpl.patterns.loc)
            shown = "[" + " ".join(pat) + "]"
            if not pat:
                self.error(loc, "empty pattern []; a pattern lists one label per position")
            elif window is not None and len(pat) > window:
                self.error(loc, f"pattern {shown} has {len(pat)} labels but the window "
                                f"{_labels_text(tpl.labels)} "
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
