"""log Z(x) of every sequence of a batch, in one kernel call per run of
sequences: each sequence's potentials and its forward pass in the
log-sum-exp semiring over the span lattice (``span_lattice.forward``; Ye et
al. 2009 §3.1.2, Cuong et al. 2014 §2.2), log Z = log Σ_q α(T, q).  What
``CRF.log_partition`` and each labelling's probability (``fgl.labellings``)
read, with no feature counts made (an evaluation's expected counts cost a
vector of every feature per call)."""
from __future__ import annotations

import numpy as np

from fgl.engines.sequence import span_lattice
from fgl.engines.sequence.encoded import EncodedData, run_parallel
from fgl.engines.sequence.nbest import chain_sequence_potentials, segment_sequence_potentials
from fgl.jit import njit


@njit(cache=True, nogil=True)
def batch_chain_log_z(i0, i1, units, features, tables, scoring, out):
    """log Z of chain sequences i0..i1-1 into ``out[i]``."""
    n = tables.n_labels
    lab = np.empty(n)
    cnt = span_lattice.label_counts(np.ones(n, dtype=np.int64), 1)
    work = span_lattice.workspace(span_lattice.longest(units.seq_ptr, i0, i1), 1, tables)
    for i in range(i0, i1):
        _, T, pot = chain_sequence_potentials(i, units, features, tables, scoring, lab)
        span_lattice.span_scores(pot.reshape((T, 1, pot.shape[1])), T, tables, cnt, False,
                                 work.psi)
        span_lattice.forward(T, tables, cnt, False, work)
        out[i] = span_lattice.logsumexp_row(work.alpha[T])


@njit(cache=True, nogil=True)
def batch_segment_log_z(i0, i1, span_limits, units, features, tables, scoring, out):
    """log Z of sequences i0..i1-1 of a segment program (spans as
    ``span_limits`` says, labels numbered by their limits' order) into
    ``out[i]``."""
    limits, distinct = span_limits.max_len, span_limits.distinct
    lab = np.empty(tables.n_labels)
    work = span_lattice.workspace(span_lattice.longest(units.seq_ptr, i0, i1),
                                  span_limits.longest, tables)
    for i in range(i0, i1):
        _, T, pot = segment_sequence_potentials(i, span_limits, units, features, tables, scoring,
                                                lab)
        cnt = span_lattice.label_counts(limits, pot.shape[1])
        span_lattice.span_scores(pot, T, tables, cnt, distinct, work.psi)
        span_lattice.forward(T, tables, cnt, False, work)
        out[i] = span_lattice.logsumexp_row(work.alpha[T])


def batch_log_z(data: EncodedData, jobs: int, kernel) -> np.ndarray:
    """log Z of every sequence of ``data`` by ``kernel(i0, i1, out)`` (a
    kernel above with the program's arguments bound), over runs of
    sequences, one thread each."""
    out = np.zeros(data.n_sequences)
    run_parallel(jobs, data, lambda i0, i1: kernel(i0, i1, out))
    return out
