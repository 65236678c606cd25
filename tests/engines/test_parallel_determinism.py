"""The same spec, data and settings train to the same weights, bit for bit,
whatever ``jobs`` is (issue 25, item 11): sums over the data are made over
blocks fixed by the data alone and added in block order
(``fgl.engines.parallel.ordered_reduce``) — for the chain, semi-Markov and
factor-graph programs and the local objectives."""
from __future__ import annotations

import numpy as np
import pytest

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.datasets.synth import segment_sequences
from fgl.engines import parallel

CHAIN = """columns word, label
output label
obs w = lower(word[t-1..t+1]) | suffix(word[t], 2)
template state: y[t] ~ bias, w, shape(word[t])
template trans: y[t-1..t]
template second: y[t-2..t] patterns observed
"""
SEGMENTS = """columns word, label
output label
segments max 4
obs inside = word[u..v]
template seg: s[j] ~ bias, word[u], word[v], inside, word[u-1], length
template trans: s[j-1..j]
"""
FACTOR_GRAPH = """columns word, label
output label
template state: y[t] ~ bias, word[t], word[t-1]
template trans: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j] ~ bias, either(word[t])
infer loopy(tol = 1e-10, max_iter = 300, damping = 0.3)
"""
PSEUDO = FACTOR_GRAPH + "train { objective = pseudo_likelihood }\n"


def _data(n: int, length: int, vocab: int):
    train = segment_sequences(n_types=3, max_len=3, vocab=vocab, n_train=n, n_test=1,
                              length=length, seed=11)[0]
    return [[[r[0]] for r in s.rows] for s in train], [s.column(-1) for s in train]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few sequences, so that these small data sets are cut in
    several (as large ones are) and the threads really share the work."""
    monkeypatch.setattr(parallel, "BLOCK_COST", 60)
    monkeypatch.setattr(parallel, "GRAPH_BLOCK_COST", 400)


@pytest.mark.parametrize("spec, n, length, iters", [
    (CHAIN, 60, 12, 25), (SEGMENTS, 40, 10, 20), (FACTOR_GRAPH, 24, 10, 12),
    (PSEUDO, 24, 10, 15)], ids=["chain", "segments", "factor-graph", "pseudo-likelihood"])
def test_weights_are_the_same_bits_for_any_jobs(small_blocks, spec, n, length, iters):
    X, y = _data(n, length, vocab=10)
    tokens = sum(len(s) for s in X)
    assert tokens // parallel.BLOCK_COST >= 3          # (several blocks)
    if "infer" in spec:
        graphs = CRF(spec).compile(X, y)
        tables = np.cumsum([0] + [g.n_table for g in graphs.model.encode(
            _sentences(X, y), with_gold=True).graphs])
        assert len(parallel.blocks(tables, parallel.GRAPH_BLOCK_COST)) >= 3
    runs = {jobs: CRF(spec, max_iter=iters, jobs=jobs).fit(X, y) for jobs in (1, 2, 3)}
    base = runs[1]
    assert len(base.training_log.iterations) >= 3
    for jobs in (2, 3):
        assert np.array_equal(runs[jobs].weights, base.weights), f"jobs {jobs}"
        assert runs[jobs].training_log.objective == base.training_log.objective
        assert len(runs[jobs].training_log.iterations) == len(base.training_log.iterations)


def test_the_grouping_of_sums_matters_so_the_test_can_fail(monkeypatch):
    """Summed over other blocks the same expectations differ in their last
    bits: the equality above is the blocks' doing, not the data's."""
    X, y = _data(60, 12, vocab=10)
    crf = CRF(CHAIN, max_iter=3, jobs=1).fit(X, y)
    model = crf.model
    enc = model.encode(_sentences(X, y), with_gold=True)
    w = np.random.default_rng(0).normal(0, 0.5, model.program.n_features)
    got = {}
    for cost in (60, 90, 10**9):
        monkeypatch.setattr(parallel, "BLOCK_COST", cost)
        got[cost] = model.program.expectations(w, enc, jobs=2)
    assert not all(np.array_equal(got[60].counts, g.counts) and got[60].log_z == g.log_z
                   for g in (got[90], got[10**9]))
    for g in got.values():   # (to rounding, the same sums)
        np.testing.assert_allclose(g.counts, got[60].counts, rtol=1e-10, atol=1e-12)


def _sentences(X, y) -> list[Sentence]:
    return [Sentence([[*r, lab] for r, lab in zip(x, ys)], list(range(1, len(x) + 1)), 0,
                     "<test>") for x, ys in zip(X, y)]


def test_blocks_depend_on_the_data_only():
    ptr = np.cumsum([0] + [7] * 1000)
    assert parallel.blocks(ptr) == parallel.blocks(ptr.copy())
    cuts = parallel.blocks(ptr)
    assert cuts[0][0] == 0 and cuts[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
    assert parallel.blocks(np.array([0])) == []
    assert len(parallel.blocks(np.cumsum([0] + [10**6] * 500))) == parallel.MAX_BLOCKS
