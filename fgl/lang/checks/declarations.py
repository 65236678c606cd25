"""Checks of the declarations: input format, columns, outputs, label sets,
hidden layers and segments (Cuong et al. 2014 §2); the label layers they
declare."""
from __future__ import annotations

from fgl.lang.ast import SKIP_COLUMN, LabelRef, Loc
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.messages import COLUMN_KINDS, INPUT_FORMATS, NEED_SEGMENTS, SEGMENT_BOUNDARIES
from fgl.lang.checks.text import did_you_mean, end_loc, loc_of, show
from fgl.lang.settings import whole_number

MAX_SEGMENT_LENGTH = 1000  # the longest `segments max` (work and memory grow with it per token)

class DeclarationChecks(CheckerBase):
    def check_input(self) -> None:
        fmt = self.spec.input_format
        if fmt not in INPUT_FORMATS:
            self.error(loc_of(fmt, Loc(self.spec.file, 1, 1)),
                       f"unknown input format '{fmt}'; expected `input conll` (token columns, "
                       f"the default) or `input graph` (JSON lines of nodes and edges)"
                       f"{did_you_mean(fmt, INPUT_FORMATS)}")

    def check_columns(self) -> None:
        seen: dict[str, Loc] = {}
        for c in self.spec.columns:
            if c.name == SKIP_COLUMN:
                self.check_skipped(c)
                continue
            self.once(seen, c.name, c.loc, c.loc, "column", "declared")
            if c.kind not in COLUMN_KINDS:
                self.error(loc_of(c.kind, c.loc),
                           f"unknown column kind '{c.kind}' for '{c.name}'; expected one of: "
                           f"{', '.join(COLUMN_KINDS)}{did_you_mean(c.kind, COLUMN_KINDS)}")
        if not self.spec.columns:
            self.error(end_loc(self.spec), "no `columns` statement; declare the data file's "
                                           "columns in order, as in `columns word, pos, chunk`")

    def check_skipped(self, c) -> None:
        """A `_` column: a data column skipped, so of no kind, and only in
        column files."""
        if self.graph:
            self.error(c.loc, "`_` skips a column of a column file; graph input names its node "
                              "attributes, so leave the ones not read out of `columns`")
        elif c.kind != "text":
            self.error(loc_of(c.kind, c.loc), f"`_` skips a data column and is never read, so "
                                              f"it takes no kind (found `_: {c.kind}`)")

    def check_outputs(self) -> None:
        spec = self.spec
        if not spec.outputs:
            where = spec.columns[0].loc if spec.columns else end_loc(spec)
            self.error(where, "no `output` statement; name the label column, as in `output chunk`")
        seen: set[str] = set()
        declared = ", ".join(self.columns) or "(none)"
        for name, loc in zip(spec.outputs, spec.output_locs):
            if name in seen:
                self.error(loc, f"output '{name}' is named twice")
            seen.add(name)
            col = self.columns.get(name)
            if col is None and name in self.hidden:
                self.error(loc, f"'{name}' is a hidden layer: its values are never observed, so "
                                f"it cannot be an `output`; outputs are label columns of the "
                                f"data: {declared}")
            elif col is None and name == SKIP_COLUMN:
                self.error(loc, "`_` names a data column the spec skips, so it cannot be the "
                                f"output; the declared columns are {declared}")
            elif col is None:
                self.error(loc, f"unknown output column '{name}'; expected one of the declared "
                                f"columns: {declared}{did_you_mean(name, self.columns)}")
            elif col.kind != "text" and col.kind in COLUMN_KINDS:
                self.error(loc, f"output '{name}' is a {col.kind} column; an output must be a "
                                f"text column (its values are the labels)")

    def check_label_sets(self) -> None:
        for name, (labels, loc) in self.spec.label_sets.items():
            if name in self.hidden and name not in self.columns:
                h = self.hidden[name]
                self.error(loc_of(name, loc),
                           f"`labels {name}`: '{name}' is a hidden layer; its labels are given in "
                           f"`hidden {name} = [...]` (at {h.loc.line}:{h.loc.col})")
                continue
            if name not in self.outputs:
                self.error(loc_of(name, loc),
                           f"`labels {name}` does not name an output; expected one of the "
                           f"outputs: {', '.join(self.outputs) or '(none)'}"
                           f"{did_you_mean(name, self.outputs)}")
            if not labels:
                self.error(loc, f"the label set of '{name}' is empty; list its labels, as in "
                                f"[B-NP I-NP O]")
            seen: set[str] = set()
            for label in labels:
                if label in seen:
                    self.error(loc_of(label, loc),
                               f"duplicate label '{label}' in the labels of '{name}'")
                seen.add(label)

    def check_hidden(self) -> None:
        seen: dict[str, Loc] = {}
        for h in self.spec.hidden:
            name_loc = loc_of(h.name, h.loc)
            self.once(seen, h.name, h.loc, name_loc, "hidden layer", "declared")
            col = self.columns.get(h.name)
            if col is not None:
                what = "output" if h.name in self.outputs else "column"
                self.error(name_loc, f"hidden layer '{h.name}' clashes with the {what} "
                                     f"'{h.name}' (declared at {col.loc.line}:{col.loc.col}); a "
                                     f"hidden layer is never in the data, choose another name")
            elif h.name == "y":
                self.error(name_loc, "hidden layer 'y' clashes with y, the output in templates; "
                                     "choose another name")
            if len(h.labels) < 2:
                self.error(h.loc, f"hidden layer '{h.name}' needs at least 2 labels, as in "
                                  f"`hidden {h.name} = [{h.name}0 {h.name}1]`; "
                                  f"found {len(h.labels)}")
            labels: set[str] = set()
            for label in h.labels:
                if label in labels:
                    self.error(loc_of(label, h.loc),
                               f"duplicate label '{label}' in hidden layer '{h.name}'")
                labels.add(label)
            if self.spec.segments is not None and h is self.spec.hidden[0]:
                self.error(h.loc, "hidden layers cannot be combined with `segments`; a segment "
                                  "model labels segments, not positions")

    def check_segments(self) -> None:
        seg = self.spec.segments
        if seg is None:
            return
        if self.graph:
            self.error(seg.loc, "`segments` cannot be used with `input graph`: a graph has no "
                                "token sequence to cut into segments")
        problem = whole_number(1)(seg.max_length)
        if problem:
            self.error(loc_of(seg.max_length, seg.loc),
                       f"segments: max must be {problem}, the longest segment in tokens; "
                       f"found {show(seg.max_length)}")
        elif seg.max_length > MAX_SEGMENT_LENGTH:
            self.error(loc_of(seg.max_length, seg.loc),
                       f"segments: max {seg.max_length} is beyond the limit of "
                       f"{MAX_SEGMENT_LENGTH} tokens (the engine's work and memory grow with "
                       "it for every token)")
        for label, n in seg.per_label.items():
            problem = whole_number(1)(n)
            if problem:
                self.error(loc_of(n, loc_of(label, seg.loc)),
                           f"segments: the maximum length of '{label}' must be {problem}; "
                           f"found {show(n)}")
            elif n > MAX_SEGMENT_LENGTH:
                self.error(loc_of(n, loc_of(label, seg.loc)),
                           f"segments: the maximum length {n} of '{label}' is beyond the limit "
                           f"of {MAX_SEGMENT_LENGTH} tokens (the engine's work and memory grow "
                           "with it for every token)")
        if seg.boundary not in SEGMENT_BOUNDARIES:
            self.error(loc_of(seg.boundary, seg.loc),
                       f"unknown segment boundary '{seg.boundary}'; expected `from bio` (B- "
                       f"starts a segment) or `from change` (a label change starts one)"
                       f"{did_you_mean(seg.boundary, SEGMENT_BOUNDARIES)}")
        names = self.segment_labels()
        if names is not None:
            for label in seg.per_label:
                if label not in names:
                    self.error(loc_of(label, seg.loc),
                               f"unknown label '{label}' in `segments max`; expected one of the "
                               f"segment labels{self.segment_labels_origin()}: "
                               f"{', '.join(names)}{did_you_mean(label, names)}")

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

    def label_output(self, r: LabelRef) -> str | None:
        """The label layer (an output or a hidden layer) ``r`` names, or None
        (with an error) when it names none."""
        if r.var == "y":
            if len(self.outputs) > 1:
                self.error(r.loc, f"'y' is ambiguous: there are several outputs "
                                  f"({', '.join(self.outputs)}); name one instead, as in "
                                  f"{self.outputs[-1]}[t]")
                return None
            return self.outputs[0] if self.outputs else None
        if r.var in self.outputs or r.var in self.hidden:
            return r.var
        what = "an input column" if r.var in self.columns else "not an output"
        hint = (f"; segment labels are s[j-k..j] and need a segment model: {NEED_SEGMENTS}"
                if r.var == "s" and r.var not in self.columns and self.spec.segments is None
                else "")
        hidden = f" or a hidden layer: {', '.join(self.hidden)}" if self.hidden else ""
        self.error(r.loc, f"'{r.var}' is {what}; template labels must be y or an output: "
                          f"{', '.join(self.outputs) or '(none)'}{hidden}"
                          f"{did_you_mean(r.var, ['y'] + self.outputs + list(self.hidden))}{hint}")
        return None

    def declared_labels(self, layer: str | None) -> list[str] | None:
        """The labels declared for an output (`labels`) or a hidden layer."""
        if layer is None:
            return None
        if layer in self.hidden and layer not in self.outputs:
            return list(self.hidden[layer].labels)
        return self.spec.label_sets.get(layer, (None,))[0]
