"""Skip-chain against linear-chain CRF on NER data with article boundaries
(Sutton & McCallum §1.5, Table 1.3).

Reads in place, from ../shared/data next to the checkout:

* ``conll2003`` -- CoNLL-2003 English (Reuters), ``word POS chunk tag``,
  IOB1 tags (an ``I-`` tag may start an entity), ``-DOCSTART-`` between
  articles;
* ``ned`` -- CoNLL-2002 Dutch, ``word POS tag``, Latin-1, ``-DOCSTART-``
  between articles.  Some lines lost the space between word and POS tag
  (``Belgi\\x81EN B-LOC``: 2 fields where 3 are expected); they are read with
  ``read_conll(..., short_lines="pad")`` -- the run-together word is kept as
  the word, the POS becomes ``_`` and the gold label stays -- and a warning
  counts them.  The files are not changed.

Every model shares the token features (one spec text; the linear chain is
the skip chain without its skip template).  The skip chains add a factor
between identical capitalised words of the same article -- between every
pair (``--pairs all``: a clique per name, Sutton & McCallum's model) or from
each mention to the next only (``--pairs nearest``: a path) -- whose
features are, as in the paper (§1.5.2), the label pair conjoined with the
OR of the input features at the two ends: here the words around each
mention, the word, its shape and the POS tags (eq. 1.61).  Each skip chain
runs under belief propagation on the tree-based schedule (Bethe, ``trp``)
and under tree-reweighted BP (``trw``; Wainwright, Jaakkola & Willsky
2005: one fixed point, a convex objective); the linear chain runs the
exact chain engine.
Entities are scored conlleval-style (``scheme="iob"`` reads IOB1 and IOB2
alike).  Printed per model: training seconds, seconds per objective
evaluation, evaluations, overall P/R/F1, F1 per type, and the
*inconsistently mislabelled* tokens of Table 1.3 -- tokens mislabelled
although the same word is labelled correctly elsewhere in the same article.
Also printed: how often each type's names repeat within an article, and
each skip chain's F1 gain on the type whose names repeat most, its time per
evaluation and peak memory against the linear chain's.

Every model trains with sigma 10 until L-BFGS's stopping rule ends it (at
most ``--max-iter``, 1000); the skip template has a prior of its own,
``(sigma = 1)`` (``--skip-sigma``; 0 drops it), which keeps its label-pair
weights from overfitting at convergence.  The cliques train badly under the
Bethe approximation: its objective jumps between BP fixed points, the line
search fails and training stops early.  Under TRW they train to the
stopping rule.

    python examples/skip_chain_ner.py                       # both corpora, every variant
    python examples/skip_chain_ner.py --pairs all --infer trw   # the paper's cliques under TRW
    python examples/skip_chain_ner.py --corpus ned --train-docs 100 --max-iter 100
    python examples/skip_chain_ner.py --quick               # 10 + 10 articles, seconds
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from measure import RssPeak  # noqa: E402
from skip_chain_conll2002 import first_docs, inconsistent, strip_labels  # noqa: E402

from fgl.api import CRF  # noqa: E402
from fgl.data.sentence import Sentence  # noqa: E402
from fgl.evaluation.evaluate import Report, evaluate  # noqa: E402
from fgl.io.conll import ShortLineWarning, read_conll  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
TYPES = ["PER", "LOC", "ORG", "MISC"]

CORPORA = {
    # name: (directory, file prefix, test file, encoding, columns)
    "conll2003": (DATA / "conll2003", "eng", "testa", "ascii", "word, pos, chunk, label"),
    "ned": (DATA / "conll2002", "ned", "testa", "latin-1", "word, pos, label"),
}


# ---------------------------------------------------------------- specs

# Skip factors (eq. 1.61): between identical capitalised words of an article
# (`and nearest`: each to the next one only); features the label pair on its
# own (bias) and conjoined with the OR of the two ends' token observations,
# so "Mr X" or "X said" at one mention reaches the others.  Bethe BP runs
# tight (tol 1e-6): a loose tolerance makes its objective too noisy for the
# line search.
SKIP = """template skip:       (y[i], y[j]) where word[i] == word[j] and {where}
                     within document
                     ~ {features}

