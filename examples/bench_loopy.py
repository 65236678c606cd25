"""Loopy belief propagation throughput: skip-chain against linear-chain CRFs.

Models (the observations of stdlib/skip_chain.fgl in every row):

* linear / chain engine -- the spec without its skip template: the exact
  pattern-sparse forward-backward engine, one instance per sentence;
* linear / loopy BP -- the same chain pushed through the loopy program (a
  skip template whose predicate never holds), one instance per document:
  the factor graphs are trees, so BP is exact after one TRP sweep;
* skip-chain / TRP and skip-chain / flooding -- the skip-chain spec with the
  TRP schedule (as in the stdlib) and with damped flooding loopy BP.

Data: the first --docs documents of CoNLL-2002 esp.train (documents cut at
EFE datelines, see examples/skip_chain_conll2002.py), or generated
documents with repeated capitalised names when the data is absent.

Each model trains --max-iter L-BFGS iterations (training seconds per token
per objective evaluation); then BP runs single-threaded at the trained
weights on every instance: messages/second counts edges x 2 (both
directions) x BP iterations per instance, divided by the time of
``program.infer``; "kernel" times only the numba message-passing loop, so
infer - kernel is fgl's per-instance Python overhead (schedules, belief
tables, result objects).  Also prints compile seconds.

    python examples/bench_loopy.py                # ~2-3 minutes on 2 cores
    python examples/bench_loopy.py --docs 80 --max-iter 30
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from skip_chain_conll2002 import DATA, SPEC, documents, first_docs, linear_spec_text  # noqa: E402

from fgl.engines import loopy  # noqa: E402
from fgl.io.conll import Sentence, read_conll  # noqa: E402
from fgl.lang.checks import validate  # noqa: E402
from fgl.lang.parser import parse_spec  # noqa: E402
from fgl.learn.learner import train_lbfgs  # noqa: E402
from fgl.registry import compile_model  # noqa: E402
from fgl.registry import compile_model as compile_loopy_model  # noqa: E402

NEVER = ('template skip: (y[i], y[j]) where word[i] == word[j] and regex(word[i], "^$") '
         'within document ~ bias\ninfer trp(max_iter = 50, tol = 1e-4)\n')


def generated_documents(n_docs: int, seed: int = 0) -> list[Sentence]:
    """Documents of ~25 sentences: lower-case filler (O) and 4-6 fresh
    capitalised names per document (PER/LOC/ORG), each mentioned 2-6 times,
    with a type cue before some mentions."""
    rng = np.random.default_rng(seed)
    cues = {"PER": "sr", "LOC": "en", "ORG": "del"}
    filler = [f"w{k}" for k in range(300)]
    out, line = [], 1
    for d in range(n_docs):
        names = [("".join(rng.choice(list("BCDFGKLMNPRST"), 1))
                  + "".join(rng.choice(list("aeioulnrst"), 5)),
                  str(rng.choice(list(cues)))) for _ in range(rng.integers(4, 7))]
        for _ in range(25):
            rows = [[str(w), "NC", "O"] for w in rng.choice(filler, rng.integers(5, 20))]
            for name, typ in [names[k] for k in rng.choice(len(names), rng.integers(0, 3))]:
                at = int(rng.integers(0, len(rows) + 1))
                cue = [[cues[typ], "SP", "O"]] if rng.random() < 0.5 else []
                ins = cue + [[name, "NP", f"B-{typ}"]]
                rows[at:at] = ins
            out.append(Sentence(rows, list(range(line, line + len(rows))), d, "<generated>"))
            line += len(rows) + 1
    return out


def spec_of(text: str, file: str):
    return validate(parse_spec(text, file))


def bp_throughput(program, data, weights) -> dict:
    """Single-threaded sum-product BP over every instance at ``weights``."""
    s = program.settings
    msgs = iters = sched_len = edges2 = 0
    t_infer = t_kernel = 0.0
    for i, g in enumerate(data.graphs):
        table = program.factor_tables(weights, data, i)
        t0 = time.perf_counter()
        res = program.infer(g, table)
        t_infer += time.perf_counter() - t0
        # the message-passing kernel alone, same schedule and settings
        sched = g.trp_schedule() if program.method == "trp" else g.flooding_schedule()
        msgs += 2 * g.n_edges * res.iterations
        iters += res.iterations
        sched_len += len(sched[0])
        edges2 += 2 * g.n_edges
        M = int(g.msg_ptr[-1])
        fv, vf = np.zeros(M), np.zeros(M)
        t0 = time.perf_counter()
        loopy._propagate(table, g.card, g.f_ptr, g.f_var, g.tab_ptr, g.e_fac, g.e_stride,
                         g.msg_ptr, g.v_ptr, g.v_edge, sched[0], sched[1], False,
                         float(s.get("damping", 0.0)), float(s.get("tol", 1e-8)),
                         int(s.get("max_iter", 200)), fv, vf)
        t_kernel += time.perf_counter() - t0
    n = len(data.graphs)
    return {"msgs_per_s": msgs / t_infer, "kernel_msgs_per_s": msgs / t_kernel,
            "mean_iters": iters / n, "sched_ratio": sched_len / max(edges2, 1),
            "infer_ms": 1e3 * t_infer / n,
            "overhead_ms": 1e3 * (t_infer - t_kernel) / n}


def run_loopy(name, text, train, max_iter, jobs):
    t0 = time.perf_counter()
    model, data = compile_loopy_model(spec_of(text, str(SPEC)), train, SPEC.parent)
    compile_s = time.perf_counter() - t0
    w, log = train_lbfgs(model.program, data, model.feat_sigma, max_iter=max_iter, jobs=jobs)
    names = [t.name for t in model.templates]
    skip = int(np.sum(data.fac_tpl == names.index("skip"))) if "skip" in names else 0
    row = {"model": name, "instances": data.n_sequences, "tokens": data.n_tokens,
           "edges": sum(g.n_edges for g in data.graphs), "skip": skip, "compile_s": compile_s,
           "train_s": log.seconds, "evals": log.evaluations,
           "us_tok_eval": 1e6 * log.eval_seconds / max(log.evaluations, 1) / data.n_tokens,
           "not_conv": log.inference.not_converged}
    # warm the kernels once, then measure
    bp_throughput(model.program, data, w)
    row.update(bp_throughput(model.program, data, w))
    return row


def run_chain(name, text, train, max_iter, jobs):
    t0 = time.perf_counter()
    model, data = compile_model(spec_of(text, str(SPEC)), train, SPEC.parent)
    compile_s = time.perf_counter() - t0
    w, log = train_lbfgs(model.program, data, model.feat_sigma, max_iter=max_iter, jobs=jobs)
    return {"model": name, "instances": data.n_sequences, "tokens": data.n_tokens, "edges": 0,
            "skip": 0, "compile_s": compile_s, "train_s": log.seconds, "evals": log.evaluations,
            "us_tok_eval": 1e6 * log.eval_seconds / max(log.evaluations, 1) / data.n_tokens}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=40, help="first N documents of esp.train")
    ap.add_argument("--max-iter", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=0, help="threads for training (0: every core)")
    ap.add_argument("--generated", action="store_true", help="use generated documents even if "
                                                              "CoNLL-2002 is present")
    args = ap.parse_args()

    if (DATA / "esp.train").exists() and not args.generated:
        docs = documents(read_conll(DATA / "esp.train", encoding="latin-1"), 40)
        train = first_docs(docs, args.docs)
        source = f"CoNLL-2002 esp.train, first {args.docs} documents"
    else:
        train = generated_documents(args.docs)
        source = f"{args.docs} generated documents"
    print(f"data: {source}: {len(train)} sentences, {sum(map(len, train))} tokens; "
          f"{args.max_iter} L-BFGS iterations per model\n")

    skip_text = SPEC.read_text(encoding="utf-8")
    linear_text = linear_spec_text(skip_text)
    flooding = skip_text.replace("infer trp(max_iter = 50, tol = 1e-4)",
                                 "infer loopy(damping = 0.5, max_iter = 50, tol = 1e-4)")
    assert flooding != skip_text, "stdlib/skip_chain.fgl's infer line changed"
    rows = [run_chain("linear / chain engine", linear_text, train, args.max_iter, args.jobs),
            run_loopy("linear / loopy TRP", linear_text + NEVER, train, args.max_iter, args.jobs),
            run_loopy("skip / TRP", skip_text, train, args.max_iter, args.jobs),
            run_loopy("skip / flooding", flooding, train, args.max_iter, args.jobs)]

    head = (f"{'model':<22} {'inst':>5} {'edges':>7} {'skip':>6} {'compile s':>9} {'train s':>8} "
            f"{'us/tok/eval':>11} {'BP its':>6} {'upd/msg':>7} {'Mmsg/s':>7} {'kernel':>7} "
            f"{'infer ms':>8} "
            f"{'ovh ms':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "msgs_per_s" in r:
            bp = (f"{r['mean_iters']:6.1f} {r['sched_ratio']:7.2f} {r['msgs_per_s'] / 1e6:7.2f} "
                  f"{r['kernel_msgs_per_s'] / 1e6:7.2f} "
                  f"{r['infer_ms']:8.2f} {r['overhead_ms']:6.2f}")
        else:
            bp = f"{'-':>6} {'-':>7} {'-':>7} {'-':>7} {'-':>8} {'-':>6}"
        print(f"{r['model']:<22} {r['instances']:5d} {r['edges']:7d} {r['skip']:6d} "
              f"{r['compile_s']:9.2f} {r['train_s']:8.1f} {r['us_tok_eval']:11.1f} {bp}")
    print("\nus/tok/eval: training seconds per objective evaluation per token (threads: "
          f"{args.jobs or 'all cores'}); BP its: mean BP iterations per instance at the trained "
          "weights; Mmsg/s: million messages (edges x 2 x iterations) per second of program.infer, "
          "single thread; upd/msg: message updates one BP iteration actually computes per "
          "message (TRP sends each tree's edges up and down, and an edge may lie in several trees, "
          "so TRP's real update rate is Mmsg/s x upd/msg); kernel: the same counted against the "
          "numba loop alone; infer ms: program.infer per instance; ovh: the part of it outside "
          "the kernel.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
