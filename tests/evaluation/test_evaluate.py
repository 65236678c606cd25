import pytest

from fgl.evaluation.evaluate import Report, Scores, chunks, evaluate


def approx(x):
    return pytest.approx(x, abs=1e-9)


def test_hand_computed_basic_case():
    gold = [["B-NP", "I-NP", "O", "B-VP"]]
    pred = [["B-NP", "O", "O", "B-VP"]]
    r = evaluate(gold, pred)
    assert r.scheme == "bio"
    # gold chunks NP[0,2) VP[3,4); predicted NP[0,1) VP[3,4); only VP is right.
    assert (r.overall.support, r.overall.predicted, r.overall.correct) == (2, 2, 1)
    assert r.overall.precision == approx(50.0)
    assert r.overall.recall == approx(50.0)
    assert r.overall.f1 == approx(50.0)
    assert r.chunks["NP"].f1 == approx(0.0) and r.chunks["NP"].support == 1
    assert r.chunks["VP"].f1 == approx(100.0)
    assert r.accuracy == approx(75.0) and r.tokens == 4


def test_per_label_token_scores():
    r = evaluate([["B-NP", "I-NP", "O", "B-VP"]], [["B-NP", "O", "O", "B-VP"]])
    o = r.labels["O"]
    assert (o.support, o.predicted, o.correct) == (1, 2, 1)
    assert o.precision == approx(50.0) and o.recall == approx(100.0)
    assert o.f1 == approx(200 / 3)
    i = r.labels["I-NP"]
    assert (i.support, i.predicted, i.correct, i.f1) == (1, 0, 0, 0.0)
    assert r.labels["B-VP"].f1 == approx(100.0)
    assert set(r.labels) == {"B-NP", "I-NP", "O", "B-VP"}


def test_unequal_precision_and_recall():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]]
    pred = [["B-PER", "I-PER", "O", "B-LOC", "I-LOC"]]
    r = evaluate(gold, pred)
    # gold: PER[0,2) LOC[3,4) LOC[4,5); pred: PER[0,2) LOC[3,5)
    assert r.overall.precision == approx(50.0)
    assert r.overall.recall == approx(100 / 3)
    assert r.overall.f1 == approx(40.0)
    assert r.chunks["LOC"].correct == 0 and r.chunks["LOC"].support == 2


def test_iob2_chunks():
    assert chunks(["B-NP", "I-NP", "B-NP", "O", "B-VP", "I-VP"]) == [
        ("NP", 0, 2), ("NP", 2, 3), ("VP", 4, 6)]


def test_iob1_chunks():
    # I-X after O or after another type starts a chunk; B-X separates same-type chunks.
    assert chunks(["I-NP", "I-NP", "O", "I-NP", "B-NP", "I-VP", "I-NP"]) == [
        ("NP", 0, 2), ("NP", 3, 4), ("NP", 4, 5), ("VP", 5, 6), ("NP", 6, 7)]


def test_iobes_chunks():
    tags = ["S-X", "B-Y", "I-Y", "E-Y", "E-Y", "B-X", "E-X", "I-X", "S-X", "S-X"]
    assert chunks(tags) == [("X", 0, 1), ("Y", 1, 4), ("Y", 4, 5), ("X", 5, 7),
                            ("X", 7, 8), ("X", 8, 9), ("X", 9, 10)]


def test_bilou_aliases():
    assert chunks(["U-X", "B-Y", "L-Y"]) == [("X", 0, 1), ("Y", 1, 3)]


def test_chunk_open_at_end_and_type_with_dash():
    assert chunks(["O", "B-ORG-X", "I-ORG-X"]) == [("ORG-X", 1, 3)]


def test_bare_labels_are_one_token_chunks():
    assert chunks(["PER", "PER", "O", ","]) == [("PER", 0, 1), ("PER", 1, 2), (",", 3, 4)]
    # A bare label also breaks an open chunk.
    assert chunks(["B-NP", ",", "I-NP"]) == [("NP", 0, 1), (",", 1, 2), ("NP", 2, 3)]


def test_plain_scheme():
    r = evaluate([["N", "N", "O", "V"]], [["N", "V", "O", "V"]])
    assert r.scheme == "plain"
    assert r.chunks == {}                       # labels, not chunks
    assert r.labels["N"].support == 2 and r.labels["N"].correct == 1
    assert r.labels["V"].precision == approx(50.0)
    # micro over N and V (O is ignored): 2 right of 3 gold, 3 predicted
    assert (r.overall.correct, r.overall.predicted, r.overall.support) == (2, 3, 3)
    # Plain ignores prefixes entirely when asked for explicitly.
    assert chunks(["B-X", "I-X"], scheme="plain") == [("B-X", 0, 1), ("I-X", 1, 2)]


def test_auto_uses_iob_if_either_side_has_prefixes_mixed_with_bare_labels():
    r = evaluate([["PER", "O"]], [["B-PER", "O"]])
    assert r.scheme == "iob"
    assert r.overall.correct == 1  # PER[0,1) in both


def test_type_mismatch_is_wrong():
    r = evaluate([["B-NP", "I-NP"]], [["B-VP", "I-VP"]])
    assert r.overall.correct == 0 and r.overall.f1 == 0.0
    assert r.accuracy == 0.0


def test_boundary_mismatch_is_wrong():
    r = evaluate([["B-NP", "I-NP", "I-NP"]], [["B-NP", "I-NP", "O"]])
    assert r.overall.correct == 0
    r = evaluate([["O", "B-NP", "I-NP"]], [["B-NP", "I-NP", "I-NP"]])
    assert r.overall.correct == 0
    assert r.accuracy == approx(100 / 3)  # only the last token matches


def test_chunks_do_not_cross_sentences():
    r = evaluate([["B-NP"], ["I-NP"]], [["B-NP"], ["I-NP"]])
    assert r.overall.support == 2 and r.overall.correct == 2


def test_perfect_and_empty():
    r = evaluate([["B-A", "I-A", "O"]], [["B-A", "I-A", "O"]])
    assert r.overall.f1 == approx(100.0) and r.accuracy == approx(100.0)
    r = evaluate([], [])
    assert r.tokens == 0 and r.accuracy == 0.0 and r.overall.f1 == 0.0


def test_accuracy_over_all_tokens():
    r = evaluate([["O", "O"], ["B-X", "O", "O"]], [["O", "B-X"], ["B-X", "O", "B-X"]])
    assert r.tokens == 5 and r.accuracy == approx(60.0)


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="2 sentences"):
        evaluate([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sentence 1: gold has 2 tokens but pred has 1"):
        evaluate([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="unknown scheme"):
        evaluate([["O"]], [["O"]], scheme="xyz")


def test_scores_zero_when_undefined():
    s = Scores.from_counts(0, 0, 0)
    assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)


def test_format_contains_scores():
    r = evaluate([["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]],
                 [["B-PER", "I-PER", "O", "B-LOC", "I-LOC"]])
    text = r.format()
    assert isinstance(r, Report)
    assert "40.00" in text            # overall F1
    assert "80.00%" in text           # accuracy 4/5
    assert "PER" in text and "LOC" in text and "I-LOC" in text
    assert "overall" in text
