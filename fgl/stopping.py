"""Stop requests — a time limit, a signal, ``CRF.request_stop`` — that reach
into long computations.

A training run installs its stopping rule (``watching``) for as long as its
optimiser runs; the loops that can take long — BP's passes over one
instance (``passes``), the instances of an evaluation, the blocks of a
chain or segment evaluation — ``check`` it at their safe points and raise
``Stopped`` when it gives a reason — ``GRACE`` seconds after the rule
first gives it, so that a trainer with short iterations still stops where
it always did, after an iteration, asking the rule itself.  The trainer
catches ``Stopped`` and ends at the last finished iteration, as if its rule
had been asked after that iteration.  Outside a training run nothing is installed and
``check`` costs one global read.

``Interrupted`` is what the command line raises for a signal that comes
while nothing can stop cleanly at a safe point — reading the data,
extracting features, encoding: nothing has been written, so the run ends
there (``fgl.cli.train``).
"""
from __future__ import annotations

import contextlib
import signal
import time
from typing import Callable, Iterator

Rule = Callable[[], "str | None"]

_rule: Rule | None = None


class Stopped(Exception):
    """A computation ended early at a safe point because the training run's
    stopping rule gave ``reason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Interrupted(KeyboardInterrupt):
    """A signal ended the run before training began; ``status`` is the exit
    status (128 + the signal's number)."""

    def __init__(self, signum: int, when: str):
        self.signum = signum
        self.status = 128 + int(signum)
        name = signal.Signals(signum).name
        super().__init__(f"{name} {when}: stopped; nothing was written")


GRACE = 1.0   # seconds a reason waits for the trainer's own safe point before ``check`` acts


def patient(rule: Rule, grace: float = GRACE) -> Rule:
    """``rule``, but giving its reason only ``grace`` seconds after it first
    gave one: a trainer whose iterations are short still stops where it
    always did, after the iteration (asking ``rule`` itself), and only an
    evaluation that would run on is ended inside."""
    first: list[float] = []

    def ask() -> str | None:
        reason = rule()
        if not reason:
            return None
        now = time.perf_counter()
        if not first:
            first.append(now)
        return reason if now - first[0] >= grace else None
    return ask


@contextlib.contextmanager
def watching(rule: Rule | None, grace: float = GRACE) -> Iterator[None]:
    """``rule`` (made ``patient``) is the stopping rule ``check`` asks while
    the block runs (None: none); the previous one is back afterwards."""
    global _rule
    before, _rule = _rule, (None if rule is None else patient(rule, grace))
    try:
        yield
    finally:
        _rule = before


def active() -> bool:
    """Whether a training run's stopping rule is installed."""
    return _rule is not None


def poll() -> str | None:
    """The installed rule's reason to stop, if any."""
    rule = _rule
    return rule() if rule is not None else None


def check() -> None:
    """Raise ``Stopped`` when the installed rule gives a reason."""
    rule = _rule
    if rule is not None:
        reason = rule()
        if reason:
            raise Stopped(reason)


FIRST_CHUNK = 64     # passes before the first look at the stopping rule
CHUNK_SECONDS = 0.25  # about how long a chunk of passes may run before the next look


def passes(run: Callable[[int], tuple], max_iter: int, tol: float) -> tuple:
    """Run an iterative kernel for at most ``max_iter`` passes in chunks,
    asking the stopping rule between chunks.  ``run(n)`` runs at most ``n``
    passes from where the previous call left its state and returns
    ``(passes run, residual, ...)`` — a further ``ok`` item, when there,
    False for a failure; it is done when the residual is below ``tol``, it
    ran fewer passes than asked, or it failed.  Returns ``run``'s last tuple
    with the passes of every chunk added up: the same result as one call
    ``run(max_iter)``, since a pass reads only the state the last one left."""
    if _rule is None:          # (nothing could stop it: one call)
        return run(max_iter)
    total, size = 0, FIRST_CHUNK
    while True:
        n = min(size, max_iter - total)
        t0 = time.perf_counter()
        out = run(n)
        total += int(out[0])
        if (int(out[0]) < n or not out[1] >= tol or (len(out) > 2 and not out[2])
                or total >= max_iter):
            return (total, *out[1:])
        check()
        took = time.perf_counter() - t0
        if took < CHUNK_SECONDS / 2:
            size *= 2
        elif took > CHUNK_SECONDS * 2:
            size = max(1, size // 2)
