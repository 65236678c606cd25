"""Timing and memory readings shared by the benchmark scripts."""
from __future__ import annotations

import os
import resource
import time
from typing import Callable


def best_time(fn: Callable[[], object], repeats: int,
              clock: Callable[[], float] = time.perf_counter) -> float:
    """Best time of ``repeats`` calls of ``fn`` after one warm-up call, by
    ``clock`` (wall time by default; ``time.thread_time`` for the calling
    thread's CPU time)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def peak_rss_mb() -> float:
    """This process's peak resident set size, MB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    """This process's resident set size now, MB (Linux; else the peak)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mb()


class RssPeak:
    """The peak resident set size while a block runs, MB, sampled every
    ``every`` seconds by a thread: ``with RssPeak() as m: ...; m.peak_mb``
    (ru_maxrss cannot tell one run's peak from an earlier one's)."""

    def __init__(self, every: float = 0.05):
        self.every, self.peak_mb = every, 0.0

    def __enter__(self) -> "RssPeak":
        import threading

        self._done = threading.Event()
        self.peak_mb = current_rss_mb()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(self.every):
            self.peak_mb = max(self.peak_mb, current_rss_mb())

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, current_rss_mb())
