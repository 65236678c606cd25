"""The L-BFGS direction from the compact representation
(``fgl.learn.compact_form``): −H·g of the BFGS updates, the two-loop
recursion's direction, the same bits for any number of threads and
whichever pass took a pair's products, and whole training runs that do not
depend on the threads either."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.learn import chunked
from fgl.learn import compact_form as cf
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


def _direction(g, s, y, rho, yy, order, jobs=1):
    """``compact_direction`` with every pair's products taken in its pass."""
    m = s.shape[0]
    return cf.compact_direction(g, s, y, rho, yy, order, np.zeros((m, m)), np.zeros((m, m)),
                                list(order), np.empty(g.shape[0]), jobs)


def _two_loop(g, s, y, rho, yy, order):
    """Algorithm 7.4 of Nocedal & Wright in double precision."""
    q = -g.astype(np.float64)
    alpha = {}
    for k in reversed(order):
        alpha[k] = rho[k] * (s[k].astype(np.float64) @ q)
        q -= alpha[k] * y[k]
    q *= 1.0 / (rho[order[-1]] * yy[order[-1]])
    for k in order:
        q += (alpha[k] - rho[k] * (y[k].astype(np.float64) @ q)) * s[k]
    return q


def _bfgs_inverse(s, y, rho, order, gamma):
    """H of the BFGS updates of H₀ = γI by the pairs, oldest first (eq. 7.19)."""
    n = s.shape[1]
    H = gamma * np.eye(n)
    for k in order:
        sk, yk = s[k].astype(np.float64), y[k].astype(np.float64)
        V = np.eye(n) - rho[k] * np.outer(yk, sk)
        H = V.T @ H @ V + rho[k] * np.outer(sk, sk)
    return H


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 300), st.integers(1, 6))
def test_it_is_the_two_loop_recursion(seed, n, count):
    rng = np.random.default_rng(seed)
    s, y, rho, yy, order = _pairs(rng, n, 6, count)
    g = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
    out = _direction(g, s, y, rho, yy, order, jobs=2)
    ref = _two_loop(g, s, y, rho, yy, order)
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-11 * np.abs(ref).max())


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 5), st.floats(-0.05, 0.05))
def test_across_chunks_it_is_minus_h_g_of_the_bfgs_updates(seed, count, off):
    """With chunks of 32 weights and blocks of 8, 150 weights make five
    chunks and a part, summed on three threads: the direction is −H·g, H
    built update by update in double precision from the same pairs — also
    when ρ is not exactly 1/sᵀy of the stored rows (as the optimiser's is
    not: it takes sᵀy before rounding the pair to single precision)."""
    rng = np.random.default_rng(seed)
    n = 150
    s, y, rho, yy, order = _pairs(rng, n, 6, count)
    rho = rho * (1.0 + off)
    g = rng.normal(size=n)
    old = chunked.CHUNK, cf.BLOCK, chunked.THREADED_CHUNKS
    chunked.CHUNK, cf.BLOCK, chunked.THREADED_CHUNKS = 32, 8, 2
    try:
        out = _direction(g, s, y, rho, yy, order, jobs=3)
    finally:
        chunked.CHUNK, cf.BLOCK, chunked.THREADED_CHUNKS = old
    newest = order[-1]
    H = _bfgs_inverse(s, y, rho, order, 1.0 / (rho[newest] * yy[newest]))
    np.testing.assert_allclose(out, -H @ g, rtol=1e-9, atol=1e-12 * np.abs(H @ g).max())


