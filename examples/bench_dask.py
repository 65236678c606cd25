"""Per-evaluation time of distributed training against the number of workers.

Trains nothing: compiles CoNLL-2000 chunking (CRFsuite's features,
``stdlib/crfsuite_chunking.fgl``) on a local Dask cluster of 1, then 2
single-threaded worker processes (the training file cut into byte-range
shards), and times evaluations of the objective at fixed weights: the
driver's round trip (scatter the weights, every shard's partial objective
and gradient, the tree reduction, one gradient back), the slowest worker's
compute, the communication share (the round trip not spent computing), and
the bytes one round trip moves, 2 x |w| x 8 x workers.  Without
/work/shared/data (or with --synthetic) it uses generated data.

    python examples/bench_dask.py [--workers 1,2] [--evals 5] [--synthetic] [--quick]

Measured (2-core machine shared with other jobs, 2026-11-26; CoNLL-2000
train, 211,727 tokens in 6 byte-range shards, |w| = 453,010):

    workers compile s  eval s slowest s comm share  MB/eval speed-up
          1      10.3   0.308     0.276        10%      7.2     1.00
          2       8.0   0.259     0.204        21%     14.5     1.19

The machine ran other jobs (load average 4-7 on 2 cores): two later runs
gave 0.977 / 0.376 s and 0.835 / 1.191 s per evaluation on 1 / 2 workers,
so read the speed-up as noise-bound here; the per-token cost and the bytes
are what the projection uses.

Projection (on paper, from that run; the script prints it from what it
measures): one worker computed an evaluation in 0.276 s for 211,727
tokens, 1.3 us per token on one thread; the weights are 453,010 x 8 bytes
= 3.6 MB.  For 10^8 tokens on 100 machines of 8 cores, each machine holds
10^6 tokens: 1.3 us x 10^6 / 8 ~ 0.16 s of compute per evaluation.  The
round trip moves 2 x 3.6 MB x 100 = 725 MB in all, but not through one
link: the weights spread worker to worker and the gradients are added in a
tree of fan-in 8 (3 levels for 100 workers), so the driver's link carries
about 2 x 8 x 3.6 MB (0.06 s at 1 GB/s) and the tree's levels 3 x 8 x 3.6
MB (0.09 s): ~0.31 s per evaluation, half of it communication — against
~16 s per evaluation on one such machine alone.  With 10x the features
communication would dominate: fewer, larger workers (several cores each,
``--jobs``) then pay more than more machines.
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONLL = Path("/work/shared/data/conll2000/train.txt")
CHAIN_SPEC = """model "bench chain"
columns a1, a2, a3, label
output label
obs a = a1[t] | a2[t] | a3[t]
template state: y[t] ~ bias, a
template transition: y[t-1..t]
"""


def synthetic(directory: Path, sequences: int) -> tuple[Path, Path]:
    """A generated stand-in: ``sequences`` sequences of 20 tokens."""
    from fgl.datasets.synth import write_markov_files

    train, _ = write_markov_files(directory, n_labels=10, n_train=sequences, n_test=1,
                                  length=20)
    spec = directory / "bench.fgl"
    spec.write_text(CHAIN_SPEC)
    return spec, train


def measure(spec: Path, train: Path, workers: int, evals: int, shard_bytes: int) -> dict:
    from distributed import Client, LocalCluster

    from fgl.api import CRF
    from fgl.distributed.objective import DistributedObjective
    from fgl.distributed.shards import find_shards
    from fgl.distributed.training import compile_shards

    crf = CRF(spec)
    shards = find_shards(train, shard_bytes=shard_bytes)
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        t0 = time.perf_counter()
        encoded = compile_shards(crf, client, shards)
        compile_s = time.perf_counter() - t0
        model = encoded.model
        objective = DistributedObjective(client, encoded, model.feat_sigma, 1)
        rng = np.random.default_rng(0)
        w = rng.normal(0.0, 0.01, model.program.n_features)
        objective(w)                         # encodes the shards, warms the kernels
        rounds = []
        for _ in range(evals):
            objective(w)
            rounds.append(objective.last)
    trip = float(np.median([r.seconds for r in rounds]))
    slowest = float(np.median([r.slowest for r in rounds]))
    return {"workers": workers, "shards": len(shards), "tokens": encoded.n_tokens,
            "features": model.program.n_features, "compile": compile_s, "round_trip": trip,
            "slowest": slowest, "share": max(0.0, trip - slowest) / trip,
            "bytes": rounds[-1].bytes_moved}


def projection(one: dict, machines: int = 100, tokens: float = 1e8, cores: int = 8,
               bandwidth: float = 1e9, fan_in: int = 8) -> list[str]:
    """Per-evaluation time for ``tokens`` on ``machines``, from one worker's
    measured per-token cost and the bytes per round trip."""
    per_token = one["slowest"] / one["tokens"]
    compute = per_token * tokens / machines / cores
    w_bytes = one["features"] * 8
    levels = int(np.ceil(np.log(machines) / np.log(fan_in)))
    driver = 2 * fan_in * w_bytes / bandwidth
    tree = levels * fan_in * w_bytes / bandwidth
    total = compute + driver + tree
    return [f"measured: {per_token * 1e6:.2f} us per token on one thread, |w| = "
            f"{one['features']:,} ({w_bytes / 1e6:.1f} MB of weights)",
            f"projected for {tokens:.0e} tokens on {machines} machines of {cores} cores: "
            f"compute {compute:.2f} s, driver link {driver:.3f} s, reduction tree "
            f"({levels} levels) {tree:.3f} s at {bandwidth / 1e9:g} GB/s: ~{total:.2f} s per "
            f"evaluation, {(driver + tree) / total:.0%} communication; one such machine "
            f"alone: {per_token * tokens / cores:.0f} s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="1,2", help="worker counts to try (default 1,2)")
    ap.add_argument("--evals", type=int, default=5, help="timed evaluations per count")
    ap.add_argument("--synthetic", action="store_true", help="generated data, not CoNLL-2000")
    ap.add_argument("--shard-mb", type=float, default=0.5, help="shard size (default 0.5 MB)")
    ap.add_argument("--quick", action="store_true",
                    help="a small generated data set and 2 evaluations (a smoke test)")
    a = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    if a.quick:
        a.synthetic, a.evals, a.shard_mb = True, 2, 0.05
    if a.synthetic or not CONLL.exists():
        if not a.synthetic:
            print(f"{CONLL} not found: using generated data (--synthetic)", file=sys.stderr)
        spec, train = synthetic(Path(tmp.name), 500 if a.quick else 10_000)
        what = "generated order-2 Markov data"
    else:
        spec, train, what = ROOT / "stdlib" / "crfsuite_chunking.fgl", CONLL, "CoNLL-2000 train"
    rows = [measure(spec, train, int(n), a.evals, int(a.shard_mb * 1e6))
            for n in a.workers.split(",")]
    print(f"{what}: {rows[0]['tokens']:,} tokens, {rows[0]['shards']} shards, "
          f"|w| = {rows[0]['features']:,}")
    print(f"{'workers':>7s} {'compile s':>9s} {'eval s':>7s} {'slowest s':>9s} "
          f"{'comm share':>10s} {'MB/eval':>8s} {'speed-up':>8s}")
    for r in rows:
        print(f"{r['workers']:7d} {r['compile']:9.1f} {r['round_trip']:7.3f} {r['slowest']:9.3f} "
              f"{r['share']:10.0%} {r['bytes'] / 1e6:8.1f} "
              f"{rows[0]['round_trip'] / r['round_trip']:8.2f}")
    print("\n".join(projection(rows[0])))
    tmp.cleanup()


if __name__ == "__main__":
    main()
