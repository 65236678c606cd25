"""Semantic checks of a parsed spec.

``check_spec`` returns every mistake it finds, in source order, each a
``SpecError`` at the offending token that says what was found and what was
expected; ``validate`` raises the first.  Names and labels produced by
``fgl.lang.parser`` carry their own ``.loc`` (see ``fgl.lang.parser.Located``); for
hand-built specs the enclosing node's Loc is used instead.

The checker is one class made of a part per concern (declarations, named
observations, expressions, pair and other templates, settings); the parts
share the state of ``CheckerBase`` and call each other through ``self``.
"""
from __future__ import annotations

from pathlib import Path

from fgl.errors import SpecError
from fgl.lang.ast import Spec
from fgl.lang.checks.aggregates import AggregateChecks
from fgl.lang.checks.declarations import DeclarationChecks
from fgl.lang.checks.expressions import ExpressionChecks
from fgl.lang.checks.growth import GrowthChecks
from fgl.lang.checks.messages import (
    GRAPH_TEMPLATES,
    NEED_GRAPH,
    NEED_SEGMENTS,
    NEEDS_EDGE,
    NEEDS_WHERE,
    NONCONTIGUOUS_SEGMENT_WINDOW,
    REPEATED_LABEL,
    SEGMENTS_AND_PAIRS,
)
from fgl.lang.checks.observations import ObservationChecks
from fgl.lang.checks.regex_total import RegexTotalChecks
from fgl.lang.checks.settings import SettingChecks
from fgl.lang.checks.templates import TemplateChecks
from fgl.lang.checks.text import labels_text

__all__ = ["GRAPH_TEMPLATES", "NEED_GRAPH", "NEED_SEGMENTS", "NEEDS_EDGE", "NEEDS_WHERE",
           "NONCONTIGUOUS_SEGMENT_WINDOW", "REPEATED_LABEL", "SEGMENTS_AND_PAIRS",
           "check_spec", "labels_text", "validate"]


class _Checker(DeclarationChecks, GrowthChecks, RegexTotalChecks, ObservationChecks,
               ExpressionChecks, AggregateChecks, TemplateChecks, SettingChecks):
    def run(self) -> list[SpecError]:
        self.check_input()
        self.check_columns()
        self.check_outputs()
        self.check_label_sets()
        self.check_hidden()
        self.check_segments()
        if not self.check_growth():   # (too deep: the checks below recurse through names)
            return sorted(self.errors, key=lambda e: (e.line, e.col))
        if not self.check_regex_total():   # (too large: the checks below compile each one)
            return sorted(self.errors, key=lambda e: (e.line, e.col))
        self.check_observations()
        self.check_templates()
        self.check_train()
        self.check_infer()
        return sorted(self.errors, key=lambda e: (e.line, e.col))


def check_spec(spec: Spec, base_dir: Path | None = None,
               warnings: list[SpecError] | None = None) -> list[SpecError]:
    """Every semantic error in ``spec``, in source order.  ``base_dir`` is
    where relative file names (lexicons) are looked up; None skips that.
    ``warnings``, when given, receives what is legal but likely not meant
    (each a SpecError whose message starts "warning: "), in source order."""
    checker = _Checker(spec, base_dir)
    errors = checker.run()
    if warnings is not None:
        warnings.extend(sorted(checker.warnings, key=lambda w: (w.line, w.col)))
    return errors


def validate(spec: Spec, base_dir: Path | None = None) -> Spec:
    """Return ``spec`` unchanged if it has no semantic errors, else raise the first."""
    errors = check_spec(spec, base_dir)
    if errors:
        raise errors[0]
    return spec
