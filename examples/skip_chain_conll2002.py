"""Skip-chain against linear-chain CRF on CoNLL-2002 Spanish NER (Sutton & McCallum §1.5).

Both models use the observation functions of stdlib/skip_chain.fgl; the
skip-chain model adds its skip template -- edges between identical
capitalised words in the same document, with the OR of the two ends'
observations (Sutton & McCallum eq. 1.61); by default (``--pairs
nearest``) only from each word to its next repeat, a path per name rather
than a clique, which trains far better (see examples/skip_chain_ner.py) --
and runs TRP belief propagation; the linear chain (the same spec without
the skip template) runs the exact chain engine.

The Spanish files have no -DOCSTART- lines, but every EFE news item opens
with a dateline sentence such as "Santander , 25 may ( EFE ) ."; a document
starts at each dateline (and is cut into windows of --doc-window sentences
if longer).  The skip chain is also trained by the piecewise and the
pseudo-likelihood objectives (``--objectives``).  Prints, for every model:
training seconds, BP iteration / convergence statistics, per-type and
overall P/R/F1 (conlleval rules), and the number of *inconsistently
mislabelled* tokens of Sutton & McCallum Table 1.3 -- tokens mislabelled
although the same word is labelled correctly elsewhere in the same
document.

    python examples/skip_chain_conll2002.py                 # ~ a few minutes on 2 cores
    python examples/skip_chain_conll2002.py --train-docs 300 --max-iter 100 --test testb
    python examples/skip_chain_conll2002.py --quick         # 10 + 10 documents, seconds
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fgl.api import CRF  # noqa: E402
from fgl.data.sentence import Sentence  # noqa: E402
from fgl.evaluation.evaluate import evaluate  # noqa: E402
from fgl.io.conll import read_conll  # noqa: E402
from fgl.lang.checks import validate  # noqa: E402
from fgl.lang.parser import parse_spec  # noqa: E402
from fgl.lang.settings import resolve_train  # noqa: E402
from fgl.learn.learner import train_lbfgs  # noqa: E402
from fgl.registry import compile_model as compile_loopy_model  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "conll2002"
SPEC = ROOT / "stdlib" / "skip_chain.fgl"
TYPES = ["PER", "LOC", "ORG", "MISC"]


# ---------------------------------------------------------------- data

def is_dateline(words: list[str]) -> bool:
    """'Melbourne ( Australia ) , 25 may ( EFE ) .': an agency tag in brackets
    in a short sentence."""
    if len(words) > 25:
        return False
    return any(w.startswith("EFE") and 0 < k < len(words) - 1 and words[k - 1] == "(" and
               words[k + 1] == ")" for k, w in enumerate(words))


def documents(sentences: list[Sentence], window: int) -> list[Sentence]:
    """Renumber ``doc``: -DOCSTART- documents when the file has them, else a
    new document at each dateline; documents longer than ``window``
    sentences are cut into windows."""
    has_docstart = len({s.doc for s in sentences}) > 1
    out, doc, in_doc, prev = [], -1, 0, None
    for s in sentences:
        new = (s.doc != prev) if has_docstart else is_dateline([r[0] for r in s.rows])
        prev = s.doc
        if doc < 0 or new or (window and in_doc >= window):
            doc, in_doc = doc + 1, 0
        in_doc += 1
        out.append(Sentence(s.rows, s.lines, doc, s.file))
    return out


def first_docs(sentences: list[Sentence], n: int) -> list[Sentence]:
    return sentences if n <= 0 else [s for s in sentences if s.doc < n]


def strip_labels(sentences: list[Sentence]) -> list[Sentence]:
    return [Sentence([r[:-1] for r in s.rows], s.lines, s.doc, s.file) for s in sentences]


# ---------------------------------------------------------------- specs

def linear_spec_text(skip_text: str) -> str:
    """The skip-chain spec without its skip template and infer statement:
    the same observations, an exact linear chain."""
    lines, out, skipping = skip_text.splitlines(), [], False
    for line in lines:
        head = line.strip()
        if head.startswith("template skip:"):
            skipping = True
        elif skipping and (head.startswith(("template", "infer", "train", "obs")) or not head):
            skipping = False
        if skipping or head.startswith("infer"):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- scoring

def inconsistent(sentences: list[Sentence], gold, pred) -> Counter:
    """Per gold entity type: tokens mislabelled although the same word is
    labelled correctly elsewhere in the same document (Sutton & McCallum Table 1.3)."""
    right: dict[tuple[int, str], int] = defaultdict(int)
    for s, g, p in zip(sentences, gold, pred):
        for r, a, b in zip(s.rows, g, p):
            right[s.doc, r[0]] += a == b
    out: Counter = Counter()
    for s, g, p in zip(sentences, gold, pred):
        for r, a, b in zip(s.rows, g, p):
            if a != b and right[s.doc, r[0]] > 0:
                out[a.split("-", 1)[-1] if a != "O" else "O"] += 1
    return out


def bp_decode(crf: CRF, data) -> tuple[list[list[str]], dict]:
    """Max-product BP on every encoded instance: the predicted labels per
    sentence, and the iterations / convergence of the runs."""
    t0 = time.perf_counter()
    pred = crf.model.decode(crf.weights, data, crf.jobs)
    stats = {"instances": pred.stats.instances, "max_iterations": pred.stats.max_iterations,
             "not_converged": pred.stats.not_converged, "seconds": time.perf_counter() - t0}
    return pred.tokens(), stats


def skip_edge_count(model, data) -> int:
    ti = [t.name for t in model.templates].index("skip")
    return int(np.sum(data.fac_tpl == ti))


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train-docs", type=int, default=100,
                    help="first N training documents (0: all)")
    ap.add_argument("--test", choices=["testa", "testb"], default="testa")
    ap.add_argument("--test-docs", type=int, default=0, help="first N test documents (0: all)")
    ap.add_argument("--max-iter", type=int, default=50, help="L-BFGS iterations for both models")
    ap.add_argument("--doc-window", type=int, default=40,
                    help="cut documents longer than this many sentences (0: never)")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--pairs", choices=["nearest", "all"], default="nearest",
                    help="skip edges from each capitalised word to the next identical word "
                         "only (`and nearest`, the default: a path per name), or between "
                         "every pair as stdlib/skip_chain.fgl writes it (a clique per name)")
    ap.add_argument("--objectives", default="piecewise,pseudo_likelihood",
                    help="local training objectives to compare on the skip chain "
                         "(comma-separated; empty: none)")
    ap.add_argument("--quick", action="store_true",
                    help="10 training and 10 test documents, 10 iterations")
    args = ap.parse_args()
    if args.quick:
        args.train_docs, args.test_docs, args.max_iter = 10, 10, 10

    train_path, test_path = DATA / "esp.train", DATA / f"esp.{args.test}"
    if not train_path.exists() or not test_path.exists():
        print(f"CoNLL-2002 data not found under {DATA}; nothing to do.")
        return 0

    train = first_docs(documents(read_conll(train_path, encoding="latin-1"), args.doc_window),
                       args.train_docs)
    test = first_docs(documents(read_conll(test_path, encoding="latin-1"), args.doc_window),
                      args.test_docs)
    for name, sents in (("train", train), (args.test, test)):
        sizes = Counter()
        for s in sents:
            sizes[s.doc] += len(s)
        print(f"{name}: {len(sizes)} documents, {len(sents)} sentences, "
              f"{sum(sizes.values())} tokens (largest document {max(sizes.values())} tokens)")

    skip_text = SPEC.read_text(encoding="utf-8")
    if args.pairs == "nearest":
        capitalised = 'regex(word[i], "^[A-Z]")'
        skip_text = skip_text.replace(capitalised, capitalised + " and nearest", 1)
    linear_text = linear_spec_text(skip_text)
    gold = [s.column(-1) for s in test]
    results = {}

    # ---- linear chain (exact chain engine)
    t0 = time.perf_counter()
    linear = CRF(linear_text, max_iter=args.max_iter, jobs=args.jobs).fit_sentences(train)
    secs = time.perf_counter() - t0
    pred = linear.predict_sentences(strip_labels(test))
    results["linear-chain"] = (pred, secs, linear.training_log, None, None)

    # ---- skip chain (TRP BP); trained through the learner directly so the
    # BP statistics of every objective evaluation can be collected
    spec = validate(parse_spec(skip_text, str(SPEC)))
    t0 = time.perf_counter()
    model, data = compile_loopy_model(spec, train, SPEC.parent,
                                      resolve_train(spec, {"max_iter": args.max_iter}))
    compile_secs = time.perf_counter() - t0
    n_train_skip = skip_edge_count(model, data)
    print(f"skip-chain compiled in {compile_secs:.1f}s: {model.program.n_features} features, "
          f"{data.n_sequences} instances, {n_train_skip} skip edges in training "
          f"({sum(g.n_cycles() for g in data.graphs)} independent cycles)")
    evals = []

    def progress(row):
        if "recovery" not in row:
            evals.append(row["inference"])

    w, log = train_lbfgs(model.program, data, model.feat_sigma, max_iter=args.max_iter,
                         jobs=args.jobs, progress=progress)
    secs = time.perf_counter() - t0
    skip = CRF(spec, jobs=args.jobs)
    skip.model, skip.weights, skip.training_log = model, w, log
    test_data = model.encode(strip_labels(test))
    print(f"skip edges in {args.test}: {skip_edge_count(model, test_data)}")
    pred, dec = bp_decode(skip, test_data)
    train_bp = {"max_iterations": max((e.max_iterations for e in evals), default=0),
                "not_converged": sum(e.not_converged for e in evals),
                "iterations": len(evals)}
    results["skip-chain"] = (pred, secs, log, train_bp, dec)

    # ---- the same skip chain trained by local objectives (no BP while
    # training; decoded by the same max-product TRP)
    for kind in filter(None, args.objectives.split(",")):
        text = skip_text.replace("train {", f"train {{\n  objective = {kind}", 1)
        t0 = time.perf_counter()
        local = CRF(text, max_iter=args.max_iter, jobs=args.jobs).fit_sentences(train)
        secs = time.perf_counter() - t0
        pred, dec = bp_decode(local, local.model.encode(strip_labels(test)))
        results[f"skip-{kind[:9]}"] = (pred, secs, local.training_log, None, dec)

    # ---- tables
    print()
    print(f"{'model':<14} {'train s':>8} {'iters':>6} {'evals':>6} {'s/eval':>7} {'token acc':>9}")
    for name, (pred, secs, log, _, _) in results.items():
        rep = evaluate(gold, pred)
        print(f"{name:<14} {secs:8.1f} {len(log.iterations):6d} {log.evaluations:6d} "
              f"{log.eval_seconds / max(log.evaluations, 1):7.2f} {rep.accuracy:9.2f}")
    _, _, _, train_bp, dec = results["skip-chain"]
    print(f"\nskip-chain BP (TRP): training -- last evaluation of each of "
          f"{train_bp['iterations']} L-BFGS steps: max {train_bp['max_iterations']} BP iterations, "
          f"{train_bp['not_converged']} instance runs not converged; decoding {args.test} -- "
          f"{dec['instances']} instances, max {dec['max_iterations']} iterations, "
          f"{dec['not_converged']} not converged, "
          f"{dec['seconds']:.1f}s")

    print(f"\nentity P/R/F1 on {args.test} (conlleval chunks)")
    print(f"{'type':<8}" + "".join(f" {n + ' P':>15} {'R':>6} {'F1':>6}" for n in results))
    reports = {n: evaluate(gold, r[0]) for n, r in results.items()}
    for t in TYPES + ["overall"]:
        cells = []
        for rep in reports.values():
            s = rep.overall if t == "overall" else rep.chunks.get(t)
            if s:
                cells.append(f" {s.precision:15.2f} {s.recall:6.2f} {s.f1:6.2f}")
            else:
                cells.append(f" {'-':>15} {'-':>6} {'-':>6}")
        print(f"{t:<8}" + "".join(cells))

    print(f"\ninconsistently mislabelled tokens on {args.test} (Sutton & McCallum Table 1.3)")
    print(f"{'type':<8}" + "".join(f" {n:>13}" for n in results))
    counts = {n: inconsistent(test, gold, r[0]) for n, r in results.items()}
    for t in TYPES + ["O"]:
        print(f"{t:<8}" + "".join(f" {c[t]:13d}" for c in counts.values()))
    print(f"{'entities':<8}" + "".join(f" {sum(c[t] for t in TYPES):13d}" for c in counts.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
