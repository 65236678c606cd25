"""The state every part of the checker shares, and how it reports."""
from __future__ import annotations

from pathlib import Path

from fgl.errors import SpecError
from fgl.lang.ast import SKIP_COLUMN, Column, Hidden, Loc, ObsDef, Spec
from fgl.lang.checks.context import Context, Reading


class CheckerBase(Reading):
    """The spec's declarations by name (first declaration wins) and the
    errors found so far."""

    def __init__(self, spec: Spec, base_dir: Path | None):
        self.spec = spec
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.errors: list[SpecError] = []
        self.warnings: list[SpecError] = []         # legal, but likely not what was meant
        self.columns: dict[str, Column] = {}
        for c in spec.columns:
            if c.name != SKIP_COLUMN:   # `_`: a data column not read
                self.columns.setdefault(c.name, c)
        self.outputs = list(dict.fromkeys(spec.outputs))
        self.inputs = [n for n in self.columns if n not in self.outputs]
        self.obs: dict[str, ObsDef] = {}
        for d in spec.observations:
            self.obs.setdefault(d.name, d)
        self._kinds: dict[str, str | None] = {}     # named observation -> its kind
        self._in_progress: set[str] = set()         # named observations being checked
        self._items: dict[str, int] = {}            # named observation -> its most items
        self.graph = spec.input_format == "graph"
        self.hidden: dict[str, Hidden] = {}
        for h in spec.hidden:
            self.hidden.setdefault(h.name, h)
        self.default_ctx = (Context.GRAPH_NODE if self.graph else
                            Context.SEGMENT if spec.segments is not None else Context.TOKEN)
        self.ctx = self.default_ctx

    def error(self, loc: Loc, message: str) -> None:
        self.errors.append(SpecError(message, loc.file, loc.line, loc.col))

    def warn(self, loc: Loc, message: str) -> None:
        """A warning: printed by `fgl check` as ``file:line:col: warning: ...``."""
        w = SpecError(f"warning: {message}", loc.file, loc.line, loc.col)
        if all(str(w) != str(x) for x in self.warnings):
            self.warnings.append(w)

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
