"""The one model interface every engine's compiled model implements.

A *model* is a checked spec compiled against training data: its label
layers, template plans, attribute vocabularies and the engine's program.
The API (``fgl.api``), the CLI and model files (``fgl.modelfile.model_files``) use
only this interface; which class implements it for a spec is decided in one
place, ``fgl.registry``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol, Sequence

import numpy as np

from fgl.compile.frontend import Layer, TemplatePlan
from fgl.data.sentence import Sentence
from fgl.engines.program import InferenceStats, Program
from fgl.lang import ast
from fgl.lang.settings import TrainSettings


@dataclass
class Predictions:
    """MAP labels of a batch of sentences (or graphs), for every output
    layer: ``labels[s][k]`` is the label sequence of sentence s in output
    layer ``outputs[k]``."""

    outputs: list[str]
    labels: list[list[list[str]]]
    stats: InferenceStats | None = None

    def layer(self, name: str) -> list[list[str]]:
        """Every sentence's labels in output layer ``name``."""
        k = self.outputs.index(name)
        return [per_layer[k] for per_layer in self.labels]

    def tokens(self) -> list[list]:
        """Per sentence, one label per token — a tuple of labels (one per
        output layer, in ``outputs`` order) when there are several."""
        if len(self.outputs) == 1:
            return [per_layer[0] for per_layer in self.labels]
        return [list(zip(*per_layer)) for per_layer in self.labels]


@dataclass
class TokenMarginals:
    """P(label | x) of every token (or node) in every output layer:
    ``probs[s][k]`` is a [tokens, labels of layer k] array for sentence s."""

    outputs: list[str]
    labels: list[list[str]]          # per output layer, its labels (column order)
    probs: list[list[np.ndarray]]
    stats: InferenceStats | None = None

    def dicts(self, name: str | None = None) -> list[list[dict[str, float]]]:
        """Per sentence and token, ``{label: probability}`` of output layer
        ``name`` (default: the first)."""
        k = 0 if name is None else self.outputs.index(name)
        return [[dict(zip(self.labels[k], map(float, row))) for row in per_layer[k]]
                for per_layer in self.probs]


class SegmentConfidence(NamedTuple):
    """A predicted segment: tokens ``start``..``end - 1`` labelled ``label``
    (the chunk type, or the segment label of a segment model), with the
    probability of its predicted labels (``Model.segment_confidences``)."""

    start: int
    end: int
    label: str
    confidence: float


# per sentence, per output layer, its segments
Confidences = list[list[list[SegmentConfidence]]]


class Model(Protocol):
    """What the API, CLI and model files may use of a compiled model."""

    engine: ClassVar[str]            # its name in ``fgl.registry``
    spec: ast.Spec
    layers: list[Layer]
    templates: list[TemplatePlan]
    vocabs: list[dict[str, int]]
    program: Program
    feat_sigma: np.ndarray

    @classmethod
    def compile(cls, spec: ast.Spec, sentences: Any, base_dir: Path,
                settings: TrainSettings | None, source: str) -> tuple["Model", Any]:
        """Compile ``spec`` against training ``sentences`` (read from
        ``source``); returns the model and the encoded training data."""

    @classmethod
    def from_header(cls, spec: ast.Spec, base_dir: Path, header: dict,
                    arrays: dict[str, np.ndarray]) -> "Model":
        """Rebuild a model from a model file's header and arrays."""

    def header(self) -> dict:
        """What a model file stores as JSON (besides the spec)."""

    def arrays(self) -> dict[str, np.ndarray]:
        """What a model file stores as arrays (besides the weights)."""

    @property
    def lexicons(self) -> dict[str, frozenset[str]]:
        """The lexicon files the spec reads, as loaded at compile time."""

    def initial_weights(self) -> np.ndarray:
        """Where training starts."""

    def unlabelled(self, data: Any) -> int:
        """How many output variables of the encoded training ``data`` have
        no label (summed out by the marginal likelihood)."""

    def encode(self, sentences: Sequence[Sentence], with_gold: bool = False,
               jobs: int | None = None) -> Any:
        """The engine's encoded form of ``sentences``; ``jobs``: the threads
        that will run on it, for an engine whose memory check counts their
        scratch (None: the spec's ``jobs``)."""

    def decode(self, w: np.ndarray, data: Any, jobs: int) -> Predictions:
        """MAP labels of every sentence of ``data``, every output layer."""

    def marginals(self, w: np.ndarray, data: Any, jobs: int) -> TokenMarginals:
        """Per-token label marginals of every output layer."""

    def nbest(self, w: np.ndarray, data: Any, k: int) -> list[list[tuple[list[str], float]]]:
        """Per instance, its k best labellings (one tag per token) with
        their scores w·F(x, y), best first — exactly, or an ``FglError``
        saying why the engine cannot (``fgl.labellings``)."""

    def log_partition(self, w: np.ndarray, data: Any, jobs: int) -> np.ndarray:
        """log Z(x) of every instance of ``data``."""

    def segment_confidences(self, w: np.ndarray, data: Any, jobs: int,
                            tags: list[list[list[str]]], schemes: list[str],
                            ignore: tuple[str, ...]) -> Confidences:
        """The segments of every instance's predicted ``tags`` (per sentence,
        per output layer; chunks under ``schemes``, one per output layer, or
        a segment model's own segments), without those labelled as in
        ``ignore``, each with P(its predicted labels | x) = Z_clamped / Z
        (Sutton & McCallum §1.3.3)."""

    def pattern_labels(self, template: int, pattern: int) -> tuple[str, ...]:
        """The labels (one per variable) of a feature's ``feat_pattern``
        entry in ``template``."""

    def describe(self, data: Any | None = None) -> list[str]:
        """Sizes of the compiled program (and of ``data``'s instances) for
        ``explain``."""


def output_layers(layers: list[Layer]) -> list[Layer]:
    """The layers that are outputs (not hidden)."""
    return [layer for layer in layers if not layer.hidden]
