"""How large and how deep observation expressions are once the named
observations they use are written out — checked before anything else reads
them, so a spec that would blow up at training is refused by ``fgl check``.

Compiling an expression writes every named observation out where it is
used: ``obs o1 = o0 & o0`` is ``o0`` twice, so a chain of such definitions
doubles at each step (``o16`` is 65,536 copies of ``o0``: every position
evaluates them all and every attribute's name holds them all).  A union of
thousands of copies of one column costs as much.  The checker counts the
*terms* — column references and zero-argument built-ins — of each
expression written out, and refuses one with more than ``MAX_TERMS``, at
the definition where the count first passes the limit, showing the growth.

Compiling also recurses through the names: ``MAX_DEPTH`` bounds the
nesting of an expression counted through the observations it names (a
chain of 1,000 definitions each naming the one before).  The counts are
made without recursing through names (dependencies first), so neither
check can itself run out of stack.
"""
from __future__ import annotations

from collections import Counter

from fgl.lang.ast import Call, Conj, Disj, Loc, NameRef, ObsExpr
from fgl.lang.builtins import expr_text
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.observations import name_refs
from fgl.lang.checks.text import loc_of

MAX_TERMS = 1000   # terms of one observation expression, its names written out
MAX_DEPTH = 100    # nesting of one observation expression, counted through its names
_SHOWN = 10 ** 18  # (counts beyond are shown as "more than")


def _count(n: int) -> str:
    return f"more than {_SHOWN:,}" if n > _SHOWN else f"{n:,}"


class GrowthChecks(CheckerBase):
    def check_growth(self) -> bool:
        """Refuse observation expressions too large or too deep written out
        (module docstring); False when one is too deep, so that the checks
        recursing through names must not run."""
        order = self._dependencies_first()
        terms: dict[str, int] = {}
        depth: dict[str, int] = {}
        deep = False
        for name in order:
            d = self.obs[name]
            t, k = self._measure(d.expr, terms, depth)
            terms[name], depth[name] = min(t, _SHOWN + 1), k
            where = loc_of(d.name, d.loc)
            deep |= self._report(f"observation '{name}'", d.expr, t, k, where, terms, depth)
        for tpl in self.spec.templates:
            exprs = list(tpl.observations)
            exprs += [x for p in tpl.where for x in (p.left, p.right) if x is not None]
            for e in exprs:
                t, k = self._measure(e, terms, depth)
                deep |= self._report(f"the expression '{_short(expr_text(e))}' of template "
                                     f"'{tpl.name}'", e, t, k, loc_of(e, tpl.loc), terms, depth)
        return not deep

    def _dependencies_first(self) -> list[str]:
        """The named observations, each after those it names (a name in a
        cycle once, where the cycle is entered; cycles are reported by
        ``check_cycles``), found without recursion."""
        order: list[str] = []
        state: dict[str, int] = {}
        for root in self.obs:
            if root in state:
                continue
            state[root] = 1
            stack = [(root, iter([r.name for r in name_refs(self.obs[root].expr)]))]
            while stack:
                name, refs = stack[-1]
                for ref in refs:
                    if ref in self.obs and ref not in state:
                        state[ref] = 1
                        stack.append((ref, iter([r.name for r in name_refs(self.obs[ref].expr)])))
                        break
                else:
                    stack.pop()
                    order.append(name)
        return order

    def _measure(self, e: ObsExpr, terms: dict[str, int], depth: dict[str, int]
                 ) -> tuple[int, int]:
        """(terms, nesting) of ``e`` written out; the names it uses are
        read from ``terms``/``depth`` (1 for a name in a cycle, not yet
        measured)."""
        if isinstance(e, NameRef):
            if e.name in self.obs:
                return terms.get(e.name, 1), 1 + depth.get(e.name, 1)
            return 1, 1
        if isinstance(e, Call):
            if e.arg is None:
                return 1, 1
            t, k = self._measure(e.arg, terms, depth)
            return t, k + 1
        if isinstance(e, (Conj, Disj)):
            parts = [self._measure(p, terms, depth) for p in e.parts]
            return sum(t for t, _ in parts), 1 + max((k for _, k in parts), default=0)
        return 1, 1

    def _report(self, what: str, e: ObsExpr, t: int, k: int, loc: Loc,
                terms: dict[str, int], depth: dict[str, int]) -> bool:
        """Report ``e`` when it is the first on its path past a limit (not
        when a name it uses already is); True when it is too deep."""
        used = {r.name for r in name_refs(e) if r.name in self.obs}
        if k > MAX_DEPTH and all(depth.get(n, 0) <= MAX_DEPTH for n in used):
            chain = self._deepest_chain(e, depth)
            self.error(loc, f"{what} is nested {k:,} deep counting through the observations it "
                            f"names ({chain}); at most {MAX_DEPTH}: define it with fewer "
                            "steps")
        elif t > MAX_TERMS and all(terms.get(n, 0) <= MAX_TERMS for n in used):
            self.error(loc, f"{what} grows too large: written out with the observations it "
                            f"uses, it has {_count(t)} terms ({_growth(e, terms, self.obs)}), "
                            f"more than the {MAX_TERMS:,} fgl allows; every position evaluates "
                            "each term and each attribute's name holds them all: write a "
                            "repeated part once")
        return k > MAX_DEPTH

    def _deepest_chain(self, e: ObsExpr, depth: dict[str, int]) -> str:
        """``a -> b -> ... -> z``: the names along the deepest path from ``e``."""
        names: list[str] = []
        seen: set[str] = set()
        while True:
            used = [r.name for r in name_refs(e) if r.name in self.obs and r.name not in seen]
            if not used:
                break
            nxt = max(used, key=lambda n: depth.get(n, 0))
            names.append(nxt)
            seen.add(nxt)
            e = self.obs[nxt].expr
        if len(names) > 6:
            names = names[:3] + ["..."] + names[-2:]
        return " -> ".join(names) if names else "no names"


def _growth(e: ObsExpr, terms: dict[str, int], named) -> str:
    """Where the terms of ``e`` come from: its operands by how many terms
    they bring, the largest first."""
    operands: Counter[str] = Counter()
    size: dict[str, int] = {}

    def walk(x: ObsExpr) -> None:
        if isinstance(x, (Conj, Disj)):
            for p in x.parts:
                walk(p)
        else:
            text = _short(expr_text(x))
            operands[text] += 1
            size[text] = _leaves(x, terms, named)

    walk(e)
    ranked = sorted(operands, key=lambda s: -operands[s] * size[s])
    shown = []
    for text in ranked[:3]:
        n, s = operands[text], size[text]
        shown.append(text + (f", of {_count(s)} terms," if s > 1 else "")
                     + ("" if n == 1 else " twice" if n == 2 else f" {n:,} times"))
    more = len(ranked) - 3
    return "; ".join(shown) + (f"; and {more:,} more" if more > 0 else "")


def _leaves(x: ObsExpr, terms: dict[str, int], named) -> int:
    if isinstance(x, NameRef):
        return terms.get(x.name, 1) if x.name in named else 1
    if isinstance(x, Call):
        return 1 if x.arg is None else _leaves(x.arg, terms, named)
    if isinstance(x, (Conj, Disj)):
        return sum(_leaves(p, terms, named) for p in x.parts)
    return 1


def _short(text: str, most: int = 60) -> str:
    return text if len(text) <= most else text[:most - 3] + "..."
