"""The state machine of a label-pattern set (Ye et al. 2009 §3.1; Cuong et al. 2014 §2.3).

A model's label patterns Z (every single label among them) define

* forward states P: the empty sequence, every label, every proper prefix of a
  pattern (Ye et al. 2009 §3.1.1) — prefix-closed, so the longest suffix of
  ``y_{1:t}`` in P is determined by the previous state and the new label
  (Proposition 1);
* transitions S = P x Y: ``s = p·y`` (so ``s = p·n + y``), each with
  ``next[s]`` (the longest suffix of ``p·y`` in P), its pattern id when
  ``p·y`` is itself a pattern, and ``parent[s]``, the longest proper suffix
  of ``p·y`` in S.  Every pattern lies in S, so the potential of a
  transition, ``Ψ(s) = Σ_{z ∈ Z, z suffix of s} pot[z]``, is the pattern's
  own potential plus its parent's Ψ: O(|S|) per position (the conditional
  backward variables of Cuong et al. 2014 §2.3.2 use the same S).

The same machine serves the chain engine (labels of tokens) and the
semi-Markov engine (labels of segments).  ``ChainStructure`` is built once
per model; its ``tables`` bundle is what the numba kernels read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import numpy as np


class StateTables(NamedTuple):
    """The integer tables of a ``ChainStructure``, as the kernels take them
    (a named tuple of arrays compiles to plain arguments in numba)."""

    n_labels: int
    n_forward: int
    n_patterns: int
    s_prev: np.ndarray         # [S] forward state p of s = p·y
    s_label: np.ndarray        # [S] label y of s = p·y
    s_next: np.ndarray         # [S] longest suffix of p·y in P
    s_pattern: np.ndarray      # [S] pattern id of p·y, or -1
    s_parent: np.ndarray       # [S] longest proper suffix of p·y in S, or -1
    p_suffix: np.ndarray       # [P] longest proper suffix of p in P (-1 for ε)
    p_order: np.ndarray        # [P] forward states by increasing length
    p_next_run: np.ndarray     # [P] q0 when next(p·y) = q0 + y for every y, else -1
    p_label: np.ndarray        # [P] the last label of p (-1 for ε)
    run_blocks: np.ndarray     # the forward states p with p_next_run[p] >= 0
    run_ptr: np.ndarray        # where each stretch of run_blocks onto the same run starts
    gather_blocks: np.ndarray  # the others
    label_z: np.ndarray        # [n] the pattern id of each single label
    first_order: bool          # state q >= 1 ends in label q - 1, every block a run onto 1


@dataclass
class ChainStructure:
    """The compiled state machine of a pattern set (built once per model)."""

    n_labels: int
    patterns: list[tuple[int, ...]]
    forward_states: list[tuple[int, ...]]
    s_prev: np.ndarray      # [S] forward state p of s = p·y
    s_label: np.ndarray     # [S] label y of s = p·y
    s_next: np.ndarray      # [S] longest suffix of p·y in P
    s_pattern: np.ndarray   # [S] pattern id of p·y, or -1
    s_parent: np.ndarray    # [S] longest proper suffix of p·y in S, or -1
    pattern_s: np.ndarray   # [Z] the transition equal to each pattern
    p_suffix: np.ndarray    # [P] longest proper suffix of p in P (-1 for ε): the
                            #     parent of p·y is p_suffix[p]·y, block by block
    p_order: np.ndarray     # [P] forward states by increasing length
    p_next_run: np.ndarray  # [P] q0 when next(p·y) = q0 + y for every y, else -1
    p_label: np.ndarray     # [P] the last label of p (-1 for ε)
    tables: StateTables = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        run_blocks = np.flatnonzero(self.p_next_run >= 0)
        onto = self.p_next_run[run_blocks]
        run_ptr = np.append(np.flatnonzero(np.diff(onto, prepend=-1) != 0), len(onto))
        gather_blocks = np.flatnonzero(self.p_next_run < 0)
        first_order = bool(self.n_forward == self.n_labels + 1 and len(gather_blocks) == 0
                           and np.array_equal(self.p_label[1:], np.arange(self.n_labels))
                           and (self.p_next_run[run_blocks] == 1).all())
        self.tables = StateTables(
            self.n_labels, self.n_forward, len(self.patterns), self.s_prev, self.s_label,
            self.s_next, self.s_pattern, self.s_parent, self.p_suffix, self.p_order,
            self.p_next_run, self.p_label, run_blocks, run_ptr, gather_blocks,
            self.s_pattern[:self.n_labels].copy(), first_order)

    @property
    def n_forward(self) -> int:
        """|P|, the number of forward states (the empty state included)."""
        return len(self.forward_states)

    @property
    def n_backward(self) -> int:
        """|S| = |P|·n, the number of transitions (backward states, Cuong et al. 2014)."""
        return len(self.s_prev)

    @classmethod
    def build(cls, n_labels: int, patterns: Sequence[tuple[int, ...]]) -> "ChainStructure":
        """Build P, S and the longest-suffix tables for ``patterns``
        (label-id tuples, oldest label first; every single label included)."""
        patterns = [tuple(int(v) for v in z) for z in patterns]
        if len(set(patterns)) != len(patterns):
            raise ValueError("patterns must be distinct")
        for z in patterns:
            if not z or min(z) < 0 or max(z) >= n_labels:
                raise ValueError(f"pattern {z} is empty or uses a label outside "
                                 f"0..{n_labels - 1}")
        missing = [y for y in range(n_labels) if (y,) not in set(patterns)]
        if missing:
            raise ValueError(f"every single label must be a pattern; missing {missing}")
        prefixes = {z[:k] for z in patterns for k in range(1, len(z))}
        forward = [()] + sorted(prefixes | {(y,) for y in range(n_labels)},
                                key=lambda p: (len(p), p))
        p_index = {p: i for i, p in enumerate(forward)}
        z_index = {z: i for i, z in enumerate(patterns)}
        s_seq = [forward[i] + (y,) for i in range(len(forward)) for y in range(n_labels)]
        s_index = {s: i for i, s in enumerate(s_seq)}

        def longest_suffix(seq: tuple[int, ...], table: dict, proper: bool) -> int:
            for k in range(1 if proper else 0, len(seq)):
                hit = table.get(seq[k:])
                if hit is not None:
                    return hit
            return -1

        s_prev = np.repeat(np.arange(len(forward)), n_labels).astype(np.int64)
        s_label = np.tile(np.arange(n_labels), len(forward)).astype(np.int64)
        s_next = np.array([longest_suffix(s, p_index, False) for s in s_seq], dtype=np.int64)
        s_pattern = np.array([z_index.get(s, -1) for s in s_seq], dtype=np.int64)
        s_parent = np.array([longest_suffix(s, s_index, True) for s in s_seq], dtype=np.int64)
        pattern_s = np.array([s_index[z] for z in patterns], dtype=np.int64)
        # every proper suffix search ends at ε (index 0), which the helper skips
        p_suffix = np.array([max(longest_suffix(p, p_index, True), 0) if p else -1
                             for p in forward], dtype=np.int64)
        p_order = np.array(sorted(range(len(forward)), key=lambda i: len(forward[i])),
                           dtype=np.int64)
        nxt = s_next.reshape(len(forward), n_labels)
        p_next_run = np.where((nxt - nxt[:, :1] == np.arange(n_labels)).all(axis=1),
                              nxt[:, 0], -1).astype(np.int64)
        p_label = np.array([p[-1] if p else -1 for p in forward], dtype=np.int64)
        return cls(n_labels, patterns, forward, s_prev, s_label, s_next, s_pattern,
                   s_parent, pattern_s, p_suffix, p_order, p_next_run, p_label)
