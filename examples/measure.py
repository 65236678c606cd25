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


def array_mb(*objects) -> float:
    """MB held by the numpy arrays among the fields of ``objects`` (dataclasses,
    NamedTuples or plain objects, one level down into NamedTuple fields),
    each underlying buffer counted once."""
    import numpy as np

    seen: dict[int, int] = {}

    def add(value) -> None:
        if isinstance(value, np.ndarray):
            base = value
            while isinstance(base.base, np.ndarray):
                base = base.base
            if base.strides and 0 in base.strides:   # a broadcast view holds no data
                return
            seen[id(base)] = base.nbytes
        elif isinstance(value, tuple) and hasattr(value, "_fields"):
            for v in value:
                add(v)

    for obj in objects:
        fields = obj._asdict().values() if hasattr(obj, "_asdict") else vars(obj).values()
        for value in fields:
            add(value)
    return sum(seen.values()) / 2**20


class TracedObjective:
    """A training objective that notes the bytes tracemalloc traces when
    the last evaluation starts (what the optimiser holds between iterations:
    its history and full-length vectors) and the most traced above that
    during any evaluation (the evaluation's own gradient and scratch).
    Everything else is the wrapped objective's."""

    def __init__(self, objective):
        self.objective, self.held, self.extra = objective, 0, 0

    def __getattr__(self, name: str):
        return getattr(self.objective, name)

    def __call__(self, w):
        import tracemalloc

        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = self.objective(w)
        self.held = held
        self.extra = max(self.extra, tracemalloc.get_traced_memory()[1] - held)
        return out


def compile_peaks(compile_fn: Callable[[], tuple]) -> tuple[tuple, dict]:
    """``compile_fn()``'s result, with the RSS peak while it ran (sampled
    every 5 ms: compiling's transients last tens of ms) and the RSS after, MB."""
    with RssPeak(every=0.005) as m:
        out = compile_fn()
    return out, {"rss_compile_peak": m.peak_mb, "rss_compiled": current_rss_mb()}


def traced_training(program, data, sigma, **train_args) -> tuple[object, object, dict]:
    """``train_lbfgs`` on the likelihood of ``program`` on ``data`` with its
    allocations traced: (weights, log, the training rows of MEMORY_ROWS:
    L-BFGS history, what else is held between evaluations — the
    optimiser's full-length vectors and the log —, one evaluation's
    gradient and scratch; MB), and the RSS peak while it ran."""
    import tracemalloc

    import numpy as np

    from fgl.learn.learner import OPTIMISER_MEMORY, train_lbfgs
    from fgl.learn.objective import Objective

    objective = TracedObjective(Objective(program, data, sigma, train_args.get("jobs", 0)))
    w0 = np.zeros(program.n_features)   # (before tracing: the optimiser copies it)
    tracemalloc.start()
    try:
        with RssPeak() as rss:
            w, log = train_lbfgs(program, data, sigma, objective=objective, w0=w0, **train_args)
    finally:
        tracemalloc.stop()
    n = program.n_features
    history = 2 * OPTIMISER_MEMORY * n * 4
    return w, log, {"rss_train_peak": rss.peak_mb, "mem_history_mb": history / 2**20,
                    "mem_vectors_mb": (objective.held - history) / 2**20,
                    "mem_vectors_n": (objective.held - history) / (8 * n),
                    "mem_eval_mb": objective.extra / 2**20}


MEMORY_ROWS = [   # (label, key): the parts of a training process's peak memory, MB
    ("process after imports (Python, numpy, numba kernels)", "mem_imports_mb"),
    ("  of which Python and the benchmark script", "imports_python"),
    ("  of which numpy, numba and fgl imported", "imports_numba"),
    ("  of which the first kernel calls (numba's compiler state, LLVM, the kernels)",
     "imports_kernels"),
    ("training data as read (held or streamed)", "mem_read_mb"),
    ("compile: feature table (program arrays)", "mem_features_mb"),
    ("compile: encoded training data (arrays)", "mem_data_mb"),
    ("compile: vocabularies, labels, Python objects", "mem_compile_rest_mb"),
    ("training: L-BFGS history (2·m·n float32)", "mem_history_mb"),
    ("training: held between evaluations besides the history", "mem_vectors_mb"),
    ("  (as vectors of n float64: the optimiser's x, d, trial)", "mem_vectors_n"),
    ("training: one evaluation's gradient and scratch", "mem_eval_mb"),
    ("other: numba kernels loaded in training, heap, stacks (peak less the above)",
     "mem_other_mb"),
    ("peak RSS", "peak_rss_mb"),
    ("  RSS peak while compiling (its transients included)", "rss_compile_peak"),
    ("  RSS after compiling", "rss_compiled"),
    ("  RSS peak while training", "rss_train_peak"),
]
PARTS = [key for _, key in MEMORY_ROWS if key.startswith("mem_") and key.endswith("_mb")
         and key != "mem_other_mb"]


def print_memory(cols: list[tuple[str, dict | None]]) -> None:
    """The memory breakdown of the runs that measured one, a column each."""
    cols = [(name, {**r, "mem_other_mb": r["peak_rss_mb"] - sum(r.get(k) or 0.0 for k in PARTS)
                    if "mem_history_mb" in r else None})
            for name, r in cols if r is not None and "mem_imports_mb" in r]
    if not cols:
        return
    print("\nwhere the memory goes (MB): RSS deltas between phases, numpy arrays by their "
          "nbytes, training's allocations traced (tracemalloc) around each evaluation")
    width = max(len(label) for label, _ in MEMORY_ROWS)
    print(f"{'part':<{width}} " + " ".join(f"{name:>16}" for name, _ in cols))
    for label, key in MEMORY_ROWS:
        if all(r.get(key) is None for _, r in cols):
            continue   # (a part this benchmark does not measure)
        print(f"{label:<{width}} " + " ".join(
            f"{r[key]:16.1f}" if r.get(key) is not None else f"{'-':>16}" for _, r in cols))
