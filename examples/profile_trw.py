"""Where a tree-reweighted BP training evaluation of the paper's skip chain
(a clique per repeated capitalised word, Sutton & McCallum §1.5.2) spends
its time, against the linear chain's whole evaluation on the same articles,
and how close the slowest articles' runs come to their fixed points.

A profile, not a timed test: prints tables, asserts nothing.  One
evaluation under ``infer trw`` (``fgl.engines.graph.trw_training``) runs,
per article: the factor tables θ from the weights (Sutton & McCallum eq.
1.54), the reweighted tables ψ, the passes of the trees hanging off the
graph's cycles and the set-up (``trw.propagate`` with no sweep), the sweeps
of the core to the tolerance (Wainwright, Jaakkola & Willsky 2005 §5.2), the
beliefs and the bound, and the expected counts.  Each part is timed on one
thread (CPU time, best of ``--repeats``) by calling its kernel article by
article; "whole" is the block kernel the learner calls, over every article
in one call.  Sweeps run twice: cold (from uniform messages, the learner's
default) and warm (from the messages the run at the weights of one L-BFGS
iteration earlier ended with, ``train { bp_start = warm }``).

The second table takes the ``--slowest`` articles of the cold run and runs
each to ``tol`` 1e-3 and to the spec's ``tol``, and once for
``--reference-sweeps`` sweeps to ``tol`` 1e-12 (the reference): the largest
difference of a variable's belief from the reference's, and of log Z_ρ.

Data: the first ``--train-docs`` articles of CoNLL-2003 English train
(../shared/data/conll2003), the specs of ``examples/skip_chain_ner.py``
(``--pairs all --infer trw``: the same token features in both models), the
weights after ``--train-iter`` L-BFGS iterations of each model (one thread).
Skips with a note when the data is absent.

    python examples/profile_trw.py                      # ~2 minutes
    python examples/profile_trw.py --train-docs 30 --train-iter 10 --reference-sweeps 0
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "examples"))

from profile_chain import best_cpu  # noqa: E402
from skip_chain_ner import CORPORA, SKIP_FEATURES, SKIP_WHERE, load, spec_texts  # noqa: E402

from fgl.engines.graph import table_kernels, trw, trw_training  # noqa: E402
from fgl.engines.graph.peeling import sweep_orders  # noqa: E402
from fgl.engines.graph.trw_beliefs import beliefs  # noqa: E402
from fgl.engines.graph.trw_potentials import (  # noqa: E402
    ReweightedPotentials,
    reweighted_tables,
)
from fgl.lang.parser import parse_spec  # noqa: E402
from fgl.learn.learner import train_lbfgs  # noqa: E402
from fgl.registry import compile_model  # noqa: E402

DATA = CORPORA["conll2003"][0]


def skip_spec() -> str:
    """The clique skip chain of ``skip_chain_ner.py --pairs all --infer trw``."""
    where = SKIP_WHERE.replace(" and nearest", "")
    text = spec_texts(CORPORA["conll2003"][4], 1000, where, SKIP_FEATURES + " (sigma = 1)")[1]
    return text.replace("infer trp(max_iter = 300, tol = 1e-6)", "infer trw")


def compiled(text: str, train: list, iters: list[int]):
    """The model of spec ``text`` on ``train`` and its weights after each
    number of L-BFGS iterations in ``iters`` (one thread)."""
    model, data = compile_model(parse_spec(text), train, REPO)
    ws = [train_lbfgs(model.program, data, model.feat_sigma, max_iter=n, jobs=1)[0] if n
          else np.zeros(model.program.n_features) for n in iters]
    return model, data, ws


class Articles:
    """Each article's graph, counting numbers and sweep orders, and the
    program's per-article steps (``trw_training.expect_block`` makes the
    same calls for a block of articles)."""

    def __init__(self, model, data):
        prog = model.program
        self.prog, self.data = prog, data
        self.graphs = data.graphs
        self.rho = [prog.appearance_probabilities(g) for g in self.graphs]
        self.orders = [sweep_orders(g, r) for g, r in zip(self.graphs, self.rho)]
        self.tol = float(prog.settings.tol)
        # the tied tables of the training kernel (chain edges' transitions made once)
        rep = prog.trw_blocks(data)[1].rep
        f = data.inst_fptr
        self.rep = [np.ascontiguousarray(rep[f[i]:f[i + 1]]) for i in range(len(self.graphs))]

    def tables(self, w: np.ndarray, i: int) -> np.ndarray:
        g, d, p = self.graphs[i], self.data, self.prog
        out = np.empty(g.n_table)
        table_kernels.factor_tables(int(d.inst_fptr[i]), int(d.inst_fptr[i + 1]), g.tab_ptr,
                                    d.fac_ptr, d.fac_row, d.fac_val, p.row_ptr, p.feat_config,
                                    p.dense_rows, w, self.rep[i], out)
        return out

    def potentials(self, table: np.ndarray, i: int) -> ReweightedPotentials:
        g, rep = self.graphs[i], self.rep[i]
        psi = np.empty(g.n_table)
        psi_at = np.zeros(g.n_factors, dtype=np.int64)
        used = reweighted_tables(table, self.rho[i], g.tab_ptr, g.f_ptr, rep, psi, psi_at)
        return ReweightedPotentials(table, self.rho[i], psi[:used], psi_at,
                                    np.ascontiguousarray(g.tab_ptr[rep]))

    def sweep(self, pot, i: int, init: np.ndarray | None, max_iter: int):
        """``trw.propagate`` of article i from ``init`` (None: cold):
        (messages, log beliefs, sweeps)."""
        g = self.graphs[i]
        L = np.zeros(int(g.msg_ptr[-1])) if init is None else init.copy()
        lb = np.empty(int(g.var_ptr[-1]))
        run = trw.RunState(L, lb, np.zeros_like(lb), np.zeros(g.n_vars),
                           np.array([np.inf, np.inf, 0.0]))
        k = trw.propagate(pot, g.arrays, self.orders[i], run, 0, False, self.tol, max_iter)[0]
        return L, lb, int(k)

    def beliefs(self, pot, i: int, L: np.ndarray, lb: np.ndarray) -> np.ndarray:
        g = self.graphs[i]
        bf = np.empty(g.n_table)
        beliefs(pot, g.arrays, L, lb, False, np.empty_like(lb), bf, np.empty_like(L))
        return bf

    def counts(self, bf: np.ndarray, i: int, grad: np.ndarray) -> None:
        g, d, p = self.graphs[i], self.data, self.prog
        table_kernels.feature_expectations(
            int(d.inst_fptr[i]), int(d.inst_fptr[i + 1]), g.tab_ptr, d.fac_ptr, d.fac_row,
            d.fac_val, p.row_ptr, p.feat_config, p.dense_rows, bf, self.rep[i], grad)


def parts(arts: Articles, w: np.ndarray, starts: list | None, max_iter: int,
          repeats: int) -> tuple[dict, int]:
    """Seconds of each part over every article (module docstring), and the
    sweeps; ``starts``: each article's initial messages (None: cold)."""
    n = len(arts.graphs)
    tables = [arts.tables(w, i) for i in range(n)]
    pots = [arts.potentials(tables[i], i) for i in range(n)]
    init = starts or [None] * n
    runs = [arts.sweep(pots[i], i, init[i], max_iter) for i in range(n)]
    bfs = [arts.beliefs(pots[i], i, *runs[i][:2]) for i in range(n)]
    grad = np.zeros(arts.prog.n_features)
    out = {
        "factor tables": best_cpu(lambda: [arts.tables(w, i) for i in range(n)], repeats),
        "reweighted tables": best_cpu(lambda: [arts.potentials(tables[i], i)
                                               for i in range(n)], repeats),
        "hanging trees, set-up": best_cpu(lambda: [arts.sweep(pots[i], i, init[i], 0)
                                                   for i in range(n)], repeats),
        "sweeps and the above": best_cpu(lambda: [arts.sweep(pots[i], i, init[i], max_iter)
                                                  for i in range(n)], repeats),
        "beliefs and bound": best_cpu(lambda: [arts.beliefs(pots[i], i, *runs[i][:2])
                                               for i in range(n)], repeats),
        "expected counts": best_cpu(lambda: [arts.counts(bfs[i], i, grad) for i in range(n)],
                                    repeats),
    }
    out["sweeps"] = max(out.pop("sweeps and the above") - out["hanging trees, set-up"], 0.0)
    return out, sum(r[2] for r in runs)


