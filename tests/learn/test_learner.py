"""The learner: gradient against finite differences, parallel = serial,
training improves the objective, and (Ye et al. 2009 §4.1) accuracy rises with the
template order up to the order of the generating Markov model."""
import numpy as np
import pytest
from support.gradcheck import assert_gradient_matches_central_differences

from fgl.api import CRF
from fgl.datasets.synth import markov_sequences, segment_sequences
from fgl.evaluation.evaluate import evaluate
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn import learner
from fgl.learn.lbfgs import minimize_lbfgs
from fgl.learn.learner import prior_shape, train_lbfgs
from fgl.learn.objective import ExactObjective, Objective
from fgl.registry import compile_model

WORD_SPEC = """
columns word, label
output label
obs w = word[t-1..t+1]
template state: y[t] ~ bias, w, suffix(word[t], 1)
template trans: y[t-1..t] ~ bias, word[t] (sigma = 2)
template ho: y[t-3..t] patterns observed upto (sigma = 0.5)
train { sigma = 3 }
"""

NUMBER_SPEC = """
columns a1:number, a2:number, a3:number, label
output label
obs a = value(a1[t-1..t+1]) | value(a2[t]) | value(a3[t]) & value(a1[t])
template state: y[t] ~ bias, a
template ho: y[t-2..t] patterns observed
"""


def _compiled(spec_text, sentences):
    spec = validate(parse_spec(spec_text, "<test>"))
    return compile_model(spec, sentences)


@pytest.mark.parametrize("spec_text,data", [
    (WORD_SPEC,
     lambda: segment_sequences(n_types=2, vocab=12, n_train=6, n_test=1, length=9, seed=3)[0]),
    (NUMBER_SPEC, lambda: markov_sequences(order=2, n_train=5, n_test=1, length=8, seed=4)[0]),
])
def test_gradient_matches_central_differences(spec_text, data):
    model, enc = _compiled(spec_text, data())
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert_gradient_matches_central_differences(objective, model.program.n_features)


def test_parallel_expectations_equal_serial():
    train, _ = segment_sequences(n_types=3, vocab=20, n_train=40, n_test=1, length=15, seed=1)
    model, enc = _compiled(WORD_SPEC, train)
    w = np.random.default_rng(1).normal(0, 0.5, model.program.n_features)
    one, two = model.program.expectations(w, enc, 1), model.program.expectations(w, enc, 2)
    assert one.log_z == pytest.approx(two.log_z, rel=1e-12)
    np.testing.assert_allclose(one.counts, two.counts, rtol=1e-10, atol=1e-12)
    for a, b in zip(model.program.decode(w, enc, 1).assignments,
                    model.program.decode(w, enc, 2).assignments):
        np.testing.assert_array_equal(a, b)


def test_training_lowers_objective_and_beats_chance():
    train, test = segment_sequences(n_types=3, vocab=30, n_train=150, n_test=100, length=20, seed=2)
    crf = CRF(WORD_SPEC).fit_sentences(train)
    log = crf.training_log
    objectives = [row["objective"] for row in log.iterations]
    assert objectives[-1] < objectives[0]
    n_labels = len(crf.model.labels)
    gold = [s.column(-1) for s in test]
    acc = evaluate(gold, crf.predict([[r[:-1] for r in s.rows] for s in test])).accuracy
    assert acc > 100.0 / n_labels + 20


def test_accuracy_rises_with_order_up_to_the_true_order():
    """Ye et al. 2009 §4.1: order-2 data; a first-order CRF is beaten by a
    second-order one."""
    train, test = markov_sequences(order=2, sigma=1.0, n_train=500, n_test=500, seed=0)
    gold = [s.column(-1) for s in test]
    X = [[r[:-1] for r in s.rows] for s in test]
    acc = {}
    for order in (1, 2):
        spec = NUMBER_SPEC.replace("y[t-2..t] patterns observed",
                                   f"y[t-{order}..t] patterns observed upto")
        crf = CRF(spec, sigma=1.0).fit_sentences(train)
        acc[order] = evaluate(gold, crf.predict(X), scheme="plain").accuracy
    assert acc[2] > acc[1] + 1.0, acc


