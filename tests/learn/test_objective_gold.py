"""The likelihood objective's gold side (``fgl.learn.objective``): the gold
counts held as int32 indices and subtracted in place give the bits of the
plain numpy form, f = log Z - w·F(gold) + prior and its gradient."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgl.datasets.synth import segment_sequences
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.objective import Objective, add_prior, subtract_at
from fgl.registry import compile_model

SPEC = """
columns word, label
output label
obs w = word[t-1..t+1]
template state: y[t] ~ bias, w
template trans: y[t-1..t] ~ bias
train { sigma = 2 }
"""


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**31 - 1), st.sampled_from([np.int32, np.int64]))
def test_subtract_at_equals_numpy_fancy_subtraction(n, seed, dtype):
    rng = np.random.default_rng(seed)
    index = rng.choice(n, size=rng.integers(0, n + 1), replace=False).astype(dtype)
    values = rng.normal(size=len(index))
    grad = rng.normal(size=n)
    want = grad.copy()
    want[index] -= values
    subtract_at(grad, index, values)
    np.testing.assert_array_equal(grad, want)


@pytest.mark.parametrize("jobs", [1, 2])
def test_objective_gives_the_bits_of_the_plain_formula(jobs):
    train, _ = segment_sequences(n_types=2, vocab=15, n_train=30, n_test=1, length=12, seed=5)
    model, data = compile_model(validate(parse_spec(SPEC, "<test>")), train)
    prog = model.program
    objective = Objective(prog, data, model.feat_sigma, jobs)
    index, values = objective.gold
    assert index.dtype == np.int32
    counts = prog.gold_counts(data)
    np.testing.assert_array_equal(index, np.flatnonzero(counts))
    w = np.random.default_rng(2).normal(0, 0.3, prog.n_features)
    f, grad = objective(w)
    exp = prog.expectations(w, data, jobs)
    full = np.flatnonzero(counts)
    want = exp.counts
    want[full] -= counts[full]
    prior = add_prior(want, w, objective.inv_var)
    assert f == float(exp.log_z - float(w[full] @ counts[full]) + prior)
    np.testing.assert_array_equal(grad, want)
