"""Every kind of user mistake ends in one located message on stderr and a
non-zero exit status (1 from `check` for spec errors, 2 otherwise) — never a
traceback.  One test per error class."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import data_files, run, train_model, write_data
from support.paths import HMM

from fgl.api import CRF
from fgl.data.sentence import Sentence
from fgl.errors import DataError

BASE = "columns word, label\noutput label\n"


def write_spec(tmp_path: Path, body: str, name: str = "m.fgl") -> Path:
    path = tmp_path / name
    path.write_text(BASE + body, encoding="utf-8")
    return path


def no_traceback(err: str) -> None:
    assert "Traceback" not in err
    assert len(err.strip().split("\n")) == 1, err     # one line, not a dump


def check_fails(capsys, spec: Path, line: int, col: int, *words: str) -> str:
    """`fgl check` exits 1 with the message ``spec:line:col: ...`` first."""
    code, out, err = run(capsys, "check", spec)
    assert code == 1, err
    assert out == ""
    assert "Traceback" not in err
    first = err.split("\n")[0]
    assert first.startswith(f"{spec}:{line}:{col}: "), err
    for w in words:
        assert w in first, first
    return first


def train_fails(capsys, tmp_path: Path, spec: Path, prefix: str, *words: str,
                train: Path | None = None) -> str:
    """`fgl train` exits 2 with one ``fgl: prefix...`` line on stderr."""
    if train is None:
        train, _ = data_files(tmp_path)
    code, out, err = run(capsys, "train", spec, "--train", train, "-o", tmp_path / "x.fglm", "-q")
    assert code == 2, err
    assert out == ""
    no_traceback(err)
    assert err.startswith(f"fgl: {prefix}"), err
    for w in words:
        assert w in err, err
    assert not (tmp_path / "x.fglm").exists()
    return err


# ---------------------------------------------------------------- spec errors

def test_far_offsets_are_refused(capsys, tmp_path):
    for far in ("word[t..t+2000000]", "word[t-1..t+99999999999999999999]"):
        spec = write_spec(tmp_path, f"obs w = {far}\ntemplate s: y[t] ~ w\n")
        check_fails(capsys, spec, 3, 9, "beyond the limit of 500 positions")


def test_deeply_nested_expression(capsys, tmp_path):
    deep = "lower(" * 600 + "word[t]" + ")" * 600
    spec = write_spec(tmp_path, f"obs w = {deep}\ntemplate s: y[t] ~ w\n")
    check_fails(capsys, spec, 3, 597, "nested more than 100 levels deep", "named `obs`")
    ok = write_spec(tmp_path, "obs w = " + "lower(" * 40 + "word[t]" + ")" * 40
                    + "\ntemplate s: y[t] ~ w\n", "ok.fgl")
    assert run(capsys, "check", ok)[0] == 0


def test_syntax_error(capsys, tmp_path):
    spec = write_spec(tmp_path, "obs = word[t]\ntemplate s: y[t] ~ word[t]\n")
    train_fails(capsys, tmp_path, spec, f"{spec}:3:5: ", "unexpected '='", "expected a name")


def test_syntax_error_inside_brackets(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t+]\n")
    train_fails(capsys, tmp_path, spec, f"{spec}:3:27: ",
                "unexpected ']'", "expected a whole number")


def test_check_reports_syntax_error_like_other_spec_errors(capsys, tmp_path):
    spec = write_spec(tmp_path, "obs = word[t]\ntemplate s: y[t] ~ word[t]\n")
    check_fails(capsys, spec, 3, 5, "unexpected '='")


def test_unknown_column(capsys, tmp_path):
    spec = write_spec(tmp_path, "obs a = wrd[t]\ntemplate s: y[t] ~ a\n")
    check_fails(capsys, spec, 3, 9, "unknown column 'wrd'", "did you mean 'word'")
    train_fails(capsys, tmp_path, spec, f"{spec}:3:9: unknown column 'wrd'")


def test_observation_reading_the_label_column(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ label[t-1]\n")
    check_fails(capsys, spec, 3, 20, "'label' is an output", "input columns")


def test_undefined_observation(capsys, tmp_path):
    spec = write_spec(tmp_path, "obs w = word[t]\ntemplate s: y[t] ~ ww\n")
    check_fails(capsys, spec, 4, 20, "undefined observation 'ww'", "did you mean 'w'")
    train_fails(capsys, tmp_path, spec, f"{spec}:4:20: undefined observation 'ww'")


def test_column_used_as_observation_name(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ word\n")
    check_fails(capsys, spec, 3, 20, "undefined observation 'word'", "word[t]")


def test_unknown_function(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ lowr(word[t])\n")
    check_fails(capsys, spec, 3, 20, "unknown function 'lowr'", "did you mean 'lower'")
    train_fails(capsys, tmp_path, spec, f"{spec}:3:20: unknown function 'lowr'")


def test_bad_offset_range_in_observation(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t+1..t-1]\n")
    check_fails(capsys, spec, 3, 20,
                "bad offset range t+1..t-1", "start must not come after the end")
    train_fails(capsys, tmp_path, spec, f"{spec}:3:20: bad offset range")


def test_bad_offset_range_in_label_window(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t]\ntemplate h: y[t..t-2]\n")
    check_fails(capsys, spec, 4, 13, "bad offset range t..t-2")


def test_pattern_with_undeclared_label_is_a_check_error(capsys, tmp_path):
    spec = write_spec(tmp_path, "labels label = [O B-T0 I-T0 B-T1 I-T1]\n"
                                "template s: y[t] ~ word[t]\n"
                                "template h: y[t-1..t] patterns [O B-T9]\n")
    check_fails(capsys, spec, 5, 35, "unknown label 'B-T9'", "declared labels", "B-T1")
    train_fails(capsys, tmp_path, spec, f"{spec}:5:35: unknown label 'B-T9'")


def test_pattern_label_absent_from_training_data_fails_at_compile_time(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t]\n"
                                "template h: y[t-1..t] patterns [O B-T9]\n")
    code, out, err = run(capsys, "check", spec)
    assert code == 0, err                     # labels are not known before the data is seen
    err = train_fails(capsys, tmp_path, spec, f"{spec}:4:",
                      "unknown label 'B-T9'", "template 'h'", "B-T0", "O")


def test_pattern_label_absent_from_training_data_points_at_the_pattern(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t]\n"
                                "template h: y[t-1..t] patterns [O B-T9]\n")
    err = train_fails(capsys, tmp_path, spec, f"{spec}:4:", "unknown label 'B-T9'")
    col = int(err.split(":")[3])
    assert col in (32, 35), err               # the pattern [O B-T9] or its label B-T9


def test_template_naming_a_position_twice(capsys, tmp_path):
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t]\ntemplate skip: (y[t-1..t], y[t])\n")
    check_fails(capsys, spec, 4, 17, "(y[t-1..t], y[t])", "name y[t] twice")
    train_fails(capsys, tmp_path, spec, f"{spec}:4:17: template labels (y[t-1..t], y[t])")


# ---------------------------------------------------------------- data errors

def train_data_fails(capsys, tmp_path, text: bytes | str, prefix_line: int, *words: str,
                     spec: Path = HMM, encoding_args=()) -> str:
    data = tmp_path / "data.txt"
    if isinstance(text, str):
        text = text.encode("utf-8")
    data.write_bytes(text)
    code, out, err = run(capsys, "train", spec, "--train", data, "-o", tmp_path / "x.fglm",
                         "-q", *encoding_args)
    assert code == 2, err
    no_traceback(err)
    assert err.startswith(f"fgl: {data}:{prefix_line}: "), err
    for w in words:
        assert w in err, err
    return err


def test_wrong_column_count_on_one_line(capsys, tmp_path):
    train_data_fails(capsys, tmp_path, "w1 O\nw2 B-T0\n\nw3 O extra\n", 4,
                     "expected 2 columns (word label), found 3", "'w3 O extra'")


def test_wrong_column_count_for_the_spec(capsys, tmp_path):
    train_data_fails(capsys, tmp_path, "w1 p O\nw2 p O\n\nw3 p O\n", 1,
                     "expected 2 columns (word label), found 3")


def numeric_spec(tmp_path: Path, kind: str) -> Path:
    """A spec reading a `:number` (column x) or `:vector` (column v) column."""
    col = "x" if kind == "number" else "v"
    spec = tmp_path / f"{kind}.fgl"
    spec.write_text(f"columns word, {col}:{kind}, label\noutput label\n"
                    f"template s: y[t] ~ word[t], value({col}[t])\n", encoding="utf-8")
    return spec


def test_bad_number_in_number_column(capsys, tmp_path):
    train_data_fails(capsys, tmp_path, "a 1.0 O\nb 2.5 O\n\nc abc O\n", 4,
                     "column 'x' expects a number, found 'abc'",
                     spec=numeric_spec(tmp_path, "number"))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300"])
def test_non_finite_or_huge_number_in_number_column(capsys, tmp_path, value):
    train_data_fails(capsys, tmp_path, f"a 1.0 O\nb 2.5 O\n\nc {value} O\n", 4,
                     f"column 'x' holds '{value}'", "numbers must be finite",
                     spec=numeric_spec(tmp_path, "number"))


def test_ragged_vector_column(capsys, tmp_path):
    train_data_fails(capsys, tmp_path, "a 1,2 O\nb 1,2,3 O\n", 2,
                     "column 'v' holds 3 numbers here and 2 on line 1",
                     spec=numeric_spec(tmp_path, "vector"))


def test_undecodable_bytes_suggest_an_encoding(capsys, tmp_path):
    train_data_fails(capsys, tmp_path, b"w1 O\n\ncaf\xe9 O\n", 3,
                     "0xe9", "not valid utf-8", "--encoding latin-1")


def test_unknown_encoding(capsys, tmp_path):
    """Refused when the command line is read (as are codecs no text file is
    in, such as rot13 and idna: tests/cli/test_hostile_outputs.py); in Python,
    when the file is read."""
    data = tmp_path / "data.txt"
    data.write_text("w1 O\n", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        run(capsys, "train", HMM, "--train", data, "-o", tmp_path / "x.fglm", "--encoding",
            "klingon")
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --encoding: unknown encoding 'klingon'" in err, err
    assert "Traceback" not in err     # (argparse's usage line, then the error)
    with pytest.raises(DataError, match=r"data.txt:0: unknown encoding 'klingon'"):
        CRF(HMM).read(data, encoding="klingon")


def test_label_outside_declared_label_set(capsys, tmp_path):
    spec = write_spec(tmp_path, "labels label = [O B-T0]\ntemplate s: y[t] ~ word[t]\n", "l.fgl")
    train_data_fails(capsys, tmp_path, "w1 O\nw2 B-T0\n\nw3 I-T0\n", 4,
                     "label 'I-T0' is not among the declared labels", spec=spec)


def test_missing_data_file(capsys, tmp_path):
    missing = tmp_path / "nope.txt"
    code, out, err = run(capsys, "train", HMM, "--train", missing, "-o", tmp_path / "x.fglm")
    assert code == 2
    no_traceback(err)
    assert err.startswith(f"fgl: {missing}:"), err
    assert "no such file" in err

    model, _, _ = train_model(capsys, tmp_path)
    for cmd in ("tag", "eval"):
        code, out, err = run(capsys, cmd, model, missing)
        assert code == 2
        no_traceback(err)
        assert err.startswith(f"fgl: {missing}:") and "no such file" in err, err


def test_empty_training_file(capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    code, out, err = run(capsys, "train", HMM, "--train", empty, "-o", tmp_path / "x.fglm")
    assert code == 2
    no_traceback(err)
    assert "no sequences" in err


def test_empty_training_file_is_named(capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    code, out, err = run(capsys, "train", HMM, "--train", empty, "-o", tmp_path / "x.fglm")
    assert code == 2
    assert str(empty) in err


def test_unknown_gold_label_at_eval_counts_as_an_error(capsys, tmp_path):
    """A gold label the model never saw cannot be predicted: `eval` scores it
    as a miss (found 0) rather than refusing the file."""
    model, _, _ = train_model(capsys, tmp_path)
    rows = [["w1", "O"], ["w2", "B-NEW"], ["w3", "I-NEW"], ["w4", "O"]]
    data = write_data(tmp_path / "new.txt", [Sentence(rows, [1, 2, 3, 4], 0, "x")])
    code, out, err = run(capsys, "eval", model, data)
    assert code == 0, err
    assert "processed 4 tokens with" in out
    acc = float(out.split("accuracy:")[1].split("%")[0])
    assert acc <= 50.0                          # both NEW tokens are wrong
    new_rows = [line.split() for line in out.split("\n")
                if line.startswith(("B-NEW", "I-NEW", "NEW"))]
    assert new_rows, out
    for r in new_rows:
        assert r[-2] == "0" and r[-1] == "0"    # found 0, correct 0


def test_eval_file_with_too_many_columns(capsys, tmp_path):
    """`eval` on a file with too many columns is a located data error."""
    model, _, _ = train_model(capsys, tmp_path)
    data = tmp_path / "wide.txt"
    data.write_text("w1 O x y\nw2 O x y\n", encoding="utf-8")
    code, out, err = run(capsys, "eval", model, data)
    assert code == 2
    no_traceback(err)
    assert err.startswith(f"fgl: {data}:1: expected 2 columns"), err


# ---------------------------------------------------------------- missing files

def test_missing_spec_file(capsys, tmp_path):
    missing = tmp_path / "nope.fgl"
    train, _ = data_files(tmp_path)
    for argv in (("train", missing, "--train", train, "-o", tmp_path / "x.fglm"),
                 ("explain", missing)):
        code, out, err = run(capsys, *argv)
        assert code == 2
        no_traceback(err)
        assert err.startswith(f"fgl: {missing}: "), err
        assert "not found" in err
    code, out, err = run(capsys, "check", missing)
    assert code == 2
    no_traceback(err)
    assert err == f"fgl: {missing}: spec file not found\n", err   # as train and explain say


def test_missing_model_file(capsys, tmp_path):
    missing = tmp_path / "nope.fglm"
    _, test = data_files(tmp_path)
    for cmd in ("tag", "eval"):
        code, out, err = run(capsys, cmd, missing, test)
        assert code == 2
        no_traceback(err)
        assert err.strip() == f"fgl: {missing}: no such model file"


def test_a_huge_data_line_gives_a_short_message(capsys, tmp_path):
    """A line of a million fields is echoed cut in the middle, not whole."""
    err = train_data_fails(capsys, tmp_path, "w1 O\n" + "w " * 500_000 + "O\n", 2,
                           "found 500001", "characters]...")
    assert len(err) < 1000


def test_check_reads_a_byte_order_mark_as_train_does(capsys, tmp_path):
    spec = tmp_path / "bom.fgl"
    spec.write_bytes(b"\xef\xbb\xbf" + (BASE + "template s: y[t] ~ word[t]\n").encode("utf-8"))
    assert run(capsys, "check", spec)[0] == 0


def test_absurd_segment_length_is_refused(capsys, tmp_path):
    spec = write_spec(tmp_path, "segments max 1000000\ntemplate s: s[j] ~ word[u]\n")
    check_fails(capsys, spec, 3, 14, "segments: max 1000000 is beyond the limit of 1000 tokens")


def test_a_model_too_large_for_memory_is_refused_before_its_features_exist(
        capsys, tmp_path, monkeypatch):
    """Features are counted before they are made; a model whose training
    would exceed the budget (FGL_MAX_MEMORY; default half the memory) is a
    located error naming the template that makes most of them."""
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t]\n"
                                "template h: y[t-1..t] ~ word[t] (support = all)\n")
    monkeypatch.setenv("FGL_MAX_MEMORY", "20000")
    train, _ = data_files(tmp_path)
    code, _, err = run(capsys, "explain", spec, "--train", train)
    assert code == 2 and "Traceback" not in err
    assert f"{spec}:4:1: template 'h' would make" in err and "support = all" in err
    assert "FGL_MAX_MEMORY" in err
    monkeypatch.setenv("FGL_MAX_MEMORY", str(1 << 40))
    assert run(capsys, "explain", spec, "--train", train)[0] == 0


def test_far_label_offsets_are_refused(capsys, tmp_path):
    """Found by the fuzzer: label windows had no offset limit, and a far one
    hung the checker (or the engine choice) walking its positions."""
    for labels, col in (("y[t-99999999999..t]", 13), ("(y[t-99999999999..t], y[t+1])", 14),
                        ("(y[t-600], y[t])", 14)):
        spec = write_spec(tmp_path, f"template g: {labels} ~ bias\n")
        check_fails(capsys, spec, 3, col, "offset", "in y[...] is beyond the limit of 500")


def test_a_conjunction_of_too_many_items_is_refused(capsys, tmp_path):
    """Found by the fuzzer: windows conjoined with windows passed the checks
    and then hung training, building tens of millions of attributes per
    token (a conjunction multiplies its parts' items)."""
    e = "word[t-1..t+1]"
    for _ in range(4):
        e = f"({e} & {e})"
    spec = write_spec(tmp_path, f"obs w = {e}\ntemplate s: y[t] ~ w\n")
    check_fails(capsys, spec, 3, 10, "gives up to 43,046,721 items per position",
                "more than the 100,000 allowed")
    spec = write_spec(tmp_path, "obs w = word[t-9..t+9] & word[t-9..t+9]\n"
                                "template s: y[t] ~ w & w\n")
    check_fails(capsys, spec, 4, 20, "gives up to 130,321 items per position")
    ok = write_spec(tmp_path, "obs w = word[t-2..t+2] & word[t-2..t+2] & word[t-2..t+2]\n"
                              "template s: y[t] ~ w\n", "ok.fgl")
    assert run(capsys, "check", ok)[0] == 0


def test_a_whole_number_setting_beyond_machine_integers_is_refused(capsys, tmp_path):
    """Found by the fuzzer: `infer trp(max_iter = 99999999999999999999)`
    passed the checks and then failed in the engine (OverflowError)."""
    spec = write_spec(tmp_path, "template s: y[t] ~ word[t]\ntemplate g: (y[t-2], y[t])\n"
                                "infer trp(max_iter = 99999999999999999999)\n")
    check_fails(capsys, spec, 5, 11, "infer trp: max_iter = 99999999999999999999 is beyond",
                "(2147483647)")


# ------------------------------------------------------------- numbers, lexicons, files (issue 47)

def test_conjunctions_past_pythons_integer_printing_limit_are_refused(capsys, tmp_path):
    """The item count of 40 self-conjunctions (5^(2^40)) or a 9,100-way
    conjunction has more digits than Python prints (4,300): the checker's
    message was a ValueError traceback."""
    chain = "".join(f"obs o{i} = o{i - 1} & o{i - 1}\n" for i in range(1, 41))
    spec = write_spec(tmp_path, f"obs o0 = word[t-2..t+2]\n{chain}template s: y[t] ~ o40\n")
    code, _, err = run(capsys, "check", spec)
    assert code == 1 and err.startswith(f"{spec}:6:10: this expression gives up to 390,625 "
                                        "items per position"), err
    assert "more than 10^30 items per position" in err and "Traceback" not in err
    train_fails(capsys, tmp_path, spec, f"{spec}:6:10: ")
    wide = write_spec(tmp_path, "template s: y[t] ~ " + " & ".join(["word[t-1..t+1]"] * 9100)
                      + "\n", "wide.fgl")
    code, _, err = run(capsys, "check", wide)
    assert code == 1 and err.startswith(f"{wide}:3:20: the expression "), err
    assert "more than 10^30 items per position" in err and "Traceback" not in err


def _lexicon_spec(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    return write_spec(folder, f'obs l = lexicon(word[t], "{name}")\ntemplate s: y[t] ~ l\n')


def test_a_lexicon_outside_the_specs_folder_is_refused(capsys, tmp_path):
    """A spec from a stranger named `../../etc/shadow` as a lexicon and its
    lines went into the model; a lexicon is read from under the spec's folder
    (or a --lexicon-path FOLDER) only."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret\n", encoding="utf-8")
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "link.txt").symlink_to(secret)
    train, _ = data_files(tmp_path)
    for name in ("../secret.txt", str(secret), "link.txt", "../specs/../secret.txt"):
        spec = _lexicon_spec(folder, name)
        check_fails(capsys, spec, 3, 26, f"lexicon file {name!r} is outside the spec's folder",
                    "--lexicon-path")
        train_fails(capsys, tmp_path, spec, f"{spec}:3:26: lexicon file", "outside",
                    train=train)
    model = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", spec, "--train", train, "-o", model, "-q",
                       "--lexicon-path", tmp_path)
    assert code == 0, err
    assert CRF.load(model).model.lexicons == {"../specs/../secret.txt":
                                              frozenset({"the secret"})}
    (folder / "sub").mkdir()
    (folder / "inside.txt").write_text("inside\n", encoding="utf-8")
    assert run(capsys, "check", _lexicon_spec(folder, "./sub/../inside.txt"))[0] == 0


@pytest.mark.parametrize("name, words", [
    ("/dev/zero", "lexicon file '/dev/zero' is a character device, not a regular file"),
    (".", "lexicon file '.' ({folder}) is a folder, not a regular file"),
    ("missing.txt", "lexicon file 'missing.txt' not found (looked for {folder}/missing.txt)"),
    ("a\x00b", "lexicon file 'a\\x00b' holds a NUL character, which no file name can")],
    ids=["device", "folder", "missing", "NUL"])
def test_a_lexicon_that_is_no_file_is_named_for_what_it_is(capsys, tmp_path, name, words):
    spec = _lexicon_spec(tmp_path, name)
    check_fails(capsys, spec, 3, 26, words.format(folder=tmp_path))


def test_a_crfpp_template_with_a_byte_order_mark_converts(capsys, tmp_path):
    template = tmp_path / "template"
    template.write_text("U00:%x[-1,0]/%x[0,0]\nB\n", encoding="utf-8")
    code, plain, err = run(capsys, "convert", "crfpp", template)
    assert code == 0, err
    template.write_bytes(b"\xef\xbb\xbf" + template.read_bytes())
    assert run(capsys, "convert", "crfpp", template) == (0, plain, "")


@pytest.mark.parametrize("macro, words", [
    ("%x[" + "1" * 5000 + ",0]", "row 1111111111 ...[4980 characters]... 1111111111 in"),
    ("%x[-" + "9" * 30 + ",0]", "row -999999999 ...[11 characters]... 9999999999 in"),
    ("%x[0," + "7" * 5000 + "]", "column 7777777777 ...[4980 characters]... 7777777777 in"),
    ("%x[-0008,0000000]", None), ("%x[" + "0" * 5000 + "1," + "0" * 5000 + "1]", None)],
    ids=["huge row", "long negative row", "huge column", "zeros", "5,000 zeros"])
def test_a_crfpp_macro_with_a_huge_number_is_located(capsys, tmp_path, macro, words):
    """int() of a macro's 5,000 digits was a ValueError traceback."""
    template = tmp_path / "template"
    template.write_text(f"U00:{macro}\n", encoding="utf-8")
    code, _, err = run(capsys, "convert", "crfpp", template)
    if words is None:
        assert code == 0, err
        return
    assert code == 2 and err.startswith(f"fgl: {template}:1:5: {words}"), err
    no_traceback(err)


def test_a_graph_with_a_number_past_pythons_limit_is_located(capsys, tmp_path):
    graphs = tmp_path / "graphs.jsonl"
    ok = '{"nodes": [{"id": "a", "words": "x y", "label": "A"}], "edges": []}\n'
    graphs.write_text(ok + '{"nodes": [{"id": %s, "words": "x", "label": "A"}]}\n'
                      % ("9" * 5000), encoding="utf-8")
    code, _, err = run(capsys, "explain", "stdlib:relational", "--train", graphs)
    assert code == 2 and f"fgl: {graphs}:2: a whole number of 5,000 digits" in err, err
    assert "Traceback" not in err


def test_a_checkpoint_whose_lbfgs_pairs_are_not_finite_is_refused_at_resume(capsys, tmp_path):
    """`state_lbfgs_rho` set to inf behind a matching checksum made the
    compact form's matrix singular: a LinAlgError traceback at --resume."""
    import numpy as np
    from support.model_files import with_stored

    train, _ = data_files(tmp_path)
    checkpoint = tmp_path / "run.fglm"
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "m.fglm", "-q",
                       "--max-iter", "4", "--checkpoint", checkpoint)
    assert code == 0, err
    for value in (np.inf, 0.0, np.nan):
        bad = with_stored(checkpoint, tmp_path / "bad.fglm",
                          arrays_edit=lambda a: a["state_lbfgs_rho"].__setitem__(-1, value))
        code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "r.fglm",
                           "-q", "--max-iter", "6", "--resume", bad)
        assert code == 2 and err.startswith(f"fgl: {bad}: corrupt checkpoint: ") \
            and "rho or yy are not positive finite" in err, err
        no_traceback(err)
    assert not (tmp_path / "r.fglm").exists()
    code, _, err = run(capsys, "train", HMM, "--train", train, "-o", tmp_path / "r.fglm", "-q",
                       "--max-iter", "6", "--resume", checkpoint)
    assert code == 0, err


