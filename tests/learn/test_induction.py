"""Feature induction (``fgl.learn.induction``, McCallum 2003 §3): the
mean-field gain is the exact likelihood gain where tokens are independent,
a conjunction the data need is induced in an early round and beats the
atomic and fixed-conjunction models with far fewer features, induced models
save, load and tag, and misuse is refused at the template."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from fgl import CRF
from fgl.errors import SpecError
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec
from fgl.learn.induction import FeatureInduction, _gains
from fgl.learn.objective import Objective
from fgl.learn.trainer_options import InductionOptions
from fgl.modelfile.model_files import load_model
from fgl.registry import compile_model

WORDS = [f"w{i}" for i in range(8)]


def _xor_data(n: int, seed: int) -> tuple[list, list]:
    """Label P where (word[t], word[t+1]) is (x, y) or (y, x), else O: an
    exclusive-or of atomic tests, which only their conjunction separates."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        words = [str(w) for w in rng.choice(WORDS + ["x", "y"] * 3, size=10)]
        labels = ["P" if t + 1 < 10 and {words[t], words[t + 1]} == {"x", "y"} else "O"
                  for t in range(10)]
        X.append([[w] for w in words])
        Y.append(labels)
    return X, Y


SPEC = """
columns word, label
output label
template cands: y[t] ~ word[t..t+1] (induce = 2)
template trans: y[t-1..t]
train {{ induce_rounds = {rounds}  induce_per_round = 4  induce_min_gain = 1 }}
"""


def test_mean_field_gain_is_the_exact_gain_for_independent_tokens():
    """Without transitions every token is its own inference problem, so
    eq. 3's approximation is exact: the Newton gain equals the best
    likelihood improvement of adding the feature, other weights fixed."""
    X, Y = _xor_data(30, 0)
    text = "columns word, label\noutput label\ntemplate cands: y[t] ~ word[t..t+1] (induce = 2)\n" \
           "template base: y[t] ~ bias\n"
    from fgl.io.rows import as_sentences
    model, data = compile_model(validate(parse_spec(text, "<t>")), as_sentences(X, Y, "t"))
    run = FeatureInduction(model, data, InductionOptions())
    rng = np.random.default_rng(1)
    first = run.tests.add((0,))
    run.features.append((first, 0))             # one feature already in, with some weight
    base, enc = run.build()
    w = rng.normal(0, 0.5, base.program.n_features)
    probs = np.concatenate(base.program.marginals(w, enc, 1).per_instance)
    atom = 3
    tokens = np.flatnonzero([atom in run.atom_tok[run.atom_ptr[t]:run.atom_ptr[t + 1]]
                             for t in range(data.n_tokens)])
    gain, mu = _gains(np.array([0, len(tokens)]), tokens, probs, data.gold,
                      1.0 / run.sigma ** 2)
    for label in (0, 1):
        run.features.append((run.tests.add((atom,)), label))
        grown, enc2 = run.build()
        objective = Objective(grown.program, enc2, grown.feat_sigma, jobs=1)
        k = int(grown.program.row_ptr[grown.vocabs[0][run.atom_keys[atom]]])
        others = np.delete(np.arange(grown.program.n_features), k)
        w2 = np.zeros(grown.program.n_features)
        w2[others] = w                         # same order: the new feature is the only new one

        def loss(m):
            w2[k] = m
            return objective(w2)[0]
        best = minimize_scalar(loss, bounds=(-30, 30), method="bounded",
                               options={"xatol": 1e-10})
        assert gain[0, label] == pytest.approx(loss(0.0) - best.fun, rel=1e-6, abs=1e-9)
        assert mu[0, label] == pytest.approx(best.x, abs=1e-4)
        run.features.pop()


def test_the_needed_conjunction_is_induced_early_and_wins():
    X, Y = _xor_data(300, 1)
    Xt, Yt = _xor_data(300, 2)
    crf = CRF(SPEC.format(rounds=4), jobs=1).fit(X, Y)
    rounds = crf.training_log.rounds
    induced = crf.training_log.induced
    early = [f for r in rounds[:2] for f in r["first"]]
    conj = {"word[t+1]=y & word[t]=x -> P", "word[t+1]=x & word[t]=y -> P"}
    assert conj & set(induced[:8]), induced[:8]
    assert any(f in conj for f in early) or conj <= set(induced[:8])
    atomic = CRF(SPEC.format(rounds=1).replace("(induce = 2)", "")
                 .split("train")[0], jobs=1).fit(X, Y)
    fixed = CRF("columns word, label\noutput label\n"
                "template c: y[t] ~ word[t..t+1], word[t] & word[t+1]\n"
                "template trans: y[t-1..t]\n", jobs=1).fit(X, Y)
    assert crf.score(Xt, Yt) > atomic.score(Xt, Yt) + 2
    assert crf.score(Xt, Yt) >= fixed.score(Xt, Yt) - 0.5
    assert crf.model.program.n_features * 3 < fixed.model.program.n_features


