"""The token-table fast path for span features (``fgl.features.span_streams``)
gives exactly the attribute keys, values and order of the general span
evaluators on every candidate segment, and steps aside where it cannot."""
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from fgl.errors import SpecError
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec

HEADER = """
columns word, pos, x:number, label
output label
segments max 4
"""

# observation atoms the fast path covers ...
REFS = ["word[u]", "word[v]", "word[u-1]", "word[v+1]", "word[u+1]", "word[v-2]",
        "word[u-1..u+1]", "pos[v..v+1]", "word[u..v]", "word[u+1..v]", "word[u-1..v+1]",
        "pos[u..v-1]", "pos[u]", "pos[u..v]"]
# position by position: pad, zip and count (not wrapped)
POSITIONAL = ["pad(word[u-1])", "pad(lower(word[v+2]))", "pad(word[u-2..v-2])",
              "pad(shape(word[u+1..v+1]))", "count(word[u..v])", 'count(regex(word[u+1..v], "."))',
              "count(pad(word[u-1..v+1]))", "count(word[u-1..u+1])",
              "zip(word[u-1..v-1] & word[u..v])",
              "zip(pad(word[u-2..v-2]) & lower(pos[u+1..v+1]))",
              "zip(word[u..v-1] & word[u+1..v] & pad(pos[u+2..v+1]))",
              "count(zip(word[u..v-1] & pos[u+1..v]))", "pad(word[u-3], 1)",
              "pad(lower(word[v+1..v+3]), 2)", "zip(word[u..v] & pad(word[u+2..v+2], 1))",
              "count(pad(word[u-3..v+3], 1))"]
# a stage over a combination (applied per distinct attribute)
MAPPED = ["lower(word[u] & pos[v])", "lower(length)", "tokens(word[u] | pos[v])",
          "shape(word[u-1] & word[u..v])", 'regex(word[u] & pos[u], "^T")',
          "class(word[u] | word[v])", "prefix(lower(word[u]) & bos, 2)"]
ZERO = ["bias", "bos", "eos", "length"]
WRAPS = ["lower({})", "prefix({}, 2)", "suffix({}, 3)", "shape({})", "longshape({})",
         "class({})", "tokens({})", 'regex({}, "^[A-Z]")', 'regex({}, "")',
         'lexicon({}, "lex.txt")', "lower(shape({}))", 'regex({}, "=")']
# ... and some it does not
OTHER = ["value(x[u])", "count(word[u] & pos[v])", "zip(word[u-1..u] & pos[u..u+1])",
         "count(lower(word[u]) | pos[v])", "value(x[u..v])"]

WORDS = ["the", "The", "cat", "C4t", "2024", "a-b", "NY", "x|y", "x", "y|", "a b", "a=b", ""]
TAGS = ["DT", "NN", "VB", "N|N"]


@st.composite
def atoms(draw) -> tuple[str, bool]:
    kind = draw(st.sampled_from(["ref", "ref", "wrapped", "wrapped", "zero", "other",
                                 "positional", "positional", "mapped"]))
    if kind == "positional":
        return draw(st.sampled_from(POSITIONAL)), True
    if kind == "mapped":
        return draw(st.sampled_from(MAPPED)), True
    if kind == "zero":
        return draw(st.sampled_from(ZERO)), True
    if kind == "other":
        return draw(st.sampled_from(OTHER)), False
    ref = draw(st.sampled_from(REFS))
    if kind == "ref":
        return ref, True
    wrap = draw(st.sampled_from(WRAPS))
    return wrap.format(ref), "=" not in wrap   # a name holding '=' takes the general path


@st.composite
def observations(draw) -> tuple[str, bool]:
    parts = draw(st.lists(atoms(), min_size=1, max_size=3))
    op = draw(st.sampled_from([" & ", " | "]))
    text = op.join(f"({p})" if len(parts) > 1 else p for p, _ in parts)
    return text, all(fast for _, fast in parts)


def _attributes(obs: list[str], tmp_path) -> TemplateAttributes:
    (tmp_path / "lex.txt").write_text("the\ncat\nny\nx|y\n")
    spec = validate(parse_spec(HEADER + f"template s: s[j] ~ {', '.join(obs)}\n",
                               str(tmp_path / "s.fgl")))
    return TemplateAttributes(spec, tmp_path), spec


def _both(obs: list[str], tmp_path, rows, L: int):
    attrs, spec = _attributes(obs, tmp_path)
    cols, _ = sentence_columns(spec, rows, list(range(1, len(rows) + 1)), "<test>")
    fast = attrs.segments(cols, len(rows), L)
    taken = attrs._span_streams[0] is not None
    attrs._span_streams = [None]
    return fast, attrs.segments(cols, len(rows), L), taken


@pytest.mark.parametrize("obs,fast", [
    ("word[u], lower(word[v]), word[u-1] & word[v+1], length", True),
    ("word[u..v], regex(word[u..v], \"^[A-Z]\"), shape(word[u]) & shape(word[v])", True),
    ("tokens(word[u..v]) & pos[u], bos | eos, bias", True),
    ("word[u], count(word[u..v]), pad(word[u-2]), count(regex(word[u+1..v], \".\"))", True),
    ("zip(word[u-1..v-1] & word[u..v]), zip(pad(word[u-2..v-2]) & word[u..v])", True),
    ("word[u], count(word[u] & pos[v])", False),
    ("value(x[u]), word[u]", False),
    ('regex(word[u], "a=b") & word[v]', False),   # a name holding '='
])
def test_fast_path_taken_exactly_where_it_applies(obs, fast, tmp_path):
    attrs, _ = _attributes([obs], tmp_path)
    assert (attrs._span_streams[0] is not None) == fast


@settings(max_examples=300, deadline=None)
@given(st.lists(observations(), min_size=1, max_size=3),
       st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(TAGS),
                          st.floats(-2, 2, allow_nan=False)), min_size=1, max_size=7),
       st.integers(1, 4))
def test_fast_path_equals_the_general_path(tmp_path_factory, obs, tokens, L):
    tmp_path = tmp_path_factory.mktemp("spans")
    rows = [[w, p, repr(x), "L"] for w, p, x in tokens]
    try:
        fast, general, taken = _both([o for o, _ in obs], tmp_path, rows, L)
    except SpecError:
        assume(False)   # a combination the checker refuses
    event(f"fast path taken: {taken}")
    assert taken == all(f for _, f in obs)
    assert fast == general
