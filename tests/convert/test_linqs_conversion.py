"""`fgl convert linqs`: LINQS .content/.cites pairs (the CiteSeer and Cora
files of Sen et al. 2008) as JSON-lines graphs — both word layouts, the
defects of the real files dropped and counted, malformed lines at
file:line, seeded splits and withheld labels, and CiteSeer itself read in
place from ../shared/data when it is there."""
from __future__ import annotations

import json

import pytest
from support.paths import require_shared
from support.specs import GRAPH

from fgl.api import CRF
from fgl.cli import main
from fgl.convert.linqs import read_linqs
from fgl.io.graphs import read_graphs

# five papers, four dictionary words; labels A and B
CONTENT = """p1\t1\t0\t0\t1\tA
p2\t0\t1\t0\t0\tB
p3\t1\t1\t0\t0\tA
p4\t0\t0\t0\t0\tB
p5\t0\t0\t1\t1\tA
"""
# cited<TAB>citing: 5 links kept; dropped: 2 lines naming the unknown paper
# x9 (one id), 1 self-link, 1 repeat, 1 reverse of a kept link
CITES = """p1\tp2
p1\tp3
p2\tx9
p3\tp3
p1\tp2
p2\tp1
x9\tp5
p4\tp5
p5\tp1
p2\tp4
"""

SPEC = GRAPH.replace("max_iter = 10", "max_iter = 20")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def pair(tmp_path):
    content, cites = tmp_path / "tiny.content", tmp_path / "tiny.cites"
    content.write_text(CONTENT)
    cites.write_text(CITES)
    return content, cites


def test_a_tiny_pair_round_trips(pair, tmp_path, capsys):
    content, cites = pair
    out = tmp_path / "tiny.jsonl"
    code, stdout, err = run(capsys, "convert", "linqs", content, cites, "-o", out)
    assert code == 0, err
    assert stdout.splitlines() == [
        f"{content}: 5 papers, 2 labels (A 3, B 2), 4 word columns",
        f"{cites}: 10 lines, 5 links (one per pair of papers); dropped 2 naming papers not "
        "listed, 1 self-links, 1 repeats, 1 reverses of a link kept; 0 papers in no link",
        f"wrote {out}: one graph, 5 papers, 5 links"]
    assert err.splitlines() == [
        f"fgl: warning: {cites}:3: 2 links (the first here) name papers that {content} does "
        "not list (1 ids: 'x9'); skipped them",
        f"fgl: warning: {cites}:4: 1 self-links (the first here); skipped them",
        f"fgl: warning: {cites}:5: 1 repeated links (the first here); kept each link once"]
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    graph = json.loads(lines[0])
    assert graph["nodes"] == [
        {"id": "p1", "words": "w0 w3", "label": "A"},
        {"id": "p2", "words": "w1", "label": "B"},
        {"id": "p3", "words": "w0 w1", "label": "A"},
        {"id": "p4", "words": "", "label": "B"},
        {"id": "p5", "words": "w2 w3", "label": "A"}]
    assert graph["edges"] == [      # source: the citing paper (second column)
        {"source": s, "target": t, "type": "cites"}
        for s, t in (("p2", "p1"), ("p3", "p1"), ("p5", "p4"), ("p1", "p5"), ("p4", "p2"))]
    # the graph reads as `input graph` data and trains
    crf = CRF(SPEC)
    graphs = read_graphs(out, crf.spec)
    assert len(graphs) == 1 and len(graphs[0].rows) == 5 and len(graphs[0].edges) == 5
    crf.fit_sentences(graphs)
    assert crf.model.layers[0].labels == ["A", "B"]


def test_the_word_list_layout(tmp_path):
    content, cites = tmp_path / "l.content", tmp_path / "l.cites"
    content.write_text("a\tw5 w9\tX\nb\t\tY\nc\tw9\tX\n")
    cites.write_text("a b\nb\tc\n")      # (spaces separate the ids too)
    data = read_linqs(content, cites)
    assert data.layout == "lists" and data.vocabulary == 2
    assert [(p.id, p.words, p.label) for p in data.papers] == [
        ("a", "w5 w9", "X"), ("b", "", "Y"), ("c", "w9", "X")]
    assert data.links == [("b", "a"), ("c", "b")] and data.counts.dropped == 0


