"""The spec parser: every construct into its exact AST, and syntax errors
that say where, what was found and what was expected."""
from __future__ import annotations

import dataclasses
import pickle

import pytest
from support.specs import EVERY_CONSTRUCT

from fgl.errors import FglError, SpecError
from fgl.lang.ast import (
    Call,
    Column,
    ColumnRef,
    Conj,
    Disj,
    LabelRef,
    Loc,
    NameRef,
    ObsDef,
    PatternSpec,
    Setting,
    Spec,
    Template,
)
from fgl.lang.parser import parse_spec, read_spec

F = "ex.fgl"


def L(line: int, col: int) -> Loc:
    return Loc(F, line, col)


def noloc(node):
    """The node as plain data without its Locs, to compare structure alone."""
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple(
            noloc(getattr(node, f.name)) for f in dataclasses.fields(node) if f.name != "loc")
    if isinstance(node, (list, tuple)):
        items = (noloc(x) for x in node)
        return type(node)(items) if isinstance(node, list) else tuple(items)
    return node


def parse_expr(src: str):
    return parse_spec(f"obs o = {src}", F).observations[0].expr


@pytest.fixture(scope="module")
def spec() -> Spec:
    return parse_spec(EVERY_CONSTRUCT, F)


# ---------------------------------------------------------------- whole example

def test_header_statements(spec):
    assert spec.file == F and spec.text == EVERY_CONSTRUCT
    assert spec.name == "CoNLL-2000 chunker"
    assert spec.columns == [Column("word", "text", L(3, 9)), Column("pos", "text", L(3, 15)),
                            Column("x1", "number", L(3, 20)), Column("pix", "vector", L(3, 31)),
                            Column("chunk", "text", L(3, 43))]
    assert spec.outputs == ["chunk"] and spec.output_locs == [L(4, 8)]
    assert spec.label_sets == {"chunk": (["B-NP", "I-NP", "O", ",", "."], L(5, 1))}


def test_observations_exact_ast(spec):
    obs = {d.name: d for d in spec.observations}
    assert list(obs) == ["w", "ww", "lw", "suf", "cap", "lex", "x", "edge", "both"]
    assert obs["w"] == ObsDef("w", ColumnRef("word", -2, 2, L(7, 12)), L(7, 1))
    assert obs["ww"] == ObsDef("ww", Conj([ColumnRef("word", -1, -1, L(8, 12)),
                                           ColumnRef("word", 0, 0, L(8, 24))], L(8, 12)), L(8, 1))
    assert obs["suf"].expr == Call("suffix",
                                   Call("lower", ColumnRef("word", 0, 0, L(10, 25)), [], L(10, 19)),
                                   [3], L(10, 12))
    assert obs["cap"].expr == Call("regex", ColumnRef("word", 0, 0, L(11, 18)), ["^[A-Z]"],
                                   L(11, 12))
    assert noloc(obs["lw"].expr) == noloc(Call("lower", ColumnRef("word", 0, 0, None), [], None))
    assert noloc(obs["lex"].expr) == noloc(Call("lexicon", ColumnRef("word", 0, 0, None),
                                                ["names.txt"], None))
    assert noloc(obs["x"].expr) == noloc(Call("value", ColumnRef("x1", -1, 1, None), [], None))
    assert obs["edge"].expr == Disj([NameRef("bos", L(14, 12)), NameRef("eos", L(14, 18))],
                                    L(14, 12))
    assert obs["both"].expr == Conj([NameRef("w", L(15, 12)), NameRef("edge", L(15, 16))],
                                    L(15, 12))


