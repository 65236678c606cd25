"""fgl beside CRF++, Wapiti and CRFsuite: one template, one data set, one prior.

Every tool trains a linear-chain CRF on CoNLL-2000 chunking
(``../shared/data/conll2000``, read in place) with CRF++'s own chunking
template (``example/chunking/template`` of the CRF++ sources: words w[-2..2],
word bigrams, POS p[-2..2], POS bigrams and trigrams, and the label bigram
``B``), L2 with sigma = 1, the same number of L-BFGS iterations
(``--max-iter``, default 50) and threads (``--jobs``, default 2):

    CRF++     crf_learn -p J -m N -c 1 template train model; crf_test -m model test
    Wapiti    wapiti train -p template -t J -i N -1 0 -2 1 train model;
              wapiti label -c -m model test out
    CRFsuite  python-crfsuite, L-BFGS, c1 = 0, c2 = 1/(2 sigma^2) = 0.5, the
              template's attributes expanded in Python (one thread: CRFsuite
              has no threads; state features for seen attribute-label pairs
              only, CRFsuite's default)
    fgl       fgl convert crfpp template --columns word,pos,chunk;
              fgl train --sigma 1 --max-iter N --jobs J; fgl tag

The penalties are one prior: CRF++ minimises C·(-loglik) + ||w||²/2 (C = sigma²),
Wapiti -loglik + rho2/2·||w||², CRFsuite -loglik + c2·||w||² (docs/sklearn.md,
"The objective: c1 and c2"; docs/crfpp.md for -c).  Each tool stops after
``--max-iter`` iterations or at its own convergence test, whichever comes
first.  Training time is the training command's wall time (CRFsuite's
includes reading the data and expanding the template in Python, as
crf_learn's, wapiti's and fgl train's include theirs).  Each step runs in its own
subprocess; its wall time and peak resident memory (``ru_maxrss`` of that
child, from ``os.wait4``) are measured.  Every tool's tagged test set (gold and
predicted labels the last two columns) is scored by ``fgl eval --tagged``, so
all are scored alike.  Prints one table (train s, tag s, peak MB of training
and tagging, chunk F1, and fgl's training time and peak memory over each
peer's), then where fgl's training memory goes: the same training run again
through the API in its own process, its phases measured by RSS, its arrays
by their sizes and the optimiser's and each evaluation's allocations traced
(``measure.traced_training``; ``--no-breakdown`` skips it); asserts nothing.
A missing peer is skipped with a note on how to get it; without the data
the script says so and exits 0.

    python examples/bench_peers.py                 # full run, ~8 minutes on 2 cores
    python examples/bench_peers.py --quick         # 500 sentences, 5 iterations
    python examples/bench_peers.py --tools fgl,wapiti   # only these
    python examples/bench_peers.py --crfpp-learn /tmp/peers/crfpp/crf_learn \\
        --crfpp-test /tmp/peers/crfpp/crf_test --wapiti /tmp/peers/wapiti/wapiti

Getting the peers
-----------------
python-crfsuite: ``pip install -e '.[bench]'`` (or ``pip install python-crfsuite``).

CRF++ 0.59 (github.com/taku910/crfpp), from its source tree, as its
INSTALL says (on Linux the GitHub tree needs an empty ``winmain.h`` first)::

    cd crfpp && touch winmain.h && ./configure && make      # (make install: optional)

Wapiti 1.5 (github.com/Jekub/Wapiti), from its source tree (a plain
Makefile; INSTALL)::

    cd wapiti && make                                        # (make install: optional)

The binaries are found on PATH (``crf_learn``, ``crf_test``, ``wapiti``),
given by ``--crfpp-learn/--crfpp-test/--wapiti``, or under ``--peers DIR``
(default /tmp/peers) as ``crfpp/crf_learn``, ``crfpp/crf_test`` and
``wapiti/wapiti``.  On this project's machine, ``../shared/peers/build.sh
[DEST]`` unpacks and builds both into DEST (default /tmp/peers) in about a
minute.  The template is read from the CRF++ tree beside ``crf_learn``
(``example/chunking/template``), else from ``../shared/peers/crfpp-src.tar.gz``,
else the same template written here (``--template FILE`` overrides).

Measured (``nice -n 5 python examples/bench_peers.py``, 2 cores, 50
iterations, 2 threads; CRF++ 0.59 and Wapiti 1.5 built by build.sh,
python-crfsuite 0.9.12; a shared machine, load average 3-4 during the run, so
times are above a quiet machine's: CRF++ 172 s, Wapiti 84 s, fgl 47 s there).
CRFsuite's 219 MB and 21 s come with far fewer features (state features only
for the attribute-label pairs seen in training):

    tool        train s   tag s  peak MB      F1  fgl/tool time  fgl/tool MB
    CRF++         248.1     0.3     1040   93.67          0.20x        1.33x
    Wapiti        113.3     2.5      923   93.53          0.44x        1.50x
    CRFsuite       21.1     0.6      219   93.44          2.38x        6.29x
    fgl            50.3     5.2     1380   93.52          1.00x        1.00x

Since then (issue 27: gold counts kept sparse, the per-block expected counts in
a compact layout of the rows a block touches, one prior held once, 16-bit
pattern ids, no rejected trial's gradient held, compile's freed heap handed
back; then the iterate's gradient parked in the L-BFGS history's free row
during line searches and the heap trimmed once the objective is built)
``python examples/bench_peers.py --tools fgl,wapiti`` on a quiet machine:
Wapiti 70.9 s and 923 MB, fgl 35.3 s (0.50x) and 957 MB (1.04x; 1,015 MB
before the last two cuts, on a shared machine), F1 93.52 and the objective
after 50 iterations 8872.41 unchanged (the same bits).  With the optimiser's
two-loop recursion on the training's threads, three runs on the shared
machine on 2026-11-28: fgl 44.6, 47.8 and 59.6 s against Wapiti's 158.2,
158.0 and 139.6 s (0.28x, 0.30x, 0.43x; Wapiti at 1.7-1.9x its quiet-machine
time, fgl near its own), 882-883 MB against 923 MB, F1 93.52, the objective
after 50 iterations 8872.22.  With the direction from the compact
representation (``fgl.learn.compact_form``), the optimiser's other passes
chunked on the threads (``fgl.learn.chunked``), full rows (CRF++'s
``support = all`` rows read as one label vector) and the chain's label
loops four blocks at a time, the full run on 2026-12-04:

    tool        train s   tag s  peak MB      F1  fgl/tool time  fgl/tool MB
    CRF++         194.5     0.5     1040   93.67          0.16x        0.85x
    Wapiti         92.8     3.0      923   93.53          0.33x        0.96x
    CRFsuite       27.8     0.7      219   93.44          1.09x        4.03x
    fgl            30.3     3.3      884   93.52          1.00x        1.00x
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable

from measure import print_memory

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DEFAULT_DATA = SHARED / "data" / "conll2000"
DEFAULT_PEERS = Path("/tmp/peers")
QUICK_SENTENCES, QUICK_ITER = 500, 5
SIGMA = 1.0
TOOLS = ("CRF++", "Wapiti", "CRFsuite", "fgl")

# CRF++'s example/chunking/template, used when the CRF++ sources are absent.
CHUNKING_TEMPLATE = """\
# Unigram
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]

