"""Cost of one objective+gradient evaluation of the semi-Markov engine.

Times ``model.program.expectations(w, data, jobs=1)`` (log Z and expected
feature counts: span scores, forward, backward, marginals) and
``model.program.decode(w, data, jobs=1)`` (Viterbi over the encoded data) —
the calling thread's CPU time (with one job the work runs there, so other
load on a shared machine counts less than in wall time), best of
``--repeats`` after a warm-up call, random small weights — on one fixed
data set, sweeping

  (a) the maximum segment length L = 1..8 at a fixed segment-pattern order,
      with the chain engine on the equivalent chain spec at L = 1 and the
      ratio of the two per evaluation;
  (b) the segment-pattern order k = 1..4 (``s[j-k..j] patterns observed
      upto``) at a fixed L;
  (c) the number of tokens T (a quarter, half and all of the sequences) at
      L = 1, 4 and 8: per-evaluation time against T and L;
  (d) compiling and tagging at scale: ``--scale-tokens`` training tokens
      (10,000) and 60 % as many test tokens in sequences of 100 tokens, at
      L = ``--scale-L`` (40), with the usual span features (the words of the
      segment as a bag, the words before and after it, prefixes and suffixes
      of its first and last word, its length): process CPU time of
      ``compile_model`` and of tagging (``model.encode`` then
      ``model.decode``).

Every gold chunk longer than L is cut into pieces of at most L tokens
(fgl refuses a BIO chunk longer than the limit), so the tokens stay the same
across the sweep; ``O`` has its own limit of 1 token (``[O = 1]``).  The
engine's cost is O(T·|P|·Σ_y L_y) per pass (Cuong et al. 2014 §2.5, with the
per-label limits L_y) plus the span potentials (proportional to the
attributes of the candidate spans), so the ns per T·|P|·Σ_y L_y unit should
stay roughly flat.  For L = 1 the equivalent chain spec (the same
observations on tokens, the same label patterns) is timed on the chain
engine for comparison; both must give the same |Z|, |P|, |S| and feature
count.  A benchmark prints, it does not assert: timings on a shared machine
vary by some 10 %.

Data: generated (``fgl.datasets.synth.segment_sequences``) and, when present,
CoNLL-2000 (first N training sentences, NP and VP chunks only).

    python examples/bench_semimarkov.py                 # ~a few minutes
    python examples/bench_semimarkov.py --quick         # smoke run
    python examples/bench_semimarkov.py --only-scale    # (d) alone, ~10 s
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from measure import best_time

from fgl.data.sentence import Sentence
from fgl.datasets.synth import segment_sequences
from fgl.evaluation.evaluate import chunks
from fgl.io.conll import read_conll
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.registry import compile_model

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "conll2000"

SEMI = """
columns {cols}
output label
segments max {L} [O = 1] from bio
obs first  = lower(word[u])
obs last   = lower(word[v])
obs before = lower(word[u-1])
obs after  = lower(word[v+1])
obs inside = lower(word[u..v])
obs shp    = shape(word[u]) & shape(word[v])
{pos}
template segment: s[j] ~ bias, first, last, before, after, inside, shp, length{pos_use}
template labels: s[j-{k}..j] patterns observed upto
"""
SEMI_POS = "obs pfirst = pos[u]\nobs plast = pos[v]\nobs pinside = pos[u..v]"
SEMI_POS_USE = ", pfirst, plast, pinside"

# The same observations with u = v = t.  fgl keys an attribute by its
# expression, not by the obs name, so `first`, `last` and `inside` are
# written as different expressions with the same value (nested lower) to stay
# three attributes; `len1` (always true) stands for the constant `length=1`
# attribute, so the feature tables match one for one.
CHAIN = """
columns {cols}
output label
obs first  = lower(word[t])
obs last   = lower(lower(word[t]))
obs before = lower(word[t-1])
obs after  = lower(word[t+1])
obs inside = lower(lower(lower(word[t])))
obs shp    = shape(word[t]) & shape(word[t])
obs len1   = regex(word[t], "")
{pos}
template segment: y[t] ~ bias, first, last, before, after, inside, shp, len1{pos_use}
template labels: y[t-{k}..t] patterns observed upto
"""
CHAIN_POS = "obs pfirst = pos[t]\nobs plast = prefix(pos[t], 20)\nobs pinside = suffix(pos[t], 20)"


SCALE = """
columns word, label
output label
segments max {L} [O = 1] from bio
obs inside = word[u..v]
obs before = word[u-1]
obs after  = word[v+1]
obs fpre   = prefix(word[u], 3)
obs fsuf   = suffix(word[u], 3)
obs lpre   = prefix(word[v], 3)
obs lsuf   = suffix(word[v], 3)
template segment: s[j] ~ bias, inside, before, after, fpre, fsuf, lpre, lsuf, length
template labels: s[j-1..j] patterns observed upto
"""


def spec(text: str):
    return validate(parse_spec(text, "<bench>"))


def semi_spec(L: int, k: int, has_pos: bool):
    cols = "word, pos, label" if has_pos else "word, label"
    return spec(SEMI.format(cols=cols, L=L, k=k, pos=SEMI_POS if has_pos else "",
                            pos_use=SEMI_POS_USE if has_pos else ""))


def chain_spec(k: int, has_pos: bool):
    cols = "word, pos, label" if has_pos else "word, label"
    return spec(CHAIN.format(cols=cols, k=k, pos=CHAIN_POS if has_pos else "",
                             pos_use=SEMI_POS_USE if has_pos else ""))


# ------------------------------------------------------------------ data

def cut_chunks(sentences: list[Sentence], L: int) -> list[Sentence]:
    """Cut every gold chunk longer than L into pieces of at most L tokens
    (B-X I-X .. B-X I-X ..); other columns unchanged."""
    out = []
    for s in sentences:
        tags = s.column(-1)
        new = list(tags)
        for typ, a, b in chunks(tags, "iob"):
            for i in range(a, b):
                new[i] = ("B-" if (i - a) % L == 0 else "I-") + typ
        out.append(Sentence([r[:-1] + [t] for r, t in zip(s.rows, new)], s.lines, s.doc, s.file))
    return out


def to_types(sentences: list[Sentence]) -> list[Sentence]:
    """Every chunk cut to single tokens, tags as bare types (NP, VP, O): the
    chain-model reading of a segmentation with L = 1."""
    out = []
    for s in sentences:
        rows = [r[:-1] + [r[-1][2:] if r[-1] != "O" else "O"] for r in s.rows]
        out.append(Sentence(rows, s.lines, s.doc, s.file))
    return out


def np_vp_only(sentences: list[Sentence]) -> list[Sentence]:
    out = []
    for s in sentences:
        rows = [r[:-1] + [r[-1] if r[-1][:2] in ("B-", "I-") and r[-1][2:] in ("NP", "VP")
                          else "O"] for r in s.rows]
        out.append(Sentence(rows, s.lines, s.doc, s.file))
    return out


# ------------------------------------------------------------------ timing

def timings(program, data, repeats: int, seed: int = 0) -> tuple[float, float]:
    """(best seconds of one expectations call, of one decode call) with
    random small w."""
    w = np.random.default_rng(seed).normal(0.0, 0.1, program.n_features)
    return (best_time(lambda: program.expectations(w, data, jobs=1), repeats,
                      time.thread_time),
            best_time(lambda: program.decode(w, data, jobs=1), repeats, time.thread_time))


def span_work(model) -> int:
    """Σ_y L_y·|P|: span-transition updates per token of one pass (|S| for a
    chain)."""
    program = model.program
    return int(getattr(program, "label_max", np.ones(1)).sum()) * program.structure.n_forward \
        if model.engine == "segments" else program.structure.n_backward


HEAD = (f"{'engine':<6} {'L':>2} {'k':>2} {'|Z|':>5} {'|P|':>5} {'|S|':>6} {'features':>8} "
        f"{'tokens':>6} {'attr/span':>9} {'compile s':>9} {'s/eval':>8} {'ns/unit':>8} "
        f"{'s/decode':>8} {'vs chain':>8}")


def row(engine: str, L: int, k: int, model, data, compile_s: float, repeats: int,
        chain_s: float | None = None) -> tuple[str, float]:
    """One table row, and the seconds per evaluation."""
    st = model.program.structure
    sec, dec = timings(model.program, data, repeats)
    T = data.n_tokens
    L_max = getattr(model.program, "max_length", 1)
    n_spans = sum(min(L_max, t - u) for t in np.diff(data.seq_ptr) for u in range(t))
    attr = len(data.tok_row) / n_spans
    ns = 1e9 * sec / (T * span_work(model))
    ratio = f"{sec / chain_s:8.2f}" if chain_s else f"{'':>8}"
    return (f"{engine:<6} {L:2d} {k:2d} {len(st.patterns):5d} {st.n_forward:5d} "
            f"{st.n_backward:6d} {model.program.n_features:8d} {T:6d} {attr:9.1f} "
            f"{compile_s:9.2f} {sec:8.4f} {ns:8.2f} {dec:8.4f} {ratio}"), sec


def compiled(spec_, sents):
    t0 = time.perf_counter()
    model, data = compile_model(spec_, sents)
    return model, data, time.perf_counter() - t0


def run(name: str, sentences: list[Sentence], has_pos: bool, Ls: list[int], orders: list[int],
        fixed_k: int, fixed_L: int, repeats: int) -> None:
    print(f"\n== {name}: {len(sentences)} sequences, {sum(map(len, sentences))} tokens")
    print(f"\n(a) maximum segment length L, segment-pattern order k = {fixed_k}")
    print(HEAD)
    print("-" * len(HEAD))
    for L in Ls:
        chain_s = None
        if L == 1:
            model, data, cs = compiled(chain_spec(fixed_k, has_pos), to_types(sentences))
            text, chain_s = row("chain", 1, fixed_k, model, data, cs, repeats)
            print(text, flush=True)
        model, data, cs = compiled(semi_spec(L, fixed_k, has_pos), cut_chunks(sentences, L))
        print(row("semi", L, fixed_k, model, data, cs, repeats, chain_s)[0], flush=True)
    print(f"\n(b) segment-pattern order k, L = {fixed_L}")
    print(HEAD)
    print("-" * len(HEAD))
    cut = cut_chunks(sentences, fixed_L)
    for k in orders:
        model, data, cs = compiled(semi_spec(fixed_L, k, has_pos), cut)
        print(row("semi", fixed_L, k, model, data, cs, repeats)[0], flush=True)
    sizes = [len(sentences) // 4, len(sentences) // 2, len(sentences)]
    print(f"\n(c) s/eval (µs per token) against the tokens T, k = {fixed_k}")
    head = f"{'L':>2} " + " ".join(f"{f'T = {sum(map(len, sentences[:m]))}':>20}"
                                    for m in sizes)
    print(head)
    print("-" * len(head))
    for L in sorted({1, min(4, max(Ls)), max(Ls)}):
        cells = []
        for m in sizes:
            model, data, _ = compiled(semi_spec(L, fixed_k, has_pos),
                                      cut_chunks(sentences[:m], L))
            sec, _ = timings(model.program, data, repeats)
            cells.append(f"{sec:9.4f} ({1e6 * sec / data.n_tokens:6.2f} µs)")
        print(f"{L:2d} " + " ".join(f"{c:>20}" for c in cells), flush=True)


def scale(tokens: int, L: int) -> None:
    """(d): compile and tag time at ``tokens`` training tokens and span limit L."""
    n = max(1, tokens // 100)
    train, test = segment_sequences(n_types=3, max_len=8, vocab=2000, n_train=n,
                                    n_test=max(1, 6 * n // 10), length=100, seed=0)
    compile_model(spec(SCALE.format(L=L)), train[:2])   # warm-up: load compiled kernels
    t0 = time.process_time()
    model, data = compile_model(spec(SCALE.format(L=L)), train)
    t1 = time.process_time()
    w = np.random.default_rng(0).normal(0.0, 0.1, model.program.n_features)
    encoded = model.encode(test)
    t2 = time.process_time()
    model.decode(w, encoded, 1)
    t3 = time.process_time()
    print(f"\n(d) compile and tag at scale, L = {model.program.max_length} (process CPU time)")
    print(f"compile: {data.n_tokens} tokens, {model.program.n_features} features, "
          f"{len(data.tok_row):,} unit rows: {t1 - t0:.2f} s")
    print(f"tag: {encoded.n_tokens} tokens: {t3 - t1:.2f} s (encode {t2 - t1:.2f} s, "
          f"decode {t3 - t2:.2f} s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CoNLL-2000 directory")
    ap.add_argument("--sentences", type=int, default=500, help="sequences per data set")
    ap.add_argument("--max-L", type=int, default=8)
    ap.add_argument("--max-order", type=int, default=4)
    ap.add_argument("--order", type=int, default=2, help="fixed order k for sweep (a)")
    ap.add_argument("--L", type=int, default=4, help="fixed L for sweep (b)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: 60 sequences, L <= 3, k <= 2")
    ap.add_argument("--scale-tokens", type=int, default=10000, help="training tokens of (d)")
    ap.add_argument("--scale-L", type=int, default=40, help="span limit L of (d)")
    ap.add_argument("--only-scale", action="store_true", help="run (d) alone")
    a = ap.parse_args()
    if a.only_scale:
        scale(a.scale_tokens, a.scale_L)
        return
    if a.quick:
        a.sentences, a.max_L, a.max_order, a.repeats = 60, 3, 2, 1
        a.L = min(a.L, a.max_L)
    Ls, orders = list(range(1, a.max_L + 1)), list(range(1, a.max_order + 1))
    print("s/eval: one objective+gradient evaluation, program.expectations(w, data, jobs=1); "
          "s/decode: program.decode(w, data, jobs=1); "
          f"thread CPU time, best of {a.repeats} after a warm-up, w ~ N(0, 0.1)")
    print("attr/span: active attribute rows per candidate span (token for the chain; the "
          "constant bias is not stored); compile s: compile_model (patterns, features, "
          "encoding); ns/unit: s/eval per T·|P|·Σ_y L_y (T·|S| for the chain); "
          "vs chain: semi s/eval over chain s/eval at L = 1")

    gen, _ = segment_sequences(n_types=3, max_len=8, vocab=200, n_train=a.sentences, n_test=1,
                               length=25, seed=0)
    run("generated segment_sequences (3 types + O, segments <= 8, vocab 200, length 25)",
        gen, False, Ls, orders, a.order, a.L, a.repeats)
    if (a.data / "train.txt").exists():
        conll = np_vp_only(read_conll(a.data / "train.txt"))[:a.sentences]
        run(f"CoNLL-2000 train.txt, first {len(conll)} sentences, NP/VP only, word+pos",
            conll, True, Ls, orders, a.order, a.L, a.repeats)
    else:
        print(f"\n(no CoNLL-2000 at {a.data}; skipped)")
    scale(a.scale_tokens // 10 if a.quick else a.scale_tokens, a.scale_L)


if __name__ == "__main__":
    main()
