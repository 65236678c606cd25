"""Obviously-correct exhaustive oracles for the exact engines.

These enumerate every labelling (chain, factor graph) or every segmentation
(semi-Markov) explicitly and are only meant for tiny problems (a few thousand structures).
They share no code with ``fgl.engines`` on purpose: every quantity is computed
straight from its definition, in float64, with a max-shifted log-sum-exp and
``math.fsum`` for the accumulations.

Conventions (0-based positions):

* chain: ``score(y) = sum_t sum_{z : t >= |z|-1, y[t-|z|+1..t] == z} pot[t, z]``;
  ``marginals[t, z] = P(y[t-|z|+1..t] == z)`` (0 when ``t < |z|-1``).
* semi-Markov: a segmentation is a list of consecutive segments ``(u, v, label)``
  covering ``0..T-1``, with ``1 <= v-u+1 <= L`` (and at most ``max_len[label]``
  when per-label limits are given); adjacent equal labels are allowed unless
  ``distinct`` (then no two adjacent segments share a label). Pattern ``z``
  fires at segment ``j`` when ``j >= |z|-1`` and the labels of segments
  ``j-|z|+1..j`` equal ``z``; it then contributes
  ``pot[z][u_j, v_j]``. ``marginals[z][u, v]`` is the probability that the
  segmentation contains the segment ``(u, v)`` exactly and the labels of the
  ``|z|`` segments ending with it equal ``z``.

* factor graph: factor f's table is row-major over its variables (first
  slowest); ``score(y) = sum_f log_pot[f][y_f]``.

Ties in the MAP are broken towards the first structure in enumeration order
(lexicographic labellings; for semi-Markov, compositions in lexicographic order
of segment lengths, then lexicographic labels).
"""

from __future__ import annotations

import itertools
import math
from typing import Dict, Iterator, List, Sequence, Tuple

import numpy as np

Pattern = Tuple[int, ...]


def _check_patterns(n_labels: int, patterns: Sequence[Sequence[int]]) -> List[Pattern]:
    pats = [tuple(int(a) for a in z) for z in patterns]
    for z in pats:
        if len(z) == 0:
            raise ValueError("empty pattern")
        for a in z:
            if not 0 <= a < n_labels:
                raise ValueError(f"label {a} out of range in pattern {z}")
    if len(set(pats)) != len(pats):
        raise ValueError("patterns must be distinct")
    return pats


def logsumexp(values: Sequence[float]) -> float:
    """Careful float64 log-sum-exp: shift by the max, sum exactly with fsum."""
    vals = [float(v) for v in values]
    if not vals:
        return -math.inf
    m = max(vals)
    if m == -math.inf:
        return -math.inf
    return m + math.log(math.fsum(math.exp(v - m) for v in vals))


# ----------------------------------------------------------------------------
# chain (segment length 1)
# ----------------------------------------------------------------------------

def chain_matches(patterns: Sequence[Pattern], y: Sequence[int]) -> List[Tuple[int, int]]:
    """All (t, k) such that pattern k ends at position t of labelling y."""
    out = []
    T = len(y)
    for t in range(T):
        for k, z in enumerate(patterns):
            m = len(z)
            if t >= m - 1 and tuple(y[t - m + 1:t + 1]) == z:
                out.append((t, k))
    return out


def chain_score(patterns: Sequence[Sequence[int]], pot: np.ndarray, y: Sequence[int]) -> float:
    """score(y) straight from the definition."""
    pats = [tuple(z) for z in patterns]
    pot = np.asarray(pot, dtype=np.float64)
    return math.fsum(float(pot[t, k]) for t, k in chain_matches(pats, list(y)))


def chain_enumerate(n_labels: int, patterns: Sequence[Sequence[int]], pot
                    ) -> Iterator[Tuple[Tuple[int, ...], float, List[Tuple[int, int]]]]:
    """Yield (labelling, score, matches) for every labelling in lexicographic order."""
    pats = _check_patterns(n_labels, patterns)
    pot = np.asarray(pot, dtype=np.float64)
    if pot.ndim != 2 or pot.shape[1] != len(pats):
        raise ValueError(f"pot must be [T, {len(pats)}], got {pot.shape}")
    T = pot.shape[0]
    for y in itertools.product(range(n_labels), repeat=T):
        matches = chain_matches(pats, y)
        score = math.fsum(float(pot[t, k]) for t, k in matches)
        yield y, score, matches


