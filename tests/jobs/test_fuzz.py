"""The fuzzer (issue 11, item 7): hypothesis-driven mutations of every stdlib
spec, of data files (CoNLL columns and JSON-lines graphs) and of model-file
bytes, each run through checking, training, tagging and the CLI.

Checked over a bounded, derandomized run: every input ends in success or in
one of fgl's own errors (``FglError``: a located, teaching message), never
in another exception; none runs past the per-input time bound; all of it
stays within a memory bound (``fuzz_support``).  Each target prints how many
inputs it tried.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import warnings
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from support.fuzz_mutations import SPECS, mutate_columns, mutate_graphs, mutate_model, mutate_spec
from support.fuzz_support import MEMORY_HEADROOM, Hang, Tally, data_text, time_bound

from fgl.api import CRF
from fgl.cli import main
from fgl.errors import FglError
from fgl.io.conll import ShortLineWarning
from fgl.lang.parser import read_spec
from fgl.learn.trainers import setting_errors
from fgl.modelfile.model_files import load_model

FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=list(HealthCheck))

NUMERIC = """columns word, x:number, v:vector, label
output label
obs w = word[t-1..t+1]
template state: y[t] ~ bias, w, value(x[t]), value(v[t]), value(x[t-1])
template transition: y[t-1..t]
"""
# a graph model conjoining bags of words: how many items a node gives depends on its text
BAGS = SPECS["relational.fgl"].replace("tokens(lower(words[a]))",
                                       "tokens(lower(words[a])) & tokens(words[a])")
GAPPED = """columns word, label
output label
template state: y[t] ~ word[t], bias
template gap: (y[t-2], y[t]) ~ bias
"""
# trained before any input is timed, so that every engine and learner is compiled
WARM = {**SPECS, "numeric.fgl": NUMERIC, "bags.fgl": BAGS, "gapped.fgl": GAPPED,
        "exact.fgl": GAPPED + "infer exact\n", "loopy.fgl": GAPPED + "infer loopy\n",
        "pseudo.fgl": GAPPED + "train { objective = pseudo_likelihood }\n",
        "piecewise.fgl": GAPPED + "train { objective = piecewise }\n"}
# the specs whose data and models are fuzzed: one per engine and input kind
BASES = ["hmm_like.fgl", "crfsuite_chunking.fgl", "semi_crf.fgl", "skip_chain.fgl",
         "relational.fgl", "bags.fgl", "numeric.fgl"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, tuple[Path, str, Path]]:
    """Each warm-up spec's file, its training data and a model trained on it."""
    out = {}
    folder = tmp_path_factory.mktemp("fuzz-bases")
    for name, text in WARM.items():
        spec_path = folder / name
        spec_path.write_text(text, encoding="utf-8")
        spec = read_spec(spec_path)
        data = data_text(spec)
        data_path = folder / f"{name}.data"
        data_path.write_text(data, encoding="utf-8")
        crf = CRF(spec, max_iter=3, jobs=1).fit_file(data_path)
        crf.tag_file(data_path)
        model = folder / f"{name}.fglm"
        crf.save(model)
        out[name] = (spec_path, data, model)
    return out