def test_bags_of_words_conjoined_past_pythons_integer_printing_limit(capsys, tmp_path):
    """999 bags of a 40,000-word text conjoined: 40000^999 items, a number
    of 4,598 digits, which the message printed whole (a ValueError)."""
    spec = tmp_path / "bags.fgl"
    spec.write_text("input graph\ncolumns words, label\noutput label\nobs bag = "
                    + " & ".join(["tokens(words[a])"] * 999)
                    + "\ntemplate node: y[a] ~ bias, bag\n", encoding="utf-8")
    graphs = tmp_path / "g.jsonl"
    words = " ".join(f"w{i}" for i in range(40000))
    graphs.write_text('{"nodes": [{"id": "a", "words": "%s", "label": "A"}]}\n' % words,
                      encoding="utf-8")
    code, _, err = run(capsys, "explain", spec, "--train", graphs)
    assert code == 2 and f"fgl: {graphs}:1: column 'words' holds 40000 words" in err, err
    assert "would give about 10^4597 items at one position" in err and "Traceback" not in err


@pytest.mark.parametrize("bp", ["x", {"model": {"damping": "x"}},
                                {"model": {"tol": -1, "max_iter": -1, "damping": -1}},
                                {"model": {"tol": 1e-8, "max_iter": 200, "damping": 1.5}}],
                         ids=["a string", "keys missing", "negative", "damping 1.5"])
