"""`fgl draw`: pictures of one instance's factor graph (issue 14, part 3).

The SVG marks carry ids (`var-3`, `factor-skip-0`, `arc-skip-0`,
`segment-2`, `word-5`), so the tests count what was drawn against what the
spec unrolls on the data, open the PNG as an image, and read the fill
colour of each variable of a trained model's picture."""
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from support.paths import STDLIB
from support.specs import SKIP_CHAIN

from fgl.api import CRF
from fgl.cli import main
from fgl.datasets.synth import segment_sequences
from fgl.io.conll import write_conll

pytest.importorskip("matplotlib")

SVG = "{http://www.w3.org/2000/svg}"

CHAIN = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
train { sigma = 3  max_iter = 30 }
"""

FACTORIAL = """columns word, pos, chunk
output pos, chunk
template pos_state:   pos[t] ~ bias, word[t]
template chunk_state: chunk[t] ~ bias, word[t]
template chunk_trans: chunk[t-1..t]
template cross:       (pos[t], chunk[t])
"""

SEMI = """columns word, label
output label
segments max 4 from bio
template segment: s[j] ~ bias, lower(word[u..v]), length
template transition: s[j-1..j]
"""

GRAPH = """input graph
columns words, label
output label
template node: y[a] ~ bias, tokens(words[a])
template cites: (y[a], y[b]) where edge(a, b, "cites")
"""


@pytest.fixture
def d(tmp_path):
    train, _ = segment_sequences(n_types=2, max_len=3, vocab=8, n_train=12, n_test=1, length=10,
                                 seed=2)
    with open(tmp_path / "two.txt", "w", encoding="utf-8") as fh:
        write_conll(fh, train)
    with open(tmp_path / "three.txt", "w", encoding="utf-8") as fh:
        write_conll(fh, train, [[[f"P{int(w[1:]) % 3}"] for w, _ in s.rows] for s in train])
    rows = [line.split() for line in (tmp_path / "three.txt").read_text().splitlines()]
    (tmp_path / "three.txt").write_text(
        "\n".join(" ".join([r[0], r[2], r[1]]) if r else "" for r in rows) + "\n")
    (tmp_path / "long.txt").write_text(
        "".join(f"w{k % 7} {'B-T0' if k % 3 == 0 else 'I-T0'}\n" for k in range(80)))
    (tmp_path / "g.jsonl").write_text(json.dumps({
        "nodes": [{"id": f"node{k}", "words": f"w{k % 3}", "label": f"L{k % 2}"}
                  for k in range(6)],
        "edges": [{"source": "node0", "target": "node2", "type": "cites"},
                  {"source": "node1", "target": "node3", "type": "cites"},
                  {"source": "node2", "target": "node5", "type": "cites"}]}) + "\n")
    for name, text in (("skip.fgl", SKIP_CHAIN), ("chain.fgl", CHAIN), ("fact.fgl", FACTORIAL),
                       ("semi.fgl", SEMI), ("graph.fgl", GRAPH)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def sentence(d, k, name="two.txt"):
    return [line.split() for line in (d / name).read_text().split("\n\n")[k].splitlines()]


def marks(svg_path) -> dict[str, list[ET.Element]]:
    """The SVG's marks by kind (the id's text before its first number)."""
    out: dict[str, list[ET.Element]] = {}
    for el in ET.parse(svg_path).getroot().iter():
        m = re.fullmatch(r"([a-z]+(?:-[A-Za-z_]+)?)-\d+(?:-\d+)?", el.get("id", ""))
        if m:
            out.setdefault(m[1], []).append(el)
    return out


def texts(svg_path) -> list[str]:
    return [t.text for t in ET.parse(svg_path).getroot().iter(SVG + "text") if t.text]


def test_svg_of_a_skip_chain_has_a_mark_per_variable_factor_and_arc(d, capsys):
    out = d / "g.svg"
    assert main(["draw", str(d / "skip.fgl"), str(d / "two.txt"), "--instance", "1",
                 "-o", str(out)]) == 0
    words = [w for w, _ in sentence(d, 1)]
    T = len(words)
    pairs = sum(words[i] == words[j] for i in range(T) for j in range(i + 1, T))
    assert pairs > 0
    got = marks(out)
    assert len(got["var"]) == T
    assert len(got["factor-state"]) == T and len(got["factor-trans"]) == T - 1
    assert len(got["factor-skip"]) == len(got["arc-skip"]) == pairs
    shown = texts(out)
    assert all(w in shown for w in set(words))          # the words, under their circles
    assert {"state", "trans", "skip"} <= set(shown)     # the legend names the templates
    assert capsys.readouterr().err == ""                # short: no window warning


def test_factors_sit_between_their_variables_and_skip_edges_arc_above(d):
    crf = CRF(d / "skip.fgl")
    scene = crf.draw(d / "two.txt", instance=1).scene
    at = {v.id: (v.x, v.y) for v in scene.variables}
    for f in scene.factors:
        name = scene.templates[f.template]
        xs = [at[v][0] for v in f.variables]
        line = at[f.variables[0]][1]
        if name == "state":      # unary: below its variable
            assert f.x == pytest.approx(xs[0], abs=0.3) and f.y < line
        elif name == "trans":    # between its two neighbours, on the line
            assert min(xs) < f.x < max(xs) and f.y == line
        else:                    # a skip edge: an arc above the line, between its ends
            assert f.arc and min(xs) < f.x < max(xs) and f.y > line


def test_png_is_an_image_with_something_drawn(d):
    from matplotlib.image import imread

    out = d / "g.png"
    assert main(["draw", str(d / "skip.fgl"), str(d / "two.txt"), "-o", str(out)]) == 0
    img = imread(out)
    h, w = img.shape[:2]
    assert 100 < h < 3000 and 400 < w < 6000 and w > h
    ink = (img[..., :3].mean(axis=2) < 0.9).mean()     # share of non-white pixels
    assert 0.01 < ink < 0.5


def test_pdf_and_dot_by_suffix_and_dot_on_stdout(d, capsys):
    assert main(["draw", str(d / "chain.fgl"), str(d / "two.txt"), "-o", str(d / "g.pdf")]) == 0
    assert (d / "g.pdf").read_bytes().startswith(b"%PDF")
    assert main(["draw", str(d / "chain.fgl"), str(d / "two.txt"), "-o", str(d / "g.dot")]) == 0
    dot = (d / "g.dot").read_text()
    T = len(sentence(d, 0))
    assert dot.startswith("graph ") and dot.count("shape=circle") == T
    assert dot.count('xlabel="trans"') == T - 1 and dot.count("!\"") >= 2 * T  # pinned places
    assert main(["draw", str(d / "chain.fgl"), str(d / "two.txt")]) == 0
    assert capsys.readouterr().out == dot


def test_tokens_window(d):
    out = d / "w.svg"
    assert main(["draw", str(d / "chain.fgl"), str(d / "long.txt"), "--tokens", "40:46",
                 "-o", str(out)]) == 0
    assert len(marks(out)["var"]) == 6
    assert len(marks(out)["factor-trans"]) == 5
    shown = texts(out)
    assert [str(p) for p in range(40, 46)] == [t for t in shown if t.isdigit()]  # positions
    assert any("tokens 40:46 of 80" in t for t in shown)


def test_long_instance_draws_a_default_window_and_says_so(d, capsys):
    out = d / "w.svg"
    assert main(["draw", str(d / "chain.fgl"), str(d / "long.txt"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "instance 0 has 80 tokens; drawing tokens 0:30 only" in err and "--tokens" in err
    assert len(marks(out)["var"]) == 30
    assert main(["draw", str(d / "chain.fgl"), str(d / "long.txt")]) == 0   # DOT too
    assert capsys.readouterr().out.count("shape=circle") == 30


def test_absurd_sizes_are_refused_with_a_reason(d, capsys):
    long = d / "long.txt"
    long.write_text("".join(f"Same {'B-T0' if k % 3 == 0 else 'I-T0'}\n" for k in range(400)))
    assert main(["draw", str(d / "chain.fgl"), str(long), "--tokens", "0:400"]) == 2
    err = capsys.readouterr().err
    assert "asks for 400 tokens" in err and "more than 150" in err and "--tokens 0:30" in err
    # 150 equal words: 11,175 skip factors
    assert main(["draw", str(d / "skip.fgl"), str(long), "--tokens", "0:150",
                 "-o", str(d / "x.svg")]) == 2
    err = capsys.readouterr().err
    assert "11175 of template 'skip'" in err and "smaller window" in err
    assert not (d / "x.svg").exists()


@pytest.mark.parametrize("tokens, message", [
    ("3:x", "expected A:B"), ("7:2", "is empty"), ("90:95", "has 80 tokens"), (":", "A:B")])
def test_bad_tokens_are_clear_errors(d, capsys, tokens, message):
    assert main(["draw", str(d / "chain.fgl"), str(d / "long.txt"), "--tokens", tokens]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_suffix_is_a_clear_error(d, capsys):
    assert main(["draw", str(d / "chain.fgl"), str(d / "two.txt"), "-o", str(d / "g.jpg")]) == 2
    assert ".svg, .png, .pdf or .dot" in capsys.readouterr().err


def test_graph_input_draws_node_ids_and_edges(d):
    out = d / "g.svg"
    assert main(["draw", str(d / "graph.fgl"), str(d / "g.jsonl"), "-o", str(out)]) == 0
    got = marks(out)
    assert len(got["var"]) == 6 and len(got["factor-node"]) == 6
    assert len(got["factor-cites"]) == 3 and "arc-cites" not in got
    shown = texts(out)
    assert all(f"node{k}" in shown for k in range(6))
    assert not any(t.startswith("w") for t in shown)     # node ids, not the bag of words


def test_label_layers_are_rows(d):
    out = d / "f.svg"
    assert main(["draw", str(d / "fact.fgl"), str(d / "three.txt"), "-o", str(out)]) == 0
    T = len(sentence(d, 0, "three.txt"))
    got = marks(out)
    assert len(got["var"]) == 2 * T and len(got["factor-cross"]) == T
    assert {"pos", "chunk"} <= set(texts(out))
    scene = CRF(d / "fact.fgl").draw(d / "three.txt").scene
    assert sorted({v.y for v in scene.variables}) == sorted({y for _, y, _ in scene.rows})
    assert len(scene.rows) == 2


def test_segments_are_brackets_over_the_gold_spans(d):
    out = d / "s.svg"
    assert main(["draw", str(d / "semi.fgl"), str(d / "two.txt"), "-o", str(out)]) == 0
    tags = [t for _, t in sentence(d, 0)]
    n_segments = sum(not t.startswith("I-") for t in tags)
    got = marks(out)
    assert len(got["segment"]) == len(got["var"]) == n_segments
    assert len(got["factor-segment"]) == n_segments
    assert len(got["factor-transition"]) == n_segments - 1
    assert len(got["word"]) == len(tags)
    assert any("the gold segmentation" in t for t in texts(out))


def test_a_trained_model_colours_variables_by_predicted_label(d):
    model = d / "m.fglm"
    assert main(["train", str(d / "chain.fgl"), "--train", str(d / "two.txt"), "-o",
                 str(model), "-q"]) == 0
    out = d / "m.svg"
    assert main(["draw", str(model), str(d / "two.txt"), "--instance", "2", "-o", str(out)]) == 0
    crf = CRF.load(model)
    rows = [[w] for w, _ in sentence(d, 2)]
    labels = crf.predict([rows])[0]
    probs = [p[y] for p, y in zip(crf.predict_marginals([rows])[0], labels)]
    assert len(set(labels)) >= 2
    fills, opacity = {}, {}
    for k, g in enumerate(sorted(marks(out)["fill"], key=lambda g: int(g.get("id")[5:]))):
        style = next(g.iter(SVG + "path")).get("style")
        fills[k] = re.search(r"fill: (#[0-9a-f]{6})", style)[1]
        opacity[k] = float(re.search(r"opacity: ([0-9.]+)", style)[1]) \
            if "opacity" in style else 1.0
    for i in range(len(labels)):
        for j in range(len(labels)):
            assert (fills[i] == fills[j]) == (labels[i] == labels[j])
    assert np.allclose([opacity[k] for k in range(len(labels))],      # shaded by marginal
                       [0.2 + 0.8 * p for p in probs], atol=1e-3)
    assert set(labels) <= set(texts(out))                   # the legend names the labels


def test_python_draw_and_notebook_pictures(d):
    import glob

    crf = CRF(d / "skip.fgl")
    drawing = crf.draw([[["a"], ["b"], ["a"]]])
    assert len(drawing.scene.variables) == 3
    assert sum(f.arc for f in drawing.scene.factors) == 1    # the two a's
    svg = drawing._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and 'id="arc-skip-0"' in svg
    assert crf.draw(d / "long.txt", tokens="10:20").scene.variables[0].index == "10"
    for path in sorted(glob.glob(str(STDLIB / "*.fgl"))):
        spec_crf = CRF(path)
        svg = spec_crf._repr_svg_()
        root = ET.fromstring(svg)
        ids = {el.get("id", "") for el in root.iter()}
        for tpl in spec_crf.spec.templates:
            assert f"factor-{tpl.name}-0" in ids, (path, tpl.name)
        assert any(i.startswith("var-") for i in ids)


def test_a_trained_segment_model_draws_its_predicted_segments(d):
    model = d / "s.fglm"
    assert main(["train", str(d / "semi.fgl"), "--train", str(d / "two.txt"), "-o", str(model),
                 "-q", "--max-iter", "20"]) == 0
    out = d / "s.svg"
    assert main(["draw", str(model), str(d / "two.txt"), "-o", str(out)]) == 0
    crf = CRF.load(model)
    tags = crf.predict([[[w] for w, _ in sentence(d, 0)]])[0]
    got = marks(out)
    assert len(got["segment"]) == sum(not t.startswith("I-") for t in tags)
    assert any("the predicted segmentation" in t for t in texts(out))


# ---------------------------------------------------------------- issue 26: words, gold, key

LONG_WORDS = ["International", "Business", "Machines", "announced", "restructuring"]


def test_long_words_are_drawn_whole_and_turned(d):
    (d / "long_words.txt").write_text("".join(f"{w} O\n" for w in LONG_WORDS) + "\nab O\n")
    out = d / "w.svg"
    assert main(["draw", str(d / "chain.fgl"), str(d / "long_words.txt"), "-o", str(out)]) == 0
    shown = texts(out)
    assert set(LONG_WORDS) <= set(shown)                 # whole, not "Interna…"
    assert not any("\u2026" in t for t in shown)
    words = marks(out)["word"]
    assert len(words) == len(LONG_WORDS)
    assert all("rotate(-55" in ET.tostring(g, encoding="unicode") for g in words)   # turned
    out2 = d / "w2.svg"                                  # short words stay level
    assert main(["draw", str(d / "chain.fgl"), str(d / "long_words.txt"), "--instance", "1",
                 "-o", str(out2)]) == 0
    assert "rotate(-55" not in ET.tostring(marks(out2)["word"][0], encoding="unicode")


def ring_colour(g) -> str:
    return re.search(r"stroke: (#[0-9a-f]{6})", next(g.iter(SVG + "path")).get("style"))[1]


def test_a_trained_models_picture_marks_gold_against_predicted_and_keys_the_shades(d):
    model = d / "m.fglm"
    assert main(["train", str(d / "chain.fgl"), "--train", str(d / "two.txt"), "-o",
                 str(model), "-q", "--max-iter", "3"]) == 0          # a model with mistakes
    crf = CRF.load(model)
    for k in range(12):
        gold = [t for _, t in sentence(d, k)]
        pred = crf.predict([[[w] for w, _ in sentence(d, k)]])[0]
        if 0 < sum(p != g for p, g in zip(pred, gold)) < len(gold):
            break
    else:
        pytest.skip("no sentence with both right and wrong labels")
    out = d / "g.svg"
    assert main(["draw", str(model), str(d / "two.txt"), "--instance", str(k), "-o",
                 str(out)]) == 0
    rings = sorted(marks(out)["var"], key=lambda g: int(g.get("id")[4:]))
    wrong = [p != g for p, g in zip(pred, gold)]
    from fgl.report.draw_render import RIGHT, WRONG
    assert [ring_colour(g) for g in rings] == [WRONG if w else RIGHT for w in wrong]
    golds = {int(g.get("id")[5:]): "".join(g.itertext()).strip()
             for g in marks(out).get("gold", [])}
    assert golds == {i: gold[i] for i, w in enumerate(wrong) if w}   # the gold label above
    shown = " ".join(texts(out))
    assert "shade: marginal probability of the predicted label" in shown
    assert "p = 0.25" in shown and "= gold" in shown and "≠ gold" in shown
    dot = crf.draw(d / "two.txt", instance=k).dot()
    assert dot.count(f'color="{WRONG}", penwidth=2') == sum(wrong) and "gold " in dot
    plain = d / "plain.svg"                              # an untrained spec: no rings, no key
    assert main(["draw", str(d / "chain.fgl"), str(d / "two.txt"), "-o", str(plain)]) == 0
    assert "gold" not in marks(plain) and "shade:" not in " ".join(texts(plain))


def test_a_trained_segment_models_picture_draws_the_gold_segmentation(d):
    model = d / "s.fglm"
    assert main(["train", str(d / "semi.fgl"), "--train", str(d / "two.txt"), "-o", str(model),
                 "-q", "--max-iter", "5"]) == 0
    out = d / "s.svg"
    assert main(["draw", str(model), str(d / "two.txt"), "-o", str(out)]) == 0
    tags = [t for _, t in sentence(d, 0)]
    got = marks(out)
    assert len(got["gold-segment"]) == sum(not t.startswith("I-") for t in tags)
    assert "shade: mean marginal probability of the segment's tokens" in " ".join(texts(out))
