"""Loopy belief propagation speed and memory: skip-chain against linear-chain CRFs, and PGMax.

A benchmark, not a timed test (issue 10): every number below is printed,
none is asserted.  Four sections (and 1b):

1. Training cost per objective evaluation, on the same documents and the
   observations of stdlib/skip_chain.fgl in every row:

   * linear / chain engine -- the spec without its skip template: the exact
     pattern-sparse forward-backward engine, one instance per sentence;
   * linear / loopy TRP -- the same chain pushed through the loopy program (a
     skip template whose predicate never holds), one instance per document:
     the factor graphs are trees, so BP is exact after one TRP sweep;
   * skip / TRP and skip / flooding -- the skip-chain spec with the TRP
     schedule (as in the stdlib) and with damped (0.5) flooding loopy BP.

   Each model runs in its own process (so peak memory is that model's
   alone) and trains --max-iter L-BFGS iterations: ms per evaluation, and
   its ratio to the linear chain's (target: the skip chain within 5x);
   peak resident memory (ru_maxrss of the process) and the part of it above
   the process's resident size after imports and reading the data, each
   with its ratio to the linear chain's (target: within 2x); BP iterations
   and messages per second of ``program.infer`` at the trained weights.

1b. The skip/linear ratio in one process: both models train as in 1,
   recording the weights of each evaluation, then their evaluations at
   those weights alternate (--reps times), so load on a shared machine hits
   both alike (section 1's ratio compares two processes run one after the
   other); wall and CPU ms per evaluation, and the skip chain's BP
   iterations per instance along its training path.

2. Cold and warm JIT: the first objective evaluation in a fresh process
   with an empty numba cache (NUMBA_CACHE_DIR a new temporary directory),
   then in a second process with the same cache dir.  "JIT s" is what the
   first model compile and the first evaluation cost above a second compile
   and evaluation in the same process (target: under 2 s in the second
   process).

3. Graph set-up: FactorGraph.from_factors, n_cycles, the TRP trees and
   schedule of a synthetic skip chain (--bp-vars variables of 5 labels in
   documents of 270 positions, a chain, ~--bp-vars/9 skip pairs between
   random positions of a document, a unary factor per variable).

4. Raw BP on that graph: random N(0, 1) log-potentials, float64, sum-product
   flooding with damping 0.5 from uniform messages.  Time per BP iteration
   is (t(25 iterations) - t(5 iterations)) / 20, best of 3, so set-up and
   beliefs cancel; messages/s counts 2 x edges per iteration (fgl's edges:
   the unary factors' included).  When PGMax imports, the same graph runs
   through PGMax in its own process in the same run: pairwise factors in one
   ``fgroup.PairwiseFactorGroup``, the unary log-potentials as evidence
   (PGMax's idiom, a little less work than fgl's unary factors),
   ``infer.build_inferer(..., backend="bp")`` and ``run(num_iters,
   damping=0.5, temperature=1.0)`` under ``jax.jit`` with jax_enable_x64;
   both sides also run to convergence and the largest difference of their
   marginals is printed (the same fixed point: the same graph).  fgl runs
   one instance on one thread; XLA uses its own thread pool.

Data for 1-2: the first --docs documents of CoNLL-2002 esp.train (documents
cut at EFE datelines, see examples/skip_chain_conll2002.py), or generated
documents with repeated capitalised names when ../shared/data/conll2002 is
absent (or with --generated).

PGMax (optional, ``pip install '.[bench]'``): ``pip install pgmax jax`` today
pairs pgmax 0.6.1, its last release, with a JAX it no longer runs on (it
calls jax.lib.xla_bridge.get_backend, gone in JAX 0.8; 0.4.38 to 0.7.2 run
it), hence the extra's pin jax<0.8.  pgmax's metadata also lists its
development tools (TensorFlow, Jupyter, Sphinx, cvxpy) as requirements, so
``pip install 'jax>=0.4.38,<0.8'`` then ``pip install --no-deps pgmax`` is
the light install.  Since 0.4.32 JAX runs XLA's newer "thunk" CPU runtime
by default, slower on PGMax's scan: XLA_FLAGS=--xla_cpu_use_thunk_runtime=false
restores the classic one (measured here: 20x faster BP iterations on jax
0.4.38, 1.6x on 0.7.2).  The PGMax process sets it for jaxlib 0.4.32-0.7.x
unless XLA_FLAGS is set, and runs again without it if it fails (JAX 0.7
no longer supports the classic runtime everywhere).

    python examples/bench_loopy.py                  # ~2 minutes on 2 cores
    python examples/bench_loopy.py --docs 80 --max-iter 30 --bp-vars 160000
    python examples/bench_loopy.py --skip-models    # sections 3-4 only
    python examples/bench_loopy.py --quick          # tiny sizes, no cold-JIT section
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from measure import best_time, current_rss_mb, peak_rss_mb  # noqa: E402

NEVER = ('template skip: (y[i], y[j]) where word[i] == word[j] and regex(word[i], "^$") '
         'within document ~ bias\ninfer trp(max_iter = 50, tol = 1e-4)\n')
MODELS = {"linear": "linear / chain engine", "linear-loopy": "linear / loopy TRP",
          "skip-trp": "skip / TRP", "skip-flooding": "skip / flooding"}
N1, N2 = 5, 25  # BP iterations of the two timed runs (their difference is timed)


# ---------------------------------------------------------------- data

def generated_documents(n_docs: int, seed: int = 0):
    """Documents of ~25 sentences: lower-case filler (O) and 4-6 fresh
    capitalised names per document (PER/LOC/ORG), each mentioned 2-6 times,
    with a type cue before some mentions."""
    from fgl.data.sentence import Sentence

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


def training_data(docs: int, generated: bool):
    from skip_chain_conll2002 import DATA, documents, first_docs

    from fgl.io.conll import read_conll

    if (DATA / "esp.train").exists() and not generated:
        all_docs = documents(read_conll(DATA / "esp.train", encoding="latin-1"), 40)
        return first_docs(all_docs, docs), f"CoNLL-2002 esp.train, first {docs} documents"
    return generated_documents(docs), f"{docs} generated documents"


def model_text(name: str) -> str:
    from skip_chain_conll2002 import SPEC, linear_spec_text

    skip_text = SPEC.read_text(encoding="utf-8")
    if name == "linear":
        return linear_spec_text(skip_text)
    if name == "linear-loopy":
        return linear_spec_text(skip_text) + NEVER
    if name == "skip-trp":
        return skip_text
    # the same tolerance and passes, by damped flooding
    flooding = re.sub(r"(?m)^infer trp\(", "infer loopy(damping = 0.5, ", skip_text)
    assert flooding != skip_text, "stdlib/skip_chain.fgl has no `infer trp(...)` line"
    return flooding


def synthetic_skip_chain(n_vars: int = 80_000, doc_len: int = 270, n_skip: int | None = None,
                         card: int = 5, seed: int = 0) -> tuple[list[int], list[list[int]]]:
    """(card, factors): a unary factor per variable, a chain in each document
    of ``doc_len`` positions, and ``n_skip`` (default n_vars / 9) distinct
    skip pairs i < j - 1 between random positions of a random document."""
    rng = np.random.default_rng(seed)
    n_skip = n_vars // 9 if n_skip is None else n_skip
    starts = np.arange(0, n_vars, doc_len)
    ends = np.minimum(starts + doc_len, n_vars)
    factors = [[v] for v in range(n_vars)]
    for s, e in zip(starts.tolist(), ends.tolist()):
        factors.extend([v, v + 1] for v in range(s, e - 1))
    seen: set[tuple[int, int]] = set()
    while len(seen) < n_skip:
        d = int(rng.integers(0, len(starts)))
        i, j = sorted(rng.integers(starts[d], ends[d], 2).tolist())
        if j - i > 1 and (i, j) not in seen:
            seen.add((i, j))
            factors.append([i, j])
    return [card] * n_vars, factors


def synthetic_log_pot(factors, card: int, seed: int = 1) -> np.ndarray:
    sizes = np.array([card ** len(f) for f in factors])
    return np.random.default_rng(seed).normal(0.0, 1.0, int(sizes.sum()))


# ---------------------------------------------------------------- workers (one process each)

def worker_model(a) -> dict:
    """Section 1 (or 2 with --jit-only) for one model, in this process."""
    t0 = time.perf_counter()
    from skip_chain_conll2002 import SPEC

    from fgl.lang.checks import validate
    from fgl.lang.parser import parse_spec
    from fgl.learn.learner import train_lbfgs
    from fgl.learn.objective import Objective
    from fgl.registry import compile_model
    t_import = time.perf_counter() - t0
    train, _ = training_data(a.docs, a.generated)
    base = current_rss_mb()

    def compile_once():
        t = time.perf_counter()
        model, data = compile_model(validate(parse_spec(model_text(a.worker), str(SPEC))), train,
                                    SPEC.parent)
        return model, data, time.perf_counter() - t

    def evaluate(model, data):
        obj = Objective(model.program, data, model.feat_sigma, a.jobs)
        t = time.perf_counter()
        obj(np.zeros(model.program.n_features))
        return time.perf_counter() - t

    model, data, t_compile = compile_once()
    t_eval1 = evaluate(model, data)
    out = {"model": a.worker, "import_s": t_import, "compile_s": t_compile, "eval1_s": t_eval1,
           "instances": data.n_sequences, "tokens": data.n_tokens}
    if a.jit_only:
        model, data, t_compile2 = compile_once()
        out.update(compile2_s=t_compile2, eval2_s=evaluate(model, data))
        return out
    w, log = train_lbfgs(model.program, data, model.feat_sigma, max_iter=a.max_iter, jobs=a.jobs)
    graphs = getattr(data, "graphs", None)
    out.update(evals=log.evaluations, train_s=log.seconds,
               ms_eval=1e3 * log.eval_seconds / max(log.evaluations, 1),
               edges=sum(g.n_edges for g in graphs) if graphs else 0,
               cycles=sum(g.n_cycles() for g in graphs) if graphs else 0)
    if graphs:
        out.update(bp_throughput(model.program, data, w))
    out.update(base_mb=base, peak_mb=peak_rss_mb())
    return out


def worker_paired(a) -> dict:
    """Section 1's skip/linear ratio measured in one process: each model
    trains --max-iter L-BFGS iterations, recording the weights of every
    evaluation; then the two models' evaluations at those weights alternate
    (linear, skip, linear, ...) --reps times, so machine load hits both
    alike.  Reports wall and CPU (process_time: all threads) ms per
    evaluation, and the skip chain's BP iterations per instance along its
    trajectory (mean, and edge-weighted: passes over the graph)."""
    from skip_chain_conll2002 import SPEC

    from fgl.lang.checks import validate
    from fgl.lang.parser import parse_spec
    from fgl.learn.learner import train_lbfgs
    from fgl.learn.objective import Objective
    from fgl.registry import compile_model

    train, _ = training_data(a.docs, a.generated)
    objectives, paths = {}, {}
    for name in ("linear", "skip-trp"):
        model, data = compile_model(validate(parse_spec(model_text(name), str(SPEC))), train,
                                    SPEC.parent)
        seen: list[np.ndarray] = []

        class Recording(Objective):
            def __call__(self, w):
                seen.append(np.array(w))
                return super().__call__(w)

        train_lbfgs(model.program, data, model.feat_sigma, max_iter=a.max_iter, jobs=a.jobs,
                    objective=Recording(model.program, data, model.feat_sigma, a.jobs))
        objectives[name] = Objective(model.program, data, model.feat_sigma, a.jobs)
        paths[name] = seen
    n = min(len(p) for p in paths.values())
    wall = dict.fromkeys(objectives, 0.0)
    cpu = dict.fromkeys(objectives, 0.0)
    for _ in range(a.reps):
        for j in range(n):
            for name, objective in objectives.items():
                t, c = time.perf_counter(), time.process_time()
                objective(paths[name][j])
                wall[name] += time.perf_counter() - t
                cpu[name] += time.process_time() - c
    program, skip_data = objectives["skip-trp"].program, objectives["skip-trp"].data
    its = np.array([[program.infer(g, program.factor_tables(w, skip_data, i)).iterations
                     for i, g in enumerate(skip_data.graphs)] for w in paths["skip-trp"][:n]])
    edges = np.array([g.n_edges for g in skip_data.graphs])
    return {"evals": n * a.reps, "wall": wall, "cpu": cpu, "mean_iters": float(its.mean()),
            "pass_iters": float((its @ edges).sum() / (n * edges.sum())),
            "last_iters": float(its[-1].mean()), "max_iters": int(its.max())}


def bp_throughput(program, data, weights) -> dict:
    """Single-threaded sum-product BP over every instance at ``weights``
    (program.infer, the path training takes; run twice, the second timed)."""
    for timed in (False, True):
        msgs = iters = sched_len = edges2 = 0
        t_infer = 0.0
        for i, g in enumerate(data.graphs):
            table = program.factor_tables(weights, data, i)
            t0 = time.perf_counter()
            res = program.infer(g, table)
            t_infer += time.perf_counter() - t0
            sched = g.trp_schedule() if program.method == "trp" else g.flooding_schedule()
            msgs += 2 * g.n_edges * res.iterations
            iters += res.iterations
            sched_len += len(sched[0])
            edges2 += 2 * g.n_edges
    n = len(data.graphs)
    return {"msgs_per_s": msgs / max(t_infer, 1e-12), "mean_iters": iters / n,
            "sched_ratio": sched_len / max(edges2, 1), "infer_ms": 1e3 * t_infer / n}


def worker_bp_fgl(a) -> dict:
    """Sections 3-4 for fgl, in this process."""
    from fgl.engines.graph.factor_graph import FactorGraph
    from fgl.engines.graph.forest_cover import appearance_probabilities
    from fgl.engines.graph.loopy import belief_propagation
    from fgl.engines.graph.trw import trw

    card, factors = synthetic_skip_chain(a.bp_vars)
    lp = synthetic_log_pot(factors, card[0])
    warm = FactorGraph.from_factors([2, 2, 2], [[0, 1], [1, 2], [0, 2], [0]])
    warm.n_cycles()
    belief_propagation(warm, np.zeros(warm.n_table), schedule="trp")
    base = current_rss_mb()
    out = {}
    t = time.perf_counter()
    g = FactorGraph.from_factors(card, factors)
    out["from_factors_s"] = time.perf_counter() - t
    t = time.perf_counter()
    out["cycles"] = g.n_cycles()
    out["n_cycles_s"] = time.perf_counter() - t
    t = time.perf_counter()
    trees = g.spanning_trees()
    out["trees_s"] = time.perf_counter() - t
    t = time.perf_counter()
    sched = g.trp_schedule()
    out["schedule_s"] = time.perf_counter() - t
    # the same again under tracemalloc, for the memory the structure routines allocate
    fresh = FactorGraph.from_factors(card, factors)
    tracemalloc.start()
    fresh.n_cycles()
    fresh.trp_schedule()
    out["setup_heap_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    del fresh
    out.update(setup_mb=max(peak_rss_mb() - base, 0.0), n_trees=len(trees), sched_len=len(sched[0]),
               vars=g.n_vars, factors=g.n_factors, edges=g.n_edges)

    def run(schedule, n, tol=0.0):
        return belief_propagation(g, lp, schedule=schedule, damping=0.5 if schedule ==
                                  "flooding" else 0.0, tol=tol, max_iter=n)

    rho = appearance_probabilities(g)   # (made once per graph, like the TRP trees)

    def run_trw(n):
        return trw(g, lp, rho=rho, tol=0.0, max_iter=n)

    run("flooding", 1)
    run("trp", 1)
    run_trw(1)
    for schedule in ("flooding", "trp"):
        t1 = best_time(lambda: run(schedule, N1), 3)
        t2 = best_time(lambda: run(schedule, N2), 3)
        out[f"{schedule}_iter_s"] = (t2 - t1) / (N2 - N1)
    t1 = best_time(lambda: run_trw(N1), 3)
    t2 = best_time(lambda: run_trw(N2), 3)
    out["trw_iter_s"] = (t2 - t1) / (N2 - N1)
    t = time.perf_counter()
    r = run("flooding", a.bp_converge, tol=1e-9)
    out.update(converge_s=time.perf_counter() - t, converge_iters=r.iterations,
               converged=r.converged, peak_mb=peak_rss_mb(), base_mb=base)
    np.save(a.marginals, np.concatenate(r.var_beliefs))
    return out


def jax_env() -> dict:
    """XLA_FLAGS for the PGMax process: the classic CPU runtime on the JAX
    releases that have both (0.4.32 to 0.7.x, the last PGMax runs on: 2x
    faster on 0.7.2, 20x on 0.4.38), unless XLA_FLAGS is set."""
    env = dict(os.environ)
    if "XLA_FLAGS" in env:
        return env
    try:
        from importlib.metadata import version
        v = tuple(int(x) for x in version("jaxlib").split(".")[:3])
    except Exception:  # noqa: BLE001 - no jaxlib: the worker reports it
        return env
    if (0, 4, 32) <= v < (0, 8, 0):
        env["XLA_FLAGS"] = "--xla_cpu_use_thunk_runtime=false"
    return env


def worker_bp_pgmax(a) -> dict:
    """Section 4 for PGMax, in this process."""
    import jax
    jax.config.update("jax_enable_x64", True)
    from pgmax import fgraph, fgroup, infer, vgroup

    card, factors = synthetic_skip_chain(a.bp_vars)
    lp = synthetic_log_pot(factors, card[0])
    base = current_rss_mb()
    V, K = len(card), card[0]
    t = time.perf_counter()
    variables = vgroup.NDVarArray(num_states=K, shape=(V,))
    fg = fgraph.FactorGraph(variable_groups=variables)
    pairs = factors[V:]
    group = fgroup.PairwiseFactorGroup(
        variables_for_factors=[[variables[i], variables[j]] for i, j in pairs],
        log_potential_matrix=lp[V * K:].reshape(len(pairs), K, K))
    fg.add_factors(group)
    bp = infer.build_inferer(fg.bp_state, backend="bp")
    arrays = bp.init(evidence_updates={variables: lp[:V * K].reshape(V, K)})
    out = {"build_s": time.perf_counter() - t, "jax": jax.__version__,
           "xla_flags": os.environ.get("XLA_FLAGS", ""), "device": str(jax.devices()[0])}
    run = jax.jit(bp.run, static_argnames=("num_iters", "damping", "temperature"))

    def go(n):
        return jax.block_until_ready(run(arrays, num_iters=n, damping=0.5, temperature=1.0))

    t = time.perf_counter()
    go(N1)
    out["jit_s"] = time.perf_counter() - t
    go(N2)
    t1, t2 = best_time(lambda: go(N1), 3), best_time(lambda: go(N2), 3)
    out["flooding_iter_s"] = (t2 - t1) / (N2 - N1)
    n = a.bp_converge
    go(n)
    t = time.perf_counter()
    res = go(n)
    out["converge_s"] = time.perf_counter() - t
    marg = infer.get_marginals(bp.get_beliefs(res))[variables]
    np.save(a.marginals, np.asarray(marg, dtype=np.float64).reshape(-1))
    out.update(peak_mb=peak_rss_mb(), base_mb=base, messages_dtype=str(res.ftov_msgs.dtype))
    return out


def spawn(argv: list[str], env: dict | None = None, timeout: float = 1800) -> dict:
    """Run this script as a worker; its last stdout line is JSON."""
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv], env=env,
                       capture_output=True, text=True, timeout=timeout)
    last = p.stdout.strip().splitlines()[-1:] if p.stdout.strip() else []
    if p.returncode != 0 or not last or not last[0].startswith("{"):
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-6:])
        return {"error": f"exit {p.returncode}: {tail}"}
    return json.loads(last[0])


# ---------------------------------------------------------------- report

def section_models(a, common: list[str]) -> None:
    rows = []
    for name in MODELS:
        r = spawn(["--worker", name, *common])
        if "error" in r:
            print(f"{MODELS[name]}: failed\n{r['error']}")
            return
        rows.append(r)
    lin = rows[0]
    print(f"1. Training: {lin['instances']} chain instances (sentences), "
          f"{rows[2]['instances']} loopy instances (documents), {lin['tokens']} tokens; "
          f"{a.max_iter} L-BFGS iterations per model, threads: {a.jobs or 'all cores'}\n")
    head = (f"{'model':<22} {'edges':>7} {'cycles':>6} {'evals':>5} {'ms/eval':>8} {'x lin':>6} "
            f"{'peak MB':>8} {'x lin':>6} {'+MB':>6} {'x lin':>6} {'BP its':>6} {'upd/msg':>7} "
            f"{'Mmsg/s':>7} {'infer ms':>8}")
    print(head)
    print("-" * len(head))
    lin_model = lin["peak_mb"] - lin["base_mb"]
    for r in rows:
        model = r["peak_mb"] - r["base_mb"]
        bp = (f"{r['mean_iters']:6.1f} {r['sched_ratio']:7.2f} {r['msgs_per_s'] / 1e6:7.2f} "
              f"{r['infer_ms']:8.2f}" if "msgs_per_s" in r else
              f"{'-':>6} {'-':>7} {'-':>7} {'-':>8}")
        print(f"{MODELS[r['model']]:<22} {r['edges']:7d} {r['cycles']:6d} {r['evals']:5d} "
              f"{r['ms_eval']:8.1f} {r['ms_eval'] / lin['ms_eval']:6.2f} {r['peak_mb']:8.0f} "
              f"{r['peak_mb'] / lin['peak_mb']:6.2f} {model:6.0f} "
              f"{model / max(lin_model, 1e-9):6.2f} {bp}")
    print("\nms/eval: milliseconds per objective evaluation (value and gradient) during "
          "training; x lin: ratio to the linear chain engine's (targets: skip chain within 5x "
          "per evaluation, 2x in peak memory); peak MB: the model's process's peak resident "
          "size; +MB: its part above the resident size after imports and reading the data; BP "
          "its: mean BP iterations per instance at the trained weights; upd/msg: message "
          "updates one BP iteration computes per message (TRP sends each tree's edges up and "
          "down, and an edge lies in one tree or more); Mmsg/s: million messages (edges x 2 x "
          "iterations) per second of program.infer, one thread; infer ms: per instance.\n")


def section_paired(a, common: list[str]) -> None:
    r = spawn(["--worker", "paired", *common, "--reps", str(a.reps)])
    if "error" in r:
        print(f"1b. paired timing failed\n{r['error']}")
        return
    print(f"1b. The same two trainings in one process, their evaluations alternating "
          f"({r['evals']} each)\n")
    head = f"{'model':<22} {'wall ms':>8} {'CPU ms':>8}"
    print(head)
    print("-" * len(head))
    for name in ("linear", "skip-trp"):
        print(f"{MODELS[name]:<22} {1e3 * r['wall'][name] / r['evals']:8.1f} "
              f"{1e3 * r['cpu'][name] / r['evals']:8.1f}")
    print(f"\nskip / linear per evaluation: {r['wall']['skip-trp'] / r['wall']['linear']:.2f} "
          f"(wall), {r['cpu']['skip-trp'] / r['cpu']['linear']:.2f} (CPU) (target: within 5x).  "
          f"Skip chain BP iterations per instance along the training path: mean "
          f"{r['mean_iters']:.2f}, {r['pass_iters']:.2f} weighted by edges, "
          f"{r['last_iters']:.2f} at the last weights, at most {r['max_iters']}.  CPU ms: "
          "process time of every thread per evaluation.  Section 1 runs each model in its own "
          "process, one after another, so load that changes between them moves its ratio; "
          "here it hits both alike.\n")


def section_jit(a) -> None:
    print("2. JIT: first objective evaluation in a fresh process, numba cache empty (cold) "
          "and filled by the cold run (warm)\n")
    head = (f"{'model':<22} {'cache':<5} {'import s':>8} {'compile s':>9} {'eval s':>7} "
            f"{'again s':>8} {'JIT s':>6}")
    print(head)
    print("-" * len(head))
    for name in ("linear", "skip-trp"):
        cache = tempfile.mkdtemp(prefix="fgl-numba-")
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        try:
            for label in ("cold", "warm"):
                r = spawn(["--worker", name, "--jit-only", "--docs", str(min(a.docs, 5)),
                           "--jobs", str(a.jobs), *(["--generated"] if a.generated else [])],
                          env=env)
                if "error" in r:
                    print(f"{MODELS[name]:<22} {label:<5} failed: {r['error']}")
                    continue
                jit = r["compile_s"] - r["compile2_s"] + r["eval1_s"] - r["eval2_s"]
                print(f"{MODELS[name]:<22} {label:<5} {r['import_s']:8.2f} "
                      f"{r['compile_s']:9.2f} {r['eval1_s']:7.2f} "
                      f"{r['compile2_s'] + r['eval2_s']:8.2f} {jit:6.2f}")
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    print("\nimport s: importing fgl (numba included); compile s, eval s: the first model "
          "compile and objective evaluation; again s: a second compile and evaluation in the "
          "same process; JIT s: (compile s + eval s) - again s, what numba compiled or loaded "
          "from its cache (target: under 2 s warm).\n")


def section_bp(a) -> None:
    with tempfile.TemporaryDirectory(prefix="fgl-bench-") as tmp:
        mf, mp = Path(tmp) / "fgl.npy", Path(tmp) / "pgmax.npy"
        common = ["--bp-vars", str(a.bp_vars), "--bp-converge", str(a.bp_converge)]
        f = spawn(["--worker", "bp-fgl", "--marginals", str(mf), *common])
        if "error" in f:
            print(f"3-4. fgl BP worker failed:\n{f['error']}")
            return
        print(f"3. Set-up of the synthetic skip chain: {f['vars']} variables (5 labels), "
              f"{f['factors']} factors, {f['edges']} edges, {f['cycles']} independent cycles\n")
        print(f"   from_factors {f['from_factors_s']:.2f} s; n_cycles {f['n_cycles_s']:.2f} s; "
              f"spanning_trees {f['trees_s']:.2f} s ({f['n_trees']} trees); trp_schedule "
              f"{f['schedule_s']:.2f} s ({f['sched_len']} updates); memory: the trees and "
              f"schedule's allocations peak at {f['setup_heap_mb']:.0f} MB (tracemalloc), the "
              f"process's resident peak grew {f['setup_mb']:.0f} MB over graph and set-up\n")
        p = None
        try:
            import pgmax  # noqa: F401
        except Exception as e:  # noqa: BLE001 - any import failure means "not available"
            why = "PGMax not installed (pip install '.[bench]')" + (
                "" if isinstance(e, ModuleNotFoundError) else f": {type(e).__name__}: {e}")
        else:
            env = jax_env()
            p = spawn(["--worker", "bp-pgmax", "--marginals", str(mp), *common], env=env)
            if "error" in p and env.get("XLA_FLAGS") != os.environ.get("XLA_FLAGS"):
                env.pop("XLA_FLAGS")  # the classic runtime failed: JAX's default
                p = spawn(["--worker", "bp-pgmax", "--marginals", str(mp), *common], env=env)
            why = None if "error" not in p else f"PGMax failed:\n{p['error']}"
        print("4. One BP iteration on that graph: flooding, damping 0.5, random N(0, 1) "
              "log-potentials, float64\n")
        head = f"{'':<24} {'ms/iter':>8} {'Mmsg/s':>8} {'peak MB':>8} {'conv s':>7}"
        print(head)
        print("-" * len(head))
        msgs = 2 * f["edges"]
        conv = f"{f['converge_s']:7.2f}"
        print(f"{'fgl flooding':<24} {1e3 * f['flooding_iter_s']:8.2f} "
              f"{msgs / f['flooding_iter_s'] / 1e6:8.2f} {f['peak_mb']:8.0f} {conv}")
        print(f"{'fgl TRP (for reference)':<24} {1e3 * f['trp_iter_s']:8.2f} "
              f"{msgs / f['trp_iter_s'] / 1e6:8.2f} {'':>8} {'':>7}")
        print(f"{'fgl TRW (one sweep)':<24} {1e3 * f['trw_iter_s']:8.2f} "
              f"{msgs / f['trw_iter_s'] / 1e6:8.2f} {'':>8} {'':>7}   "
              f"{f['trw_iter_s'] / f['trp_iter_s']:.2f}x a TRP iteration, "
              f"{f['trw_iter_s'] / f['flooding_iter_s']:.2f}x a flooding one (target: <= 1.3x)")
        if why is None:
            print(f"{'PGMax flooding':<24} {1e3 * p['flooding_iter_s']:8.2f} "
                  f"{msgs / p['flooding_iter_s'] / 1e6:8.2f} {p['peak_mb']:8.0f} "
                  f"{p['converge_s']:7.2f}")
            diff = float(np.abs(np.load(mf) - np.load(mp)).max())
            print(f"\nPGMax {p.get('jax') and 'on JAX ' + p['jax']}, {p['device']}, messages "
                  f"{p['messages_dtype']}, XLA_FLAGS={p['xla_flags'] or '(unset)'}; graph "
                  f"build {p['build_s']:.1f} s, first jit {p['jit_s']:.1f} s.  fgl / PGMax time "
                  f"per iteration: {f['flooding_iter_s'] / p['flooding_iter_s']:.2f} (target: "
                  f"<= 1).  Marginals after {a.bp_converge} iterations (fgl: "
                  f"{f['converge_iters']}, converged {f['converged']}): largest difference "
                  f"{diff:.1e}.")
        else:
            print(f"\n{why}")
        print(f"\nms/iter: (time of {N2} iterations - time of {N1}) / {N2 - N1}, best of 3; "
              "Mmsg/s: 2 x fgl's edge count per iteration (PGMax's edges exclude the unary "
              "factors, whose log-potentials it takes as evidence); conv s: "
              f"{a.bp_converge} iterations, or fgl's until converged (tol 1e-9); peak MB: the "
              "worker process's.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=40, help="first N documents of esp.train")
    ap.add_argument("--max-iter", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=0, help="threads for training (0: every core)")
    ap.add_argument("--generated", action="store_true", help="use generated documents even if "
                                                              "CoNLL-2002 is present")
    ap.add_argument("--bp-vars", type=int, default=80_000, help="variables of the synthetic "
                                                                "skip chain (sections 3-4)")
    ap.add_argument("--bp-converge", type=int, default=200,
                    help="BP iterations for the marginal comparison")
    ap.add_argument("--reps", type=int, default=2,
                    help="section 1b: times each recorded evaluation is repeated")
    ap.add_argument("--skip-models", action="store_true", help="sections 3-4 only")
    ap.add_argument("--skip-bp", action="store_true", help="sections 1-2 only")
    ap.add_argument("--quick", action="store_true",
                    help="4 documents, 2 iterations, a 2000-variable BP graph, and no cold-JIT "
                         "section (it compiles every kernel from scratch: half a minute)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--jit-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--marginals", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick:
        a.docs, a.max_iter, a.bp_vars, a.bp_converge = 4, 2, 2000, 10

    if a.worker:
        fn = {"bp-fgl": worker_bp_fgl, "bp-pgmax": worker_bp_pgmax,
              "paired": worker_paired}.get(a.worker, worker_model)
        print(json.dumps(fn(a)))
        return 0

    t0 = time.perf_counter()
    if not a.skip_models:
        train, source = training_data(a.docs, a.generated)
        print(f"data: {source}: {len(train)} sentences, {sum(map(len, train))} tokens\n")
        common = ["--docs", str(a.docs), "--max-iter", str(a.max_iter), "--jobs", str(a.jobs),
                  *(["--generated"] if a.generated else [])]
        section_models(a, common)
        section_paired(a, common)
        if not a.quick:
            section_jit(a)
    if not a.skip_bp:
        section_bp(a)
    print(f"\n({time.perf_counter() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
