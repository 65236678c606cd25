"""Specs (and the specs inside model files) written to hurt the machine
(issue 25, items 4 and 7): regular expressions run in linear time (RE2,
with Python's syntax and meaning) and what cannot is refused at its place;
observation expressions that grow exponentially through named
observations, or nest a thousand names deep, are refused by ``fgl check``
with the growth shown, never a hang, a MemoryError or a RecursionError."""
from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.model_files import with_header

from fgl.errors import ModelFileError
from fgl.lang.checks import check_spec
from fgl.lang.parser import parse_spec
from fgl.lang.regexes import RegexRefused, compile_regex, translate
from fgl.modelfile.model_files import load_model

FGL = [sys.executable, "-m", "fgl.cli"]


def run(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.perf_counter()
    r = subprocess.run([*FGL, *args], capture_output=True, text=True, timeout=timeout)
    return r, time.perf_counter() - t0


def errors(text: str) -> list[str]:
    return [str(e) for e in check_spec(parse_spec(text, "spec.fgl"))]


def regex_spec(pattern: str) -> str:
    return ("columns word, label\noutput label\n"
            f'obs aa = regex(word[t], "{pattern}")\n'
            "template e: y[t] ~ word[t], aa\ntemplate tr: y[t-1..t]\n")


# ---------------------------------------------------------------- regular expressions

@pytest.mark.parametrize("pattern, answers", [
    (r"^(a+)+$", (False, False, False)), (r"^(a|a)*$", (False, False, False)),
    (r"^(a|aa)+$", (False, False, False)), (r"(.*a){20}", (True, True, True)),
    (r"^(\w+\s?)*$", (True, False, True)), (r"(a*)*b", (True, False, True))])
def test_catastrophic_patterns_match_in_linear_time(pattern, answers):
    """Python's re takes hours on the first text (35 a's and a b) for most
    of these; RE2 answers each of the texts, 100,000 characters long for
    the others, at once."""
    test = compile_regex(pattern)
    for text, answer in zip(["a" * 35 + "b", "a" * 100_000 + "!", "ab" * 50_000], answers):
        t0 = time.perf_counter()
        assert test(text) is answer, (pattern, text[:40])
        assert time.perf_counter() - t0 < 0.5, (pattern, len(text))
    short = "a" * 12 + "b"   # (short enough for Python's re)
    assert test(short) is bool(re.search(pattern, short))


def test_the_rewrite_keeps_pythons_meaning():
    """Random patterns over classes, groups, alternations, repeats, anchors
    and flags, on random short texts (ASCII, accented, Arabic digits,
    spaces): RE2 on the rewrite answers as Python's re.search."""
    atoms = ["a", "b", ".", r"\d", r"\w", r"\s", r"\W", r"\D", r"\S", "[a-c]", "[^a]",
             r"[\d_]", r"[^\W\d]", "é", "É", "1", "٣", " ", r"\.", "-", "(?i:A)", "x", r"\t"]
    rng = random.Random(7)

    def gen(d: int = 0) -> str:
        r = rng.random()
        if d > 3 or r < 0.35:
            return rng.choice(atoms)
        if r < 0.55:
            return gen(d + 1) + gen(d + 1)
        if r < 0.7:
            return "(" + gen(d + 1) + "|" + gen(d + 1) + ")"
        if r < 0.9:
            return "(?:" + gen(d + 1) + ")" + rng.choice(["*", "+", "?", "{2}", "{1,3}", "*?"])
        return rng.choice(["^", "$", r"\A", r"\Z"]) + gen(d + 1)

    alphabet = ["a", "b", "c", "1", "é", "É", "٣", " ", "_", ".", "-", "A", "x", "\t"]
    checked = 0
    for _ in range(1500):
        pattern = rng.choice(["", "(?i)", "(?a)", "(?s)"]) + gen()
        try:
            python = re.compile(pattern)
        except re.error:
            continue
        test = compile_regex(pattern)
        for _ in range(10):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
            assert test(text) == bool(python.search(text)), (pattern, text, translate(pattern))
            checked += 1
    assert checked > 5000


@pytest.mark.parametrize("pattern, said", [
    (r"^(\w+)\1$", r"a backreference \(\\1, \(\?P=name\)\)"),
    (r"(?P<x>a)(?P=x)", "a backreference"),
    (r"(?<=a)b", r"a lookbehind"),
    (r"a(?!b)", r"a lookahead"),
    (r"(?>a+)b", "an atomic group"),
    (r"a++b", "a possessive quantifier"),
    (r"(a)?(?(1)b|c)", "a conditional group"),
    (r"\bword\b", r"\\b \(a word boundary\) is only allowed with the ASCII flag"),
    (r"a{1001}", "a repetition count above 1000"),
    (r"((a{100}){100}){100}", "too large or complex"),
    ("[a", "not a valid regular expression: unterminated character set"),
])
def test_what_cannot_run_in_linear_time_is_refused_at_its_place(pattern, said):
    with pytest.raises(RegexRefused, match=said):
        compile_regex(pattern)
    got = errors(regex_spec(pattern.replace("\\", "\\\\").replace('"', '\\"')))
    assert len(got) == 1 and got[0].startswith("spec.fgl:3:25: bad regular expression ")
    assert re.search(said, got[0])


def test_an_ascii_word_boundary_is_accepted():
    assert compile_regex(r"(?a)\bis\b")("this is it")
    assert not compile_regex(r"(?a)\bis\b")("this")


@pytest.fixture(scope="module")
def catastrophic_model(tmp_path_factory):
    """A model trained with ``regex(word[t], "^(a+)+$")``, and data with a
    35-character token that makes Python's re backtrack for hours."""
    d = tmp_path_factory.mktemp("redos")
    spec = d / "spec.fgl"
    spec.write_text(regex_spec(r"^(a+)+$"))
    train = d / "train.txt"
    rng = random.Random(0)
    train.write_text("".join(
        "".join(f"{w} {'A' if 'a' in w else 'O'}\n"
                for w in rng.choices(["aaa", "b", "aa", "c", "aaaa"], k=8)) + "\n"
        for _ in range(30)))
    r, _ = run("train", str(spec), "--train", str(train), "-o", str(d / "m.fglm"), "-q")
    assert r.returncode == 0, r.stderr
    test = d / "test.txt"
    test.write_text("a" * 35 + "b A\n" + "a" * 20_000 + "! O\n\n")
    return d, spec, train, test


def test_a_catastrophic_pattern_trains_and_tags_quickly(catastrophic_model):
    d, spec, train, test = catastrophic_model
    r, took = run("check", str(spec))
    assert r.returncode == 0 and took < 30
    r, took = run("tag", str(d / "m.fglm"), str(test), timeout=60)
    assert r.returncode == 0, r.stderr
    assert took < 30, f"fgl tag took {took:.1f} s"
    assert r.stdout.splitlines()[0].startswith("a" * 35 + "b A ")


def _rewritten_spec(model: Path, out: Path, old: str, new: str) -> Path:
    """``model`` with its embedded spec edited and the digest made to match,
    as a crafted file's author would."""
    def edit(header: dict) -> None:
        assert old in header["spec_text"]
        header["spec_text"] = header["spec_text"].replace(old, new)
    return with_header(model, out, edit)


def test_a_model_whose_spec_holds_a_backtracking_pattern_is_refused(catastrophic_model):
    d, _, _, test = catastrophic_model
    crafted = _rewritten_spec(d / "m.fglm", d / "crafted.fglm", "^(a+)+$", r"^(a+)+(?=b)")
    with pytest.raises(ModelFileError):
        load_model(crafted)
    r, took = run("tag", str(crafted), str(test), timeout=60)
    assert r.returncode == 2 and took < 30
    assert "bad regular expression" in r.stderr and "a lookahead" in r.stderr
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------- growth and depth

def _spec(obs_lines: list[str], used: str) -> str:
    return "\n".join(["columns word, label", "output label", *obs_lines,
                      f"template e: y[t] ~ {used}", ""])


def self_conjunctions(depth: int) -> str:
    return _spec(["obs o0 = word[t]"] + [f"obs o{i} = o{i - 1} & o{i - 1}"
                                         for i in range(1, depth + 1)], f"o{depth}")


def test_self_conjunction_chains_are_refused_where_they_pass_the_limit():
    assert errors(self_conjunctions(9)) == []        # 512 terms
    got = errors(self_conjunctions(18))
    assert got == ["spec.fgl:13:5: observation 'o10' grows too large: written out with the "
                   "observations it uses, it has 1,024 terms (o9, of 512 terms, twice), more "
                   "than the 1,000 fgl allows; every position evaluates each term and each "
                   "attribute's name holds them all: write a repeated part once"]


def test_a_union_of_thousands_of_copies_is_refused():
    got = errors(_spec(["obs u = " + " | ".join(["word[t]"] * 5000)], "u"))
    assert len(got) == 1 and got[0].startswith("spec.fgl:3:5: observation 'u' grows too large")
    assert "5,000 terms (word[t] 5,000 times)" in got[0]
    inline = errors(_spec([], " & ".join(["lower(word[t])"] * 1500)))
    assert len(inline) == 1 and "of template 'e' grows too large" in inline[0]
    assert "1,500 terms (lower(word[t]) 1,500 times)" in inline[0]


@pytest.mark.parametrize("reverse", [False, True])
def test_a_thousand_chained_names_are_refused_not_a_recursion_error(reverse):
    lines = ["obs o0 = word[t]"] + [f"obs o{i} = o{i - 1}" for i in range(1, 3000)]
    got = errors(_spec(lines[::-1] if reverse else lines, "o2999"))
    assert len(got) == 1
    assert "observation 'o100' is nested 101 deep counting through the observations it names " \
           "(o99 -> o98 -> o97 -> ... -> o1 -> o0); at most 100" in got[0]
    assert errors(_spec(lines[:99], "o98")) == []


def test_fgl_check_and_train_refuse_them_quickly(tmp_path):
    data = tmp_path / "train.txt"
    data.write_text("a A\nb B\n\n")
    for name, text, said in [
            ("conj.fgl", self_conjunctions(18), "1,024 terms"),
            ("chain.fgl", _spec(["obs o0 = word[t]"] + [f"obs o{i} = o{i - 1}"
                                                        for i in range(1, 1000)], "o999"),
             "nested 101 deep")]:
        spec = tmp_path / name
        spec.write_text(text)
        for status, args in [
                (1, ["check", str(spec)]),
                (2, ["train", str(spec), "--train", str(data), "-o", str(tmp_path / "m.fglm")])]:
            r, took = run(*args, timeout=60)
            assert r.returncode == status and took < 20, (args, r.stderr)
            assert said in r.stderr and f"{spec}:" in r.stderr
            assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr
        assert not (tmp_path / "m.fglm").exists()


# ---------------------------------------------------------------- issue 47: counts, lexicons

def test_item_counts_of_any_size_are_shown_without_printing_them_whole():
    """5^(2^30) items (a chain of 30 self-conjunctions of a five-word
    window) has millions of digits: counted up to 10^30, then "more than"."""
    text = _spec(["obs o0 = word[t-2..t+2]"] + [f"obs o{i} = o{i - 1} & o{i - 1}"
                                                for i in range(1, 31)], "o30")
    t0 = time.perf_counter()
    got = errors(text)
    took = time.perf_counter() - t0
    assert any("about 10^22 items per position" in e for e in got), got
    assert any("more than 10^30 items per position" in e for e in got), got
    assert took < 5, took


def test_a_spec_reads_lexicons_only_from_under_its_folder(tmp_path):
    """The checker (and training, through the same rule) resolves a lexicon
    against the spec's folder; `lexicon_folders` (--lexicon-path) allows
    another by hand."""
    from fgl.lang.lexicons import lexicon_folders

    (tmp_path / "specs").mkdir()
    (tmp_path / "words.txt").write_text("a\n", encoding="utf-8")
    spec = parse_spec(_spec(['obs l = lexicon(word[t], "../words.txt")'], "l"),
                      str(tmp_path / "specs" / "s.fgl"))
    got = [str(e) for e in check_spec(spec, tmp_path / "specs")]
    assert len(got) == 1 and "lexicon file '../words.txt' is outside the spec's folder" in got[0]
    with lexicon_folders([tmp_path]):
        assert check_spec(spec, tmp_path / "specs") == []
    assert len(check_spec(spec, tmp_path / "specs")) == 1     # (only while the block runs)
