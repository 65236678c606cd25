"""CRFsuite vs fgl on CoNLL-2000 chunking, with identical features and prior.

Both trainers see CRFsuite's chunking feature set (its example chunking.py,
as ``stdlib/crfsuite_chunking.fgl`` defines it): words w[-2..2], word bigrams
w[-1]|w[0] and w[0]|w[1], POS p[-2..2], POS bigrams and trigrams, __BOS__ /
__EOS__; state features for (attribute, label) pairs seen in training,
transition features for every label pair.  CRFsuite trains with L-BFGS,
c1 = 0, c2 = 1.0; fgl with the Gaussian prior sigma = 1/sqrt(2 c2), since
CRFsuite's L2 term is c2·||w||² (checked on a toy problem by every run).

Each trainer runs in its own subprocess (this script re-invoked with
``--worker``) so that peak RSS is per trainer; one more fgl run traces its
training's allocations for the memory breakdown (its peak, raised by the
tracing, is kept out of the main table).  Prints tables; asserts nothing.

    python examples/bench_conll2000.py            # full run, ~4 minutes on 2 cores
    python examples/bench_conll2000.py --quick    # 1000 sentences, 20 iterations
    python examples/bench_conll2000.py --max-iter 50 --compile-check
    python examples/bench_conll2000.py --max-iter 50 --alternate 5   # ratios in one process
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import (
    RssPeak,
    array_mb,
    compile_peaks,
    current_rss_mb,
    peak_rss_mb,
    print_memory,
    traced_training,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "conll2000"
SPEC = REPO / "stdlib" / "crfsuite_chunking.fgl"
RESULT = "@@RESULT "
QUICK_SENTENCES, QUICK_ITER = 1000, 20
BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data & features

def read_columns(path: Path) -> list[list[list[str]]]:
    """A CoNLL file as sentences of token rows (plain Python; no fgl import,
    so the CRFsuite worker's memory holds only what CRFsuite needs)."""
    sents, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                if cur:
                    sents.append(cur)
                    cur = []
            else:
                cur.append(line.split())
    if cur:
        sents.append(cur)
    return sents


def crfsuite_attributes(words: list[str], pos: list[str]) -> list[list[str]]:
    """The attributes fgl's crfsuite_chunking.fgl makes at each token, with
    fgl's attribute names (``name=text``; tests are bare names), so both
    trainers see the same strings.  Out-of-range offsets give nothing."""
    T = len(words)
    out = []
    for t in range(T):
        a = []
        for o in (-2, -1, 0, 1, 2):                      # w = word[t-2..t+2]
            if 0 <= t + o < T:
                a.append(f"word[{_off(o)}]={words[t + o]}")
        if t >= 1:                                       # ww
            a.append(f"word[t-1]&word[t]={words[t - 1]}|{words[t]}")
        if t + 1 < T:
            a.append(f"word[t]&word[t+1]={words[t]}|{words[t + 1]}")
        for o in (-2, -1, 0, 1, 2):                      # p = pos[t-2..t+2]
            if 0 <= t + o < T:
                a.append(f"pos[{_off(o)}]={pos[t + o]}")
        for o in (-2, -1, 0, 1):                         # pp
            if 0 <= t + o and t + o + 1 < T:
                a.append(f"pos[{_off(o)}]&pos[{_off(o + 1)}]={pos[t + o]}|{pos[t + o + 1]}")
        for o in (-2, -1, 0):                            # ppp
            if 0 <= t + o and t + o + 2 < T:
                a.append(f"pos[{_off(o)}]&pos[{_off(o + 1)}]&pos[{_off(o + 2)}]="
                         f"{pos[t + o]}|{pos[t + o + 1]}|{pos[t + o + 2]}")
        if t == 0:                                       # edge = bos | eos
            a.append("bos")
        if t == T - 1:
            a.append("eos")
        out.append(a)
    return out


def _off(o: int) -> str:
    return "t" if o == 0 else f"t{o:+d}"


def crfsuite_params(c2: float, max_iter: int | None) -> dict:
    """CRFsuite's L-BFGS settings for the comparison: L2 only, transition
    features for every label pair, state features only as seen."""
    params = {"c1": 0.0, "c2": c2, "feature.possible_transitions": 1,
              "feature.possible_states": 0}
    if max_iter is not None:
        params["max_iterations"] = max_iter
    return params


def crfsuite_evaluations(logparser) -> int:
    """How many times CRFsuite's L-BFGS run (its ``TrainLogParser``)
    evaluated f and g: once at the start, then once per line-search trial
    (liblbfgs)."""
    return 1 + sum(it.get("linesearch_trials", 0) for it in logparser.iterations)


# ---------------------------------------------------------------- crfsuite worker

def toy_l2_check(pycrfsuite, c2: float) -> dict:
    """Which L2 form does CRFsuite's reported loss use?  Train a toy model,
    read its weights back and compare the logged loss with the brute-force
    negative log-likelihood plus c2·||w||² and plus c2/2·||w||²."""
    import itertools
    xs = [[["a", "b"], ["c"]], [["a"], ["d"]], [["c", "d"], ["b"], ["a"]]]
    ys = [["X", "Y"], ["Y", "Y"], ["X", "X", "Y"]]
    logs: list[str] = []

    class T(pycrfsuite.Trainer):
        def message(self, m):
            logs.append(m)

    tr = T("lbfgs", verbose=False)
    tr.set_params(crfsuite_params(c2, 5))
    for x, y in zip(xs, ys):
        tr.append(pycrfsuite.ItemSequence(x), y)
    with tempfile.TemporaryDirectory() as d:
        tr.train(os.path.join(d, "toy.crfsuite"))
        tg = pycrfsuite.Tagger()
        tg.open(os.path.join(d, "toy.crfsuite"))
        info = tg.info()
        tg.close()
    text = "".join(logs)
    loss = float([ln for ln in text.splitlines() if ln.startswith("Loss:")][-1].split()[1])
    state, trans = info.state_features, info.transitions
    nll = 0.0
    for x, y in zip(xs, ys):
        def score(lab):
            s = sum(state.get((a, tag), 0.0) for item, tag in zip(x, lab) for a in item)
            return s + sum(trans.get((p, q), 0.0) for p, q in zip(lab, lab[1:]))
        z = [score(lab) for lab in itertools.product("XY", repeat=len(x))]
        m = max(z)
        nll += m + math.log(sum(math.exp(v - m) for v in z)) - score(y)
    norm2 = sum(v * v for v in state.values()) + sum(v * v for v in trans.values())
    return {"loss": loss, "nll": nll, "norm2": norm2,
            "err_c2": loss - (nll + c2 * norm2), "err_half_c2": loss - (nll + 0.5 * c2 * norm2)}


def worker_crfsuite(a) -> dict:
    import pycrfsuite

    res: dict = {"name": "crfsuite", "version": _version("python-crfsuite")}
    t0 = time.perf_counter()
    train = read_columns(a.data / "train.txt")
    test = read_columns(a.data / "test.txt")
    if a.quick:
        train = train[:QUICK_SENTENCES]
    res["read_s"] = time.perf_counter() - t0
    res["train_sentences"], res["train_tokens"] = len(train), sum(map(len, train))
    res["rss_after_read_mb"] = current_rss_mb()

    log_lines: list[str] = []

    class Trainer(pycrfsuite.Trainer):
        def message(self, m):
            log_lines.append(m)
            super().message(m)          # feeds self.logparser

    t0 = time.perf_counter()
    trainer = Trainer("lbfgs", verbose=False)
    for s in train:
        xseq = pycrfsuite.ItemSequence(crfsuite_attributes([r[0] for r in s], [r[1] for r in s]))
        trainer.append(xseq, [r[2] for r in s])
    res["extract_s"] = time.perf_counter() - t0
    del train  # both trainers drop the raw sentences once their features exist
    trainer.set_params(crfsuite_params(a.c2, a.max_iter))
    res["params"] = {k: trainer.get(k) for k in trainer.params()}

    scratch = None if a.model_out else tempfile.TemporaryDirectory(prefix="bench_conll2000_")
    model_path = a.model_out or os.path.join(scratch.name, "conll2000.crfsuite")
    t0 = time.perf_counter()
    trainer.train(model_path)
    res["train_wall_s"] = time.perf_counter() - t0
    lp = trainer.logparser
    its = lp.iterations
    res["featgen_s"] = lp.featgen_seconds
    res["n_features"] = lp.featgen_num_features
    res["iterations"] = len(its)
    res["evaluations"] = crfsuite_evaluations(lp)
    res["train_s"] = lp.training_seconds
    res["eval_s"] = lp.training_seconds / res["evaluations"]
    res["eval_s_source"] = "optimiser total / (1 + sum of line-search trials)"
    res["objective"] = its[-1]["loss"] if its else float("nan")
    res["feature_norm"] = its[-1].get("feature_norm") if its else float("nan")
    text = "".join(log_lines)
    res["stop"] = next((ln.strip() for ln in text.splitlines()
                        if ln.startswith("L-BFGS") and "optimization" not in ln), "?")
    active = [ln for ln in text.splitlines() if ln.startswith("Number of active features")]
    res["active_features"] = active[0].split(":")[1].strip() if active else "?"
    del trainer

    t0 = time.perf_counter()
    xtest = [pycrfsuite.ItemSequence(crfsuite_attributes([r[0] for r in s], [r[1] for r in s]))
             for s in test]
    res["test_extract_s"] = time.perf_counter() - t0
    tagger = pycrfsuite.Tagger()
    tagger.open(model_path)
    t0 = time.perf_counter()
    pred = [tagger.tag(x) for x in xtest]
    res["tag_s"] = time.perf_counter() - t0
    tagger.close()
    if scratch is not None:
        scratch.cleanup()
    res["test_tokens"] = sum(map(len, test))
    res["peak_rss_mb"] = peak_rss_mb()        # before anything below

    from fgl.evaluation.evaluate import evaluate
    rep = evaluate([[r[2] for r in s] for s in test], pred)
    res["accuracy"], res["f1"] = rep.accuracy, rep.overall.f1
    res["precision"], res["recall"] = rep.overall.precision, rep.overall.recall
    res["l2_check"] = toy_l2_check(pycrfsuite, a.c2)
    return res


def worker_alternate(a) -> dict:
    """CRFsuite, fgl on one core and fgl on every core, in one process and
    in turn: ``a.alternate`` rounds, each training every one of them for
    ``a.alternate_iter`` L-BFGS iterations from zero weights (the order
    reversed every other round).  A slowed machine slows the three runs of
    a round alike, so the ratios of a round hold where the absolute
    seconds of separate processes do not."""
    import pycrfsuite

    from fgl.io.conll import read_conll
    from fgl.lang.parser import read_spec
    from fgl.lang.settings import resolve_train
    from fgl.learn.learner import train_lbfgs
    from fgl.registry import compile_model

    jit_warmup(1)
    keep = QUICK_SENTENCES if a.quick else None
    trainer = pycrfsuite.Trainer("lbfgs", verbose=False)
    for s in read_columns(a.data / "train.txt")[:keep]:
        trainer.append(pycrfsuite.ItemSequence(
            crfsuite_attributes([r[0] for r in s], [r[1] for r in s])), [r[2] for r in s])
    trainer.set_params(crfsuite_params(a.c2, a.alternate_iter))
    spec = read_spec(SPEC)
    settings = resolve_train(spec, {"sigma": 1.0 / math.sqrt(2.0 * a.c2)})
    model, data = compile_model(spec, read_conll(a.data / "train.txt")[:keep], SPEC.parent,
                                settings)
    cores = a.jobs   # (every core: the parent passes them)

    def crfsuite() -> float:
        trainer.train("")   # (no model file)
        return trainer.logparser.training_seconds / crfsuite_evaluations(trainer.logparser)

    def fgl(jobs: int) -> float:
        _, tlog = train_lbfgs(model.program, data, model.feat_sigma, max_iter=a.alternate_iter,
                              tol=settings.options().tol, jobs=jobs)
        return tlog.eval_seconds / tlog.evaluations

    runs = [("crfsuite", crfsuite), ("fgl 1 core", lambda: fgl(1))]
    if cores > 1:
        runs.append((f"fgl {cores} cores", lambda: fgl(cores)))
    rounds = []
    for r in range(a.alternate):
        rounds.append({name: run() for name, run in (runs if r % 2 == 0 else runs[::-1])})
    return {"rounds": rounds, "iterations": a.alternate_iter}


def print_alternate(res: dict) -> None:
    """The rounds of ``worker_alternate``: seconds per evaluation and the
    ratios to CRFsuite, each round's and their medians."""
    names = list(res["rounds"][0])
    print(f"\nper evaluation, in one process and in turn ({len(res['rounds'])} rounds of "
          f"{res['iterations']} L-BFGS iterations from zero weights each; s per evaluation = "
          "optimiser or evaluation seconds / evaluations):")
    head = ["round"] + [f"{n} s" for n in names] + [f"{n}/crfsuite" for n in names[1:]]
    rows = [[str(i)] + [f"{r[n]:.3f}" for n in names]
            + [f"{r[n] / r['crfsuite']:.2f}x" for n in names[1:]]
            for i, r in enumerate(res["rounds"], 1)]
    med = {n: statistics.median(r[n] for r in res["rounds"]) for n in names}
    ratios = {n: statistics.median(r[n] / r["crfsuite"] for r in res["rounds"])
              for n in names[1:]}
    rows.append(["median"] + [f"{med[n]:.3f}" for n in names]
                + [f"{ratios[n]:.2f}x" for n in names[1:]])
    widths = [max(len(row[i]) for row in [head] + rows) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


# ---------------------------------------------------------------- fgl workers

def jit_warmup(jobs: int) -> dict:
    """Import fgl and run every kernel once on 2 sentences: numba compiles
    them, or loads them from its cache (cache=True).  Also the process's
    resident memory before numpy and fgl, with them (and numba) imported, and
    after the first kernel calls (numba's compiler state and LLVM, then the
    kernels)."""
    rss_python = current_rss_mb()
    t0 = time.perf_counter()
    import numpy as np

    import fgl.learn.learner  # noqa: F401  (imports the engines)
    from fgl.data.sentence import Sentence
    from fgl.lang.parser import read_spec
    from fgl.registry import compile_model
    t_import = time.perf_counter() - t0
    rss_imported = current_rss_mb()
    spec = read_spec(SPEC)
    rows = [[["He", "PRP", "B-NP"], ["reckons", "VBZ", "B-VP"], ["the", "DT", "B-NP"],
             ["deficit", "NN", "I-NP"]],
            [["Rockwell", "NNP", "B-NP"], ["said", "VBD", "B-VP"], [".", ".", "O"]]]
    sents = [Sentence(r, list(range(1, len(r) + 1)), 0, "<warmup>") for r in rows]
    model, data = compile_model(spec, sents, SPEC.parent)
    prog = model.program
    w = np.zeros(prog.n_features)
    t0 = time.perf_counter()
    prog.gold_counts(data)
    prog.expectations(w, data, jobs)
    prog.decode(w, data, jobs)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    prog.gold_counts(data)
    prog.expectations(w, data, jobs)
    prog.decode(w, data, jobs)
    second = time.perf_counter() - t0
    cache_dir = os.environ.get("NUMBA_CACHE_DIR",
                               "(default: __pycache__ beside the fgl.engines modules)")
    return {"import_s": t_import, "jit_s": first - second, "jit_second_call_s": second,
            "numba_cache_dir": cache_dir, "imports_python": rss_python,
            "imports_numba": rss_imported - rss_python,
            "imports_kernels": current_rss_mb() - rss_imported}


def worker_jit(a) -> dict:
    return {"name": "jit", **jit_warmup(a.jobs)}


def worker_fgl(a) -> dict:
    res: dict = {"name": f"fgl jobs={a.jobs}", "jobs": a.jobs, "in_memory": a.train_in_memory}
    res.update(jit_warmup(a.jobs))
    import numpy as np

    from fgl.api import CRF
    from fgl.evaluation.evaluate import evaluate
    from fgl.io.conll import iter_conll, read_conll
    from fgl.lang.parser import read_spec
    from fgl.lang.settings import resolve_train
    from fgl.learn.learner import train_lbfgs
    from fgl.registry import compile_model

    res["mem_imports_mb"] = current_rss_mb()
    t0 = time.perf_counter()
    test = read_conll(a.data / "test.txt")
    path = a.data / "train.txt"
    if a.train_in_memory:  # as the CRFsuite worker does: the training file as lists
        source = read_conll(path)[:QUICK_SENTENCES if a.quick else None]
    else:  # as `fgl train` does: read the file twice (labels, then features), never hold it
        def source():
            return itertools.islice(iter_conll(path), QUICK_SENTENCES if a.quick else None)
    res["read_s"] = time.perf_counter() - t0
    res["rss_after_read_mb"] = current_rss_mb()
    res["mem_read_mb"] = res["rss_after_read_mb"] - res["mem_imports_mb"]

    spec = read_spec(SPEC)
    sigma = 1.0 / math.sqrt(2.0 * a.c2)
    t0 = time.perf_counter()
    (model, data), peaks = compile_peaks(functools.partial(
        compile_model, spec, source, SPEC.parent, resolve_train(spec, {"sigma": sigma})))
    res["extract_s"] = time.perf_counter() - t0
    res.update(peaks)
    del source  # the encoded data is all training needs
    res["train_sentences"], res["train_tokens"] = data.n_sequences, data.n_tokens
    prog = model.program
    res["n_features"] = prog.n_features
    res["mem_features_mb"] = array_mb(prog, model.structure, model)   # (feat_sigma: model's)
    res["mem_data_mb"] = array_mb(data)
    res["mem_compile_rest_mb"] = (current_rss_mb() - res["rss_after_read_mb"]
                                  - res["mem_features_mb"] - res["mem_data_mb"])
    res["sigma"] = sorted({round(float(s), 12) for s in np.unique(model.feat_sigma)})
    res["labels"] = len(model.labels)

    settings = resolve_train(spec)
    lbfgs = settings.options()
    max_iter = a.max_iter if a.max_iter is not None else lbfgs.max_iter
    tol = lbfgs.tol
    t0 = time.perf_counter()
    if a.traced:    # (tracing leaves its own heap behind: this run's peak is not the table's)
        w, tlog, mem = traced_training(prog, data, model.feat_sigma, max_iter=max_iter,
                                       tol=tol, jobs=a.jobs)
    else:
        with RssPeak() as rss:
            w, tlog = train_lbfgs(prog, data, model.feat_sigma, max_iter=max_iter, tol=tol,
                                  jobs=a.jobs)
        mem = {"rss_train_peak": rss.peak_mb}
    res["train_wall_s"] = time.perf_counter() - t0
    res.update(mem)
    res["train_s"] = tlog.seconds
    res["iterations"] = len(tlog.iterations)
    res["evaluations"] = tlog.evaluations
    res["eval_s"] = tlog.eval_seconds / max(tlog.evaluations, 1)
    res["eval_s_source"] = "TrainingLog.eval_seconds / evaluations"
    res["objective"] = tlog.objective
    res["feature_norm"] = float(np.linalg.norm(w))
    res["stop"] = tlog.message
    res["max_iter"], res["tol"] = max_iter, tol
    del data  # as CRF.fit: the training data is not held once the weights are learnt

    crf = CRF(SPEC, jobs=a.jobs)
    crf.model, crf.weights = model, w
    t0 = time.perf_counter()
    tdata = model.encode(test)
    res["test_extract_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    prog.decode(w, tdata, a.jobs)
    res["tag_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = crf.predict_sentences(test)
    res["predict_sentences_s"] = time.perf_counter() - t0
    res["test_tokens"] = sum(map(len, test))
    res["peak_rss_mb"] = peak_rss_mb()        # before the checks below

    rep = evaluate([s.column(-1) for s in test], pred)
    res["accuracy"], res["f1"] = rep.accuracy, rep.overall.f1
    res["precision"], res["recall"] = rep.overall.precision, rep.overall.recall
    if a.crfsuite_model and os.path.exists(a.crfsuite_model):
        train = list(itertools.islice(iter_conll(path), QUICK_SENTENCES if a.quick else None))
        res["cross"] = cross_check(a, model, model.encode(train, with_gold=True), prog, w)
    return res


def cross_check(a, model, data, prog, w_fgl) -> dict:
    """Put CRFsuite's trained weights into fgl's feature vector: the feature
    sets must coincide, and fgl's objective there must equal CRFsuite's loss
    (on the training data encoded again: the worker freed it after training,
    as ``CRF.fit`` does)."""
    import numpy as np
    import pycrfsuite

    from fgl.learn.objective import Objective

    tg = pycrfsuite.Tagger()
    tg.open(a.crfsuite_model)
    info = tg.info()          # weights come from CRFsuite's text dump (6 decimals)
    tg.close()
    state, trans = dict(info.state_features), dict(info.transitions)
    labels = model.labels
    patterns = prog.structure.patterns
    row_ptr, feat_pattern = prog.row_ptr, prog.feat_pattern
    w = np.zeros(prog.n_features)
    fgl_only = 0
    for plan, vocab in zip(model.templates, model.vocabs):
        for key, r in vocab.items():
            for f in range(int(row_ptr[r]), int(row_ptr[r + 1])):
                z = patterns[int(feat_pattern[f])]
                if len(z) == 1 and plan.has_observations:
                    v = state.pop((key, labels[z[0]]), None)
                elif len(z) == 2 and not plan.has_observations:
                    v = trans.pop((labels[z[0]], labels[z[1]]), None)
                else:
                    v = None
                if v is None:
                    fgl_only += 1
                else:
                    w[f] = v
    objective = Objective(prog, data, model.feat_sigma, a.jobs)
    f_crf, _ = objective(w)
    f_fgl, _ = objective(w_fgl)
    return {"crfsuite_only": len(state) + len(trans), "fgl_only_or_zero": fgl_only,
            "crfsuite_model_features": len(info.state_features) + len(info.transitions),
            "fgl_objective_at_crfsuite_w": f_crf, "fgl_objective_at_fgl_w": f_fgl,
            "max_abs_w_diff": float(np.max(np.abs(w - w_fgl)))}


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return "?"


# ---------------------------------------------------------------- parent

def run_worker(a, kind: str, jobs: int, extra: list[str] = (),
               env: dict | None = None) -> dict | None:
    if a.blas_threads is not None:
        env = {**(env or os.environ), **{v: str(a.blas_threads) for v in BLAS_VARS}}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--jobs", str(jobs),
           "--data", str(a.data), "--c2", repr(a.c2), *extra]
    if a.max_iter is not None:
        cmd += ["--max-iter", str(a.max_iter)]
    if a.quick:
        cmd.append("--quick")
    if kind == "alternate":
        cmd += ["--alternate", str(a.alternate), "--alternate-iter", str(a.alternate_iter)]
    log(f"--- running: {kind} jobs={jobs}")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        log(f"    worker {kind} jobs={jobs} failed (exit {proc.returncode}); "
            f"its output:\n{proc.stdout}")
        return None
    res = json.loads(lines[-1][len(RESULT):])
    res["process_s"] = time.perf_counter() - t0
    log(f"    done in {res['process_s']:.1f}s")
    return res


ROWS = [
    # label, key or function, format, ratio?
    ("train sentences / tokens",
     lambda r: f"{r['train_sentences']} / {r['train_tokens']}", None, False),
    ("read data s", "read_s", "{:.2f}", True),
    ("feature extraction s (train)", "extract_s", "{:.2f}", True),
    ("  crfsuite featgen in train() s", "featgen_s", "{:.2f}", False),
    ("features", "n_features", "{:,}", True),
    ("import fgl s", "import_s", "{:.2f}", False),
    ("jit/cache load s", "jit_s", "{:.2f}", False),
    ("iterations", "iterations", "{}", True),
    ("evaluations (f+grad)", "evaluations", "{}", True),
    ("s per evaluation", "eval_s", "{:.3f}", True),
    ("s per iteration", lambda r: r["train_s"] / max(r["iterations"], 1), "{:.3f}", True),
    ("  of which outside f+grad", lambda r: None if r["name"] == "crfsuite" else
     (r["train_s"] - r["eval_s"] * r["evaluations"]) / max(r["iterations"], 1), "{:.3f}", False),
    ("training s (optimiser)", "train_s", "{:.1f}", True),
    ("train call wall s", "train_wall_s", "{:.1f}", True),
    ("extraction + training s", lambda r: r["extract_s"] + r["train_wall_s"], "{:.1f}", True),
    ("final objective", "objective", "{:.1f}", True),
    ("||w||", "feature_norm", "{:.3f}", True),
    ("RSS after reading data MB", "rss_after_read_mb", "{:.0f}", True),
    ("peak RSS MB", "peak_rss_mb", "{:.0f}", True),
    ("test extraction s", "test_extract_s", "{:.2f}", True),
    ("tagging s (tag only)", "tag_s", "{:.2f}", True),
    ("tag tokens/s (tag only)", lambda r: r["test_tokens"] / r["tag_s"], "{:,.0f}", True),
    ("tag tokens/s (incl. extraction)",
     lambda r: r["test_tokens"] / (r["tag_s"] + r["test_extract_s"]), "{:,.0f}", True),
    ("predict_sentences s", "predict_sentences_s", "{:.2f}", False),
    ("token accuracy %", "accuracy", "{:.2f}", True),
    ("chunk P / R", lambda r: f"{r['precision']:.2f} / {r['recall']:.2f}", None, False),
    ("chunk F1", "f1", "{:.2f}", True),
    ("worker process s", "process_s", "{:.1f}", True),
]


def value(r: dict | None, key):
    if r is None:
        return None
    try:
        return key(r) if callable(key) else r.get(key)
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def print_table(cols: list[tuple[str, dict | None]], base: dict | None) -> None:
    ratio_cols = [(f"{name}/crfsuite", r) for name, r in cols if r is not None and r is not base
                  and r.get("name", "").startswith("fgl")] if base is not None else []
    head = ["figure"] + [n for n, _ in cols] + [n for n, _ in ratio_cols]
    body = []
    for label, key, fmt, ratio in ROWS:
        vals = [value(r, key) for _, r in cols]
        if all(v is None for v in vals):
            continue
        cells = [label] + ["-" if v is None else (v if fmt is None else fmt.format(v))
                           for v in vals]
        b = value(base, key)
        for _, r in ratio_cols:
            v = value(r, key)
            ok = ratio and isinstance(v, (int, float)) and isinstance(b, (int, float)) and b
            cells.append(f"{v / b:.2f}x" if ok else "")
        body.append(cells)
    widths = [max(len(str(row[i])) for row in [head] + body) for i in range(len(head))]

    def line(row) -> str:
        return "  ".join(str(c).ljust(widths[0]) if i == 0 else str(c).rjust(widths[i])
                         for i, c in enumerate(row))

    print(line(head))
    print("  ".join("-" * w for w in widths))
    for row in body:
        print(line(row))


def parent(a) -> None:
    if not (a.data / "train.txt").exists() or not (a.data / "test.txt").exists():
        print(f"CoNLL-2000 data not found in {a.data} (need train.txt and test.txt); "
              f"pass --data DIR. Nothing to do.")
        return
    try:
        import pycrfsuite  # noqa: F401
        have_crfsuite = True
    except ImportError:
        have_crfsuite = False
        print("python-crfsuite is not installed (pip install python-crfsuite); fgl only.")
    from fgl.engines.parallel import cores as usable_cores

    cores = usable_cores()
    sigma = 1.0 / math.sqrt(2.0 * a.c2)
    print(f"CoNLL-2000 chunking, CRFsuite feature set; data {a.data}")
    mode = f"quick (first {QUICK_SENTENCES} training sentences)" if a.quick else "full"
    max_iter = a.max_iter if a.max_iter is not None else "default (crfsuite: none, fgl: spec)"
    print(f"mode: {mode}; max iterations: {max_iter}; "
          f"{cores} cores; python {sys.version.split()[0]}")
    blas = ({v: os.environ[v] for v in BLAS_VARS if v in os.environ} if a.blas_threads is None
            else {v: str(a.blas_threads) for v in BLAS_VARS})
    print(f"BLAS thread settings in the workers: {blas or 'none (library defaults)'}")
    print(f"regularisation: CRFsuite c1=0, c2={a.c2:g}; its L2 term is c2*||w||^2, "
          f"fgl's is ||w||^2/(2 sigma^2), so sigma = 1/sqrt(2*c2) = {sigma:.6f}")
    print(flush=True)

    with tempfile.TemporaryDirectory(prefix="bench_conll2000_") as tmp:
        model_path = os.path.join(tmp, "conll2000.crfsuite")
        crf = run_worker(a, "crfsuite", 1, ["--model-out", model_path]) if have_crfsuite else None
        extra = ["--crfsuite-model", model_path] if crf is not None and not a.no_cross_check \
            else []
        fgl1 = run_worker(a, "fgl", 1, extra)
        fgln = run_worker(a, "fgl", cores) if cores > 1 else None
        fgl_lists = run_worker(a, "fgl", cores, ["--train-in-memory"])
        fgl_traced = run_worker(a, "fgl", cores, ["--traced"])
    alternate = (run_worker(a, "alternate", cores) if a.alternate and have_crfsuite
                 else None)
    jit_runs = []
    if a.compile_check:
        with tempfile.TemporaryDirectory(prefix="numba_cache_") as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            jit_runs = [run_worker(a, "jit", 1, env=env) for _ in range(2)]

    print()
    cols = [("crfsuite", crf), ("fgl 1 core", fgl1)]
    if cores > 1:
        cols.append((f"fgl {cores} cores", fgln))
    cols.append((f"fgl {cores} cores, lists", fgl_lists))
    print_table(cols, crf)
    if alternate is not None:
        print_alternate(alternate)
    print_memory(cols + [(f"fgl {cores} cores, traced", fgl_traced)])
    print("The training rows come from a further run with its allocations traced "
          "(tracemalloc), whose own peak is not the table's.")
    print("fgl 1 core and fgl {0} cores read the training file as `fgl train` does (twice, "
          "streamed, never held);\n'fgl {0} cores, lists' reads it into lists first, as the "
          "CRFsuite worker does. For the streamed runs 'read data' is the test file "
          "only.".format(cores))
    print()
    for name, r in cols:
        if r is None:
            print(f"{name}: worker failed or skipped")
            continue
        print(f"{name}: stop: {r.get('stop')}")
        if "eval_s_source" in r:
            print(f"    s per evaluation = {r['eval_s_source']}")
    if crf is not None:
        print(f"crfsuite {crf['version']}: active features in model {crf['active_features']}; "
              f"params {crf['params']}")
        c = crf["l2_check"]
        print(f"L2 form check (toy problem, weights read back from CRFsuite): reported loss "
              f"{c['loss']:.6f}; NLL + c2*||w||^2 differs by {c['err_c2']:+.2e}, "
              f"NLL + c2/2*||w||^2 by {c['err_half_c2']:+.2e}  => CRFsuite uses "
              f"{'c2*||w||^2' if abs(c['err_c2']) < abs(c['err_half_c2']) else 'c2/2*||w||^2'}")
    for name, r in cols[1:]:
        if r is not None:
            print(f"{name}: sigma per feature {r['sigma']}, {r['labels']} labels, "
                  f"max_iter {r['max_iter']}, tol {r['tol']:g}; jit second call "
                  f"{r['jit_second_call_s']:.4f}s; cache {r['numba_cache_dir']}")
    if crf is not None and fgl1 is not None:
        print(f"final objectives: crfsuite {crf['objective']:.2f}, "
              f"fgl 1 core {fgl1['objective']:.2f}"
              + (f", fgl {cores} cores {fgln['objective']:.2f}" if fgln else "")
              + f"; features crfsuite {crf['n_features']:,} vs fgl {fgl1['n_features']:,}"
              + ("" if crf["n_features"] == fgl1["n_features"] else "  <-- DIFFERENT"))
        x = fgl1.get("cross")
        if x:
            print(f"cross-check: CRFsuite's weights put into fgl's feature vector: "
                  f"{x['crfsuite_only']} CRFsuite features without an fgl feature, "
                  f"{x['fgl_only_or_zero']} fgl features absent from the CRFsuite model "
                  f"(dropped there when exactly zero); fgl objective at CRFsuite's weights "
                  f"{x['fgl_objective_at_crfsuite_w']:.2f} "
                  f"(CRFsuite reports {crf['objective']:.2f}), "
                  f"at fgl's own {x['fgl_objective_at_fgl_w']:.2f}; max |w_crfsuite - w_fgl| "
                  f"{x['max_abs_w_diff']:.3g}")
    if jit_runs:
        print()
        print("numba compile check (fresh NUMBA_CACHE_DIR, two fresh processes, jobs=1):")
        for i, r in enumerate(jit_runs, 1):
            if r is None:
                print(f"  run {i}: failed")
            else:
                print(f"  run {i}: jit/cache load {r['jit_s']:.2f}s  "
                      f"(import fgl {r['import_s']:.2f}s, "
                      f"process {r['process_s']:.1f}s)")
        print("  run 1 compiles every kernel; run 2 loads them from the cache that run 1 wrote.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="folder with train.txt, test.txt")
    ap.add_argument("--max-iter", type=int, default=None, help="cap L-BFGS iterations (both)")
    ap.add_argument("--quick", action="store_true",
                    help=f"first {QUICK_SENTENCES} training sentences, max-iter {QUICK_ITER}")
    ap.add_argument("--c2", type=float, default=1.0, help="CRFsuite's L2 coefficient")
    ap.add_argument("--compile-check", action="store_true",
                    help="also time numba compilation cold and warm in fresh processes")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="set OPENBLAS/OMP/MKL_NUM_THREADS in the workers (default: inherit)")
    ap.add_argument("--no-cross-check", action="store_true",
                    help="skip evaluating fgl's objective at CRFsuite's weights")
    ap.add_argument("--alternate", type=int, default=0, metavar="ROUNDS",
                    help="also time CRFsuite and fgl in one process, in turn, ROUNDS times")
    ap.add_argument("--alternate-iter", type=int, default=10, metavar="N",
                    help="L-BFGS iterations per run of --alternate (default 10)")
    ap.add_argument("--worker", choices=["crfsuite", "fgl", "jit", "alternate"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--model-out", help=argparse.SUPPRESS)
    ap.add_argument("--crfsuite-model", help=argparse.SUPPRESS)
    ap.add_argument("--train-in-memory", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick and a.max_iter is None:
        a.max_iter = QUICK_ITER
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    if a.worker:
        fn = {"crfsuite": worker_crfsuite, "fgl": worker_fgl, "jit": worker_jit,
              "alternate": worker_alternate}[a.worker]
        print(RESULT + json.dumps(fn(a)), flush=True)
    else:
        parent(a)


if __name__ == "__main__":
    main()
