"""The L-BFGS two-loop recursion (Nocedal & Wright 2006, Algorithm 7.4) on
threads, the same bits for any number of them.

With millions of weights the recursion is the optimiser's largest cost
outside the objective (on CoNLL-2000 with CRF++'s template, 7.4 M weights
and 6 pairs, about a quarter of a second per iteration on one thread), and
it is bound by memory: every step reads a stored row and the direction.
Here each step of either loop is one pass that finishes the previous
step's update of the direction q and takes the next step's product with
the same read of q:

    loop 1 (newest pair first):  q ← q − a_j·y_j,   then s_{j-1}ᵀq
    loop 2 (oldest pair first):  q ← q + c_j·s_j,   then y_{j+1}ᵀq

(the first pass sets q = −g, the one between the loops also scales q by
γ).  A pass runs over fixed chunks of ``CHUNK`` weights, split between the
threads; each chunk's product is summed in index order and the chunks'
sums are added exactly (``math.fsum``), so the direction depends on the
weights alone, not on how many threads made it.  With one chunk (up to
``CHUNK`` weights) it is the plain recursion's result, bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from fgl.engines.parallel import contiguous_runs, pooled, resolve_jobs
from fgl.jit import njit

CHUNK = 1 << 16        # weights per chunk of a pass
THREADED_CHUNKS = 4    # fewer chunks than this run on the calling thread


@njit(cache=True, nogil=True)
def _pass(q, g, start, add_rows, add_row, coef, scale, dot_rows, dot_row, c0, c1, chunk,
          partial):
    """Chunks ``c0``..``c1``-1 of one pass: q = −g (``start``) or
    q = (q + coef·add_rows[add_row])·scale, then ``partial[c]`` = the
    product of q with ``dot_rows[dot_row]`` over chunk c (none when
    ``dot_row`` < 0)."""
    n = q.shape[0]
    for c in range(c0, c1):
        lo = c * chunk
        hi = min(n, lo + chunk)
        acc = 0.0
        if start:
            for i in range(lo, hi):
                v = -g[i]
                q[i] = v
                acc += dot_rows[dot_row, i] * v
        elif dot_row >= 0:
            for i in range(lo, hi):
                v = (q[i] + coef * add_rows[add_row, i]) * scale
                q[i] = v
                acc += dot_rows[dot_row, i] * v
        else:
            for i in range(lo, hi):
                q[i] = q[i] + coef * add_rows[add_row, i]
        partial[c] = acc


def two_loop(g: np.ndarray, s: np.ndarray, y: np.ndarray, rho: np.ndarray, yy: np.ndarray,
             order: list[int], out: np.ndarray, jobs: int = 1) -> np.ndarray:
    """out = −H·g for the pairs in rows ``order`` of ``s`` and ``y``
    (oldest first, at least one), ρ = 1/sᵀy and yᵀy per row, H₀ = γI with
    γ = sᵀy / yᵀy of the newest pair (eq. 7.20); on up to ``jobs``
    threads."""
    n = g.shape[0]
    chunks = max(1, -(-n // CHUNK))
    threads = min(resolve_jobs(jobs), chunks) if chunks >= THREADED_CHUNKS else 1
    runs = contiguous_runs(np.arange(chunks + 1), threads)
    partial = np.zeros(chunks)

    def run(start: bool, add_rows: np.ndarray, add_row: int, coef: float, scale: float,
            dot_rows: np.ndarray, dot_row: int) -> float:
        def part(cut: tuple[int, int]) -> None:
            _pass(out, g, start, add_rows, add_row, coef, scale, dot_rows, dot_row, *cut,
                  CHUNK, partial)
        if threads == 1:
            part((0, chunks))
        else:
            pooled(threads, part, runs)
        return math.fsum(partial.tolist())

    count = len(order)
    alpha = np.empty(count)
    newest = order[-1]
    gamma = 1.0 / (rho[newest] * yy[newest])
    product = run(True, s, 0, 0.0, 1.0, s, newest)                 # q = −g; s_newestᵀq
    for j in range(count - 1, -1, -1):                              # loop 1, newest first
        a = alpha[j] = rho[order[j]] * product
        if j > 0:
            product = run(False, y, order[j], -a, 1.0, s, order[j - 1])
        else:                                                       # then q ← γq
            product = run(False, y, order[j], -a, gamma, y, order[0])
    for j in range(count):                                          # loop 2, oldest first
        c = alpha[j] - rho[order[j]] * product
        if j + 1 < count:
            product = run(False, s, order[j], c, 1.0, y, order[j + 1])
        else:
            run(False, s, order[j], c, 1.0, y, -1)
    return out
