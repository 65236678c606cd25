"""Cost of the exact pattern-sparse chain engine as the CRF order grows.

The engine (``fgl.engines.sequence.chain``, Ye et al. 2009 §3) runs forward/backward over
the transitions S = P x Y of the model's forward states P, so one
objective+gradient evaluation should cost O(|P|·n) per token — not O(n^k).
Two tables, printed only (nothing is asserted):

Table 1 — scaling with order.  Data from ``fgl.datasets.synth.markov_sequences`` (an
order-k_true Markov model, r = 2 successors per history, m = 3 Gaussian
observations); for each label count n and maximum CRF order 1..K the spec
below (all observed label patterns up to that order) is compiled and one
``program.expectations(w, data, jobs=1)`` call is timed (best of several
after a warm-up, random small weights).  ``ns/(|P|n·tok)`` — seconds per
evaluation divided by |P|·n·tokens — should stay roughly flat if the cost is
linear in |P|·n.

Table 2 — sparse vs dense.  The same model expanded to a *dense* order-k
pattern set (every label sequence of length 1..k+1) with the sparse model's
potentials scattered into it and zero potential elsewhere, so both define the
same distribution: log Z must agree.  ``chain.pattern_marginals`` is timed on
the same sequences for both structures; the predicted speed-up is the ratio
of |P|·n dense to |P|·n sparse.

    python examples/bench_high_order.py --quick          # smoke test, seconds
    python examples/bench_high_order.py                  # default, a few minutes
    python examples/bench_high_order.py --labels 5,10 --max-order 4 --train 400
"""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from measure import best_time

from fgl.datasets.synth import markov_sequences
from fgl.engines.sequence import chain
from fgl.engines.sequence.structure import ChainStructure
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.registry import compile_model

SPEC = """
model "order-{order} CRF on Markov data (benchmark)"
columns a1:number, a2:number, a3:number, label
output label
obs a = value(a1[t-1..t+1]) | value(a2[t-1..t+1]) | value(a3[t-1..t+1])
template state: y[t] ~ bias, a
template ho: y[t-{order}..t] patterns observed upto
"""


def compile_order(train, order: int):
    return compile_model(validate(parse_spec(SPEC.format(order=order))), train)


