"""The positions of the k largest values of an array, by a bounded heap
(``fgl.report.inspect``'s strongest weights), apart from ``inspect`` so that
reading a model's weights loads no compiled code until they are ranked."""
from __future__ import annotations

import numpy as np

from fgl.jit import njit


@njit(cache=True, nogil=True)
def largest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest ``values`` (ties: the first), in no
    order: one pass keeping a min-heap of k (O(n log k); numpy's partition
    slows to seconds on the many equal weights of a barely trained model)."""
    heap = np.empty(k, dtype=np.int64)     # positions; root: the smallest kept (latest on ties)
    n = 0
    for i in range(values.shape[0]):
        v = values[i]
        if n < k:
            heap[n] = i
            j = n
            n += 1
            while j > 0:                   # sift up
                parent = (j - 1) // 2
                if values[heap[parent]] > values[heap[j]] or \
                        (values[heap[parent]] == values[heap[j]] and heap[parent] < heap[j]):
                    heap[parent], heap[j] = heap[j], heap[parent]
                    j = parent
                else:
                    break
        elif v > values[heap[0]]:
            heap[0] = i
            j = 0
            while True:                    # sift down
                low = j
                for c in (2 * j + 1, 2 * j + 2):
                    if c < k and (values[heap[c]] < values[heap[low]] or (
                            values[heap[c]] == values[heap[low]] and heap[c] > heap[low])):
                        low = c
                if low == j:
                    break
                heap[low], heap[j] = heap[j], heap[low]
                j = low
    return heap[:n]
