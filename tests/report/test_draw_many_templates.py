"""`fgl draw` of a model with many templates stays readable (issue 49): a
CRF++ template of 15 lines converted and trained, drawn — every template
its own colour (and dash), the key grouped by kind, a variable's unary
factors apart from each other, the predicted label written in each
variable, the O fill dark enough for its shading to show, and a title
without "template template"."""
import re
import xml.etree.ElementTree as ET

import pytest

from fgl.api import CRF
from fgl.cli import main
from fgl.datasets.synth import segment_sequences
from fgl.io.conll import write_conll
from fgl.report.draw_layout import by_kind
from fgl.report.draw_render import OUTSIDE, SQUARE, shade, template_colour, template_dashed

pytest.importorskip("matplotlib")

SVG = "{http://www.w3.org/2000/svg}"
TEMPLATE = "".join(f"U{k:02d}:%x[{k % 5 - 2},0]\n" for k in range(14)) + "\nB\n"


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    d = tmp_path_factory.mktemp("many")
    train, _ = segment_sequences(n_types=2, max_len=3, vocab=8, n_train=10, n_test=1,
                                 length=8, seed=3)
    with open(d / "data.txt", "w", encoding="utf-8") as fh:
        write_conll(fh, train)
    (d / "template").write_text(TEMPLATE, encoding="utf-8")
    assert main(["convert", "crfpp", str(d / "template"), "--columns", "word,label",
                 "-o", str(d / "crfpp.fgl")]) == 0
    crf = CRF(d / "crfpp.fgl", max_iter=5).fit_file(d / "data.txt")
    return d, crf, crf.draw(d / "data.txt")


def test_fifteen_templates_get_fifteen_looks_grouped_by_kind(drawn):
    _, crf, drawing = drawn
    scene = drawing.scene
    looks = {(template_colour(t), template_dashed(t)) for t in range(len(scene.templates))}
    assert len(scene.templates) == 15 and len(looks) == 15
    assert len({template_colour(t) for t in range(20)}) == 20     # no colour twice in 20
    assert by_kind(scene) == [("unary", list(range(14))), ("pairwise", [14])]


def test_a_variables_unary_factors_stay_apart_and_under_it(drawn):
    scene = drawn[2].scene
    for v in scene.variables:
        mine = [(f.x, f.y) for f in scene.factors if f.variables == [v.id]]
        assert len(mine) == 14
        gaps = [max(abs(a[0] - b[0]), abs(a[1] - b[1])) for i, a in enumerate(mine)
                for b in mine[i + 1:]]
        assert min(gaps) >= SQUARE          # (centres a square apart: no overlap)
        assert all(abs(x - v.x) + SQUARE / 2 < 0.5 for x, _ in mine)   # in its own column


def test_labels_are_written_in_and_o_shows_its_shade(drawn, tmp_path):
    d, crf, drawing = drawn
    out = tmp_path / "g.svg"
    drawing.save(out)
    root = ET.parse(out).getroot()
    written = [el.findtext(f".//{SVG}text") for el in root.iter()
               if re.fullmatch(r"tag-\d+", el.get("id", ""))]
    assert written == [v.tag for v in drawing.scene.variables]
    grey = int(OUTSIDE[1:3], 16) / 255
    assert 1 - (1 - grey) * shade(0.0) < 0.95          # even p = 0 is visibly grey


def test_a_converted_templates_title_names_its_file_once(drawn):
    d, crf, drawing = drawn
    assert crf.spec.name == "template (converted from CRF++)"
    assert "template template" not in drawing.scene.title
