"""``either(e)`` on a pair template (Sutton & McCallum eq. 1.61): on each
pair (i, j), one indicator per distinct item of ``e`` at i or at j, in the
order met (i's first) — checked against ``e`` read at each end of each pair
on its own, over random words and pairs (ends shared by many pairs, as in a
clique, and pairs given in any order)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.features.observations import TemplateAttributes
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec

HEAD = """columns word, label
output label
obs w  = word[t-1..t+1]
obs lw = lower(word[t])
"""
SKIP = "template skip: (y[i], y[j]) where word[i] == word[j] within document ~ {obs}\n"


def attributes(obs: str, words: list[str], spans: list[tuple[int, int]]):
    """The skip template's attributes of each pair in ``spans``."""
    spec = validate(parse_spec(HEAD + "template state: y[t] ~ w\n" + SKIP.format(obs=obs),
                               "<t>"))
    return TemplateAttributes(spec)({"word": words}, len(words), spans)[1]


def per_token(obs: str, words: list[str]):
    """A chain template's attributes reading ``obs`` at each token."""
    spec = validate(parse_spec(HEAD + f"template state: y[t] ~ {obs}\n", "<t>"))
    return TemplateAttributes(spec)({"word": words}, len(words))[0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["Ann", "ann", "Bob", "met", "ANN"]), min_size=2, max_size=9)
       .flatmap(lambda words: st.tuples(
           st.just(words),
           st.lists(st.tuples(st.integers(0, len(words) - 1), st.integers(0, len(words) - 1)),
                    min_size=1, max_size=30))))
def test_either_is_the_union_of_the_two_ends_items(case):
    words, spans = case
    got = attributes("either(w), either(lw)", words, spans)
    w, lw = per_token("w", words), per_token("lw", words)
    for (i, j), items in zip(spans, got, strict=True):
        want: dict[str, float] = {}
        for at in (w, lw):
            for key, _ in at[i] + at[j]:
                name, text = key.split("=", 1)
                want.setdefault(f"either({name})={text}", 1.0)
        assert items == list(want.items())


def test_either_names_an_item_once_when_both_ends_give_it():
    got = attributes("either(lw)", ["Ann", "met", "ann"], [(0, 2), (0, 1)])
    assert got[0] == [("either(lower(word[t]))=ann", 1.0)]
    assert got[1] == [("either(lower(word[t]))=ann", 1.0), ("either(lower(word[t]))=met", 1.0)]
