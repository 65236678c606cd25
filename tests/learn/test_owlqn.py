"""OWL-QN (``fgl.learn.owlqn``, Andrew & Gao 2007 §3): the L1 optimum of
small problems found by enumerating every sign pattern, exact zeros, a
monotonically falling objective, the pseudo-gradient, and L1 / elastic-net
training of CRFs through the spec, the API, the CLI and resume."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import data_files, run
from support.paths import HMM
from support.sentences import inputs_and_labels, training_sentences

from fgl import CRF
from fgl.learn.owlqn import l1_penalty, minimize_owlqn, pseudo_gradient
from fgl.modelfile.model_files import load_model


def _lasso_by_enumeration(A, b, c):
    """argmin ½xᵀAx − bᵀx + c‖x‖₁ (A positive definite): the one sign
    pattern (−, 0, +) per coordinate whose stationary point is consistent."""
    n = len(b)
    best = None
    for signs in itertools.product((-1, 0, 1), repeat=n):
        s = np.array(signs, dtype=float)
        on = s != 0
        x = np.zeros(n)
        if on.any():
            x[on] = np.linalg.solve(A[np.ix_(on, on)], b[on] - c * s[on])
        if (np.sign(x[on]) != s[on]).any():
            continue
        if (np.abs((A @ x - b)[~on]) > c + 1e-12).any():   # zeros must be optimal
            continue
        f = 0.5 * x @ A @ x - b @ x + c * np.abs(x).sum()
        if best is None or f < best[0]:
            best = (f, x)
    return best[1]


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.floats(0.05, 2.0), st.integers(0, 2**16))
def test_lasso_optimum_matches_enumeration(n, c, seed):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = q @ np.diag(np.geomspace(1.0, 10.0, n)) @ q.T
    b = rng.normal(size=n) * 2
    expected = _lasso_by_enumeration(A, b, c)
    trace = []

    def callback(it, f, x, g, evaluations):
        trace.append(f)
        return False

    res = minimize_owlqn(lambda x: (0.5 * x @ A @ x - b @ x, A @ x - b), np.zeros(n),
                         np.array([c]), max_iter=500, epsilon=1e-10, callback=callback)
    np.testing.assert_allclose(res.x, expected, atol=1e-6)
    assert (res.x[expected == 0] == 0).all()          # exact zeros, not small numbers
    assert all(later <= earlier for earlier, later in zip(trace, trace[1:]))
    assert res.f == pytest.approx(0.5 * res.x @ A @ res.x - b @ res.x
                                  + l1_penalty(res.x, np.array([c])))


def test_pseudo_gradient_is_the_steepest_one_sided_derivative():
    x = np.array([1.0, -2.0, 0.0, 0.0, 0.0])
    g = np.array([0.5, 0.5, -3.0, 3.0, 0.5])
    out = np.empty(5)
    penalty = pseudo_gradient(x, g, np.array([1.0]), out)
    np.testing.assert_array_equal(out, [1.5, -0.5, -2.0, 2.0, 0.0])
    assert penalty == 3.0
    per_weight = np.array([0.0, 0.0, 5.0, 1.0, 0.0])       # one penalty per weight
    pseudo_gradient(x, g, per_weight, out)
    np.testing.assert_array_equal(out, [0.5, 0.5, 0.0, 2.0, 0.5])


def test_l1_training_zeroes_weights_and_decreases_monotonically():
    X, y = inputs_and_labels(training_sentences())
    rows = []
    l2 = CRF(str(HMM), max_iter=60, jobs=1).fit(X, y)
    crf = CRF(str(HMM), max_iter=60, jobs=1, l1=2.0)
    crf.verbose = False
    crf.fit(X, y)
    rows = [r["objective"] for r in crf.training_log.iterations]
    assert all(b <= a for a, b in zip(rows, rows[1:]))
    zeros = int((crf.weights == 0).sum())
    assert zeros > 0.3 * len(crf.weights) and (l2.weights == 0).sum() < zeros
    assert crf.score(X, y) > 60
    # elastic net: the L2 prior still applies (a smaller sigma shrinks the survivors)
    tight = CRF(str(HMM), max_iter=60, jobs=1, l1=2.0, sigma=0.3).fit(X, y)
    assert np.abs(tight.weights).max() < np.abs(crf.weights).max()


def test_l1_from_the_spec_and_the_command_line(capsys, tmp_path):
    spec = tmp_path / "l1.fgl"
    text = HMM.read_text(encoding="utf-8").replace("train {", "train { l1 = 3 ")
    assert "l1 = 3" in text
    spec.write_text(text, encoding="utf-8")
    train, _ = data_files(tmp_path)
    for name, argv in (("spec", [spec]), ("cli", [HMM, "--l1", "3"])):
        out = tmp_path / f"{name}.fglm"
        code, _, err = run(capsys, "train", *argv, "--train", train, "-o", out, "-q",
                           "--max-iter", "30")
        assert code == 0, err
    a, b = load_model(tmp_path / "spec.fglm")[1], load_model(tmp_path / "cli.fglm")[1]
    np.testing.assert_array_equal(a, b)
    assert (a == 0).sum() > 0
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "x.fglm",
                       "--l1", "-1")
    assert code == 2 and "the l1 override must be a number >= 0" in err


def test_l1_runs_resume_exactly(tmp_path):
    X, y = inputs_and_labels(training_sentences())
    full = CRF(str(HMM), max_iter=30, tol=1e-12, jobs=1, l1=1.0).fit(X, y)
    ck = tmp_path / "ck.fglm"
    CRF(str(HMM), max_iter=12, tol=1e-12, jobs=1, l1=1.0, checkpoint=ck).fit(X, y)
    resumed = CRF(str(HMM), max_iter=30, tol=1e-12, jobs=1, l1=1.0).fit(X, y, resume=ck)
    np.testing.assert_array_equal(resumed.weights, full.weights)
    with pytest.raises(Exception, match="checkpoint's objective was"):
        CRF(str(HMM), max_iter=30, jobs=1, l1=2.0).fit(X, y, resume=ck)
