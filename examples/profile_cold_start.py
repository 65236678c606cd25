"""Where a cold first run's time goes: numba compiling fgl's kernels.

A profile, not a timed test: prints tables, asserts nothing.  The parent
runs the work in fresh processes that share one new, empty
``NUMBA_CACHE_DIR`` (so nothing is cached, as on a new machine):

1. ``fit``: ``fgl.CRFEstimator`` (sklearn-crfsuite's input, a dict of
   features per token) fitted on --sentences CoNLL-2000 training sentences,
   then ``predict`` on as many test sentences in the same process -- with
   the later kernels compiled by a second process beside it
   (``fgl.engines.background_compile``, ``FGL_BACKGROUND_COMPILE=1``: even
   on a busy machine), and, in a cache of its own, by the one process
   alone (``FGL_BACKGROUND_COMPILE=0``), first; the two
   runs' weights and predictions are compared bit for bit;
2. ``tag``: the saved model loaded and ``predict`` again, in a process of
   its own with a new cache;
3. ``warm``: step 1 again, every kernel now loaded from the cache.

Each child times its phases (import of fgl, fit, predict) in CPU seconds
(user + system of the process, what a loaded machine does not inflate; the
second process's CPU is in the whole only) and wall seconds, and records
every numba compilation with numba's event API (``numba.core.event``, kind
``numba:compile``): per dispatcher, how many
type specialisations it compiled, their argument types where there are
several (what differs between them: int32 against int64, C against A
layout, a read-only array...), and the thread CPU seconds of its
compilations, exclusive of the functions it calls that compile on their own
(inclusive time is shown too).  The time inside numba's compiler lock
outside any compilation is loading and saving the cache.  The cold fit's
compile time is also split by phase (``NumbaPhases``): numba's typing,
inlining and lowering, and LLVM's passes and machine code -- where each
library that calls a function links its code and optimises and emits it
again, so a helper reached through two levels of calls is compiled three
times.

Data: CoNLL-2000 (../shared/data/conll2000, ``--data``) when present, else
generated chunking-like sentences (``fgl`` is then still profiled, on other
text).

    python examples/profile_cold_start.py                   # ~1.5-2.5 minutes of CPU
    python examples/profile_cold_start.py --sentences 100 --top 40
    python examples/profile_cold_start.py --usual-cache --sentences 20   # the script itself
    python -X importtime -c "import fgl" 2> import.txt      # fgl's import, module by module
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_DATA = REPO.parent / "shared" / "data" / "conll2000"


def read_conll(path: Path, limit: int) -> list[list[list[str]]]:
    """The first ``limit`` sentences of a CoNLL file, as rows of fields."""
    sents, rows = [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.strip():
            rows.append(line.split())
        elif rows:
            sents.append(rows)
            rows = []
            if len(sents) == limit:
                break
    return sents


def generated(n: int, seed: int) -> list[list[list[str]]]:
    """``n`` chunking-like sentences (word, POS, tag) when CoNLL-2000 is absent."""
    rng = random.Random(seed)
    kinds = [("DT", "B-NP"), ("NN", "I-NP"), ("VBZ", "B-VP"), ("IN", "B-PP"), (".", "O")]
    words = {pos: [f"{pos.lower()}{i}" for i in range(40)] for pos, _ in kinds}
    return [[[rng.choice(words[pos]), pos, tag] for pos, tag in
             (rng.choice(kinds) for _ in range(rng.randint(5, 30)))] for _ in range(n)]


def token_features(sent: list[list[str]], i: int) -> dict:
    """sklearn-crfsuite's tutorial features of token ``i``."""
    word, pos = sent[i][0], sent[i][1]
    f = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
         "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
         "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
         "postag": pos, "postag[:2]": pos[:2]}
    for off, key in ((-1, "-1"), (1, "+1")):
        j = i + off
        if 0 <= j < len(sent):
            f.update({f"{key}:word.lower()": sent[j][0].lower(),
                      f"{key}:word.istitle()": sent[j][0].istitle(),
                      f"{key}:postag": sent[j][1]})
        else:
            f["BOS" if off < 0 else "EOS"] = True
    return f


def corpus(a) -> tuple[list, list, list, str]:
    """(X train, y train, X test, where they came from)."""
    if (a.data / "train.txt").is_file():
        train = read_conll(a.data / "train.txt", a.sentences)
        test = read_conll(a.data / "test.txt", a.sentences)
        source = f"CoNLL-2000 ({a.data}), first {a.sentences} train / test sentences"
    else:
        train, test = generated(a.sentences, 0), generated(a.sentences, 1)
        source = f"{a.sentences} generated sentences (no CoNLL-2000 at {a.data})"
    X = [[token_features(s, i) for i in range(len(s))] for s in train]
    return X, [[r[-1] for r in s] for s in train], \
        [[token_features(s, i) for i in range(len(s))] for s in test], source


