"""Is system A better than system B on this test set?  Two answers.

* **Approximate randomisation** (Noreen 1989; as Cuong et al. 2014 §3.2
  use it): under the null hypothesis the two systems' outputs are
  exchangeable, so each trial swaps A's and B's output of every sequence
  with probability ½ and recomputes the difference of the scores; with nc
  of nt trials at least as far apart as the observed difference,
  p = (nc + 1) / (nt + 1).
* **t-intervals over partitions** (as Zhu et al. Tables 2-3 report): the
  test sequences are cut into k contiguous, (nearly) equal partitions, each
  system is scored on each, and the mean is given ± the 95 % half-width
  t₀.₉₇₅,ₖ₋₁ · s / √k.

The score is the micro-averaged chunk F1 of ``fgl.evaluation.evaluate`` under the
scheme given (``fgl.data.schemes``; for plain labels the micro-averaged F1
over the tokens not labelled ``O``);
both computations work on per-sequence counts (correct, predicted, gold),
so a trial costs one matrix product, not a re-evaluation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from fgl.data.schemes import check, chunks, resolve

CHUNK = 512  # trials per matrix product


def sequence_counts(gold: list[list[str]], pred: list[list[str]], scheme: str) -> np.ndarray:
    """[sequences, 3]: correct, predicted and gold chunks of each sequence."""
    out = np.zeros((len(gold), 3))
    for i, (g, p) in enumerate(zip(gold, pred)):
        gc, pc = set(chunks(g, scheme)), set(chunks(p, scheme))
        out[i] = len(gc & pc), len(pc), len(gc)
    return out


def f1(counts: np.ndarray) -> np.ndarray:
    """F1 (percent) of summed counts [..., 3] (0 where undefined)."""
    correct, predicted, gold = counts[..., 0], counts[..., 1], counts[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(predicted + gold > 0, 200.0 * correct / (predicted + gold), 0.0)
    return out


@dataclass
class Comparison:
    """Both systems' scores, their difference and how sure it is."""

    f1_a: float
    f1_b: float
    p_value: float         # approximate randomisation, two-sided
    trials: int
    at_least_as_far: int   # nc
    partitions: int
    mean_a: float          # F1 over partitions: mean and 95 % half-width
    half_a: float
    mean_b: float
    half_b: float
    scheme: str

    def format(self, name_a: str = "A", name_b: str = "B") -> str:
        width = max(len(name_a), len(name_b))
        k = self.partitions
        rows = [f"{'system':<{width}}  F1 (all)  F1 over {k} partitions (95% t-interval)"]
        for name, whole, mean, half in ((name_a, self.f1_a, self.mean_a, self.half_a),
                                        (name_b, self.f1_b, self.mean_b, self.half_b)):
            interval = f"{mean:.2f} ± {half:.2f}" if k > 1 else "-"
            rows.append(f"{name:<{width}}  {whole:8.2f}  {interval}")
        rows.append(f"difference {name_a} - {name_b}: {self.f1_a - self.f1_b:+.2f} F1; "
                    "approximate randomisation: "
                    f"p = {self.p_value:.4g} ({self.at_least_as_far} of {self.trials} shuffles "
                    "at least as far apart)")
        return "\n".join(rows)


def randomisation_test(a: np.ndarray, b: np.ndarray, trials: int = 10000,
                       seed: int = 0) -> tuple[float, int]:
    """Two-sided approximate randomisation on F1 of per-sequence counts
    ``a`` and ``b`` ([sequences, 3]): (p, nc)."""
    observed = abs(float(f1(a.sum(0)) - f1(b.sum(0))))
    rng = np.random.default_rng(seed)
    diff = b - a
    base_a, base_b = a.sum(0), b.sum(0)
    far = 0
    for start in range(0, trials, CHUNK):
        swap = (rng.random((min(CHUNK, trials - start), len(a))) < 0.5).astype(np.float64)
        moved = swap @ diff                   # what the swapped sequences change
        gap = np.abs(f1(base_a + moved) - f1(base_b - moved))
        far += int((gap >= observed - 1e-9).sum())
    return (far + 1) / (trials + 1), far


def partition_interval(counts: np.ndarray, k: int) -> tuple[float, float]:
    """Mean F1 over ``k`` contiguous partitions and the 95 % t half-width."""
    scores = np.array([f1(part.sum(0)) for part in np.array_split(counts, k)])
    if k < 2:
        return float(scores.mean()), 0.0
    half = stats.t.ppf(0.975, k - 1) * scores.std(ddof=1) / np.sqrt(k)
    return float(scores.mean()), float(half)


def compare(gold: list[list[str]], pred_a: list[list[str]], pred_b: list[list[str]], *,
            trials: int = 10000, partitions: int = 10, seed: int = 0,
            scheme: str = "auto") -> Comparison:
    """Score both systems' outputs against ``gold`` and test their F1
    difference (module docstring).  ``partitions`` is capped at the number
    of sequences."""
    if not (len(gold) == len(pred_a) == len(pred_b)):
        raise ValueError("gold and both outputs must hold the same sequences")
    if trials < 1 or partitions < 1:
        raise ValueError("trials and partitions must be at least 1")
    used = resolve(scheme, gold, pred_a, pred_b)
    for side, seqs in (("gold", gold), ("pred_a", pred_a), ("pred_b", pred_b)):
        check(seqs, used, side)
    a, b = sequence_counts(gold, pred_a, used), sequence_counts(gold, pred_b, used)
    p, far = randomisation_test(a, b, trials, seed)
    k = min(partitions, len(gold))
    mean_a, half_a = partition_interval(a, k)
    mean_b, half_b = partition_interval(b, k)
    return Comparison(float(f1(a.sum(0))), float(f1(b.sum(0))), p, trials, far, k,
                      mean_a, half_a, mean_b, half_b, used)
