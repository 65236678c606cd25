"""zip (aligned ranges), count (count-valued attributes) and pad (markers at
offsets outside the sequence), in chain and segment models: exact attribute
keys and values on small sentences, what the checker accepts, warns about
and refuses, and models that train and tag."""
import pytest

from fgl.api import CRF
from fgl.datasets.synth import segment_sequences
from fgl.errors import SpecError
from fgl.features.builtins import END_MARKER, START_MARKER
from fgl.features.observations import TemplateAttributes
from fgl.lang.checks import check_spec, validate
from fgl.lang.parser import parse_spec

CHAIN = "columns word, pos, x:number, label\noutput label\n"
SEGMENT = CHAIN + "segments max 3\n"
WORDS, TAGS = ["The", "cat", "sat"], ["D", "N", "V"]
COLS = {"word": WORDS, "pos": TAGS, "x": [1.0, 2.0, 3.0]}


def chain(obs: str) -> list[list[tuple[str, float]]]:
    spec = validate(parse_spec(CHAIN + f"template a: y[t] ~ {obs}\n", "<t>"))
    return TemplateAttributes(spec)(COLS, 3)[0]


def segment(obs: str, spans: list[tuple[int, int]]) -> list[list[tuple[str, float]]]:
    spec = validate(parse_spec(SEGMENT + f"template a: s[j] ~ {obs}\n", "<t>"))
    return TemplateAttributes(spec)(COLS, 3, spans)[0]


def problems(body: str, head: str = SEGMENT) -> tuple[list[str], list[str]]:
    warnings: list[SpecError] = []
    errors = check_spec(parse_spec(head + body, "s.fgl"), None, warnings)
    return [str(e) for e in errors], [str(w) for w in warnings]


# ---------------------------------------------------------------- zip

def test_zip_pairs_a_chain_window_position_by_position():
    got = chain("zip(word[t-1..t] & pos[t-1..t])")
    assert got[0] == [("word[t]&pos[t]=The|D", 1.0)]
    assert got[1] == [("word[t-1]&pos[t-1]=The|D", 1.0), ("word[t]&pos[t]=cat|N", 1.0)]


def test_zip_sums_aligned_pairs_over_a_segment():
    got = segment("zip(word[u-1..v-1] & word[u..v])", [(0, 2), (1, 2), (0, 0)])
    assert got[0] == [("word[u-1..v-1]&word[u..v]=The|cat", 1.0),
                      ("word[u-1..v-1]&word[u..v]=cat|sat", 1.0)]
    assert got[1] == [("word[u-1..v-1]&word[u..v]=The|cat", 1.0),
                      ("word[u-1..v-1]&word[u..v]=cat|sat", 1.0)]
    assert got[2] == []
    # a pair that repeats inside the segment counts twice (a bag)
    cols = {"word": ["a", "a", "a"], "pos": TAGS, "x": [0.0] * 3}
    spec = validate(parse_spec(SEGMENT + "template a: s[j] ~ zip(word[u-1..v-1] & word[u..v])\n",
                               "<t>"))
    assert TemplateAttributes(spec)(cols, 3, [(0, 2)])[0][0] == [
        ("word[u-1..v-1]&word[u..v]=a|a", 2.0)]


def test_zip_with_pad_keeps_the_pair_at_the_start():
    got = segment("zip(pad(lower(word[u-1..v-1])) & word[u..v])", [(0, 1)])
    assert got[0] == [(f"lower(word[u-1..v-1])&word[u..v]={START_MARKER}|The", 1.0),
                      ("lower(word[u-1..v-1])&word[u..v]=the|cat", 1.0)]


def test_cross_product_warns_and_zip_does_not():
    errors, warnings = problems("template a: s[j] ~ word[u-1..v-1] & word[u..v]\n")
    assert errors == []
    assert warnings == ["s.fgl:4:20: warning: word[u-1..v-1] & word[u..v] makes every combination "
                        "of the two ranges (a cross product); for pairs aligned position by "
                        "position write zip(word[u-1..v-1] & word[u..v])"]
    assert problems("template a: s[j] ~ zip(word[u-1..v-1] & word[u..v]), "
                    "word[u-1] & word[u..v]\n") == ([], [])
    _, warnings = problems("template a: y[t] ~ word[t-2..t] & pos[t-1..t]\n", CHAIN)
    assert len(warnings) == 1 and "zip(word[t-2..t] & pos[t-1..t])" in warnings[0]


@pytest.mark.parametrize("body,col,message", [
    ("zip(word[u..v] & word[u-2..u])", 37, "must be equally long; word[u..v] (the segment's "
                                           "length) and word[u-2..u] (3 positions) are not"),
    ("zip(word[u])", 24, "pairs the ranges of a conjunction position by position"),
    ("zip(x[u..v] & word[u..v])", 24, "each part of zip(...) reads a text column at offsets"),
    ("zip(regex(word[u..v], \"a\") & word[u..v])", 24, "gives a yes/no test"),
    ("lower(pad(word[u]))", 20, "write pad(...) outermost, as in pad(lower(word[u]))"),
    ("pad(x[u-1])", 24, "pad(...) reads a text column at offsets"),
    ("count(word[t])", 26, "in a segment model, read columns relative to the segment"),
])
def test_misuse_is_refused_where_it_is(body, col, message):
    errors, _ = problems(f"template a: s[j] ~ {body}\n")
    assert errors and errors[0].startswith(f"s.fgl:4:{col}: ") and message in errors[0]


# ---------------------------------------------------------------- count