@pytest.mark.parametrize("jobs", [2, 3, 8])
def test_the_same_bits_on_any_number_of_threads(jobs):
    rng = np.random.default_rng(jobs)
    n = 9 * chunked.CHUNK + 1234          # nine chunks and a part
    s, y, rho, yy, order = _pairs(rng, n, 6, 6)
    g = rng.normal(size=n)
    one = _direction(g, s, y, rho, yy, order, jobs=1)
    many = _direction(g, s, y, rho, yy, order, jobs=jobs)
    assert np.array_equal(one, many)
    ref = _two_loop(g, s, y, rho, yy, order)
    np.testing.assert_allclose(one, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_products_kept_from_earlier_passes_give_the_same_bits():
    """Pairs whose products were taken one at a time, each in the pass
    after it came (as in training), give the direction of the same pairs
    all taken at once (as after a checkpoint is restored)."""
    rng = np.random.default_rng(3)
    n = 3 * chunked.CHUNK + 99
    s, y, rho, yy, order = _pairs(rng, n, 6, 5)
    sty, yty = np.zeros((6, 6)), np.zeros((6, 6))
    for k in range(1, len(order) + 1):
        g = rng.normal(size=n)
        new = [order[k - 1]]
        cf.compact_direction(g, s, y, rho, yy, order[:k], sty, yty, new, np.empty(n), 2)
        assert new == []   # (taken)
    g = rng.normal(size=n)
    kept = cf.compact_direction(g, s, y, rho, yy, order, sty, yty, [], np.empty(n), 2)
    assert np.array_equal(kept, _direction(g, s, y, rho, yy, order, jobs=1))


def test_training_runs_are_the_same_bits_on_one_thread_and_on_three():
    """A whole L-BFGS run on a problem of several chunks: every iterate the
    same whatever the threads of its passes (the direction, the trial
    points, the parked gradient and the pairs with their sᵀy and yᵀy)."""
    rng = np.random.default_rng(5)
    n = 3 * chunked.CHUNK + 77
    d = rng.uniform(0.5, 20.0, n)
    b = rng.normal(size=n)

    def fun(x):
        r = x - b
        return float(0.5 * (d * r) @ r + np.sum(np.log1p(x * x))), d * r + 2 * x / (1 + x * x)

    old = chunked.THREADED_CHUNKS
    chunked.THREADED_CHUNKS = 2
    try:
        runs = [minimize_lbfgs(fun, np.zeros(n), max_iter=15, jobs=jobs) for jobs in (1, 3)]
    finally:
        chunked.THREADED_CHUNKS = old
    assert runs[0].iterations == runs[1].iterations == 15
    assert np.array_equal(runs[0].x, runs[1].x) and runs[0].f == runs[1].f


def test_history_keeps_the_products_of_its_pairs():
    """``History`` takes a new pair's products with the next direction,
    forgets a dropped pair's, and gives the one-thread bits with ``jobs``
    set; a restored history takes them all again, to the same bits."""
    rng = np.random.default_rng(11)
    n = 5 * chunked.CHUNK
    h1, h2 = History(3), History(3, jobs=2)
    x, g = np.zeros(n), rng.normal(size=n)
    for _ in range(5):
        x_new = x - 0.1 * g
        g_new = g * 0.8 + 0.01 * rng.normal(size=n)
        for h in (h1, h2):
            h.record(x_new, x, g_new, g)
            assert h.new == [h.order[-1]]
            h.direction(g_new, np.empty(n))
            assert h.new == []
            h.drop_oldest()
        x, g = x_new, g_new
    assert h2.jobs == 2 and len(h1.order) == 2
    newer, older = h1.order[1], h1.order[0]
    s64, y64 = h1.s.astype(np.float64), h1.y.astype(np.float64)
    np.testing.assert_allclose(h1.sty[older, newer], s64[older] @ y64[newer], rtol=1e-12)
    np.testing.assert_allclose(h1.yty[newer, older], y64[older] @ y64[newer], rtol=1e-12)
    d1 = h1.direction(g, np.empty(n))
    assert np.array_equal(d1, h2.direction(g, np.empty(n)))
    restored = History.restore(3, n, h1.arrays())
    assert restored.new == [0, 1]
    assert np.array_equal(d1, restored.direction(g, np.empty(n)))
