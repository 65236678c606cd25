"""Segment models with count-valued, zipped and padded span features against
exhaustive enumeration: on tiny random data, log-likelihood and gradient at
random weights equal those of every segmentation scored from the general span
evaluator's feature values (not the token-table fast path) and the compiled
model's vocabularies."""
import itertools
import math

import numpy as np
import pytest
from support.brute_force import logsumexp

from fgl.data.sentence import Sentence
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.learner import train_lbfgs
from fgl.learn.objective import Objective
from fgl.registry import compile_model

SPEC = """
columns word, label
output label
segments max {L}{extra}
obs inner = count(regex(word[u+1..v], "."))
obs n = count(word[u..v])
obs pairs = zip(word[u-1..v-1] & word[u..v])
template seg: s[j] ~ bias, word[u..v], n, inner, pairs, pad(word[u-1]), word[u],
    pad(word[v+1]) & word[u]
template trans: s[j-1..j] ~ bias, pad(word[u-1]), n, word[u..v] & pad(word[u-1])
"""
WORDS = ["a", "b", "c", "d"]
LABELS = ["X", "Y", "Z"]


def _data(seed: int, n: int, L: int, x_limit: int = 0) -> list[Sentence]:
    """Sentences of 1..5 tokens made of runs of 1..L tokens (of X: 1..x_limit
    if given), adjacent runs with different labels (so that `from change`
    reads each run as a segment)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        T = int(rng.integers(1, 6))
        rows, prev = [], None
        while len(rows) < T:
            y = str(rng.choice([a for a in LABELS if a != prev]))
            longest = x_limit if x_limit and y == "X" else L
            for _ in range(min(int(rng.integers(1, longest + 1)), T - len(rows))):
                rows.append([str(rng.choice(WORDS)), y])
            prev = y
        out.append(Sentence(rows, list(range(1, T + 1)), i, "tiny.txt"))
    return out


def _segmentations(T: int, n_labels: int, limits, distinct: bool):
    """Every segmentation of 0..T-1 as (u, v, label) lists."""
    def comps(t):
        if t == 0:
            yield ()
            return
        for d in range(1, min(int(max(limits)), t) + 1):
            for rest in comps(t - d):
                yield (d,) + rest
    for comp in comps(T):
        spans = list(itertools.accumulate((0,) + comp))
        spans = [(a, b - 1) for a, b in zip(spans, spans[1:])]
        for labs in itertools.product(range(n_labels), repeat=len(spans)):
            if any(v - u + 1 > limits[y] for (u, v), y in zip(spans, labs)):
                continue
            if distinct and any(a == b for a, b in zip(labs, labs[1:])):
                continue
            yield [(u, v, y) for (u, v), y in zip(spans, labs)]


def _features(model, attrs, w, seg):
    """score and feature counts of one segmentation: every (template,
    attribute, value) of the general evaluator on each segment, through the
    compiled vocabularies, firing the features whose pattern ends there."""
    prog = model.program
    patterns = prog.structure.patterns
    F = np.zeros(prog.n_features)
    labels = [y for _, _, y in seg]
    for j, (u, v, _) in enumerate(seg):
        for ti, vocab in enumerate(model.vocabs):
            for a, x in attrs[ti][(u, v)]:
                r = vocab.get(a)
                if r is None:
                    continue
                for k in range(prog.row_ptr[r], prog.row_ptr[r + 1]):
                    z = tuple(patterns[prog.feat_pattern[k]])
                    if j >= len(z) - 1 and tuple(labels[j - len(z) + 1:j + 1]) == z:
                        F[k] += x
    return math.fsum(F * w), F


def _brute_objective(model, sentences, w, L):
    """-log-likelihood and its gradient by enumeration."""
    spec, prog = model.spec, model.program
    general = TemplateAttributes(spec)
    general._span_streams = [None] * len(general._span_streams)   # the general evaluator
    index = {y: i for i, y in enumerate(model.labels)}
    limits = [int(m) for m in prog.label_max]
    f, grad = 0.0, np.zeros(prog.n_features)
    for s in sentences:
        T = len(s.rows)
        cols, _ = sentence_columns(spec, s.rows, s.lines, s.file)
        spans = [(u, u + d - 1) for u in range(T) for d in range(1, min(L, T - u) + 1)]
        attrs = [dict(zip(spans, rows)) for rows in general.segments(cols, T, L)]
        gold, u = [], 0
        for y, run in itertools.groupby(s.column(-1)):
            d = len(list(run))
            gold.append((u, u + d - 1, index[y]))
            u += d
        items = [_features(model, attrs, w, seg)
                 for seg in _segmentations(T, len(model.labels), limits, prog.distinct)]
        log_z = logsumexp([sc for sc, _ in items])
        g_score, g_F = _features(model, attrs, w, gold)
        f += log_z - g_score
        grad += sum(math.exp(sc - log_z) * F for sc, F in items) - g_F
    return f, grad


CASES = [(2, " from change", 0), (3, " from change", 1), (3, " from change adjacent distinct", 2),
         (1, " [X = 3] from change adjacent distinct", 3)]


def _case(L, extra, seed):
    """A compiled model on tiny data, its encoded training data, and random weights."""
    data = _data(seed, n=6, L=L, x_limit=3 if "X = 3" in extra else 0)
    spec = validate(parse_spec(SPEC.format(L=L, extra=extra), "<t>"))
    model, enc = compile_model(spec, data)
    assert model.program.n_features > 20
    w = np.random.default_rng(seed).normal(0, 0.7, model.program.n_features)
    return model, enc, data, w


def _assert_matches(model, enc, data, w):
    n = model.program.n_features
    f, g = Objective(model.program, enc, np.full(n, np.inf), jobs=1)(w)
    bf, bg = _brute_objective(model, data, w, int(model.program.max_length))
    assert f == pytest.approx(bf, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(g, bg, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("L,extra,seed", CASES)
def test_encoded_data_matches_brute_force(L, extra, seed):
    """Training data encoded by the compiled model (as test data is): every
    candidate segment carries every attribute that has a weight."""
    model, _, data, w = _case(L, extra, seed)
    _assert_matches(model, model.encode(data, with_gold=True), data, w)


@pytest.mark.parametrize("L,extra,seed", CASES)
def test_compiled_training_data_matches_brute_force(L, extra, seed):
    """The encoded training data compile returns gives the same objective."""
    _assert_matches(*_case(L, extra, seed))


CHAIN = """
columns word, label
output label
template state: y[t] ~ word[t], pad(word[t-1])
template order1: y[t-1..t] ~ bias, word[t], pad(word[t-1]), pad(word[t-1]) & word[t]
train { sigma = 1 }
"""
# the chain as segments: a run of one label is one segment, its tokens' state
# features are bags over it, and the transitions inside it (label a to a) are
# features of the segment's own label
SEGMENTS = """
columns word, label
output label
segments max 1 [{limits}] from change adjacent distinct
obs inner = count(regex(word[u+1..v], "."))
template state: s[j] ~ word[u..v], pad(word[u-1..v-1]), inner, word[u+1..v], word[u..v-1],
    zip(word[u..v-1] & word[u+1..v])
