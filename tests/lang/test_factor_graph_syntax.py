"""General CRF syntax (Sutton & McCallum): several label layers, hidden layers, skip
(pair) templates with `where`/`within`, graph-structured input, inference
settings; the exact AST of each and every check that goes with them."""
from __future__ import annotations

import pickle

import pytest
from support import spec_errors
from support.spec_errors import CHECK_FILE, assert_at, check_errors, one_error

from fgl.errors import SpecError
from fgl.lang.ast import (
    Call,
    ColumnRef,
    Conj,
    Hidden,
    LabelRef,
    Loc,
    NameRef,
    PatternSpec,
    Predicate,
    Setting,
)
from fgl.lang.checks import REPEATED_LABEL, check_spec, validate
from fgl.lang.parser import parse_spec

F = "gen.fgl"


def L(line: int, col: int) -> Loc:
    return Loc(F, line, col)


def tpl(spec, name):
    return next(t for t in spec.templates if t.name == name)


# ---------------------------------------------------------------- AST: layers, hidden, skip edges

# line 10 of LAYERS: one spec line, too long to write on one line here
SKIP_LINE = ('template skip: (pos[i], pos[j]) where word[i] == word[j] '
             'and regex(word[i], "^[A-Z]") and j - i <= 200 within document '
             '~ either(lower(word[t]))')

LAYERS = f'''\
columns word, pos, chunk
output pos, chunk
hidden z = [z0 z1 z2]
template pos_state:   pos[t] ~ word[t]
template chunk_trans: chunk[t-1..t]
template cross:       (pos[t], chunk[t]) ~ word[t]
template cross2:      (pos[t-1], chunk[t])
template zp:          (z[t], pos[t])
template zz:          z[t-1..t]
{SKIP_LINE}
template skip2: (chunk[i], chunk[j]) where word[i-1] != word[j+1] ~ word[i] & word[j], bias
template skip3: (chunk[i], chunk[j]) within sentence
infer loopy(damping = 0.5, max_iter = 100, tol = 1e-6)
'''


@pytest.fixture(scope="module")
def layers():
    return parse_spec(LAYERS, F)


def test_layers_spec_validates(layers):
    assert check_spec(layers) == []


def test_several_outputs_and_hidden_layer(layers):
    assert layers.outputs == ["pos", "chunk"] and layers.output_locs == [L(2, 8), L(2, 13)]
    assert layers.hidden == [Hidden("z", ["z0", "z1", "z2"], L(3, 1))]
    h = layers.hidden[0]
    assert h.name.loc == L(3, 8) and h.labels[1].loc == L(3, 16)
    assert layers.input_format == "conll"


def test_cross_layer_tuples(layers):
    assert tpl(layers, "pos_state").labels == [LabelRef("pos", 0, 0, L(4, 23))]
    assert tpl(layers, "chunk_trans").labels == [LabelRef("chunk", -1, 0, L(5, 23))]
    assert tpl(layers, "cross").labels == [LabelRef("pos", 0, 0, L(6, 24)),
                                           LabelRef("chunk", 0, 0, L(6, 32))]
    assert tpl(layers, "cross").observations == [ColumnRef("word", 0, 0, L(6, 44))]
    assert tpl(layers, "cross2").labels == [LabelRef("pos", -1, -1, L(7, 24)),
                                            LabelRef("chunk", 0, 0, L(7, 34))]
    assert tpl(layers, "zp").labels == [LabelRef("z", 0, 0, L(8, 24)),
                                        LabelRef("pos", 0, 0, L(8, 30))]
    assert tpl(layers, "zz").labels == [LabelRef("z", -1, 0, L(9, 23))]


def test_chain_templates_have_empty_where(layers):
    t = tpl(layers, "cross")
    assert t.where == [] and t.within is None


