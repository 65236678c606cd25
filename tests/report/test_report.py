"""`fgl report` and `CRF.report` (issue 49): one self-contained HTML page
per model — the spec's lines, the engine's explanation, the training curve
the model file keeps, the weights, and with data the evaluation, the
confusion matrix and the instance browser — for chain, skip-chain,
semi-Markov and graph models; no address outside the file."""
import re
import sys
from html import unescape

import numpy as np
import pytest
from support.paths import require_shared
from support.report_models import external_addresses, write_models

from fgl.api import CRF
from fgl.cli import main
from fgl.evaluation.confusion import matrix
from fgl.modelfile.model_files import load_model


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("report"))


def report_of(models, name, tmp_path, *extra) -> str:
    model, data = models[name]
    out = tmp_path / f"{name}.html"
    assert main(["report", str(model), str(data), "-o", str(out), *extra]) == 0
    return out.read_text(encoding="utf-8")


def texts(html: str, css: str, tag: str = "text") -> list[str]:
    """The text of every ``tag`` element of class ``css`` (tags inside stripped)."""
    return [unescape(re.sub(r"<[^>]+>", "", m)) for m in
            re.findall(rf'<{tag}[^>]*class="{css}"[^>]*>(.*?)</{tag}>', html, re.S)]


def test_the_address_check_finds_every_kind_of_outside_address():
    page = ('<img src="https://x.org/a.png"><link href="//cdn.example.com/s.css">'
            '<style>@import "a.css"; b{background:url(pic.png)}</style><a href="#ok">'
            '<img src="data:image/png;base64,AAAA">')
    found = external_addresses(page)
    assert any("x.org" in a for a in found) and any("cdn.example" in a for a in found)
    assert any(a.startswith("@import") for a in found) and "pic.png" in found
    assert "#ok" not in found and not any(a.startswith("data:") for a in found)


@pytest.mark.parametrize("name", ["chain", "skip", "semi", "graph"])
def test_every_structure_gives_a_whole_page_with_no_outside_address(models, tmp_path, name):
    html = report_of(models, name, tmp_path)
    assert external_addresses(html) == []
    crf = CRF.load(models[name][0])
    assert texts(html, "code", "td") == [line or " " for line in crf.spec.text.splitlines()]
    for part in ("spec", "engine", "training", "weights", "evaluation", "instances"):
        assert f'id="{part}"' in html
    assert unescape(re.search(r'<pre class="explain">(.*?)</pre>', html, re.S)[1]) == \
        crf.explain()                                   # fgl explain's words
    assert html.count('<svg class="graph"') >= 1        # a factor graph drawn


@pytest.mark.parametrize("name", ["chain", "skip", "semi", "graph"])
def test_the_confusion_matrix_and_scores_are_the_evaluations(models, tmp_path, name):
    html = report_of(models, name, tmp_path)
    crf = CRF.load(models[name][0])
    sentences = crf.read(models[name][1])
    from fgl.report.model_report import build_report
    scored = build_report(crf, sentences).scored
    report = scored.reports[crf.spec.outputs[0]]
    if name != "graph":
        gold = [s.column(-1) for s in sentences]
        assert report.overall.f1 == crf.evaluate(
            [[r[:-1] for r in s.rows] for s in sentences], gold).overall.f1
    labels, counts = matrix(report.confusion, 40)
    confusion = html[html.index('class="heat confusion"'):]
    assert texts(confusion, "row-label") == labels == texts(confusion, "col-label")
    cells = [int(t) for t in re.findall(r'fill="#(?:ffffff|222222)">(\d+)</text>',
                                        confusion.split("</svg>")[0])]
    assert sorted(cells) == sorted(int(n) for n in counts.ravel() if n)
    assert f"<b>{report.overall.f1:.2f}</b>" in html


def test_skip_edges_are_arcs_and_graph_edges_lines(models, tmp_path):
    html = report_of(models, "skip", tmp_path, "--first", "1", "--worst", "0")
    crf = CRF.load(models["skip"][0])
    words = [r[0] for r in crf.read(models["skip"][1])[0].rows][:30]
    pairs = sum(a == b for i, a in enumerate(words) for b in words[i + 1:])
    assert pairs and html.count('class="arc"') == pairs
    html = report_of(models, "graph", tmp_path, "--first", "1", "--worst", "0")
    graph = html[html.index('<svg class="graph"'):]
    graph = graph[:graph.index("</svg>")]
    assert graph.count('class="variable"') == 7 and 'class="arc"' not in graph
    assert all(f"p0-{k}" in graph for k in range(7))      # the nodes by id
    # node factors (7) and cites edges (4), each joined by lines to its variables
    assert graph.count('class="factor"') == 11 and graph.count("<line ") == 7 + 2 * 4


