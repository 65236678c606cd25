"""Whole labellings and their probabilities: n-best lists (CRF++'s
``crf_test -n``, Wapiti's ``--nbest``) and p(y | x) of a sequence's
labelling (``crf_test -v1``'s ``# 0.2985``, CRFsuite's
``Tagger.probability``).

p(y | x) = exp(w·F(x, y) - log Z(x)) (Sutton & McCallum §1.3.1), with the
k best labellings by the k-best Viterbi kernel
(``fgl.engines.sequence.nbest``) and log Z by forward-backward: both exact,
on the chain (any order) and segment engines.  The factor-graph engine
refuses (``Model.nbest``): its MAP and log Z are approximations wherever the
graph has loops, and a probability built from them would not be one.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from fgl.data.sentence import Sentence
from fgl.errors import FglError
from fgl.model import Model

# one labelling of a sentence: its tags (one per token) and p(tags | x)
Labelling = tuple[list[str], float]


def nbest_labellings(model: Model, w: np.ndarray, sentences: Sequence[Sentence], k: int,
                     encode: Callable[[Sequence[Sentence]], Any], jobs: int
                     ) -> list[list[Labelling]]:
    """Per sentence, its ``k`` best labellings best first, each with its
    probability p(y | x) (an empty sentence has one, empty, of probability
    1; fewer than ``k`` when the sentence has fewer labellings)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise FglError(f"n-best: k must be a whole number of at least 1, not {k!r}")
    keep = [i for i, s in enumerate(sentences) if s.rows]
    out: list[list[Labelling]] = [[([], 1.0)] for _ in sentences]
    if not keep:
        return out
    data = encode([sentences[i] for i in keep])
    found = model.nbest(w, data, int(k))
    log_z = model.log_partition(w, data, jobs)
    for i, best, lz in zip(keep, found, log_z):
        out[i] = [(tags, math.exp(min(0.0, score - float(lz)))) for tags, score in best]
    return out