class CompileRecorder:
    """Per dispatcher: its compiled signatures and the thread CPU seconds of
    its compilations, inclusive and exclusive of nested ones; and the
    seconds spent inside numba's compiler lock (compiling, or loading and
    saving the cache).  Kernels may first run on worker threads, so each
    thread keeps its own stack of compilations and its own lock depth (a
    thread waiting for the lock uses no CPU)."""

    def __init__(self) -> None:
        from numba.core import event

        self.threads: dict[int, dict] = {}
        self.rows: dict[str, dict] = {}
        self.lock_seconds = 0.0
        recorder = self

        class Compiles(event.Listener):
            def on_start(self, ev):
                recorder.start(ev.data)

            def on_end(self, ev):
                recorder.end()

        class Lock(event.Listener):
            def on_start(self, ev):
                recorder.lock(+1)

            def on_end(self, ev):
                recorder.lock(-1)

        event.register("numba:compile", Compiles())
        event.register("numba:compiler_lock", Lock())

    def thread(self) -> dict:
        """This thread's stack of compilations ([key, start, seconds of nested
        compilations]) and lock depth."""
        return self.threads.setdefault(threading.get_ident(),
                                       {"stack": [], "depth": 0, "start": 0.0})

    def start(self, data: dict) -> None:
        fn = data["dispatcher"].py_func
        key = f"{fn.__module__}.{fn.__qualname__}"
        row = self.rows.setdefault(key, {"signatures": [], "inclusive": 0.0, "exclusive": 0.0,
                                         "callers": []})
        row["signatures"].append(", ".join(str(t) for t in data["args"]))
        stack = self.thread()["stack"]
        row["callers"].append(stack[-1][0] if stack else "(Python)")
        stack.append([key, time.thread_time(), 0.0])

    def end(self) -> None:
        stack = self.thread()["stack"]
        key, start, nested = stack.pop()
        seconds = time.thread_time() - start
        self.rows[key]["inclusive"] += seconds
        self.rows[key]["exclusive"] += seconds - nested
        if stack:
            stack[-1][2] += seconds

    def lock(self, step: int) -> None:
        t = self.thread()
        if step > 0 and t["depth"] == 0:
            t["start"] = time.thread_time()
        t["depth"] += step
        if step < 0 and t["depth"] == 0:
            self.lock_seconds += time.thread_time() - t["start"]


class NumbaPhases:
    """Thread CPU seconds of numba's compile phases, each exclusive of the
    others it holds (a nested compilation's typing is not its caller's):
    typing, inlining (``inline="always"``), lowering to LLVM IR, numba's
    other passes, and LLVM's passes on a function's own module, its passes on
    the module with every function it calls linked in, and machine code.
    Found by wrapping methods of numba's internals (``HOOKS``); ``hooked``
    is False, and nothing recorded, when one of them is missing (another
    numba)."""

    HOOKS = (("numba.core.typed_passes", "NopythonTypeInference", "run_pass", "typing"),
             ("numba.core.untyped_passes", "InlineInlinables", "run_pass", "inlining"),
             ("numba.core.typed_passes", "NativeLowering", "run_pass", "lowering"),
             ("numba.core.compiler_machinery", "PassManager", "run", "numba's other passes"),
             ("numba.core.codegen", "CPUCodeLibrary", "_optimize_functions",
              "LLVM: own module"),
             ("numba.core.codegen", "CPUCodeLibrary", "_optimize_final_module",
              "LLVM: with callees linked"),
             ("numba.core.codegen", "CPUCodeLibrary", "_finalize_final_module",
              "LLVM: machine code"))

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.local = threading.local()
        owners = [getattr(importlib.import_module(m), c, None) for m, c, _, _ in self.HOOKS]
        self.hooked = all(o is not None and hasattr(o, h[2]) for o, h in zip(owners, self.HOOKS))
        if self.hooked:
            for owner, (_, _, method, label) in zip(owners, self.HOOKS):
                self.wrap(owner, method, label)

    def wrap(self, owner, method: str, label: str) -> None:
        """Time ``owner.method`` as ``label``, less the phases it holds."""
        original = getattr(owner, method)
        recorder = self

        def timed(*args, **kwargs):
            stack = recorder.local.__dict__.setdefault("stack", [])
            start = time.thread_time()
            stack.append(0.0)
            try:
                return original(*args, **kwargs)
            finally:
                seconds = time.thread_time() - start
                nested = stack.pop()
                recorder.seconds[label] = recorder.seconds.get(label, 0.0) + seconds - nested
                if stack:
                    stack[-1] += seconds

        setattr(owner, method, timed)