def test_skip_template_exact_ast(layers):
    t = tpl(layers, "skip")
    assert t.labels == [LabelRef("pos", 0, 0, L(10, 17), index="i"),
                        LabelRef("pos", 0, 0, L(10, 25), index="j")]
    assert t.where == [
        Predicate("eq", ColumnRef("word", 0, 0, L(10, 39), lo_base="i", hi_base="i"),
                  ColumnRef("word", 0, 0, L(10, 50), lo_base="j", hi_base="j"), None, L(10, 39)),
        Predicate("test",
                  Call("regex", ColumnRef("word", 0, 0, L(10, 68), "i", "i"), ["^[A-Z]"],
                       L(10, 62)),
                  None, None, L(10, 62)),
        Predicate("distance", None, None, 200, L(10, 91)),
    ]
    assert type(t.where[2].value) is not bool and t.where[2].value.loc == L(10, 100)
    assert t.within == "document" and t.within.loc == L(10, 111)
    assert t.observations == [
        Call("either", Call("lower", ColumnRef("word", 0, 0, L(10, 135)), [], L(10, 129)),
             [], L(10, 122))]
    assert t.patterns is None and t.options == []


def test_skip_template_not_equal_and_offsets(layers):
    t = tpl(layers, "skip2")
    assert t.where == [Predicate("ne", ColumnRef("word", -1, -1, L(11, 44), "i", "i"),
                                 ColumnRef("word", 1, 1, L(11, 57), "j", "j"), None, L(11, 44))]
    assert t.within is None
    assert t.observations == [Conj([ColumnRef("word", 0, 0, L(11, 69), "i", "i"),
                                    ColumnRef("word", 0, 0, L(11, 79), "j", "j")], L(11, 69)),
                              NameRef("bias", L(11, 88))]


def test_within_without_where(layers):
    t = tpl(layers, "skip3")
    assert t.where == [] and t.within == "sentence"
    assert [r.index for r in t.labels] == ["i", "j"]


def test_loopy_settings(layers):
    assert layers.infer_method == ("loopy", L(13, 1))
    assert layers.infer == [Setting("damping", 0.5, L(13, 13)), Setting("max_iter", 100, L(13, 28)),
                            Setting("tol", 1e-6, L(13, 44))]


@pytest.mark.parametrize("src, method, settings", [
    ("infer trp(trees = 4, max_iter = 50, tol = 1e-6)", "trp",
     [("trees", 4), ("max_iter", 50), ("tol", 1e-6)]),
    ("infer exact(max_states = 100000)", "exact", [("max_states", 100000)]),
    ("infer loopy(damping = 0.2)", "loopy", [("damping", 0.2)]),
])
def test_infer_methods(src, method, settings):
    s = parse_spec("columns word, y\noutput y\ntemplate a: y[t]\n" + src, F)
    assert s.infer_method[0] == method
    assert [(x.key, x.value) for x in s.infer] == settings
    assert check_spec(s) == []


def test_where_and_within_pickle_with_the_template(layers):
    t = pickle.loads(pickle.dumps(tpl(layers, "skip")))
    assert t.within == "document" and type(t.within) is str
    assert [p.kind for p in t.where] == ["eq", "test", "distance"] and type(t.where[2].value) is int


# ---------------------------------------------------------------- AST: graph input

# line 7 of GRAPH: one spec line, too long to write on one line here
SAME_LINE = ('template same: (label[a], label[b]) where edge(a, b, "cites") '
             'and venue[a] == venue[b] patterns [ML ML], [DB DB]')

GRAPH = f'''\
input graph
columns title, venue:text, year:number, label
output label
labels label = [ML DB]
template node: y[a] ~ tokens(title[a]), venue[a]
template cites: (y[a], y[b]) where edge(a, b, "cites") ~ bias
{SAME_LINE}
'''


@pytest.fixture(scope="module")
def graph():
    return parse_spec(GRAPH, F)


def test_graph_spec_validates(graph):
    assert check_spec(graph) == []


def test_graph_input_and_columns(graph):
    assert graph.input_format == "graph" and graph.input_format.loc == L(1, 7)
    assert [(c.name, c.kind) for c in graph.columns] == [("title", "text"), ("venue", "text"),
                                                         ("year", "number"), ("label", "text")]


def test_graph_templates_exact_ast(graph):
    node = tpl(graph, "node")
    assert node.labels == [LabelRef("y", 0, 0, L(5, 16), index="a")]
    assert node.observations == [
        Call("tokens", ColumnRef("title", 0, 0, L(5, 30), "a", "a"), [], L(5, 23)),
        ColumnRef("venue", 0, 0, L(5, 41), "a", "a")]
    assert node.where == [] and node.within is None
    cites = tpl(graph, "cites")
    assert cites.labels == [LabelRef("y", 0, 0, L(6, 18), index="a"),
                            LabelRef("y", 0, 0, L(6, 24), index="b")]
    assert cites.where == [Predicate("edge", None, None, "cites", L(6, 36))]
    assert cites.where[0].value.loc == L(6, 47)
    assert cites.observations == [NameRef("bias", L(6, 58))]
    same = tpl(graph, "same")
    assert same.where[1] == Predicate("eq", ColumnRef("venue", 0, 0, L(7, 67), "a", "a"),
                                      ColumnRef("venue", 0, 0, L(7, 79), "b", "b"), None, L(7, 67))
    assert same.patterns == PatternSpec("list", [("ML", "ML"), ("DB", "DB")], L(7, 88))


