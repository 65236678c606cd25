"""Compiling a segment model builds its feature table and encodes its units
with array work over attribute ids (``fgl.compile.feature_table``,
``fgl.features.span_streams``).  The result must be exactly what the
straightforward reading gives: attributes from the general span evaluators,
one dict lookup per (unit, attribute), rows numbered in order of first
appearance on a gold unit and then by frequency, every unit carrying every
attribute that has a row — on random specs and data,
with the sentences read in one batch or in many."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fgl.compile.unit_rows as unit_rows
from fgl.compile.sequence import SegmentModel
from fgl.data.sentence import Sentence
from fgl.errors import SpecError
from fgl.features.observations import TemplateAttributes, sentence_columns
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.lang.settings import resolve_train

ATOMS = ["word[u]", "lower(word[v])", "word[u-1]", "pos[v+1]", "word[u..v]", "pos[u+1..v]",
         "prefix(word[u], 2)", "suffix(word[v], 2)", "length", "bos", "eos",
         "tokens(word[u..v])", 'regex(word[u..v], "^[A-Z]")', "shape(word[u]) & pos[v]",
         "word[u-1] & word[u..v]", "lower(word[u]) | pos[u]", "pad(word[u-2])",
         "pad(word[u-1..v-1])", "zip(word[u..v-1] & word[u+1..v])",
         "zip(pad(pos[u-2..v-2]) & word[u..v])", 'count(regex(word[u+1..v], "."))',
         "count(word[u..v])",
         "value(x[u])", "count(word[u] & pos[v])"]   # (the last two: the general path)
WORDS = ["the", "The", "cat", "C4t", "a-b", "NY", "x|y", "x", "a b"]
TAGS = ["DT", "NN", "VB"]


def _spec(first: list[str], second: list[str], L: int):
    text = (f"columns word, pos, x:number, label\noutput label\nsegments max {L} from bio\n"
            f"template state: s[j] ~ {', '.join(first)}\n"
            + (f"template pair: s[j-1..j] ~ {', '.join(second)}\n" if second else "")
            + "template labels: s[j-1..j]\n")
    return validate(parse_spec(text, "<test>"))


@st.composite
def sentences(draw, L: int) -> list[Sentence]:
    out = []
    for i in range(draw(st.integers(1, 5))):
        rows = []
        while not rows or draw(st.booleans()):
            kind = draw(st.sampled_from(["O", "A", "B"]))
            n = 1 if kind == "O" else draw(st.integers(1, L))
            for k in range(n):
                tag = "O" if kind == "O" else ("B-" if k == 0 else "I-") + kind
                rows.append([draw(st.sampled_from(WORDS)).replace(" ", "_"),
                             draw(st.sampled_from(TAGS)), repr(draw(st.floats(-2, 2))), tag])
        out.append(Sentence(rows, list(range(1, len(rows) + 1)), i, "<test>"))
    return out


def reference(spec, train: list[Sentence], test: list[Sentence]):
    """(vocabularies, row_ptr, feat_pattern, train units, test units) the
    plain way: general evaluators, a dict lookup per (unit, attribute)."""
    layer, gold, spans = SegmentModel.read_gold(spec, lambda: train, "<train>")
    plans = SegmentModel.template_plans(spec, layer, gold, resolve_train(spec).sigma)
    z_list = list(dict.fromkeys([(y,) for y in range(len(layer.labels))]
                                + [z for p in plans for z in p.patterns]))
    z_index = {z: i for i, z in enumerate(z_list)}
    attrs = TemplateAttributes(spec)
    attrs._span_streams = [None] * len(plans)        # the general evaluators only
    L = SegmentModel.span_limit(spec, max(len(s.rows) for s in train))
    vocabs: list[dict[str, int]] = [{} for _ in plans]
    support: list[set[int]] = []
    template: list[int] = []

    def units(sent: Sentence, seq=None, segs=None) -> list[list[tuple[int, float]]]:
        cols, _ = sentence_columns(spec, sent.rows, sent.lines, sent.file)
        T = len(sent.rows)
        per_template = attrs.segments(cols, T, L)
        spans_at = [(u, d) for u in range(T) for d in range(1, min(L, T - u) + 1)]
        gold_unit = {} if segs is None else {u * L + v - u: j for j, (u, v) in enumerate(segs)}
        out = [[] for _ in range(T * L)]
        for ti, plan in enumerate(plans):
            for (u, d), items in zip(spans_at, per_template[ti]):
                unit = u * L + d - 1
                j = gold_unit.get(unit)
                for key, v in items:
                    if j is not None and key not in vocabs[ti]:
                        vocabs[ti][key] = len(support)
                        support.append(set())
                        template.append(ti)
                    r = vocabs[ti].get(key)
                    if r is None:
                        continue
                    if j is not None and plan.support == "observed":
                        support[r].update(z_index[tuple(seq[j - m + 1:j + 1])]
                                          for m in sorted({len(z) for z in plan.patterns})
                                          if m <= j + 1 and tuple(seq[j - m + 1:j + 1])
                                          in plan.patterns)
                    if key != "bias":
                        out[unit].append((r, v))
        return out

    for s, seq, segs in zip(train, gold, spans):   # every row first: a candidate segment
        units(s, seq, segs)                          # keeps every attribute that has one
    train_units = [u for s, seq, segs in zip(train, gold, spans) for u in units(s, seq, segs)]
    counts = np.bincount([r for u in train_units for r, _ in u], minlength=len(support))
    new_id = np.empty(len(support), dtype=np.int64)
    new_id[np.argsort(-counts, kind="stable")] = np.arange(len(support))
    pats = [sorted(support[r]) if plans[template[r]].support == "observed"
            else sorted(z_index[z] for z in plans[template[r]].patterns)
            for r in np.argsort(new_id)]
    row_ptr = np.concatenate([[0], np.cumsum([len(p) for p in pats])])
    renumber = [[[(int(new_id[r]), v) for r, v in u] for u in us]
                for us in (train_units, [u for s in test for u in units(s)])]
    return ([{k: int(new_id[r]) for k, r in vocab.items()} for vocab in vocabs], row_ptr,
            np.array([z for p in pats for z in p], dtype=np.int64), *renumber)


def unit_lists(data) -> list[list[tuple[int, float]]]:
    vals = np.broadcast_to(data.tok_val, data.tok_row.shape)
    return [list(zip(data.tok_row[a:b].tolist(), vals[a:b].tolist()))
            for a, b in zip(data.tok_ptr[:-1], data.tok_ptr[1:])]


@pytest.mark.parametrize("batch_tokens", [1024, 3])
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_compiled_table_equals_the_plain_reading(batch_tokens, data):
    L = data.draw(st.integers(1, 4))
    first = data.draw(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=4, unique=True))
    second = data.draw(st.lists(st.sampled_from(ATOMS), max_size=2, unique=True))
    train, test = data.draw(sentences(L)), data.draw(sentences(L))
    try:
        spec = _spec(first, second, L)
    except SpecError:
        assume(False)
    L_test = SegmentModel.span_limit(spec, max(len(s.rows) for s in test))
    assume(L_test == SegmentModel.span_limit(spec, max(len(s.rows) for s in train)))
    saved, unit_rows.BATCH_TOKENS = unit_rows.BATCH_TOKENS, batch_tokens
    try:
        model, encoded = SegmentModel.compile(spec, train)
        encoded_test = model.encode(test)
    finally:
        unit_rows.BATCH_TOKENS = saved
    vocabs, row_ptr, feat_pattern, train_units, test_units = reference(spec, train, test)
    assert [dict(v) for v in model.vocabs] == vocabs
    assert [list(v) for v in model.vocabs] == [list(v) for v in vocabs]   # same order
    assert np.array_equal(model.program.row_ptr, row_ptr)
    assert np.array_equal(model.program.feat_pattern, feat_pattern)
    assert unit_lists(encoded) == train_units
    assert unit_lists(encoded_test) == test_units


def test_explain_compiles_the_training_data_once(tmp_path, monkeypatch, capsys):
    from fgl.cli import main
    spec = tmp_path / "s.fgl"
    spec.write_text("columns word, label\noutput label\nsegments max 3 from bio\n"
                    "template s: s[j] ~ word[u..v], length\ntemplate t: s[j-1..j]\n")
    (tmp_path / "train.txt").write_text("the B-NP\ncat I-NP\nsat B-VP\n\na B-NP\ndog I-NP\n")
    calls = []
    compile_once = SegmentModel.compile.__func__

    def counted(cls, *args, **kwargs):
        calls.append(1)
        return compile_once(cls, *args, **kwargs)
    monkeypatch.setattr(SegmentModel, "compile", classmethod(counted))
    main(["explain", str(spec), "--train", str(tmp_path / "train.txt")])
    out = capsys.readouterr().out
    assert "training data: 2 sequences, 5 tokens" in out
    assert len(calls) == 1
