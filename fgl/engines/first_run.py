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


def note_first_compile(engine: EngineKernels, task: str, stream: TextIO | None = None) -> bool:
    """Say on ``stream`` (standard error) that the kernels are compiled now,
    once per process, engine and task, when their cache is cold and someone
    watches (``stream`` is a terminal: a log file or a test capturing the
    output gets no note); returns whether it did."""
    stream = stream or sys.stderr
    watched = getattr(stream, "isatty", None)
    if (not (watched and watched()) or (engine.name, task) in _noted
            or not is_cold(engine, task)):
        return False
    _noted.add((engine.name, task))
    seconds = kernels_of(engine, task).seconds
    print(f"fgl: compiling fgl's kernels for this machine, once: ~{seconds} s "
          f"(the {engine.name} engine's {'training' if task == 'train' else 'tagging'}; later runs "
          "load them from numba's cache)", file=stream, flush=True)
    return True
