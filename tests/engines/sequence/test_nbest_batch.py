"""The programs' k-best lists come from one batched kernel call over all
sequences (``nbest.batch_chain_kbest``, ``nbest.batch_segment_kbest``): the
same labellings, span starts and scores, bit for bit, as the k-best pass of
each sequence on its own potentials (``nbest.span_nbest``), for any k, any
subset of the sequences and any number of threads; and, on short sequences,
the scores every labelling has by enumeration."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.brute_force import chain_all_scores
from support.sentences import inputs_and_labels, segment_data
from support.specs import SHORT_TRAINED_CHAIN as CHAIN
from support.specs import SHORT_TRAINED_SEGMENTS as SEGMENTS

from fgl import CRF
from fgl.engines.sequence import nbest
from fgl.io.rows import as_sentences


@pytest.fixture(scope="module")
def trained():
    train, test = segment_data(seed=5, n_train=20, n_test=8, length=7)
    (X, y), (Xt, _) = inputs_and_labels(train), inputs_and_labels(test)
    out = {}
    for name, spec in (("chain", CHAIN), ("segments", SEGMENTS)):
        crf = CRF(spec).fit(X, y)
        out[name] = (crf, Xt)
    return out


def _encoded(crf, X):
    model = crf.model
    return model, model.program, model.encode(as_sentences(X, None, "predict"))


def _one_by_one(name, program, w, data, k):
    """Each sequence's k best from its own potentials (the reference)."""
    out = []
    for i in range(data.n_sequences):
        if name == "chain":
            pot = program.potentials(w, data, i)
            got = nbest.span_nbest(program.structure.tables, pot.reshape(pot.shape[0], 1, -1),
                                   np.ones(program.structure.n_labels, dtype=np.int64), False, k)
        else:
            got = nbest.span_nbest(program.machine.tables, program.potentials(w, data, i),
                                   program.limits, program.distinct, k)
            got = got._replace(labels=program.order[got.labels])
        out.append(got)
    return out


@settings(max_examples=25)
@given(name=st.sampled_from(["chain", "segments"]), k=st.integers(1, 9),
       pick=st.lists(st.integers(0, 7), min_size=1, max_size=8), jobs=st.sampled_from([1, 2]))
def test_batched_kbest_equals_each_sequence_on_its_own(trained, name, k, pick, jobs):
    crf, Xt = trained[name]
    _, program, data = _encoded(crf, [Xt[i] for i in pick])
    batched = program.nbest(crf.weights, data, k, jobs)
    alone = _one_by_one(name, program, crf.weights, data, k)
    assert len(batched) == len(alone) == len(pick)
    for got, ref in zip(batched, alone):
        assert np.array_equal(got.labels, ref.labels)
        assert np.array_equal(got.starts, ref.starts)
        assert np.array_equal(got.scores, ref.scores)


def test_batched_chain_kbest_scores_are_the_enumerations(trained):
    crf, Xt = trained["chain"]
    short = [x[:3] for x in Xt]
    _, program, data = _encoded(crf, short)
    st_ = program.structure
    k = st_.n_labels ** 3
    for i, got in enumerate(program.nbest(crf.weights, data, k)):
        truth = chain_all_scores(st_.n_labels, st_.patterns, program.potentials(crf.weights,
                                                                                 data, i))
        assert len(got.scores) == len(truth)
        np.testing.assert_allclose(got.scores, sorted(truth.values(), reverse=True),
                                   rtol=1e-9, atol=1e-9)
        for labels, score in zip(got.labels, got.scores):
            assert truth[tuple(int(v) for v in labels)] == pytest.approx(score, abs=1e-9)


@settings(max_examples=10)
@given(name=st.sampled_from(["chain", "segments"]), pick=st.lists(st.integers(0, 7), min_size=1,
                                                                  max_size=8))
def test_the_one_best_pass_is_the_heaps_first(trained, name, pick):
    """K = 1 runs a pass without heaps (``nbest._best_forward``): the same
    labelling, starts and score as the first of the heap pass's K = 3."""
    crf, Xt = trained[name]
    _, program, data = _encoded(crf, [Xt[i] for i in pick])
    for one, three in zip(program.nbest(crf.weights, data, 1),
                          program.nbest(crf.weights, data, 3)):
        assert np.array_equal(one.labels, three.labels[:1])
        assert np.array_equal(one.starts, three.starts[:1])
        assert np.array_equal(one.scores, three.scores[:1])
