"""Documents mean the same from Python as from a file: a ``within document``
template links the sequences of one document, whether the documents come
from ``-DOCSTART-`` lines or from the API's ``documents`` ids, and ``fgl tag``
writes the document boundaries back."""
from __future__ import annotations

import re

import numpy as np
from support.cli import run
from support.paths import STDLIB
from support.sentences import skip_documents

from fgl.api import CRF
from fgl.io.conll import read_conll, write_conll

SKIP = STDLIB / "skip_chain.fgl"


def _files(tmp_path):
    train, test = skip_documents(6, seed=1), skip_documents(4, seed=2)
    paths = []
    for name, sents in (("train.txt", train), ("test.txt", test)):
        with open(tmp_path / name, "w", encoding="utf-8") as fh:
            write_conll(fh, sents, docstart=True)
        paths.append(tmp_path / name)
    return paths


def test_python_documents_build_the_instances_a_file_does(tmp_path):
    train_path, test_path = _files(tmp_path)
    from_file = CRF(SKIP, max_iter=5).fit_file(train_path)
    train = read_conll(train_path)
    X = [[r[:-1] for r in s.rows] for s in train]
    y = [s.column(-1) for s in train]
    docs = [f"doc{s.doc}" for s in train]
    from_python = CRF(SKIP, max_iter=5).fit(X, y, documents=docs)
    np.testing.assert_allclose(from_python.weights, from_file.weights, rtol=1e-9, atol=1e-12)

    test = read_conll(test_path)
    Xt = [[r[:-1] for r in s.rows] for s in test]
    data = from_file.model.encode(test)
    by_doc = from_python.log_partition(Xt, documents=[s.doc for s in test])
    assert len(by_doc) == data.n_sequences == 4                  # one instance per document
    np.testing.assert_allclose(by_doc, from_file.model.log_partition(from_file.weights, data, 1))
    assert from_python.predict(Xt, documents=[s.doc for s in test]) == \
        from_file.predict_sentences(test)


def test_by_default_each_python_sequence_is_its_own_document(tmp_path):
    train_path, test_path = _files(tmp_path)
    crf = CRF(SKIP, max_iter=3).fit_file(train_path)
    test = read_conll(test_path)
    Xt = [[r[:-1] for r in s.rows] for s in test]
    assert len(crf.log_partition(Xt)) == len(test)


def test_tag_writes_the_document_boundaries_back(capsys, tmp_path):
    train_path, test_path = _files(tmp_path)
    model = tmp_path / "skip.fglm"
    code, _, err = run(capsys, "train", SKIP, "--train", train_path, "-o", model, "-q",
                       "--max-iter", "3")
    assert code == 0, err
    out = tmp_path / "tagged.txt"
    code, _, err = run(capsys, "tag", model, test_path, "-o", out)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    assert text.count("-DOCSTART-") == 4
    back, orig = read_conll(out), read_conll(test_path)
    assert [s.doc for s in back] == [s.doc for s in orig]
    assert [s.column(0) for s in back] == [s.column(0) for s in orig]


def test_convergence_advice_fits_the_spec(capsys, tmp_path):
    train_path, _ = _files(tmp_path)
    # every pair of mentions linked (no `nearest`): loops, so one pass does not converge
    text = re.sub(r"(?m)^infer .*$", "infer trp(max_iter = 1, tol = 1e-12)",
                  SKIP.read_text(encoding="utf-8").replace("and nearest", ""))
    spec = tmp_path / "skip_trp.fgl"
    spec.write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "train", spec, "--train", train_path, "-o",
                       tmp_path / "m.fglm", "-q", "--max-iter", "2")
    assert code == 0, err
    assert "did not converge" in err and "`max_iter` is 1" in err
    assert "infer trp" not in err.split("consider", 1)[1]
    loopy = text.replace("infer trp(max_iter = 1, tol = 1e-12)",
                         "infer loopy(max_iter = 1, tol = 1e-12)")
    spec.write_text(loopy, encoding="utf-8")
    code, _, err = run(capsys, "train", spec, "--train", train_path, "-o",
                       tmp_path / "m.fglm", "-q", "--max-iter", "2")
    assert code == 0, err
    advice = err.split("consider", 1)[1]
    assert "damping" in advice and "infer trp" in advice
