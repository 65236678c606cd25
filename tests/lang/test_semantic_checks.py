"""Semantic checks: each mistake reported at its token, with what was found
and what was expected; a correct spec passes with no errors."""
from __future__ import annotations

import pytest
from support.spec_errors import CHECK_FILE, assert_at, check_errors, one_error
from support.specs import EVERY_CONSTRUCT

from fgl.errors import SpecError
from fgl.lang.checks import REPEATED_LABEL, check_spec, validate
from fgl.lang.parser import parse_spec

# Three lines every snippet below builds on; snippets start at line 4.
BASE = """columns word, pos, x1:number, pix:vector, chunk
output chunk
template base: y[t]
"""


def errors(src: str, base_dir=None, base: str = BASE) -> list[SpecError]:
    return check_errors(base + src, base_dir)


def only(src: str, base_dir=None, base: str = BASE) -> SpecError:
    return one_error(errors(src, base_dir, base))


def at(e: SpecError, line: int, col: int, *words: str) -> None:
    assert_at(e, CHECK_FILE, line, col, words)


# ---------------------------------------------------------------- a correct spec

def test_full_example_validates(tmp_path):
    (tmp_path / "names.txt").write_text("Alice\nBob\n", encoding="utf-8")
    # its gapped template (y[t-2], y[t]) is a clique of the factor-graph engine
    for text in (EVERY_CONSTRUCT, EVERY_CONSTRUCT.replace("template skip:  (y[t-2], y[t])",
                                          "template pair: (y[t-1], y[t])")):
        spec = parse_spec(text, "ex.fgl")
        assert check_spec(spec, tmp_path) == []
        assert validate(spec, tmp_path) is spec


def test_validate_raises_the_first_error_in_source_order():
    spec = parse_spec(BASE + "obs b = nope2\nobs a = nope1", "m.fgl")
    with pytest.raises(SpecError) as info:
        validate(spec)
    at(info.value, 4, 9, "'nope2'")
    assert [(e.line, e.col) for e in check_spec(spec)] == [(4, 9), (5, 9)]


# ---------------------------------------------------------------- columns and outputs

def test_duplicate_column():
    e = only("", base="columns word, pos, word\noutput pos\ntemplate t: y[t]\n")
    at(e, 1, 20, "duplicate column 'word'", "1:9")


def test_unknown_column_kind():
    e = only("", base="columns word, x:numbr, pos\noutput pos\ntemplate t: y[t]\n")
    at(e, 1, 17, "unknown column kind 'numbr'", "text, number, vector", "did you mean 'number'")


def test_output_not_a_column():
    e = only("", base="columns word, chunk\noutput chnk\ntemplate t: y[t]\n")
    at(e, 2, 8, "unknown output column 'chnk'", "word, chunk", "did you mean 'chunk'")


def test_output_must_be_text():
    e = only("", base="columns word, x:number\noutput x\ntemplate t: y[t]\n")
    at(e, 2, 8, "output 'x' is a number column", "text column")


def test_output_missing():
    e = only("", base="columns word, chunk\n\ntemplate t: y[t]\n")
    at(e, 1, 9, "no `output` statement", "output chunk")


def test_columns_missing():
    errs = check_spec(parse_spec("template t: y[t]\n", "m.fgl"))
    assert [e.message.split(";")[0] for e in errs] == ["no `columns` statement",
                                                       "no `output` statement"]


def test_output_named_twice():
    e = only("", base="columns word, chunk\noutput chunk, chunk\ntemplate t: y[t]\n")
    at(e, 2, 15, "'chunk' is named twice")


def test_labels_must_name_an_output():
    e = only("labels pos = [NN VB]")
    at(e, 4, 8, "`labels pos` does not name an output", "chunk")


def test_duplicate_label_in_set():
    e = only("labels chunk = [B-NP O I-NP O]")
    at(e, 4, 29, "duplicate label 'O'")


def test_empty_label_set():
    e = only("labels chunk = []")
    at(e, 4, 1, "empty")


# ---------------------------------------------------------------- observations

def test_duplicate_obs():
    e = only("obs w = word[t]\nobs w = pos[t]")
    at(e, 5, 5, "duplicate observation 'w'", "4:1")


