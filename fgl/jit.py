"""numba's ``njit``, with SciPy's BLAS but not the rest of ``scipy.linalg``.

numba's compiled code reaches a BLAS (``np.dot`` of matrices: the
first-order chain's transition counts, ``fgl.engines.sequence.chain``)
through the extension module ``scipy.linalg.cython_blas``; imported the
usual way it brings its package, ``scipy.linalg``, which fgl never uses and
which holds 17 MB of resident memory in every process that runs a kernel.
So the first kernel module to load (every one takes ``njit`` from here)
loads that extension alone, from its file, under its own name, before
numba is imported: 1.7 MB.  numba finds it there; a later ``import
scipy.linalg`` reuses it.  Should SciPy's layout differ, numba is imported
with the module hidden (a 1-D ``np.dot`` then compiles as a loop, and a
matrix product imports SciPy as usual).  Where numba was imported before
fgl, nothing changes.

A cache index written by an fgl whose modules had other names (one from
before a module was renamed, left in ``__pycache__``) is a cache miss, not
an ``ImportError``: numba unpickles an index before it compares the
source's stamp (``_tolerate_stale_indexes``).  While two processes compile
into one cache (``fgl.engines.background_compile``), each names the code
files it saves after itself (``own_cache_file_names``).

Also the bitcasts between float64 and int64 that
``fgl.engines.vector_math``'s exp and log take a number apart with, and
from float32 to uint32, which the L-BFGS history stores words with.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

BLAS_MODULE = "scipy.linalg.cython_blas"


def _load_blas_alone() -> bool:
    """``BLAS_MODULE`` loaded from its file into ``sys.modules`` without its
    package; False when it cannot be found or loaded."""
    try:
        spec = importlib.util.find_spec("scipy")
        if spec is None or not spec.submodule_search_locations:
            return False
        folder = Path(next(iter(spec.submodule_search_locations))) / "linalg"
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / f"cython_blas{suffix}"
            if path.is_file():
                blas = importlib.util.spec_from_file_location(BLAS_MODULE, path)
                module = importlib.util.module_from_spec(blas)
                blas.loader.exec_module(module)
                sys.modules[BLAS_MODULE] = module
                return True
    except Exception:   # (any failure: numba is imported with it hidden instead)
        return False
    return False


if "numba.np.arraymath" not in sys.modules and BLAS_MODULE not in sys.modules \
        and not _load_blas_alone():
    sys.modules[BLAS_MODULE] = None  # an import of it raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules[BLAS_MODULE]

from numba import njit, typeof, types  # noqa: E402
from numba.core import caching  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

__all__ = ["bits_to_float", "float_to_bits", "njit", "own_cache_file_names", "single_to_bits",
           "typeof", "types"]


def _tolerate_stale_indexes() -> None:
    """Make a numba cache index that names a module or class this fgl no
    longer has read as empty: the kernel compiles and its index is written
    anew.  (numba reads the pickled overloads before it checks whether the
    source changed, so an index left by an older fgl raised ImportError on
    the first call of a kernel whose name and line had stayed.)"""
    index_file = getattr(caching, "IndexDataCacheFile", None)
    load = getattr(index_file, "_load_index", None)
    if load is None or getattr(load, "tolerates_stale", False):
        return

    def load_index(self):
        try:
            return load(self)
        except (ImportError, AttributeError):
            return {}

    load_index.tolerates_stale = True
    index_file._load_index = load_index


_tolerate_stale_indexes()


def own_cache_file_names() -> None:
    """Make the code files this process saves into numba's cache carry its
    process id (``name.<pid><n>.nbc``, not ``name.<n>.nbc``).  numba names
    a new entry's file by the first number its index leaves free, so two
    processes saving one kernel for two signatures at once could both take
    ``1``, and the index of one then pairs its signature with the other's
    code; with names of their own, the worst left is an entry lost from the
    index (compiled again when next needed)."""
    index_file = getattr(caching, "IndexDataCacheFile", None)
    name = getattr(index_file, "_data_name", None)
    if name is None or getattr(name, "per_process", False):
        return

    def data_name(self, number):
        return name(self, os.getpid() * 1000 + number)

    data_name.per_process = True
    index_file._data_name = data_name


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
