"""Compiling from a re-readable source (two passes, the data never held
whole) gives exactly what compiling from a list gives."""
import numpy as np
import pytest

from fgl.api import CRF
from fgl.datasets.synth import segment_sequences
from fgl.errors import DataError
from fgl.io.conll import iter_conll, read_conll, write_conll
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.registry import compile_model

CHAIN = """
columns word, label
output label
obs w = word[t-1..t+1]
template state: y[t] ~ bias, w, suffix(word[t], 2)
template trans: y[t-1..t]
template ho: y[t-2..t] patterns observed
"""

SEGMENTS = """
columns word, label
output label
segments max 4 from bio
obs first = word[u]
obs inside = word[u..v]
template seg: s[j] ~ bias, first, inside, length
template trans: s[j-1..j]
"""


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    train, _ = segment_sequences(n_types=2, vocab=15, n_train=30, n_test=1, length=10, seed=5)
    path = tmp_path_factory.mktemp("stream") / "train.txt"
    with open(path, "w", encoding="utf-8") as f:
        write_conll(f, train)
    return path


@pytest.mark.parametrize("text", [CHAIN, SEGMENTS])
def test_streamed_compile_equals_list_compile(text, data_file):
    spec = validate(parse_spec(text, "<test>"))
    m1, d1 = compile_model(spec, read_conll(data_file))
    m2, d2 = compile_model(spec, lambda: iter_conll(data_file))
    assert m1.labels == m2.labels and m1.vocabs == m2.vocabs
    assert [t.patterns for t in m1.templates] == [t.patterns for t in m2.templates]
    for a in ("row_ptr", "feat_pattern"):
        np.testing.assert_array_equal(getattr(m1.program, a), getattr(m2.program, a))
    for a in ("seq_ptr", "tok_ptr", "tok_row", "tok_val", "gold", "starts"):
        np.testing.assert_array_equal(getattr(d1, a), getattr(d2, a))


def test_fit_file_streams_and_equals_fit_sentences(data_file):
    a = CRF(CHAIN, max_iter=15).fit_file(data_file)
    b = CRF(CHAIN, max_iter=15).fit_sentences(read_conll(data_file))
    np.testing.assert_array_equal(a.weights, b.weights)


def test_a_source_that_changes_between_passes_is_refused(data_file):
    spec = validate(parse_spec(CHAIN, "<test>"))
    sentences = read_conll(data_file)
    passes = iter([sentences, sentences[:-3]])
    with pytest.raises(DataError,
                       match="changed while it was read: 30 sequences on the first pass, 27"):
        compile_model(spec, lambda: iter(next(passes)), source="train.txt")


def test_an_empty_source_is_refused(tmp_path):
    spec = validate(parse_spec(CHAIN, "<test>"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match="no sequences"):
        compile_model(spec, lambda: iter_conll(empty), source=str(empty))


def test_bad_line_in_a_streamed_file_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a B-T0\nb I-T0\n\nc O extra\n")
    with pytest.raises(DataError) as err:
        CRF(CHAIN).fit_file(bad)
    assert str(err.value).startswith(f"{bad}:4:")


def test_a_one_pass_iterator_is_read_once(data_file):
    spec = validate(parse_spec(CHAIN, "<test>"))
    m1, d1 = compile_model(spec, read_conll(data_file))
    m2, d2 = compile_model(spec, iter_conll(data_file))
    assert m1.vocabs == m2.vocabs
    np.testing.assert_array_equal(d1.tok_row, d2.tok_row)
