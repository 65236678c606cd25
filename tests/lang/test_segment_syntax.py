"""Semi-Markov (segment) model syntax: `segments max L`, columns read relative
to a segment (u/v), segment label windows s[j-k..j], the `length` built-in,
and every check that goes with them."""
from __future__ import annotations

import pickle

import pytest
from support import spec_errors
from support.spec_errors import CHECK_FILE, assert_at, check_errors, one_error

from fgl.errors import SpecError
from fgl.lang.ast import Call, ColumnRef, Conj, LabelRef, Loc, NameRef, PatternSpec, Segments
from fgl.lang.checks import NONCONTIGUOUS_SEGMENT_WINDOW, check_spec, validate
from fgl.lang.parser import parse_spec

F = "seg.fgl"

SPEC = '''\
columns word, chunk
output chunk
labels chunk = [NP VP O]
segments max 6 [NP = 8, "VP" = 4] from change

obs first  = word[u]
obs last   = lower(word[v])
obs before = word[u-1]
obs after  = word[v+1]
obs inside = word[u..v]
obs len    = length
obs fl     = word[u] & length
obs around = word[u-1..v+1]
obs tail   = word[v-2..v]

template seg:   s[j] ~ first, last, before, after, inside, len
template trans: s[j-1..j]
template ho:    s[j-2..j] patterns observed upto
template ex:    s[j-1..j] patterns [NP VP], [O NP]
template pair:  (s[j-1], s[j])
'''


def L(line: int, col: int) -> Loc:
    return Loc(F, line, col)


@pytest.fixture(scope="module")
def spec():
    return parse_spec(SPEC, F)


def obs(spec, name):
    return next(d.expr for d in spec.observations if d.name == name)


def tpl(spec, name):
    return next(t for t in spec.templates if t.name == name)


# ---------------------------------------------------------------- AST

def test_segments_statement(spec):
    assert spec.segments == Segments(max_length=6, per_label={"NP": 8, "VP": 4}, boundary="change",
                                     loc=L(4, 1))
    assert type(spec.segments.max_length) is not bool and spec.segments.max_length == 6
    assert list(spec.segments.per_label) == ["NP", "VP"]
    # names and numbers remember where they were written
    assert spec.segments.max_length.loc == L(4, 14)
    np_key, vp_key = spec.segments.per_label
    assert np_key.loc == L(4, 17) and vp_key.loc == L(4, 25)
    assert spec.segments.per_label["NP"].loc == L(4, 22)
    assert spec.segments.boundary.loc == L(4, 40)


def test_segments_defaults_and_forms():
    s = parse_spec("segments max 6", F).segments
    assert s == Segments(6, {}, "bio", L(1, 1))
    assert parse_spec("segments max 6 from bio", F).segments == Segments(6, {}, "bio", L(1, 1))
    assert parse_spec("segments max 3 []", F).segments == Segments(3, {}, "bio", L(1, 1))
    s = parse_spec('segments max 2 [NP=5,"a=b" = 1, B-NP = 2]', F).segments
    assert s.per_label == {"NP": 5, "a=b": 1, "B-NP": 2}
    assert parse_spec("model m", F).segments is None


@pytest.mark.parametrize("text", [
    "segments max 6 [O = 20] from change adjacent distinct",
    "segments max 6 [O = 20] adjacent distinct from change",
])
def test_adjacent_distinct(text):
    s = parse_spec(text, F).segments
    assert s == Segments(6, {"O": 20}, "change", L(1, 1), distinct=True)
    assert parse_spec("segments max 6 adjacent distinct", F).segments.distinct
    assert not parse_spec("segments max 6 from change", F).segments.distinct
    # `distinct` is a keyword only there
    assert parse_spec("obs distinct = word[t]", F).observations[0].name == "distinct"


def test_adjacent_needs_distinct():
    at(syntax_error("segments max 6 adjacent different"), 1, 25, "unexpected 'different'",
       "'distinct'")


@pytest.mark.parametrize("text, col, words", [
    ("labels punc = [O , .]", 18, ("labels are separated by spaces", '[O "," "."]')),
    ("labels punc = [O a,b]", 19, ("labels are separated by spaces", "quoted")),
    ("segments max 4 [,COMMA = 2]", 17, ('must be quoted, as in [",COMMA" = 3]',)),
    ("segments max 4 [O-, = 2]", 19, ('quote the label: "O-,"',)),
])
def test_a_comma_in_a_label_asks_for_quotes(text, col, words):
    at(syntax_error(text), 1, col, "unexpected ','", *words)
    quoted = text.replace(" , ", ' "," ').replace("a,b", '"a,b"').replace(",COMMA", '",COMMA"')
    quoted = quoted.replace("O-,", '"O-,"')
    parse_spec(quoted, F)


