"""Aggregates, AGG(EXPR over LINKS [within SCOPE] [, hops = k]): their AST,
and every mistake `fgl check` reports at its place, saying what it found
and what it expected."""
from __future__ import annotations

import pytest
from support.spec_errors import CHECK_FILE, assert_at, check_errors

from fgl.lang.ast import Aggregate, Call, ColumnRef, Loc, NameRef, Predicate, Setting
from fgl.lang.builtins import expr_text
from fgl.lang.parser import parse_spec

GRAPH = "input graph\ncolumns words, x:number, y\noutput y\n"
TEXT = "columns word, y\noutput y\n"


def test_the_ast_of_a_graph_aggregate():
    spec = parse_spec(GRAPH + 'template n: y[a] ~ mean(words[b] over edge(a, b, "cites") '
                              'or edge(b, a, "cites"), hops = 2)\n', "g.fgl")
    agg = spec.templates[0].observations[0]
    at = Loc("g.fgl", 4, 20)
    assert agg == Aggregate(
        "mean", ColumnRef("words", 0, 0, Loc("g.fgl", 4, 25), "b", "b"), [], at,
        [[Predicate("edge", None, None, "cites", Loc("g.fgl", 4, 39), ("a", "b"))],
         [Predicate("edge", None, None, "cites", Loc("g.fgl", 4, 62), ("b", "a"))]],
        None, [Setting("hops", 2, Loc("g.fgl", 4, 83))])
    assert expr_text(agg) == "mean(words[b] over edge(a,b,'cites') or edge(b,a,'cites'),hops=2)"


def test_the_ast_of_a_mention_aggregate():
    spec = parse_spec(TEXT + "obs o = count(bias over word[i] == word[j] and j - i <= 9 "
                             "within document)\n", "d.fgl")
    agg = spec.observations[0].expr
    assert isinstance(agg, Aggregate) and isinstance(agg, Call)
    assert agg.func == "count" and agg.arg == NameRef("bias", Loc("d.fgl", 3, 15))
    assert [p.kind for p in agg.links[0]] == ["eq", "distance"] and agg.within == "document"


def errors_at(text: str) -> list[tuple[int, int, str]]:
    return [(e.line, e.col, e.message) for e in check_errors(text)]


@pytest.mark.parametrize("base, line, col, words", [
    (GRAPH + 'template n: y[a] ~ avg(words[b] over edge(a, b, "c"))', 4, 20,
     ["unknown aggregate 'avg'", "any, count, sum, mean, most, norm"]),
    (GRAPH + 'template n: y[a] ~ mean(words[a] over edge(a, b, "c"))', 4, 25,
     ["read at the linked nodes b", "found words[a]"]),
    (GRAPH + 'template n: y[a] ~ sum(value(x[b]) over edge(a, b, "c"), hops = 0)', 4, 58,
     ["hops needs a whole number >= 1", "found 0"]),
    (GRAPH + 'template n: y[a] ~ sum(value(x[b]) over edge(a, b, "c"), depth = 2)', 4, 58,
     ["unknown option 'depth'", "expected hops"]),
    (GRAPH + 'template n: y[a] ~ any(words[b] over words[a] == words[b])', 4, 38,
     ["each alternative needs edge(a, b, \"type\")"]),
    (GRAPH + 'template n: y[a] ~ any(words[b] over edge(a, a, "c"))', 4, 38,
     ["links a node to itself"]),
    (GRAPH + 'template n: y[a] ~ any(words[b] over edge(a, b, "c") within document)', 4, 61,
     ["`within` bounds the mentions of a sequence", "remove it"]),
    (GRAPH + 'template n: y[a] ~ any(any(words[b] over edge(a, b, "c")) over edge(a, b, "c"))',
     4, 24, ["cannot be read inside another one", "hops = 2"]),
    (GRAPH + 'template n: y[a] ~ mean(title[b] over edge(a, b, "c"))', 4, 25,
     ["unknown column 'title'", "expected one of: words, x"]),
    (TEXT + "template s: y[t] ~ any(word[j] over lemma[i] == word[j])", 3, 37,
     ["unknown column 'lemma'"]),
    (TEXT + 'template s: y[t] ~ any(word[j] over edge(a, b, "c"))', 3, 37,
     ["links nodes of a graph, but the input is not a graph"]),
    (TEXT + "template s: y[t] ~ any(word[i] over word[i] == word[j])", 3, 24,
     ["read at the other mentions j", "found word[i]"]),
    (TEXT + "template s: y[t] ~ any(word[j] over word[i] == word[j] and nearest)", 3, 60,
     ["`nearest`", "remove it"]),
    (TEXT + "template s: y[t] ~ any(word[j] over word[i] == word[j] within doc)", 3, 63,
     ["unknown scope 'doc'", "`within document`"]),
    (TEXT + "template s: (y[i], y[j]) where word[i] == word[j] "
            "~ either(any(word[j] over word[i] == word[j]))", 3, 60,
     ["inside either(...) is meaningless"]),
    (TEXT + "template s: (y[i], y[j]) where any(word[j] over word[i] == word[j]) ~ bias", 3, 32,
     ["a `where` clause cannot test one"]),
    (TEXT + "segments max 3\ntemplate s: s[j] ~ any(word[j] over word[i] == word[j])", 4, 20,
     ["a segment model reads segments"]),
])
def test_located_errors(base, line, col, words):
    found = [e for e in check_errors(base + "\n") if all(w in e.message for w in words)]
    assert found, errors_at(base + "\n")
    assert_at(found[0], CHECK_FILE, line, col, tuple(words))


def test_well_formed_aggregates_check_clean():
    assert errors_at(GRAPH + 'obs nb = mean(tokens(lower(words[b])) over edge(a, b, "c") or '
                             'edge(b, a, "c"), hops = 2)\n'
                             'template n: y[a] ~ bias, nb, nb & tokens(words[a]), '
                             'count(bias over edge(b, a, "c") and words[a] != words[b])\n'
                             'template e: (y[a], y[b]) where edge(a, b, "c") ~ nb\n') == []
    assert errors_at(TEXT + 'obs w = lower(word[t-1])\n'
                            'template s: y[t] ~ most(w over lower(word[i]) == lower(word[j]) '
                            'within document), norm(bias over word[i] == word[j])\n'
                            'template k: (y[i], y[j]) where word[i] == word[j] ~ '
                            'any(word[j+1] over word[i] == word[j])\n') == []


def test_the_regular_expressions_of_an_aggregates_links_count_in_the_spec_total(monkeypatch):
    monkeypatch.setenv("FGL_MAX_REGEX", "20")
    text = (TEXT + 'template s: y[t] ~ any(word[j] over word[i] == word[j] and '
                   'regex(word[i], "^[A-Z]abcdefghijklmnopqrstuvwxyz"))\n')
    found = [e for e in check_errors(text) if "regular expressions" in e.message]
    assert found and (found[0].line, found[0].col) == (3, 75), errors_at(text)


def test_an_aggregate_without_over_says_how_to_write_one():
    found = check_errors(GRAPH + "template n: y[a] ~ mean(tokens(words[a]))\n")
    assert_at(found[0], CHECK_FILE, 4, 20,
              ("mean(...) is an aggregate", 'mean(tokens(words[b]) over edge(a, b, "cites"))'))
