"""The first run on a machine: numba compiles fgl's kernels, once.

The engines' kernels are numba functions compiled for this machine the first
time they run and cached (``cache=True``) — in ``__pycache__`` beside the
engine modules, in ``NUMBA_CACHE_DIR`` when that is set, or in numba's
per-user cache when neither can be written.  Every later run loads them in
a fraction of a second.  The first one pays the compilation, which a
newcomer would otherwise take for fgl being slow: ``note_first_compile``
says so, on one line of standard error, when the kernels an engine is about
to run have no cache yet.

The note comes from the command line and from Python alike (``fgl.CRF``
and ``fgl.CRFEstimator``: fit, and predict or any other inference),
whether or not the run is verbose, when someone watches standard error: a
terminal, or a Jupyter notebook (whose standard error is no terminal).

Measured cold, in CPU seconds, on the 2-core development machine, with
``python examples/profile_cold_start.py`` (each step in a process of its
own with a new ``NUMBA_CACHE_DIR``; an ``fgl.CRFEstimator`` on 300
CoNLL-2000 sentences of feature dicts, 100 iterations; 2026-12-06, three
runs; each ``fgl.registry.Engine`` declares its estimates in ``kernels``):
a first-order chain 18-22 s to train on the loaded machine of that
afternoon, 0.81-0.83x of the code before in runs made beside it (which
took 22-27 s then, 19-22 s in the morning's runs; 25-27 s before a slice
copy's error text, a second type of the same kernel and numba's sort were
cut), its tagging 3-4 s after training in the same process and 7-9 s in
a process of its own (loading the model, encoding; was 12-14 s).  Earlier
that day, on 300 generated sentences with ``fgl.CRF``: a semi-Markov CRF
29 s and 4 s, a skip chain (tree-reweighted BP and junction trees) 68 s
and 5 s.  Later runs: 2.5-3.6 s for the chain's whole fit-and-predict
process.

Where a second core is free, a chain or semi-Markov model's training
hands the kernels needed later (tagging's, the optimiser's) to a second
process (``fgl.engines.background_compile``): a cold 300-sentence
``CRFEstimator`` fit then took 12.9 s instead of 16.1 s on the quiet
machine, and its predict 0.1 s; the estimates above are for one process.
That night, quiet: the fit 12.5 s of wall beside the second process and
14.9 s in one (the chain's estimate, 15 s), predict 0.07 s and 2.1 s.

The kernels compile once per type of the data they meet; the note looks
for any cached compilation of an engine's kernels, so it misses a second
type (a spec's binary attributes, then the estimator's int8 values).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO


@dataclass(frozen=True)
class Kernels:
    """The kernels whose cache decides whether an engine's task ("train"
    or "tag") is compiled on this machine: their module, their names, and
    the seconds their first compilation takes (measured as above; a rough
    guide, shown as "~N s").  Each ``fgl.registry.Engine`` declares its own
    (``Engine.kernels``)."""

    task: str
    module: str
    names: tuple[str, ...]
    seconds: int


class EngineKernels(Protocol):
    """What the note reads of an engine (``fgl.registry.Engine``)."""

    name: str
    kernels: tuple[Kernels, ...]


_noted: set[tuple[str, str]] = set()


def kernels_of(engine: EngineKernels, task: str) -> Kernels | None:
    """The kernels ``engine`` declares for ``task`` (None: none)."""
    return next((k for k in engine.kernels if k.task == task), None)


def cache_index(dispatcher) -> Path | None:
    """Where numba keeps the index of ``dispatcher``'s cached compilations
    (None when it is not cached, or numba's internals differ)."""
    try:
        return Path(dispatcher._cache._cache_file._index_path)
    except AttributeError:
        return None


def is_cold(engine: EngineKernels, task: str) -> bool:
    """Whether none of the kernels ``engine`` runs for ``task`` ("train" or
    "tag") has been compiled on this machine before (no cache index)."""
    entry = kernels_of(engine, task)
    if entry is None:
        return False
    import importlib

    module = importlib.import_module(entry.module)
    indexes = [cache_index(getattr(module, name)) for name in entry.names]
    return all(i is not None and not i.exists() for i in indexes)


def watched(stream: TextIO) -> bool:
    """Whether someone reads ``stream`` as it comes: a terminal, or the
    standard error of a Jupyter notebook (not a terminal, but shown under
    the cell) — not a log file, a pipe or a test capturing the output."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or "ipykernel" in sys.modules


def note_first_compile(engine: EngineKernels, task: str, stream: TextIO | None = None) -> bool:
    """Say on ``stream`` (standard error) that the kernels are compiled now,
    once per process, engine and task, when their cache is cold and someone
    watches (``watched``); returns whether it did."""
    stream = stream or sys.stderr
    if not watched(stream) or (engine.name, task) in _noted or not is_cold(engine, task):
        return False
    _noted.add((engine.name, task))
    seconds = kernels_of(engine, task).seconds
    print(f"fgl: compiling fgl's kernels for this machine, once: ~{seconds} s "
          f"(the {engine.name} engine's {'training' if task == 'train' else 'tagging'}; later runs "
          "load them from numba's cache)", file=stream, flush=True)
    return True