def table1(args, labels: list[int], orders: list[int]) -> dict:
    """Scaling with order; returns the compiled models for table 2."""
    print("Table 1 — cost per objective+gradient evaluation vs maximum CRF order")
    print(f"  data: markov_sequences(order={args.true_order}, r=2, m=3, sigma={args.sigma}), "
          f"{args.train} train sequences of length {args.length}; timed on the first "
          f"<= {args.time_tokens} tokens, jobs=1, best of {args.repeats}")
    hdr = (f"{'n':>3} {'order':>5} {'patterns':>8} {'|P|':>7} {'|S|=|P|n':>9} {'features':>8} "
           f"{'compile s':>9} {'tokens':>6} {'s/eval':>9} {'ns/(|P|n·tok)':>13}")
    print(hdr)
    print("-" * len(hdr))
    models = {}
    for n in labels:
        train, _ = markov_sequences(n_labels=n, order=args.true_order, r=2, m=3, sigma=args.sigma,
                                    n_train=args.train, n_test=0, length=args.length,
                                    seed=args.seed)
        for order in orders:
            t0 = time.perf_counter()
            model, data = compile_order(train, order)
            compile_s = time.perf_counter() - t0
            prog = model.program
            st = prog.structure
            n_seq = max(1, min(data.n_sequences, args.time_tokens // args.length))
            sub = data.subset(0, n_seq)
            tokens = sub.n_tokens
            w = np.random.default_rng(args.seed).normal(0.0, 0.1, prog.n_features)
            sec = best_time(lambda: prog.expectations(w, sub, jobs=1), args.repeats)
            const_ns = sec / (st.n_backward * tokens) * 1e9
            print(f"{n:3d} {order:5d} {len(st.patterns):8d} {st.n_forward:7d} {st.n_backward:9d} "
                  f"{prog.n_features:8d} {compile_s:9.2f} {tokens:6d} {sec:9.4f} {const_ns:13.2f}",
                  flush=True)
            models[(n, order)] = (model, data)
    print()
    return models


def dense_structure(n: int, order: int) -> ChainStructure:
    pats = [z for length in range(1, order + 2)
            for z in itertools.product(range(n), repeat=length)]
    return ChainStructure.build(n, pats)


def run(structure: ChainStructure, pots: list[np.ndarray]) -> list[float]:
    """log Z of every sequence through the public potential-level API."""
    return [chain.pattern_marginals(structure, p)[0] for p in pots]


def kernel_runner(structure: ChainStructure, pots: list[np.ndarray]):
    """The same computation with the scratch arrays allocated once (the
    engine's internal kernel, as the training path calls it): isolates the
    O(T·|P|·n) recursion from allocating O(T·|P|·n) workspace per call."""
    ws = chain.Workspace(structure, max(p.shape[0] for p in pots))

    def go() -> None:
        for pot in pots:
            chain.sequence_marginals(structure, pot, ws)
    return go


def table2(args, models: dict, labels: list[int], orders: list[int]) -> None:
    print("Table 2 — sparse (observed patterns) vs dense (all n^1..n^(k+1) patterns), "
          "chain.pattern_marginals on the same potentials")
    print(f"  timed over the same sequences (as many as fit ~{args.dense_budget:g} s of dense "
          f"work, at most {args.dense_seqs}), best of {args.repeats}; dense skipped when "
          f"n^(k+1) > {args.max_dense:.0e}")
    print("  predicted = |P|n dense / |P|n sparse; measured = dense s / sparse s through "
          "pattern_marginals; kernel = the same ratio with workspace allocated once;\n"
          "  ns sp / ns de = kernel seconds / (|P|n·tokens) for sparse / dense")
    hdr = (f"{'n':>3} {'order':>5} {'|P|n sparse':>11} {'|P|n dense':>11} {'predicted':>9} "
           f"{'seqs':>4} {'sparse s':>9} {'dense s':>9} {'measured':>8} {'kernel':>8} "
           f"{'ns sp':>6} {'ns de':>6} {'build s':>7} "
           f"{'max|dlogZ|':>10}")
    print(hdr)
    print("-" * len(hdr))
    for n in labels:
        for order in orders:
            if (n, order) not in models:
                continue
            model, data = models[(n, order)]
            prog = model.program
            st = prog.structure
            dense_pn = n * sum(n ** j for j in range(order + 1))
            pred = dense_pn / st.n_backward
            prefix = f"{n:3d} {order:5d} {st.n_backward:11d} {dense_pn:11d} {pred:9.1f}"
            if n ** (order + 1) > args.max_dense:
                print(f"{prefix}  skipped (n^(k+1) = {n ** (order + 1):,})", flush=True)
                continue
            t0 = time.perf_counter()
            dst = dense_structure(n, order)
            build_s = time.perf_counter() - t0
            assert dst.n_backward == dense_pn
            d_index = {z: i for i, z in enumerate(dst.patterns)}
            cols = np.array([d_index[z] for z in st.patterns], dtype=np.int64)
            w = np.random.default_rng(args.seed).normal(0.0, 0.1, prog.n_features)

            def dense_pot(i):
                pot = prog.potentials(w, data, i)
                out = np.zeros((pot.shape[0], len(dst.patterns)))
                out[:, cols] = pot
                return out

            # size the sequence set from one dense call (after a warm-up call)
            pot0 = dense_pot(0)
            chain.pattern_marginals(dst, pot0)
            t0 = time.perf_counter()
            chain.pattern_marginals(dst, pot0)
            one = time.perf_counter() - t0
            del pot0
            n_seq = int(max(1, min(args.dense_seqs, data.n_sequences, args.dense_budget / one)))
            sparse_pots = [prog.potentials(w, data, i) for i in range(n_seq)]
            dense_pots = [dense_pot(i) for i in range(n_seq)]

            diff = float(np.max(np.abs(np.array(run(st, sparse_pots)) -
                                       np.array(run(dst, dense_pots)))))
            reps = args.repeats if one * n_seq < 5 else 1
            t_sparse = best_time(lambda: run(st, sparse_pots), args.repeats)
            t_dense = best_time(lambda: run(dst, dense_pots), reps)
            k_sparse = best_time(kernel_runner(st, sparse_pots), args.repeats)
            k_dense = best_time(kernel_runner(dst, dense_pots), reps)
            tokens = sum(p.shape[0] for p in sparse_pots)
            ns_s = k_sparse / (st.n_backward * tokens) * 1e9
            ns_d = k_dense / (dst.n_backward * tokens) * 1e9
            print(f"{prefix} {n_seq:4d} {t_sparse:9.4f} {t_dense:9.4f} "
                  f"{t_dense / t_sparse:8.1f} {k_dense / k_sparse:8.1f} {ns_s:6.2f} {ns_d:6.2f} "
                  f"{build_s:7.1f} {diff:10.1e}", flush=True)
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: n=5, orders 1..3, 50 train sequences")
    ap.add_argument("--labels", default="5,10,26", help="label counts n (comma-separated)")
    ap.add_argument("--max-order", type=int, default=5, help="largest CRF order (table 1)")
    ap.add_argument("--dense-orders", default="3,4,5", help="orders compared in table 2")
    ap.add_argument("--dense-labels", default="5,10", help="label counts compared in table 2")
    ap.add_argument("--true-order", type=int, default=2, help="order of the generating model")
    ap.add_argument("--sigma", type=float, default=0.5, help="observation noise std-dev")
    ap.add_argument("--train", type=int, default=500, help="training sequences")
    ap.add_argument("--length", type=int, default=50, help="sequence length")
    ap.add_argument("--time-tokens", type=int, default=5000,
                    help="table 1 times expectations on the first this-many tokens")
    ap.add_argument("--dense-seqs", type=int, default=20, help="most sequences timed in table 2")
    ap.add_argument("--dense-budget", type=float, default=8.0,
                    help="seconds of dense work per timing repeat in table 2")
    ap.add_argument("--max-dense", type=float, default=2e6, help="largest n^(k+1) expanded")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    labels = [int(v) for v in args.labels.split(",")]
    dense_orders = [int(v) for v in args.dense_orders.split(",")]
    dense_labels = [int(v) for v in args.dense_labels.split(",")]
    if args.quick:
        labels, dense_labels = [5], [5]
        args.max_order, args.train, args.length, args.time_tokens = 3, 50, 30, 1500
        dense_orders, args.dense_seqs = [2, 3], 10
    orders = list(range(1, args.max_order + 1))
    t0 = time.perf_counter()
    models = table1(args, labels, orders)
    table2(args, models, [n for n in dense_labels if n in labels], dense_orders)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
