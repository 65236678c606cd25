"""`fgl report` in a real browser (issue 49): headless Chromium, driven
over the DevTools protocol on a pipe (tests/support/chromium.py), loads the
report of a chain, a skip-chain and a graph model; the page must render
with no console error and no request leaving the file, and what is on the
rendered page — the spec's lines, the confusion matrix's labels, the
instance chooser, the factor graphs — is read back from its DOM.  A
screenshot of each is saved (under FGL_SCREENSHOTS, when set, else the
test's temporary folder).  Skipped where no Chromium is installed (CI
installs Debian's: .ci/run)."""
import json
import os
from pathlib import Path

import pytest
from support.chromium import Page, find_chromium
from support.report_models import write_models

from fgl.api import CRF
from fgl.cli import main
from fgl.evaluation.confusion import matrix

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get "
                                                         "install chromium; .ci/run does)")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="module")
def page():
    p = Page(CHROMIUM)
    yield p
    p.close()


def shown(page: Page, name: str, models, tmp_path) -> Path:
    """Write ``name``'s report, load it and save its screenshot."""
    model, data = models[name]
    out = tmp_path / f"{name}.html"
    assert main(["report", str(model), str(data), "-o", str(out)]) == 0
    page.events.clear()
    page.load(out)
    folder = Path(os.environ.get("FGL_SCREENSHOTS", tmp_path))
    page.screenshot(folder / f"report-{name}.png")
    assert (folder / f"report-{name}.png").stat().st_size > 10_000
    assert page.errors() == []
    assert page.requests() == [out.resolve().as_uri()]   # the file itself, nothing else
    return out


def js(page: Page, expression: str):
    """The value of ``expression`` in the page, through JSON."""
    return json.loads(page.evaluate(f"JSON.stringify({expression})"))


ALL = "Array.from(document.querySelectorAll('{}')).map(e => e.textContent)"
VISIBLE = ("Array.from(document.querySelectorAll('section.instance'))"
           ".filter(e => e.offsetParent !== null).map(e => e.id)")


@pytest.mark.parametrize("name", ["chain", "skip", "graph"])
def test_the_report_renders_with_its_spec_and_confusion_matrix(page, models, tmp_path, name):
    shown(page, name, models, tmp_path)
    crf = CRF.load(models[name][0])
    lines = js(page, ALL.format("table.spec td.code"))
    assert [line.rstrip() for line in lines] == [line.rstrip() for line in
                                                 crf.spec.text.splitlines()]
    report = crf.report(models[name][1]).scored.reports[crf.spec.outputs[0]]
    labels, _ = matrix(report.confusion, 40)
    assert js(page, ALL.format("svg.confusion text.row-label")) == labels
    assert js(page, ALL.format("svg.confusion text.col-label")) == labels
    headings = js(page, ALL.format("section.part h2"))
    assert headings == ["spec", "engine and inference", "training", "weights", "evaluation",
                        "instances"]
    assert js(page, "document.querySelectorAll('svg.chart polyline').length") >= 2
    # the script shows one instance at a time; the chooser steps through them
    first = js(page, VISIBLE)
    assert len(first) == 1 and first[0] == "inst-0"
    page.evaluate("document.querySelector('.chooser button[data-step=\"1\"]').click()")
    assert js(page, VISIBLE) == ["inst-1"]
    page.evaluate("document.getElementById('show-all').click()")
    assert len(js(page, VISIBLE)) == js(page, "document.querySelectorAll('option').length")


def test_skip_arcs_and_graph_nodes_are_drawn_on_the_page(page, models, tmp_path):
    shown(page, "skip", models, tmp_path)
    assert js(page, "document.querySelectorAll('#inst-0 svg.graph path.arc').length") > 0
    box = js(page, "(r => [r.width, r.height])(document.querySelector('#inst-0 svg.graph')"
                   ".getBoundingClientRect())")
    assert box[0] > 200 and box[1] > 80
    shown(page, "graph", models, tmp_path)
    nodes = js(page, ALL.format("#inst-0 .tok .word"))
    assert nodes == [f"p0-{k}" for k in range(7)]
    assert js(page, "document.querySelectorAll('#inst-0 svg.graph g.variable').length") == 7