def chain_brute_force(n_labels: int, patterns: Sequence[Sequence[int]], pot):
    """Exhaustive chain inference.

    Returns ``(logZ, marginals [T, n_patterns], best_labels int64 [T], best_score)``.
    """
    pot = np.asarray(pot, dtype=np.float64)
    T, K = pot.shape
    items = list(chain_enumerate(n_labels, patterns, pot))
    scores = [s for _, s, _ in items]
    logZ = logsumexp(scores)

    acc: List[List[List[float]]] = [[[] for _ in range(K)] for _ in range(T)]
    for (_, s, matches) in items:
        p = math.exp(s - logZ)
        for t, k in matches:
            acc[t][k].append(p)
    marg = np.array([[math.fsum(acc[t][k]) for k in range(K)] for t in range(T)],
                    dtype=np.float64).reshape(T, K)

    best_i = max(range(len(items)), key=lambda i: (scores[i], -i))
    best_labels = np.array(items[best_i][0], dtype=np.int64)
    return logZ, marg, best_labels, scores[best_i]


def chain_all_scores(n_labels: int, patterns: Sequence[Sequence[int]], pot
                     ) -> Dict[Tuple[int, ...], float]:
    """{labelling: score} for every labelling (for margin / uniqueness checks)."""
    return {y: s for y, s, _ in chain_enumerate(n_labels, patterns, pot)}


# ----------------------------------------------------------------------------
# semi-Markov
# ----------------------------------------------------------------------------

def compositions(T: int, L: int) -> Iterator[Tuple[int, ...]]:
    """Ordered tuples of segment lengths in 1..L summing to T (lexicographic)."""
    if T == 0:
        yield ()
        return
    for d in range(1, min(L, T) + 1):
        for rest in compositions(T - d, L):
            yield (d,) + rest


def semimarkov_segmentations(n_labels: int, T: int, L: int,
                             max_len: Sequence[int] | None = None, distinct: bool = False
                             ) -> Iterator[List[Tuple[int, int, int]]]:
    """Every segmentation of 0..T-1 as a list of (u, v, label), 0-based
    inclusive: segments of at most L tokens (``max_len[label]`` for that
    label), no two adjacent ones with the same label when ``distinct``."""
    for comp in compositions(T, L):
        spans = []
        u = 0
        for d in comp:
            spans.append((u, u + d - 1))
            u += d
        for labs in itertools.product(range(n_labels), repeat=len(spans)):
            if max_len is not None and any(v - u + 1 > max_len[a]
                                           for (u, v), a in zip(spans, labs)):
                continue
            if distinct and any(a == b for a, b in zip(labs, labs[1:])):
                continue
            yield [(u, v, a) for (u, v), a in zip(spans, labs)]


def semimarkov_matches(patterns: Sequence[Pattern], seg: Sequence[Tuple[int, int, int]]
                       ) -> List[Tuple[int, int, int]]:
    """All (k, u, v): pattern k fires at the segment (u, v) of segmentation seg."""
    labels = [a for _, _, a in seg]
    out = []
    for j, (u, v, _) in enumerate(seg):
        for k, z in enumerate(patterns):
            m = len(z)
            if j >= m - 1 and tuple(labels[j - m + 1:j + 1]) == z:
                out.append((k, u, v))
    return out