def test_sampled_instances_are_the_first_and_those_with_most_errors(models, tmp_path):
    crf = CRF.load(models["chain"][0])
    sentences = crf.read(models["chain"][1])
    from fgl.report.instances import sample
    from fgl.report.model_report import build_report
    scored = build_report(crf, sentences).scored
    errors = [sum(a != b for a, b in zip(p, g)) for p, g in
              zip(scored.predicted["label"], scored.gold["label"])]
    chosen = sample(scored, first=2, worst=3)
    assert [i for i, _ in chosen[:2]] == [0, 1]
    rest = [i for i, _ in chosen[2:]]
    assert all(i >= 2 and errors[i] > 0 for i in rest)
    assert sorted((errors[i] for i in range(2, len(errors)) if errors[i]), reverse=True)[
        :len(rest)] == [errors[i] for i in rest]


def test_the_curve_is_kept_in_the_model_file_and_drawn(models, tmp_path):
    crf = CRF.load(models["chain"][0])
    _, _, meta = load_model(models["chain"][0])
    curve = meta["curve"]["iterations"]
    assert len(curve["objective"]) == meta["iterations"] == len(curve["gradient_norm"])
    assert curve["iteration"] == list(range(1, meta["iterations"] + 1))
    assert np.all(np.diff(curve["objective"]) <= 1e-9)   # L-BFGS's iterates descend
    html = crf.report().html
    chart = re.search(r'aria-label="objective[^"]*".*?<polyline[^>]*points="([^"]*)"', html,
                      re.S)
    assert len(chart[1].split()) == meta["iterations"]
    assert 'id="evaluation"' not in html               # no data: no evaluation
    assert "curve" not in crf.inspect()["training"]    # (fgl inspect prints the summary)


def test_a_model_file_without_a_curve_still_loads_and_reports(models, tmp_path):
    crf = CRF.load(models["chain"][0])
    crf.training_meta = {k: v for k, v in crf.training_meta.items() if k != "curve"}
    crf.save(tmp_path / "old.fglm")
    old = CRF.load(tmp_path / "old.fglm")
    assert "curve" not in old.training_meta
    assert "No training curve" in old.report().html


def test_the_report_object_saves_and_shows_in_a_notebook(models, tmp_path):
    crf = CRF.load(models["semi"][0])
    report = crf.report(models["semi"][1], first=1, worst=1)
    frame = report._repr_html_()                 # (a frame: the notebook's styles stay apart)
    assert frame.startswith("<iframe srcdoc=") and unescape(
        re.search(r'srcdoc="([^"]*)"', frame)[1]) == report.html
    report.save(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == report.html
    assert report.html.count('<section class="instance"') <= 2


def test_user_errors_are_one_line(models, tmp_path, capsys):
    model, data = models["chain"]
    assert main(["report", str(model.with_suffix(".fgl")), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert main(["report", str(model), str(data), "-o", str(data)]) == 2
    assert "Traceback" not in capsys.readouterr().err
    unlabelled = tmp_path / "plain.txt"
    unlabelled.write_text("w1\nw2\n", encoding="utf-8")
    assert main(["report", str(model), str(unlabelled), "-o", str(tmp_path / "r.html")]) == 2
    assert "label column" in capsys.readouterr().err


def test_a_report_on_conll2000s_test_set_stays_under_5_mb(tmp_path):
    conll = require_shared("data", "conll2000")
    spec = tmp_path / "c.fgl"
    spec.write_text("columns word, pos, chunk\noutput chunk\nobs w = word[t-1..t+1]\n"
                    "template state: y[t] ~ bias, w, pos[t]\ntemplate trans: y[t-1..t]\n"
                    "train { max_iter = 15 }\n", encoding="utf-8")
    train = tmp_path / "train.txt"
    train.write_text("\n\n".join((conll / "train.txt").read_text().split("\n\n")[:200]) + "\n",
                     encoding="utf-8")
    CRF(spec).fit_file(train).save(tmp_path / "c.fglm")
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "c.fglm"), str(conll / "test.txt"), "-o",
                 str(out)]) == 0
    assert out.stat().st_size <= 5_000_000
    assert out.read_text(encoding="utf-8").count('<section class="instance"') == 15


def test_the_report_needs_no_matplotlib(models, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # (an import of it would fail)
    crf = CRF.load(models["skip"][0])
    html = crf.report(models["skip"][1], first=1, worst=0).html
    assert html.count('<svg class="graph"') == 1 and 'class="arc"' in html
