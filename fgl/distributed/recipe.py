"""What the driver sends workers to rebuild a compiled model.

Compiled models hold compiled observation functions, which do not pickle;
a model file's contents do — the spec, the header (labels, templates,
vocabularies, lexicons) and the arrays — so workers rebuild the model the
way ``fgl.modelfile.model_files`` loads one (``Model.from_header``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fgl import registry
from fgl.lang import ast
from fgl.model import Model


@dataclass
class ModelRecipe:
    """A compiled model as plain data."""

    engine: str
    spec: ast.Spec
    base_dir: Path
    header: dict
    arrays: dict[str, np.ndarray]

    @classmethod
    def of(cls, model: Model, base_dir: Path) -> "ModelRecipe":
        header = {**model.header(), "lexicons": dict(model.lexicons)}
        return cls(model.engine, model.spec, base_dir, header, model.arrays())

    def build(self) -> Model:
        """The model (on a worker)."""
        return registry.by_name(self.engine).model.from_header(
            self.spec, self.base_dir, self.header, self.arrays)
