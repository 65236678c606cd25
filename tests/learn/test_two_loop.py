"""The chunked, threaded two-loop recursion (``fgl.learn.two_loop``): the
plain recursion's bits within one chunk, H·g of the BFGS updates beyond it,
the same bits for any number of threads, and whole training runs that do
not depend on the threads either."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.learn import two_loop as tl
from fgl.learn.lbfgs import History, minimize_lbfgs


def _pairs(rng, n, m, count):
    """Rows of m stored pairs in float32, ``count`` of them in use (in a
    shuffled order, oldest first), with positive curvature, ρ and yᵀy."""
    s = rng.normal(size=(m, n)).astype(np.float32)
    y = (0.7 * s + 0.3 * rng.normal(size=(m, n))).astype(np.float32)
    s64, y64 = s.astype(np.float64), y.astype(np.float64)
    rho = 1.0 / np.einsum("ij,ij->i", s64, y64)
    yy = np.einsum("ij,ij->i", y64, y64)
    order = [int(r) for r in rng.permutation(m)[:count]]
    return s, y, rho, yy, order


def _plain(g, s, y, rho, yy, order):
    """Algorithm 7.4 of Nocedal & Wright, one float at a time in index order."""
    q = [-float(v) for v in g]
    alpha = {}
    for k in reversed(order):
        a = 0.0
        for i in range(len(q)):
            a += float(s[k, i]) * q[i]
        a = float(rho[k]) * a
        alpha[k] = a
        q = [q[i] - a * float(y[k, i]) for i in range(len(q))]
    gamma = 1.0 / (float(rho[order[-1]]) * float(yy[order[-1]]))
    q = [v * gamma for v in q]
    for k in order:
        b = 0.0
        for i in range(len(q)):
            b += float(y[k, i]) * q[i]
        c = alpha[k] - float(rho[k]) * b
        q = [q[i] + c * float(s[k, i]) for i in range(len(q))]
    return np.array(q)


def _bfgs_inverse(s, y, order, gamma):
    """H of the BFGS updates of H₀ = γI by the pairs, oldest first (eq. 7.19)."""
    n = s.shape[1]
    H = gamma * np.eye(n)
    for k in order:
        sk, yk = s[k].astype(np.float64), y[k].astype(np.float64)
        r = 1.0 / (sk @ yk)
        V = np.eye(n) - r * np.outer(yk, sk)
        H = V.T @ H @ V + r * np.outer(sk, sk)
    return H


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 300), st.integers(1, 6))
def test_within_one_chunk_it_is_the_plain_recursion_bit_for_bit(seed, n, count):
    rng = np.random.default_rng(seed)
    s, y, rho, yy, order = _pairs(rng, n, 6, count)
    g = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
    out = tl.two_loop(g, s, y, rho, yy, order, np.empty(n), jobs=2)
    assert np.array_equal(out, _plain(g, s, y, rho, yy, order))


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 4))
def test_across_chunks_it_is_minus_h_g_of_the_bfgs_updates(seed, count):
    """With chunks of 16 weights, 70 weights make five chunks, summed on
    three threads: the direction is still −H·g, H built update by update
    in double precision from the same stored pairs (exact ρ, as here)."""
    rng = np.random.default_rng(seed)
    n = 70
    s, y, rho, yy, order = _pairs(rng, n, 6, count)
    g = rng.normal(size=n)
    old = tl.CHUNK, tl.THREADED_CHUNKS
    tl.CHUNK, tl.THREADED_CHUNKS = 16, 2
    try:
        out = tl.two_loop(g, s, y, rho, yy, order, np.empty(n), jobs=3)
    finally:
        tl.CHUNK, tl.THREADED_CHUNKS = old
    newest = order[-1]
    H = _bfgs_inverse(s, y, order, 1.0 / (rho[newest] * yy[newest]))
    np.testing.assert_allclose(out, -H @ g, rtol=1e-9, atol=1e-12 * np.abs(H @ g).max())


@pytest.mark.parametrize("jobs", [2, 3, 8])
def test_the_same_bits_on_any_number_of_threads(jobs):
    rng = np.random.default_rng(jobs)
    n = 9 * tl.CHUNK + 1234          # nine chunks and a part
    s, y, rho, yy, order = _pairs(rng, n, 6, 6)
    g = rng.normal(size=n)
    one = tl.two_loop(g, s, y, rho, yy, order, np.empty(n), jobs=1)
    many = tl.two_loop(g, s, y, rho, yy, order, np.empty(n), jobs=jobs)
    assert np.array_equal(one, many)
    # (and it is the recursion: against the plain one, which sums one long run)
    np.testing.assert_allclose(one, _reference_numpy(g, s, y, rho, yy, order), rtol=1e-10,
                               atol=1e-12 * np.abs(one).max())


def _reference_numpy(g, s, y, rho, yy, order):
    q = -g.astype(np.float64)
    alpha = {}
    for k in reversed(order):
        alpha[k] = rho[k] * (s[k].astype(np.float64) @ q)
        q -= alpha[k] * y[k]
    q *= 1.0 / (rho[order[-1]] * yy[order[-1]])
    for k in order:
        q += (alpha[k] - rho[k] * (y[k].astype(np.float64) @ q)) * s[k]
    return q


def test_training_runs_are_the_same_bits_on_one_thread_and_on_three():
    """A whole L-BFGS run on a problem of several chunks: every iterate the
    same whatever the threads of its two-loop recursion."""
    rng = np.random.default_rng(5)
    n = 3 * tl.CHUNK + 77
    d = rng.uniform(0.5, 20.0, n)
    b = rng.normal(size=n)

    def fun(x):
        r = x - b
        return float(0.5 * (d * r) @ r + np.sum(np.log1p(x * x))), d * r + 2 * x / (1 + x * x)

    old = tl.THREADED_CHUNKS
    tl.THREADED_CHUNKS = 2
    try:
        runs = [minimize_lbfgs(fun, np.zeros(n), max_iter=15, jobs=jobs) for jobs in (1, 3)]
    finally:
        tl.THREADED_CHUNKS = old
    assert runs[0].iterations == runs[1].iterations == 15
    assert np.array_equal(runs[0].x, runs[1].x) and runs[0].f == runs[1].f


def test_history_direction_uses_its_threads():
    """``History.direction`` with jobs set gives the one-thread bits."""
    rng = np.random.default_rng(11)
    n = 5 * tl.CHUNK
    h1, h2 = History(6), History(6, jobs=2)
    x, g = np.zeros(n), rng.normal(size=n)
    for _ in range(4):
        x_new = x - 0.1 * g
        g_new = g * 0.8 + 0.01 * rng.normal(size=n)
        for h in (h1, h2):
            h.record(x_new, x, g_new, g)
        x, g = x_new, g_new
    assert h2.jobs == 2 and len(h1.order) == 4
    assert np.array_equal(h1.direction(g, np.empty(n)), h2.direction(g, np.empty(n)))
