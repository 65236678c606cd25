"""The streaming count behind ``fgl explain --train`` (``fgl.compile.tally``,
issue 25 item 3): the same first pass and column counts as reading the
data into sentences, whatever the file's layout and wherever its chunks
end; data it cannot count that way is read as sentences, with their
located errors; and explain's estimate imports no kernels."""
from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from fgl import registry
from fgl.api import CRF
from fgl.cli import main
from fgl.compile import estimate as est
from fgl.compile import tally
from fgl.compile.tally import tally_columns
from fgl.lang.parser import parse_spec
from fgl.lang.settings import resolve_train

HEAD = "columns word, x:number, v:vector, pos, chunk\noutput chunk\n"
SPECS = {
    "chain": "obs w = word[t-1..t+1]\ntemplate s: y[t] ~ w, pos[t] & word[t], value(x[t])\n"
             "template t: y[t-1..t]\n",
    "high order, observed": "template s: y[t] ~ word[t], value(v[t])\n"
                            "template h: y[t-2..t] patterns observed upto ~ pos[t]\n",
    "declared labels": "labels chunk = [B-NP I-NP B-VP I-VP O Z]\ntemplate s: y[t] ~ word[t]\n",
    "bags of words": "template s: y[t] ~ tokens(word[t]) & pos[t], tokens(pos[t])\n",
    "segments": "segments max 3 from bio\n"
                "template s: s[j] ~ bias, word[u..v], length\ntemplate t: s[j-1..j] ~ pos[u]\n",
}