def test_an_induced_model_saves_loads_and_tags(tmp_path):
    X, Y = _xor_data(120, 3)
    crf = CRF(SPEC.format(rounds=3), jobs=1).fit(X, Y)
    assert any(" & " in k for k in crf.model.vocabs[0])
    path = tmp_path / "m.fglm"
    crf.save(path)
    assert load_model(path)[2]["induced"] == crf.training_log.induced
    again = CRF.load(path)
    Xt, _ = _xor_data(50, 4)
    assert again.predict(Xt) == crf.predict(Xt)
    np.testing.assert_array_equal(again.weights, crf.weights)


@pytest.mark.parametrize("spec, message", [
    ("template cands: y[t-1..t] ~ word[t] (induce = 2)\n", "unary template with observations"),
    ("template cands: y[t] ~ word[t] (induce = 2)\ntrain { l1 = 1 }\n",
     "feature induction trains by L-BFGS alone"),
    ("template cands: y[t] ~ word[t]\ntrain { induce_rounds = 3 }\n",
     "read by feature induction only"),
    ("template cands: y[t] ~ word[t] (induce = 2)\ntemplate g: (y[t-2], y[t])\n",
     "works on chain models"),
])
def test_misuse_is_refused_at_its_place(spec, message):
    X, Y = _xor_data(5, 0)
    with pytest.raises(SpecError, match=message):
        CRF("columns word, label\noutput label\n" + spec, jobs=1).fit(X, Y)


def _flip_data(n: int, seed: int) -> tuple[list, list]:
    """Labels A/B: `a` sets A, `b` sets B, `f` flips the previous label and
    other words keep it — `f`'s label depends on the previous label, which
    only observation features on label pairs can say."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        words = [str(w) for w in rng.choice(["a", "a", "a", "b", "f", "f", "k", "k", "n"],
                                            size=10)]
        y, labels = "A", []
        for w in words:
            y = {"a": "A", "b": "B", "f": "B" if y == "A" else "A"}.get(w, y)
            labels.append(y)
        X.append([[w] for w in words])
        Y.append(labels)
    return X, Y


def test_induced_features_are_copied_onto_label_pairs():
    """McCallum 2003 §3.2 (1*): a chosen feature g(s_t, o, t) enters the
    model with its copies g(s_{t-1}, s_t, o, t) for the label pairs ending
    in s_t seen where the test holds; only these copies can learn that `f`
    flips the label."""
    from fgl.io.rows import as_sentences
    from fgl.learn.induction import train_with_induction

    spec = validate(parse_spec(SPEC.format(rounds=3), "<t>"))
    X, Y = _flip_data(300, 1)
    Xt, Yt = _flip_data(300, 2)
    accuracy, sizes = {}, {}
    for copies in (True, False):
        model, data = compile_model(spec, as_sentences(X, Y, "t"))
        settings = InductionOptions(induce_rounds=3, induce_per_round=6, induce_min_gain=1.0,
                                    induce_transitions=int(copies))
        model, w, log = train_with_induction(model, data, settings, max_iter=200, tol=1e-6,
                                             jobs=1)
        st, prog = model.structure, model.program
        f_row = model.vocabs[0]["word[t]=f"]
        patterns = {st.patterns[z] for z in prog.feat_pattern[prog.row_ptr[f_row]:
                                                              prog.row_ptr[f_row + 1]]}
        a, b = model.labels.index("A"), model.labels.index("B")
        # the pairs the gold labels show at `f`: A -> B and B -> A
        assert {z for z in patterns if len(z) == 2} == ({(a, b), (b, a)} if copies else set())
        pred = model.decode(w, model.encode(as_sentences(Xt, None, "t")), 1).tokens()
        accuracy[copies] = np.mean([p == g for ps, gs in zip(pred, Yt) for p, g in zip(ps, gs)])
        sizes[copies] = prog.n_features
    assert accuracy[True] > 0.99 > accuracy[False] + 0.05, accuracy
    assert sizes[True] > sizes[False]
