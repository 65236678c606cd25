"""First-order vs high-order CRFs on generated k-order Markov data.

Reproduces the synthetic experiment of Ye et al. 2009 §4.1 / Cuong et al. 2014 §3.1.1: an
order-k Markov model over n = 5 states with r = 2 possible next states per
history emits m = 3 Gaussian observations per token; CRFs with all observed
label patterns up to a maximum order 1..K are trained (sigma_reg = 1) on 500
sequences of length 20 and tested on 500 more.  Accuracy should rise with
the maximum order up to k and not beyond.

    python examples/markov_orders.py [--order 2] [--noise 1.0] [--max-order 4]
    python examples/markov_orders.py --quick     # 100 + 100 sequences, orders 1..3
"""
from __future__ import annotations

import argparse
import time

from fgl.api import CRF
from fgl.datasets.synth import markov_sequences
from fgl.evaluation.evaluate import evaluate

SPEC = """
model "order-{order} CRF on Markov data"
columns a1:number, a2:number, a3:number, label
output label
obs a = value(a1[t-1..t+1]) | value(a2[t-1..t+1]) | value(a3[t-1..t+1])
template state: y[t] ~ bias, a
template labels: y[t-{order}..t] patterns observed upto
train {{ sigma = 1  max_iter = 300 }}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--order", type=int, default=2, help="order k of the generating model")
    ap.add_argument("--noise", type=float, default=1.0, help="observation std-dev sigma")
    ap.add_argument("--max-order", type=int, default=4, help="largest CRF order to train")
    ap.add_argument("--train", type=int, default=500, help="training sequences")
    ap.add_argument("--test", type=int, default=500, help="test sequences")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true",
                    help="100 training and 100 test sequences, orders 1..3")
    a = ap.parse_args()
    if a.quick:
        a.train, a.test, a.max_order = 100, 100, 3
    train, test = markov_sequences(order=a.order, sigma=a.noise, n_train=a.train,
                                   n_test=a.test, seed=a.seed)
    gold = [s.column(-1) for s in test]
    X_test = [[row[:-1] for row in s.rows] for s in test]
    print(f"data: order-{a.order} Markov model, n=5 r=2 m=3, noise sigma={a.noise}, "
          f"{len(train)} train / {len(test)} test sequences of length 20")
    print(f"{'max order':>9} {'patterns':>8} {'|P|':>5} {'|S|':>5} {'features':>8} "
          f"{'iters':>5} {'train s':>7} {'accuracy':>8}")
    for order in range(1, a.max_order + 1):
        t0 = time.perf_counter()
        crf = CRF(SPEC.format(order=order)).fit_sentences(train)
        seconds = time.perf_counter() - t0
        acc = evaluate(gold, crf.predict(X_test), scheme="plain").accuracy
        st = crf.model.program.structure
        print(f"{order:9d} {len(st.patterns):8d} {st.n_forward:5d} {st.n_backward:5d} "
              f"{crf.model.program.n_features:8d} {len(crf.training_log.iterations):5d} "
              f"{seconds:7.1f} {acc:7.2f}%")


if __name__ == "__main__":
    main()
