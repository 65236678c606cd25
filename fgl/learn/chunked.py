"""Passes of the optimiser over full-length vectors (weights, gradients,
the L-BFGS pairs), in fixed chunks of ``CHUNK`` weights split between
threads.  The passes are bound by memory — with millions of weights each
reads and writes tens of MB — and one thread does not draw all the
bandwidth there is.  A sum over a pass is taken per chunk (in the kernel's
order within it) and the chunks' sums are added exactly (``exact_sums``),
so it is the same bits for any number of threads.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from fgl.engines.parallel import contiguous_runs, pooled, resolve_jobs

CHUNK = 1 << 16        # weights per chunk of a pass
THREADED_CHUNKS = 4    # fewer chunks than this run on the calling thread


def n_chunks(n: int) -> int:
    """The chunks of a pass over ``n`` weights (at least one)."""
    return max(1, -(-n // CHUNK))


def run_chunked(kernel: Callable, n: int, jobs: int, *args) -> None:
    """``kernel(*args, c0, c1, CHUNK)`` over the chunks c0..c1-1 of ``n``
    weights, split into contiguous runs between up to ``jobs`` threads."""
    chunks = n_chunks(n)
    threads = min(resolve_jobs(jobs), chunks) if chunks >= THREADED_CHUNKS else 1
    if threads == 1:
        kernel(*args, 0, chunks, CHUNK)
        return
    pooled(threads, lambda cut: kernel(*args, *cut, CHUNK),
           contiguous_runs(np.arange(chunks + 1), threads))


def exact_sums(partial: np.ndarray) -> list[float]:
    """Per column of ``partial`` (a row per chunk), the chunks' sums added
    exactly."""
    return [math.fsum(partial[:, i].tolist()) for i in range(partial.shape[1])]
