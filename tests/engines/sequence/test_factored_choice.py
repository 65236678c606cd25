"""Which training kernel a chain calls is decided from the model where it
can be (``chain.static_blocks``): a chain whose transitions carry per-token
features never calls the factored kernels -- so a first run does not
compile one only to see it decline (``fgl.engines.first_run``) -- and a
chain with plain transitions calls the first-order one."""
from __future__ import annotations

import warnings

import pytest

import fgl
from fgl.engines.sequence import chain
from fgl.errors import IterationLimitWarning

PLAIN = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
"""
OBSERVED = PLAIN + "template obs_trans: y[t-1..t] ~ word[t]\n"
X = [[["a"], ["b"]], [["b"], ["a"], ["a"]], [["c"], ["a"]]]
Y = [["A", "B"], ["B", "A", "A"], ["B", "B"]]


@pytest.mark.parametrize("spec, factored", [(PLAIN, True), (OBSERVED, False)],
                         ids=["plain transitions", "observed transitions"])
def test_the_factored_kernel_is_called_only_when_the_model_allows_it(monkeypatch, spec,
                                                                     factored):
    called = []
    for name in ("_expectations_first_order", "_expectations_factored"):
        kernel = getattr(chain, name)

        def spy(*args, _kernel=kernel, _name=name):
            called.append(_name)
            return _kernel(*args)
        monkeypatch.setattr(chain, name, spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IterationLimitWarning)
        fgl.CRF(spec, max_iter=3).fit(X, Y)
    assert bool(called) is factored, called
    if factored:
        assert set(called) == {"_expectations_first_order"}
