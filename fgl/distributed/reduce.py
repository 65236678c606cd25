"""Summing results across the cluster without gathering them on the driver."""
from __future__ import annotations

from typing import Callable

FAN_IN = 8   # results one reduction task adds


def tree_reduce(client, futures: list, add: Callable, fan_in: int = FAN_IN):
    """A future of ``add`` over the results of ``futures``, in their order,
    computed as a tree of tasks of at most ``fan_in`` inputs each — they run
    where their inputs are, so only the final result reaches the driver, and
    the order of additions (hence the rounding) does not depend on which
    worker ran what."""
    if not futures:
        raise ValueError("nothing to reduce")
    level = list(futures)
    while len(level) > 1:
        level = [level[i] if i + 1 == len(level) else
                 client.submit(add, *level[i:i + fan_in], pure=False)
                 for i in range(0, len(level), fan_in)]
    return level[0]
