"""The chain program's batch kernel (``ChainProgram.expectations``) against
enumeration, spec by spec.

The kernel takes one of three paths: the factored scaled path when every
pattern longer than one label is observation-free (a first-order CRF with
plain transitions, or unobserved high-order patterns), the block-by-block
scaled path when some longer pattern carries observations, and the log-space
fallback when weights are huge.  Attribute rows are scored and counted
as dense label vectors (``DENSE_BYTES`` decides how many rows are dense), as
full rows (one feature per label, ``support = all``) or feature by
feature.  Each combination is checked here through compiled
specs and random weights: Σ log Z, every expected feature count
E[f_k] = Σ_t value · P(pattern of k ends at t | x) and the Viterbi labelling
must equal brute force.
"""
import contextlib
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.brute_force import chain_brute_force, chain_score

from fgl.data.sentence import Sentence
from fgl.engines.sequence import chain, scaling, span_lattice
from fgl.engines.sequence import chain_program as program_module
from fgl.engines.sequence.structure import ChainStructure
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.registry import compile_model

HEADER = """
columns word, label
output label
obs w = word[t-1..t]
"""

SPECS = {
    # factored: only single labels vary with t
    "first order": HEADER + """
template state: y[t] ~ bias, w
template trans: y[t-1..t]
""",
    "second order, unobserved": HEADER + """
template state: y[t] ~ w
template trans: y[t-1..t] ~ bias
template ho: y[t-2..t] patterns observed upto
""",
    "declared label never seen": """
columns word, label
output label
labels label = [A B C]
obs w = word[t]
template state: y[t] ~ w
template trans: y[t-1..t]
""",
    "first order, every label": HEADER + """
template state: y[t] ~ bias, w (support = all)
template trans: y[t-1..t]
""",
    # block by block: a transition carries an observation
    "observed transitions": HEADER + """
template state: y[t] ~ bias, w
template trans: y[t-1..t] ~ bias, word[t]
template ho: y[t-2..t] patterns observed
""",
    "observed transitions, every label": HEADER + """
template state: y[t] ~ w (support = all)
template trans: y[t-1..t] ~ bias, word[t] (support = all)
""",
}


def _sentences(draw_rows) -> list[Sentence]:
    return [Sentence([list(r) for r in rows], list(range(1, len(rows) + 1)), 0, "<test>")
            for rows in draw_rows]


@st.composite
def problems(draw):
    name = draw(st.sampled_from(sorted(SPECS)))
    labels = ["A", "B"] if name == "declared label never seen" else ["A", "B", "C"]
    words = ["x", "y", "z"]
    seqs = draw(st.lists(st.lists(st.tuples(st.sampled_from(words), st.sampled_from(labels)),
                                  min_size=1, max_size=5), min_size=1, max_size=3))
    scale = draw(st.sampled_from([0.3, 3.0, 400.0]))  # 400: the log-space fallback
    seed = draw(st.integers(0, 2**16))
    dense_bytes = draw(st.sampled_from([0, 48, 1 << 19]))  # none, some or all rows dense
    return name, seqs, scale, seed, dense_bytes


@contextlib.contextmanager
def _dense_budget(n_bytes):
    saved = program_module.DENSE_BYTES
    program_module.DENSE_BYTES = n_bytes
    try:
        yield
    finally:
        program_module.DENSE_BYTES = saved


def _reference_potentials(program, enc, w, i):
    """pot[t, z] straight from the encoded rows, feature by feature."""
    a, b = int(enc.seq_ptr[i]), int(enc.seq_ptr[i + 1])
    pot = np.zeros((b - a, len(program.structure.patterns)))
    for t in range(b - a):
        for k in program.const_feats:
            pot[t, program.feat_pattern[k]] += w[k]
        for j in range(enc.tok_ptr[a + t], enc.tok_ptr[a + t + 1]):
            r = enc.tok_row[j]
            for k in range(program.row_ptr[r], program.row_ptr[r + 1]):
                pot[t, program.feat_pattern[k]] += enc.tok_val[j] * w[k]
    return pot