class Phases:
    """CPU (user + system) and wall seconds of named phases of this process."""

    def __init__(self) -> None:
        self.times: dict[str, dict] = {}

    def __call__(self, name: str, work):
        cpu0, wall0 = self.cpu(), time.perf_counter()
        result = work()
        self.times[name] = {"cpu": self.cpu() - cpu0, "wall": time.perf_counter() - wall0}
        return result

    @staticmethod
    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime


def import_fgl():
    """fgl and numba, as fgl loads it (``fgl.jit``)."""
    importlib.import_module("fgl.jit")
    return importlib.import_module("fgl")


def import_times(top: int) -> None:
    """``python -X importtime`` of what a ``CRFEstimator`` fit imports:
    the whole, and the modules of the largest own (self) time."""
    code = "import fgl.estimator, fgl.api, fgl.registry"
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=REPO,
                         capture_output=True, text=True).stderr
    rows = []
    for line in out.splitlines():
        if line.startswith("import time:") and "|" in line and "self" not in line:
            own, whole, name = line[len("import time:"):].split("|")
            rows.append((int(own), int(whole), name.strip()))
    total = sum(own for own, _, _ in rows) / 1e6
    print(f"\nimport ({code}, python -X importtime, wall): {total:.2f} s, "
          f"{len(rows)} modules; the largest own times:")
    for own, whole, name in sorted(rows, reverse=True)[:top]:
        print(f"  {own / 1e6:6.3f} s  {name}  (with its imports {whole / 1e6:.3f} s)")


def child(a) -> None:
    """One fresh process's work (``--child fit|tag``); JSON on standard output."""
    phases = Phases()
    fgl = phases("import fgl", import_fgl)
    recorder = CompileRecorder()                 # (importing compiles nothing: kernels are lazy)
    numba_phases = NumbaPhases()
    X, y, X_test, source = corpus(a)
    model = Path(a.model)
    if a.child == "fit":
        est = fgl.CRFEstimator(max_iter=a.max_iter, jobs=a.jobs)
        phases("fit", lambda: est.fit(X, y))
        phases("predict", lambda: est.predict(X_test))
        est.save(model)
    else:
        est = phases("load", lambda: fgl.CRFEstimator.load(model, jobs=a.jobs))
        phases("predict", lambda: est.predict(X_test))
    aside = resource.getrusage(resource.RUSAGE_CHILDREN)   # (the second compiling process)
    labels = est.predict(X_test)
    digest = hashlib.sha256(json.dumps(labels).encode() + est.coef_.tobytes()).hexdigest()
    print(json.dumps({"source": source, "phases": phases.times, "compiles": recorder.rows,
                      "aside_cpu": aside.ru_utime + aside.ru_stime, "digest": digest,
                      "lock_seconds": recorder.lock_seconds, "cpu": Phases.cpu(),
                      "numba_phases": numba_phases.seconds if numba_phases.hooked else None}))


def run_child(a, task: str, env: dict, model: Path) -> dict:
    """Run ``--child task`` in a new process; its JSON, with its CPU and wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0 = time.perf_counter()
    argv = [sys.executable, __file__, "--child", task, "--model", str(model),
            "--sentences", str(a.sentences), "--max-iter", str(a.max_iter),
            "--jobs", str(a.jobs), "--data", str(a.data)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        sys.exit(f"the {task} child failed:\n{out.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process"] = {"cpu": (after.ru_utime - before.ru_utime)
                         + (after.ru_stime - before.ru_stime),
                         "wall": time.perf_counter() - wall0}
    return result


def print_phases(runs: dict[str, dict]) -> None:
    print(f"{'run':<26} {'phase':<12} {'CPU s':>7} {'wall s':>7}")
    for name, r in runs.items():
        for phase, t in [*r["phases"].items(), ("whole", r["process"])]:
            print(f"{name:<26} {phase:<12} {t['cpu']:7.2f} {t['wall']:7.2f}")
        compiled = sum(c["exclusive"] for c in r["compiles"].values())
        print(f"{name:<26} {'compiling':<12} {compiled:7.2f} {'':>7}  "
              f"({len(r['compiles'])} functions, "
              f"{sum(len(c['signatures']) for c in r['compiles'].values())} specialisations)")
        print(f"{name:<26} {'cache i/o':<12} {r['lock_seconds'] - compiled:7.2f} {'':>7}  "
              "(compiler lock outside compilations: loading, saving the cache)")
        print(f"{name:<26} {'the rest':<12} "
              f"{r['process']['cpu'] - r['aside_cpu'] - r['lock_seconds']:7.2f} "
              f"{'':>7}  (Python, numpy and the kernels' own work: the whole less the lock)")
        if r["aside_cpu"]:
            print(f"{name:<26} {'aside':<12} {r['aside_cpu']:7.2f} {'':>7}  (the second "
                  "process compiling later kernels: in the whole, not in the phases)")


def print_numba_phases(title: str, run: dict) -> None:
    """``run``'s compile time by phase (``NumbaPhases``)."""
    phases = run["numba_phases"]
    if not phases:
        why = "not recorded (numba's internals differ)" if phases is None else "nothing compiled"
        print(f"\n{title}: compile time by phase: {why}")
        return
    compiled = sum(c["exclusive"] for c in run["compiles"].values())
    total = sum(phases.values())
    print(f"\n{title}: compile time by phase, thread CPU seconds (the phases: {total:.2f} s; "
          f"compiling: {compiled:.2f} s)")
    for label, seconds in sorted(phases.items(), key=lambda kv: -kv[1]):
        print(f"  {label:<28} {seconds:7.2f}  {100 * seconds / total:4.0f}%")


