"""A first-order chain's fit and predict compile each numba kernel they run
once: one type specialisation per kernel, since every specialisation is a
whole compilation on a first run (``fgl.engines.first_run``;
examples/profile_cold_start.py lists them and why they differ).

Each run is a process of its own, so no other test's data types are in its
dispatchers: ``python <this file> estimator|spec`` fits and predicts, then
prints every fgl kernel loaded with the signatures it holds (compiled or
loaded from the cache alike).
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest
from support.paths import REPO

from fgl.registry import by_name

X = [[{"bias": 1.0, "w": "a", "up": False, "n": 2}, {"bias": 1.0, "w": "b", "up": True}],
     [{"bias": 1.0, "w": "b", "up": True}, {"bias": 1.0, "w": "a", "up": False},
      {"bias": 1.0, "w": "c", "up": False, "n": 3}]]
Y = [["A", "B"], ["B", "A", "A"]]
SPEC = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
"""
ROWS = [[["a"], ["b"]], [["b"], ["a"], ["a"]]]


def kernel_signatures() -> dict[str, list[dict[str, str]]]:
    """``module.name`` of every numba kernel of fgl loaded so far: its
    signatures, each as the type of every parameter by name."""
    import inspect

    from numba.core.registry import CPUDispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("fgl.") and module is not None:
            for attr, value in vars(module).items():
                if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name:
                    params = inspect.signature(value.py_func).parameters
                    found[f"{name}.{attr}"] = [dict(zip(params, map(str, sig)))
                                               for sig in value.signatures]
    return found


def run(path: str) -> dict[str, list[str]]:
    """Fit and predict a first-order chain along ``path`` ("estimator":
    feature dicts; "spec": a spec's columns), twice (fresh estimators: the
    second must compile nothing new); the kernels' signatures."""
    import warnings

    import fgl
    from fgl.errors import IterationLimitWarning

    warnings.simplefilter("ignore", IterationLimitWarning)   # (3 iterations, on purpose)
    for _ in range(2):
        if path == "estimator":
            fgl.CRFEstimator(max_iter=3).fit(X, Y).predict(X)
        else:
            fgl.CRF(SPEC, max_iter=3).fit(ROWS, Y).predict(ROWS)
    return kernel_signatures()


@functools.cache
def run_in_process(path: str) -> dict[str, list[dict[str, str]]]:
    """``run(path)`` in a process of its own: the kernels' signatures (once
    per path: both tests read them)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, __file__, path], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("path", ["estimator", "spec"])
def test_a_chain_fit_and_predict_compile_each_kernel_once(path):
    signatures = run_in_process(path)
    chain = by_name("chain")
    used = [f"{k.module}.{name}" for k in chain.kernels for name in k.names]
    assert any(signatures.get(name) for name in used), sorted(signatures)   # (they ran)
    several = {name: sigs for name, sigs in signatures.items() if len(sigs) > 1}
    assert not several, "kernels compiled for more than one type:\n" + "\n".join(
        f"{name}:\n  " + "\n  ".join(map(str, sigs)) for name, sigs in several.items())
    # training's and tagging's kernels take the data as one type, so what they
    # share (potentials, the lattice; loaded from the cache unseen) compiles once
    types: dict[str, set[str]] = {}
    for name in used:
        for sig in signatures.get(name, []):
            for param, numba_type in sig.items():
                types.setdefault(param, set()).add(numba_type)
    assert all(len(t) == 1 for t in types.values()), {p: t for p, t in types.items()
                                                      if len(t) > 1}


@pytest.mark.parametrize("path", ["estimator", "spec"])
def test_a_first_order_chain_runs_no_other_kind_of_chain_kernel(path):
    """Whether a chain is first order is decided in Python, so its fit and
    predict call the first-order factored kernel and none of the general
    order's, nor the paths its weights do not take (a kernel no run calls is
    not compiled on a first run, unless a kernel it does call calls it: what
    examples/profile_cold_start.py lists)."""
    signatures = run_in_process(path)
    chain = "fgl.engines.sequence.chain."
    assert signatures.get(chain + "_expectations_first_order")
    ran = [name for name in ("_expectations_factored", "_expectations_scaled",
                             "_expectations_log_space", "_general_counts", "_backward_step",
                             "_add_taken") if signatures.get(chain + name)]
    assert not ran, ran


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
