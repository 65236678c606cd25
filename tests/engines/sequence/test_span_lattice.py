"""The shared span kernel (``fgl.engines.sequence.span_lattice``) against the chain engine's
fast paths: one algorithm, several implementations, which must agree.

At L = 1 the span kernel is the exact log-space chain recursion.  The chain
engine's training paths — the scaled path (``_scaled_sequence``) and the
factored path (``_factored_sequence``, taken when only single labels vary
with t), Sutton & McCallum §1.4.6 — compute the same log Z and transition
marginals on scaled vectors and return NaN when that would not be exact.
On random pattern sets and random models, from small potentials to
|pot| ~ 1e3 (where the fast paths must give up), every value a fast path
returns must equal the span kernel's (sum semiring).  In the max semiring
the span kernel's MAP labelling must score what it claims and match an
explicit n^k-state dynamic programme (``brute_force.chain_dense_dp``), and
spans of length > 1 that the label limits forbid must change nothing; a
label's limit must act as a -inf potential on its longer spans.
``batch_expectations`` (feature scoring, dense rows, constant rows, path
choice and fallback together) is checked the same way on random encoded
data through ``ChainProgram``, and the semi-Markov engine's (span units,
per-label limits, `adjacent distinct`, its own label numbering) through
``SegmentProgram``.  At |w| up to some 1e3 (weak priors in training) both
programs' expected counts and token marginals must equal exhaustive
enumeration (``support.brute_force``), whichever path each sequence takes.
"""
from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from support.brute_force import (
    chain_brute_force,
    chain_dense_dp,
    chain_score,
    semimarkov_brute_force,
)

from fgl.engines.sequence import chain, chain_program, scaling, segments, span_lattice
from fgl.engines.sequence.chain_program import ChainProgram
from fgl.engines.sequence.encoded import EncodedData
from fgl.engines.sequence.segments_program import SegmentProgram
from fgl.engines.sequence.structure import ChainStructure