infer trp(max_iter = 300, tol = 1e-6)
"""
SKIP_FEATURES = "bias, either(w), either(lw), either(shp), either(p)"
SKIP_WHERE = 'regex(word[i], "^[A-Z]") and nearest'


def spec_texts(columns: str, max_iter: int, where: str = SKIP_WHERE,
               features: str = SKIP_FEATURES) -> tuple[str, str]:
    """(linear chain, skip chain): one spec text, the skip template added.

    Token features (Sutton & McCallum §1.5.1): the word, its lower case,
    shape, regex class and 3-letter prefix/suffix, the neighbouring words,
    POS tags (and chunk tags when the corpus has them) in a window of one,
    and sentence start/end."""
    chunk = "obs c    = chunk[t-1..t+1]\n" if "chunk" in columns else ""
    uses_c = ", c" if chunk else ""
    head = f"""model "NER, token features of Sutton & McCallum §1.5.1"

columns {columns}
output label

obs w    = word[t-1..t+1]
obs lw   = lower(word[t])
obs shp  = shape(word[t])
obs cls  = class(word[t])
obs pre  = prefix(lower(word[t]), 3)
obs suf  = suffix(lower(word[t]), 3)
obs p    = pos[t-1..t+1]
{chunk}obs edge = bos | eos

