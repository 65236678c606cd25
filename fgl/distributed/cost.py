"""What one distributed evaluation costs: communication against compute.

Each evaluation sends the weights to every worker and brings one gradient
back from each — 2 × |w| × 8 bytes per worker — while the workers compute
in parallel.  ``measure`` times real evaluations on the cluster;
``lines`` sets the bytes against that time and a network bandwidth.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fgl.distributed.objective import DistributedObjective
from fgl.distributed.training import human_bytes

BANDWIDTH = 1e9   # bytes per second assumed for the network (about 10 Gbit/s)


@dataclass
class EvaluationCost:
    """One evaluation on the cluster, measured."""

    features: int
    workers: int
    tokens: int
    compute: float      # the slowest worker's seconds
    round_trip: float   # the driver's seconds, scatter to summed gradient

    @property
    def bytes_moved(self) -> int:
        return communication_bytes(self.features, self.workers)


def communication_bytes(features: int, workers: int) -> int:
    """Bytes one evaluation moves: the weights out and a gradient back, per worker."""
    return 2 * features * 8 * workers


def measure(objective: DistributedObjective, w: np.ndarray, tokens: int,
            repeats: int = 2) -> EvaluationCost:
    """Evaluate ``repeats`` times at ``w`` (the first also warms the
    workers' compiled kernels) and keep the fastest round trip."""
    best = None
    for _ in range(repeats):
        objective(w.copy())
        r = objective.last
        if best is None or r.seconds < best.seconds:
            best = r
    return EvaluationCost(len(w), best.workers, tokens, best.slowest, best.seconds)


def lines(cost: EvaluationCost, bandwidth: float = BANDWIDTH) -> list[str]:
    """The estimate as ``explain`` prints it."""
    moved = cost.bytes_moved
    wire = moved / bandwidth
    out = [f"per evaluation on {cost.workers} workers: |w| = {cost.features:,} weights",
           f"  communication: 2 x |w| x 8 bytes x {cost.workers} workers = {human_bytes(moved)}"
           f" (~{wire * 1e3:.2f} ms at {human_bytes(bandwidth)}/s)",
           f"  compute: slowest worker {cost.compute * 1e3:.1f} ms"
           + (f" ({cost.compute / cost.tokens * cost.workers * 1e6:.2f} us per token of its "
              f"share)" if cost.tokens else ""),
           f"  measured round trip {cost.round_trip * 1e3:.1f} ms: {_share(cost):.0%} of it "
           "is not the slowest worker's compute (scheduling and moving data)",
           f"  estimated communication share at that bandwidth: "
           f"{wire / (wire + cost.compute) if wire + cost.compute else 0:.1%}"]
    return out


def _share(cost: EvaluationCost) -> float:
    return max(0.0, cost.round_trip - cost.compute) / cost.round_trip if cost.round_trip else 0.0
