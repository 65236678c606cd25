"""The L-BFGS direction −H·g from the compact representation of the
limited-memory BFGS matrix (Byrd, Nocedal & Schnabel 1994, Theorem 2.2;
Nocedal & Wright 2006 §7.2), on threads, the same bits for any number of
them.

With the k stored pairs as the columns of S and Y (oldest first), R the
upper triangle of SᵀY whose diagonal is D = diag(1/ρ_i), and H₀ = γI
(γ = sᵀy / yᵀy of the newest pair, Nocedal & Wright eq. 7.20),

    H = γI + [S γY] [[R⁻ᵀ(D + γYᵀY)R⁻¹, −R⁻ᵀ], [−R⁻¹, 0]] [Sᵀ; γYᵀ],

the matrix the two-loop recursion (Algorithm 7.4) applies.  So with
p = Sᵀg, q = Yᵀg, r = R⁻¹p and t = R⁻ᵀ((D + γYᵀY)r − γq),

    H·g = γg + S·t − γY·r:

one pass over the rows for the 2k products with g, a k×k solve, one pass
summing the rows into the direction.  The two-loop recursion makes 2k + 1
passes, each reading the direction and a row and writing the direction:
with 7.4 M weights and 6 pairs (CoNLL-2000 with CRF++'s template) it moved
about twice the bytes.  The products of the pairs with one another (R's
upper triangle, YᵀY) are kept between directions: a pair added since the
last direction has its column taken in the first pass, from rows that pass
reads anyway.

Every product is summed over the fixed chunks of ``fgl.learn.chunked``,
split between the threads, each chunk over blocks of ``BLOCK`` weights (a block
of g and of every row stays in cache while the pass takes its products) in
the vector lanes the compiler chooses — the same order for every block of
a length —; the chunks' sums are added exactly (``math.fsum``).  So a
product depends on its two vectors alone: not on the threads, nor on which
other products the pass takes (a column taken when its pair is new equals
the one recomputed when a saved history is restored).
"""
from __future__ import annotations

import numpy as np

from fgl.jit import njit
from fgl.learn.chunked import exact_sums, n_chunks, run_chunked

BLOCK = 1024   # weights per block of a chunk (a block of every row stays in cache)


@njit(cache=True, nogil=True, inline="always")
def _block_dot(a, b, lo, hi):
    """Σ a[i]·b[i] over lo..hi-1 in double precision, on slices indexed
    from 0: in ``_products``, whose reassociation lets the compiler sum in
    vector lanes (the same order for every block of a length)."""
    sa = a[lo:hi]
    sb = b[lo:hi]
    total = 0.0
    for i in range(sa.shape[0]):
        total += np.float64(sa[i]) * np.float64(sb[i])
    return total


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _products(g, s, y, rows, new, partial, c0, c1, chunk):
    """Chunks ``c0``..``c1``-1 of the first pass: ``partial[c]`` holds
    chunk c's s_rᵀg then y_rᵀg for the rows r of ``rows``, then, per row
    n of ``new``, s_rᵀy_n and y_rᵀy_n for the rows of ``rows``."""
    n = g.shape[0]
    k = rows.shape[0]
    for c in range(c0, c1):
        out = partial[c]
        out[:] = 0.0
        for lo in range(c * chunk, min(n, (c + 1) * chunk), BLOCK):
            hi = min(n, lo + BLOCK, (c + 1) * chunk)
            for j in range(k):
                out[j] += _block_dot(s[rows[j]], g, lo, hi)
                out[k + j] += _block_dot(y[rows[j]], g, lo, hi)
            for u in range(new.shape[0]):
                yn = y[new[u]]
                base = 2 * k * (u + 1)
                for j in range(k):
                    out[base + j] += _block_dot(s[rows[j]], yn, lo, hi)
                    out[base + k + j] += _block_dot(y[rows[j]], yn, lo, hi)


@njit(cache=True, nogil=True, fastmath={"contract"})
def _combine(g, s, y, rows, cs, cy, gamma, out, c0, c1, chunk):
    """Chunks ``c0``..``c1``-1 of the second pass: out = −(γg + Σ_j cs_j·s_j
    + Σ_j cy_j·y_j) over the rows of ``rows``, a block at a time."""
    n = g.shape[0]
    for c in range(c0, c1):
        for lo in range(c * chunk, min(n, (c + 1) * chunk), BLOCK):
            hi = min(n, lo + BLOCK, (c + 1) * chunk)
            o = out[lo:hi]
            gb = g[lo:hi]
            for i in range(o.shape[0]):
                o[i] = gamma * gb[i]
            for j in range(rows.shape[0]):
                a = cs[j]
                b = cy[j]
                sr = s[rows[j], lo:hi]
                yr = y[rows[j], lo:hi]
                for i in range(o.shape[0]):
                    o[i] += a * np.float64(sr[i]) + b * np.float64(yr[i])
            for i in range(o.shape[0]):
                o[i] = -o[i]


def compact_direction(g: np.ndarray, s: np.ndarray, y: np.ndarray, rho: np.ndarray,
                      yy: np.ndarray, order: list[int], sty: np.ndarray, yty: np.ndarray,
                      new: list[int], out: np.ndarray, jobs: int = 1) -> np.ndarray:
    """out = −H·g (module docstring) for the pairs in rows ``order`` of ``s``
    and ``y`` (oldest first, at least one), ρ = 1/sᵀy and yᵀy per row, on up
    to ``jobs`` threads.  ``sty[i, j]`` = s_iᵀy_j and ``yty[i, j]`` = y_iᵀy_j
    (row numbers) are read for every pair i older than j; for the rows in
    ``new`` they are first computed against every row of ``order`` (and
    ``new`` emptied)."""
    n, k = g.shape[0], len(order)
    rows = np.array(order, dtype=np.int64)
    fresh = np.array(new, dtype=np.int64)
    partial = np.empty((n_chunks(n), 2 * k * (1 + len(fresh))))
    run_chunked(_products, n, jobs, g, s, y, rows, fresh, partial)
    sums = exact_sums(partial)
    for u, r in enumerate(fresh):
        base = 2 * k * (u + 1)
        for j, a in enumerate(rows):
            sty[a, r] = sums[base + j]
            yty[a, r] = yty[r, a] = sums[base + k + j]
    new.clear()
    R = np.diag(1.0 / rho[rows])
    for j in range(k):
        R[:j, j] = sty[rows[:j], rows[j]]
    yty_k = yty[np.ix_(rows, rows)]
    gamma = 1.0 / (rho[rows[-1]] * yy[rows[-1]])
    p, q = np.array(sums[:k]), np.array(sums[k:2 * k])
    r = np.linalg.solve(R, p)
    t = np.linalg.solve(R.T, (np.diag(1.0 / rho[rows]) + gamma * yty_k) @ r - gamma * q)
    run_chunked(_combine, n, jobs, g, s, y, rows, t, -gamma * r, gamma, out)
    return out