def test_templates_exact_ast(spec):
    t = {tpl.name: tpl for tpl in spec.templates}
    assert list(t) == ["state", "trans", "ho", "ho3", "ex", "full", "skip"]
    assert t["state"] == Template(
        "state", [LabelRef("y", 0, 0, L(17, 17))], None,
        [NameRef("w", L(17, 24)), NameRef("ww", L(17, 27)), ColumnRef("pos", -1, 1, L(17, 31)),
         Call("lower", ColumnRef("word", 0, 0, L(17, 52)), [], L(17, 46))],
        [Setting("sigma", 5, L(17, 62)), Setting("support", "all", L(17, 73))], L(17, 1))
    assert t["trans"] == Template("trans", [LabelRef("y", -1, 0, L(18, 17))], None, [], [],
                                  L(18, 1))
    assert t["ho"].patterns == PatternSpec("observed", [], L(19, 27))
    assert t["ho3"].patterns == PatternSpec("observed_upto", [], L(20, 27))
    assert t["ho3"].labels == [LabelRef("y", -3, 0, L(20, 17))]
    assert t["ex"].patterns == PatternSpec("list", [("B-NP", "I-NP", "I-NP"), ("O", "B-NP")],
                                           L(21, 27))
    assert t["full"].patterns == PatternSpec("all", [], L(22, 27))
    assert noloc(t["full"].observations) == noloc(
        [Call("lower", ColumnRef("word", 0, 0, None), [], None)])
    assert t["skip"].labels == [LabelRef("y", -2, -2, L(23, 18)), LabelRef("y", 0, 0, L(23, 26))]
    assert t["skip"].patterns is None and t["skip"].observations == [] and t["skip"].options == []


def test_train_and_infer(spec):
    assert spec.train == [Setting("sigma", 10, L(26, 3)), Setting("max_iter", 200, L(27, 3)),
                          Setting("tol", 1e-6, L(28, 3))]
    assert isinstance(spec.train[0].value, int) and isinstance(spec.train[2].value, float)
    assert spec.infer_method == ("exact", L(30, 1)) and spec.infer == []


def test_infer_with_settings():
    s = parse_spec('infer loopy(damping = 0.5, max_iter = 100, schedule = residual, '
                   'tag = "a b")', F)
    assert s.infer_method == ("loopy", L(1, 1))
    assert noloc(s.infer) == noloc([Setting("damping", 0.5, None), Setting("max_iter", 100, None),
                                    Setting("schedule", "residual", None),
                                    Setting("tag", "a b", None)])
    assert parse_spec("infer trp()", F).infer_method[0] == "trp"


def test_setting_values_signed_and_float_forms():
    s = parse_spec("train { a = -3 b = +2 c = 2.5 d = .5 e = 1E3 f = -1e-2 g = 3. }", F)
    assert [x.value for x in s.train] == [-3, 2, 2.5, 0.5, 1000.0, -0.01, 3.0]
    assert [type(x.value) for x in s.train] == [int, int] + [float] * 5


# ---------------------------------------------------------------- expressions

@pytest.mark.parametrize("src, expected", [
    ("word[t]", ColumnRef("word", 0, 0, None)),
    ("word[t+2]", ColumnRef("word", 2, 2, None)),
    ("word[t - 1]", ColumnRef("word", -1, -1, None)),
    ("word[t-2..t+2]", ColumnRef("word", -2, 2, None)),
    ("word[t+1..t-1]", ColumnRef("word", 1, -1, None)),          # parsed; the checker reports it
    ("bias", NameRef("bias", None)),
    ("prefix(word[t], 3)", Call("prefix", ColumnRef("word", 0, 0, None), [3], None)),
    ('regex(word[t], "a\\"b\\\\c\\d")',
     Call("regex", ColumnRef("word", 0, 0, None), ['a"b\\c\\d'], None)),
    ("a | b & c",
     Disj([NameRef("a", None), Conj([NameRef("b", None), NameRef("c", None)], None)], None)),
    ("a & b | c & d", Disj([Conj([NameRef("a", None), NameRef("b", None)], None),
                            Conj([NameRef("c", None), NameRef("d", None)], None)], None)),
    ("(a | b) & c",
     Conj([Disj([NameRef("a", None), NameRef("b", None)], None), NameRef("c", None)], None)),
    ("a & b & c", Conj([NameRef("a", None), NameRef("b", None), NameRef("c", None)], None)),
    ("lower(a | b)", Call("lower", Disj([NameRef("a", None), NameRef("b", None)], None), [], None)),
    ("((a))", NameRef("a", None)),
])
def test_expressions(src, expected):
    assert noloc(parse_expr(src)) == noloc(expected)


def test_parenthesised_group_locs():
    e = parse_expr("(a | b) & c")
    assert e.loc == Loc(F, 1, 9)
    assert e.parts[0].loc == Loc(F, 1, 10) and e.parts[1].loc == Loc(F, 1, 19)