def test_input_conll_is_the_default():
    assert parse_spec("input conll", F).input_format == "conll"
    assert parse_spec("model m", F).input_format == "conll"


def test_new_words_are_names_where_a_name_is_expected():
    s = parse_spec("columns input, hidden, where, within, edge, i, a, b, y\noutput y\n"
                   "obs and = input[t] & hidden[t] & where[t] & within[t] & edge[t] "
                   "& i[t] & a[t] & b[t]\n"
                   "template within: y[t] ~ and", F)
    assert check_spec(s) == []
    assert s.observations[0].name == "and" and s.templates[0].name == "within"


# ---------------------------------------------------------------- syntax errors

def syntax_error(text: str) -> SpecError:
    return spec_errors.syntax_error(text, F)


def at(e: SpecError, line: int, col: int, *words: str) -> None:
    assert_at(e, F, line, col, words)


def test_second_input_statement():
    at(syntax_error("input graph\ninput graph"), 2, 1, "second `input`", "1:1")


def test_edge_names_a_then_b():
    at(syntax_error('template c: (y[a], y[b]) where edge(c, a, "x")'), 1, 37,
       "unexpected 'c'", "'a'")
    # edge(b, a, ...) parses (aggregates read a node's sources by it); a pair template refuses it
    spec = 'input graph\ncolumns w, y\noutput y\ntemplate c: (y[a], y[b]) where edge(b, a, "x")\n'
    e = one_error(check_errors(spec))
    assert_at(e, CHECK_FILE, 4, 32, ('write edge(a, b, "x")',))


def test_edge_needs_a_type():
    at(syntax_error("template c: (y[a], y[b]) where edge(a, b)"), 1, 41, "unexpected ')'", "','")


def test_distance_needs_a_whole_number():
    at(syntax_error("template s: (y[i], y[j]) where j - i <= x"), 1, 41,
       "unexpected 'x'", "a number")


def test_where_needs_a_predicate():
    at(syntax_error("template s: (y[i], y[j]) where ~ bias"), 1, 32,
       "unexpected '~'", "'edge'", "'j'")


def test_label_window_keeps_one_base():
    at(syntax_error("template s: y[i..j]"), 1, 18, "unexpected 'j'", "'i'")


def test_statement_list_names_input_and_hidden():
    at(syntax_error("columns a b"), 1, 11, "input", "hidden")


# ---------------------------------------------------------------- checks: pair templates

BASE = """columns word, x:number, chunk
output chunk
template base: y[t]
"""


def errors(src: str, base: str = BASE, base_dir=None) -> list[SpecError]:
    return check_errors(base + src, base_dir)


def only(src: str, base: str = BASE, base_dir=None) -> SpecError:
    return one_error(errors(src, base, base_dir))


def at_m(e: SpecError, line: int, col: int, *words: str) -> None:
    assert_at(e, CHECK_FILE, line, col, words)


def test_pair_template_needs_where():
    at_m(only("template s: (y[i], y[j]) ~ bias"), 4, 14,
         "a pair template (y[i], y[j]) needs a `where` clause saying which pairs are linked")


def test_pair_template_with_within_only_is_fine():
    assert errors("template s: (y[i], y[j]) within document") == []


def test_pair_template_shape():
    at_m(only("template s: (y[i], y[t]) where word[i] == word[j]"), 4, 14,
         "a pair template links two labels, at i and then at j", "found (y[i], y[t])")
    at_m(only("template s: (y[j], y[i]) where word[i] == word[j]"), 4, 14, "found (y[j], y[i])")
    at_m(only("template s: (y[i+1], y[j]) where word[i] == word[j]"), 4, 14, "found (y[i+1], y[j])")
    at_m(only("template s: y[i] where word[i] == word[j]"), 4, 13, "found y[i]")
    at_m(only("template s: y[t] within document"), 4, 13, "at i and then at j", "found y[t]")