def whole(arts: Articles, w: np.ndarray, starts: list | None, max_iter: int,
          repeats: int) -> tuple[float, int]:
    """Seconds of ``trw_training.expect_block`` over every article in one
    call, and its sweeps (with those it adds where a run's factor beliefs
    disagree with its variable beliefs, which the parts leave out)."""
    a, feats, _ = arts.prog.trw_blocks(arts.data)
    n = len(arts.graphs)
    picks = np.arange(n)
    if starts is None:
        inits, init_at = np.empty(0), np.full(n, -1, dtype=np.int64)
    else:
        inits, init_at = np.concatenate(starts), a.msg_at[:-1].copy()
    msgs = np.empty(int(a.msg_at[-1]))
    runs = trw_training.block_runs(n)

    def run():
        trw_training.expect_block(picks, a, feats, w,
                                  trw_training.BlockMessages(inits, init_at, msgs),
                                  trw_training.BlockSettings(0.0, float(arts.tol), int(max_iter),
                                                             False),
                                  np.zeros(arts.prog.n_features), runs)
    return best_cpu(run, repeats), int(runs.sweeps.sum())


def print_parts(cold: dict, warm: dict, sweeps: tuple[int, int],
                wholes: tuple[tuple[float, int], tuple[float, int]], linear: float) -> None:
    print(f"{'part':<24}{'cold ms':>9}{'warm ms':>9}")
    print("-" * 42)
    for key in ("factor tables", "reweighted tables", "hanging trees, set-up", "sweeps",
                "beliefs and bound", "expected counts"):
        print(f"{key:<24}{cold[key] * 1e3:9.1f}{warm[key] * 1e3:9.1f}")
    print(f"{'sum of the parts':<24}{sum(cold.values()) * 1e3:9.1f}"
          f"{sum(warm.values()) * 1e3:9.1f}")
    print(f"{'whole (block kernel)':<24}{wholes[0][0] * 1e3:9.1f}{wholes[1][0] * 1e3:9.1f}")
    print(f"{'sweeps (count)':<24}{sweeps[0]:9d}{sweeps[1]:9d}")
    print(f"{'  in the block kernel':<24}{wholes[0][1]:9d}{wholes[1][1]:9d}")
    print(f"{'linear chain, whole':<24}{linear * 1e3:9.1f}")
    fixed = sum(v for k, v in cold.items() if k != "sweeps")
    print(f"\nwhole / linear chain: cold {wholes[0][0] / linear:.1f}x, "
          f"warm {wholes[1][0] / linear:.1f}x;"
          f" the parts outside the sweeps {fixed / linear:.1f}x; the sweeps alone, cold "
          f"{cold['sweeps'] / linear:.1f}x, warm {warm['sweeps'] / linear:.1f}x")


