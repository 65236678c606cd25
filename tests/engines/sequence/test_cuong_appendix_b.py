"""Cuong et al. 2014 Appendix B, written as a spec and data through the public API.

Labels {P, O, L}; "Peter goes to Britain and France annually ."; features
1-8 of Table 10 are (word, label) pairs, feature 9 is the pattern L O L,
which Table 11 shows active only at t = 6 ("France"); every weight is 1.
The paper gives ln Z = 12.696 and the marginals of Table 14.
"""
import numpy as np
import pytest

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.engines.sequence import chain

SPEC = """
model "Cuong et al. 2014 Appendix B"
columns word, label
output label
labels label = [P O L]
template word_label: y[t] ~ word[t]
template lol: y[t-2..t] patterns [L O L] ~ regex(word[t], "^France$")
"""
WORDS = "Peter goes to Britain and France annually .".split()
GOLD = "P O O L O L O O".split()

# Table 14 of Cuong et al. 2014, as printed (two digits): rows P, O, L, LOL; columns t = 1..8.
TABLE_14 = np.array([
    [0.58, 0.21, 0.21, 0.16, 0.16, 0.16, 0.21, 0.21],
    [0.21, 0.58, 0.58, 0.16, 0.68, 0.16, 0.58, 0.58],
    [0.21, 0.21, 0.21, 0.68, 0.16, 0.68, 0.21, 0.21],
    [0.00, 0.00, 0.03, 0.08, 0.01, 0.39, 0.01, 0.08],
])


@pytest.fixture(scope="module")
def crf():
    X, y = [[[w] for w in WORDS]], [GOLD]
    crf = CRF(SPEC).compile(X, y)
    # exactly the nine features of Table 10
    assert crf.model.program.n_features == 9
    crf.weights = np.ones(9)
    return crf


def test_log_partition_is_12_696(crf):
    (log_z,) = crf.log_partition([[[w] for w in WORDS]])
    assert round(log_z, 3) == 12.696


def test_marginals_are_table_14(crf):
    (marg,) = crf.predict_marginals([[[w] for w in WORDS]])
    got = np.array([[m["P"], m["O"], m["L"]] for m in marg]).T
    np.testing.assert_allclose(got, TABLE_14[:3], atol=0.0051)


def test_lol_pattern_marginals_are_table_14(crf):
    model = crf.model
    data = model.encode(crf_sentences())
    st = model.program.structure
    pot = model.program.potentials(crf.weights, data, 0)
    log_z, marg = chain.pattern_marginals(st, pot)
    lol = st.patterns.index((2, 1, 2))
    np.testing.assert_allclose(marg[:, lol], TABLE_14[3], atol=0.0051)


def crf_sentences():
    return [Sentence([[w, g] for w, g in zip(WORDS, GOLD)], list(range(1, 9)), 0, "<b>")]


def test_map_labelling(crf):
    # Britain and France are locations; the LOL pattern adds 1 at France
    assert crf.predict([[[w] for w in WORDS]]) == [GOLD]
