"""The first run on a machine: numba compiles fgl's kernels, once.

The engines' kernels are numba functions compiled for this machine the first
time they run and cached (``cache=True``) — in ``__pycache__`` beside the
engine modules, in ``NUMBA_CACHE_DIR`` when that is set, or in numba's
per-user cache when neither can be written.  Every later run loads them in
a fraction of a second.  The first one pays the compilation, which a
newcomer would otherwise take for fgl being slow: ``note_first_compile``
says so, on one line of standard error, when the kernels an engine is about
to run have no cache yet.

Measured cold, on the 2-core development machine (a fresh
``NUMBA_CACHE_DIR``; ``fgl train`` on 77 sentences): a first-order chain
7.9 s of CPU (12-13 s before each training path was compiled on its own,
``chain.batch_expectations``), the semi-Markov CRF of the stdlib 12 s (18
s); ``fgl tag`` of a chain model on a cold cache 5 s.  A skip chain (every
pair of equal words of a document linked, 77 sentences in documents of 8,
``infer auto``: tree-reweighted BP in blocks and junction trees) 42 s to
train and 32 s to tag (2026-12-04; later runs 1.7 s to train).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

# the kernels whose cache decides, per engine and task, and the seconds their first
# compilation takes (measured as above; a rough guide, shown as "~N s")
_KERNELS = {
    ("chain", "train"): ("fgl.engines.sequence.chain",
                         ("_expectations_factored", "_expectations_scaled"), 8),
    ("chain", "tag"): ("fgl.engines.sequence.chain", ("batch_viterbi",), 5),
    ("segments", "train"): ("fgl.engines.sequence.semimarkov_batch",
                            ("_expectations_factored", "_expectations_scaled"), 12),
    ("segments", "tag"): ("fgl.engines.sequence.semimarkov_batch", ("batch_viterbi",), 6),
    ("factor graph", "train"): ("fgl.engines.graph.table_kernels",
                                ("feature_expectations",), 40),
    ("factor graph", "tag"): ("fgl.engines.graph.table_kernels", ("factor_tables",), 30),
}
_noted: set[tuple[str, str]] = set()


def cache_index(dispatcher) -> Path | None:
    """Where numba keeps the index of ``dispatcher``'s cached compilations
    (None when it is not cached, or numba's internals differ)."""
    try:
        return Path(dispatcher._cache._cache_file._index_path)
    except AttributeError:
        return None


def is_cold(engine: str, task: str) -> bool:
    """Whether none of the kernels ``engine`` runs for ``task`` ("train" or
    "tag") has been compiled on this machine before (no cache index)."""
    entry = _KERNELS.get((engine, task))
    if entry is None:
        return False
    module_name, names, _ = entry
    import importlib

    module = importlib.import_module(module_name)
    indexes = [cache_index(getattr(module, name)) for name in names]
    return all(i is not None and not i.exists() for i in indexes)


def note_first_compile(engine: str, task: str, stream: TextIO | None = None) -> bool:
    """Say on ``stream`` (standard error) that the kernels are compiled now,
    once per process, engine and task, when their cache is cold and someone
    watches (``stream`` is a terminal: a log file or a test capturing the
    output gets no note); returns whether it did."""
    stream = stream or sys.stderr
    watched = getattr(stream, "isatty", None)
    if not (watched and watched()) or (engine, task) in _noted or not is_cold(engine, task):
        return False
    _noted.add((engine, task))
    seconds = _KERNELS[(engine, task)][2]
    print(f"fgl: compiling fgl's kernels for this machine, once: ~{seconds} s "
          f"(the {engine} engine's {'training' if task == 'train' else 'tagging'}; later runs "
          "load them from numba's cache)", file=stream, flush=True)
    return True
