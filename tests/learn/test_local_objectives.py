"""Piecewise and pseudo-likelihood training of general CRFs
(``train { objective = ... }``): the objectives against brute force on
small factor graphs, their gradients against finite differences, and on a
tree-structured model training by each against exact likelihood training."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from support.cli import run
from support.gradcheck import assert_gradient_matches_central_differences
from support.sentences import small_sentences
from support.specs import CHAIN_FORMAT, NEVER_SKIP, SKIP_EQUAL_WORDS, checked_spec

from fgl.api import CRF
from fgl.datasets.synth import segment_sequences
from fgl.evaluation.evaluate import evaluate
from fgl.learn.local_objectives import LocalObjective
from fgl.registry import compile_model

KINDS = ["piecewise", "pseudo_likelihood"]


def _score(program, data, table, i, x):
    """Σ_f θ_f(x_f) of assignment ``x`` of instance i."""
    g = data.graphs[i]
    total = 0.0
    for f in range(g.n_factors):
        idx = sum(x[v] * int(st) for v, st in
                  zip(g.factor_vars(f), g.e_stride[g.f_ptr[f]:g.f_ptr[f + 1]]))
        total += table[g.tab_ptr[f] + idx]
    return total


def _brute_force(kind, program, data, w):
    """ℓ summed over instances, from the definitions."""
    total = 0.0
    for i, g in enumerate(data.graphs):
        table = program.factor_tables(w, data, i)
        gold = [int(v) for v in data.gold[i]]
        if kind == "piecewise":
            for f in range(g.n_factors):
                block = table[g.tab_ptr[f]:g.tab_ptr[f + 1]]
                idx = sum(gold[v] * int(st) for v, st in
                          zip(g.factor_vars(f), g.e_stride[g.f_ptr[f]:g.f_ptr[f + 1]]))
                total += block[idx] - np.logaddexp.reduce(block)
        else:
            for v in range(len(gold)):
                scores = []
                for x in range(int(g.card[v])):
                    y = list(gold)
                    y[v] = x
                    scores.append(_score(program, data, table, i, y))
                total += scores[gold[v]] - np.logaddexp.reduce(scores)
    return total


@pytest.mark.parametrize("kind", KINDS)
def test_objective_equals_its_definition(kind):
    model, enc = compile_model(checked_spec(CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="")),
                               small_sentences(n=3, length=6, vocab=4))
    assert sum(g.n_cycles() for g in enc.graphs) > 0
    w = np.random.default_rng(0).normal(0, 0.7, model.program.n_features)
    sigma = np.full(model.program.n_features, 1e12)   # no prior: only ℓ
    f, _ = LocalObjective(kind, model.program, enc, sigma, jobs=1)(w)
    assert -f == pytest.approx(_brute_force(kind, model.program, enc, w), rel=1e-10)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("jobs", [1, 2])
def test_gradient_matches_finite_differences(kind, jobs):
    model, enc = compile_model(checked_spec(CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="")),
                               small_sentences(n=5, length=8, vocab=4))
    objective = LocalObjective(kind, model.program, enc, model.feat_sigma, jobs=jobs)
    assert_gradient_matches_central_differences(objective, model.program.n_features, scale=0.5,
                                                n_checks=30, rtol=1e-6)


def test_pseudo_likelihood_of_one_variable_is_its_exact_conditional():
    """With a single variable per instance, PL is the likelihood: compare
    with the exact log-likelihood by enumeration."""
    model, enc = compile_model(checked_spec("columns word, label\noutput label\n"
                                     "template s: y[t] ~ bias, word[t]\n"
                                     "template k: (y[i], y[j]) where word[i] == word[j] "
                                     "~ bias\n"), small_sentences(n=4, length=1, vocab=3))
    w = np.random.default_rng(2).normal(0, 1.0, model.program.n_features)
    sigma = np.full(model.program.n_features, 1e12)
    f_pl, _ = LocalObjective("pseudo_likelihood", model.program, enc, sigma, jobs=1)(w)
    exact = 0.0
    for i, g in enumerate(enc.graphs):
        table = model.program.factor_tables(w, enc, i)
        states = list(itertools.product(*(range(int(c)) for c in g.card)))
        scores = [_score(model.program, enc, table, i, x) for x in states]
        gold = tuple(int(v) for v in enc.gold[i])
        exact += scores[states.index(gold)] - np.logaddexp.reduce(scores)
    assert -f_pl == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_on_a_tree_local_training_comes_close_to_exact_likelihood(kind):
    train, test = segment_sequences(n_types=3, max_len=4, vocab=30, n_train=120, n_test=60,
                                    length=15, seed=3)
    X = [[r[:-1] for r in s.rows] for s in test]
    gold = [s.column(-1) for s in test]
    # a chain: BP is exact
    tree = CHAIN_FORMAT.format(extra=NEVER_SKIP, infer="infer loopy(tol = 1e-10)")
    exact = CRF(tree, max_iter=60).fit_sentences(train)
    local = CRF(tree + f"train {{ objective = {kind} }}\n", max_iter=60).fit_sentences(train)
    acc_exact = evaluate(gold, exact.predict(X)).accuracy
    acc_local = evaluate(gold, local.predict(X)).accuracy
    majority = 100 * sum(y == "O" for g in gold for y in g) / sum(map(len, gold))
    assert acc_local > majority + 10
    assert acc_local > acc_exact - 5, (acc_local, acc_exact)
    assert local.training_log.inference is None          # no BP inside the loop


def test_a_chain_spec_refuses_a_local_objective_at_the_setting(capsys, tmp_path):
    spec = tmp_path / "chain.fgl"
    spec.write_text("columns word, label\noutput label\ntemplate s: y[t] ~ word[t]\n"
                    "template t: y[t-1..t]\ntrain { objective = piecewise }\n", encoding="utf-8")
    train, _ = segment_sequences(n_types=2, max_len=3, vocab=10, n_train=10, n_test=1,
                                 length=6, seed=1)
    data = tmp_path / "train.txt"
    from fgl.io.conll import write_conll
    with open(data, "w", encoding="utf-8") as fh:
        write_conll(fh, train)
    code, _, err = run(capsys, "train", spec, "--train", data, "-o", tmp_path / "m.fglm")
    assert code == 2
    assert f"{spec}:5:9: train: objective 'piecewise' is for factor-graph models" in err
    assert "chain engine" in err


def test_hidden_layers_refuse_a_local_objective():
    text = CHAIN_FORMAT.format(extra="hidden z = [z0 z1]\ntemplate zy: (z[t], y[t])", infer="")
    model, enc = compile_model(checked_spec(text), small_sentences(n=3, length=5))
    with pytest.raises(Exception, match="needs every variable observed"):
        LocalObjective("piecewise", model.program, enc, model.feat_sigma)
