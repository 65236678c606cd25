"""``fgl dump``: every weight of the model once, with its template,
attribute and labels, the values the model's arrays hold; --non-zero,
--template, the stable order and the refusals."""
from __future__ import annotations

from collections import Counter

import numpy as np
from support.cli import run, train_model
from support.paths import STDLIB

from fgl import CRF
from fgl.report.inspect import weights

L1_SPEC = STDLIB / "hmm_like.fgl"


def _lines(text: str) -> list[tuple[str, str, str, float]]:
    out = []
    for line in text.rstrip("\n").split("\n"):
        template, attribute, labels, weight = line.split("\t")
        out.append((template, attribute, labels, float(weight)))
    return out


def test_every_weight_once(capsys, tmp_path):
    model, _, _ = train_model(capsys, tmp_path, L1_SPEC, "--l1", 0.5)
    crf = CRF.load(model)
    code, out, err = run(capsys, "dump", model)
    assert code == 0, err
    head, body = out.split("\n", 1)
    assert head == "template\tattribute\tlabels\tweight"
    got = _lines(body)
    want = [(x.template, x.attribute, " ".join(x.labels), x.weight)
            for x in weights(crf.model, crf.weights)]
    assert len(got) == len(crf.weights) == len(want)
    assert Counter(got) == Counter(want)          # each feature once, its stored weight
    assert len(set(got)) == len(got)
    zeros = int(np.sum(crf.weights == 0))
    assert zeros > 0                              # (L1: some weights are exactly 0)

    code, again, _ = run(capsys, "dump", model, "--non-zero", "--no-header")
    nonzero = _lines(again)
    assert len(nonzero) == len(got) - zeros and all(w != 0 for *_, w in nonzero)
    assert [x for x in got if x[3] != 0] == nonzero   # the same order, zeros left out
    assert run(capsys, "dump", model)[1] == out       # stable

    first = crf.model.templates[-1].name
    code, one, _ = run(capsys, "dump", model, "--template", first, "--no-header")
    assert {t for t, *_ in _lines(one)} == {first}
    code, _, err = run(capsys, "dump", model, "--template", "nosuch")
    assert code != 0 and "no template 'nosuch'" in err
