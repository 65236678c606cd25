"""Chain CRFs vs semi-Markov CRFs, first order vs high order, on one segmentation task.

Four models are trained on the same data and scored on the same test set:

* C1  — first-order chain CRF: token features, transitions y[t-1..t];
* C3  — high-order chain CRF: the same token features, every label pattern
  observed in training up to order ``--chain-order`` (default 3);
* SC1 — first-order semi-Markov CRF: the same ideas at segment level (first,
  last, before, after and inside words, shape, suffix, POS, length) and
  segment transitions s[j-1..j];
* SC2 — high-order semi-Markov CRF: SC1 plus every segment-label pattern
  observed in training up to order ``--semi-order`` (default 2).

Data: CoNLL-2000 (``../shared/data/conll2000`` next to the repository),
restricted to NP and VP chunks (every other chunk tag becomes O), columns
``word pos chunk``.  The semi-Markov models need a maximum segment length
L: the script prints the longest NP/VP chunk, takes L = min(that, --max-len)
and drops the training sentences holding a longer chunk (fgl refuses a BIO
chunk longer than the limit).  O is limited to segments of one token,
which is what ``from bio`` makes of O tokens.  ``--generated`` (and the
fallback when CoNLL-2000 is absent) uses ``fgl.datasets.synth.segment_sequences``
(columns ``word label``; no POS features).

Prints chunk P/R/F1, token accuracy, L-BFGS iterations, compile and
training seconds side by side; asserts nothing.

    python examples/segment_models.py                        # CoNLL-2000, 2000 sentences
    python examples/segment_models.py --generated            # generated segment data
    python examples/segment_models.py --train-sentences 500 --max-iter 50
    python examples/segment_models.py --quick                # 300 + 300 sentences, 30 iterations
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.datasets.synth import segment_sequences
from fgl.evaluation.evaluate import chunks, evaluate
from fgl.io.conll import read_conll

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "conll2000"
KEEP = ("NP", "VP")

# ------------------------------------------------------------------ specs
# {cols}: column list; {pos_*}: POS observations (empty on generated data).

CHAIN = """
model "{name}"
columns {cols}
output {out}

obs w   = word[t-1..t+1]
obs lw  = lower(word[t])
obs shp = shape(word[t])
obs suf = suffix(word[t], 3)
{pos_obs}
template state: y[t] ~ bias, w, lw, shp, suf{pos_use}
{labels}
train {{ sigma = {sigma}  max_iter = {max_iter} }}
"""

CHAIN_POS_OBS = "obs p   = pos[t-1..t+1]"
CHAIN_POS_USE = ", p"

SEMI = """
model "{name}"
columns {cols}
output {out}
segments max {L} [O = 1] from bio