def test_a_checkpoint_whose_bp_settings_are_broken_is_refused_at_resume(capsys, tmp_path, bp):
    """BP's settings in a checkpoint edited behind a matching checksum were
    a KeyError or ValueError traceback in the resumed run."""
    from support.model_files import with_stored

    spec = write_spec(tmp_path, "template s: y[t] ~ word[t]\ntemplate g: (y[t-2], y[t])\n"
                                "infer loopy\n")
    train, _ = data_files(tmp_path)
    checkpoint = tmp_path / "run.fglm"
    code, _, err = run(capsys, "train", spec, "--train", train, "-o", tmp_path / "m.fglm", "-q",
                       "--max-iter", "2", "--checkpoint", checkpoint)
    assert code == 0, err
    bad = with_stored(checkpoint, tmp_path / "bad.fglm",
                      edit=lambda h: h["meta"]["checkpoint"].__setitem__("bp", bp))
    code, _, err = run(capsys, "train", spec, "--train", train, "-o", tmp_path / "r.fglm", "-q",
                       "--max-iter", "4", "--resume", bad)
    assert code == 2 and err.startswith(f"fgl: {bad}: corrupt checkpoint: ValueError: BP's"), err
    no_traceback(err)
    assert not (tmp_path / "r.fglm").exists()


@pytest.mark.parametrize("body, line, col", [
    ("template s: y[t] ~ word[t+{n}]\n", 3, 27),
    ("template s: y[t] ~ prefix(word[t], {n})\n", 3, 36),
    ("segments max {n}\ntemplate s: s[j] ~ word[u]\n", 3, 14),
    ("template s: y[t] ~ word[t]\ntrain {{ max_iter = {n} }}\n", 4, 20),
    ("template s: y[t-{n}..t]\n", 3, 17)],
    ids=["offset", "parameter", "segments", "setting", "label offset"])
def test_a_spec_number_past_pythons_integer_limit_is_located(capsys, tmp_path, body, line,
                                                             col):
    """A 5,000-digit whole number anywhere in a spec was int()'s ValueError,
    a traceback, from the parser."""
    spec = write_spec(tmp_path, body.format(n="9" * 5000))
    check_fails(capsys, spec, line, col, "a whole number of 5,000 digits",
                "a spec's numbers have at most 1,000")