def test_template_options_versus_call():
    # `w (sigma = 1)` is options, `w(x)` a call; whitespace does not matter
    t = parse_spec("template a: y[t] ~ w (sigma = 1)\n"
                   "template b: y[t] ~ lower(w)(sigma=2)", F).templates
    assert noloc(t[0].observations) == noloc([NameRef("w", None)])
    assert noloc(t[0].options) == noloc([Setting("sigma", 1, None)])
    assert noloc(t[1].observations) == noloc([Call("lower", NameRef("w", None), [], None)])
    assert t[1].options[0].value == 2


def test_template_options_without_observations():
    t = parse_spec("template a: y[t-1..t] patterns all (support = observed)", F).templates[0]
    assert t.observations == [] and t.patterns.kind == "all"
    assert noloc(t.options) == noloc([Setting("support", "observed", None)])


def test_several_outputs_and_named_label_refs():
    s = parse_spec("columns w, pos, chunk output pos, chunk template t: (pos[t-1], pos[t])", F)
    assert s.outputs == ["pos", "chunk"] and s.output_locs == [Loc(F, 1, 30), Loc(F, 1, 35)]
    assert noloc(s.templates[0].labels) == noloc([LabelRef("pos", -1, -1, None),
                                                  LabelRef("pos", 0, 0, None)])


def test_model_name_may_be_a_bare_name():
    assert parse_spec("model chunker", F).name == "chunker"
    assert parse_spec("columns a", F).name is None


# ---------------------------------------------------------------- lexical details

def test_unicode_labels_names_and_strings():
    s = parse_spec('columns wört, étiq\noutput étiq\nlabels étiq = [B-人名 "日本 語" Ä]\n'
                   'obs ü = regex(wört[t], "^[ÄÖÜ]") '
                   'template t: y[t-1..t] patterns [B-人名 "日本 語"]', F)
    assert [c.name for c in s.columns] == ["wört", "étiq"]
    assert s.label_sets["étiq"][0] == ["B-人名", "日本 語", "Ä"]
    assert s.observations[0].name == "ü" and s.observations[0].expr.params == ["^[ÄÖÜ]"]
    assert s.templates[0].patterns.patterns == [("B-人名", "日本 語")]


def test_quoted_labels_may_hold_special_characters():
    s = parse_spec('labels y = [ "," "#" "[" "]" "(" ")" "\\"" a-b.c:d/e ]', F)
    assert s.label_sets["y"][0] == [",", "#", "[", "]", "(", ")", '"', "a-b.c:d/e"]


def test_comments_and_free_layout():
    s = parse_spec("columns a,\n  b  # the labels\n output b labels b = [x # no y\n z] "
                   "template t : y [ t - 1 .. t ]", F)
    assert [c.name for c in s.columns] == ["a", "b"]
    assert s.label_sets["b"][0] == ["x", "z"]
    assert noloc(s.templates[0].labels) == noloc([LabelRef("y", -1, 0, None)])


def test_keywords_are_names_where_a_name_is_expected():
    s = parse_spec("columns output, obs, t, y\noutput y\nobs template = output[t] & t[t]\n"
                   "obs all = template\ntemplate patterns: y[t] ~ all, obs[t]", F)
    assert [c.name for c in s.columns] == ["output", "obs", "t", "y"]
    assert [d.name for d in s.observations] == ["template", "all"]
    assert s.templates[0].name == "patterns"


def test_crlf_line_endings_and_locs():
    s = parse_spec("columns a, b\r\noutput b\r\n  obs x = a[t]\r\n", F)
    assert s.observations[0].loc == Loc(F, 3, 3)
    assert s.observations[0].expr.loc == Loc(F, 3, 11)


def test_empty_spec_parses():
    s = parse_spec("  # nothing\n", F)
    assert s.columns == [] and s.templates == [] and s.name is None and s.infer_method is None


def test_located_names_pickle_as_plain_values(spec):
    lab = spec.templates[4].patterns.patterns[0]
    assert lab.loc == L(21, 36) and lab[0].loc == L(21, 37)
    assert type(pickle.loads(pickle.dumps(lab))) is tuple
    assert type(pickle.loads(pickle.dumps(spec.observations[0].name))) is str


# ---------------------------------------------------------------- syntax errors