U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]

# Bigram
B
"""

HOW_TO_GET = {
    "CRF++": "build CRF++ 0.59 (cd crfpp && touch winmain.h && ./configure && make), then put "
             "crf_learn/crf_test on PATH or pass --crfpp-learn/--crfpp-test "
             "(here: ../shared/peers/build.sh builds it into /tmp/peers)",
    "Wapiti": "build Wapiti 1.5 (cd wapiti && make), then put wapiti on PATH or pass --wapiti "
              "(here: ../shared/peers/build.sh builds it into /tmp/peers)",
    "CRFsuite": "pip install python-crfsuite (or pip install -e '.[bench]')",
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data and template

def read_sentences(path: Path, limit: int | None = None) -> list[list[str]]:
    """A CoNLL file as sentences of raw token lines."""
    sents, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                cur.append(line)
            elif cur:
                sents.append(cur)
                cur = []
                if limit is not None and len(sents) >= limit:
                    return sents
    if cur:
        sents.append(cur)
    return sents[:limit] if limit is not None else sents


def write_sentences(sents: list[list[str]], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for s in sents:
            f.write("\n".join(s) + "\n\n")


def find_template(explicit: str | None, crf_learn: str | None) -> tuple[str, str]:
    """(template text, where it came from)."""
    if explicit:
        return Path(explicit).read_text(encoding="utf-8"), explicit
    candidates = []
    if crf_learn:
        base = Path(crf_learn).resolve().parent
        candidates += [base / "example" / "chunking" / "template",
                       base.parent / "example" / "chunking" / "template"]
    candidates.append(DEFAULT_PEERS / "crfpp" / "example" / "chunking" / "template")
    for c in candidates:
        if c.is_file():
            return c.read_text(encoding="utf-8"), str(c)
    archive = SHARED / "peers" / "crfpp-src.tar.gz"
    if archive.is_file():
        with tarfile.open(archive) as tar:
            for m in tar.getmembers():
                if m.isfile() and m.name.endswith("example/chunking/template"):
                    text = tar.extractfile(m).read().decode("utf-8")
                    return text, f"{archive}:{m.name}"
    return CHUNKING_TEMPLATE, "the copy in this script"


def parse_template(text: str) -> list[tuple[str, list[tuple[int, int]] | None, list[str]]]:
    """Unigram lines of a CRF++ template as (id, macros, literal pieces);
    the B line is the label bigram every CRFsuite model has anyway."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or not line.startswith("U"):
            continue
        pieces = re.split(r"%x\[\s*(-?\d+)\s*,\s*(\d+)\s*\]", line)
        lits = pieces[0::3]
        macros = [(int(r), int(c)) for r, c in zip(pieces[1::3], pieces[2::3])]
        out.append((line, macros, lits))
    return out


