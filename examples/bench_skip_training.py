"""How the clique skip chain (Sutton & McCallum §1.5) trains against its
linear chain, side by side in one run: whole training time (compile and
train), how training ended, evaluations per iteration, F1, F1 on persons
(the speaker field of the paper's seminar data), inconsistently mislabelled tokens (Table 1.3) and
peak memory, for each trainer of the skip chain.

Data, each with the spec of docs/language.md's skip-chain advice (the
linear chain is the same spec without its skip template):

* ``announcements`` -- generated talk announcements
  (``fgl.datasets.records.announcements``) scaled to seminar size: 300 training
  documents of about 270 tokens whose speaker and organisation names come
  back 5 to 20 times, 184 test documents (no download);
* ``conll2003`` -- CoNLL-2003 English, all 946 training articles, scored
  on testa (the development set) and testb (the test set);
* ``ned`` -- CoNLL-2002 Dutch, all 287 training articles, testa and testb
  (Latin-1; run-together lines padded, ``examples/skip_chain_ner.py``).

The skip template's prior follows the advice too: ``(sigma = 0.5)`` below
``LARGE_CORPUS`` training tokens, ``(sigma = 1)`` from there on (a whole
news corpus); ``--skip-sigma`` overrides it.

The real corpora are read in place from ../shared/data and skipped when
absent.  Each model trains until its own rule stops it (L-BFGS: the
relative-improvement rule; SGD: CRFsuite's ``period``/``delta`` rule) or
``--max-iter`` / ``--epochs``, in a fresh process of its own (spawned, the
corpus handed to it), so that its peak memory is its own: trained one
after the other in one process, the second model's peak also held what the
allocator kept of the first's (on all of CoNLL-2003, the skip chain's peak
was 746 MB after the linear chain and 601 MB alone).

    python examples/bench_skip_training.py                        # every corpus
    python examples/bench_skip_training.py --corpus announcements
    python examples/bench_skip_training.py --quick                # seconds
"""
from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from measure import RssPeak  # noqa: E402
from skip_chain_conll2002 import inconsistent, strip_labels  # noqa: E402
from skip_chain_ner import CORPORA, load  # noqa: E402

from fgl.api import CRF  # noqa: E402
from fgl.datasets.records import announcements  # noqa: E402
from fgl.evaluation.evaluate import evaluate  # noqa: E402

# docs/language.md, "Which observations a skip factor should read" and its example
STATE = """columns {columns}
output label

obs w   = word[t-1..t+1]
obs lw  = lower(word[t])
obs shp = shape(word[t])
{pos}
template state: y[t] ~ bias, w, lw, shp{uses_p}
template trans: y[t-1..t]
"""
SKIP = """template skip:  (y[i], y[j]) where word[i] == word[j] and regex(word[i], "^[A-Z]")
                within document
                ~ bias, either(w), either(lw), either(shp){either_p} (sigma = {sigma:g})
infer trw
"""
# docs/language.md, "Give the skip template a stronger prior": 0.5 up to about 100,000
# training tokens, 1 on whole news corpora (about 200,000)
LARGE_CORPUS = 150_000


def skip_sigma(train) -> float:
    """The skip template's sigma the docs advise for this much training data."""
    return 1.0 if sum(len(s) for s in train) >= LARGE_CORPUS else 0.5


def specs(columns: str, max_iter: int, epochs: int, sigma: float = 0.5) -> dict[str, str]:
    """The linear chain and the skip chain under each trainer (``sigma``:
    the skip template's)."""
    pos = "pos" in columns
    head = STATE.format(columns=columns, pos="obs p   = pos[t-1..t+1]\n" if pos else "",
                        uses_p=", p" if pos else "")
    skip = SKIP.format(either_p=", either(p)" if pos else "", sigma=sigma)
    lbfgs = f"train {{ max_iter = {max_iter} }}\n"
    sgd = f"train {{ trainer = sgd  epochs = {epochs} }}\n"
    return {"linear/lbfgs": head + lbfgs, "skip/lbfgs": head + skip + lbfgs,
            "skip/sgd": head + skip + sgd}


def corpus(name: str, quick: bool, train_docs: int = 0):
    """(train, {split: test sentences}, columns) of one corpus (the first
    ``train_docs`` training articles, 0: all), or None when its files are
    absent."""
    if name == "announcements":
        n_train, n_test = (20, 10) if quick else (300, 184)
        train, test = announcements(n_train, n_test, repeats=(5, 20), sections=8, seed=0)
        return train.sentences, {"test": test.sentences}, "word, label"
    directory, prefix, _, _, columns = CORPORA[name]
    splits = ("testa", "testb")
    if not all((directory / f"{prefix}.{s}").exists() for s in ("train", *splits)):
        return None
    docs = 10 if quick else 0
    return (load(name, "train", docs or train_docs), {s: load(name, s, docs) for s in splits},
            columns)