@pytest.mark.parametrize("scale", [0.5, 400.0])
def test_batch_kernel_equals_the_potential_api(scale):
    """Σ log Z from the training kernel (scaled path, or its log-space
    fallback at huge weights) equals the per-sequence potential-table API."""
    from fgl.engines.sequence.chain import pattern_marginals

    train, _ = segment_sequences(n_types=2, vocab=10, n_train=12, n_test=1, length=9, seed=7)
    model, enc = _compiled(WORD_SPEC, train)
    w = np.random.default_rng(3).normal(0, scale, model.program.n_features)
    total = model.program.expectations(w, enc, 1).log_z
    st = model.program.structure
    expected = sum(pattern_marginals(st, model.program.potentials(w, enc, i))[0]
                   for i in range(enc.n_sequences))
    assert total == pytest.approx(expected, rel=1e-9)


def test_exact_engines_train_on_the_plain_lbfgs_path():
    """Exact programs have nothing to warm-start or tighten, and training
    takes exactly the steps of plain L-BFGS on the objective — the recovery
    hooks of ``train_lbfgs`` change nothing while line searches succeed."""
    train, _ = segment_sequences(n_types=2, vocab=12, n_train=20, n_test=1, length=9, seed=5)
    model, enc = _compiled(WORD_SPEC, train)
    objective = Objective(model.program, enc, model.feat_sigma, jobs=1)
    assert objective.warm is None and objective.tighten() is None
    w, log = train_lbfgs(model.program, enc, model.feat_sigma, max_iter=40, period=10**6,
                         jobs=1)
    n = model.program.n_features
    plain = minimize_lbfgs(Objective(model.program, enc, model.feat_sigma, jobs=1),
                           np.zeros(n), max_iter=40, scale=prior_shape(model.feat_sigma, n))
    assert log.recoveries == [] and "recover" not in log.message
    assert (len(log.iterations), log.evaluations) == (plain.iterations, plain.evaluations)
    np.testing.assert_array_equal(w, plain.x)
    assert log.inference is None and all(r["inference"] is None for r in log.iterations)


def test_the_prior_shaped_h0_reaches_the_optimum_of_plain_lbfgs(monkeypatch):
    """Templates with priors of their own (WORD_SPEC: σ 2, 0.5 and 3) give
    L-BFGS an initial matrix of the priors' shape (``learner.prior_shape``):
    another path, the same (convex) optimum as with γI."""
    train, _ = segment_sequences(n_types=3, vocab=20, n_train=40, n_test=1, length=12, seed=3)
    model, enc = _compiled(WORD_SPEC, train)
    assert prior_shape(model.feat_sigma, model.program.n_features) is not None
    shaped, log = train_lbfgs(model.program, enc, model.feat_sigma, max_iter=500, tol=1e-12,
                              jobs=1)
    monkeypatch.setattr(learner, "prior_shape", lambda sigma, n: None)
    plain, plain_log = train_lbfgs(model.program, enc, model.feat_sigma, max_iter=500,
                                   tol=1e-12, jobs=1)
    assert log.converged and plain_log.converged
    assert log.objective == pytest.approx(plain_log.objective, rel=1e-9)
    np.testing.assert_allclose(shaped, plain, atol=1e-3)
    assert len(log.iterations) != len(plain_log.iterations) or not np.array_equal(shaped, plain)


def test_an_exact_objective_trains_with_the_protocol_defaults():
    """``train_lbfgs(objective=...)`` takes any ``TrainingObjective``; one
    without approximate inference (e.g. the local objectives) gets the
    protocol's answers from ``ExactObjective``: nothing to tighten."""
    train, _ = segment_sequences(n_types=2, vocab=12, n_train=10, n_test=1, length=9, seed=5)
    model, enc = _compiled(WORD_SPEC, train)
    inner = Objective(model.program, enc, model.feat_sigma, jobs=1)

    class Bare(ExactObjective):
        def __call__(self, w):
            return inner(w)

    _, log = train_lbfgs(model.program, enc, model.feat_sigma, max_iter=15, jobs=1,
                         objective=Bare())
    assert len(log.iterations) == 15 and log.recoveries == []
