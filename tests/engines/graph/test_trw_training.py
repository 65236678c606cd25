"""Training evaluations under tree-reweighted BP run a block of instances
per kernel call (``fgl.engines.graph.trw_training``).  The kernel makes the
calls ``trw.trw`` makes, in the same order: its bound, run statistics and
warm-start messages must equal, bit for bit (the counts to rounding), those of the
instance-by-instance path (``FactorGraphProgram.infer`` per instance), which
``tests/engines/graph/test_trw.py`` checks against brute-force enumeration."""
from __future__ import annotations

import numpy as np
import pytest
from support.specs import LATENT, SKIP_EQUAL_WORDS, TRAINED_CHAIN_FORMAT

from fgl.datasets.synth import segment_sequences
from fgl.engines.graph.factor_graph_program import FactorGraphProgram
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.registry import compile_model


def _compiled(text: str, n: int = 10, length: int = 9, vocab: int = 6, seed: int = 3):
    data = segment_sequences(n_types=2, max_len=3, vocab=vocab, n_train=n, n_test=1,
                             length=length, seed=seed)[0]
    return compile_model(validate(parse_spec(text, "<test>")), data)


def _skip_chain(infer: str):
    return _compiled(TRAINED_CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer=infer, train=""))


def _weights(model, scale: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, scale, model.program.n_features)


def _same(a, b) -> None:
    """Two ``Expectations`` equal bit for bit, but for the counts' rounding:
    the kernel sums the beliefs of factors with one table (chain edges)
    before gathering counts from them, the per-instance path after."""
    assert a.log_z == b.log_z
    np.testing.assert_allclose(a.counts, b.counts, rtol=1e-12, atol=1e-12)
    assert (a.stats.instances, a.stats.not_converged, a.stats.max_iterations,
            a.stats.max_residual) == (b.stats.instances, b.stats.not_converged,
                                      b.stats.max_iterations, b.stats.max_residual)


@pytest.fixture
def instance_by_instance(monkeypatch):
    """Runs a callable with the block kernel switched off (the per-instance path)."""
    def run(f, *args, **kwargs):
        with monkeypatch.context() as m:
            m.setattr(FactorGraphProgram, "trw_blocks", lambda self, data: None)
            return f(*args, **kwargs)
    return run


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("scale", [0.3, 3.0])
def test_block_kernel_equals_the_per_instance_runs(instance_by_instance, jobs, scale):
    model, enc = _skip_chain("infer trw(tol = 1e-8, max_iter = 400)")
    program = model.program
    assert sum(g.n_cycles() for g in enc.graphs) > 0
    assert program.trw_blocks(enc)[2].all()
    w = _weights(model, scale)
    got = program.expectations(w, enc, jobs)
    want = instance_by_instance(program.expectations, w, enc, jobs)
    _same(got, want)
    assert got.stats.max_iterations > 1


def test_the_graphs_arrays_are_views_of_the_kernels_joined_arrays():
    """Building the block kernel's arrays leaves one copy of every graph:
    each graph's arrays are slices of the joined ones, with their values."""
    model, enc = _skip_chain("infer trw")
    before = [[a.copy() for a in g.arrays] for g in enc.graphs]
    joined = model.program.trw_blocks(enc)[0]
    for i, g in enumerate(enc.graphs):
        for k, (name, a) in enumerate(zip(g.arrays._fields, g.arrays)):
            np.testing.assert_array_equal(a, before[i][k])
            assert getattr(g, name) is a and np.shares_memory(a, joined.graph[k]), name


def test_block_kernel_keeps_and_starts_from_the_same_messages(instance_by_instance):
    """Warm starts: each run starts from the accepted messages and leaves
    its own, as the per-instance runs do; a loose tolerance leaves some
    instances unconverged (nothing kept for them)."""
    model, enc = _skip_chain("infer trw(tol = 1e-3, max_iter = 8)")
    program = model.program
    w = _weights(model, 0.5)

    def path(run):
        warm = program.warm_start(enc)
        first = run(program.expectations, w, enc, 1, warm=warm)
        warm.accept()
        second = run(program.expectations, w + 0.05, enc, 1, warm=warm)
        return warm, first, second

    warm_a, *got = path(lambda f, *a, **k: f(*a, **k))
    warm_b, *want = path(instance_by_instance)
    for a, b in zip(got, want):
        _same(a, b)
    assert warm_a.converged == warm_b.converged
    assert 0 < sum(warm_a.converged) < len(warm_a.converged)
    for a, b in zip(warm_a.latest, warm_b.latest):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a[0], b[0])


def test_evaluations_write_two_message_arrays_never_the_one_their_starts_read(monkeypatch):
    """A warm start's evaluations take turns between two message arrays,
    never writing the one the accepted messages lie in: the same results,
    bit for bit, as a fresh array per evaluation."""
    model, enc = _skip_chain("infer trw(tol = 1e-6)")
    program = model.program
    w = _weights(model, 0.5)

    def path():
        warm, found = program.warm_start(enc), []
        for k, accept in enumerate([True, False, False, True, False, True]):
            read = {id(st[0].base) for st in warm.start if st is not None}
            found.append(program.expectations(w * (1.0 + 0.1 * k), enc, 1, warm=warm))
            written = {id(st[0].base) for st in warm.latest if st is not None}
            assert written and not written & read
            if accept:
                warm.accept()
        return warm, found

    warm, reused = path()
    assert len(warm.buffers) == 2
    fresh = FactorGraphProgram.message_scratch
    monkeypatch.setattr(FactorGraphProgram, "message_scratch",
                        lambda self, data, warm=None: fresh(self, data))
    for a, b in zip(reused, path()[1]):
        assert a.log_z == b.log_z
        np.testing.assert_array_equal(a.counts, b.counts)