@pytest.mark.parametrize("content, cites, where, says", [
    ("p1\t1\t0\tA\np2\t0\t2\tB\n", "", "content:2",
     "word column 2 of 2 (field 3) holds '2'; expected 0 or 1"),
    ("p1\t1\t0\tA\np2\t0\tB\n", "", "content:2",
     "found 3 tab-separated fields; expected 4 (a paper id, 2 word columns of 0 or 1, a label)"),
    ("p1 1 0 A\n", "", "content:1",
     "found 1 tab-separated field; expected a paper id, its words"),
    ("p1\tw1\tA\np2\tw2\tB\tC\n", "", "content:2",
     "found 4 tab-separated fields; expected 3 (a paper id, its word names"),
    ("p1\t1\tA\n\np1\t0\tB\n", "", "content:3", "paper 'p1' again (first on line 1)"),
    ("p1\t1\t\n", "", "content:1", "paper 'p1' has an empty label"),
    ("", "", "content:1", "no papers (the file is empty)"),
    ("p1\t1\tA\np2\t0\tB\n", "p1\tp2\np1\tp2\tp3\n", "cites:2",
     "found 3 fields ('p1\\tp2\\tp3'); expected two paper ids, the cited paper then the "
     "citing one"),
    ("p1\t1\tA\n", "p1\n", "cites:1", "found 1 field ('p1'); expected two paper ids"),
])
def test_malformed_lines_are_located(tmp_path, capsys, content, cites, where, says):
    c, links = tmp_path / "bad.content", tmp_path / "bad.cites"
    c.write_text(content)
    links.write_text(cites)
    code, out, err = run(capsys, "convert", "linqs", c, links, "-o", tmp_path / "x.jsonl")
    assert code == 2 and out == ""
    assert err.startswith(f"fgl: {tmp_path / 'bad'}.{where}: {says}"), err


def test_missing_files_and_bad_bytes(tmp_path, capsys):
    code, _, err = run(capsys, "convert", "linqs", tmp_path / "no.content", tmp_path / "no.cites")
    assert code == 2 and f"{tmp_path / 'no.content'}:0: no such file" in err
    c = tmp_path / "latin.content"
    c.write_bytes(b"p1\t1\tA\np\xe92\t0\tB\n")
    (tmp_path / "e.cites").write_text("")
    code, _, err = run(capsys, "convert", "linqs", c, tmp_path / "e.cites")
    assert code == 2 and f"{c}:2: byte 0xe9 is not valid utf-8" in err
    code, out, err = run(capsys, "convert", "linqs", c, tmp_path / "e.cites", "--encoding",
                         "latin-1")
    assert code == 0 and json.loads(out)["nodes"][1]["id"] == "p\xe92"


def test_split_is_seeded_and_reproducible(pair, tmp_path, capsys):
    content, cites = pair

    def split(seed: int, tag: str) -> tuple[str, str, str]:
        train, test = tmp_path / f"train{tag}.jsonl", tmp_path / f"test{tag}.jsonl"
        code, out, err = run(capsys, "convert", "linqs", content, cites, "--split", "0.6",
                             "--seed", seed, "-o", train, "--test-out", test)
        assert code == 0, err
        return train.read_text(), test.read_text(), out.splitlines()[-1]

    a, b, c = split(1, "a"), split(1, "b"), split(2, "c")
    assert a[:2] == b[:2]
    assert a[:2] != c[:2]
    train, test = json.loads(a[0]), json.loads(a[1])
    assert len(train["nodes"]) == 3 and len(test["nodes"]) == 2     # round(0.6 · 5)
    assert sorted(n["id"] for n in train["nodes"] + test["nodes"]) == [f"p{k}" for k in range(1, 6)]
    for g in (train, test):
        ids = {n["id"] for n in g["nodes"]}
        assert all(e["source"] in ids and e["target"] in ids for e in g["edges"])
    across = 5 - len(train["edges"]) - len(test["edges"])
    assert a[2].endswith(f"{across} links across the split dropped (seed 1)")


