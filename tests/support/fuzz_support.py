"""Bounds, tallies and data makers for the fuzzer (tests/jobs/test_fuzz.py).

A campaign (a hypothesis test over one target) runs in a forked process,
so that a crash or a hang in compiled code fails that test, not the test
session.  There the address space is capped (RLIMIT_AS: what the process
holds plus a headroom, so an allocation beyond it fails as MemoryError
instead of exhausting the machine), and every step of an input runs under
:func:`time_bound` (SIGALRM: a Python-level hang fails as :class:`Hang`;
faulthandler ends the process with every thread's traceback if compiled
code never yields back; numba's JIT compilation does not count).
:class:`Tally` counts the inputs tried and how each step ended; only
success or an ``FglError`` counts as an ending.
"""
from __future__ import annotations

import contextlib
import faulthandler
import json
import multiprocessing
import os
import random
import resource
import signal
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator

import pytest
from numba.core import event

from fgl.errors import DataError, FglError, ModelFileError, SpecError
from fgl.lang import ast

TIME_BOUND = 10.0                 # seconds per step of an input
CAMPAIGN_BOUND = 600.0            # seconds a whole campaign (with shrinking) may take
MEMORY_HEADROOM = 3 << 30         # bytes of address space above what the process holds
FEATURE_BUDGET = 512 << 20        # FGL_MAX_MEMORY while fuzzing: fgl refuses what exceeds it


class Hang(AssertionError):
    """An input still running at the per-input time bound."""


class _Compiling(event.Listener):
    """Whether numba is compiling (JIT compilation is not the input's time,
    and an exception raised inside it leaves the dispatcher broken)."""

    depth = 0

    def on_start(self, ev: event.Event) -> None:
        self.depth += 1

    def on_end(self, ev: event.Event) -> None:
        self.depth -= 1


_COMPILING = _Compiling()
event.register("numba:compile", _COMPILING)


@contextlib.contextmanager
def time_bound(what: str, dump_fd: int, seconds: float = TIME_BOUND) -> Iterator[None]:
    """Fail with :class:`Hang` when the block runs past ``seconds`` (also when
    the code under test swallowed the alarm's exception); past six times
    that, write every thread's traceback to ``dump_fd`` and end the process."""
    fired: list[bool] = []

    def arm() -> None:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        # compiled (numba) loops never return to the interpreter to see the alarm
        faulthandler.dump_traceback_later(6 * seconds, exit=True, file=dump_fd)

    def alarm(signum, frame) -> None:
        if _COMPILING.depth:    # the clock starts again when numba has compiled
            arm()
            return
        fired.append(True)
        raise Hang(f"{what}: still running after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, alarm)
    arm()
    try:
        yield
    except Hang:
        fired.clear()       # on its way out as it is
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, old)
        if fired:
            raise Hang(f"{what}: ran past the {seconds:g} s bound")


def _address_space() -> int:
    """Bytes of virtual memory this process holds (VmSize)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise OSError("no VmSize in /proc/self/status")


def bound_memory(headroom: int = MEMORY_HEADROOM, budget: int = FEATURE_BUDGET) -> None:
    """Cap this (campaign) process's address space at its present size plus
    ``headroom`` and give fgl's feature-memory check the ``budget``
    (FGL_MAX_MEMORY), so that a model too large is refused, not built."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + headroom
    for cap in (soft, hard):
        if cap != resource.RLIM_INFINITY:
            limit = min(limit, cap)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    os.environ["FGL_MAX_MEMORY"] = str(budget)


class Tally:
    """How many inputs a target tried and how each step ended."""

    def __init__(self, target: str, dump_fd: int):
        self.target, self.dump_fd = target, dump_fd
        self.counts: Counter[str] = Counter()
        self.peak_mb = 0
        self.start = time.perf_counter()
        self._tried = multiprocessing.get_context("fork").Value("q", 0)   # seen across fork

    def new_input(self) -> None:
        """Count one more input (also for the parent of a campaign that dies)."""
        self.counts["inputs"] += 1
        self._tried.value = self.counts["inputs"]

    def bound(self, what: str) -> contextlib.AbstractContextManager[None]:
        """The time bound for one step (see :func:`time_bound`)."""
        return time_bound(what, self.dump_fd)

    def attempt(self, what: str, run: Callable[[], object]) -> list:
        """Run one step under the time bound: ``[what it returned]`` when it
        succeeded, ``[]`` when it raised an FglError (a teaching message);
        anything else propagates."""
        try:
            with self.bound(what):
                value = run()
        except FglError as e:
            check_message(e)
            self.counts[f"{what}: {type(e).__name__}"] += 1
            return []
        self.counts[f"{what}: ok"] += 1
        return [value]

    def summary(self) -> str:
        tried = self.counts["inputs"]
        steps = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()) if k != "inputs")
        return (f"fuzz {self.target}: tried {tried} inputs in "
                f"{time.perf_counter() - self.start:.1f} s (peak RSS {self.peak_mb} MB): {steps}")

    def campaign(self, run: Callable[[], None], current: str) -> None:
        """Run the hypothesis test ``run`` in a forked process under the
        memory bound, take its counts back, and fail with its failure; a
        process that dies (a crash, a hang in compiled code) fails naming
        ``current``, where the input it was running is written."""
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)

        def child() -> None:
            failure = None
            try:
                bound_memory()
                run()
            except BaseException as e:  # noqa: BLE001 - every failure goes back as text
                failure = "".join(traceback.format_exception(e))
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            send.send((dict(self.counts), peak, failure))

        process = context.Process(target=child, daemon=True)
        process.start()
        send.close()
        finished = receive.poll(CAMPAIGN_BOUND)    # a message, or the process's end
        try:
            got = receive.recv() if finished else None
        except EOFError:
            got = None
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()
        if got is None:
            self.counts["inputs"] = self._tried.value
            code = process.exitcode or 0
            how = (f"ran past {CAMPAIGN_BOUND:g} s" if not finished
                   else f"was killed by {signal.Signals(-code).name}" if code < 0
                   else f"ended with status {code} (a dump above: a hang in compiled code)")
            pytest.fail(f"the {self.target} campaign's process {how}; the input it was "
                        f"running is in {current} (a crash may come from memory an earlier "
                        f"input corrupted: NUMBA_BOUNDSCHECK=1 turns out-of-bounds accesses in "
                        f"compiled code into IndexError, which hypothesis then reports)",
                        pytrace=False)
        counts, self.peak_mb, failure = got
        self.counts.update(counts)
        if failure:
            pytest.fail(failure, pytrace=False)