def semimarkov_brute_force(n_labels: int, patterns: Sequence[Sequence[int]], L: int, pot,
                           max_len: Sequence[int] | None = None, distinct: bool = False):
    """Exhaustive semi-Markov inference over ``semimarkov_segmentations``.

    ``pot``: dict pattern_index -> array [T, T]; entry [u, v] (0-based,
    inclusive) is the potential of the pattern at a segment (u, v). Entries
    with v < u or v-u+1 > L are never read. Every pattern index must be present.

    Returns ``(logZ, marginals, best_segmentation, best_score)`` where
    ``marginals`` is a dict pattern_index -> float64 array [T, T] (zero outside
    valid spans) and ``best_segmentation`` is a list of (u, v, label).
    """
    pats = _check_patterns(n_labels, patterns)
    if L < 1:
        raise ValueError("L must be >= 1")
    K = len(pats)
    tables = {}
    T = None
    for k in range(K):
        if k not in pot:
            raise ValueError(f"missing potential table for pattern {k}")
        a = np.asarray(pot[k], dtype=np.float64)
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError("potential tables must be [T, T]")
        if T is None:
            T = a.shape[0]
        elif a.shape[0] != T:
            raise ValueError("potential tables disagree on T")
        tables[k] = a
    if T is None:
        raise ValueError("no patterns")

    items = []
    for seg in semimarkov_segmentations(n_labels, T, L, max_len, distinct):
        matches = semimarkov_matches(pats, seg)
        score = math.fsum(float(tables[k][u, v]) for k, u, v in matches)
        items.append((seg, score, matches))
    scores = [s for _, s, _ in items]
    logZ = logsumexp(scores)

    acc: Dict[Tuple[int, int, int], List[float]] = {}
    for seg, s, matches in items:
        p = math.exp(s - logZ)
        for key in matches:
            acc.setdefault(key, []).append(p)
    marg = {k: np.zeros((T, T), dtype=np.float64) for k in range(K)}
    for (k, u, v), ps in acc.items():
        marg[k][u, v] = math.fsum(ps)

    best_i = max(range(len(items)), key=lambda i: (scores[i], -i))
    best_seg = [tuple(x) for x in items[best_i][0]]
    return logZ, marg, best_seg, scores[best_i]


# ----------------------------------------------------------------------------
# dense DP (a second, independent oracle for sequences too long to enumerate)
# ----------------------------------------------------------------------------

def chain_dense_dp(n_labels: int, patterns: Sequence[Sequence[int]], pot):
    """log Z and the best score by an explicit order-k DP whose state is the
    full tuple of the last k = max|z|-1 labels (n^k states, no pattern
    sparsity). Polynomial in T, exponential in the order; for cross-checks on
    long sequences. Returns ``(logZ, best_score)``."""
    pats = _check_patterns(n_labels, patterns)
    pot = np.asarray(pot, dtype=np.float64)
    T = pot.shape[0]
    k = max(len(z) for z in pats) - 1
    # state: tuple of the last min(t, k) labels -> (log-sum, max)
    states: Dict[Tuple[int, ...], Tuple[float, float]] = {(): (0.0, 0.0)}
    for t in range(T):
        nxt: Dict[Tuple[int, ...], Tuple[List[float], List[float]]] = {}
        for hist, (ls, mx) in states.items():
            for y in range(n_labels):
                h = hist + (y,)          # the last min(t+1, k+1) labels
                inc = math.fsum(float(pot[t, j]) for j, z in enumerate(pats)
                                if len(z) <= len(h) and h[len(h) - len(z):] == z)
                key = h[-k:] if k > 0 else ()   # the last min(t+1, k) labels
                bucket = nxt.setdefault(key, ([], []))
                bucket[0].append(ls + inc)
                bucket[1].append(mx + inc)
        states = {key: (logsumexp(a), max(b)) for key, (a, b) in nxt.items()}
    logZ = logsumexp([v[0] for v in states.values()])
    best = max(v[1] for v in states.values())
    return logZ, best


# ---------------------------------------------------------------- factor graphs

def table_index(card, vs, y):
    """Index of ``y``'s configuration of the variables ``vs`` in their row-major table."""
    i = 0
    for v in vs:
        i = i * card[v] + y[v]
    return i


def factor_graph_brute_force(card, factors, log_pot):
    """(log Z, var marginals, flat factor marginals, [(score, y)] sorted best first)."""
    offs = [0]
    for vs in factors:
        offs.append(offs[-1] + math.prod(card[v] for v in vs))
    scored = []
    for y in itertools.product(*[range(c) for c in card]):
        s = math.fsum(log_pot[offs[f] + table_index(card, vs, y)] for f, vs in enumerate(factors))
        scored.append((s, y))
    m = max(s for s, _ in scored)
    log_z = m + math.log(math.fsum(math.exp(s - m) for s, _ in scored))
    vb = [np.zeros(c) for c in card]
    fb = np.zeros(offs[-1])
    for s, y in scored:
        p = math.exp(s - log_z)
        for v, x in enumerate(y):
            vb[v][x] += p
        for f, vs in enumerate(factors):
            fb[offs[f] + table_index(card, vs, y)] += p
    scored.sort(key=lambda t: -t[0])
    return log_z, vb, fb, scored