def test_segments_numbers_are_plain_after_pickling(spec):
    back = pickle.loads(pickle.dumps(spec.segments))
    assert back == spec.segments
    assert type(back.max_length) is int and type(back.per_label["NP"]) is int
    assert all(type(k) is str for k in back.per_label)


def test_unchecked_numbers_parse():
    s = parse_spec("segments max 0 [NP = -1, VP = 2.5]", F).segments
    assert s.max_length == 0 and s.per_label == {"NP": -1, "VP": 2.5}
    assert isinstance(s.per_label["VP"], float)


@pytest.mark.parametrize("name, expected", [
    ("first", ColumnRef("word", 0, 0, L(6, 14), "u", "u")),
    ("before", ColumnRef("word", -1, -1, L(8, 14), "u", "u")),
    ("after", ColumnRef("word", 1, 1, L(9, 14), "v", "v")),
    ("inside", ColumnRef("word", 0, 0, L(10, 14), "u", "v")),
    ("len", NameRef("length", L(11, 14))),
    ("fl", Conj([ColumnRef("word", 0, 0, L(12, 14), "u", "u"), NameRef("length", L(12, 24))],
                L(12, 14))),
    ("around", ColumnRef("word", -1, 1, L(13, 14), "u", "v")),
    ("tail", ColumnRef("word", -2, 0, L(14, 14), "v", "v")),
])
def test_segment_column_refs(spec, name, expected):
    assert obs(spec, name) == expected


def test_call_on_last_token(spec):
    assert obs(spec, "last") == Call("lower", ColumnRef("word", 0, 0, L(7, 20), "v", "v"), [],
                                     L(7, 14))


def test_token_column_refs_keep_base_t():
    e = parse_spec("obs o = word[t-2..t+1]", F).observations[0].expr
    assert e == ColumnRef("word", -2, 1, L(1, 9), "t", "t")
    e = parse_spec("obs o = word[ u + 2 .. v - 3 ]", F).observations[0].expr
    assert (e.lo_base, e.lo, e.hi_base, e.hi) == ("u", 2, "v", -3)


def test_segment_label_windows(spec):
    assert tpl(spec, "seg").labels == [LabelRef("s", 0, 0, L(16, 17), "j")]
    assert tpl(spec, "trans").labels == [LabelRef("s", -1, 0, L(17, 17), "j")]
    assert tpl(spec, "ho").labels == [LabelRef("s", -2, 0, L(18, 17), "j")]
    assert tpl(spec, "ho").patterns == PatternSpec("observed_upto", [], L(18, 27))
    assert tpl(spec, "ex").patterns == PatternSpec("list", [("NP", "VP"), ("O", "NP")], L(19, 27))
    assert tpl(spec, "pair").labels == [LabelRef("s", -1, -1, L(20, 18), "j"),
                                        LabelRef("s", 0, 0, L(20, 26), "j")]
    assert [n.name for n in tpl(spec, "seg").observations] == ["first", "last", "before", "after",
                                                               "inside", "len"]
    t = parse_spec("template a: y[t-1..t]", F).templates[0]
    assert t.labels == [LabelRef("y", -1, 0, L(1, 13), "t")]


def test_new_words_are_keywords_only_where_they_stand():
    text = ("columns u, v, j, segments, max, from, length, chunk\noutput chunk\n"
            "obs max = u[t] & v[t-1] & j[t] & segments[t] & from[t]\ntemplate from: chunk[t] ~ max")
    s = parse_spec(text, F)
    assert [c.name for c in s.columns][:6] == ["u", "v", "j", "segments", "max", "from"]
    assert s.observations[0].name == "max" and s.templates[0].name == "from"
    assert s.segments is None


def test_full_spec_validates(spec):
    assert check_spec(spec) == []
    bio = (SPEC.replace('segments max 6 [NP = 8, "VP" = 4] from change',
                        "segments max 6 [NP = 8, VP = 4]")
           .replace("[NP VP O]", "[B-NP I-NP B-VP I-VP O]"))
    assert validate(parse_spec(bio, F)) is not None


# ---------------------------------------------------------------- syntax errors

def syntax_error(text: str) -> SpecError:
    return spec_errors.syntax_error(text, F)


def at(e: SpecError, line: int, col: int, *words: str) -> None:
    assert_at(e, F, line, col, words)