def test_obs_name_clashes_with_builtin():
    e = only("obs suffix = word[t]")
    at(e, 4, 5, "'suffix' clashes with the built-in")


def test_unknown_column_in_obs():
    e = only("obs w = wrod[t]")
    at(e, 4, 9, "unknown column 'wrod'; expected one of: word, pos, x1, pix (did you mean 'word'?)")


def test_obs_may_not_read_the_output():
    e = only("obs w = word[t] & chunk[t-1]")
    at(e, 4, 19, "'chunk' is an output (label) column; observations may only read input columns")


def test_bad_offset_range():
    e = only("obs w = word[t+1..t-1]")
    at(e, 4, 9, "bad offset range t+1..t-1: the start must not come after the end")


def test_undefined_observation():
    e = only("obs w = word[t] & eso")
    at(e, 4, 19, "undefined observation 'eso'; expected a name defined with `obs` or one of "
                 "bias, bos, eos", "did you mean 'eos'")


def test_undefined_observation_that_is_a_column():
    e = only("obs w = word")
    at(e, 4, 9, "undefined observation 'word'", "read it as word[t]")


def test_unknown_function():
    e = only("obs w = lowr(word[t])")
    at(e, 4, 9, "unknown function 'lowr'; expected one of:", "lower, pad, prefix",
       "did you mean 'lower'")


def test_zero_arg_builtin_called_with_argument():
    e = only("obs w = bos(word[t])")
    at(e, 4, 9, "'bos' takes no argument", "bare")


def test_builtin_with_argument_used_bare():
    e = only("template t: y[t] ~ shape")
    at(e, 4, 20, "'shape' is a function and needs an argument", "shape(word[t])")


def test_prefix_needs_positive_int():
    at(only("obs p = prefix(word[t], 0)"), 4, 9, "prefix() needs a positive whole number",
       "found 0")
    at(only('obs p = suffix(word[t], "3")'), 4, 25, "suffix() needs a positive whole number",
       "found '3'")
    at(only("obs p = suffix(word[t], 2.5)"), 4, 9, "found 2.5")


def test_wrong_number_of_params():
    at(only("obs p = prefix(word[t])"), 4, 9, "prefix() takes 1 parameter (a whole number)",
       "found 0")
    at(only("obs p = lower(word[t], 3)"), 4, 9, "lower() takes no parameters", "found 1")


def test_regex_must_compile():
    e = only('obs r = regex(word[t], "[A-Z")')
    at(e, 4, 24, "bad regular expression '[A-Z'", "unterminated character set")


def test_regex_needs_string():
    at(only("obs r = regex(word[t], 3)"), 4, 9, 'regex() needs a "string"', "found 3")


def test_lexicon_file_must_exist(tmp_path):
    (tmp_path / "names.txt").write_text("Alice\n", encoding="utf-8")
    assert errors('obs l = lexicon(word[t], "names.txt")', tmp_path) == []
    e = only('obs l = lexicon(word[t], "cities.txt")', tmp_path)
    at(e, 4, 26, "lexicon file 'cities.txt' not found", str(tmp_path / "cities.txt"))
    assert errors('obs l = lexicon(word[t], "cities.txt")') == []      # no base_dir: not looked up


def test_text_function_on_number_column():
    e = only("obs l = lower(x1[t])")
    at(e, 4, 15, "lower() needs a text column; 'x1' is number")
    at(only("obs l = suffix(pix[t], 2)"), 4, 16, "'pix' is vector")


def test_value_on_text_column():
    e = only("obs v = value(word[t])")
    at(e, 4, 15, "value() needs a number or vector column; 'word' is text")


def test_text_function_on_named_number_observation():
    e = only("obs v = value(x1[t])\nobs l = lower(v)")
    at(e, 5, 15, "lower() needs a text column", "its argument gives numbers")


def test_numeric_values_may_be_conjoined_and_disjoined():
    assert errors("obs v = value(x1[t]) & word[t] | value(pix[t-1..t]) & bos\n"
                  "template v: y[t] ~ v, value(pix[t]) & lower(word[t])") == []


