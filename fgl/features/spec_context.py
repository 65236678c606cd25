"""What the observation evaluators read of a checked spec: its columns'
kinds, its named observations and its lexicons (each file read once)."""
from __future__ import annotations

from pathlib import Path

from fgl.data.inputs import InputError, read_capped
from fgl.errors import SpecError
from fgl.lang import ast
from fgl.lang.lexicons import LexiconRefused, lexicon_file


class SpecContext:
    """A checked spec as the evaluators of its observations see it;
    ``lexicons`` holds those already read (or taken from a saved model)."""

    def __init__(self, spec: ast.Spec, base_dir: Path | None = None,
                 lexicons: dict[str, frozenset[str]] | None = None):
        self.spec = spec
        self.base_dir = base_dir or Path(".")
        self.kinds = {c.name: c.kind for c in spec.columns}
        self.named = {o.name: o for o in spec.observations}
        self.lexicons: dict[str, frozenset[str]] = dict(lexicons or {})

    def lexicon(self, call: ast.Call) -> frozenset[str]:
        """The lexicon named in the spec, read once (from under the spec's
        folder: ``fgl.lang.lexicons``) or taken from a saved model."""
        key = call.params[0]
        if key not in self.lexicons:
            at = (call.loc.file, call.loc.line, call.loc.col)
            try:
                path = lexicon_file(key, self.base_dir)
            except LexiconRefused as e:
                raise SpecError(str(e), *at) from None
            try:
                lines = read_capped(path).decode("utf-8").splitlines()
            except (OSError, UnicodeDecodeError, InputError) as e:
                raise SpecError(f"cannot read lexicon '{path}': {e}", *at) from None
            self.lexicons[key] = frozenset(w.strip() for w in lines if w.strip())
        return self.lexicons[key]