def short(key: str, width: int) -> str:
    """A function's dotted name cut to ``width`` from the left."""
    return key if len(key) <= width else "…" + key[1 - width:]


def print_compiles(title: str, compiles: dict[str, dict], top: int) -> None:
    rows = sorted(compiles.items(), key=lambda kv: -kv[1]["exclusive"])
    print(f"\n{title}: numba compilations by exclusive thread CPU seconds "
          f"(top {top} of {len(rows)})")
    print(f"{'function':<60} {'sigs':>4} {'excl s':>7} {'incl s':>7}  first compiled for")
    for key, c in rows[:top]:
        print(f"{short(key, 60):<60} {len(c['signatures']):>4} {c['exclusive']:7.2f} "
              f"{c['inclusive']:7.2f}  {short(c['callers'][0], 40)}")
    several = [(k, c) for k, c in rows if len(c["signatures"]) > 1]
    if several:
        print(f"\n{title}: functions compiled for more than one signature")
        for key, c in several:
            print(f"  {key}")
            for sig, caller in zip(c["signatures"], c["callers"]):
                print(f"      ({sig})  for {caller}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=300, help="training (and test) sentences")
    ap.add_argument("--max-iter", type=int, default=100, help="L-BFGS iterations")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CoNLL-2000 folder")
    ap.add_argument("--top", type=int, default=25, help="compiled functions listed")
    ap.add_argument("--usual-cache", action="store_true",
                    help="run in numba's usual cache, not new empty ones (nothing is cold "
                         "then: a check of the script itself)")
    ap.add_argument("--child", choices=("fit", "tag"), help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    with tempfile.TemporaryDirectory(prefix="fgl_cold_") as tmp:
        def cache(name: str) -> dict:
            return dict(os.environ) if a.usual_cache else \
                {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / name)}
        model = Path(tmp) / "model.fglm"
        alone = run_child(a, "fit", {**cache("numba_alone"), "FGL_BACKGROUND_COMPILE": "0"},
                          Path(tmp) / "alone.fglm")
        cold = run_child(a, "fit", {**cache("numba"), "FGL_BACKGROUND_COMPILE": "1"}, model)
        warm = run_child(a, "fit", cache("numba"), model)
        tag = run_child(a, "tag", cache("numba_tag"), model)
    runs = {"cold: fit + predict": cold, "cold, one process: same": alone,
            "cold: load + predict alone": tag, "warm: fit + predict": warm}
    print(f"data: {runs['cold: fit + predict']['source']}; fgl.CRFEstimator on feature dicts, "
          f"max_iter {a.max_iter}, jobs {a.jobs}; a new empty NUMBA_CACHE_DIR per cold run")
    print_phases(runs)
    print("the cold fit's weights and predictions, compiled by one process and by two: "
          + ("the same bit for bit" if cold["digest"] == alone["digest"] else "DIFFERENT"))
    print_numba_phases("cold fit + predict", runs["cold: fit + predict"])
    print_compiles("cold fit + predict", runs["cold: fit + predict"]["compiles"], a.top)
    import_times(8)
    print_compiles("cold load + predict", runs["cold: load + predict alone"]["compiles"],
                   min(a.top, 10))


if __name__ == "__main__":
    main()
