"""numba's ``njit``, imported without SciPy's BLAS.

When SciPy is installed, importing numba loads ``scipy.linalg.cython_blas``
(numba's array math looks for a BLAS for ``np.dot`` in compiled code).
fgl's kernels call neither ``np.dot`` nor ``np.linalg``, and that import
alone holds 17 MB of resident memory in every process that runs a kernel:
a chain training on five toy sentences peaks at 160 MB with it hidden, 177
MB without (``examples/bench_conll2000.py`` prints the full breakdown).
Every kernel module takes ``njit`` from here, so the first of them to load
imports numba with that one module hidden.  numba then compiles a 1-D
``np.dot`` as a loop; a matrix product or ``np.linalg`` call compiled later
imports SciPy as usual.  Where numba was imported before fgl, nothing
changes.

Also the bitcasts between float64 and int64 that
``fgl.engines.vector_math``'s exp and log take a number apart with, and
from float32 to uint32, which the L-BFGS history stores words with.
"""
from __future__ import annotations

import sys

if "numba.np.arraymath" not in sys.modules and "scipy.linalg.cython_blas" not in sys.modules:
    sys.modules["scipy.linalg.cython_blas"] = None  # an import of it raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules["scipy.linalg.cython_blas"]

from numba import njit, types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

__all__ = ["bits_to_float", "float_to_bits", "njit", "single_to_bits"]


def _bitcast(source, target):
    """An intrinsic reinterpreting a ``source`` value's bits as ``target``
    (a register move in compiled code)."""
    @intrinsic
    def cast(typingctx, x):
        if x != source:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(target))
        return target(source), codegen
    return cast


# in compiled code: the float64 whose bits are an int64, and the int64 holding a float64's bits
bits_to_float = _bitcast(types.int64, types.float64)
float_to_bits = _bitcast(types.float64, types.int64)
# and the uint32 holding a float32's bits
single_to_bits = _bitcast(types.float32, types.uint32)
