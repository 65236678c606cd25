"""What n-best labellings and sequence probabilities cost against plain tagging.

``fgl tag --nbest K`` and ``CRF.predict_nbest`` run a k-best Viterbi pass
(``fgl.engines.sequence.nbest``: the best K partial labellings per forward
state, bounded heaps) and forward-backward for log Z; ``--probability`` is
the K = 1 case.  One table per model, printed only (nothing is asserted):
the seconds to tag the test sentences by Viterbi (``predict``), by
``predict_probability`` and by ``predict_nbest`` for several K, each the best
of a few runs after a warm-up, one thread, and its ratio to Viterbi's time
in the same run.  The models: a first-order and a second-order chain
(word and POS features) trained on CoNLL-2000 when ``../shared/data`` has
it, else on generated chunking data (``fgl.datasets.synth``).

    python examples/bench_nbest.py --quick        # seconds
    python examples/bench_nbest.py                # 2,000 training sentences, the whole test set
"""
from __future__ import annotations

import argparse
from pathlib import Path

from measure import best_time

import fgl
from fgl.datasets.synth import segment_sequences
from fgl.io.conll import read_conll

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "conll2000"

SPECS = {
    "first order": """columns word, pos, chunk
output chunk
template state: y[t] ~ word[t], pos[t], pos[t-1], pos[t+1]
template trans: y[t-1..t]
""",
    "second order": """columns word, pos, chunk
output chunk
template state: y[t] ~ word[t], pos[t], pos[t-1], pos[t+1]
template trans: y[t-2..t]
""",
}


def data(n_train: int, n_test: int) -> tuple[list, list, list, str]:
    """(X, y, X_test, what): CoNLL-2000 if present, else generated."""
    if (DATA / "train.txt").is_file():
        train = read_conll(DATA / "train.txt")[:n_train]
        test = read_conll(DATA / "test.txt")[:n_test]
        what = f"CoNLL-2000: {len(train)} training sentences, {len(test)} test sentences"
    else:
        train, test = segment_sequences(n_types=3, max_len=3, vocab=200, n_train=n_train,
                                        n_test=n_test, length=20, seed=1)
        train = [s.__class__([[r[0], r[0][:2], r[1]] for r in s.rows], s.lines, s.doc, s.file)
                 for s in train]
        test = [s.__class__([[r[0], r[0][:2], r[1]] for r in s.rows], s.lines, s.doc, s.file)
                for s in test]
        what = f"generated: {len(train)} training sentences, {len(test)} test sentences"
    X = [[r[:2] for r in s.rows] for s in train]
    y = [[r[2] for r in s.rows] for s in train]
    return X, y, [[r[:2] for r in s.rows] for s in test], what


def table(name: str, crf: fgl.CRF, X_test: list, ks: list[int], repeats: int) -> None:
    viterbi = best_time(lambda: crf.predict(X_test), repeats)
    rows = [("Viterbi (predict)", viterbi),
            ("predict_probability", best_time(lambda: crf.predict_probability(X_test),
                                              repeats))]
    rows += [(f"predict_nbest k={k}", best_time(lambda k=k: crf.predict_nbest(X_test, k),
                                                 repeats)) for k in ks]
    print(f"\n{name} ({crf.model.structure.n_forward} forward states, "
          f"{len(crf.model.labels)} labels)")
    print(f"{'what':<26}{'seconds':>10}{'x Viterbi':>11}")
    for what, seconds in rows:
        print(f"{what:<26}{seconds:>10.3f}{seconds / viterbi:>10.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small data, seconds")
    ap.add_argument("--train", type=int, default=2000, help="training sentences")
    ap.add_argument("--test", type=int, default=2012, help="test sentences")
    ap.add_argument("--max-iter", type=int, default=100, help="L-BFGS iterations")
    ap.add_argument("--k", default="1,5,10,50", help="the K values, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs (the best is shown)")
    args = ap.parse_args()
    if args.quick:
        args.train, args.test, args.max_iter, args.repeats = 100, 50, 10, 1
    X, y, X_test, what = data(args.train, args.test)
    print(f"n-best and probabilities against Viterbi; {what}; one thread")
    for name, spec in SPECS.items():
        crf = fgl.CRF(spec, max_iter=args.max_iter, jobs=1).fit(X, y)
        table(name, crf, X_test, [int(k) for k in args.k.split(",")], args.repeats)


if __name__ == "__main__":
    main()
