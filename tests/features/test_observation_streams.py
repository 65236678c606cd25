"""The column-wise fast path for token observations
(``fgl.features.streams``) gives exactly the attribute keys, values and
order of the general evaluators, and steps aside where it cannot."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec

HEADER = """
columns word, pos, x:number, label
output label
"""

# (observations of one template, whether the fast path takes them)
CASES = [
    ("word[t-2..t+2]", True),
    ("word[t-1] & word[t], pos[t-1] & pos[t] & pos[t+1]", True),
    ("(word[t-1] & word[t]) | (word[t] & word[t+1]) | pos[t]", True),
    ("(word[t] | pos[t]) & pos[t+1]", True),
    ("lower(word[t-1..t+1]), prefix(word[t], 2), suffix(word[t], 3)", True),
    ("shape(word[t]) & longshape(word[t]), lower(word[t]) & pos[t]", True),
    ('regex(word[t], "^[A-Z]"), regex(word[t-1], "[0-9]")', True),
    ('lexicon(word[t], "lex.txt"), lexicon(lower(word[t+1]), "lex.txt")', True),
    ("bias, bos | eos, word[t]", True),
    ("pad(word[t-2]), pad(word[t+3], 1), pad(pos[t-1..t+1], 2)", True),
    ("pad(word[t-5..t-3]), pad(pos[t+4]), pad(word[t+3..t+5], 1)", True),  # past short ones
    ("pad(word[t-3])", True),
    ("pad(word[t-1]) & pad(word[t]), pad(pos[t-3], 2) & pos[t]", True),
    ("pad(lower(prefix(word[t+1], 2))), pad(shape(word[t-2..t-1]), 1)", True),
    ("pad(word[t]) | word[t+1], pad(word[t-1]) & lower(word[t])", True),
    ("word[t-1], pad(word[t-1])", False),           # equal names, unequal texts at t = 0
    ("word[t], word[t], pos[t] | word[t]", True),  # equal names across observations: first wins
    ("word[t] | word[t]", False),                   # within one: a bag, values add up
    ("bos & word[t]", False),                       # a test inside a conjunction
    ("value(x[t]), word[t]", False),                # a number column
    ("class(word[t])", False),                      # several items per token
    ("tokens(word[t])", False),
]

WORDS = ["the", "The", "cat", "C4t", "2024", "a-b", "NY"]
TAGS = ["DT", "NN", "VB"]


def _attributes(obs: str, tmp_path) -> TemplateAttributes:
    (tmp_path / "lex.txt").write_text("the\ncat\nny\n")
    spec = validate(parse_spec(HEADER + f"template s: y[t] ~ {obs}\n", str(tmp_path / "s.fgl")))
    return TemplateAttributes(spec, tmp_path)


@pytest.mark.parametrize("obs,fast", CASES)
def test_fast_path_taken_exactly_where_it_applies(obs, fast, tmp_path):
    assert (_attributes(obs, tmp_path)._streams[0] is not None) == fast


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(TAGS),
                          st.floats(-2, 2, allow_nan=False)), min_size=1, max_size=6))
def test_fast_path_equals_the_general_path(tmp_path_factory, tokens):
    tmp_path = tmp_path_factory.mktemp("streams")
    rows = [[w, p, repr(x), "L"] for w, p, x in tokens]
    for obs, fast in CASES:
        attrs = _attributes(obs, tmp_path)
        cols, _ = sentence_columns(attrs_spec(tmp_path, obs), rows, list(range(1, len(rows) + 1)),
                                   "<test>")
        got = attrs.evaluate(0, cols, len(rows))
        attrs._streams = [None]
        want = attrs.evaluate(0, cols, len(rows))
        assert got == want, obs


def attrs_spec(tmp_path, obs):
    return validate(parse_spec(HEADER + f"template s: y[t] ~ {obs}\n", str(tmp_path / "s.fgl")))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(TAGS)), min_size=1,
                         max_size=5), min_size=1, max_size=3))
def test_stream_rows_number_keys_as_the_general_path(tmp_path_factory, sentences):
    """``token_rows`` (streams straight to key ids) gives the rows and the key
    numbering ``interned`` gives the general path's pairs, sentence after
    sentence into one key table, and the same again when the sentences are
    given in one batch (their keys interned in one call)."""
    tmp_path = tmp_path_factory.mktemp("rows")
    for obs in (o for o, fast in CASES if fast):
        fast, general = _attributes(obs, tmp_path), _attributes(obs, tmp_path)
        batched = _attributes(obs, tmp_path)
        assert fast._streams[0] is not None
        general._streams = [None]
        spec = attrs_spec(tmp_path, obs)
        all_cols = []
        for tokens in sentences:
            rows = [[w, p, "0", "L"] for w, p in tokens]
            cols, _ = sentence_columns(spec, rows, list(range(1, len(rows) + 1)), "<test>")
            all_cols.append(cols)
            got = fast.token_rows([cols], [len(rows)])[0][0]
            want = general.token_rows([cols], [len(rows)])[0][0]
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
        assert list(fast.keys) == list(general.keys), obs
        together = batched.token_rows(all_cols, [len(t) for t in sentences])
        alone = [fast.token_rows([c], [len(t)])[0] for c, t in zip(all_cols, sentences)]
        assert list(batched.keys) == list(fast.keys), obs
        for a, b in zip(together, alone):
            for x, y in zip(a[0], b[0]):
                np.testing.assert_array_equal(x, y)


MIXED = """template a: y[t] ~ word[t-1..t], pos[t]
template b: y[t] ~ value(x[t]), class(word[t])
template c: y[t]
template d: y[t] ~ pad(word[t+1]) & pos[t]
"""


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(TAGS),
                                   st.sampled_from(["1", "-0.5", "2"])), min_size=1,
                         max_size=5), min_size=1, max_size=4))
def test_a_batch_of_sentences_is_rows_and_ids_of_each_alone(tmp_path_factory, sentences):
    """Templates on the streams, on the general path and with no observation
    at all, sentences in one batch: each sentence's rows per template and the
    key numbering are those of one call per sentence, and those of
    ``interned`` pairs, sentence by sentence and template by template."""
    tmp_path = tmp_path_factory.mktemp("batch")
    spec = validate(parse_spec(HEADER + MIXED, str(tmp_path / "m.fgl")))
    batched, alone = TemplateAttributes(spec, tmp_path), TemplateAttributes(spec, tmp_path)
    reference = TemplateAttributes(spec, tmp_path)
    assert [s is not None for s in batched._streams] == [True, False, False, True]
    cols = [sentence_columns(spec, [[w, p, x, "L"] for w, p, x in tokens],
                             list(range(1, len(tokens) + 1)), "<test>")[0]
            for tokens in sentences]
    lengths = [len(t) for t in sentences]
    together = batched.token_rows(cols, lengths)
    one_by_one = [alone.token_rows([c], [T])[0] for c, T in zip(cols, lengths)]
    pairs = [[reference.interned(reference.evaluate(ti, c, T)) for ti in range(4)]
             for c, T in zip(cols, lengths)]
    assert list(batched.keys) == list(alone.keys) == list(reference.keys)
    assert len(together) == len(sentences)
    for got, want in zip(together, pairs):
        for x, y in zip(got, want):
            for a, b in zip(x, y):
                np.testing.assert_array_equal(a, b)
    for got, want in zip(together, one_by_one):
        assert len(got) == len(want) == 4
        for x, y in zip(got, want):
            for a, b in zip(x, y):
                np.testing.assert_array_equal(a, b)
