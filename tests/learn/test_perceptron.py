"""The averaged structured perceptron (``fgl.learn.perceptron``): the lazy
average equals the explicit one, separable data end in an epoch without
mistakes, every engine (chain, semi-Markov, factor graph) trains by it, and
settings the chosen trainer does not read are refused."""
from __future__ import annotations

import numpy as np
import pytest
from support.paths import HMM, REPO
from support.sentences import inputs_and_labels, segment_data
from support.specs import CHAIN_FORMAT, SKIP_EQUAL_WORDS

from fgl import CRF
from fgl.errors import FglError, SpecError
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.perceptron import SEED, train_perceptron
from fgl.registry import compile_model

PERCEPTRON = "train { trainer = perceptron  epochs = %d  batch = %d }\n"


def _hmm(epochs=3, batch=1):
    text = HMM.read_text(encoding="utf-8")
    return text[:text.index("train {")] + PERCEPTRON % (epochs, batch)


@pytest.mark.parametrize("batch", [1, 3])
def test_lazy_average_equals_the_average_of_every_step(batch):
    """Collins' update and an explicit average over every step's weights."""
    train = segment_data(n_train=30)[0]
    model, data = compile_model(validate(parse_spec(_hmm(2, batch), "<t>")), train)
    program = model.program
    got, log = train_perceptron(program, data, epochs=2, batch=batch)
    n = data.n_sequences
    runs = [(i, min(i + batch, n)) for i in range(0, n, batch)]
    rng = np.random.default_rng(SEED)
    w, total, steps = np.zeros(program.n_features), np.zeros(program.n_features), 0
    for _ in range(2):
        for k in rng.permutation(len(runs)):
            sub = data.subset(*runs[k])
            decoded = np.concatenate(program.decode(w, sub, 1).assignments)
            if not np.array_equal(decoded, sub.gold):
                mine = type(sub)(**{**sub.__dict__, "gold": decoded})
                w = w + program.gold_counts(sub) - program.gold_counts(mine)
            total += w
            steps += 1
    np.testing.assert_allclose(got, total / steps, rtol=1e-12, atol=1e-12)
    assert [r["iteration"] for r in log.iterations] == [1, 2]


def test_separable_data_stop_at_an_epoch_without_mistakes():
    """Each word's label is a function of the word: separable."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(12)]
    label = {w: ("B-X" if i % 3 == 0 else "I-X" if i % 3 == 1 else "O")
             for i, w in enumerate(words)}
    X = [[[w] for w in rng.choice(words, size=8)] for _ in range(40)]
    y = [[label[row[0]] for row in seq] for seq in X]
    crf = CRF(_hmm(epochs=50), jobs=1).fit(X, y)
    assert crf.training_log.converged
    assert "made no mistakes" in crf.training_log.message
    assert crf.training_log.iterations[-1]["mistakes"] == 0
    assert len(crf.training_log.iterations) < 50
    assert crf.predict(X) == y


SEMI = """
columns word, label
output label
segments max 4 from bio
obs inside = word[u..v]
template seg: s[j] ~ bias, inside, word[u-1], length
template trans: s[j-1..j]
"""


@pytest.mark.parametrize("name, spec", [
    ("chain", None), ("semi-Markov", SEMI),
    ("skip chain", CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trp"))])
def test_every_engine_trains_by_the_perceptron(name, spec):
    train, test = segment_data(n_train=60, n_test=40)
    (X, y), (Xt, yt) = inputs_and_labels(train), inputs_and_labels(test)
    text = (_hmm(epochs=8) if spec is None else spec + PERCEPTRON % (8, 1))
    crf = CRF(text, jobs=1).fit(X, y)
    rows = crf.training_log.iterations
    assert rows[-1]["mistakes"] < rows[0]["mistakes"]
    reference = CRF(text.replace(PERCEPTRON % (8, 1), "train { max_iter = 60 }\n"),
                    jobs=1).fit(X, y)
    assert crf.score(Xt, yt) > reference.score(Xt, yt) - 10
    assert crf.score(Xt, yt) > 50


def test_settings_the_trainer_does_not_read_are_refused():
    X, y = inputs_and_labels(segment_data(n_train=5)[0])
    lbfgs_with_epochs = HMM.read_text(encoding="utf-8").replace("train {", "train { epochs = 4 ")
    with pytest.raises(SpecError, match="`epochs` is not read by trainer lbfgs"):
        CRF(lbfgs_with_epochs).fit(X, y)
    with pytest.raises(SpecError, match="`l1` is not read by trainer perceptron"):
        CRF(_hmm().replace("epochs", "l1 = 1  epochs")).fit(X, y)
    with pytest.raises(FglError, match=r"takes no l1 \(L-BFGS settings\)"):
        CRF(_hmm(), l1=2.0).fit(X, y)
    for key in ("sigma = 3", "max_iter = 5", "tol = 1e-3"):   # (issue 25: read by L-BFGS only)
        with pytest.raises(SpecError, match=f"`{key.split()[0]}` is not read by trainer "
                                            "perceptron"):
            CRF(_hmm().replace("epochs", f"{key}  epochs")).fit(X, y)
    with pytest.raises(FglError, match="takes no sigma, tol"):
        CRF(_hmm(), sigma=2.0, tol=1e-3).fit(X, y)


def test_max_iter_bounds_the_epochs():
    """``--max-iter`` (``CRF(max_iter=)``) is the perceptron's epoch limit."""
    X, y = inputs_and_labels(segment_data(n_train=20)[0])
    log = CRF(_hmm(epochs=50), max_iter=2, jobs=1).fit(X, y).training_log
    assert len(log.iterations) <= 2 and log.message in ("reached the epoch limit (2)",
                                                        "epoch 1 made no mistakes",
                                                        "epoch 2 made no mistakes")
    latent = (REPO / "stdlib" / "latent.fgl").read_text(encoding="utf-8")
    latent = latent[:latent.index("train {")] if "train {" in latent else latent
    with pytest.raises(FglError, match="hidden variables"):
        CRF(latent + PERCEPTRON % (1, 1)).fit(X, y)
