"""The averaged structured perceptron, over any program's MAP decoding.

Collins (2002), "Discriminative training methods for hidden Markov
models", Fig. 1 and §2.5 (averaging): for each training instance in turn,
decode it with the current weights (Viterbi for chains, the semi-Markov
Viterbi of Cuong et al. 2014 §2 for segment models, max-product for
factor graphs — each engine's own ``decode``) and, when the decoding is
not the gold one, add the gold feature counts and subtract the decoded
ones.  The weights returned are the average of the weights after every
instance, computed lazily (the bookkeeping of Daumé 2006's averaged
perceptron: keep w and u = Σ_t t·Δ_t; after S steps from w₀ the average
is ((S + 1)·w − w₀ − u) / S).  Instances are visited in a shuffled
order, the same for every run (seed 0), and an epoch without mistakes
ends training (the data are separated).

With ``batch`` > 1 the update is the summed correction of a run of that
many instances decoded with the same weights (a mini-batch perceptron: the
same fixed points, far fewer weight updates for models with many
features).  Models with hidden variables are refused: their perceptron
(decode the hidden ones given the gold ones) is not implemented.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from fgl import stopping
from fgl.errors import FglError
from fgl.learn.learner import TrainingLog

SEED = 0


def train_perceptron(program, data, *, epochs: int = 10, batch: int = 1,
                     w0: np.ndarray | None = None,
                     progress: Callable[[dict], None] | None = None,
                     should_stop: Callable[[], str | None] | None = None
                     ) -> tuple[np.ndarray, TrainingLog]:
    """Averaged perceptron weights for ``program`` on ``data`` (module
    docstring) after at most ``epochs`` passes.  ``progress`` receives one
    row per epoch: iteration (the epoch), mistakes (runs of ``batch``
    instances decoded wrongly), instances and seconds.  ``should_stop`` as
    for ``train_lbfgs``, asked after every run of ``batch`` instances (and
    by BP inside a decoding: ``fgl.stopping``); a stop inside an epoch keeps
    the updates so far, and that epoch's row counts the instances seen."""
    if program.has_hidden:
        raise FglError("trainer perceptron: this model has hidden variables; the latent "
                       "perceptron is not implemented — use trainer = lbfgs")
    n = data.n_sequences
    runs = [(i, min(i + batch, n)) for i in range(0, n, batch)]
    w = np.zeros(program.n_features) if w0 is None else np.array(w0, dtype=np.float64)
    first, u = w.copy(), np.zeros_like(w)
    steps = 1
    rng = np.random.default_rng(SEED)
    log, start = TrainingLog(), time.perf_counter()
    with stopping.watching(should_stop):   # (BP inside a decoding asks it too)
        for epoch in range(1, epochs + 1):
            mistakes, reason, seen = 0, None, 0
            for k in rng.permutation(len(runs)):
                try:
                    delta = program.mistakes(w, data, *runs[k])
                except stopping.Stopped as e:   # (inside a decoding: fgl.stopping)
                    reason = e.reason
                    break
                if delta is not None:
                    mistakes += 1
                    w += delta
                    u += steps * delta
                steps += 1
                seen += runs[k][1] - runs[k][0]
                reason = stopping.poll()   # (an epoch can be long: asked after every run)
                if reason:
                    break
            # (a stop inside an epoch keeps the updates so far: any step's average is a model)
            row = {"iteration": epoch, "mistakes": mistakes, "instances": seen if reason else n,
                   "seconds": time.perf_counter() - start}
            log.iterations.append(row)
            if progress is not None:
                progress(row)
            if reason:
                log.message = reason
                break
            if mistakes == 0:
                log.message, log.converged = f"epoch {epoch} made no mistakes", True
                break
            reason = should_stop() if should_stop is not None else None
            if reason:   # (after every epoch; inside one, ``poll`` above, a second later)
                log.message = reason
                break
        else:
            log.message = f"reached the epoch limit ({epochs})"
    log.seconds = time.perf_counter() - start
    log.objective = float(log.iterations[-1]["mistakes"]) if log.iterations else 0.0
    if steps == 1:
        return w, log
    return (steps * w - first - u) / (steps - 1), log