def expand(template, rows: list[list[str]]) -> list[list[str]]:
    """CRF++'s expansion of the unigram templates at each token: %x[r,c] is
    column c of token t+r, _B-k before the sentence and _B+k after it."""
    T = len(rows)
    feats = []
    for t in range(T):
        a = []
        for _line, macros, lits in template:
            s = lits[0]
            for (r, c), lit in zip(macros, lits[1:]):
                i = t + r
                if i < 0:
                    s += f"_B{i}"
                elif i >= T:
                    s += f"_B+{i - T + 1}"
                else:
                    s += rows[i][c]
                s += lit
            a.append(s)
        feats.append(a)
    return feats


# ---------------------------------------------------------------- CRFsuite worker

def crfsuite_worker(argv: list[str]) -> None:
    """--worker crfsuite-train TEMPLATE TRAIN MODEL ITER | crfsuite-tag TEMPLATE MODEL TEST OUT"""
    import pycrfsuite

    mode, template_path = argv[0], argv[1]
    template = parse_template(Path(template_path).read_text(encoding="utf-8"))
    if mode == "crfsuite-train":
        train, model, iters = argv[2], argv[3], int(argv[4])
        tr = pycrfsuite.Trainer("lbfgs", verbose=False)
        tr.set_params({"c1": 0.0, "c2": 1.0 / (2 * SIGMA ** 2), "max_iterations": iters,
                       "feature.possible_transitions": 1})
        for s in read_sentences(Path(train)):
            rows = [ln.split() for ln in s]
            tr.append(pycrfsuite.ItemSequence(expand(template, rows)), [r[-1] for r in rows])
        tr.train(model)
    else:
        model, test, out = argv[2], argv[3], argv[4]
        tg = pycrfsuite.Tagger()
        tg.open(model)
        with open(out, "w", encoding="utf-8") as f:
            for s in read_sentences(Path(test)):
                rows = [ln.split() for ln in s]
                pred = tg.tag(pycrfsuite.ItemSequence(expand(template, rows)))
                f.write("".join(f"{ln} {p}\n" for ln, p in zip(s, pred)) + "\n")


