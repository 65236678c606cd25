"""The size estimate from counts (``fgl.compile.estimate``, issue 25 item
3): an upper bound on every template's attributes and features — checked
against the compiled model's exact counts over a range of observation
expressions, chains and segments — and ``fgl explain`` of a spec with
millions of features prints it without building the feature table."""
from __future__ import annotations

import random

import numpy as np
import pytest

from fgl import registry
from fgl.compile import estimate as est
from fgl.compile.feature_table import FeatureTable
from fgl.io.conll import read_conll
from fgl.lang.parser import parse_spec
from fgl.lang.settings import resolve_train

HEAD = "columns word, x:number, pos, chunk\noutput chunk\n"
SPECS = {
    "conjunctions": """
obs w  = word[t-1..t+1]
obs ww = (word[t-1] & word[t]) | (word[t] & pos[t+1]) | (pos[t-1] & pos[t] & pos[t+1])
template state: y[t] ~ w, ww
template transition: y[t-1..t]
""",
    "functions, support all": """
obs f = lower(word[t]) | suffix(word[t], 2) | shape(word[t]) | class(word[t]) | pad(word[t-2])
template state: y[t] ~ f, regex(word[t], "^[A-Z]"), bos | eos, value(x[t]) (support = all)
template transition: y[t-1..t] ~ pos[t] (support = all)
""",
    "high order": """
template state: y[t] ~ word[t], pos[t-1..t]
template high: y[t-2..t] patterns observed upto ~ pos[t] & word[t-1]
""",
    "segments": """
segments max 3 from bio
obs around = pad(lower(word[u-1])) | pad(lower(word[v+1]))
template segment: s[j] ~ bias, lower(word[u]), word[u..v], around, length, count(word[u..v])
template transition: s[j-1..j] ~ pos[u] & pos[v]
""",
}


def _data(path, n_sentences: int = 60, seed: int = 7) -> None:
    rng = random.Random(seed)
    words = [w.capitalize() if i % 4 == 0 else w for i, w in
             enumerate(f"w{i}x{'Ab1'[i % 3]}" for i in range(120))]
    lines = []
    for _ in range(n_sentences):
        for t in range(rng.randint(1, 12)):
            tag = rng.choice(["B-NP", "I-NP", "B-VP", "O"]) if t else rng.choice(["B-NP", "O"])
            lines.append(f"{rng.choice(words)} {rng.random():.3f} P{rng.randint(0, 9)} {tag}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", list(SPECS))
def test_the_estimate_bounds_every_template_from_above(name, tmp_path):
    data = tmp_path / "train.txt"
    _data(data)
    spec = parse_spec(HEAD + SPECS[name], str(tmp_path / "s.fgl"))
    sentences = list(read_conll(data))
    settings = resolve_train(spec)
    model_cls = registry.choose(spec).model
    bound = est.estimate(spec, model_cls, sentences, settings, str(data))
    model, encoded = registry.compile_model(spec, sentences, tmp_path, settings, str(data))
    row_len = np.diff(model.program.row_ptr)
    for ti, vocab in enumerate(model.vocabs):
        features = int(row_len[list(vocab.values())].sum())
        assert len(vocab) <= bound.attributes[ti], (ti, len(vocab), bound.attributes)
        assert features <= bound.features[ti], (ti, features, bound.features)
    assert bound.footprint.total >= model.footprint(encoded).total


def test_a_bound_on_a_conjunction_is_capped_by_its_occurrences(tmp_path):
    """A conjunction of two columns has at most one value per token, however
    many values each column has: the estimate is not their product."""
    data = tmp_path / "train.txt"
    _data(data)
    spec = parse_spec(HEAD + "template s: y[t] ~ word[t] & word[t+1]\n", "s.fgl")
    sentences = list(read_conll(data))
    tokens = sum(len(s) for s in sentences)
    bound = est.estimate(spec, registry.choose(spec).model, sentences, resolve_train(spec), "d")
    assert bound.attributes == [tokens]


def test_explain_of_millions_of_features_prints_the_estimate_without_the_table(tmp_path,
                                                                               capsys,
                                                                               monkeypatch):
    from fgl.cli import main

    data, spec = tmp_path / "train.txt", tmp_path / "big.fgl"
    # 30,000 distinct words x 100 labels, support = all: 3,000,000 features
    data.write_text("".join(f"w{i} L{i % 100}\n" + ("\n" if i % 20 == 19 else "")
                            for i in range(30_000)), encoding="utf-8")
    spec.write_text("columns word, label\noutput label\n"
                    "template e: y[t] ~ word[t] (support = all)\n", encoding="utf-8")

    def built(*args, **kwargs):
        raise AssertionError("explain built the feature table")

    monkeypatch.setattr(FeatureTable, "read", built)
    assert main(["explain", str(spec), "--train", str(data)]) == 0
    out = capsys.readouterr().out
    assert "features: at most 3,000,000 (an upper bound estimated" in out, out
    assert "e: at most 30,000 attributes x 100 patterns (support all)" in out
    assert "memory: at most about" in out