def test_second_segments_statement():
    at(syntax_error("segments max 3\nsegments max 4"), 2, 1, "second `segments`", "1:1")


def test_per_label_limit_given_twice():
    at(syntax_error('segments max 3 [NP = 1, "NP" = 2]'), 1, 25, "'NP'", "twice", "1:17")


def test_per_label_limit_needs_equals():
    at(syntax_error("segments max 3 [NP 2]"), 1, 20, "unexpected '2'", "'='")


def test_segments_max_needs_a_number():
    at(syntax_error("segments max x"), 1, 14, "unexpected 'x'", "a number")


def test_segments_from_needs_a_name():
    at(syntax_error("segments max 6 from"), 1, 20, "end of file", "a name")


def test_column_cannot_be_read_at_j():
    # j (an end of a pair template) parses since general CRFs; the checker rejects it elsewhere
    expr = parse_spec("obs o = word[j]", F).observations[0].expr
    assert expr == ColumnRef("word", 0, 0, L(1, 9), "j", "j")
    errs = check_spec(parse_spec("obs o = word[j]", F))
    e = next(e for e in errs if "word[j]" in e.message)
    at(e, 1, 9, "pair template", "word[t]")
    at(syntax_error("obs o = word[k]"), 1, 14, "unexpected 'k'", "'t'", "'u'", "'v'")


def test_label_window_keeps_one_base():
    at(syntax_error("template a: s[t..j]"), 1, 18, "unexpected 'j'", "'t'")
    at(syntax_error("template a: s[j-1..t]"), 1, 20, "unexpected 't'", "'j'")


def test_label_window_cannot_use_u():
    at(syntax_error("template a: s[u]"), 1, 15, "unexpected 'u'", "'j'", "'t'")


def test_statement_list_names_segments():
    at(syntax_error("columns a b"), 1, 11, "segments")


# ---------------------------------------------------------------- checks

SEG = """columns word, chunk
output chunk
labels chunk = [B-NP I-NP B-VP I-VP O]
segments max 6
"""
NON = """columns word, chunk
output chunk
template base: y[t]
"""


def errors(src: str, base: str) -> list[SpecError]:
    return check_errors(base + src)


def only(src: str, base: str = SEG) -> SpecError:
    return one_error(errors(src, base))


def at_m(e: SpecError, line: int, col: int, *words: str) -> None:
    assert_at(e, CHECK_FILE, line, col, words)


def seg_header(line: str) -> str:
    return SEG.replace("segments max 6", line)


def test_token_template_in_segment_model():
    at_m(only("template a: y[t-1..t]"), 5, 13, "in a segment model", "s[j-k..j]", "found y[t-1..t]")


def test_mixed_tuple_in_segment_model():
    at_m(only("template a: (s[j-1], y[t])"), 5, 22, "in a segment model", "s[j-k..j]", "found y[t]")


def test_token_column_in_segment_model():
    at_m(only("template a: s[j] ~ word[t-1]"), 5, 20, "in a segment model",
         "word[u] (first token)", "word[v] (last)", "word[u-1] (before)", "word[v+1] (after)",
         "word[u..v] (inside)", "found word[t-1]")


def test_token_column_in_named_observation_of_segment_model():
    at_m(only("obs w = lower(word[t])\ntemplate a: s[j] ~ w"), 5, 15,
         "in a segment model", "found word[t]")


def test_segment_labels_must_be_s():
    at_m(only("template a: chunk[j]"), 5, 13, "written s", "found chunk[j]")


def test_segment_window_must_end_at_j():
    at_m(only("template a: s[j-2..j-1]"), 5, 13, "must end at j", "s[j-2..j]", "found s[j-2..j-1]")


def test_segment_window_reversed():
    at_m(only("template a: s[j..j-1]"), 5, 13,
         "bad offset range j..j-1", "start must not come after the end")


def test_noncontiguous_segment_tuple():
    e = only("template a: (s[j-2], s[j])")
    at_m(e, 5, 14, NONCONTIGUOUS_SEGMENT_WINDOW.format(labels="(s[j-2], s[j])"))
    assert errors("template a: (s[j-2..j-1], s[j])", SEG) == []


def test_segment_pattern_labels_use_segment_names():
    at_m(only("template a: s[j-1..j] patterns [NP B-VP]"), 5, 36, "unknown label 'B-VP'",
         "segment labels", "without B-/I-", "NP, VP, O", "did you mean 'VP'")