def test_count_is_one_real_valued_attribute():
    got = chain('count(regex(word[t-1..t+1], "^[a-z]"))')
    assert got == [[("count(regex(word[t-1..t+1],'^[a-z]'))", 1.0)],
                   [("count(regex(word[t-1..t+1],'^[a-z]'))", 2.0)],
                   [("count(regex(word[t-1..t+1],'^[a-z]'))", 2.0)]]


def test_count_gives_the_segment_length_and_tokens_after_the_first():
    got = segment('count(word[u..v]), count(regex(word[u+1..v], "."))', [(0, 2), (1, 1)])
    assert got[0] == [("count(word[u..v])", 3.0), ("count(regex(word[u+1..v],'.'))", 2.0)]
    assert got[1] == [("count(word[u..v])", 1.0)]     # no tokens after the first: no attribute


def test_count_conjoined_scales_an_indicator():
    got = segment("count(word[u..v]) & pos[u]", [(1, 2)])
    assert got[0] == [("count(word[u..v])&pos[u]=|N", 2.0)]     # as value(x[u]) & pos[u]


# ---------------------------------------------------------------- pad

def test_pad_gives_markers_outside_a_chain():
    got = chain("pad(word[t-2]), pad(lower(word[t+1]))")
    assert got[0] == [(f"word[t-2]={START_MARKER}", 1.0), ("lower(word[t+1])=cat", 1.0)]
    assert got[2] == [("word[t-2]=The", 1.0), (f"lower(word[t+1])={END_MARKER}", 1.0)]
    assert chain("word[t-2]")[0] == []      # without pad: unchanged


def test_pad_gives_markers_outside_a_segment():
    got = segment("pad(word[u-2]), pad(word[v+1])", [(0, 0), (1, 2)])
    assert got[0] == [(f"word[u-2]={START_MARKER}", 1.0), ("word[v+1]=cat", 1.0)]
    assert got[1] == [(f"word[u-2]={START_MARKER}", 1.0), (f"word[v+1]={END_MARKER}", 1.0)]
    assert " " in START_MARKER and " " in END_MARKER     # never a token of a column


def test_pad_with_a_reach_marks_only_that_close_to_the_ends():
    got = chain("pad(word[t-2], 1), pad(word[t+3], 2)")
    assert got[0] == [(f"word[t+3]={END_MARKER}", 1.0)]          # t-2 = -2: beyond reach 1
    assert got[1] == [(f"word[t-2]={START_MARKER}", 1.0),        # t+3 = 4: two past the end
                      (f"word[t+3]={END_MARKER}", 1.0)]
    assert got[2] == [("word[t-2]=The", 1.0)]                    # t+3 = 5: beyond reach 2
    got = segment("pad(word[u-2..v-2], 1), zip(word[u..v] & pad(word[u+2..v+2], 1))", [(0, 2)])
    assert got[0] == [(f"word[u-2..v-2]={START_MARKER}", 1.0), ("word[u-2..v-2]=The", 1.0),
                      ("word[u..v]&word[u+2..v+2]=The|sat", 1.0),
                      (f"word[u..v]&word[u+2..v+2]=cat|{END_MARKER}", 1.0)]


@pytest.mark.parametrize("obs, message", [
    ("pad(word[u-2], 0)", "pad() needs a positive whole number"),
    ('pad(word[u-2], "1")', "pad() needs a positive whole number"),
    ("pad(word[u-2], 1, 2)", "pad() takes 1 parameter"),
])
def test_pad_reach_must_be_one_positive_number(obs, message):
    errors, _ = problems(f"template a: s[j] ~ {obs}\n")
    assert any(message in e for e in errors), errors


# ---------------------------------------------------------------- end to end

def test_a_chain_model_with_them_trains_and_tags():
    spec = ("columns word, label\noutput label\n"
            "template s: y[t] ~ bias, word[t], pad(word[t-1]), zip(word[t-1..t] & word[t..t+1]),"
            " count(regex(word[t-1..t+1], \"[0-9]\"))\ntemplate tr: y[t-1..t]\n"
            "train { max_iter = 30 }\n")
    train, test = segment_sequences(n_types=2, max_len=3, vocab=20, n_train=40, n_test=10,
                                    length=12, seed=1)
    crf = CRF(spec).fit_sentences(train)
    pred = crf.predict([[r[:-1] for r in s.rows] for s in test])
    assert [len(p) for p in pred] == [len(s.rows) for s in test]


def test_a_segment_model_with_them_trains_and_tags():
    spec = ("columns word, label\noutput label\nsegments max 3\n"
            "template s: s[j] ~ bias, word[u], pad(word[u-2]), pad(word[v+1]), count(word[u..v]),"
            " zip(word[u-1..v-1] & word[u..v])\ntemplate tr: s[j-1..j]\n"
            "train { max_iter = 30 }\n")
    train, test = segment_sequences(n_types=2, max_len=3, vocab=20, n_train=40, n_test=10,
                                    length=12, seed=1)
    crf = CRF(spec).fit_sentences(train)
    pred = crf.predict([[r[:-1] for r in s.rows] for s in test])
    assert all(t == "O" or t[:2] in ("B-", "I-") for seq in pred for t in seq)
    assert [len(p) for p in pred] == [len(s.rows) for s in test]


def test_fgl_check_prints_the_warning_and_passes(tmp_path, capsys):
    from fgl.cli import main

    path = tmp_path / "m.fgl"
    path.write_text(SEGMENT + "template a: s[j] ~ word[u-1..v-1] & word[u..v]\n", encoding="utf-8")
    assert main(["check", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"{path}: ok"
    assert err.startswith(f"{path}:4:20: warning: word[u-1..v-1] & word[u..v] makes every")
