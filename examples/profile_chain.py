"""Where a chain CRF's training evaluation spends its time, per token, and how
close each part is to the machine's memory-bandwidth floor.

A profile, not a timed test: prints a table, asserts nothing.  One objective
evaluation (log Z and expected counts, Sutton & McCallum §1.3.3 / §1.4.3) of
the chain engine splits into

* scoring -- the potentials of every token from its attributes' weights
  (``chain.potentials``);
* forward-backward -- the scaled recursions and marginals (Sutton & McCallum
  §1.4.6), with the model's constant rows;
* counting -- the expected counts gathered back into the gradient, the same
  walk of the attributes as scoring;
* the rest -- the dense rows' weight matrix, the blocks' row layout and the
  sum of the per-block counts into one gradient.

Each part is timed on one thread (CPU time, best of ``--repeats``): the
whole evaluation; the same data with every per-token attribute removed
(forward-backward and the rest: no scoring, no counting); a scoring-only
pass; counting is the whole less the other two.  The floor of a part is the
bytes it must stream from memory (the encoded attributes, for scoring and
counting alike: row id and value per attribute, an offset per token) over
the streaming read bandwidth measured here on one thread (a sum over a
--bandwidth-mb array).  Weights and counts are gathered and scattered by
attribute row, cache-resident for the frequent rows (the dense rows'
matrix) and random for the rest, so they have no streaming floor; their
bytes per token are printed beside it.

Data: CoNLL-2000 train (../shared/data/conll2000) with CRFsuite's chunking
features (``stdlib/crfsuite_chunking.fgl``, as examples/bench_conll2000.py;
``--spec`` another chain spec over its columns, e.g. the one
``fgl convert crfpp`` writes of CRF++'s chunking template),
the weights after --train-iter L-BFGS iterations (the paths the kernels take
depend on them).  Skips with a note when the data is absent.

    python examples/profile_chain.py                  # ~1 minute
    python examples/profile_chain.py --sentences 2000 --train-iter 5
    python examples/profile_chain.py --spec crfpp.fgl   # a spec of yours
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fgl.engines.sequence import chain, span_lattice  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "conll2000" / "train.txt"
SPEC = REPO / "stdlib" / "crfsuite_chunking.fgl"


@njit(cache=True, nogil=True)
def _score_all(units, features, tables, w, static, fill, w_dense, lab, pot):
    """``chain.potentials`` of every sequence (the scoring part alone)."""
    seq_ptr = units.seq_ptr
    for i in range(seq_ptr.shape[0] - 1):
        a = seq_ptr[i]
        chain.potentials(a, seq_ptr[i + 1] - a, units, features, tables, w, static, fill,
                         w_dense, lab, pot)


@njit(cache=True, nogil=True)
def _stream_sum(x):
    """A sequential read of ``x`` (the streaming bandwidth probe)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def best_cpu(fn, repeats: int) -> float:
    """The best CPU time of the calling thread over ``repeats`` calls, after one."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def read_bandwidth(mb: int, repeats: int) -> float:
    """Bytes per second of a one-thread sequential read of an ``mb`` MB array."""
    x = np.ones(mb * 2**20 // 8)
    return x.nbytes / best_cpu(lambda: _stream_sum(x), repeats)


def trained_model(spec: Path, sentences: int | None, iters: int):
    """The chain model of ``spec`` on CoNLL-2000 train and its weights after
    ``iters`` L-BFGS iterations (one thread)."""
    from fgl.io.conll import read_conll
    from fgl.lang.parser import read_spec
    from fgl.learn.learner import train_lbfgs
    from fgl.registry import compile_model

    train = read_conll(DATA)[:sentences]
    model, data = compile_model(read_spec(spec), train, spec.parent)
    w = train_lbfgs(model.program, data, model.feat_sigma, max_iter=iters, jobs=1)[0] \
        if iters else np.zeros(model.program.n_features)
    return model, data, w


def profile(prog, data, w, repeats: int) -> dict:
    """Seconds per evaluation of each part (module docstring), one thread."""
    st = prog.structure
    whole = best_cpu(lambda: prog.expectations(w, data, 1), repeats)
    bare = dataclasses.replace(data, tok_ptr=np.zeros_like(data.tok_ptr))
    no_attributes = best_cpu(lambda: prog.expectations(w, bare, 1), repeats)
    static, w_dense = prog.scoring(w)
    longest = int(np.diff(data.seq_ptr).max())
    pot = np.empty((longest, len(st.patterns)))
    fill = np.flatnonzero(prog.dynamic)
    units = span_lattice.units(data)
    scoring = best_cpu(lambda: _score_all(units, prog.features, st.tables, w, static, fill,
                                          w_dense, np.empty(st.n_labels), pot), repeats)
    return {"whole": whole, "scoring": scoring, "fb_rest": no_attributes,
            "counting": max(whole - no_attributes - scoring, 0.0)}


def attribute_bytes(prog, data) -> dict:
    """Bytes per token: streamed (the encoded attributes) and gathered (the
    weights of their rows: a dense or full row's label vector, else its
    features' patterns and weights)."""
    n_tok = data.n_tokens
    streamed = (data.tok_row.nbytes + data.tok_val.nbytes + data.tok_ptr.nbytes) / n_tok
    rows = data.tok_row
    dense = prog.row_dense[rows] >= 0
    full = prog.row_dense[rows] == chain.FULL_ROW
    n = prog.structure.n_labels
    per_feature = prog.feat_pattern.itemsize + 8
    sparse_feats = np.diff(prog.row_ptr)[rows[~dense & ~full]].sum()
    gathered = ((dense.sum() + full.sum()) * n * 8 + sparse_feats * per_feature) / n_tok
    return {"streamed": streamed, "gathered": gathered, "attributes": len(rows) / n_tok,
            "dense_share": float(dense.mean()), "full_share": float(full.mean())}


def print_table(parts: dict, sizes: dict, bandwidth: float, n_tok: int) -> None:
    ns = {k: v / n_tok * 1e9 for k, v in parts.items()}
    floor = sizes["streamed"] / bandwidth * 1e9
    print(f"{'part':<18}{'ns/token':>10}{'share':>8}{'floor ns':>10}{'x floor':>9}")
    print("-" * 55)
    for key, name, fl in (("scoring", "scoring", floor), ("fb_rest", "forward-backward+", None),
                          ("counting", "counting", floor), ("whole", "whole", 2 * floor)):
        share = ns[key] / ns["whole"]
        fl_txt = f"{fl:10.2f}{ns[key] / fl:9.1f}" if fl else f"{'-':>10}{'-':>9}"
        print(f"{name:<18}{ns[key]:10.1f}{share:8.0%}{fl_txt}")
    print(f"\n{sizes['attributes']:.1f} attributes per token ({sizes['dense_share']:.0%} in "
          f"dense rows, {sizes['full_share']:.0%} in full rows): {sizes['streamed']:.0f} "
          f"bytes streamed per token by scoring and again "
          f"by counting, {sizes['gathered']:.0f} bytes of weights gathered per token (and as "
          f"many counts scattered); streaming read bandwidth {bandwidth / 1e9:.1f} GB/s on one "
          f"thread.  forward-backward+: the recursions, marginals and the rest (module "
          f"docstring), measured with every attribute removed.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=None, help="first N training sentences")
    ap.add_argument("--train-iter", type=int, default=10,
                    help="L-BFGS iterations before profiling (0: zero weights)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--bandwidth-mb", type=int, default=512)
    ap.add_argument("--spec", type=Path, default=SPEC,
                    help="a chain spec over CoNLL-2000's columns (default: CRFsuite's features)")
    a = ap.parse_args()
    if not DATA.exists():
        print(f"skipped: {DATA} is absent (see ../shared/data/README)")
        return 0
    t0 = time.perf_counter()
    model, data, w = trained_model(a.spec, a.sentences, a.train_iter)
    prog = model.program
    print(f"{a.spec.name} on CoNLL-2000 train, {data.n_sequences} sentences, "
          f"{data.n_tokens} tokens; "
          f"{prog.n_features} features, {len(model.labels)} labels; weights after "
          f"{a.train_iter} L-BFGS iterations; one thread, CPU time, best of {a.repeats}\n")
    parts = profile(prog, data, w, a.repeats)
    bandwidth = read_bandwidth(a.bandwidth_mb, a.repeats)
    print_table(parts, attribute_bytes(prog, data), bandwidth, data.n_tokens)
    print(f"\n({time.perf_counter() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