def test_segment_pattern_longer_than_window():
    at_m(only("template a: s[j-1..j] patterns [NP VP O]"), 5, 32,
         "3 labels", "s[j-1..j]", "only 2 positions")


def test_max_must_be_positive_whole_number():
    at_m(only("template a: s[j]", seg_header("segments max 0")), 4, 14,
         "max must be a whole number > 0", "found 0")
    at_m(only("template a: s[j]", seg_header("segments max 2.5")), 4, 14,
         "max must be", "found 2.5")
    at_m(only("template a: s[j]", seg_header("segments max -3")), 4, 14, "max must be", "found -3")


def test_per_label_limit_must_be_positive_whole_number():
    e = only("template a: s[j]", seg_header("segments max 6 [NP = 0]"))
    at_m(e, 4, 22, "maximum length of 'NP'", "a whole number > 0", "found 0")
    e = only("template a: s[j]", seg_header("segments max 6 [NP = 1.5]"))
    at_m(e, 4, 22, "maximum length of 'NP'", "found 1.5")
    # larger than max is allowed, up to the limit of `segments max`
    assert errors("template a: s[j]", seg_header("segments max 2 [NP = 9]")) == []
    e = only("template a: s[j]", seg_header("segments max 6 [NP = 1001]"))
    at_m(e, 4, 22, "maximum length 1001 of 'NP'", "limit of 1000 tokens")


def test_max_has_a_limit():
    e = only("template a: s[j]", seg_header("segments max 1000000"))
    at_m(e, 4, 14, "max 1000000", "limit of 1000 tokens")
    assert errors("template a: s[j]", seg_header("segments max 1000")) == []


def test_unknown_boundary():
    e = only("template a: s[j]", seg_header("segments max 6 from bi"))
    at_m(e, 4, 21, "unknown segment boundary 'bi'", "from bio", "from change", "did you mean 'bio'")


def test_per_label_name_must_be_a_segment_label():
    e = only("template a: s[j]", seg_header("segments max 6 [NP = 2, PP = 3]"))
    at_m(e, 4, 25, "unknown label 'PP'", "segment labels", "NP, VP, O")
    # with `from bio` a B- label is not a segment label; with `from change` it is
    e = only("template a: s[j]", seg_header("segments max 6 [B-NP = 2]"))
    at_m(e, 4, 17, "unknown label 'B-NP'", "did you mean 'NP'")
    assert errors("template a: s[j]", seg_header("segments max 6 [B-NP = 2] from change")) == []
    # without declared labels there is nothing to check against
    no_labels = SEG.replace("labels chunk = [B-NP I-NP B-VP I-VP O]\n", "")
    per_label = no_labels.replace("segments max 6", "segments max 6 [PP = 3]")
    assert errors("template a: s[j]", per_label) == []


def test_segment_template_needs_segments():
    at_m(only("template a: s[j-1..j]", NON), 4, 13, "segment labels s[j-1..j]", "segments max L")


def test_segment_columns_need_segments():
    at_m(only("obs a = word[u-1]", NON), 4, 9, "word[u-1]", "segment", "segments max L", "word[t]")
    at_m(only("obs a = word[u..v]", NON), 4, 9, "word[u..v]", "segments max L")


def test_length_needs_segments():
    at_m(only("obs a = length", NON), 4, 9, "'length'", "segments max L")


def test_s_at_t_hints_at_segments():
    at_m(only("template a: s[t]", NON), 4, 13, "'s' is not an output", "segments max L")


def test_length_takes_no_argument():
    at_m(only("template a: s[j] ~ length(word[u])"), 5, 20,
         "'length' takes no argument", "write it bare: length")


@pytest.mark.parametrize("ref, col_text", [("word[v..u]", "v..u"), ("word[u+2..u]", "u+2..u"),
                                           ("word[v+1..u]", "v+1..u"),
                                           ("word[v-1..v-2]", "v-1..v-2")])
def test_range_start_after_end(ref, col_text):
    at_m(only(f"template a: s[j] ~ {ref}"), 5, 20, f"bad offset range {col_text}",
         "start must not come after the end")


def test_range_of_ambiguous_order():
    at_m(only("template a: s[j] ~ word[v-1..u+1]"), 5, 20, "bad offset range v-1..u+1",
         "ranges between u and v must run from a u-based to a v-based end or keep one base")


def test_good_ranges():
    src = ("template a: s[j] ~ word[u..v], word[u-1..v+1], word[u+1..v-1], word[u..u+2], "
           "word[v-2..v]")
    assert errors(src, SEG) == []