def run_alone(text: str, train, tests: dict, jobs: int) -> dict:
    """``run`` in a fresh process (module docstring)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(run, text, train, tests, jobs).result()


def scores(crf: CRF, test) -> tuple[float, float, int]:
    """(F1, PER F1, inconsistently mislabelled tokens) of ``crf`` on ``test``."""
    pred = crf.tag_sentences(strip_labels(test)).tokens()
    gold = [s.column(-1) for s in test]
    rep = evaluate(gold, pred, scheme="iob")
    per = rep.chunks["PER"].f1 if "PER" in rep.chunks else 0.0
    return rep.overall.f1, per, sum(inconsistent(test, gold, pred).values())


def run(text: str, train, tests: dict, jobs: int) -> dict:
    t0 = time.perf_counter()
    with RssPeak() as rss:
        crf = CRF(text, jobs=jobs).fit_sentences(train)
    whole = time.perf_counter() - t0
    log = crf.training_log
    return {"whole": whole, "compile": log.compile_seconds or 0.0,
            "iterations": len(log.iterations), "evaluations": log.evaluations,
            "message": log.message, "recoveries": len(log.recoveries), "peak": rss.peak_mb,
            "scores": {split: scores(crf, test) for split, test in tests.items()},
            "account": log.time_account() if log.evaluations else ""}


def header(splits) -> str:
    """The table's head: per test split, F1, PER F1 and inconsistent tokens."""
    per_split = "".join(f" {s + ' F1':>9} {'PER':>6} {'incons.':>7}" for s in splits)
    return (f"{'model':<13} {'whole s':>8} {'x lin':>6} {'iters':>6} {'evals':>6} {'ev/it':>6}"
            f"{per_split} {'peak MB':>8}  ended")


def row(name: str, r: dict, base: dict) -> str:
    """One model's line of the table (``base``: the linear chain's result)."""
    per_it = r["evaluations"] / max(r["iterations"], 1) if r["evaluations"] else 0.0
    per_split = "".join(f" {f1:9.2f} {per:6.2f} {incons:7d}"
                        for f1, per, incons in r["scores"].values())
    return (f"{name:<13} {r['whole']:8.1f} {r['whole'] / base['whole']:6.2f} "
            f"{r['iterations']:6d} {r['evaluations']:6d} {per_it:6.2f}"
            f"{per_split} {r['peak']:8.0f}  "
            f"{r['message']}" + (f" [{r['recoveries']} recoveries]" if r["recoveries"] else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=["announcements", "conll2003", "ned", "all"],
                    default="all")
    ap.add_argument("--max-iter", type=int, default=1000, help="L-BFGS iteration limit")
    ap.add_argument("--epochs", type=int, default=100, help="SGD epoch limit")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--train-docs", type=int, default=0,
                    help="the first N training articles of CoNLL-2003 and Dutch (0: all)")
    ap.add_argument("--models", default="linear/lbfgs,skip/lbfgs,skip/sgd",
                    help="which of linear/lbfgs, skip/lbfgs, skip/sgd (linear/lbfgs is the "
                         "reference and always runs)")
    ap.add_argument("--skip-sigma", type=float, default=0.0,
                    help="the skip template's sigma (0: the docs' advice, ``skip_sigma``)")
    ap.add_argument("--quick", action="store_true",
                    help="10 articles (20 announcements), 10 iterations or epochs")
    a = ap.parse_args()
    if a.quick:
        a.max_iter, a.epochs = 10, 10
    names = ["announcements", "conll2003", "ned"] if a.corpus == "all" else [a.corpus]
    wanted = {"linear/lbfgs", *a.models.split(",")}
    for name in names:
        print(f"== {name}")
        found = corpus(name, a.quick, a.train_docs)
        if found is None:
            print("data not found in ../shared/data; skipped.")
            continue
        train, tests, columns = found
        docs = Counter(s.doc for s in train)
        sigma = a.skip_sigma or skip_sigma(train)
        print(f"train: {len(docs)} documents, {sum(len(s) for s in train)} tokens; test: "
              + ", ".join(f"{split} {len({s.doc for s in test})} documents"
                          for split, test in tests.items())
              + f"; the skip template at (sigma = {sigma:g})")
        print(header(tests), flush=True)
        base = None
        for m, text in specs(columns, a.max_iter, a.epochs, sigma).items():
            if m in wanted:   # (each line as its model finishes)
                r = run_alone(text, train, tests, a.jobs)
                base = base or r
                print(row(m, r, base), flush=True)
                if r["account"]:
                    print(f"  {r['account']}", flush=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