def _brute_force_expectations(program, enc, w):
    """Σ log Z and expected counts by enumerating every labelling."""
    st_ = program.structure
    total = 0.0
    expected = np.zeros(program.n_features)
    const = program.const_feats
    for i in range(enc.n_sequences):
        pot = _reference_potentials(program, enc, w, i)
        np.testing.assert_allclose(program.potentials(w, enc, i), pot, rtol=1e-12, atol=1e-9)
        log_z, marg, _, _ = chain_brute_force(st_.n_labels, st_.patterns, pot)
        total += log_z
        a = int(enc.seq_ptr[i])
        for t in range(pot.shape[0]):
            for j in range(enc.tok_ptr[a + t], enc.tok_ptr[a + t + 1]):
                r = enc.tok_row[j]
                for k in range(program.row_ptr[r], program.row_ptr[r + 1]):
                    expected[k] += enc.tok_val[j] * marg[t, program.feat_pattern[k]]
            for k in const:
                expected[k] += marg[t, program.feat_pattern[k]]
    return total, expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_expectations_match_enumeration(problem):
    name, seqs, scale, seed, dense_bytes = problem
    with _dense_budget(dense_bytes):
        model, enc = compile_model(validate(parse_spec(SPECS[name], "<test>")), _sentences(seqs))
    program = model.program
    if dense_bytes == 0:
        assert (program.row_dense < 0).all()
        if "every label" in name:   # (support = all: every row full)
            assert (program.row_dense == chain.FULL_ROW).any()
    w = np.random.default_rng(seed).normal(0.0, scale, program.n_features)
    result = program.expectations(w, enc, 1)
    total, grad = result.log_z, result.counts
    want_total, want_grad = _brute_force_expectations(program, enc, w)
    magnitude = max(1.0, float(np.abs(w).sum()))
    assert total == pytest.approx(want_total, rel=1e-9, abs=1e-12 * magnitude)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-10)
    if scale < 100:  # (at huge weights near-ties make the arg-max fragile)
        decoding = program.decode(w, enc, 1)
        assert decoding.segment_starts is None
        st_ = program.structure
        for i, labels in enumerate(decoding.assignments):
            pot = _reference_potentials(program, enc, w, i)
            *_, best_score = chain_brute_force(st_.n_labels, st_.patterns, pot)
            assert chain_score(st_.patterns, pot, labels) == pytest.approx(best_score, rel=1e-9,
                                                                           abs=1e-9)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_each_spec_takes_its_path(name):
    """The factored path is taken exactly when no block but ε varies."""
    rows = [[("x", "A"), ("y", "B"), ("z", "A")], [("y", "B"), ("x", "A")]]
    model, _ = compile_model(validate(parse_spec(SPECS[name], "<test>")), _sentences(rows))
    program = model.program
    st_ = program.structure
    static = np.zeros(len(st_.patterns))
    block_dynamic = scaling.static_tables(static, program.dynamic, st_.tables).block_dynamic
    assert block_dynamic[0]
    assert block_dynamic[1:].any() == name.startswith("observed transitions")


def test_unseen_label_gets_no_mass_from_garbage():
    """A declared label with no per-token feature still has potential 0 at
    every token (the kernels read every label's potential)."""
    rows = [[("x", "A"), ("y", "B")]]
    model, enc = compile_model(validate(parse_spec(SPECS["declared label never seen"], "<test>")),
                               _sentences(rows))
    program = model.program
    w = np.zeros(program.n_features)
    assert program.expectations(w, enc, 1).log_z == pytest.approx(2 * np.log(3.0), rel=1e-12)


def test_values_stored_only_once_one_differs_from_1():
    """Binary data stores no values (a stride-0 view of 1.0); when a later
    sentence brings another value, the earlier units' values are filled in
    as 1 — in int8 while every value is a small integer, in single precision
    while every value is a float32 exactly, in double from the first that is
    not — and the compiler's encoding equals ``encode``'s, position by
    position."""
    spec = validate(parse_spec("""
columns a:number, label
output label
obs v = value(a[t])
template state: y[t] ~ v
template trans: y[t-1..t]
""", "<test>"))
    binary = _sentences([[("1", "A"), ("1", "B")]])
    counts = binary + _sentences([[("2", "A"), ("1", "B"), ("-3", "A")]])
    mixed = counts + _sentences([[("2.5", "B")]])
    model, enc = compile_model(spec, binary)
    assert enc.tok_val.strides == (0,) and (enc.tok_val == 1.0).all()
    values = [1.0, 1.0, 2.0, 1.0, -3.0, 2.5]
    for data, dtype in ((counts, np.int8), (mixed, np.float32)):
        model, enc = compile_model(spec, data)
        assert enc.tok_val.dtype == dtype
        np.testing.assert_array_equal(enc.tok_val, values[:len(enc.tok_val)])
        again = model.encode(data)
        assert again.tok_val.dtype == dtype
        np.testing.assert_array_equal(again.tok_val, enc.tok_val)
        np.testing.assert_array_equal(again.tok_row, enc.tok_row)
    inexact = mixed + _sentences([[("0.1", "B"), ("4", "A")]])
    model, enc = compile_model(spec, inexact)
    assert enc.tok_val.dtype == np.float64
    np.testing.assert_array_equal(enc.tok_val, [1.0, 1.0, 2.0, 1.0, -3.0, 2.5, 0.1, 4.0])
    for data in (counts, mixed):   # narrow stores: the same bits as double
        model, narrow = compile_model(spec, data)
        wide = dataclasses.replace(narrow, tok_val=narrow.tok_val.astype(np.float64))
        w = np.random.default_rng(0).normal(size=model.program.n_features)
        a, b = model.program.expectations(w, narrow), model.program.expectations(w, wide)
        assert a.log_z == b.log_z
        assert a.counts.tobytes() == b.counts.tobytes()


