"""A vector column's value kept sparsely: its dimension and its non-zero
entries only.

A graph of 3,312 nodes with a 3,703-dimensional vector column holds 12
million numbers, nearly all of them 0 when the vector is a bag of words;
read as Python floats and turned into one attribute per dimension, it took
3 GB to train.  Kept as (index, value) arrays of the non-zeros, it is the
size of the words it stands for, and ``value(v[a])`` gives one attribute
per non-zero dimension (a zero adds nothing to a score or a gradient).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


class SparseVector:
    """``dim`` numbers of which only ``value[k]`` at ``index[k]`` (ascending,
    int32) are non-zero."""

    __slots__ = ("dim", "index", "value")

    def __init__(self, dim: int, index: np.ndarray, value: np.ndarray):
        self.dim, self.index, self.value = dim, index, value

    @classmethod
    def of(cls, numbers: Sequence[float] | np.ndarray) -> "SparseVector":
        """The vector of ``numbers`` (anything ``np.asarray`` reads as floats)."""
        dense = np.asarray(numbers, dtype=np.float64)
        nonzero = np.flatnonzero(dense)
        return cls(int(dense.size), nonzero.astype(np.int32), dense[nonzero])

    def __len__(self) -> int:
        return self.dim

    def largest(self) -> float:
        """The largest magnitude among the numbers (NaN if one is NaN)."""
        return float(np.abs(self.value).max()) if self.value.size else 0.0

    def text(self) -> str:
        """The numbers written out, comma-separated, as a column file holds them."""
        dense = np.zeros(self.dim)
        dense[self.index] = self.value
        return ",".join(repr(float(x)) for x in dense)