def slowest(arts: Articles, w: np.ndarray, k: int, reference: int) -> None:
    """The second table (module docstring) for the k articles whose cold
    runs take longest."""
    n = len(arts.graphs)
    tables = [arts.prog.factor_tables(w, arts.data, i) for i in range(n)]   # (every table)
    secs = [best_cpu(lambda i=i: trw.trw(arts.graphs[i], tables[i], rho=arts.rho[i],
                                         tol=arts.tol), 1) for i in range(n)]
    print(f"\n{'article':>7}{'vars':>6}{'core':>6}{'rho min':>8}{'ms':>7}  "
          f"{'tol':>6}{'sweeps':>7}{'|db|':>9}{'dlogZ':>9}")
    print("-" * 65)
    for i in sorted(range(n), key=lambda i: -secs[i])[:k]:
        g, rho = arts.graphs[i], arts.rho[i]
        ref = trw.trw(g, tables[i], rho=rho, tol=1e-12, max_iter=reference) if reference else None
        head = (f"{i:7d}{g.n_vars:6d}{len(arts.orders[i].core):6d}"
                f"{rho[np.diff(g.f_ptr) >= 2].min():8.2f}{secs[i] * 1e3:7.1f}  ")
        for tol in sorted({1e-3, arts.tol}, reverse=True):
            r = trw.trw(g, tables[i], rho=rho, tol=tol)
            far = (f"{np.abs(r.var_flat - ref.var_flat).max():9.1e}{r.log_z - ref.log_z:9.1e}"
                   if ref is not None else f"{'-':>9}{'-':>9}")
            print(f"{head}{tol:6.0e}{r.iterations:7d}{far}")
            head = " " * len(head)
    if reference:
        print(f"(|db|: the largest difference of a belief from a run of {reference} sweeps to "
              "tol 1e-12; dlogZ: of log Z_rho)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train-docs", type=int, default=150, help="first N training articles")
    ap.add_argument("--train-iter", type=int, default=60,
                    help="L-BFGS iterations before profiling (at least 1)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--slowest", type=int, default=3, help="articles in the second table")
    ap.add_argument("--reference-sweeps", type=int, default=20000,
                    help="sweeps of the reference runs (0: no reference)")
    a = ap.parse_args()
    if not DATA.is_dir():
        print(f"skipped: {DATA} is absent (see ../shared/data/README)")
        return 0
    t0 = time.perf_counter()
    iters = max(1, a.train_iter)
    train = load("conll2003", "train", a.train_docs)
    model, data, (w_before, w) = compiled(skip_spec(), train, [iters - 1, iters])
    lin_model, lin_data, (w_lin,) = compiled(spec_texts(CORPORA["conll2003"][4], 1000)[0],
                                             train, [iters])
    arts = Articles(model, data)
    max_iter = int(model.program.settings.max_iter)
    core = sum(len(o.core) for o in arts.orders)
    print(f"clique skip chain on CoNLL-2003 train: {data.n_sequences} articles, "
          f"{data.n_tokens} tokens, {core} in the core; weights after {iters} L-BFGS "
          f"iterations, tol {arts.tol:g}; one thread, CPU time, best of {a.repeats}\n")
    n = len(arts.graphs)
    tables = [arts.tables(w_before, i) for i in range(n)]
    starts = [arts.sweep(arts.potentials(tables[i], i), i, None, max_iter)[0] for i in range(n)]
    cold, cold_sweeps = parts(arts, w, None, max_iter, a.repeats)
    warm, warm_sweeps = parts(arts, w, starts, max_iter, a.repeats)
    wholes = (whole(arts, w, None, max_iter, a.repeats),
              whole(arts, w, starts, max_iter, a.repeats))
    linear = best_cpu(lambda: lin_model.program.expectations(w_lin, lin_data, 1), a.repeats)
    print_parts(cold, warm, (cold_sweeps, warm_sweeps), wholes, linear)
    if a.slowest:
        slowest(arts, w, a.slowest, a.reference_sweeps)
    print(f"\n({time.perf_counter() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