def fgl_memory_worker(argv: list[str]) -> None:
    """--worker fgl-memory SPEC TRAIN ITER JOBS: fgl's training by the API as
    ``fgl train`` runs it, with where its memory goes (one JSON line)."""
    from measure import array_mb, compile_peaks, current_rss_mb, peak_rss_mb, traced_training

    import fgl.learn.learner  # noqa: F401  (the engines and the optimiser)
    from fgl.io.conll import iter_conll
    from fgl.lang.parser import read_spec
    from fgl.lang.settings import resolve_train
    from fgl.registry import compile_model

    spec_path, train, iters, jobs = Path(argv[1]), Path(argv[2]), int(argv[3]), int(argv[4])
    res = {"mem_imports_mb": current_rss_mb()}
    spec = read_spec(spec_path)
    (model, data), peaks = compile_peaks(lambda: compile_model(
        spec, lambda: iter_conll(train), spec_path.parent, resolve_train(spec, {"sigma": SIGMA})))
    res.update(peaks)
    prog = model.program
    res["mem_features_mb"] = array_mb(prog, model.structure, model)
    res["mem_data_mb"] = array_mb(data)
    res["mem_compile_rest_mb"] = (current_rss_mb() - res["mem_imports_mb"]
                                  - res["mem_features_mb"] - res["mem_data_mb"])
    _, tlog, mem = traced_training(prog, data, model.feat_sigma, max_iter=iters, jobs=jobs)
    res.update(mem, peak_rss_mb=peak_rss_mb(), n_features=prog.n_features,
               objective=tlog.objective)
    print(json.dumps(res), flush=True)


