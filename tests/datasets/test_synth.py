from collections import Counter, defaultdict

import pytest

from fgl.datasets.synth import (
    MarkovModel,
    markov_sequences,
    segment_sequences,
    write_markov_files,
    write_segment_files,
)
from fgl.evaluation.evaluate import chunks
from fgl.io.conll import read_conll


def labels(sents):
    return [s.column(-1) for s in sents]


def successors(seqs, k):
    seen = defaultdict(set)
    for seq in seqs:
        for t in range(k, len(seq)):
            seen[tuple(seq[t - k:t])].add(seq[t])
    return seen


def test_determinism():
    a = markov_sequences(n_train=20, n_test=10, seed=3)
    b = markov_sequences(n_train=20, n_test=10, seed=3)
    c = markov_sequences(n_train=20, n_test=10, seed=4)
    assert [s.rows for s in a[0] + a[1]] == [s.rows for s in b[0] + b[1]]
    assert [s.rows for s in a[0]] != [s.rows for s in c[0]]


def test_shapes_and_format():
    train, test = markov_sequences(n_labels=4, m=2, n_train=30, n_test=7, length=12, seed=1)
    assert len(train) == 30 and len(test) == 7
    for s in train + test:
        assert len(s.rows) == 12 and len(s.lines) == 12
        assert s.file == "<generated>" and s.doc == 0
        for row in s.rows:
            assert len(row) == 3
            assert row[-1] in {"s0", "s1", "s2", "s3"}
            for a in row[:2]:
                float(a)
                assert len(a.split(".")[1]) == 4
    # line numbers as in the written file: 12 tokens + 1 blank per sentence
    assert train[1].lines[0] == 14


def test_default_sizes_follow_the_paper():
    train, test = markov_sequences()
    assert len(train) == len(test) == 500
    assert {len(s) for s in train + test} == {20}
    assert {lab for seq in labels(train) for lab in seq} == {f"s{i}" for i in range(5)}


@pytest.mark.parametrize("order,r", [(1, 2), (2, 2), (3, 2), (2, 1), (2, 3)])
def test_label_sequences_respect_sparsity(order, r):
    train, test = markov_sequences(order=order, r=r, n_train=300, n_test=300, seed=7)
    seen = successors(labels(train) + labels(test), order)
    assert max(len(v) for v in seen.values()) <= r
    # With enough data most histories show their full set of r successors.
    if r > 1:
        assert any(len(v) == r for v in seen.values())


def test_sparsity_check_has_teeth():
    # Without the sparsity limit (r = n) some history shows more than 2 successors.
    train, _ = markov_sequences(order=1, r=5, n_train=300, n_test=0, seed=7)
    seen = successors(labels(train), 1)
    assert max(len(v) for v in seen.values()) > 2


def test_observations_follow_state_means():
    import numpy as np
    train, _ = markov_sequences(sigma=0.0, n_train=50, n_test=0, seed=2)
    by_label = defaultdict(set)
    for s in train:
        for row in s.rows:
            by_label[row[-1]].add(tuple(row[:-1]))
    # sigma 0: every state always emits its mean vector, means in [0, 1]
    assert all(len(v) == 1 for v in by_label.values())
    means = [np.array(next(iter(v)), dtype=float) for v in by_label.values()]
    assert all(((0 <= m) & (m <= 1)).all() for m in means)
    assert len({tuple(m) for m in means}) == len(means)
    # sigma > 0: observations spread around the mean with roughly that std
    train, _ = markov_sequences(sigma=0.5, n_train=300, n_test=0, seed=2)
    xs = np.array([[float(a) for a in row[:-1]]
                   for s in train for row in s.rows if row[-1] == "s0"])
    mu = np.array(next(iter(by_label["s0"])), dtype=float)
    assert np.allclose(xs.mean(axis=0), mu, atol=0.05)
    assert np.allclose(xs.std(axis=0), 0.5, atol=0.05)


def test_model_validation():
    import numpy as np
    with pytest.raises(ValueError):
        markov_sequences(n_labels=2, r=3)
    m = MarkovModel.random(np.random.default_rng(0), n_labels=3, order=2, r=2)
    assert m.successors.shape == (9, 2) and np.allclose(m.probs.sum(axis=1), 1.0)
    assert all(len(set(row)) == 2 for row in m.successors.tolist())


def test_write_markov_files(tmp_path):
    tr, te = write_markov_files(tmp_path / "syn", n_train=5, n_test=3, m=3, seed=9)
    assert tr.name == "train.txt" and te.name == "test.txt"
    back = read_conll(tr, n_columns=4)
    orig, _ = markov_sequences(n_train=5, n_test=3, m=3, seed=9)
    assert [s.rows for s in back] == [s.rows for s in orig]
    assert [s.lines for s in back] == [s.lines for s in orig]
    assert len(read_conll(te)) == 3


def test_segment_sequences_are_valid_bio():
    train, test = segment_sequences(n_types=3, max_len=4, vocab=30, n_train=100, n_test=20,
                                    length=15, seed=5)
    assert len(train) == 100 and len(test) == 20
    for s in train + test:
        assert len(s) == 15
        tags = s.column(1)
        for i, t in enumerate(tags):
            assert t == "O" or t[:2] in ("B-", "I-")
            if t.startswith("I-"):
                assert i > 0 and tags[i - 1][2:] == t[2:] and tags[i - 1] != "O"
        assert all(e - b <= 4 for _, b, e in chunks(tags))
        assert all(w.startswith("w") and 0 <= int(w[1:]) < 30 for w in s.column(0))
    types = {c[0] for s in train for c in chunks(s.column(1))}
    assert types == {"T0", "T1", "T2"}


def test_segment_sequences_type_specific_words_and_determinism():
    a, _ = segment_sequences(n_train=200, n_test=0, seed=11)
    b, _ = segment_sequences(n_train=200, n_test=0, seed=11)
    assert [s.rows for s in a] == [s.rows for s in b]
    words = defaultdict(Counter)
    for s in a:
        for w, t in s.rows:
            words[t[2:] if t != "O" else "O"][w] += 1
    top = {k: c.most_common(1)[0][0] for k, c in words.items()}
    # each kind has its own favourite word
    assert len(set(top.values())) == len(top) == 4


def test_write_segment_files(tmp_path):
    tr, te = write_segment_files(tmp_path, n_train=4, n_test=2, seed=1)
    assert len(read_conll(tr, n_columns=2)) == 4 and len(read_conll(te)) == 2
