"""Checks of the named observations (`obs name = expr`): duplicates, clashes
with built-ins, their kinds, and cycles among them."""
from __future__ import annotations

from fgl.lang.ast import Call, Conj, Disj, Loc, NameRef
from fgl.lang.builtins import BUILTINS
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.text import loc_of


def name_refs(e):
    """Every NameRef inside an observation expression, in source order."""
    if isinstance(e, NameRef):
        yield e
    elif isinstance(e, Call):
        yield from name_refs(e.arg)
    elif isinstance(e, (Conj, Disj)):
        for p in e.parts:
            yield from name_refs(p)


class ObservationChecks(CheckerBase):
    def check_observations(self) -> None:
        seen: dict[str, Loc] = {}
        for d in self.spec.observations:
            name_loc = loc_of(d.name, d.loc)
            if self.once(seen, d.name, d.loc, name_loc, "observation", "defined"):
                self.expr(d.expr)              # its first definition is checked below
            if d.name in BUILTINS:
                self.error(name_loc, f"observation name '{d.name}' clashes with the built-in "
                                     f"'{d.name}'; choose another name")
        for name, d in self.obs.items():
            if self.obs_kind(name) is not None:
                self.check_items(d.expr)
        self.check_cycles()

    def obs_kind(self, name: str) -> str | None:
        """The kind of a named observation, checking its definition once."""
        if name in self._kinds:
            return self._kinds[name]
        if name in self._in_progress:          # a cycle: reported by check_cycles
            return None
        self._in_progress.add(name)
        with self.reading(self.default_ctx):
            kind = self.expr(self.obs[name].expr)
        self._in_progress.discard(name)
        self._kinds[name] = kind
        return kind

    def check_cycles(self) -> None:
        order = {n: i for i, n in enumerate(self.obs)}
        edges: dict[str, list[NameRef]] = {n: list(name_refs(d.expr)) for n, d in self.obs.items()}
        reported: set[frozenset] = set()
        done: set[str] = set()

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

        for name in self.obs:
            visit(name, [])