def fgl_memory(spec: Path, train: Path, iters: int, jobs: int) -> dict | None:
    """The breakdown ``fgl_memory_worker`` measures in its own process (None: it failed)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "fgl-memory", str(spec),
           str(train), str(iters), str(jobs)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        log(f"fgl memory breakdown failed: {proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- running and scoring

def run(cmd: list[str], stdout_path: Path | None = None) -> tuple[float, float]:
    """Run one child; (wall seconds, its peak RSS in MB).  Raises on failure."""
    out = open(stdout_path, "w") if stdout_path else subprocess.DEVNULL
    err = tempfile.TemporaryFile()
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout_path:
            out.close()
    if p.returncode != 0:
        err.seek(0)
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n"
                           + err.read().decode(errors="replace")[-2000:])
    return wall, ru.ru_maxrss / 1024.0


def score(tagged: Path) -> float:
    """Chunk F1 of a tagged file by `fgl eval --tagged`."""
    out = subprocess.run([*fgl_cmd(), "eval", "--tagged", str(tagged)],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"F1:\s*([\d.]+)", out).group(1))


def fgl_cmd() -> list[str]:
    exe = shutil.which("fgl")
    return [exe] if exe else [sys.executable, "-m", "fgl"]


def find_binary(explicit: str | None, name: str, rel: str, peers: Path) -> str | None:
    if explicit:
        return explicit if Path(explicit).is_file() else None
    on_path = shutil.which(name)
    if on_path:
        return on_path
    cand = peers / rel
    return str(cand) if cand.is_file() and os.access(cand, os.X_OK) else None


def run_fgl(tool: Callable, template: Path, train: Path, test: Path, d: Path, iters: int,
            jobs: int) -> None:
    """fgl's row: the template converted to a spec, trained and tagged by the CLI."""
    spec = d / "chunk.fgl"
    subprocess.run([*fgl_cmd(), "convert", "crfpp", str(template), "--columns",
                    "word,pos,chunk", "-o", str(spec)], check=True, capture_output=True)
    tool("fgl", [*fgl_cmd(), "train", str(spec), "--train", str(train), "-o",
                 str(d / "fgl.fglm"), "--sigma", str(SIGMA), "--max-iter", str(iters),
                 "--jobs", str(jobs), "-q"],
         [*fgl_cmd(), "tag", str(d / "fgl.fglm"), str(test), "-o", str(d / "fgl.out"),
          "--jobs", str(jobs)], d / "fgl.out", False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="directory with CoNLL-2000 train.txt and test.txt")
    ap.add_argument("--max-iter", type=int, default=None, help="L-BFGS iterations (default 50)")
    ap.add_argument("--jobs", type=int, default=2, help="threads per tool (default 2)")
    ap.add_argument("--quick", action="store_true",
                    help=f"first {QUICK_SENTENCES} training and test sentences, "
                         f"{QUICK_ITER} iterations")
    ap.add_argument("--crfpp-learn", help="CRF++'s crf_learn binary")
    ap.add_argument("--crfpp-test", help="CRF++'s crf_test binary")
    ap.add_argument("--wapiti", help="Wapiti's wapiti binary")
    ap.add_argument("--peers", type=Path, default=DEFAULT_PEERS,
                    help="where build.sh put the peers (default /tmp/peers)")
    ap.add_argument("--template", help="a CRF++ template (default: CRF++'s chunking template)")
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help=f"comma-separated tools to run (default {','.join(TOOLS)})")
    ap.add_argument("--no-breakdown", dest="breakdown", action="store_false",
                    help="skip fgl's memory breakdown (a second, traced fgl training run)")
    ap.add_argument("--worker", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        (fgl_memory_worker if args.worker[0] == "fgl-memory" else crfsuite_worker)(args.worker)
        return

    iters = args.max_iter or (QUICK_ITER if args.quick else 50)
    wanted = {name.strip().lower() for name in args.tools.split(",")}
    unknown = wanted - {name.lower() for name in TOOLS}
    if unknown:
        ap.error(f"--tools: unknown {', '.join(sorted(unknown))} (known: {', '.join(TOOLS)})")
    train_file, test_file = args.data / "train.txt", args.data / "test.txt"
    if not (train_file.is_file() and test_file.is_file()):
        print(f"skipped: CoNLL-2000 (train.txt, test.txt) is absent from {args.data}")
        return

    crf_learn = find_binary(args.crfpp_learn, "crf_learn", "crfpp/crf_learn", args.peers)
    crf_test = find_binary(args.crfpp_test, "crf_test", "crfpp/crf_test", args.peers)
    wapiti = find_binary(args.wapiti, "wapiti", "wapiti/wapiti", args.peers)
    try:
        import pycrfsuite  # noqa: F401
        have_crfsuite = True
    except ImportError:
        have_crfsuite = False

    notes: list[str] = []
    breakdown: dict | None = None
    rows: list[tuple[str, float, float, float, float]] = []   # tool, train s, tag s, MB, F1
    with tempfile.TemporaryDirectory(prefix="bench_peers_") as tmp:
        d = Path(tmp)
        text, source = find_template(args.template, crf_learn)
        template = d / "template"
        template.write_text(text, encoding="utf-8")
        if args.quick:
            train, test = d / "train.txt", d / "test.txt"
            write_sentences(read_sentences(train_file, QUICK_SENTENCES), train)
            write_sentences(read_sentences(test_file, QUICK_SENTENCES), test)
        else:
            train, test = train_file, test_file
        n_train = len(read_sentences(train))
        print(f"CoNLL-2000: {n_train} training sentences ({train}), test {test}; "
              f"template: {source}; L2 sigma = {SIGMA:g}; {iters} iterations; "
              f"{args.jobs} threads", flush=True)

        def tool(name: str, train_cmd: list[str], tag_cmd: list[str], tagged: Path,
                 tag_stdout: bool) -> None:
            log(f"{name}: training ...")
            try:
                t_train, m_train = run(train_cmd)
                log(f"{name}: tagging ...")
                t_tag, m_tag = run(tag_cmd, tagged if tag_stdout else None)
                rows.append((name, t_train, t_tag, max(m_train, m_tag), score(tagged)))
                log(f"{name}: {t_train:.1f} s, {max(m_train, m_tag):.0f} MB, F1 {rows[-1][4]:.2f}")
            except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
                notes.append(f"{name} failed: {e}")

        if "crf++" in wanted and crf_learn and crf_test:
            tool("CRF++", [crf_learn, "-p", str(args.jobs), "-m", str(iters), "-c",
                           str(SIGMA ** 2), str(template), str(train), str(d / "crfpp.model")],
                 [crf_test, "-m", str(d / "crfpp.model"), str(test)], d / "crfpp.out", True)
        elif "crf++" in wanted:
            notes.append(f"CRF++ skipped (crf_learn/crf_test not found): {HOW_TO_GET['CRF++']}")
        if "wapiti" in wanted and wapiti:
            tool("Wapiti", [wapiti, "train", "-p", str(template), "-t", str(args.jobs),
                            "-i", str(iters), "-1", "0", "-2", str(1 / SIGMA ** 2),
                            str(train), str(d / "wapiti.model")],
                 [wapiti, "label", "-c", "-m", str(d / "wapiti.model"), str(test),
                  str(d / "wapiti.out")], d / "wapiti.out", False)
        elif "wapiti" in wanted:
            notes.append(f"Wapiti skipped (wapiti not found): {HOW_TO_GET['Wapiti']}")
        if "crfsuite" in wanted and have_crfsuite:
            me = [sys.executable, str(Path(__file__).resolve()), "--worker"]
            tool("CRFsuite", [*me, "crfsuite-train", str(template), str(train),
                              str(d / "crfsuite.model"), str(iters)],
                 [*me, "crfsuite-tag", str(template), str(d / "crfsuite.model"), str(test),
                  str(d / "crfsuite.out")], d / "crfsuite.out", False)
        elif "crfsuite" in wanted:
            notes.append(f"CRFsuite skipped (python-crfsuite not installed): "
                         f"{HOW_TO_GET['CRFsuite']}")
        if "fgl" in wanted:
            run_fgl(tool, template, train, test, d, iters, args.jobs)
            if args.breakdown:
                log("fgl: memory breakdown (the same training, traced) ...")
                breakdown = fgl_memory(d / "chunk.fgl", train, iters, args.jobs)
        skipped = [name for name in TOOLS if name.lower() not in wanted]
        if skipped:
            notes.append(f"not run (--tools): {', '.join(skipped)}")

    fgl_row = next((r for r in rows if r[0] == "fgl"), None)
    print()
    print(f"{'tool':<10}{'train s':>9}{'tag s':>8}{'peak MB':>9}{'F1':>8}"
          f"{'fgl/tool time':>15}{'fgl/tool MB':>13}")
    for name, t_train, t_tag, mb, f1 in rows:
        rt = f"{fgl_row[1] / t_train:.2f}x" if fgl_row else "-"
        rm = f"{fgl_row[3] / mb:.2f}x" if fgl_row else "-"
        print(f"{name:<10}{t_train:>9.1f}{t_tag:>8.1f}{mb:>9.0f}{f1:>8.2f}{rt:>15}{rm:>13}")
    for n in notes:
        print(f"note: {n}")
    if breakdown is not None:
        print_memory([("fgl", breakdown)])
        print(f"({breakdown['n_features']:,} features: one float64 vector of them is "
              f"{8 * breakdown['n_features'] / 2**20:.1f} MB; objective after {iters} "
              f"iterations {breakdown['objective']:.2f})")


if __name__ == "__main__":
    main()
