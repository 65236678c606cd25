"""The correction pairs of L-BFGS (``fgl.learn.lbfgs``): the last m pairs
s = x_{k+1} - x_k, y = g_{k+1} - g_k in single precision, the products
the compact form reads, and the direction −H·g they give (Nocedal &
Wright 2006 §7.2; ``fgl.learn.compact_form``), with H₀ = γI or, given a
``scale``, γ·diag(scale²) — L-BFGS on the weights w / scale, its pairs kept
in those coordinates (ŝ = s / scale, ŷ = y·scale, so ŝᵀŷ = sᵀy).  Between
a direction and the next pair the iterate's gradient waits in a free row
(``park``), so that the optimiser holds one full-length vector fewer.
"""
from __future__ import annotations

import numpy as np

from fgl.jit import bits_to_float, float_to_bits, njit, single_to_bits
from fgl.learn.chunked import exact_sums, n_chunks, run_chunked
from fgl.learn.compact_form import compact_direction


class History:
    """The last ``m`` correction pairs s = x_{k+1} - x_k, y = g_{k+1} - g_k.

    They are stored in single precision — 2·m vectors are the optimiser's
    largest buffers, and L-BFGS needs only an approximation of the inverse
    Hessian — while ρ = 1/(sᵀy), yᵀy and every sum of the direction are
    computed in double precision.  The products of the stored rows with one
    another that the compact form reads (s_iᵀy_j, y_iᵀy_j) are kept with
    them, a new pair's taken by the next ``direction``."""

    def __init__(self, m: int, jobs: int = 1, scale: np.ndarray | None = None):
        self.m, self.jobs = m, jobs        # (jobs: threads of its passes)
        # H₀'s shape (module docstring): pairs and directions in the coordinates w / scale
        self.scale = scale
        self.s: np.ndarray | None = None  # [m, n] float32, allocated at first use
        self.y: np.ndarray | None = None
        self.order: list[int] = []        # rows in use, oldest first
        self.rho = np.zeros(m)
        self.yy = np.zeros(m)
        self.sty = np.zeros((m, m))       # s_iᵀy_j of rows i, j (pairs in use, i older)
        self.yty = np.zeros((m, m))       # y_iᵀy_j
        self.new: list[int] = []          # rows in use whose products are not taken yet
        self.parked: int | None = None    # the free row holding a gradient's bits

    def _free_row(self, n: int) -> int:
        """A row no pair uses (the oldest pair's when all are in use)."""
        if self.s is None:
            self.s = np.empty((self.m, n), dtype=np.float32)
            self.y = np.empty((self.m, n), dtype=np.float32)
        self.drop_oldest()
        return next(r for r in range(self.m) if r not in self.order)

    def drop_oldest(self) -> None:
        """Forget the oldest pair when all ``m`` are in use (the next pair
        replaces it; after the direction that used it last)."""
        if len(self.order) == self.m:
            row = self.order.pop(0)
            if row in self.new:
                self.new.remove(row)

    def park(self, g: np.ndarray) -> None:
        """Keep ``g``'s bits in a free row — the low 32 bits of each entry
        in ``s``, the high 32 in ``y`` — until ``record`` forms the next
        pair over them (``unpark`` gives a copy back)."""
        row = self._free_row(len(g))
        run_chunked(_park, len(g), self.jobs, g, self.s[row].view(np.uint32),
                    self.y[row].view(np.uint32))
        self.parked = row

    def unpark(self) -> np.ndarray:
        """A copy of the parked gradient."""
        if self.parked is None:
            raise ValueError("no gradient is parked in this L-BFGS history")
        out = np.empty(self.s.shape[1])
        _unpark(self.s[self.parked].view(np.uint32), self.y[self.parked].view(np.uint32),
                out.view(np.uint64))
        return out

    def record(self, x_new: np.ndarray, x: np.ndarray, g_new: np.ndarray,
               g: np.ndarray | None) -> None:
        """Add the pair of a step, replacing the oldest when full; a pair
        with sᵀy <= 1e-10·yᵀy (no positive curvature) is left out.  ``g``
        None: the previous gradient is the parked one, each entry read just
        before the pair's entry takes its place."""
        partial = np.empty((n_chunks(len(x)), 2))
        scale = self.scale if self.scale is not None else _UNSCALED
        if g is not None:
            row = self._free_row(len(x))
            run_chunked(_store_pair, len(x), self.jobs, x_new, x, g_new, g, scale,
                        self.s[row], self.y[row], partial)
        else:
            row = self.parked
            run_chunked(_store_parked_pair, len(x), self.jobs, x_new, x, g_new, scale,
                        self.s[row].view(np.uint32), self.y[row].view(np.uint32), partial)
        sy, yy = exact_sums(partial)
        self.parked = None
        if sy > 1e-10 * yy:
            self.order.append(row)
            self.new.append(row)
            self.rho[row], self.yy[row] = 1.0 / sy, yy

    def arrays(self) -> dict[str, np.ndarray]:
        """The pairs in use, oldest first, for saving (``restore`` reads them)."""
        rows = np.array(self.order, dtype=np.int64)
        n = 0 if self.s is None else self.s.shape[1]
        pick = (lambda a: a[rows]) if self.s is not None else \
            (lambda a: np.empty((0, n), dtype=np.float32))
        return {"s": pick(self.s), "y": pick(self.y), "rho": self.rho[rows], "yy": self.yy[rows]}

    @classmethod
    def restore(cls, m: int, n: int, arrays: dict[str, np.ndarray]) -> "History":
        """The history ``arrays()`` saved (at most ``m`` pairs of length
        ``n``; its ``scale`` is the run's, set by ``minimize_lbfgs``)."""
        history, count = cls(m), len(arrays["rho"])
        if count > m or arrays["s"].shape != (count, n) or arrays["y"].shape != (count, n) \
                or arrays["yy"].shape != (count,):
            raise ValueError(f"an L-BFGS history of {count} pairs does not fit m = {m}, n = {n}")
        if count:
            history.s = np.zeros((m, n), dtype=np.float32)
            history.y = np.zeros((m, n), dtype=np.float32)
            history.s[:count], history.y[:count] = arrays["s"], arrays["y"]
            history.rho[:count], history.yy[:count] = arrays["rho"], arrays["yy"]
            history.order = list(range(count))
            history.new = list(range(count))
        return history

    def direction(self, g: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out = -H·g, H the L-BFGS matrix of the pairs (the two-loop
        recursion's, Algorithm 7.4) with H₀ = γI, γ = sᵀy / yᵀy of the
        newest pair (eq. 7.20), from its compact representation on up to
        ``jobs`` threads (``fgl.learn.compact_form``: the same bits for any
        number); with a ``scale``, in its coordinates (module docstring)."""
        scale = self.scale
        g = g if scale is None else np.multiply(g, scale)   # (in H₀'s coordinates)
        if not self.order:
            np.negative(g, out=out)
        else:
            compact_direction(g, self.s, self.y, self.rho, self.yy, self.order, self.sty,
                              self.yty, self.new, out, self.jobs)
        if scale is not None:
            np.multiply(out, scale, out=out)
        return out


_UNSCALED = np.empty(0)   # (a history without H₀'s shape: the kernels' ``scale``)


@njit(cache=True, nogil=True, inline="always")
def _in_h0_coordinates(a, b, scale, i):
    """Entry i of a pair (a of s, b of y) in H₀'s coordinates: a / scale[i]
    and b·scale[i], or as they are with no ``scale`` (``History``)."""
    if scale.shape[0] > 0:
        return a / scale[i], b * scale[i]
    return a, b


@njit(cache=True, nogil=True)
def _store_pair(x_new, x, g_new, g, scale, s, y, partial, c0, c1, chunk):
    """s = x_new - x, y = g_new - g (stored as float32; with a ``scale``,
    s / scale and y·scale: ``History``) over chunks ``c0``..``c1``-1;
    ``partial[c]`` = chunk c's sᵀy and yᵀy of the double-precision
    differences."""
    n = x.shape[0]
    for c in range(c0, c1):
        sy = 0.0
        yy = 0.0
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            a, b = _in_h0_coordinates(x_new[i] - x[i], g_new[i] - g[i], scale, i)
            s[i] = a
            y[i] = b
            sy += a * b
            yy += b * b
        partial[c, 0] = sy
        partial[c, 1] = yy


@njit(cache=True, nogil=True)
def _park(g, lo_words, hi_words, c0, c1, chunk):
    """Each float64's bits as its low and high 32-bit words, over chunks
    ``c0``..``c1``-1."""
    n = g.shape[0]
    for i in range(c0 * chunk, min(n, c1 * chunk)):
        bits = np.uint64(float_to_bits(g[i]))
        lo_words[i] = np.uint32(bits & np.uint64(0xFFFFFFFF))
        hi_words[i] = np.uint32(bits >> np.uint64(32))


@njit(cache=True, nogil=True)
def _unpark(lo_words, hi_words, out_bits):
    """The float64 bits ``_park`` split, joined again into ``out_bits`` (uint64)."""
    for i in range(out_bits.shape[0]):
        out_bits[i] = (np.uint64(hi_words[i]) << np.uint64(32)) | np.uint64(lo_words[i])


@njit(cache=True, nogil=True)
def _store_parked_pair(x_new, x, g_new, scale, s_words, y_words, partial, c0, c1, chunk):
    """``_store_pair`` with the previous gradient parked in the row itself
    (``_park``: low words in ``s_words``, high in ``y_words``, both the
    row's uint32 views): each entry of g is read before s and y take its
    place (the row is reached only through these views)."""
    n = x.shape[0]
    for c in range(c0, c1):
        sy = 0.0
        yy = 0.0
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            bits = (np.uint64(y_words[i]) << np.uint64(32)) | np.uint64(s_words[i])
            a, b = _in_h0_coordinates(x_new[i] - x[i], g_new[i] - bits_to_float(np.int64(bits)),
                                      scale, i)
            s_words[i] = single_to_bits(np.float32(a))
            y_words[i] = single_to_bits(np.float32(b))
            sy += a * b
            yy += b * b
        partial[c, 0] = sy
        partial[c, 1] = yy
