"""How sure a trained model is: token marginals and segment confidences.

A token marginal is P(y_t = label | x) (``Model.marginals``).  The
confidence of an extracted segment is the probability of its predicted
labels, P(y_u..y_v = the prediction | x) = Z_constrained / Z (Sutton &
McCallum §1.3.3, after Culotta & McCallum), which each engine's model
computes (``Model.segment_confidences``):

* chain models (any order): the segments are the chunks of the predicted
  tags under ``scheme`` (``fgl.evaluation.evaluate.chunks``), each clamped to its
  predicted tags by constrained forward-backward, exactly
  (``fgl.engines.sequence.constrained``);
* segment models: the model's own predicted segments (u, v, y); the
  confidence is the total probability of the segmentations that contain
  exactly that segment, exactly;
* factor-graph models: the chunks of each output layer's tags, clamped as
  evidence — Z_constrained is the log Z of the instance's factor graph with
  the chunk's variables fixed to their predicted labels, run by the spec's
  inference: exact where the junction tree runs, the Bethe approximation
  where loopy BP does (then clipped to at most 1).

Graph input has no segments (its nodes are not a sequence): ask for
marginals instead.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from fgl.data.sentence import Sentence
from fgl.errors import FglError
from fgl.evaluation.evaluate import resolve
from fgl.model import Confidences, Model, Predictions, TokenMarginals, output_layers


def token_marginals(model: Model, w: np.ndarray, sentences: Sequence[Sentence],
                    jobs: int) -> TokenMarginals:
    """Every token's label marginals in every output layer (an empty
    sentence gets [0, labels] arrays)."""
    keep = [i for i, s in enumerate(sentences) if s.rows]
    outputs = output_layers(model.layers)
    got = model.marginals(w, model.encode([sentences[i] for i in keep], jobs=jobs),
                          jobs) if keep else None
    if len(keep) == len(sentences) and got is not None:
        return got
    probs = [[np.zeros((0, len(layer.labels))) for layer in outputs] for _ in sentences]
    for i, per_layer in zip(keep, got.probs if got else []):
        probs[i] = per_layer
    return TokenMarginals([layer.name for layer in outputs], [layer.labels for layer in outputs],
                          probs, got.stats if got else None)


def segment_confidences(model: Model, w: np.ndarray, sentences: Sequence[Sentence], jobs: int,
                        predictions: Predictions, scheme: str = "auto",
                        ignore: Iterable[str] = ("O",)) -> Confidences:
    """The predicted segments of every sentence and output layer, with
    their confidences (``predictions``: the model's decoding of
    ``sentences``; ``scheme`` and ``ignore`` as for
    ``fgl.evaluation.evaluate.chunks``, except that a segment model's segments are
    its own; segments labelled as in ``ignore`` are left out)."""
    if model.spec.input_format == "graph":
        raise FglError("segment confidences need sequences, and graph input has none (its "
                       "nodes are not in an order); use the node marginals (`fgl tag "
                       "--marginals`, CRF.marginals) instead")
    ignore = tuple(ignore)
    keep = [i for i, s in enumerate(sentences) if s.rows]
    n_out = len(output_layers(model.layers))
    out: Confidences = [[[] for _ in range(n_out)] for _ in sentences]
    if not keep:
        return out
    data = model.encode([sentences[i] for i in keep], jobs=jobs)
    tags = [predictions.labels[i] for i in keep]
    try:   # one scheme per output layer, as `fgl eval` resolves it over the whole data
        schemes = [resolve(scheme, [per_layer[k] for per_layer in tags]) for k in range(n_out)]
    except ValueError as e:
        raise FglError(str(e)) from None
    for i, per_layer in zip(keep, model.segment_confidences(w, data, jobs, tags, schemes,
                                                               ignore)):
        out[i] = per_layer
    return out