template state:      y[t] ~ bias, w, lw, shp, cls, pre, suf, p{uses_c}, edge
template transition: y[t-1..t]
"""
    train = f"\ntrain {{\n  sigma = 10\n  max_iter = {max_iter}\n}}\n"
    return head + train, head + SKIP.format(where=where, features=features) + train


# ---------------------------------------------------------------- data

def load(corpus: str, split: str, n_docs: int) -> list[Sentence]:
    """The first ``n_docs`` articles (0: all) of one split, read in place."""
    directory, prefix, _, encoding, _ = CORPORA[corpus]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ShortLineWarning)
        sentences = read_conll(directory / f"{prefix}.{split}", encoding=encoding,
                               short_lines="pad")
    for w in caught:
        print(f"  note: {w.message}")
    return first_docs(sentences, n_docs)


def describe(name: str, sentences: list[Sentence]) -> str:
    docs = Counter(s.doc for s in sentences)
    return (f"{name}: {len(docs)} articles, {len(sentences)} sentences, "
            f"{sum(len(s) for s in sentences)} tokens")


def repetition(sentences: list[Sentence]) -> dict[str, float]:
    """Per gold type: the percentage of its entity tokens whose word occurs
    again, capitalised, elsewhere in the same article (what skip edges
    link)."""
    seen: Counter = Counter()
    for s in sentences:
        for r in s.rows:
            if r[0][:1].isupper():
                seen[s.doc, r[0]] += 1
    tokens: Counter = Counter()
    repeated: Counter = Counter()
    for s in sentences:
        for r in s.rows:
            if r[-1] != "O":
                t = r[-1].split("-", 1)[-1]
                tokens[t] += 1
                repeated[t] += seen[s.doc, r[0]] > 1
    return {t: 100.0 * repeated[t] / tokens[t] for t in tokens}


# ---------------------------------------------------------------- run

def run(name: str, text: str, train, test, jobs: int) -> dict:
    t0 = time.perf_counter()
    with RssPeak() as rss:
        crf = CRF(text, jobs=jobs).fit_sentences(train)
    secs = time.perf_counter() - t0
    peak_mb = rss.peak_mb
    log = crf.training_log
    t0 = time.perf_counter()
    tagged = crf.tag_sentences(strip_labels(test))
    pred = tagged.tokens()
    gold = [s.column(-1) for s in test]
    return {"name": name, "train_s": secs, "evals": log.evaluations,
            "s_eval": log.eval_seconds / max(log.evaluations, 1), "peak_mb": peak_mb,
            "decode_s": time.perf_counter() - t0, "iterations": len(log.iterations),
            "message": log.message, "bp": tagged.stats,
            "report": evaluate(gold, pred, scheme="iob"),
            "inconsistent": inconsistent(test, gold, pred)}


def skip_infer(text: str, method: str) -> str:
    """The skip-chain spec with ``infer trp`` (as written) or ``infer trw``."""
    return text if method == "trp" else text.replace(
        "infer trp(max_iter = 300, tol = 1e-6)", "infer trw")


def table(results: list[dict], repeats: dict[str, float]) -> None:
    print(f"\n{'model':<11} {'train s':>8} {'s/eval':>7} {'evals':>6} {'P':>6} {'R':>6} "
          f"{'F1':>6} " + " ".join(f"{t + ' F1':>7}" for t in TYPES) + f" {'incons.':>8}")
    for r in results:
        rep: Report = r["report"]
        o = rep.overall
        per = " ".join(f"{rep.chunks[t].f1:7.2f}" if t in rep.chunks else f"{'-':>7}"
                       for t in TYPES)
        print(f"{r['name']:<11} {r['train_s']:8.1f} {r['s_eval']:7.2f} {r['evals']:6d} "
              f"{o.precision:6.2f} {o.recall:6.2f} {o.f1:6.2f} {per} "
              f"{sum(r['inconsistent'].values()):8d}")
    print("names repeated within an article (% of entity tokens): " +
          ", ".join(f"{t} {repeats[t]:.0f}" for t in TYPES if t in repeats))
    lin = results[0]
    top = max((t for t in TYPES if t in repeats), key=lambda t: repeats[t])
    for skp in results[1:]:
        a, b = (sum(r["inconsistent"].values()) for r in (lin, skp))
        gain = (skp["report"].chunks[top].f1 if top in skp["report"].chunks else 0.0) - \
            (lin["report"].chunks[top].f1 if top in lin["report"].chunks else 0.0)
        per = skp["report"].chunks["PER"].f1 - lin["report"].chunks["PER"].f1
        print(f"{skp['name']} - linear: overall F1 "
              f"{skp['report'].overall.f1 - lin['report'].overall.f1:+.2f}, "
              f"{top} F1 (names repeat most) {gain:+.2f}, "
              + ("" if top == "PER" else f"PER F1 {per:+.2f}, ")
              + f"inconsistent mislabels {a} -> {b}"
              + (f" ({100.0 * (a - b) / a:.0f}% fewer)" if a else "")
              + f"; per evaluation {skp['s_eval'] / max(lin['s_eval'], 1e-9):.1f}x the linear "
              f"chain's, peak RSS {skp['peak_mb']:.0f} MB (linear {lin['peak_mb']:.0f} MB)")
        bp = skp["bp"]
        if bp is not None:
            print(f"  {skp['name']} decoding: {bp.instances} articles, {bp.not_converged} not "
                  f"converged, <= {bp.max_iterations} iterations; training stopped: "
                  f"{skp['message']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=["conll2003", "ned", "both"], default="both")
    ap.add_argument("--train-docs", type=int, default=150,
                    help="first N training articles (0: all)")
    ap.add_argument("--test-docs", type=int, default=0, help="first N test articles (0: all)")
    ap.add_argument("--test", choices=["testa", "testb"], default="testa")
    ap.add_argument("--max-iter", type=int, default=1000,
                    help="the most L-BFGS iterations of every model (most stop earlier by the "
                         "stopping rule)")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--pairs", choices=["all", "nearest", "both"], default="both",
                    help="skip edges between every pair of identical capitalised words (a "
                         "clique per name, the paper's), from each mention to the next one "
                         "only (a path), or one skip chain of each (default)")
    ap.add_argument("--infer", choices=["trp", "trw", "both"], default="both",
                    help="the skip chains' inference: loopy BP on the TRP schedule (Bethe), "
                         "tree-reweighted BP (convex), or one run of each (default)")
    ap.add_argument("--skip-sigma", type=float, default=1.0,
                    help="a prior of its own for the skip template, `(sigma = S)` (default 1: "
                         "it keeps the skip factors' label-pair weights from overfitting when "
                         "trained to convergence, docs/language.md; 0: the train block's "
                         "sigma 10)")
    ap.add_argument("--quick", action="store_true",
                    help="10 training and 10 test articles, 10 iterations")
    args = ap.parse_args()
    if args.quick:
        args.train_docs, args.test_docs, args.max_iter = 10, 10, 10

    corpora = ["conll2003", "ned"] if args.corpus == "both" else [args.corpus]
    for corpus in corpora:
        directory, prefix = CORPORA[corpus][:2]
        paths = [directory / f"{prefix}.{s}" for s in ("train", args.test)]
        missing = [str(p) for p in paths if not p.exists()]
        print(f"== {corpus}")
        if missing:
            print(f"data not found ({', '.join(missing)}); skipped.")
            continue
        train = load(corpus, "train", args.train_docs)
        test = load(corpus, args.test, args.test_docs)
        print(describe("train", train))
        print(describe(args.test, test))
        pairs = ["all", "nearest"] if args.pairs == "both" else [args.pairs]
        methods = ["trp", "trw"] if args.infer == "both" else [args.infer]
        columns = CORPORA[corpus][4]
        results = [run("linear", spec_texts(columns, args.max_iter)[0], train, test, args.jobs)]
        for p in pairs:
            where = SKIP_WHERE if p == "nearest" else SKIP_WHERE.replace(" and nearest", "")
            features = SKIP_FEATURES + (f" (sigma = {args.skip_sigma:g})" if args.skip_sigma
                                        else "")
            skip_text = spec_texts(columns, args.max_iter, where, features)[1]
            results += [run(f"{p}/{m}", skip_infer(skip_text, m), train, test, args.jobs)
                        for m in methods]
        table(results, repetition(test))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