def test_block_kernel_clamps_the_gold_labels_of_a_hidden_layer(instance_by_instance):
    model, enc = _compiled(LATENT.replace("infer exact(max_states = 300000)",
                                          "infer trw(tol = 1e-9, max_iter = 500)"),
                           n=4, length=6, vocab=5)
    program = model.program
    assert program.has_hidden and sum(g.n_cycles() for g in enc.graphs) > 0
    w = _weights(model, 1.0)
    _same(program.clamped_expectations(w, enc, 1),
          instance_by_instance(program.clamped_expectations, w, enc, 1))
    assert program.clamped_expectations(w, enc, 1).log_z < program.expectations(w, enc, 1).log_z


def test_auto_runs_the_instances_too_big_for_the_junction_tree_in_blocks(instance_by_instance):
    """``infer auto``: instances whose cliques fit ``max_table`` run exactly,
    the others in the block kernel, in data order either way."""
    model, enc = _skip_chain("infer auto(max_table = 1000, tol = 1e-8, max_iter = 400)")
    program = model.program
    picks = program.trw_blocks(enc)[2]
    assert picks.any() and not picks.all()
    w = _weights(model, 1.0)
    _same(program.expectations(w, enc, 2), instance_by_instance(program.expectations, w, enc, 2))


def test_bethe_programs_have_no_blocks():
    model, enc = _skip_chain("infer trp")
    assert model.program.trw_blocks(enc) is None


def test_non_finite_weights_are_refused_as_on_the_per_instance_path(instance_by_instance):
    model, enc = _skip_chain("infer trw")
    w = _weights(model, 1.0)
    w[:] = np.nan
    for run in (lambda f, *a: f(*a), instance_by_instance):
        with pytest.raises(ValueError, match="finite or -inf"):
            run(model.program.expectations, w, enc, 1)


def test_trw_converges_on_seminar_sized_cliques_at_trained_weights():
    """The stress case of loopy training: documents of about 270 tokens
    whose names come back 15 to 20 times (a clique of up to 190 skip
    factors per name, Sutton & McCallum §1.5's seminar announcements), at
    weights a training run reaches.  Every instance reaches the spec's
    tolerance within the sweep limit, at the loose tolerance training
    starts from and at the spec's, so every evaluation is exact to the
    tolerance the line search allows for."""
    from fgl.datasets.records import announcements
    from fgl.learn.learner import train_lbfgs

    docs, _ = announcements(6, 0, repeats=(15, 20), sections=8, seed=2)
    text = """columns word, label
output label
obs w = word[t-1..t+1]
obs shp = shape(word[t])
template state: y[t] ~ bias, w, lower(word[t]), shp
template trans: y[t-1..t]
template skip:  (y[i], y[j]) where word[i] == word[j] and regex(word[i], "^[A-Z]")
                within document ~ bias, either(w), either(shp) (sigma = 0.5)
infer trw
"""
    model, enc = compile_model(validate(parse_spec(text, "<test>")), docs.sentences)
    program = model.program
    cliques = [g.n_factors - 2 * g.n_vars + 1 for g in enc.graphs]   # (at most the skip factors)
    assert min(cliques) >= 100
    w, _ = train_lbfgs(program, enc, model.feat_sigma, max_iter=25, jobs=1)
    assert np.abs(w).max() > 3.0   # (weights of a model that fits, not near zero)
    limit = program.settings.max_iter
    for tol in (1e-3, program.settings.tol):
        warm = program.warm_start(enc, carry=False)
        warm.tol = tol
        stats = program.expectations(w, enc, 1, warm=warm).stats
        assert stats.not_converged == 0 and stats.max_iterations < limit, (tol, stats)
        assert stats.max_residual < tol


def test_warm_starts_are_read_in_place_from_one_evaluations_messages():
    """The messages a warm start keeps are slices of the last evaluation's
    array at each instance's offset: the kernel reads them there instead
    of a copy; starts from elsewhere (SGD's per-instance accepts) are
    copied into one array at offsets of their own."""
    from fgl.engines.graph.factor_graph_program import _initial_messages

    model, enc = _skip_chain("infer trw(tol = 1e-3)")
    program = model.program
    warm = program.warm_start(enc)
    program.expectations(_weights(model, 0.5), enc, 1, warm=warm)
    warm.accept()
    msg_at = program.trw_blocks(enc)[0].msg_at
    picks = np.arange(len(enc.graphs))
    inits, init_at = _initial_messages(warm, picks, msg_at)
    assert inits is warm.start[0][0].base
    kept = [i for i in picks if warm.start[i] is not None]
    assert kept and (init_at[kept] == msg_at[kept]).all()
    warm.start[kept[-1]] = (warm.start[kept[-1]][0].copy(),)   # (from another array)
    copied, at = _initial_messages(warm, picks, msg_at)
    assert copied is not inits
    for i in kept:
        np.testing.assert_array_equal(copied[at[i]:at[i] + len(warm.start[i][0])],
                                      warm.start[i][0])
