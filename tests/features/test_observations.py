"""Observation functions evaluated on a sentence: exact attribute keys and
values for every built-in, offsets at the edges, conjunction and union."""
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import STDLIB

from fgl.features.builtins import regex_classes, shape
from fgl.features.observations import TemplateAttributes, _column_slots, sentence_columns
from fgl.lang import ast
from fgl.lang.builtins import BUILTINS
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec

HEAD = "columns word, x:number, v:vector, label\noutput label\n"
ROWS = [["Peter", "1.5", "1,2", "P"], ["goes", "-2", "0,3", "O"], ["1999", "0", "4,5", "O"]]


def attributes(template_obs: str, tmp_path: Path | None = None):
    spec = validate(parse_spec(HEAD + f"template a: y[t] ~ {template_obs}\n", "<t>"), tmp_path)
    cols, gold = sentence_columns(spec, ROWS, [1, 2, 3], "<d>")
    assert gold == ["P", "O", "O"]
    return TemplateAttributes(spec, tmp_path)(cols, 3)[0]


def test_column_offsets_skip_positions_outside_the_sequence():
    got = attributes("word[t-1..t+1]")
    assert got[0] == [("word[t]=Peter", 1.0), ("word[t+1]=goes", 1.0)]
    assert got[1] == [("word[t-1]=Peter", 1.0), ("word[t]=goes", 1.0), ("word[t+1]=1999", 1.0)]
    assert got[2] == [("word[t-1]=goes", 1.0), ("word[t]=1999", 1.0)]


def test_text_functions():
    got = attributes("lower(word[t]), prefix(word[t], 2), suffix(word[t], 2), shape(word[t])")
    assert got[0] == [("lower(word[t])=peter", 1.0), ("prefix(word[t],2)=Pe", 1.0),
                      ("suffix(word[t],2)=er", 1.0), ("shape(word[t])=Aa", 1.0)]


def test_tests_fire_only_where_they_hold(tmp_path):
    (tmp_path / "lex.txt").write_text("goes\nwent\n", encoding="utf-8")
    got = attributes('regex(word[t], "^[0-9]+$"), lexicon(word[t], "lex.txt"), bos, eos', tmp_path)
    assert [k for k, _ in got[0]] == ["bos"]
    assert [k for k, _ in got[1]] == ["lexicon(word[t],'lex.txt')"]
    assert [k for k, _ in got[2]] == ["regex(word[t],'^[0-9]+$')", "eos"]


def test_numbers_and_vectors_are_real_valued():
    got = attributes("value(x[t]), value(v[t])")
    assert got[0] == [("x[t]", 1.5), ("v[t][0]", 1.0), ("v[t][1]", 2.0)]
    # a vector's zero dimension is no attribute, but for its last (the dimension)
    assert got[1] == [("x[t]", -2.0), ("v[t][1]", 3.0)]
    assert got[2] == [("x[t]", 0.0), ("v[t][0]", 4.0), ("v[t][1]", 5.0)]


def test_a_zero_last_dimension_is_kept_with_its_value():
    spec = validate(parse_spec(HEAD + "template a: y[t] ~ value(v[t])\n", "<t>"))
    cols, _ = sentence_columns(spec, [["a", "1", "0,0,0", "O"], ["b", "1", "0,2,0", "O"]],
                               [1, 2], "<d>")
    assert TemplateAttributes(spec)(cols, 2)[0] == [[("v[t][2]", 0.0)],
                                                   [("v[t][1]", 2.0), ("v[t][2]", 0.0)]]


def test_conjunction_multiplies_and_joins():
    got = attributes("word[t-1] & word[t], value(x[t]) & word[t]")
    assert got[1] == [("word[t-1]&word[t]=Peter|goes", 1.0), ("x[t]&word[t]=|goes", -2.0)]
    assert got[0] == [("x[t]&word[t]=|Peter", 1.5)]