def test_potential_api_stays_on_the_scaled_path(monkeypatch):
    """Moderate potentials never need the log-space fallback, also when some
    forward state starts no pattern (its block holds no dynamic pattern)."""
    st_ = ChainStructure.build(3, [(0,), (1,), (2,), (0, 1, 2), (2, 2)])
    block_dynamic = scaling.static_tables(np.zeros(5), np.ones(5, np.bool_),
                                         st_.tables).block_dynamic
    assert not block_dynamic.all()  # e.g. the block of state (1,) holds no pattern

    def no_fallback(*args):
        raise AssertionError("fell back to log space")

    monkeypatch.setattr(span_lattice, "sequence_marginals", no_fallback)
    pot = np.random.default_rng(5).normal(0.0, 1.0, (5, 5))
    log_z, marg = chain.pattern_marginals(st_, pot)
    want_z, want_marg, _, _ = chain_brute_force(3, st_.patterns, pot)
    assert log_z == pytest.approx(want_z, rel=1e-12)
    np.testing.assert_allclose(marg, want_marg, rtol=1e-9, atol=1e-12)


GROUPING = """columns word, a:number, label
output label
obs w = word[t-1..t]
obs v = value(a[t])
template state: y[t] ~ w, v
template other: y[t] ~ word[t+1] (support = all)
template trans: y[t-1..t]
"""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.sampled_from("pqrstu"), st.sampled_from(["1", "2", "-0.5"]),
                                   st.sampled_from("AB")), min_size=1, max_size=6),
                min_size=1, max_size=6),
       st.sampled_from([16, 48, 1 << 19]), st.integers(0, 2**16))
def test_rows_grouped_in_place_with_the_same_sums(seqs, dense_bytes, seed):
    """A training evaluation groups each token's rows in place, the vector
    rows (dense and full) first, each group in the order it had, values
    alongside; the sums are the bits of the ungrouped data's (a read-only
    copy, which is left as it is)."""
    rows = [[(wd, a, lab) for wd, a, lab in s] for s in seqs]
    with _dense_budget(dense_bytes):
        model, enc = compile_model(validate(parse_spec(GROUPING, "<test>")), _sentences(rows))
    program = model.program
    frozen = dataclasses.replace(enc, tok_row=enc.tok_row.copy(), tok_val=enc.tok_val.copy())
    frozen.tok_row.flags.writeable = False
    frozen.tok_val.flags.writeable = False
    before = enc.tok_row.copy(), enc.tok_val.copy()
    w = np.random.default_rng(seed).normal(0.0, 1.0, program.n_features)
    grouped = program.expectations(w, enc, 1)
    ungrouped = program.expectations(w, frozen, 1)
    assert grouped.log_z == ungrouped.log_z
    assert grouped.counts.tobytes() == ungrouped.counts.tobytes()
    np.testing.assert_array_equal(frozen.tok_row, before[0])
    vector = (program.row_dense >= 0) | (program.row_dense == chain.FULL_ROW)
    for u in range(len(enc.tok_ptr) - 1):
        a, b = enc.tok_ptr[u], enc.tok_ptr[u + 1]
        old = list(zip(before[0][a:b], before[1][a:b]))
        want = [x for x in old if vector[x[0]]] + [x for x in old if not vector[x[0]]]
        assert list(zip(enc.tok_row[a:b], enc.tok_val[a:b])) == want