def _rows(seed: int, n: int) -> list[list[list[str]]]:
    """``n`` sentences of (word, x, v, pos, chunk) rows, BIO chunks of up to 3 tokens."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        rows, inside, kind = [], 0, "NP"
        for _ in range(rng.randint(1, 9)):
            start = inside == 0 or inside == 3 or rng.random() < 0.4
            kind = rng.choice(["NP", "VP"]) if start else kind
            tag = "O" if start and rng.random() < 0.2 else ("B-" if start else "I-") + kind
            inside = 0 if tag == "O" else (1 if start else inside + 1)
            word = rng.choice(["the", "cat", "Sat", "on", "é", "mat"]) + str(rng.randint(0, 9))
            rows.append([word, f"{rng.random():.2f}", f"{rng.random():.1f},{rng.random():.1f}",
                         f"P{rng.randint(0, 5)}", tag])
        out.append(rows)
    return out


def _plain(sentences: list[list[list[str]]]) -> str:
    return "".join("".join(" ".join(r) + "\n" for r in rows) + "\n" for rows in sentences)


def _awkward(sentences: list[list[list[str]]]) -> str:
    """The same data as a column file may also hold it: CRLF and bare CR
    line ends, tabs and runs of spaces, blank lines of spaces, several
    blank lines, -DOCSTART- lines, a byte-order mark, no final line end."""
    out = ["\ufeff-DOCSTART- -X- O\r\n\r\n"]
    for i, rows in enumerate(sentences):
        for j, r in enumerate(rows):
            out.append(("  " if j % 3 == 0 else "") + "\t".join(r[:2]) + "   " + " ".join(r[2:])
                       + ("\r" if j % 4 == 1 else "\r\n"))
        out.append(" \t \n\n" if i % 5 == 0 else "\n")
        if i % 7 == 3:
            out.append("-DOCSTART-\n")
    return "".join(out).rstrip("\n")


def _counted_both_ways(spec, files: list[str]):
    choice = registry.choose(spec)
    fast = est.counted_tally(spec, choice.engine.name, lambda: tally_columns(spec, files))
    slow = est.counted_sentences(spec, choice.model, CRF(spec).read(files), "<train>")
    return fast, slow


@pytest.mark.parametrize("chunk", [1, 100, tally.CHUNK])
@pytest.mark.parametrize("name", list(SPECS))
def test_the_tally_gives_the_first_pass_and_counts_of_the_sentences(name, chunk, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(tally, "CHUNK", chunk)   # (a chunk of 1 byte: one line at a time)
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text(_plain(_rows(1, 40)), encoding="utf-8")
    two.write_bytes(_awkward(_rows(2, 40)).encode("utf-8"))
    spec = parse_spec(HEAD + SPECS[name], str(tmp_path / "s.fgl"))
    settings = resolve_train(spec)
    for files in ([str(one)], [str(two)], [str(one), str(two)]):
        fast, slow = _counted_both_ways(spec, files)
        assert fast.layer.labels == slow.layer.labels
        for field in ("gold", "units", "lengths"):
            assert np.array_equal(getattr(fast, field), getattr(slow, field)), field
        assert (fast.span, fast.columns) == (slow.span, slow.columns)
        assert (est.estimate_counted(spec, fast, settings).lines()
                == est.estimate_counted(spec, slow, settings).lines())


def test_observed_patterns_are_the_plans_compiling_makes(tmp_path):
    data = tmp_path / "train.txt"
    data.write_text(_plain(_rows(3, 60)), encoding="utf-8")
    for name in ("high order, observed", "segments"):
        spec = parse_spec(HEAD + SPECS[name], "s.fgl")
        model_cls, settings = registry.choose(spec).model, resolve_train(spec)
        layer, gold, _ = model_cls.read_gold(spec, lambda: CRF(spec).read(data), "<train>")
        counted = est.counted_sentences(spec, model_cls, CRF(spec).read(data), "<train>")
        assert (est.template_plans(spec, counted, settings)
                == model_cls.template_plans(spec, layer, gold, settings.sigma,
                                            settings.min_count))


BASE = "columns word, x:number, label\noutput label\n"
# data the tally leaves to the sentence reader: (spec body, lines, the line of the error)
REFUSED = {
    "a short line": ("template s: y[t] ~ word[t]\n", ["a 1 A", "b B", "", "c 2 A"], 2,
                     "expected 3 columns"),
    "no label column": ("template s: y[t] ~ word[t]\n", ["a 1", "b 2"], 1,
                        "training data needs the label column 'label'"),
    "a label not declared": ("labels label = [A]\ntemplate s: y[t] ~ word[t]\n",
                             ["a 1 A", "", "b 2 A", "c 3 B"], 4,
                             "label 'B' is not among the declared labels"),
    "a segment too long": ("segments max 2 from bio\ntemplate s: s[j] ~ word[u]\n",
                           ["a 1 B-NP", "", "b 1 B-NP", "c 1 I-NP", "d 1 I-NP"], 3,
                           "segment of 3 tokens"),
    "a bad number": ("template s: y[t] ~ value(x[t])\n", ["a 1 A", "b 1e999 A"], 2,
                     "column 'x' holds '1e999'"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_data_the_tally_cannot_count_gets_the_sentence_readers_located_error(case, tmp_path,
                                                                             capsys):
    body, lines, line, words = REFUSED[case]
    spec, data = tmp_path / "s.fgl", tmp_path / "train.txt"
    spec.write_text(BASE + body, encoding="utf-8")
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed = parse_spec(BASE + body, str(spec))
    assert est.counted_tally(parsed, registry.choose(parsed).engine.name,
                             lambda: tally_columns(parsed, [str(data)])) is None
    assert main(["explain", str(spec), "--train", str(data)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fgl: {data}:{line}: ") and words in err, err


def test_whitespace_inside_a_field_is_left_to_the_sentence_reader(tmp_path, capsys):
    """A no-break space is part of a field: the tally does not split on it,
    it leaves the file to the reader that knows, and the sizes are those
    of the sentences."""
    spec, data = tmp_path / "s.fgl", tmp_path / "train.txt"
    spec.write_text(BASE + "template s: y[t] ~ word[t]\n", encoding="utf-8")
    data.write_text("a\u00a0b 1 A\nc 2 B\n\nd 3 A\n", encoding="utf-8")
    assert tally_columns(parse_spec(spec.read_text(), str(spec)), [str(data)]) is None
    assert main(["explain", str(spec), "--train", str(data)]) == 0
    out = capsys.readouterr().out
    assert "training data: 2 sequences, 3 tokens" in out and "3 attributes" in out, out


def test_explains_estimate_reads_no_sentences(tmp_path, capsys, monkeypatch):
    """Above ``SIZED_ONLY_FEATURES`` the estimate comes from the tally
    alone: the sentence reader is never asked."""
    from fgl.compile import footprint
    from fgl.io import conll

    spec, data = tmp_path / "s.fgl", tmp_path / "train.txt"
    spec.write_text(BASE + "template s: y[t] ~ word[t] (support = all)\n", encoding="utf-8")
    data.write_text(_plain([[[f"w{i}", "1", "AB"[i % 2]] for i in range(k, k + 4)]
                            for k in range(0, 40, 4)]), encoding="utf-8")
    monkeypatch.setattr(footprint, "SIZED_ONLY_FEATURES", 1)

    def read(*args, **kwargs):
        raise AssertionError("explain read the data into sentences")

    monkeypatch.setattr(conll, "parse_text", read)
    assert main(["explain", str(spec), "--train", str(data)]) == 0
    out = capsys.readouterr().out
    assert "s: at most 40 attributes x 2 patterns (support all): at most 80 features" in out
    assert "training data: 10 sequences, 40 tokens" in out


def test_explains_estimate_imports_no_kernels(tmp_path):
    spec, data = tmp_path / "s.fgl", tmp_path / "train.txt"
    spec.write_text("columns word, label\noutput label\ntemplate s: y[t] ~ word[t]\n"
                    "template t: y[t-1..t]\n", encoding="utf-8")
    data.write_text("a A\nb B\n\nc A\n", encoding="utf-8")
    code = ("import sys\nfrom fgl.compile import footprint\nfrom fgl.cli import main\n"
            "footprint.SIZED_ONLY_FEATURES = 1\n"
            f"assert main(['explain', {str(spec)!r}, '--train', {str(data)!r}]) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith(('numba', 'llvmlite'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "features: at most" in out and out.rstrip().endswith("[]"), out