def test_pair_template_over_two_layers():
    base = "columns word, pos, chunk\noutput pos, chunk\ntemplate base: pos[t]\n"
    at_m(only("template s: (pos[i], chunk[j]) where word[i] == word[j]", base), 4, 22,
         "two labels of one layer", "found (pos[i], chunk[j])")


def test_where_unknown_column():
    at_m(only("template s: (y[i], y[j]) where wrod[i] == word[j]"), 4, 32,
         "unknown column 'wrod'", "did you mean 'word'")


def test_where_output_column():
    at_m(only("template s: (y[i], y[j]) where word[i] == chunk[j]"), 4, 43,
         "'chunk' is an output (label) column", "input columns")


def test_where_reads_at_i_or_j():
    at_m(only("template s: (y[i], y[j]) where word[t] == word[j]"), 4, 32,
         "a `where` clause reads columns at the pair's ends", "word[i] == word[j]", "found word[t]")


def test_where_cannot_use_a_named_observation():
    at_m(only("obs w = word[t]\ntemplate s: (y[i], y[j]) where w"), 5, 32,
         "named observation 'w'", "read at t")


def test_where_range_over_i_and_j():
    at_m(only("template s: (y[i], y[j]) where word[i..j] == word[j]"), 4, 32,
         "bad offset range word[i..j]", "cannot be combined")


def test_distance_must_be_positive():
    at_m(only("template s: (y[i], y[j]) where j - i <= 0"), 4, 41,
         "`j - i <= N` needs a whole number N >= 1", "found 0")
    at_m(only("template s: (y[i], y[j]) where j - i <= -5"), 4, 41, "found -5")
    assert errors("template s: (y[i], y[j]) where j - i <= 1") == []


def test_where_regex_and_lexicon_are_checked_as_in_obs(tmp_path):
    at_m(only('template s: (y[i], y[j]) where regex(word[i], "[A")'), 4, 47,
         "bad regular expression '[A'")
    at_m(only('template s: (y[i], y[j]) where regex(word[i])'), 4, 32, "regex() takes 1 parameter")
    e = only('template s: (y[i], y[j]) where lexicon(word[j], "no.txt")', base_dir=tmp_path)
    at_m(e, 4, 49, "lexicon file 'no.txt' not found")
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    e = only('template s: (y[i], y[j]) where lexicon(word[j], "latin.txt")', base_dir=tmp_path)
    at_m(e, 4, 49, "lexicon file 'latin.txt' is not UTF-8 text", "save it as UTF-8")


def test_edge_needs_input_graph():
    at_m(only('template s: (y[i], y[j]) where edge(a, b, "cites")'), 4, 32,
         "edge(a, b, ...) links nodes of a graph", "declare `input graph`")


def test_nearest_predicate():
    src = "template s: (y[i], y[j]) where word[i] == word[j] and nearest within document"
    t = [t for t in parse_spec(BASE + src + "\n", "<t>").templates if t.name == "s"][0]
    assert [p.kind for p in t.where] == ["eq", "nearest"] and t.where[1].loc.col == 55
    assert errors(src) == []
    at_m(only('template c: (y[a], y[b]) where edge(a, b, "x") and nearest', G), 5, 52,
         "`nearest` picks the closest following position in a sequence",
         'edge(a, b, "type")')


def test_within_scope():
    at_m(only("template s: (y[i], y[j]) where word[i] == word[j] within doc"), 4, 58,
         "unknown scope 'doc' for `within`", "sentence", "document")


def test_pair_observation_at_t():
    at_m(only("template s: (y[i], y[j]) within document ~ word[t]"), 4, 44,
         "in a pair template, read columns at its ends", "either(", "found word[t]")


def test_pair_observation_named_or_bos():
    at_m(only("obs w = word[t]\ntemplate s: (y[i], y[j]) within document ~ w"), 5, 44,
         "named observation 'w' is read at t", "either(w)")
    at_m(only("template s: (y[i], y[j]) within document ~ eos"), 4, 44,
         "'eos' is read at t", "either(eos)")
    assert errors("obs w = word[t] & bos\n"
                  "template s: (y[i], y[j]) within document ~ either(w), either(bos)") == []