def test_reference_cycle():
    e = only("obs a = b & word[t]\nobs b = c\nobs c = a")
    at(e, 4, 9, "cycle", "a -> b -> c -> a")


def test_self_reference():
    at(only("obs a = a | bos"), 4, 9, "cycle", "a -> a")


def test_obs_defined_after_use_is_fine():
    assert errors("obs both = w & edge\nobs w = word[t]\nobs edge = bos | eos") == []


# ---------------------------------------------------------------- templates

def test_duplicate_template():
    e = only("template base: y[t-1..t]")
    at(e, 4, 10, "duplicate template 'base'", "3:1")


def test_label_var_unknown():
    e = only("template t: z[t]")
    at(e, 4, 13, "'z' is not an output", "y or an output: chunk")


def test_label_var_input_column():
    e = only("template t: pos[t]")
    at(e, 4, 13, "'pos' is an input column", "chunk")


def test_label_var_named_output_is_fine():
    assert errors("template t: chunk[t-1..t]") == []


def test_y_is_ambiguous_with_several_outputs():
    base = "columns word, pos, chunk\noutput pos, chunk\ntemplate base: pos[t]\n"
    e = only("template t: y[t-1..t]", base=base)
    at(e, 4, 13, "'y' is ambiguous", "pos, chunk")


def test_label_window_must_end_at_t():
    e = only("template t: y[t-2..t-1]")
    at(e, 4, 13, "label window must end at t, as in y[t-2..t]", "found y[t-2..t-1]")


def test_label_window_reversed():
    e = only("template t: y[t..t-1]")
    at(e, 4, 13, "bad offset range t..t-1")


def test_gapped_tuples_are_cliques_of_the_factor_graph_engine():
    assert errors("template skip: (y[t-2], y[t])") == []
    assert errors("template g: (y[t-3], y[t-1], y[t]) patterns [B-NP I-NP O]") == []
    assert errors("template s: (y[t], y[t-1])") == []


def test_gapped_tuple_names_a_position_once():
    e = only("template g: (y[t-1..t], y[t])")
    at(e, 4, 14, REPEATED_LABEL.format(labels="(y[t-1..t], y[t])", ref="y[t]"))
    assert "a clique holds each label variable once" in e.message


def test_gapped_tuple_pattern_length():
    at(only("template g: (y[t-2], y[t]) patterns [O B-NP I-NP]"), 4, 37,
       "pattern [O B-NP I-NP] has 3 labels", "has only 2")


def test_contiguous_tuple_is_fine():
    assert errors("template p: (y[t-2..t-1], y[t]) patterns [B-NP I-NP O]") == []


def test_pattern_longer_than_window():
    e = only("template p: y[t-1..t] patterns [O B-NP], [B-NP I-NP I-NP]")
    at(e, 4, 42, "pattern [B-NP I-NP I-NP] has 3 labels", "y[t-1..t] has only 2")


def test_empty_pattern():
    at(only("template p: y[t] patterns []"), 4, 27, "empty pattern")


def test_pattern_label_not_declared():
    e = only("labels chunk = [B-NP I-NP O]\ntemplate p: y[t-1..t] patterns [B-NP I-NP], [O B-NX]")
    at(e, 5, 48, "unknown label 'B-NX' in pattern; expected one of the declared labels: "
                 "B-NP, I-NP, O", "did you mean 'B-NP'")


def test_pattern_labels_unchecked_without_declared_set():
    assert errors("template p: y[t-1..t] patterns [B-NP I-NP], [O B-NX]") == []


@pytest.mark.parametrize("kind", ["all", "observed", "observed upto"])
def test_pattern_kinds_are_fine(kind):
    assert errors(f"labels chunk = [O]\ntemplate p: y[t-2..t] patterns {kind}") == []


def test_template_option_unknown_key():
    e = only("template s: y[t] ~ word[t] (sigma = 1, suport = all)")
    at(e, 4, 40, "unknown option 'suport'", "sigma, support", "did you mean 'support'")


