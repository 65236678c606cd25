"""The L-BFGS memory (`train { memory = N }`): CRFsuite's 6 correction
pairs for exact specs, ``APPROXIMATE_MEMORY`` for specs under approximate
inference and the exact part they start from, the setting's value when
given; a checkpoint resumes only with the memory it was written with."""
import pytest
from support.specs import CHAIN_FORMAT, SKIP_EQUAL_WORDS

import fgl.learn.learner as learner
from fgl.api import CRF
from fgl.datasets.synth import segment_sequences
from fgl.errors import FglError, SpecError

SKIP = CHAIN_FORMAT.format(extra=SKIP_EQUAL_WORDS, infer="infer trw")
CHAIN = CHAIN_FORMAT.format(extra="", infer="")


def _data():
    return segment_sequences(n_types=2, max_len=3, vocab=10, n_train=6, n_test=1, length=8,
                             seed=4)[0]


@pytest.fixture
def pairs(monkeypatch):
    """The correction pairs of every L-BFGS run, in order."""
    seen = []
    real = learner.minimize_lbfgs

    def spy(*args, m, **kwargs):
        seen.append(m)
        return real(*args, m=m, **kwargs)

    monkeypatch.setattr(learner, "minimize_lbfgs", spy)
    return seen


@pytest.mark.parametrize("text, train, expected", [
    (CHAIN, "", [learner.OPTIMISER_MEMORY]),
    (SKIP, "start = zero", [learner.APPROXIMATE_MEMORY]),
    # the exact part first, with the memory of the loopy run it starts
    (SKIP, "", [learner.APPROXIMATE_MEMORY, learner.APPROXIMATE_MEMORY]),
    (CHAIN, "memory = 9", [9]),
    (SKIP, "memory = 3", [3, 3]),
])
def test_each_run_keeps_the_pairs_its_spec_calls_for(pairs, text, train, expected):
    CRF(text + f"train {{ max_iter = 5  {train} }}\n", jobs=1).fit_sentences(_data())
    assert pairs == expected


def test_a_checkpoint_resumes_only_with_its_memory():
    crf = CRF(CHAIN, jobs=1)
    model, data = crf._compile(_data())
    states = []
    common = dict(jobs=1, checkpoint=lambda state, final: states.append(state))
    learner.train_lbfgs(model.program, data, model.feat_sigma, max_iter=4, memory=4, **common)
    assert states[-1].m == 4
    with pytest.raises(FglError, match=r"keeps 4 correction pairs; this run keeps 6 .*memory"):
        learner.train_lbfgs(model.program, data, model.feat_sigma, max_iter=8, jobs=1,
                            resume=states[-1])
    w, log = learner.train_lbfgs(model.program, data, model.feat_sigma, max_iter=8, jobs=1,
                                 memory=4, resume=states[-1])
    assert len(log.iterations) == 8


@pytest.mark.parametrize("value", ["0", "65", "2.5"])
def test_a_memory_outside_1_to_64_is_refused_at_its_line(value):
    with pytest.raises(SpecError, match=r":\d+:\d+: train: memory must be a whole number "
                                        r"from 1 to 64"):
        CRF(CHAIN + f"train {{ memory = {value} }}\n")