def test_either_must_be_written_with_t():
    at_m(only("template s: (y[i], y[j]) within document ~ either(word[i])"), 4, 51,
         "either(...) applies its expression at both ends", "write it with t", "found word[i]")
    at_m(only("template s: (y[i], y[j]) within document ~ either(word[u])"), 4, 51,
         "write it with t", "found word[u]")


def test_either_outside_a_pair_template():
    at_m(only("template s: y[t] ~ either(word[t])"), 4, 20,
         "either(...) is only for the observations of a pair template")
    at_m(only("obs e = either(word[t])"), 4, 9, "either(...) is only for")
    at_m(only("template s: (y[i], y[j]) within document ~ either(either(word[t]))"), 4, 51,
         "either(...) is only for")


def test_either_takes_no_parameters():
    at_m(only("template s: (y[i], y[j]) within document ~ either(word[t], 2)"), 4, 44,
         "either() takes no parameters")


def test_either_keeps_its_expression_kind():
    at_m(only("template s: (y[i], y[j]) within document ~ lower(either(value(x[t])))"), 4, 50,
         "lower() needs a text column", "numbers")


def test_i_and_j_outside_a_pair_template():
    at_m(only("template s: y[t] ~ word[j+1]"), 4, 20, "word[j+1] reads an end of a pair template",
         "as in word[t]")


def test_segments_and_pair_templates_cannot_be_combined():
    base = "columns word, chunk\noutput chunk\nsegments max 4\n"
    at_m(only("template s: (s[i], s[j]) where word[i] == word[j]", base), 4, 14,
         "segments and pair templates cannot be combined")


def test_pair_patterns_are_checked():
    base = BASE.replace("output chunk", "output chunk\nlabels chunk = [B I O]")
    at_m(only("template s: (y[i], y[j]) within document patterns [B I O]", base), 5, 51,
         "pattern [B I O] has 3 labels", "only 2 positions")
    at_m(only("template s: (y[i], y[j]) within document patterns [B X]", base), 5, 54,
         "unknown label 'X'")


# ---------------------------------------------------------------- checks: layers and hidden

LAYERS_BASE = "columns word, pos, chunk\noutput pos, chunk\ntemplate base: pos[t]\n"


def test_cross_layer_tuples_are_fine():
    assert errors("template c: (pos[t-2], chunk[t])\n"
                  "template d: (pos[t], chunk[t-1], pos[t+1])", LAYERS_BASE) == []


def test_cross_layer_tuple_names_a_variable_once():
    e = only("template c: (pos[t], chunk[t], pos[t-1..t])", LAYERS_BASE)
    at_m(e, 4, 14, REPEATED_LABEL.format(labels="(pos[t], chunk[t], pos[t-1..t])", ref="pos[t]"))


def test_one_layer_gapped_tuple_is_a_clique():
    assert errors("template c: (pos[t-2], pos[t])", LAYERS_BASE) == []
    e = only("template c: (pos[t-2], pos[t-2..t])", LAYERS_BASE)
    at_m(e, 4, 14, REPEATED_LABEL.format(labels="(pos[t-2], pos[t-2..t])", ref="pos[t-2]"))


def test_cross_layer_reversed_range():
    at_m(only("template c: (pos[t..t-1], chunk[t])", LAYERS_BASE), 4, 14, "bad offset range t..t-1")


def test_y_ambiguous_with_several_outputs():
    at_m(only("template c: (y[t], chunk[t])", LAYERS_BASE), 4, 14, "'y' is ambiguous", "pos, chunk")


def test_label_var_must_be_output_or_hidden():
    base = "columns word, chunk\noutput chunk\nhidden z = [a b]\ntemplate base: (z[t], y[t])\n"
    at_m(only("template c: q[t-1..t]", base), 5, 13,
         "'q' is not an output", "y or an output: chunk", "or a hidden layer: z")


HIDDEN_BASE = "columns word, chunk\noutput chunk\ntemplate base: y[t]\n"


def test_hidden_layer_templates_are_fine():
    assert errors("hidden z = [z0 z1 z2]\ntemplate zy: (z[t], y[t])\n"
                  "template zz: z[t-1..t] patterns [z0 z1]\n"
                  "template zw: z[t] ~ word[t]", HIDDEN_BASE) == []


