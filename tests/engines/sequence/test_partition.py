"""log Z of every sequence in one kernel call (``fgl.engines.sequence.
partition``): the log-sum-exp of every labelling's score by enumeration on
short sequences, and the training objective's own log Z (the exact
engines' expectations of each sequence alone) on longer ones, for chain
and segment programs, any subset of the sequences and any number of
threads."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.brute_force import chain_all_scores, logsumexp
from support.sentences import inputs_and_labels, segment_data
from support.specs import SHORT_TRAINED_CHAIN as CHAIN
from support.specs import SHORT_TRAINED_SEGMENTS as SEGMENTS

from fgl import CRF
from fgl.io.rows import as_sentences


@pytest.fixture(scope="module")
def trained():
    train, test = segment_data(seed=6, n_train=20, n_test=8, length=9)
    (X, y), (Xt, _) = inputs_and_labels(train), inputs_and_labels(test)
    return {name: (CRF(spec).fit(X, y), Xt) for name, spec in
            (("chain", CHAIN), ("segments", SEGMENTS))}


@settings(max_examples=20)
@given(name=st.sampled_from(["chain", "segments"]),
       pick=st.lists(st.integers(0, 7), min_size=1, max_size=8), jobs=st.sampled_from([1, 2]))
def test_batched_log_z_is_each_sequences_own(trained, name, pick, jobs):
    crf, Xt = trained[name]
    program = crf.model.program
    data = crf.model.encode(as_sentences([Xt[i] for i in pick], None, "predict"))
    got = program.log_partition(crf.weights, data, jobs)
    alone = [program.expectations(crf.weights, data.subset(i, i + 1)).log_z
             for i in range(data.n_sequences)]
    np.testing.assert_allclose(got, alone, rtol=1e-12, atol=1e-9)


def test_batched_chain_log_z_is_the_enumerations(trained):
    crf, Xt = trained["chain"]
    program = crf.model.program
    data = crf.model.encode(as_sentences([x[:3] for x in Xt], None, "predict"))
    st_ = program.structure
    for i, log_z in enumerate(program.log_partition(crf.weights, data)):
        scores = chain_all_scores(st_.n_labels, st_.patterns,
                                  program.potentials(crf.weights, data, i))
        assert log_z == pytest.approx(logsumexp(list(scores.values())), abs=1e-9)