def cli(*argv: object) -> int:
    """``fgl argv...`` in-process, writing to streams that encode as the real
    ones do: its exit status, after checking that it wrote no traceback (an
    fgl error is one ``fgl: ...`` line)."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
        out.flush()
    err.flush()
    text = err.buffer.getvalue().decode("utf-8")
    assert "Traceback" not in text, text
    assert code in (0, 1, 2), (code, text)
    return code


@pytest.fixture
def tally(request, capsys) -> Iterator[Tally]:
    """The test's tally, printed past pytest's capture when it ends; a hang
    in compiled code dumps its tracebacks there too (a campaign runs in a
    forked process, see ``Tally.campaign``)."""
    with capsys.disabled():
        terminal = os.dup(2)
    counts = Tally(request.node.name.removeprefix("test_mutated_").replace("_", " "), terminal)
    try:
        yield counts
    finally:
        os.close(terminal)
    with capsys.disabled():
        print(f"\n{counts.summary()}")


# ---------------------------------------------------------------- 1. specs

def test_mutated_specs(tally, trained, tmp_path):
    """Mutants of every stdlib spec: `fgl check` and the parser agree; a mutant
    that checks is explained (`fgl explain --train` too), trains on data
    made for it, tags, and round-trips through a model file."""
    @settings(FUZZ, max_examples=200)
    @given(name=st.sampled_from(sorted(SPECS)), data=st.data())
    def run(name: str, data: st.DataObject) -> None:
        text = mutate_spec(SPECS[name], data)
        note(f"mutant of {name}:\n{text}")
        tally.new_input()
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        with tally.bound("fgl check"):
            code = cli("check", path)
        spec = tally.attempt("read_spec", lambda: read_spec(path))
        refused = bool(spec) and bool(setting_errors(spec[0]))  # (a setting no trainer reads)
        assert (code == 0) == (bool(spec) and not refused), \
            "`fgl check` and read_spec plus the trainer's setting check disagree"
        if refused:
            with pytest.raises(FglError, match="setting|reads|trainer"):
                CRF(spec[0], max_iter=2, jobs=1)
        if not spec or refused:
            return
        data_path = tmp_path / "train.data"
        data_path.write_text(data_text(spec[0]), encoding="utf-8")
        made = tally.attempt("CRF", lambda: CRF(spec[0], max_iter=2, jobs=1))
        if not made:
            return
        crf = made[0]
        tally.attempt("explain", crf.explain)
        with tally.bound("fgl explain --train"):
            code = cli("explain", path, "--train", data_path)
        tally.counts[f"fgl explain --train: exit {code}"] += 1
        if not tally.attempt("fit", lambda: crf.fit_file(data_path)):
            return
        tally.attempt("tag", lambda: crf.tag_file(data_path))
        model = tmp_path / "m.fglm"
        if tally.attempt("save", lambda: crf.save(model)):
            tally.attempt("load+tag", lambda: CRF.load(model, jobs=1).tag_file(data_path))

    tally.campaign(run, f"{tmp_path} (the .fgl file written last)")


# ---------------------------------------------------------------- 2. data

def test_mutated_data(tally, trained, tmp_path):
    """Mutated column files and JSON-lines graphs: read, trained on (and the
    model saved), tagged by a trained model, and run through `fgl tag`,
    `fgl eval` and `fgl draw`, under every short-lines policy and two
    encodings."""
    @settings(FUZZ, max_examples=120)
    @given(name=st.sampled_from(BASES), short_lines=st.sampled_from(["error", "pad", "skip"]),
           encoding=st.sampled_from(["utf-8", "utf-8", "latin-1"]), data=st.data())
    def run(name: str, short_lines: str, encoding: str, data: st.DataObject) -> None:
        spec_path, text, model = trained[name]
        mutate = mutate_graphs if text.startswith("{") else mutate_columns
        raw = mutate(text, data)
        note(f"mutant of {name}'s data ({encoding}, short_lines={short_lines}): {raw!r}")
        tally.new_input()
        path = tmp_path / "d.data"
        path.write_bytes(raw)
        options = {"encoding": encoding, "short_lines": short_lines}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ShortLineWarning)
            tally.attempt("read", lambda: CRF(spec_path).read(path, **options))
            crf = CRF(spec_path, max_iter=1, jobs=1)
            if tally.attempt("fit", lambda: crf.fit_file(path, **options)):
                tally.attempt("save", lambda: crf.save(tmp_path / "m.fglm"))
            tally.attempt("tag", lambda: CRF.load(model, jobs=1).tag_file(path, **options))
        for command, source, *extra in (("tag", model, "--jobs", 1), ("eval", model, "--jobs", 1),
                                        ("draw", spec_path)):
            with tally.bound(f"fgl {command}"):
                code = cli(command, source, path, "--encoding", encoding, "--short-lines",
                           short_lines, *extra)
            tally.counts[f"fgl {command}: exit {code}"] += 1

    tally.campaign(run, str(tmp_path / "d.data"))


# ---------------------------------------------------------------- 3. model files

def test_mutated_model_files(tally, trained, tmp_path):
    """Damaged and edited model files: loaded, then (if they load) tagging
    with them, in Python and with `fgl tag`."""
    models = {name: trained[name] for name in ("hmm_like.fgl", "semi_crf.fgl",
                                               "skip_chain.fgl", "relational.fgl")}
    raws = {name: model.read_bytes() for name, (_, _, model) in models.items()}

    @settings(FUZZ, max_examples=200)
    @given(name=st.sampled_from(sorted(models)), data=st.data())
    def run(name: str, data: st.DataObject) -> None:
        model = models[name][2]
        raw = mutate_model(raws[name], data)
        tally.new_input()
        path = tmp_path / "m.fglm"
        path.write_bytes(raw)
        data_path = model.with_suffix(".data")
        if tally.attempt("load_model", lambda: load_model(path)):
            note(f"a mutant of {name}'s model file loads")
            tally.attempt("load+tag", lambda: CRF.load(path, jobs=1).tag_file(data_path))
        with tally.bound("fgl tag"):
            code = cli("tag", path, data_path, "-o", tmp_path / "tagged", "--jobs", 1)
        tally.counts[f"fgl tag: exit {code}"] += 1

    tally.campaign(run, str(tmp_path / "m.fglm"))


# ---------------------------------------------------------------- 4. hostile names and numbers

TEMPORARY = re.compile(r"\..*\.[0-9]+\.\w{8}\.tmp")   # fgl.io.safe_files' temporary names
NAME_PARTS = ["keep.txt", "data.txt", "new", "/", ".", "..", "//", "a" * 120, "é" * 60, "-",
              " ", ".tmp"]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_mutated_output_names(tally, trained, tmp_path):
    """`fgl tag -o NAME` for names made of trailing slashes, dots, long and
    two-byte parts, the data file's own name: refused with a message or
    written, never a traceback; a refusal changes nothing, a write changes
    the named file only, and no temporary file stays (issue 47)."""
    _, text, model = trained["hmm_like.fgl"]
    root = tmp_path / "root"        # (two levels above the folder: what `../..` reaches)
    folder = root / "in" / "out"
    data = folder / "data.txt"

    @settings(FUZZ, max_examples=60)
    @given(parts=st.lists(st.sampled_from(NAME_PARTS), min_size=1, max_size=4))
    def run(parts: list[str]) -> None:
        name = "".join(parts)
        note(f"-o {folder}/{name}")
        tally.new_input()
        shutil.rmtree(root, ignore_errors=True)
        folder.mkdir(parents=True)
        data.write_text(text, encoding="utf-8")
        (folder / "keep.txt").write_bytes(b"keep\n")
        before = _files(root)
        with tally.bound("fgl tag -o"):
            code = cli("tag", model, data, "-o", f"{folder}/{name}", "--jobs", 1)
        tally.counts[f"fgl tag -o: exit {code}"] += 1
        after = _files(root)
        assert not [n for n in after if TEMPORARY.fullmatch(Path(n).name)], after.keys()
        if code != 0:
            assert after == before
        else:
            changed = {n for n in after if before.get(n) != after[n]}
            assert len(changed) == 1 and str(data.relative_to(root)) not in changed, changed

    tally.campaign(run, str(folder))


def _hostile_input(kind: str, n: int, name: str, folder: Path) -> list:
    """An input of ``kind`` with ``n`` in it, and the fgl command reading it."""
    if kind == "self-conjunctions":
        chain = "".join(f"obs o{i} = o{i - 1} & o{i - 1}\n" for i in range(1, n + 1))
        spec = f"columns word, label\noutput label\nobs o0 = word[t-1..t+1]\n{chain}" \
               f"template s: y[t] ~ o{n}\n"
        (folder / "s.fgl").write_text(spec, encoding="utf-8")
        return ["check", folder / "s.fgl"]
    if kind == "wide conjunction":
        spec = "columns word, label\noutput label\ntemplate s: y[t] ~ " \
               + " & ".join(["word[t-1..t+1]"] * n * 10) + "\n"
        (folder / "s.fgl").write_text(spec, encoding="utf-8")
        return ["check", folder / "s.fgl"]
    if kind == "lexicon":
        spec = f'columns word, label\noutput label\nobs l = lexicon(word[t], "{name}")\n' \
               "template s: y[t] ~ l\n"
        (folder / "s.fgl").write_text(spec, encoding="utf-8")
        return ["check", folder / "s.fgl"]
    if kind == "crfpp macro":
        (folder / "template").write_text(f"U00:%x[{'-' * (n % 2)}{'9' * n},{'1' * n}]\n",
                                         encoding="utf-8")
        return ["convert", "crfpp", folder / "template"]
    (folder / "g.jsonl").write_text('{"nodes": [{"id": %s, "words": "x", "label": "A"}]}\n'
                                    % ("7" * n), encoding="utf-8")
    return ["explain", "stdlib:relational", "--train", folder / "g.jsonl"]


LEXICON_PARTS = ["..", "/", "lex.txt", "sub", ".", "/dev/zero", "/etc/hostname", "link.txt",
                 "\x00", "n" * 300]


def test_hostile_numbers_and_lexicon_names(tally, tmp_path):
    """Item counts, CRF++ macros and JSON integers of any size, and lexicon
    names made of .., /, links and devices: a message or success, never a
    traceback; a lexicon outside the spec's folder is always refused (issue
    47)."""
    folder = tmp_path / "specs"
    (folder / "sub").mkdir(parents=True)
    (folder / "lex.txt").write_text("a\n", encoding="utf-8")
    (tmp_path / "lex.txt").write_text("secret\n", encoding="utf-8")
    (folder / "link.txt").symlink_to(tmp_path / "lex.txt")
    kinds = ["self-conjunctions", "wide conjunction", "lexicon", "crfpp macro", "graph"]

    @settings(FUZZ, max_examples=60)
    @given(kind=st.sampled_from(kinds), n=st.sampled_from([1, 3, 9, 20, 45, 230, 4301, 9100]),
           parts=st.lists(st.sampled_from(LEXICON_PARTS), min_size=1, max_size=4))
    def run(kind: str, n: int, parts: list[str]) -> None:
        name = "/".join(parts).replace("//", "/")
        argv = _hostile_input(kind, min(n, 60) if "conjunction" in kind else n, name, folder)
        note(f"{kind} {n} {name!r}: fgl {' '.join(map(str, argv))}")
        tally.new_input()
        with tally.bound(f"fgl {argv[0]}"):
            code = cli(*argv)
        tally.counts[f"{kind}: exit {code}"] += 1
        if kind == "lexicon" and "\x00" in name:
            assert code != 0
        elif kind == "lexicon":
            real = os.path.realpath(folder / name)
            inside = os.path.commonpath([real, str(folder)]) == str(folder)
            assert inside or code != 0, real

    tally.campaign(run, str(folder))


def _costly_input(kind: str, n: int, folder: Path) -> tuple[list, bool]:
    """An input of ``kind`` whose cost grows with ``n``, the fgl command
    reading it, and whether it passes its cap (``test_total_costs``'s)."""
    head = "columns word, label\noutput label\n"
    if kind == "regexes":   # n patterns of one \w (11,553 characters rewritten) each
        obs = "".join(f'obs r{i} = regex(word[t], "^{i}\\w")\n' for i in range(n))
        (folder / "s.fgl").write_text(head + obs + "template s: y[t] ~ r0\n", encoding="utf-8")
        return ["check", folder / "s.fgl"], n * 11_560 > 100_000
    if kind == "spec lines":
        obs = "".join(f"obs o{i} = word[t]\n" for i in range(10 * n))
        (folder / "s.fgl").write_text(head + obs + "template s: y[t] ~ o0\n", encoding="utf-8")
        return ["check", folder / "s.fgl"], 10 * n + 3 > 200
    if kind == "long line":
        (folder / "d.txt").write_bytes(b"a A\nb B\n\n" + b"w" * (300 * n) + b" A")
        return ["explain", "stdlib:hmm_like", "--train", folder / "d.txt"], 300 * n > 4096
    parts = " & ".join(["a"] * min(n, 9))   # (3^k items at each token)
    (folder / "s.fgl").write_text(head + f"obs a = word[t-1..t+1]\nobs b = {parts}\n"
                                  "template s: y[t] ~ b\n", encoding="utf-8")
    (folder / "d.txt").write_text("".join(f"w{i % 7} {'AB'[i % 2]}\n" for i in range(40)),
                                  encoding="utf-8")
    return ["train", folder / "s.fgl", "--train", folder / "d.txt", "--max-memory", "64M",
            "--max-iter", "1", "-o", folder / "m.fglm", "-q"], n >= 8   # (6,561 items: 118 MB)


def test_total_costs(tally, tmp_path, monkeypatch):
    """Many large regular expressions, long specs, long lines and widely
    conjoined observations under small caps (issue 47, item 8; item 4 for
    the items): refused with a message when past the cap, accepted below
    it, never a traceback nor past the time and memory bounds."""
    for var, cap in (("FGL_MAX_REGEX", "100K"), ("FGL_MAX_SPEC_LINES", "200"),
                     ("FGL_MAX_LINE", "4K")):
        monkeypatch.setenv(var, cap)
    folder = tmp_path / "costly"
    folder.mkdir()

    @settings(FUZZ, max_examples=30)
    @given(kind=st.sampled_from(["regexes", "spec lines", "long line", "conjoined items"]),
           n=st.sampled_from([1, 3, 8, 9, 13, 20, 45]))
    def run(kind: str, n: int) -> None:
        argv, over = _costly_input(kind, n, folder)
        note(f"{kind} {n}: fgl {' '.join(map(str, argv))}")
        tally.new_input()
        with tally.bound(f"fgl {argv[0]}"):
            code = cli(*argv)
        tally.counts[f"{kind}: exit {code}"] += 1
        assert (code != 0) == over, (kind, n, code)

    tally.campaign(run, str(folder))


# ---------------------------------------------------------------- the bounds themselves

def test_the_time_bound_fails_a_hang_even_one_swallowed():
    with pytest.raises(Hang, match="still running after 0.2 s"):
        with time_bound("spin", 2, seconds=0.2):
            while True:
                pass
    with pytest.raises(Hang, match="ran past the 0.2 s bound"):
        with time_bound("swallow", 2, seconds=0.2):
            with contextlib.suppress(Exception):
                while True:
                    pass


def test_a_campaign_that_crashes_or_runs_out_of_memory_fails_its_test():
    tally = Tally("crash", 2)
    with pytest.raises(pytest.fail.Exception, match="killed by SIGKILL; the input it was"):
        tally.campaign(lambda: os.kill(os.getpid(), signal.SIGKILL), "here")
    with pytest.raises(pytest.fail.Exception, match="MemoryError"):
        tally.campaign(lambda: bytearray(2 * MEMORY_HEADROOM), "here")
