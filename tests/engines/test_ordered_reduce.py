"""``fgl.engines.parallel.ordered_reduce`` and ``blocks``: results combined
in block order whatever order the threads finish them in, a thread not held
up by an earlier block still running, scratch not reused before its result
is combined, errors raised; block counts even, from 8 on multiples of 4."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.engines import parallel

WAIT = 30.0   # seconds a thread waits for another before the test gives up


def test_a_slow_first_block_does_not_hold_up_the_others():
    """Block 0 finishes only once blocks 1-3 have been computed: with three
    scratch sets per thread the other thread must take them while block 0
    is still running (a reduction that made it wait for block 0's turn
    would time out here)."""
    n = 4
    others_done = threading.Event()
    computed, combined = [], []
    lock = threading.Lock()

    def compute(k: int, scratch: np.ndarray):
        if k == 0:
            assert others_done.wait(WAIT), "blocks 1-3 were not computed while block 0 ran"
        scratch[0] = k
        with lock:
            computed.append(k)
            if sorted(computed) == [1, 2, 3]:
                others_done.set()
        return scratch

    def combine(k: int, result: np.ndarray) -> None:
        assert result[0] == k   # (its scratch was not reused before this)
        combined.append(k)

    parallel.ordered_reduce(2, n, compute, combine, lambda: (np.zeros(1),), sets=3)
    assert computed[-1] == 0
    assert combined == list(range(n))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=24), st.integers(1, 4),
       st.integers(1, 3))
def test_sums_are_made_in_block_order(delays, jobs, sets):
    """Blocks of random cost (busy loops) on 1-4 threads: every block is
    combined once, in order, from its own result."""
    order = []

    def compute(k: int, scratch: np.ndarray):
        x = 0.0
        for _ in range(2000 * delays[k]):
            x += 1.0
        scratch[:] = k + x * 0.0
        return scratch

    def combine(k: int, result: np.ndarray) -> None:
        assert (result == k).all()
        order.append(k)

    parallel.ordered_reduce(jobs, len(delays), compute, combine, lambda: (np.zeros(3),), sets)
    assert order == list(range(len(delays)))


def test_an_error_in_one_block_is_raised_and_ends_the_rest():
    started = []

    def compute(k: int):
        started.append(k)
        if k == 2:
            raise RuntimeError("stop")
        return k

    with pytest.raises(RuntimeError, match="stop"):
        parallel.ordered_reduce(2, 50, compute, lambda k, r: None)
    assert len(started) < 50


@pytest.mark.parametrize("items, cost, count", [
    (1000, 7, 1),          # less than one block's cost: one block
    (100, 500, 4),         # 2.5 blocks' cost: 4 (even)
    (100, 1300, 8),        # 6.5: 8
    (100, 2000, 12),       # 10: 12 (from 8 on, a multiple of 4)
    (100, 4200, 24),       # 21: 24
    (6, 10**6, 6),         # one block per item at most
    (500, 10**6, 64)])     # MAX_BLOCKS at most
def test_block_counts_come_in_multiples(items, cost, count):
    assert parallel.BLOCK_COST == 20_000
    ptr = np.cumsum([0] + [cost] * items)
    cuts = parallel.blocks(ptr)
    assert len(cuts) == count
    assert cuts[0][0] == 0 and cuts[-1][1] == items
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
