"""``fgl tag --nbest K`` and ``--probability``: CRF++'s crf_test -n / -v1
layout (``# RANK P`` or ``# P`` before each copy of a sentence), the best
copy agreeing with plain ``fgl tag``, and the refusals."""
from __future__ import annotations

import pytest
from support.cli import run, train_model


def _copies(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header fields, token field lists) of each block of the output."""
    out = []
    for block in text.strip("\n").split("\n\n"):
        head, *rows = block.split("\n")
        assert head.startswith("# "), block
        out.append((head[2:].split(), [r.split() for r in rows]))
    return out


def test_nbest_blocks(capsys, tmp_path):
    model, _, test = train_model(capsys, tmp_path)
    code, plain, err = run(capsys, "tag", model, test)
    assert code == 0, err
    code, out, err = run(capsys, "tag", model, test, "--nbest", 3)
    assert code == 0, err
    sentences = [[r.split() for r in b.split("\n")] for b in plain.strip("\n").split("\n\n")]
    copies = _copies(out)
    assert len(copies) == 3 * len(sentences)
    for i, sent in enumerate(sentences):
        ranked = copies[3 * i:3 * i + 3]
        assert [int(h[0]) for h, _ in ranked] == [0, 1, 2]
        probs = [float(h[1]) for h, _ in ranked]
        assert 1.0 >= probs[0] >= probs[1] >= probs[2] > 0.0
        assert ranked[0][1] == sent            # the best is plain tag's labelling
        for _, rows in ranked:                 # the input's fields, one label appended
            assert [r[:-1] for r in rows] == [r[:-1] for r in sent]
        assert len({tuple(r[-1] for r in rows) for _, rows in ranked}) == 3

    code, prob_out, err = run(capsys, "tag", model, test, "--probability")
    assert code == 0, err
    one = _copies(prob_out)
    assert [rows for _, rows in one] == sentences
    assert [h for h, _ in one] == [[h[1]] for h, _ in copies[::3]]


def test_refusals(capsys, tmp_path):
    model, _, test = train_model(capsys, tmp_path)
    code, _, err = run(capsys, "tag", model, test, "--nbest", 2, "--marginals")
    assert code != 0 and "--nbest" in err and "--marginals" in err
    with pytest.raises(SystemExit):
        run(capsys, "tag", model, test, "--nbest", 0)
    assert "at least 1" in capsys.readouterr().err