def test_withhold_is_seeded_and_writes_the_gold_graph(pair, tmp_path, capsys):
    content, cites = pair

    def withhold(seed: int, tag: str) -> tuple[dict, dict]:
        given, gold = tmp_path / f"given{tag}.jsonl", tmp_path / f"gold{tag}.jsonl"
        code, _, err = run(capsys, "convert", "linqs", content, cites, "--withhold", "0.4",
                           "--seed", seed, "-o", given, "--gold-out", gold)
        assert code == 0, err
        return json.loads(given.read_text()), json.loads(gold.read_text())

    given, gold = withhold(3, "a")
    assert (given, gold) == withhold(3, "b")
    null = {n["id"] for n in given["nodes"] if n["label"] is None}
    marked = {n["id"] for n in gold["nodes"] if n.get("withheld")}
    assert len(null) == 2 and null == marked                             # round(0.4 · 5)
    assert all(n["label"] is not None for n in gold["nodes"])
    assert given["edges"] == gold["edges"]
    seeds = {frozenset(n["id"] for n in withhold(s, f"s{s}")[0]["nodes"] if n["label"] is None)
             for s in range(6)}
    assert len(seeds) > 1                                                # the seed matters
    # the pair is what within-network training and evaluation read
    spec = tmp_path / "g.fgl"
    spec.write_text(SPEC)
    model = tmp_path / "m.fglm"
    code, _, err = run(capsys, "train", spec, "--train", tmp_path / "givena.jsonl", "-o", model,
                       "-q")
    assert code == 0, err
    code, out, err = run(capsys, "eval", model, tmp_path / "golda.jsonl")
    assert code == 0, err
    assert out.startswith("scored: the 2 withheld nodes (3 given labels clamped as evidence)")


@pytest.mark.parametrize("argv, says", [
    (["--split", "0.5", "--withhold", "0.5", "-o", "a", "--test-out", "b"],
     "--split and --withhold: choose one"),
    (["--split", "0.5", "-o", "a"], "--split writes two graphs: name them with -o FILE and "
                                    "--test-out FILE"),
    (["--withhold", "0.5", "--gold-out", "b"], "--withhold writes two graphs"),
    (["--split", "1.5", "-o", "a", "--test-out", "b"],
     "--split 1.5: expected a fraction between 0 and 1"),
    (["--test-out", "b", "-o", "a"], "--test-out goes with --split"),
    (["--withhold", "0.5", "-o", "a", "--gold-out", "a"], "-o and --gold-out name the same file"),
    (["--withhold", "0.01", "-o", "a", "--gold-out", "b"],
     "--withhold 0.01 of 5 papers chooses 0; choose at least one paper and leave at least one"),
])
def test_option_mistakes(pair, tmp_path, capsys, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    content, cites = pair
    code, _, err = run(capsys, "convert", "linqs", content, cites, *argv)
    assert code == 2 and says in err, err


def test_citeseer(tmp_path, capsys):
    """CiteSeer as ../shared/data holds it: 3,312 papers in 6 classes and
    4,536 links — Sen et al. 2008's counts after links to missing papers and
    repeats are dropped, which this copy has already done (its .cites holds
    4,536 distinct undirected links, none naming a missing paper)."""
    content = require_shared("data", "citeseer", "citeseer.content")
    cites = require_shared("data", "citeseer", "citeseer.cites")
    out = tmp_path / "citeseer.jsonl"
    code, stdout, err = run(capsys, "convert", "linqs", content, cites, "-o", out)
    assert code == 0 and err == "", err
    assert stdout.splitlines()[:2] == [
        f"{content}: 3312 papers, 6 labels (c0 249, c1 590, c2 668, c3 701, c4 596, c5 508), "
        "3703 distinct words",
        f"{cites}: 4536 lines, 4536 links (one per pair of papers); 48 papers in no link"]
    data = read_linqs(content, cites)
    assert len(data.papers) == 3312 and len(data.links) == 4536
    assert len({frozenset(link) for link in data.links}) == 4536
    assert data.counts.dropped == 0 and data.vocabulary == 3703
    graphs = read_graphs(out, CRF(SPEC).spec)
    assert len(graphs) == 1 and len(graphs[0].rows) == 3312 and len(graphs[0].edges) == 4536