def check_message(e: FglError) -> None:
    """An fgl error teaches: a non-empty message; a spec error at a line and
    column of its file, a data error in its file (line 0: the whole file)."""
    text = str(e)
    assert text.strip(), f"{type(e).__name__} with an empty message"
    if isinstance(e, SpecError):
        assert e.file and e.line >= 1 and e.col >= 1, f"a spec error without a place: {text}"
    if isinstance(e, DataError):
        assert e.file and e.line >= 0, f"a data error without a place: {text}"
    if isinstance(e, ModelFileError):
        assert e.file, text


# ---------------------------------------------------------------- data for a spec

WORDS = ["the", "Booth", "said", "1999", "x-ray", "Mr.", ",", "IBM", "dog", "Booth", "ran",
         "U.S.", "é", "3.5"]


def _labels(spec: ast.Spec, output: str) -> list[str]:
    declared = spec.label_sets.get(output)
    if declared and declared[0]:
        return [str(label) for label in declared[0]]
    if spec.segments is not None and spec.segments.boundary == "bio":
        return ["B-NP", "I-NP", "O", "B-VP"]
    return ["NP", "VP", "O"]


def _field(column: ast.Column, rng: random.Random) -> str:
    if column.kind == "number":
        return f"{rng.uniform(-2, 2):.3f}"
    if column.kind == "vector":
        return f"{rng.uniform(-1, 1):.2f},{rng.uniform(-1, 1):.2f}"
    return rng.choice(WORDS)


def _bio(labels: list[str], rng: random.Random) -> list[str]:
    """A label sequence that is valid BIO when the labels are B-/I-/O tags."""
    out: list[str] = []
    for _ in range(rng.randint(1, 5)):
        label = rng.choice(labels)
        if label.startswith("I-") and not (out and out[-1][2:] == label[2:]):
            label = "B-" + label[2:]
        out.append(label)
    return out


def column_lines(spec: ast.Spec, seed: int = 0, sentences: int = 4) -> str:
    """A small labelled column file for ``spec``: two documents, BIO labels."""
    rng = random.Random(seed)
    lines = ["-DOCSTART- -X- O", ""]
    for s in range(sentences):
        if s == sentences // 2:
            lines += ["-DOCSTART- -X- O", ""]
        tags = {o: _bio(_labels(spec, o), rng) for o in spec.outputs}
        length = min(len(t) for t in tags.values())
        for t in range(length):
            lines.append(" ".join(tags[c.name][t] if c.name in tags else _field(c, rng)
                                  for c in spec.columns))
        lines.append("")
    return "\n".join(lines) + "\n"


def _edge_types(spec: ast.Spec) -> list[str]:
    return sorted({str(p.value) for tpl in spec.templates for p in tpl.where
                   if p.kind == "edge"}) or ["cites"]


def graph_lines(spec: ast.Spec, seed: int = 0, graphs: int = 3) -> str:
    """A small labelled JSON-lines graph file for ``spec``."""
    rng = random.Random(seed)
    out = []
    for g in range(graphs):
        nodes = []
        for k in range(rng.randint(2, 5)):
            node: dict[str, object] = {"id": f"g{g}n{k}"}
            for c in spec.columns:
                if c.name in spec.outputs:
                    node[c.name] = rng.choice([x for x in _labels(spec, c.name)
                                               if not x.startswith("I-")] or ["O"])
                elif c.kind == "number":
                    node[c.name] = rng.uniform(-2, 2)
                elif c.kind == "vector":
                    node[c.name] = [rng.uniform(-1, 1), rng.uniform(-1, 1)]
                else:
                    node[c.name] = " ".join(rng.choice(WORDS) for _ in range(3))
            nodes.append(node)
        edges = [{"source": nodes[k]["id"], "target": nodes[k + 1]["id"],
                  "type": rng.choice(_edge_types(spec))} for k in range(len(nodes) - 1)]
        out.append(json.dumps({"nodes": nodes, "edges": edges}))
    return "\n".join(out) + "\n"


def data_text(spec: ast.Spec, seed: int = 0) -> str:
    """Labelled training data in ``spec``'s input format."""
    return graph_lines(spec, seed) if spec.input_format == "graph" else column_lines(spec, seed)