RTOL, ATOL = 1e-9, 1e-12
SCALES = [0.1, 1.0, 5.0, 30.0, 100.0, 300.0, 1000.0]
EXTREME = [100.0, 300.0, 1000.0]  # weights under weak priors: the fast paths' limits
SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def models(draw, max_n=4, max_T=8, max_len=4, max_extra=8):
    """(n, patterns, pot [T, |Z|], static): singles plus distinct extra
    patterns, sometimes shuffled; potentials N(0, scale²).  ``static[z]``
    marks a pattern longer than one label whose potential is the same at
    every t (all of them, some, or none)."""
    n = draw(st.integers(1, max_n))
    T = draw(st.integers(1, max_T))
    labels = st.integers(0, n - 1)
    pattern = st.integers(2, max_len).flatmap(
        lambda m: st.lists(labels, min_size=m, max_size=m).map(tuple))
    patterns = [(a,) for a in range(n)] + list(dict.fromkeys(
        draw(st.lists(pattern, max_size=max_extra))))
    if draw(st.booleans()):
        patterns = list(draw(st.permutations(patterns)))
    scale = draw(st.sampled_from(SCALES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pot = rng.normal(0.0, scale, (T, len(patterns)))
    longer = np.array([len(z) > 1 for z in patterns])
    mode = draw(st.sampled_from(["dynamic", "mixed", "static"]))
    static = longer & ({"dynamic": 0.0, "mixed": 0.5, "static": 1.0}[mode]
                       > rng.random(len(patterns)))
    pot[:, static] = pot[0, static]
    return n, patterns, pot, static


def span_sum(st_: ChainStructure, pot: np.ndarray) -> tuple[float, np.ndarray]:
    """log Z and accumulated transition marginals [T, S] from the span kernel at L = 1."""
    T = pot.shape[0]
    work = span_lattice.workspace(T, 1, st_.tables)
    log_z = span_lattice.sequence_marginals(np.ascontiguousarray(pot[:, None, :]), T, st_.tables,
                                            np.ones(st_.n_labels, dtype=np.int64), work)
    return log_z, work.marg[:, 0, :].copy()


def span_max(st_: ChainStructure, pot: np.ndarray, L: int = 1) -> tuple[np.ndarray, float]:
    """The span kernel's MAP labelling and score with every label limited to
    spans of one token; potentials of longer spans (L > 1) are huge, so
    reading them would change the answer."""
    T, n_z = pot.shape
    pot3 = np.full((T, L, n_z), 1e6)
    pot3[:, 0, :] = pot
    labels = np.empty(T, dtype=np.int64)
    starts = np.empty(T, dtype=np.int64)
    best = span_lattice.viterbi(pot3, T, st_.tables, np.ones(st_.n_labels, dtype=np.int64),
                                span_lattice.workspace(T, L, st_.tables), labels, starts)
    np.testing.assert_array_equal(starts, 1)
    return labels, best


def magnitude(pot: np.ndarray) -> float:
    return ATOL * max(1.0, float(np.abs(pot).sum()))


# --------------------------------------------------------------------------
# sum semiring: the scaled and the factored path


@settings(max_examples=400, **SLOW)
@given(models())
def test_scaled_path_equals_span_kernel(model):
    n, patterns, pot, static = model
    st_ = ChainStructure.build(n, patterns)
    T, S = pot.shape[0], st_.n_backward
    log_z, marg = span_sum(st_, pot)
    fast_pot = pot.copy()
    fast_pot[:, static] = np.nan  # the scaled path must not read static patterns
    sc = scaling.static_tables(np.where(static, pot[0], 0.0), ~static, st_.tables)
    P = st_.n_forward
    alpha, beta = np.empty((T + 1, P)), np.empty((T + 1, P))
    fast_marg = np.empty((T, S))
    fast_z = chain._scaled_sequence(fast_pot, st_.tables, sc, np.empty((T, S)), alpha, beta,
                                    np.empty(T), fast_marg)
    if np.abs(pot).max() < 5.0:
        assert np.isfinite(fast_z)  # moderate potentials stay on the fast path
    event("scaled path exact" if np.isfinite(fast_z) else "scaled path gave up")
    if np.isfinite(fast_z):
        np.testing.assert_allclose(fast_z, log_z, rtol=RTOL, atol=magnitude(pot))
        np.testing.assert_allclose(fast_marg, marg, rtol=RTOL, atol=ATOL)
    # the public API (scaled path, or the span kernel where it is not exact)
    api_z, api_marg = chain.pattern_marginals(st_, pot)
    np.testing.assert_allclose(api_z, log_z, rtol=RTOL, atol=magnitude(pot))
    np.testing.assert_allclose(api_marg, marg[:, st_.pattern_s], rtol=RTOL, atol=ATOL)


@settings(max_examples=400, **SLOW)
@given(models())
def test_factored_path_equals_span_kernel(model):
    """Longer patterns static: label marginals and the expected number of
    times each transition is taken, Σ_t P(s suffix of y_{1:t}), agree."""
    n, patterns, pot, _ = model
    longer = np.array([len(z) > 1 for z in patterns])
    pot[:, longer] = pot[0, longer]
    st_ = ChainStructure.build(n, patterns)
    tables = st_.tables
    T, S, P = pot.shape[0], st_.n_backward, st_.n_forward
    log_z, marg = span_sum(st_, pot)
    sc = scaling.static_tables(np.where(longer, pot[0], 0.0), ~longer, tables)
    assert not sc.block_dynamic[1:].any()
    if P > 1 and sc.cum_hi[1:].max() > np.exp(scaling.MAX_EXPONENT):
        event("factored path not taken")
        return  # the batch kernel takes the scaled path (tested above)
    cum = scaling.static_cumulative(sc.static_exp, tables)
    c_lo = min(1.0, sc.cum_lo[1:].min()) if P > 1 else 1.0
    fast_pot = pot.copy()
    fast_pot[:, longer] = np.nan  # read from ``cum``, never from pot
    lab_marg = np.empty((T, n))
    taken = np.zeros(S)
    cum_t = chain.first_order_factors(tables, cum)
    work = chain.FactoredScratch(np.empty((T, n)), np.empty(T), np.empty((T + 1, P)),
                                 np.empty((T + 1, P)), np.empty(T), np.empty((T, P)), lab_marg,
                                 chain.taken_scratch(T, tables, cum_t))
    fast_z = chain._factored_sequence(fast_pot, tables, cum, cum_t, c_lo, work, taken)
    if np.abs(pot).max() < 5.0:
        assert np.isfinite(fast_z)
    event("factored path exact" if np.isfinite(fast_z) else "factored path gave up")
    if np.isfinite(fast_z):
        np.testing.assert_allclose(fast_z, log_z, rtol=RTOL, atol=magnitude(pot))
        np.testing.assert_allclose(lab_marg, marg[:, :n], rtol=RTOL, atol=ATOL)
        taken *= cum
        span_lattice.accumulate_up(taken, tables.p_suffix, tables.p_order, n)
        np.testing.assert_allclose(taken, marg.sum(axis=0), rtol=RTOL, atol=1e-10)
    else:
        np.testing.assert_array_equal(taken, 0.0)  # untouched when it gives up


def factored_log_z(st_: ChainStructure, pot: np.ndarray) -> float:
    """``chain._factored_sequence``'s log Z of ``pot`` (patterns longer than
    one label read from its first row, as static potentials)."""
    tables = st_.tables
    T, n, P = pot.shape[0], st_.n_labels, st_.n_forward
    longer = np.array([len(z) > 1 for z in st_.patterns])
    sc = scaling.static_tables(np.where(longer, pot[0], 0.0), ~longer, tables)
    cum = scaling.static_cumulative(sc.static_exp, tables)
    c_lo = min(1.0, sc.cum_lo[1:].min())
    cum_t = chain.first_order_factors(tables, cum)
    work = chain.FactoredScratch(np.empty((T, n)), np.empty(T), np.empty((T + 1, P)),
                                 np.empty((T + 1, P)), np.empty(T), np.empty((T, P)),
                                 np.empty((T, n)), chain.taken_scratch(T, tables, cum_t))
    return chain._factored_sequence(pot, tables, cum, cum_t, c_lo, work, np.zeros(P * n))


@pytest.mark.parametrize("transition", [-6.0, 6.0])
def test_factored_path_exact_when_scales_leave_a_running_product_range(transition):
    """The factored path multiplies its scales and logs the product only when
    it leaves [1/LOG_BAND, LOG_BAND]: over 3000 tokens whose every scale is
    about exp(±6) the product would overflow (or underflow) many times over,
    and log Z must still be the span kernel's."""
    n = 3
    patterns = [(y,) for y in range(n)] + list(itertools.product(range(n), repeat=2))
    st_ = ChainStructure.build(n, patterns)
    rng = np.random.default_rng(7)
    pot = rng.normal(0.0, 1.0, (3000, len(patterns)))
    pot[:, n:] = transition + rng.normal(0.0, 0.1, len(patterns) - n)  # static transitions
    log_z, _ = span_sum(st_, pot)
    assert abs(log_z) > 3000 * 4.0  # far outside [1/LOG_BAND, LOG_BAND]
    fast_z = factored_log_z(st_, pot)
    assert np.isfinite(fast_z)
    np.testing.assert_allclose(fast_z, log_z, rtol=1e-12)


def test_vectorised_exp_within_an_ulp_of_libm():
    """``chain._exps`` (the factored path's exponentials) against numpy's exp
    on [-708, 0]; NaN stays NaN (the range checks then reject the sequence)
    and values below -708 give exp(-708)."""
    rng = np.random.default_rng(3)
    x = np.concatenate([-rng.random(20000) * 708.0, -rng.random(2000) * 1e-3,
                        [0.0, -0.0, -708.0, -1e-300, -np.log(2.0) / 2, -745.0, np.nan]])
    got = x.copy()
    chain._exps(got)
    want = np.exp(np.maximum(x[:-1], -708.0))
    np.testing.assert_allclose(got[:-1], want, rtol=2.3e-16, atol=0.0)
    assert np.isnan(got[-1])


# --------------------------------------------------------------------------
# max semiring


@settings(max_examples=300, **SLOW)
@given(models(max_n=3, max_T=8), st.integers(2, 3))
def test_max_semiring(model, L):
    n, patterns, pot, _ = model
    st_ = ChainStructure.build(n, patterns)
    labels, best = span_max(st_, pot)
    atol = 10 * magnitude(pot)
    np.testing.assert_allclose(chain_score(patterns, pot, labels), best, rtol=RTOL, atol=atol)
    _, dense_best = chain_dense_dp(n, patterns, pot)
    np.testing.assert_allclose(best, dense_best, rtol=RTOL, atol=atol)
    chain_labels, chain_best = chain.viterbi(st_, pot)
    np.testing.assert_array_equal(chain_labels, labels)
    assert chain_best == best
    # forbidden longer spans change nothing (the same tie-breaking too)
    long_labels, long_best = span_max(st_, pot, L)
    np.testing.assert_array_equal(long_labels, labels)
    assert long_best == best


@settings(max_examples=150, **SLOW)
@given(models(max_n=3, max_T=6), st.integers(2, 3))
def test_forbidden_longer_spans_leave_sums_unchanged(model, L):
    n, patterns, pot, _ = model
    st_ = ChainStructure.build(n, patterns)
    T = pot.shape[0]
    log_z, marg = span_sum(st_, pot)
    pot3 = np.full((T, L, len(patterns)), 1e6)
    pot3[:, 0, :] = pot
    work = span_lattice.workspace(T, L, st_.tables)
    got = span_lattice.sequence_marginals(pot3, T, st_.tables, np.ones(n, dtype=np.int64), work)
    assert got == pytest.approx(log_z, rel=RTOL, abs=magnitude(pot))
    np.testing.assert_allclose(work.marg[:, 0, :], marg, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(work.marg[:, 1:, :], 0.0)


@settings(max_examples=150, **SLOW)
@given(models(max_n=3, max_T=6), st.integers(2, 3), st.data())
def test_label_length_limits_equal_forbidding_potentials(model, L, data):
    """Per-label limits (Cuong et al. 2014 §2) give what a -inf potential on
    every too-long span of the label gives."""
    n, patterns, _, _ = model
    st_ = ChainStructure.build(n, patterns)
    T = data.draw(st.integers(1, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    pot = rng.normal(0.0, 2.0, (T, L, len(patterns)))
    # the kernels number labels by non-increasing limit
    limits = np.array(sorted((data.draw(st.integers(1, L)) for _ in range(n)), reverse=True),
                      dtype=np.int64)
    forbidden = pot.copy()
    for y in range(n):
        forbidden[:, limits[y]:, patterns.index((y,))] = -np.inf
    everything = np.full(n, L, dtype=np.int64)
    runs = []
    for p, lim in [(pot, limits), (forbidden, everything)]:
        work = span_lattice.workspace(T, L, st_.tables)
        log_z = span_lattice.sequence_marginals(p, T, st_.tables, lim, work)
        labels, starts = np.empty(T, dtype=np.int64), np.empty(T, dtype=np.int64)
        best = span_lattice.viterbi(p, T, st_.tables, lim,
                                    span_lattice.workspace(T, L, st_.tables), labels, starts)
        runs.append((log_z, work.marg.copy(), labels, starts, best))
    (z1, m1, l1, s1, b1), (z2, m2, l2, s2, b2) = runs
    assert z1 == pytest.approx(z2, rel=RTOL, abs=magnitude(pot))
    np.testing.assert_allclose(m1, m2, rtol=RTOL, atol=ATOL)
    assert b1 == pytest.approx(b2, rel=RTOL, abs=magnitude(pot))
    np.testing.assert_array_equal(l1, l2)
    np.testing.assert_array_equal(s1, s2)


# --------------------------------------------------------------------------
# the batch kernel through ChainProgram


@contextlib.contextmanager
def dense_budget(n_bytes: int):
    saved = chain_program.DENSE_BYTES
    chain_program.DENSE_BYTES = n_bytes
    try:
        yield
    finally:
        chain_program.DENSE_BYTES = saved


@st.composite
def programs(draw, scales=SCALES):
    """A random feature table over a random pattern set: row 0 constant
    (bias, every single label), row 1 constant (every longer pattern), then
    per-token rows over random patterns (single labels only, unless
    ``observed``); random sequences of rows with random values, weights
    N(0, s²) for s from ``scales``."""
    n, patterns, _, _ = draw(models(max_n=3, max_T=1, max_extra=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    observed = draw(st.booleans())
    singles = [patterns.index((a,)) for a in range(n)]
    longer = [i for i, z in enumerate(patterns) if len(z) > 1]
    rows = [singles, longer]
    for _ in range(draw(st.integers(1, 6))):
        pool = singles + (longer if observed else [])
        rows.append(sorted(rng.choice(pool, size=rng.integers(1, len(pool) + 1),
                                      replace=False).tolist()))
    row_ptr = np.cumsum([0] + [len(r) for r in rows])
    feat_pattern = np.array([z for r in rows for z in r], dtype=np.int64)
    lengths = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
    seq_ptr = np.cumsum([0] + lengths)
    per_token = rng.integers(0, 3, size=seq_ptr[-1])
    tok_ptr = np.cumsum(np.concatenate([[0], per_token]))
    tok_row = rng.integers(2, len(rows), size=tok_ptr[-1]).astype(np.int32)
    tok_val = rng.choice([1.0, 0.5, -2.0], size=tok_ptr[-1])
    data = EncodedData(seq_ptr, tok_ptr, tok_row, tok_val, None)
    scale = draw(st.sampled_from(scales))
    w = rng.normal(0.0, scale, len(feat_pattern))
    dense = draw(st.sampled_from([0, 1 << 19]))
    return n, patterns, row_ptr, feat_pattern, data, w, dense


def token_potentials(problem, i: int) -> np.ndarray:
    """pot[t, z] of sequence ``i`` of a ``programs`` problem, feature by feature."""
    n, patterns, row_ptr, feat_pattern, data, w, _ = problem
    a, b = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1])
    pot = np.zeros((b - a, len(patterns)))
    pot += np.bincount(feat_pattern[row_ptr[0]:row_ptr[2]], w[:row_ptr[2]],
                       minlength=len(patterns))
    for t in range(b - a):
        for j in range(data.tok_ptr[a + t], data.tok_ptr[a + t + 1]):
            for k in range(row_ptr[data.tok_row[j]], row_ptr[data.tok_row[j] + 1]):
                pot[t, feat_pattern[k]] += data.tok_val[j] * w[k]
    return pot


def add_token_counts(problem, i: int, marg: np.ndarray, counts: np.ndarray) -> None:
    """Add sequence ``i``'s expected feature counts to ``counts``, from
    ``marg[t, z]`` = P(pattern z ends at token t)."""
    n, patterns, row_ptr, feat_pattern, data, w, _ = problem
    a = int(data.seq_ptr[i])
    for t in range(marg.shape[0]):
        counts[:row_ptr[2]] += marg[t, feat_pattern[:row_ptr[2]]]
        for j in range(data.tok_ptr[a + t], data.tok_ptr[a + t + 1]):
            for k in range(row_ptr[data.tok_row[j]], row_ptr[data.tok_row[j] + 1]):
                counts[k] += data.tok_val[j] * marg[t, feat_pattern[k]]


@settings(max_examples=300, **SLOW)
@given(programs())
def test_batch_expectations_equal_span_kernel(problem):
    n, patterns, row_ptr, feat_pattern, data, w, dense = problem
    st_ = ChainStructure.build(n, patterns)
    with dense_budget(dense):
        program = ChainProgram(st_, row_ptr, feat_pattern, np.array([0, 1]))
    got = program.expectations(w, data, 1)
    total = 0.0
    counts = np.zeros(len(w))
    for i in range(data.n_sequences):
        pot = token_potentials(problem, i)
        log_z, marg = span_sum(st_, pot)
        total += log_z
        add_token_counts(problem, i, marg[:, st_.pattern_s], counts)
    mag = ATOL * max(1.0, float(np.abs(w).sum()) * 3 * data.n_tokens)
    assert got.log_z == pytest.approx(total, rel=RTOL, abs=mag)
    np.testing.assert_allclose(got.counts, counts, rtol=RTOL, atol=1e-10)


@st.composite
def span_programs(draw, scales=SCALES):
    """A random feature table over span units: as ``programs`` (rows 0 and
    1 constant), per-label limits in 1..3 (L their largest), m >= L units
    per token, `adjacent distinct` sometimes; random rows on every span a
    sequence holds, weights N(0, s²) for s from ``scales``."""
    n, patterns, _, _ = draw(models(max_n=3, max_T=1, max_extra=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    observed = draw(st.booleans())  # longer patterns on per-span rows: the general path
    singles = [patterns.index((a,)) for a in range(n)]
    longer = [i for i, z in enumerate(patterns) if len(z) > 1]
    rows = [singles, longer]
    for _ in range(draw(st.integers(1, 6))):
        pool = singles + (longer if observed else [])
        rows.append(sorted(rng.choice(pool, size=rng.integers(1, len(pool) + 1),
                                      replace=False).tolist()))
    row_ptr = np.cumsum([0] + [len(r) for r in rows])
    feat_pattern = np.array([z for r in rows for z in r], dtype=np.int64)
    limits = np.array(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    L = int(limits.max())
    m = L + draw(st.integers(0, 1))
    distinct = n > 1 and draw(st.booleans())
    lengths = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
    seq_ptr = np.cumsum([0] + lengths)
    per_unit = np.zeros(seq_ptr[-1] * m, dtype=np.int64)
    for a, b in zip(seq_ptr, seq_ptr[1:]):
        for u in range(b - a):
            for dm in range(min(L, b - a - u)):
                per_unit[(a + u) * m + dm] = rng.integers(0, 3)
    tok_ptr = np.cumsum(np.concatenate([[0], per_unit]))
    tok_row = rng.integers(2, len(rows), size=tok_ptr[-1]).astype(np.int32)
    tok_val = rng.choice([1.0, 0.5, -2.0], size=tok_ptr[-1])
    data = EncodedData(seq_ptr, tok_ptr, tok_row, tok_val, None, None, m)
    w = rng.normal(0.0, draw(st.sampled_from(scales)), len(feat_pattern))
    return n, patterns, row_ptr, feat_pattern, limits, distinct, data, w


def span_potentials(problem, i: int) -> np.ndarray:
    """pot[u, d-1, z] of sequence ``i`` of a ``span_programs`` problem
    (d up to the largest limit), feature by feature."""
    n, patterns, row_ptr, feat_pattern, limits, distinct, data, w = problem
    a, b = int(data.seq_ptr[i]), int(data.seq_ptr[i + 1])
    m, L = data.units_per_token, int(limits.max())
    pot = np.zeros((b - a, L, len(patterns)))
    pot += np.bincount(feat_pattern[row_ptr[0]:row_ptr[2]], w[:row_ptr[2]],
                       minlength=len(patterns))
    for u in range(b - a):
        for dm in range(min(L, b - a - u)):
            k = (a + u) * m + dm
            for j in range(data.tok_ptr[k], data.tok_ptr[k + 1]):
                for f in range(row_ptr[data.tok_row[j]], row_ptr[data.tok_row[j] + 1]):
                    pot[u, dm, feat_pattern[f]] += data.tok_val[j] * w[f]
    return pot


def add_span_counts(problem, i: int, marg: np.ndarray, counts: np.ndarray) -> None:
    """Add sequence ``i``'s expected feature counts to ``counts``, from
    ``marg[u, d-1, z]`` = P(span (u, d) is a segment and pattern z ends there)."""
    n, patterns, row_ptr, feat_pattern, limits, distinct, data, w = problem
    a = int(data.seq_ptr[i])
    T, m = marg.shape[0], data.units_per_token
    for u in range(T):
        for dm in range(min(marg.shape[1], T - u)):
            k = (a + u) * m + dm
            counts[:row_ptr[2]] += marg[u, dm, feat_pattern[:row_ptr[2]]]
            for j in range(data.tok_ptr[k], data.tok_ptr[k + 1]):
                for f in range(row_ptr[data.tok_row[j]], row_ptr[data.tok_row[j] + 1]):
                    counts[f] += data.tok_val[j] * marg[u, dm, feat_pattern[f]]


def segments_program(problem) -> SegmentProgram:
    n, patterns, row_ptr, feat_pattern, limits, distinct, _, _ = problem
    return SegmentProgram(ChainStructure.build(n, patterns), row_ptr, feat_pattern, limits,
                          np.array([0, 1]), distinct)


# issue 47: a fresh clone's falsifying example.  One label, whose bias (1187.3) makes every
# token a segment; every static factor along the suffix chain, down to exp(-532.7), is in
# the factored path's range, and the counts ([6, 2, 4, 2.5]) came out NaN: a span's weight
# (about exp(532.7)) times β̂ of a state the forward pass never reaches overflowed, times 0.
ISSUE_47 = (1, [(0,), (0, 0, 0, 0), (0, 0)], np.array([0, 1, 3, 4]), np.array([0, 1, 2, 0]),
            np.array([1]), False,
            EncodedData(np.array([0, 1, 6]), np.array([0, 2, 2, 2, 3, 3, 3]),
                        np.array([2, 2, 2], dtype=np.int32), np.array([1.0, 0.5, 1.0]), None,
                        None, 1),
            np.array([1187.3, 217.5, -532.7, -1528.4]))


@settings(max_examples=300, **SLOW)
@given(span_programs())
@example(ISSUE_47)
def test_segments_batch_expectations_equal_span_kernel(problem):
    n, patterns, row_ptr, feat_pattern, limits, distinct, data, w = problem
    got = segments_program(problem).expectations(w, data, 1)
    order = segments.label_order(limits)
    est = segments.engine_structure(ChainStructure.build(n, patterns), order)
    L = int(limits.max())
    total = 0.0
    counts = np.zeros(len(w))
    for i in range(data.n_sequences):
        T = int(data.seq_ptr[i + 1] - data.seq_ptr[i])
        if T == 0:
            continue
        work = span_lattice.workspace(T, L, est.tables)
        total += span_lattice.sequence_marginals(span_potentials(problem, i), T, est.tables,
                                                 limits[order], work, distinct)
        add_span_counts(problem, i, work.marg[:, :, est.pattern_s], counts)
    mag = ATOL * max(1.0, float(np.abs(w).sum()) * 3 * data.n_tokens * L)
    assert got.log_z == pytest.approx(total, rel=RTOL, abs=mag)
    np.testing.assert_allclose(got.counts, counts, rtol=RTOL, atol=1e-10)


# --------------------------------------------------------------------------
# both programs at extreme weights against enumeration


@settings(max_examples=100, **SLOW)
@given(programs(scales=EXTREME))
def test_chain_program_at_extreme_weights_equals_brute_force(problem):
    """Σ log Z, expected counts and the marginals of patterns 0..n-1 (a
    compiled model's single labels) of every sequence, whichever path each
    sequence takes."""
    n, patterns, row_ptr, feat_pattern, data, w, dense = problem
    with dense_budget(dense):
        program = ChainProgram(ChainStructure.build(n, patterns), row_ptr, feat_pattern,
                               np.array([0, 1]))
    got = program.expectations(w, data, 1)
    got_marg = program.marginals(w, data).per_instance
    total = 0.0
    counts = np.zeros(len(w))
    for i in range(data.n_sequences):
        pot = token_potentials(problem, i)
        if pot.shape[0] == 0:
            continue
        log_z, marg, _, _ = chain_brute_force(n, patterns, pot)
        total += log_z
        add_token_counts(problem, i, marg, counts)
        np.testing.assert_allclose(got_marg[i], marg[:, :n], rtol=RTOL, atol=1e-10)
    mag = ATOL * max(1.0, float(np.abs(w).sum()) * 3 * data.n_tokens)
    assert got.log_z == pytest.approx(total, rel=RTOL, abs=mag)
    np.testing.assert_allclose(got.counts, counts, rtol=RTOL, atol=1e-10)


@settings(max_examples=100, **SLOW)
@given(span_programs(scales=EXTREME))
@example(ISSUE_47)
def test_segments_program_at_extreme_weights_equals_brute_force(problem):
    """As the chain program's: per-label limits, `adjacent distinct`; token
    marginals P(token t lies in a segment where pattern z < n ends)."""
    n, patterns, row_ptr, feat_pattern, limits, distinct, data, w = problem
    program = segments_program(problem)
    got = program.expectations(w, data, 1)
    got_marg = program.marginals(w, data).per_instance
    L = int(limits.max())
    total = 0.0
    counts = np.zeros(len(w))
    for i in range(data.n_sequences):
        pot = span_potentials(problem, i)
        T = pot.shape[0]
        if T == 0:
            continue
        dense = {z: np.zeros((T, T)) for z in range(len(patterns))}
        for u in range(T):
            for dm in range(min(L, T - u)):
                for z in range(len(patterns)):
                    dense[z][u, u + dm] = pot[u, dm, z]
        log_z, b_marg, _, _ = semimarkov_brute_force(n, patterns, L, dense, limits, distinct)
        total += log_z
        marg = np.zeros_like(pot)   # [u, d-1, z]
        tok = np.zeros((T, n))
        for u in range(T):
            for dm in range(min(L, T - u)):
                marg[u, dm] = [b_marg[z][u, u + dm] for z in range(len(patterns))]
                tok[u:u + dm + 1] += marg[u, dm, :n]
        add_span_counts(problem, i, marg, counts)
        np.testing.assert_allclose(got_marg[i], tok, rtol=RTOL, atol=1e-10)
    mag = ATOL * max(1.0, float(np.abs(w).sum()) * 3 * data.n_tokens * L)
    assert got.log_z == pytest.approx(total, rel=RTOL, abs=mag)
    np.testing.assert_allclose(got.counts, counts, rtol=RTOL, atol=1e-10)