def test_union_and_named_observations():
    spec = validate(parse_spec(HEAD + "obs e = bos | eos\ntemplate a: y[t] ~ e, bias\n", "<t>"))
    cols, _ = sentence_columns(spec, ROWS, [1, 2, 3], "<d>")
    got = TemplateAttributes(spec)(cols, 3)[0]
    assert got == [[("bos", 1.0), ("bias", 1.0)], [("bias", 1.0)], [("eos", 1.0), ("bias", 1.0)]]


def test_template_without_observations_has_one_bias_attribute():
    spec = validate(parse_spec(HEAD + "template tr: y[t-1..t]\n", "<t>"))
    cols, _ = sentence_columns(spec, ROWS, [1, 2, 3], "<d>")
    assert TemplateAttributes(spec)(cols, 3)[0] == [[("bias", 1.0)]] * 3


@pytest.mark.parametrize("word,classes", [
    ("Peter", {"Aa+", ".*A.*"}), ("IBM", {"A+", ".*A.*"}), ("1999", {"D+", "DDDD", ".*D.*"}),
    ("J.", {"A.", "A.A.", ".*A.*"}), ("3,5", {"D+[.,]D+", ".*D.*"}), ("-", {"P"}),
])
def test_regex_classes_of_seed_001(word, classes):
    assert set(regex_classes(word)) == classes


def test_shape():
    assert shape("McDonald's-99") == "AaAa'a-D"
    assert shape("Peter", collapse=False) == "Aaaaa"


def test_every_builtin_is_documented():
    path = STDLIB / "BUILTINS.md"
    doc = path.read_text(encoding="utf-8")
    for name in BUILTINS:
        assert f"`{name}" in doc, name


def test_an_attribute_given_twice_counts_once():
    """Two observations computing the same thing (or one listed twice) give
    one attribute with its value, not the value twice."""
    got = attributes("word[t], word[t], lower(word[t])")
    assert got[0] == [("word[t]=Peter", 1.0), ("lower(word[t])=peter", 1.0)]


def test_a_bag_of_words_counts_repeats():
    spec = validate(parse_spec("columns word, label\noutput label\nsegments max 3\n"
                               "template s: s[j] ~ word[u..v], length\n", "<t>"))
    cols, _ = sentence_columns(spec, [["a", "O"], ["b", "O"], ["a", "O"]], [1, 2, 3], "<d>")
    (row,) = TemplateAttributes(spec)(cols, 3, [(0, 2)])[0]
    assert dict(row) == {"word[u..v]=a": 2.0, "word[u..v]=b": 1.0, "length=3": 1.0}


def test_a_regex_with_braces_names_its_attribute():
    """Found by the fuzzer: the braces of `{4}` broke the formatting of the
    attribute's name (ValueError), on the general and the streamed path."""
    from fgl.api import CRF

    got = attributes('regex(word[t], "^[0-9]{4}$"), suffix(word[t], 2)')
    assert [k for k, _ in got[2]] == ["regex(word[t],'^[0-9]{4}$')", "suffix(word[t],2)=99"]
    crf = CRF('columns word, label\noutput label\n'
              'template s: y[t] ~ regex(word[t], "^[0-9]{4}$"), bias\n', max_iter=20)
    crf.fit([[["1999"], ["dog"]], [["cat"], ["2001"]]], [["Y", "N"], ["N", "Y"]])
    assert crf.predict([[["1066"], ["ox"]]]) == [["Y", "N"]]


@settings(max_examples=60, deadline=None)
@given(lo=st.integers(-4, 4), width=st.integers(0, 3), T=st.integers(0, 6))
def test_token_slots_equal_the_slots_at_one_token_spans(lo, width, T):
    """``pad``'s range at token positions (one slice per offset) reads what
    the general path reads on the spans (t, t): texts inside, markers and
    their distance outside."""
    ref = ast.ColumnRef("word", lo, lo + width, ast.Loc("<t>", 1, 1))
    cols = {"word": [f"w{i}" for i in range(T)]}
    slots = _column_slots(ref)
    assert slots(cols, T, None) == slots(cols, T, [(t, t) for t in range(T)])