def test_hidden_window_rule_and_patterns():
    assert errors("hidden z = [z0 z1]\ntemplate zz: (z[t-2], z[t])", HIDDEN_BASE) == []
    at_m(only("hidden z = [z0 z1]\ntemplate zz: (z[t], z[t])", HIDDEN_BASE), 5, 15,
         "name z[t] twice")
    at_m(only("hidden z = [z0 z1]\ntemplate zz: z[t-1..t] patterns [z0 z9]", HIDDEN_BASE), 5, 37,
         "unknown label 'z9'", "z0, z1")


def test_hidden_name_clashes_with_column():
    at_m(only("hidden word = [a b]", HIDDEN_BASE), 4, 8,
         "hidden layer 'word' clashes with the column 'word'", "1:9")
    at_m(only("hidden chunk = [a b]", HIDDEN_BASE), 4, 8, "clashes with the output 'chunk'")


def test_hidden_name_clashes_with_y():
    at_m(only("hidden y = [a b]", HIDDEN_BASE), 4, 8, "hidden layer 'y' clashes with y")


def test_duplicate_hidden_layer():
    at_m(only("hidden z = [a b]\nhidden z = [c d]", HIDDEN_BASE), 5, 8,
         "duplicate hidden layer 'z'", "4:1")


def test_hidden_needs_two_labels():
    at_m(only("hidden z = [a]", HIDDEN_BASE), 4, 1,
         "hidden layer 'z' needs at least 2 labels", "found 1")
    at_m(only("hidden z = []", HIDDEN_BASE), 4, 1, "found 0")


def test_hidden_duplicate_label():
    at_m(only("hidden z = [a b a]", HIDDEN_BASE), 4, 17, "duplicate label 'a' in hidden layer 'z'")


def test_hidden_cannot_be_an_output():
    base = "columns word, chunk\noutput chunk, z\ntemplate base: chunk[t]\n"
    at_m(only("hidden z = [a b]", base), 2, 15, "'z' is a hidden layer", "cannot be an `output`")


def test_labels_statement_for_hidden_layer():
    at_m(only("hidden z = [a b]\nlabels z = [a b]", HIDDEN_BASE), 5, 8,
         "`labels z`", "hidden layer", "given in `hidden z = [...]`", "4:1")


def test_hidden_with_segments():
    base = "columns word, chunk\noutput chunk\nsegments max 3\ntemplate base: s[j]\n"
    at_m(only("hidden z = [a b]", base), 5, 1, "hidden layers cannot be combined with `segments`")


# ---------------------------------------------------------------- checks: graph input

G = """input graph
columns title, venue, year:number, label
output label
template base: y[a]
"""


def test_graph_templates_are_fine():
    assert errors('template c: (y[a], y[b]) where edge(a, b, "cites") and venue[a] != venue[b] '
                  'and regex(title[b], "^A") '
                  '~ tokens(title[a]) & venue[b], value(year[a]), bias', G) == []
    assert errors("obs t = tokens(title[a])\ntemplate n: y[a] ~ t", G) == []


def test_graph_template_over_t():
    at_m(only("template c: y[t-1..t]", G), 5, 13,
         "in a graph model (`input graph`) templates range over nodes",
         "y[a]", "edge(a, b", "found y[t-1..t]")
    at_m(only('template c: (y[i], y[j]) where edge(a, b, "x")', G), 5, 14,
         "templates range over nodes", "found y[i]")


def test_graph_pair_needs_edge():
    at_m(only("template c: (y[a], y[b]) ~ bias", G), 5, 14,
         "a pair template (y[a], y[b]) needs a `where` clause", 'edge(a, b, "type")')
    at_m(only("template c: (y[a], y[b]) where venue[a] == venue[b]", G), 5, 14, "edge(a, b")


def test_graph_pair_shape():
    at_m(only('template c: (y[b], y[a]) where edge(a, b, "x")', G), 5, 14,
         "a and then b", "found (y[b], y[a])")
    at_m(only('template c: y[b]', G), 5, 13, "a one-node template labels its node a", "found y[b]")


def test_graph_label_offset():
    at_m(only("template c: y[a+1]", G), 5, 13,
         "a graph node has no neighbours by offset", "found y[a+1]")


def test_graph_column_offset():
    at_m(only("template c: y[a] ~ title[a-1]", G), 5, 20,
         "a graph node has no neighbours by offset", "use an edge template", "found title[a-1]")


