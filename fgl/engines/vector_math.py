"""exp and log written out as an argument reduction and a polynomial, so
that a loop of them compiles to SIMD code.

libm's ``exp`` and ``log`` are a call per value.  Inline, with no branch and
no call, a loop over a few dozen values runs several at a time: the
chain's factored path (``fgl.engines.sequence.chain._exps``) takes a
sequence's label factors so, and a tree-reweighted BP visit
(``fgl.engines.graph.trw_sweep``) the exponentials of all its cavities,
then the logarithms of all its new messages, in one such loop each.  A
caller's loop vectorises only when compiled with ``error_model="numpy"``
(no division check), and contracts to fused multiply-adds with
``fastmath={"contract"}`` — never ``reassoc``, which would undo the
argument reductions.

* ``exp_neg(x)``, x <= 0: Cody & Waite 1980, ch. 6 (EXP): exp(x) = 2^k ·
  exp(r), r = x - k·ln 2 with ln 2 in two parts (k·LN2_HI exact), exp(r) by
  its Taylor series to r^13/13! (|r| <= ln 2/2: the remainder is below
  1e-17).  x below -708 gives exp(-708); -inf gives 0; NaN stays NaN.
* ``log_pos(y)``, y a positive normal number: Cody & Waite 1980, ch. 5
  (LOG): y = 2^e · m with m in [√½, √2), log m = 2 atanh(s) =
  2 (s + s³/3 + s⁵/5 + ...), s = (m - 1)/(m + 1), |s| <= 0.1716, to s^25
  (the remainder is below 1e-19 of log m), and e·ln 2 in two parts.

Both are within a few ulp of libm (``tests/engines/test_vector_math.py``).
"""
from __future__ import annotations

import numpy as np

from fgl.jit import bits_to_float, float_to_bits, njit

LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
# 1/k! for k = 13 down to 0 (Horner's order)
EXP_TAYLOR = np.array([1.0 / float(np.prod(np.arange(1, k + 1))) for k in range(13, -1, -1)])
# 2/(2k + 1) for k = 12 down to 0: log m = s · Σ_k 2 s^(2k) / (2k + 1)
LOG_ATANH = np.array([2.0 / (2 * k + 1) for k in range(12, -1, -1)])
SQRT2 = 1.4142135623730951
EXP_FLOOR = -708.0
_MANTISSA = np.int64((1 << 52) - 1)
_ONE_BITS = np.int64(1023 << 52)


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy", inline="always")
def exp_neg(x):
    """exp(x) for x <= 0 (module docstring)."""
    v = EXP_FLOOR if x < EXP_FLOOR else x
    k = np.floor(v * LOG2E + 0.5)
    r = (v - k * LN2_HI) - k * LN2_LO
    c = EXP_TAYLOR
    p = c[0]
    for j in range(1, c.shape[0]):   # (Horner; unrolled by the compiler)
        p = p * r + c[j]
    p *= bits_to_float((np.int64(k) + 1023) << 52)
    return 0.0 if x == -np.inf else p


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy", inline="always")
def log_pos(y):
    """log(y) for a positive normal y (module docstring)."""
    bits = float_to_bits(y)
    e = np.float64((bits >> 52) - 1023)
    m = bits_to_float((bits & _MANTISSA) | _ONE_BITS)   # in [1, 2)
    big = m > SQRT2
    m = 0.5 * m if big else m
    e = e + 1.0 if big else e
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    c = LOG_ATANH
    p = c[0]
    for j in range(1, c.shape[0]):
        p = p * s2 + c[j]
    return e * LN2_HI + (s * p + e * LN2_LO)
