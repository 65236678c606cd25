"""A linear chain reading its tokens' other mentions against the plain chain
on NER articles (docs/language.md, "Aggregates over links and mentions").

Krishnan & Manning 2006 (§3-4) get the gain of non-local models from a
token's *other occurrences* in the document, as features of an exact chain
instead of skip edges.  Here the chain of ``examples/skip_chain_ner.py``
(Sutton & McCallum §1.5.1's token features) gains one observation: the
words around, the lower case, shape and POS tags of the capitalised word's
other mentions in its article,

    any(w | lw | shp | p over word[i] == word[j] and regex(word[i], "^[A-Z]")
        within document)

and trains with the exact chain engine.  Printed per model: training
seconds, evaluations, peak memory, entity P/R/F1, F1 per type and the
inconsistently mislabelled tokens of Sutton & McCallum Table 1.3.

    python examples/bench_mention_aggregates.py                      # 150 + 216 articles
    python examples/bench_mention_aggregates.py --train-docs 50 --test-docs 50
    python examples/bench_mention_aggregates.py --sigma 1 3   # the mentions' own prior too
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from skip_chain_ner import CORPORA, TYPES, describe, load, run, spec_texts  # noqa: E402

STATE = "template state:      y[t] ~ bias, w, lw, shp, cls, pre, suf, p"
MENTIONS = ('obs others = any(w | lw | shp | p over word[i] == word[j] and '
            'regex(word[i], "^[A-Z]") within document)\n')


def mention_spec(linear: str, sigma: float | None = None) -> str:
    """The linear chain with the other mentions' observations added to its
    state template, or (``sigma``) in a template of their own with that prior."""
    assert STATE in linear
    if sigma is None:
        return linear.replace(STATE, MENTIONS + STATE + ", others")
    return linear.replace(STATE, f"{MENTIONS}template mentions:   y[t] ~ others "
                                 f"(sigma = {sigma:g})\n{STATE}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=list(CORPORA), default="conll2003")
    ap.add_argument("--train-docs", type=int, default=150)
    ap.add_argument("--test-docs", type=int, default=216)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--sigma", type=float, nargs="*", default=[],
                    help="also the mentions in a template of their own with each of these priors")
    a = ap.parse_args()
    directory, _, test_split, _, columns = CORPORA[a.corpus]
    if not directory.exists():
        print(f"skipped: {directory} is not there")
        return
    train, test = load(a.corpus, "train", a.train_docs), load(a.corpus, test_split, a.test_docs)
    print(describe("train", train))
    print(describe("test", test))
    linear, _ = spec_texts(columns, a.max_iter)
    print(f"{'model':<22} {'train s':>8} {'evals':>6} {'peak MB':>8} {'F1':>6} "
          + " ".join(f"{t:>5}" for t in TYPES) + f" {'incons.':>8}")
    base = None
    models = [("linear chain", linear), ("chain + mentions", mention_spec(linear))]
    models += [(f"... own sigma {x:g}", mention_spec(linear, x)) for x in a.sigma]
    for name, text in models:
        r = run(name, text, train, test, a.jobs)
        rep = r["report"]
        base = base or r
        print(f"{name:<22} {r['train_s']:>8.1f} {r['evals']:>6} {r['peak_mb']:>8.0f} "
              f"{rep.overall.f1:>6.2f} "
              + " ".join(f"{rep.chunks[t].f1 if t in rep.chunks else 0.0:>5.1f}"
                         for t in TYPES)
              + f" {sum(r['inconsistent'].values()):>8}  "
              f"({r['train_s'] / base['train_s']:.2f}x time; "
              f"{r['message']})", flush=True)


if __name__ == "__main__":
    main()