def test_graph_column_at_t_u_v_i_j():
    for ref in ("title[t]", "title[u]", "title[v]", "title[i]", "title[j+1]"):
        at_m(only(f"template c: y[a] ~ {ref}", G), 5, 20,
             "read node attributes at a node", f"found {ref}")


def test_graph_column_at_b_in_node_template():
    at_m(only("template c: y[a] ~ title[b]", G), 5, 20, "reads node b", "pair template")


def test_graph_where_on_one_node():
    at_m(only('template c: y[a] where edge(a, b, "x")', G), 5, 24,
         "a `where` clause belongs to a pair template")


def test_graph_distance_and_within():
    at_m(only('template c: (y[a], y[b]) where edge(a, b, "x") and j - i <= 3', G), 5, 52,
         "j - i <= N measures positions", "edge(a, b")
    at_m(only('template c: (y[a], y[b]) where edge(a, b, "x") within document', G), 5, 55,
         "`within` bounds the pairs of a sequence")


def test_graph_edge_type_not_empty():
    at_m(only('template c: (y[a], y[b]) where edge(a, b, "")', G), 5, 43, "needs the edge type")


def test_graph_either_and_bos():
    at_m(only('template c: (y[a], y[b]) where edge(a, b, "x") ~ either(title[a])', G), 5, 50,
         "either(...) is only for", "title[a] | title[b]")
    at_m(only("template c: y[a] ~ bos", G), 5, 20, "'bos' marks an end of a sequence")


def test_graph_named_observation_at_t():
    at_m(only("obs t = title[t]", G), 5, 9, "read node attributes at a node", "found title[t]")


def test_graph_and_segments():
    at_m(only("segments max 3", G), 5, 1, "`segments` cannot be used with `input graph`")


def test_node_refs_need_input_graph():
    at_m(only("template c: y[a] ~ bias"), 4, 13,
         "y[a] labels a graph node", "declare `input graph`")
    at_m(only("template c: y[t] ~ word[a]"), 4, 20,
         "word[a] reads a graph node", "declare `input graph`")


def test_unknown_input_format():
    at_m(only("", "input jsonl\n" + BASE), 1, 7,
         "unknown input format 'jsonl'", "input conll", "input graph")


# ---------------------------------------------------------------- checks: inference

@pytest.mark.parametrize("src, col, words", [
    ("infer loopy(damping = 1.0)", 13, ["damping must be a number d with 0 <= d < 1", "found 1.0"]),
    ("infer loopy(damping = -0.1)", 13, ["damping must be"]),
    ("infer loopy(max_iter = 0)", 13, ["max_iter must be a whole number > 0"]),
    ("infer loopy(tol = 0)", 13, ["tol must be a positive number"]),
    ("infer loopy(schedule = random)", 13, ["setting 'schedule' is not available"]),
    ("infer trp(trees = 0)", 11, ["trees must be a whole number > 0"]),
    ("infer trp(trees = 2.5)", 11, ["trees must be a whole number > 0", "found 2.5"]),
    ("infer trp(max_iter = -1)", 11, ["max_iter must be a whole number > 0"]),
    ("infer trp(tol = -1e-6)", 11, ["tol must be a positive number"]),
    ("infer exact(max_states = 0)", 13, ["max_states must be a whole number > 0"]),
    ("infer exact(max_states = 1e5)", 13,
     ["max_states must be a whole number > 0", "found 100000.0"]),
    ("infer exact(tol = 1)", 13, ["unknown setting 'tol' for infer exact", "max_states"]),
])
def test_infer_bad_settings(src, col, words):
    at_m(only(src), 4, col, *words)


def test_loopy_specs_need_no_infer_statement():
    for src in ("template s: (y[i], y[j]) where word[i] == word[j]",
                "hidden z = [a b]\ntemplate zy: (z[t], y[t])"):
        assert errors(src) == []
        assert errors(src + "\ninfer loopy") == []
        assert errors(src + "\ninfer trp(trees = 2)") == []
        assert errors(src + "\ninfer exact(max_states = 1000)") == []
    assert validate(parse_spec(GRAPH, F)) is not None


def test_no_lark_exception_escapes_on_any_prefix():
    for text in (LAYERS, GRAPH):
        for cut in range(len(text) + 1):
            try:
                spec = parse_spec(text[:cut], F)
            except SpecError as e:
                assert e.line >= 1 and e.col >= 1
            else:
                check_spec(spec)            # never raises, whatever the prefix