def test_template_option_bad_values():
    errs = errors("template s: y[t] ~ word[t] (sigma = 0, support = some)")
    assert len(errs) == 2
    at(errs[0], 4, 29, "sigma must be a positive number", "found 0")
    at(errs[1], 4, 40, "support must be one of: observed, all", "found 'some'")


def test_template_option_given_twice():
    at(only("template s: y[t] ~ word[t] (sigma = 1, sigma = 2)"), 4, 40, "'sigma' is given twice")


def test_template_observations_are_checked():
    at(only("template s: y[t] ~ word[t], wrod[t-1]"), 4, 29, "unknown column 'wrod'")


def test_at_least_one_template():
    e = only("", base="columns word, chunk\noutput chunk\n")
    at(e, 2, 13, "no `template` statement")


def test_graph_pair_template_of_two_layers():
    base = "input graph\ncolumns title, topic\noutput topic\nhidden z = [z0 z1]\n"
    e = only('template c: (topic[a], z[b]) where edge(a, b, "cites")', base=base)
    at(e, 5, 24, "a pair template links two labels of one layer, as in (topic[a], topic[b])",
       "found (topic[a], z[b])")


# ---------------------------------------------------------------- train and infer

def test_train_settings_fine():
    assert errors("train { sigma = 2.5 max_iter = 10 tol = 1e-4 jobs = 0 }") == []


def test_train_unknown_key():
    e = only("train {\n  sigma = 1\n  max_iters = 5\n}")
    at(e, 6, 3, "unknown setting 'max_iters' for train",
       "expected one of: sigma, max_iter, tol, objective, bp_start, l1",
       "(did you mean 'max_iter'?)")


@pytest.mark.parametrize("setting, words", [
    ("sigma = 0", ["sigma must be a positive number", "found 0"]),
    ("sigma = fast", ["sigma must be a positive number", "found 'fast'"]),
    ("max_iter = 0", ["max_iter must be a whole number > 0"]),
    ("max_iter = 1.5", ["max_iter must be a whole number > 0", "found 1.5"]),
    ("tol = -1e-6", ["tol must be a positive number"]),
    ("jobs = -1", ["jobs must be a whole number >= 0"]),
    ("jobs = 2.0", ["jobs must be a whole number >= 0", "found 2.0"]),
])
def test_train_bad_values(setting, words):
    at(only(f"train {{ {setting} }}"), 4, 9, "train:", *words)


def test_infer_settings_fine():
    assert errors("infer loopy(damping = 0, max_iter = 50, tol = 1e-3)") == []
    assert errors("infer trp(max_iter = 5, tol = 0.1, trees = 2)") == []
    assert errors("infer exact") == []


def test_infer_unknown_method():
    e = only("infer lopy")
    at(e, 4, 7, "unknown inference method 'lopy'", "exact, loopy, trp", "did you mean 'loopy'")


def test_infer_exact_takes_only_max_states():
    # `exact` used to take no settings; it now takes max_states (general CRFs, junction tree)
    at(only("infer exact(damping = 0.5)"), 4, 13, "unknown setting 'damping' for infer exact",
       "max_states")
    assert errors("infer exact(max_states = 100000)") == []
    at(only("infer exact(max_states = 0)"), 4, 13,
       "infer exact: max_states must be a whole number > 0", "found 0")


@pytest.mark.parametrize("src, col, words", [
    ("infer loopy(damping = 1)", 13, ["damping must be a number d with 0 <= d < 1", "found 1"]),
    ("infer loopy(trees = 2)", 13, ["unknown setting 'trees' for infer loopy",
                                    "expected one of: damping, max_iter, tol"]),
    ("infer trp(trees = 0)", 11, ["trees must be a whole number > 0"]),
    ("infer trp(damping = 0.5)", 11, ["unknown setting 'damping' for infer trp",
                                      "max_iter, tol, trees"]),
])
def test_infer_bad_settings(src, col, words):
    at(only(src), 4, col, *words)


def test_errors_come_in_source_order():
    errs = errors("infer lopy\ntrain { foo = 1 }\nobs a = wrod[t]\ntemplate base: z[t]")
    assert [(e.line, e.col) for e in errs] == sorted((e.line, e.col) for e in errs)
    assert len(errs) == 5