@pytest.mark.parametrize("src, line, col, words", [
    ("obs w = word[", 1, 14, ["end of file", "'t'", "'u'", "'i'", "'a'"]),
    ("obs 5 = x", 1, 5, ["unexpected '5'", "expected a name"]),
    ("columns a b", 1, 11, ["unexpected 'b'", "','", "':'", "a new statement"]),
    ("obs w = word[k]", 1, 14, ["unexpected 'k'", "'t'"]),
    ("obs w = word[t+x]", 1, 16, ["unexpected 'x'", "a whole number"]),
    ("labels y = [a, b]", 1, 14, ["unexpected ','", "']'", "a label", 'a "string"']),
    ('model "abc\ncolumns a', 1, 7, ['\'"\'', "not closed"]),
    ("columns a\n\ntemplate t: y[t] patterns some", 3, 27,
     ["unexpected 'some'", "'all'", "'observed'", "'['"]),
    ("template t: y[t] ~ w (sigma 5)", 1, 29, ["unexpected '5'"]),
    ("train { sigma = 1 ", 1, 18, ["end of file", "'}'", "a name"]),
    ("infer loopy(damping = )", 1, 23, ["unexpected ')'", "a number", "a name"]),
    ("obs w = word[t] %", 1, 17, ["unexpected '%'", "'&'", "'|'"]),
    ("output", 1, 7, ["end of file", "a name"]),
    ("columns a\n  , \n  ]", 3, 3, ["unexpected ']'", "a name"]),
    ("template t y[t]", 1, 12, ["unexpected 'y'", "':'"]),
])
def test_syntax_errors(src, line, col, words):
    with pytest.raises(SpecError) as info:
        parse_spec(src, "bad.fgl")
    e = info.value
    assert (e.file, e.line, e.col) == ("bad.fgl", line, col), str(e)
    assert str(e).startswith(f"bad.fgl:{line}:{col}: ")
    for w in words:
        assert w in e.message, e.message
    for lark_name in ("LSQB", "RSQB", "NAME", "__ANON", "$END", "COMMA"):
        assert lark_name not in e.message


@pytest.mark.parametrize("stmt", ["model m", "columns a", "train { }", "infer exact"])
def test_second_single_statement_is_an_error(stmt):
    with pytest.raises(SpecError) as info:
        parse_spec(f"{stmt}\nobs a = b\n  {stmt}", F)
    e = info.value
    assert (e.line, e.col) == (3, 3)
    assert f"a second `{stmt.split()[0]}` statement" in e.message and "first is at 1:1" in e.message


def test_second_label_set_for_one_output_is_an_error():
    with pytest.raises(SpecError) as info:
        parse_spec("labels c = [a]\nlabels c = [b]", F)
    assert (info.value.line, info.value.col) == (2, 1)
    assert "already declared at 1:1" in info.value.message


def test_no_lark_exception_escapes_on_any_prefix():
    for cut in range(len(EVERY_CONSTRUCT) + 1):
        try:
            parse_spec(EVERY_CONSTRUCT[:cut], F)
        except SpecError as e:
            assert e.line >= 1 and e.col >= 1


# ---------------------------------------------------------------- read_spec

def test_read_spec_missing_file(tmp_path):
    with pytest.raises(FglError) as info:
        read_spec(tmp_path / "nope.fgl")
    assert "nope.fgl" in str(info.value) and "not found" in str(info.value)


def test_read_spec_not_utf8(tmp_path):
    p = tmp_path / "bin.fgl"
    p.write_bytes(b"columns \xff")
    with pytest.raises(FglError) as info:
        read_spec(p)
    assert "UTF-8" in str(info.value)


def test_read_spec_parses_and_validates(tmp_path):
    (tmp_path / "names.txt").write_text("Alice\n", encoding="utf-8")
    p = tmp_path / "m.fgl"
    p.write_text(EVERY_CONSTRUCT.replace("template skip:  (y[t-2], y[t])", ""), encoding="utf-8")
    spec = read_spec(p)
    assert spec.file == str(p) and spec.name == "CoNLL-2000 chunker"
    p.write_text(EVERY_CONSTRUCT.replace("word[t-1] &", "wrod[t-1] &"), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        read_spec(p)
    assert str(info.value).startswith(f"{p}:8:12: unknown column 'wrod'")
