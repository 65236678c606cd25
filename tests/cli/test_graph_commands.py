"""General CRFs from the shell: factorial and graph models through
`fgl train/tag/eval/explain`, and the bad inputs issue 5 names — each a
clear file:line or line:col message, never a traceback."""
import json

import pytest
from support.specs import FACTORIAL, GRAPH, SKIP_CHAIN

from fgl.cli import main
from fgl.datasets.synth import segment_sequences
from fgl.io.conll import write_conll


@pytest.fixture
def files(tmp_path):
    train, _ = segment_sequences(n_types=2, max_len=3, vocab=8, n_train=15, n_test=1, length=10,
                                 seed=2)
    three = tmp_path / "three.txt"
    with open(three, "w", encoding="utf-8") as fh:
        write_conll(fh, train, [[[f"P{int(w[1:]) % 3}"] for w, _ in s.rows] for s in train])
    # columns: word chunk pos -> reorder to word pos chunk
    rows = [line.split() for line in three.read_text().splitlines()]
    three.write_text("\n".join(" ".join([r[0], r[2], r[1]]) if r else "" for r in rows) + "\n")
    two = tmp_path / "two.txt"
    with open(two, "w", encoding="utf-8") as fh:
        write_conll(fh, train)
    graph = tmp_path / "g.jsonl"
    graph.write_text("\n".join(json.dumps({
        "nodes": [{"id": f"n{k}", "words": f"w{k % 3} w{(k * 7) % 5}", "label": f"L{k % 2}"}
                  for k in range(6)],
        "edges": [{"source": "n0", "target": "n2", "type": "cites"},
                  {"source": "n1", "target": "n3", "type": "cites"},
                  {"source": "n2", "target": "n4", "type": "cites"}]}) for _ in range(3)) + "\n")
    for name, text in (("fact.fgl", FACTORIAL), ("skip.fgl", SKIP_CHAIN), ("graph.fgl", GRAPH)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_factorial_train_tag_eval(files, capsys):
    d = files
    assert main(["train", str(d / "fact.fgl"), "--train", str(d / "three.txt"),
                 "-o", str(d / "f.fglm"), "-q"]) == 0
    capsys.readouterr()
    assert main(["tag", str(d / "f.fglm"), str(d / "three.txt")]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert all(len(row) == 5 for row in rows)       # word pos chunk + predicted pos, chunk
    assert main(["eval", str(d / "f.fglm"), str(d / "three.txt")]) == 0
    out = capsys.readouterr().out
    assert "== pos" in out and "== chunk" in out and "accuracy" in out


def test_graph_train_and_tag_as_json(files, capsys):
    d = files
    assert main(["train", str(d / "graph.fgl"), "--train", str(d / "g.jsonl"),
                 "-o", str(d / "g.fglm"), "-q"]) == 0
    capsys.readouterr()
    assert main(["tag", str(d / "g.fglm"), str(d / "g.jsonl")]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 3 and set(rows[0]["labels"]) == {f"n{k}" for k in range(6)}
    assert set(rows[0]["labels"].values()) <= {"L0", "L1"}


def test_explain_reports_the_factor_graph(files, capsys):
    d = files
    assert main(["explain", str(d / "skip.fgl"), "--train", str(d / "two.txt")]) == 0
    out = capsys.readouterr().out
    assert "loopy belief propagation with the TRP schedule" in out
    assert "factors" in out and "independent cycles" in out and "TRP trees" in out


def _run_err(argv, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_edge_to_a_missing_node(files, capsys):
    d = files
    bad = d / "bad.jsonl"
    bad.write_text(json.dumps({"nodes": [{"id": "a", "words": "x", "label": "L0"}],
                               "edges": [{"source": "a", "target": "zz", "type": "cites"}]}) + "\n")
    code, err = _run_err(["train", str(d / "graph.fgl"), "--train", str(bad), "-o",
                          str(d / "x.fglm"), "-q"], capsys)
    assert code == 2 and f"{bad}:1: edge to a missing node 'zz'" in err


NODE = {"id": "a", "words": "x", "label": "L0"}


@pytest.mark.parametrize("graph, message", [
    ({"nodes": [NODE, {"id": "b", "words": "y", "label": "L1"}],
      "edges": [{"source": "a", "target": "a", "type": "cites"}]},
     "edge from node 'a' to itself"),
    ({"nodes": [NODE, {"id": "b", "words": "y", "label": "L1"}],
      "edges": [{"source": "a", "target": "b", "type": "cites"}] * 2},
     "duplicate edge a -> b of type 'cites'"),
    ({"nodes": [], "edges": []}, "a graph needs at least one node"),
    ({"nodes": [NODE], "edges": 5}, 'expected an object with a "nodes" list'),
    ({"nodes": [{"id": "a", "words": ["x", "y"], "label": "L0"}], "edges": []},
     "node 'a': attribute 'words' is a JSON list; expected a string or a number"),
    ({"nodes": [{"id": "a", "words": "x", "label": None}], "edges": []},
     "this graph has no label: 'label' is null or missing on every node"),
    ({"nodes": [{"id": "a", "words": None, "label": "L0"}], "edges": []},
     "node 'a': attribute 'words' is null"),
    ({"nodes": [{"id": "a", "words": "x", "label": "L0", "withheld": "yes"}], "edges": []},
     "node 'a': attribute 'withheld' is \"yes\"; expected true or false"),
    ({"nodes": [NODE, {"id": "b", "words": "y", "withheld": True}], "edges": []},
     "node 'b' is withheld but has no label 'label' to withhold"),
])
def test_bad_graphs_are_located_errors(files, capsys, graph, message):
    d = files
    bad = d / "bad.jsonl"
    bad.write_text(json.dumps(graph) + "\n")
    code, err = _run_err(["train", str(d / "graph.fgl"), "--train", str(bad), "-o",
                          str(d / "x.fglm"), "-q"], capsys)
    assert code == 2 and f"{bad}:1: {message}" in err and "Traceback" not in err, err


def test_a_deeply_nested_json_line(files, capsys):
    d = files
    bad = d / "deep.jsonl"
    bad.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    code, err = _run_err(["train", str(d / "graph.fgl"), "--train", str(bad), "-o",
                          str(d / "x.fglm"), "-q"], capsys)
    assert code == 2 and f"{bad}:1: JSON nested too deeply" in err


def test_a_node_without_its_label_is_unlabelled(files, capsys):
    # a partially labelled graph (within-network data, tests/api/test_partial_labels.py):
    # the node without a label is marginalised, not an error
    d = files
    part = d / "part.jsonl"
    part.write_text(json.dumps({"nodes": [{"id": "a", "words": "x", "label": "L0"},
                                          {"id": "b", "words": "y"},
                                          {"id": "c", "words": "z", "label": None}],
                                "edges": [{"source": "a", "target": "b", "type": "cites"}]})
                    + "\n")
    code, err = _run_err(["train", str(d / "graph.fgl"), "--train", str(part), "-o",
                          str(d / "x.fglm"), "-q"], capsys)
    assert code == 0, err


def test_predicate_on_an_unknown_column(files, capsys):
    d = files
    spec = d / "badpred.fgl"
    spec.write_text(SKIP_CHAIN.replace("word[i] == word[j]", "wrod[i] == word[j]"),
                    encoding="utf-8")
    code, err = _run_err(["check", str(spec)], capsys)
    assert code == 1 and f"{spec}:5:" in err and "wrod" in err and "word" in err


def test_non_convergence_is_reported(files, capsys):
    d = files
    spec = d / "oneiter.fgl"
    spec.write_text(SKIP_CHAIN.replace("infer trp(max_iter = 30)",
                                 "infer loopy(max_iter = 1, tol = 1e-12)"), encoding="utf-8")
    assert main(["train", str(spec), "--train", str(d / "two.txt"), "-o", str(d / "o.fglm"),
                 "-q", "--max-iter", "3"]) == 0
    assert "warning: belief propagation did not converge" in capsys.readouterr().err
    assert main(["tag", str(d / "o.fglm"), str(d / "two.txt")]) == 0
    assert "did not converge" in capsys.readouterr().err


def test_draw_writes_the_factor_graph_as_dot(files, capsys):
    d = files
    assert main(["draw", str(d / "skip.fgl"), str(d / "two.txt"), "--instance", "1"]) == 0
    dot = capsys.readouterr().out
    second = (d / "two.txt").read_text().split("\n\n")[1]
    words = [line.split()[0] for line in second.splitlines()]
    T = len(words)
    assert dot.startswith("graph ") and dot.rstrip().endswith("}")
    assert dot.count("shape=circle") == T                      # one variable per token
    pairs = sum(words[i] == words[j] for i in range(T) for j in range(i + 1, T))
    # state factors (1 edge each), transitions (2), skip edges (2)
    assert dot.count('xlabel="state"') == T
    assert dot.count('xlabel="trans"') == T - 1
    assert dot.count('xlabel="skip"') == pairs
    assert dot.count(" -- ") == T + 2 * (T - 1) + 2 * pairs
    code = main(["draw", str(d / "skip.fgl"), str(d / "two.txt"), "--instance", "999"])
    assert code == 2 and "instance 999 does not exist" in capsys.readouterr().err


def test_half_a_surrogate_pair_is_a_located_error(files, capsys):
    """Found by the fuzzer: a JSON escape of half a surrogate pair ("\\ud800")
    reached the model file and `fgl tag`'s output, which cannot encode it
    (UnicodeEncodeError).  A whole pair is a character and reads fine."""
    d = files
    bad = d / "bad.jsonl"
    for node, edge in (({"id": "a", "words": "x \ud800", "label": "L0"}, "a"),
                       ({"id": "a\udc00", "words": "x", "label": "L0"}, "a\udc00")):
        bad.write_text(json.dumps({"nodes": [node, {"id": "b", "words": "y", "label": "L1"}],
                                   "edges": [{"source": edge, "target": "b"}]}) + "\n")
        code, err = _run_err(["train", str(d / "graph.fgl"), "--train", str(bad), "-o",
                              str(d / "x.fglm"), "-q"], capsys)
        assert code == 2 and f"{bad}:1: the string " in err and "half of a UTF-16" in err, err
    bad.write_text(json.dumps({"nodes": [{"id": "a", "words": "x \U0001f600", "label": "L0"},
                                         {"id": "b", "words": "y", "label": "L1"}],
                               "edges": [{"source": "a", "target": "b"}]}) + "\n")
    code, err = _run_err(["train", str(d / "graph.fgl"), "--train", str(bad), "-o",
                          str(d / "x.fglm"), "-q"], capsys)
    assert code == 0, err


def test_conjoined_bags_of_a_long_text_are_a_located_error(files, capsys):
    """A conjunction of bags of words gives words² items at a node: a long
    text would hang training and fill the memory, so it is refused at its
    line (the checker counts a text as one word)."""
    d = files
    spec = d / "pairs.fgl"
    spec.write_text(GRAPH.replace("tokens(words[a])",
                                  "tokens(words[a]) & tokens(lower(words[a]))"), encoding="utf-8")
    bad = d / "long.jsonl"
    nodes = [{"id": "a", "words": "x y", "label": "L0"},
             {"id": "b", "words": " ".join(f"w{k}" for k in range(400)), "label": "L1"}]
    bad.write_text(json.dumps({"nodes": nodes[:1], "edges": []}) + "\n"
                   + json.dumps({"nodes": nodes, "edges": [{"source": "a", "target": "b"}]})
                   + "\n")
    code, err = _run_err(["train", str(spec), "--train", str(bad), "-o", str(d / "x.fglm"),
                          "-q"], capsys)
    assert code == 2, err
    assert f"{bad}:2: column 'words' holds 400 words here, and the conjunction at {spec}:4:" \
           in err and "would give 160,000 items at one position" in err, err
