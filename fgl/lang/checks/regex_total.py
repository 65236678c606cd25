"""The total size of a spec's regular expressions, checked before any is
compiled: each is rewritten into RE2's syntax (``fgl.lang.regexes``), and
compiling takes time and memory in proportion to the rewrite, so a spec of
many large patterns is refused at the pattern where their sum passes
``FGL_MAX_REGEX`` (``fgl.lang.regexes.RegexTotal``), before ``fgl check`` or
a model file's load compiles them one by one.
"""
from __future__ import annotations

from typing import Iterator

from fgl.lang.ast import Aggregate, Call, Conj, Disj, ObsExpr
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.text import loc_of
from fgl.lang.regexes import RegexTotal


def regex_calls(e: ObsExpr | None) -> Iterator[Call]:
    """The ``regex(...)`` calls in ``e`` (not through names), outermost first."""
    if isinstance(e, Call):
        if e.func == "regex" and e.params and isinstance(e.params[0], str):
            yield e
        yield from regex_calls(e.arg)
        links = e.links if isinstance(e, Aggregate) else []   # (an aggregate's predicates)
        for p in (p for link in links for p in link):
            yield from regex_calls(p.left)
            yield from regex_calls(p.right)
    elif isinstance(e, (Conj, Disj)):
        for p in e.parts:
            yield from regex_calls(p)


class RegexTotalChecks(CheckerBase):
    def check_regex_total(self) -> bool:
        """Refuse the pattern where the spec's regular expressions, in
        source order, pass the total; False then, so that the checks that
        compile each pattern must not run."""
        exprs = [d.expr for d in self.spec.observations]
        for tpl in self.spec.templates:
            exprs += tpl.observations
            exprs += [x for p in tpl.where for x in (p.left, p.right) if x is not None]
        calls = [c for e in exprs for c in regex_calls(e)]
        total = RegexTotal()
        for call in sorted(calls, key=lambda c: (c.loc.line, c.loc.col)):
            why = total.charge(call.params[0])
            if why is not None:
                self.error(loc_of(call.params[0], call.loc), why)
                return False
        return True