obs first  = word[u]
obs last   = word[v]
obs before = word[u-1]
obs after  = word[v+1]
obs inside = lower(word[u..v])
obs shp    = shape(word[u]) & shape(word[v])
obs suf    = suffix(word[v], 3)
{pos_obs}
template segment: s[j] ~ bias, first, last, before, after, inside, shp, suf, length{pos_use}
{labels}
train {{ sigma = {sigma}  max_iter = {max_iter} }}
"""

SEMI_POS_OBS = """obs pfirst  = pos[u]
obs plast   = pos[v]
obs pbefore = pos[u-1]
obs pafter  = pos[v+1]
obs pinside = pos[u..v]"""
SEMI_POS_USE = ", pfirst, plast, pbefore, pafter, pinside"


def specs(has_pos: bool, L: int, chain_order: int, semi_order: int, sigma: float,
          max_iter: int) -> dict[str, str]:
    """The four spec texts, keyed by short model name."""
    cols = "word, pos, chunk" if has_pos else "word, chunk"
    common = dict(cols=cols, out="chunk", sigma=sigma, max_iter=max_iter)
    chain = dict(common, pos_obs=CHAIN_POS_OBS if has_pos else "",
                 pos_use=CHAIN_POS_USE if has_pos else "")
    semi = dict(common, L=L, pos_obs=SEMI_POS_OBS if has_pos else "",
                pos_use=SEMI_POS_USE if has_pos else "")
    return {
        "C1": CHAIN.format(name="first-order chain CRF", **chain,
                           labels="template transition: y[t-1..t]"),
        f"C{chain_order}": CHAIN.format(
            name=f"chain CRF, observed patterns up to order {chain_order}", **chain,
            labels=f"template transition: y[t-1..t]\n"
                   f"template high_order: y[t-{chain_order}..t] patterns observed upto"),
        "SC1": SEMI.format(name="first-order semi-Markov CRF", **semi,
                           labels="template transition: s[j-1..j]"),
        f"SC{semi_order}": SEMI.format(
            name=f"semi-Markov CRF, observed segment patterns up to order {semi_order}", **semi,
            labels=f"template transition: s[j-1..j]\n"
                   f"template high_order: s[j-{semi_order}..j] patterns observed upto"),
    }


# ------------------------------------------------------------------ data

def np_vp_only(sentences: list[Sentence]) -> list[Sentence]:
    """Every chunk tag other than B-/I-NP and B-/I-VP becomes O."""
    out = []
    for s in sentences:
        rows = [r[:-1] + [r[-1] if r[-1][2:] in KEEP and r[-1][:2] in ("B-", "I-") else "O"]
                for r in s.rows]
        out.append(Sentence(rows, s.lines, s.doc, s.file))
    return out


def longest_chunk(sentences: list[Sentence]) -> dict[str, int]:
    """Longest chunk (tokens) per chunk type."""
    best: dict[str, int] = {}
    for s in sentences:
        for typ, a, b in chunks(s.column(-1), "iob"):
            best[typ] = max(best.get(typ, 0), b - a)
    return best


def conll_data(directory: Path, n_train: int, n_test: int | None
               ) -> tuple[list[Sentence], list[Sentence]]:
    train = np_vp_only(read_conll(directory / "train.txt"))[:n_train]
    test = np_vp_only(read_conll(directory / "test.txt"))
    return train, test[:n_test] if n_test else test


# ------------------------------------------------------------------ main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CoNLL-2000 directory")
    ap.add_argument("--generated", action="store_true",
                    help="use generated segment data (also the fallback without CoNLL-2000)")
    ap.add_argument("--train-sentences", type=int, default=2000)
    ap.add_argument("--test-sentences", type=int, default=0,
                    help="CoNLL-2000 test sentences (0: all); generated: as many as training")
    ap.add_argument("--max-len", type=int, default=8,
                    help="cap on the maximum segment length L")
    ap.add_argument("--chain-order", type=int, default=3)
    ap.add_argument("--semi-order", type=int, default=2)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--only", default="", help="comma-separated subset, e.g. C1,SC1")
    ap.add_argument("--show-specs", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="300 training and 300 test sentences, 30 iterations")
    a = ap.parse_args()
    if a.quick:
        a.train_sentences, a.test_sentences, a.max_iter = 300, 300, 30

    generated = a.generated or not (a.data / "train.txt").exists()
    if generated:
        if not a.generated:
            print(f"no CoNLL-2000 at {a.data}; using generated data")
        seg_max = 5
        train, test = segment_sequences(n_types=3, max_len=seg_max, vocab=200,
                                        n_train=a.train_sentences,
                                        n_test=a.test_sentences or a.train_sentences,
                                        length=25, seed=0)
        print(f"data: generated segment_sequences (3 types + O, segments <= {seg_max}, "
              f"vocab 200, length 25, seed 0)")
        has_pos = False
    else:
        train, test = conll_data(a.data, a.train_sentences, a.test_sentences or None)
        print(f"data: CoNLL-2000 {a.data}, NP and VP chunks only (other chunks -> O)")
        has_pos = True

    longest = longest_chunk(train)
    longest_test = longest_chunk(test)
    top = max(longest.values())
    print("longest chunk in training data: "
          + ", ".join(f"{k} {v}" for k, v in sorted(longest.items()))
          + "; in test data: "
          + ", ".join(f"{k} {v}" for k, v in sorted(longest_test.items())))
    L = min(top, a.max_len)
    if top > L:
        keep = [s for s in train if all(b - a_ <= L for _, a_, b in chunks(s.column(-1), "iob"))]
        dropped = len(train) - len(keep)
        print(f"L = {L} (capped by --max-len): dropped {dropped} of {len(train)} training "
              f"sentences holding a longer chunk (all models train on the rest)")
        train = keep
    else:
        print(f"L = {L}")
    too_long_test = sum(1 for s in test for _, a_, b in chunks(s.column(-1), "iob") if b - a_ > L)
    if too_long_test:
        print(f"note: {too_long_test} test chunks are longer than L; the semi-Markov models "
              f"cannot predict them")
    n_tok = sum(len(s) for s in train)
    print(f"{len(train)} training sentences ({n_tok} tokens), {len(test)} test sentences "
          f"({sum(len(s) for s in test)} tokens); sigma {a.sigma:g}, max_iter {a.max_iter}, "
          f"jobs {a.jobs or 'all'}")

    models = specs(has_pos, L, a.chain_order, a.semi_order, a.sigma, a.max_iter)
    if a.only:
        wanted = a.only.split(",")
        models = {k: v for k, v in models.items() if k in wanted}
    gold = [s.column(-1) for s in test]
    X_test = [Sentence([r[:-1] for r in s.rows], s.lines, s.doc, s.file) for s in test]

    rows = []
    for name, text in models.items():
        if a.show_specs:
            print(f"--- {name}{text}")
        crf = CRF(text, jobs=a.jobs)
        t0 = time.perf_counter()
        crf.fit_sentences(train)
        fit_s = time.perf_counter() - t0
        log = crf.training_log
        t0 = time.perf_counter()
        pred = crf.predict_sentences(X_test)
        tag_s = time.perf_counter() - t0
        rep = evaluate(gold, pred, scheme="iob")
        st = crf.model.program.structure
        rows.append((name, len(st.patterns), st.n_forward, st.n_backward,
                     crf.model.program.n_features, rep, len(log.iterations),
                     fit_s - log.seconds, log.seconds, log.eval_seconds / max(log.evaluations, 1),
                     tag_s))
        print(f"  trained {name}: {len(log.iterations)} iterations, {fit_s:.1f}s", flush=True)

    print()
    head = (f"{'model':<5} {'|Z|':>4} {'|P|':>4} {'|S|':>5} {'features':>8} "
            f"{'P':>6} {'R':>6} {'F1':>6} {'NP F1':>6} {'VP F1':>6} {'acc':>6} "
            f"{'iters':>5} {'compile s':>9} {'train s':>7} {'s/eval':>6} {'tag s':>5}")
    print(head)
    print("-" * len(head))
    for name, Z, P, S, F, rep, it, comp, tr, per_eval, tag_s in rows:
        o = rep.overall
        f1 = {k: f"{rep.chunks[k].f1:6.2f}" if k in rep.chunks and not generated else f"{'-':>6}"
              for k in KEEP}
        print(f"{name:<5} {Z:4d} {P:4d} {S:5d} {F:8d} {o.precision:6.2f} {o.recall:6.2f} "
              f"{o.f1:6.2f} {f1['NP']} {f1['VP']} {rep.accuracy:6.2f} {it:5d} "
              f"{comp:9.1f} {tr:7.1f} {per_eval:6.3f} {tag_s:5.1f}")
    print("P/R/F1: chunk precision/recall/F1 (%, exact span and type); acc: token accuracy (%);"
          " compile s: spec compilation and feature extraction; train s: L-BFGS")


if __name__ == "__main__":
    main()
