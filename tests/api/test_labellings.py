"""n-best labellings and labelling probabilities through the API
(``CRF.predict_nbest``, ``CRF.predict_probability``; ``fgl.labellings``):
with k at least the number of labellings, the list is every labelling once
(every segmentation, for a segment model: two may write the same tags)
and the probabilities sum to 1 (exact p(y|x) = exp(score - log Z)); the
best is ``predict``'s; the factor-graph engine refuses."""
from __future__ import annotations

import numpy as np
import pytest
from support.sentences import inputs_and_labels, segment_data
from support.specs import SHORT_TRAINED_CHAIN, SHORT_TRAINED_SEGMENTS, SKIP_CHAIN

from fgl import CRF
from fgl.errors import FglError

HIGH_ORDER = SHORT_TRAINED_CHAIN.replace("max_iter = 15", "max_iter = 30")
SEGMENTS = SHORT_TRAINED_SEGMENTS.replace("max_iter = 15", "max_iter = 30")


@pytest.fixture(scope="module")
def data():
    train, test = segment_data(seed=3, n_train=25, n_test=4, length=6)
    return inputs_and_labels(train), inputs_and_labels(test)


def _short(X):
    """Each sequence's first 3 tokens: few enough labellings to list them all."""
    return [x[:3] for x in X]


@pytest.mark.parametrize("spec", [HIGH_ORDER, SEGMENTS], ids=["chain", "segments"])
def test_every_labelling_once_and_probabilities_sum_to_one(data, spec):
    (X, y), (Xt, _) = data
    crf = CRF(spec).fit(X, y)
    short = _short(Xt)
    found = crf.predict_nbest(short, 10_000)
    for best, pred, p in zip(found, crf.predict(short), crf.predict_probability(short)):
        labellings = [tuple(tags) for tags, _ in best]
        probs = np.array([q for _, q in best])
        assert list(best[0][0]) == list(pred) and best[0][1] == p
        assert (np.diff(probs) <= 1e-12).all()    # best first
        if spec is HIGH_ORDER:   # every one of n^T tag sequences, once
            assert len(set(labellings)) == len(labellings) == len(crf.model.labels) ** 3
        np.testing.assert_allclose(probs.sum(), 1.0, rtol=1e-9)
    few = crf.predict_nbest(short, 2)
    assert [[t for t, _ in b] for b in few] == [[t for t, _ in b[:2]] for b in found]


def test_empty_sequence_and_bad_k(data):
    (X, y), _ = data
    crf = CRF(HIGH_ORDER).fit(X, y)
    assert crf.predict_nbest([[]], 3) == [[([], 1.0)]]
    with pytest.raises(FglError, match="at least 1"):
        crf.predict_nbest(X[:1], 0)


def test_factor_graph_engine_refuses(data):
    (X, y), _ = data
    crf = CRF(SKIP_CHAIN + "train { max_iter = 3 }\n").fit(X[:5], y[:5])
    with pytest.raises(FglError, match="chain or segment engine"):
        crf.predict_nbest(X[:1], 2)
    with pytest.raises(FglError, match="chain or segment engine"):
        crf.predict_probability(X[:1])