template order1: s[j-1..j] ~ bias, word[u], pad(word[u-1]), pad(word[u-1]) & word[u]
train {{ sigma = 1 }}
"""


@pytest.mark.parametrize("encoding", ["encode", "compile"])
def test_chain_and_its_segment_translation_reach_the_same_optimum(encoding):
    """Labellings and segmentations into runs of distinct labels (no run
    longer than its label's limit) correspond one to one, and so do the two
    specs' features: the training optima are equal (on the training data as
    the model encodes it)."""
    data = _data(7, n=8, L=3)
    # a limit of 5 on every label, the longest sentence: no run is excluded
    limits = ", ".join(f'"{y}" = 5' for y in LABELS)
    optima = []
    for text in (CHAIN, SEGMENTS.format(limits=limits)):
        model, enc = compile_model(validate(parse_spec(text, "<t>")), data)
        if encoding == "encode":
            enc = model.encode(data, with_gold=True)
        w, _ = train_lbfgs(model.program, enc, model.feat_sigma, max_iter=500, tol=1e-12, jobs=1)
        optima.append((model.program.n_features,
                       Objective(model.program, enc, model.feat_sigma, jobs=1)(w)[0]))
    assert optima[0][0] == optima[1][0]
    assert optima[0][1] == pytest.approx(optima[1][1], rel=1e-6)
