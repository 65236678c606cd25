"""The specs shipped in stdlib/: each one validates, compiles to the exact
chain engine, and learns generated segment data better than always guessing
the most frequent label."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fgl.api import CRF
from fgl.engines.chain_program import ChainProgram
from fgl.engines.semimarkov_program import SemiMarkovProgram
from fgl.io.conll import Sentence
from fgl.io.evaluate import evaluate
from fgl.io.synth import segment_sequences
from fgl.lang.parser import read_spec

STDLIB = Path(__file__).resolve().parents[1] / "stdlib"
SEMI_SPECS = ["high_order_semi_crf.fgl", "semi_crf.fgl"]
WORD_LABEL_SPECS = ["high_order.fgl", "hmm_like.fgl", "linear_chain_obs_transitions.fgl",
                    "maxent.fgl"]   # the general-CRF specs are tested in test_stdlib_general.py


def test_stdlib_is_complete():
    assert {"crfsuite_chunking.fgl", "high_order.fgl", "hmm_like.fgl",
            "linear_chain_obs_transitions.fgl", "maxent.fgl", "semi_crf.fgl",
            "high_order_semi_crf.fgl"} <= {p.name for p in STDLIB.glob("*.fgl")}


@pytest.fixture(scope="module")
def data():
    return segment_sequences(n_types=3, max_len=4, vocab=30, n_train=60, n_test=40,
                             length=15, seed=11)


def with_pos(sentences: list[Sentence]) -> list[Sentence]:
    """Insert a fake POS column derived from the word: word, pos, chunk."""
    out = []
    for s in sentences:
        rows = [[w, f"P{int(w[1:]) % 4}", y] for w, y in s.rows]
        out.append(Sentence(rows, s.lines, s.doc, s.file))
    return out


def fitted(name: str, train: list[Sentence]) -> CRF:
    spec = STDLIB / name
    read_spec(spec)                                     # validates, or raises
    return CRF(spec, max_iter=30).fit_sentences(train)


def accuracy_and_baseline(crf: CRF, test: list[Sentence]) -> tuple[float, float]:
    pred = crf.predict_sentences(test)
    gold = [s.column(-1) for s in test]
    n = sum(len(g) for g in gold)
    acc = sum(a == b for p, g in zip(pred, gold) for a, b in zip(p, g)) / n
    majority = Counter(y for g in gold for y in g).most_common(1)[0][1] / n
    return acc, majority


def assert_chain_engine(crf: CRF) -> None:
    assert isinstance(crf.model.program, ChainProgram)
    assert crf.explain().startswith("engine: exact pattern-sparse chain")


@pytest.mark.parametrize("name", WORD_LABEL_SPECS)
def test_word_label_spec_learns(data, name):
    train, test = data
    crf = fitted(name, train)
    assert_chain_engine(crf)
    assert crf.model.labels == sorted({y for s in train for y in s.column(-1)})
    assert 1 <= len(crf.training_log.iterations) <= 30
    acc, majority = accuracy_and_baseline(crf, test)
    assert acc > majority + 0.1, (acc, majority)


def test_crfsuite_chunking_learns(data):
    train, test = (with_pos(d) for d in data)
    crf = fitted("crfsuite_chunking.fgl", train)
    assert_chain_engine(crf)
    assert [c.name for c in crf.spec.columns] == ["word", "pos", "chunk"]
    # POS n-gram attributes were extracted from the new column
    assert any(k.startswith("pos[t-1]&pos[t]=") for k in crf.model.vocabs[0])
    acc, majority = accuracy_and_baseline(crf, test)
    assert acc > majority + 0.1, (acc, majority)


def test_high_order_patterns_are_sparse(data):
    train, _ = data
    crf = fitted("high_order.fgl", train)
    st = crf.model.program.structure
    n = len(crf.model.labels)
    lengths = Counter(len(z) for z in st.patterns)
    assert lengths[4] > 0 and lengths[3] > 0 and lengths[2] > 0
    assert max(lengths) == 4
    assert lengths[4] < n ** 4
    # BIO data never shows I-Tk after O, so far fewer forward states than
    # the n^3 histories of a dense order-3 chain
    assert st.n_forward < n ** 3, (st.n_forward, n)
    o, i0 = crf.model.labels.index("O"), crf.model.labels.index("I-T0")
    assert not any(z[k] == o and z[k + 1] == i0 for z in st.patterns for k in range(len(z) - 1))


def test_maxent_has_no_label_interactions(data):
    train, _ = data
    crf = fitted("maxent.fgl", train)
    assert max(len(z) for z in crf.model.program.structure.patterns) == 1
    assert [t.width for t in crf.model.templates] == [1]


def test_hmm_like_has_every_transition(data):
    train, _ = data
    crf = fitted("hmm_like.fgl", train)
    n = len(crf.model.labels)
    trans = next(t for t in crf.model.templates if t.name == "transition")
    assert len(trans.patterns) == n * n
    emission = next(t for t in crf.model.templates if t.name == "emission")
    vocab = crf.model.vocabs[crf.model.templates.index(emission)]
    assert set(vocab) == {f"word[t]={w}" for s in train for w in s.column(0)}


def test_obs_transitions_spec_has_three_templates(data):
    train, _ = data
    crf = fitted("linear_chain_obs_transitions.fgl", train)
    by_name = {t.name: t for t in crf.model.templates}
    assert set(by_name) == {"state", "transition", "obs_trans"}
    assert by_name["obs_trans"].width == 2 and by_name["obs_trans"].has_observations
    assert by_name["obs_trans"].sigma == 5.0
    assert by_name["state"].sigma == 10.0


@pytest.mark.parametrize("name", SEMI_SPECS)
def test_semi_markov_spec_learns_segments(data, name):
    train, test = data
    crf = fitted(name, train)
    assert isinstance(crf.model.program, SemiMarkovProgram)
    assert crf.explain().startswith("engine: exact high-order semi-Markov")
    # labels are segment types, not BIO tags
    assert crf.model.labels == sorted({t.split("-")[-1] for s in train for t in s.column(-1)})
    pred = crf.predict_sentences(test)
    acc, majority = accuracy_and_baseline(crf, test)
    assert acc > majority + 0.1, (acc, majority)
    assert evaluate([s.column(-1) for s in test], pred).overall.f1 > 20.0
    if name.startswith("high_order"):
        assert max(len(z) for z in crf.model.program.structure.patterns) == 3
