"""A cold cache's later kernels compiled by a second process
(``fgl.engines.background_compile``): the kernel is then loaded from the
cache, not compiled again, and the code files carry the compiling process's
id (``fgl.jit.own_cache_file_names``); nothing starts when switched off or
when the cache is warm.  Each run is a process of its own with a kernel
module of its own (a new cache beside it).  The L-BFGS trainer's share of
the second process runs the L-BFGS kernels a fit runs, for the same types."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.paths import REPO

from fgl.engines.background_compile import cores

KERNEL = '''from fgl.jit import njit


@njit(cache=True)
def scaled(x, k):
    return x * k
'''
RUN = '''import json
import numpy as np
import kernel
from fgl.engines import background_compile
x = np.arange(3.0)
started = background_compile.start([(kernel.scaled, (x, 2))])
again = background_compile.start([(kernel.scaled, (x, 2))])
pid = background_compile._process.pid if started else None
background_compile.wait()
out = kernel.scaled(x, 2)
stats = kernel.scaled.stats
print(json.dumps({"started": started, "again": again, "pid": pid, "out": out.tolist(),
                  "hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values())}))
'''


def _run(folder: Path, switch: str = "1") -> dict:
    env = {**os.environ, "FGL_BACKGROUND_COMPILE": switch,
           "PYTHONPATH": os.pathsep.join([str(REPO), str(folder)])}
    env.pop("NUMBA_CACHE_DIR", None)   # (the cache in the kernel's own __pycache__)
    out = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True,
                         cwd=folder, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(cores() < 2, reason="a second process compiles only beside a free core")
def test_a_cold_kernel_is_compiled_aside_then_loaded(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNEL, encoding="utf-8")
    first = _run(tmp_path)
    assert first["started"] and not first["again"]        # once per process
    assert first["out"] == [0.0, 2.0, 4.0]
    assert (first["hits"], first["misses"]) == (1, 0)     # loaded, not compiled here
    [code] = (tmp_path / "__pycache__").glob("kernel.scaled-*.nbc")
    assert code.name.split(".")[-2] == str(first["pid"] * 1000 + 1)   # the second process's
    warm = _run(tmp_path)
    assert not warm["started"] and (warm["hits"], warm["misses"]) == (1, 0)


def test_switched_off_this_process_compiles(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNEL, encoding="utf-8")
    off = _run(tmp_path, switch="0")
    assert not off["started"] and off["out"] == [0.0, 2.0, 4.0]
    assert (off["hits"], off["misses"]) == (0, 1)
    [code] = (tmp_path / "__pycache__").glob("kernel.scaled-*.nbc")
    assert code.name.split(".")[-2] == "1"                # numba's own names, one process


def test_a_second_process_only_beside_a_free_core(monkeypatch):
    from fgl.engines import background_compile

    monkeypatch.setattr(background_compile, "cores", lambda: 2)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    for switch, load, wanted in (("", 0.3, True), ("", 1.7, False), ("1", 1.7, True),
                                 ("0", 0.3, False)):
        monkeypatch.setenv("FGL_BACKGROUND_COMPILE", switch)
        monkeypatch.setattr(background_compile.os, "getloadavg", lambda: (load, load, load))
        assert background_compile.wanted() is wanted, (switch, load)
    monkeypatch.setattr(background_compile, "cores", lambda: 1)
    monkeypatch.setenv("FGL_BACKGROUND_COMPILE", "1")
    assert not background_compile.wanted()                 # one core: nothing to gain


@pytest.mark.skipif(cores() < 2, reason="a second process compiles only beside a free core")
def test_the_second_process_ends_before_the_first(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNEL, encoding="utf-8")
    code = ("import numpy as np, kernel; from fgl.engines import background_compile; "
            "print(background_compile.start([(kernel.scaled, (np.arange(3.0), 2))]))")
    env = {**os.environ, "FGL_BACKGROUND_COMPILE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=300)
    assert out.stdout.split() == ["True"], out.stderr
    assert list((tmp_path / "__pycache__").glob("kernel.scaled-*.nbc"))   # compiled, then exit

OPTIMISER_KERNELS = '''import json, sys, warnings
from numba.core.registry import CPUDispatcher
warnings.simplefilter("ignore")
if sys.argv[1] == "fit":
    import fgl
    fgl.CRFEstimator(max_iter=5).fit([[{"w": "a"}, {"w": "b"}], [{"w": "b"}]], [["A", "B"], ["B"]])
else:
    from fgl.learn.lbfgs import compile_optimiser
    compile_optimiser()
found = {}
for name in ("fgl.learn.lbfgs", "fgl.learn.lbfgs_history", "fgl.learn.compact_form"):
    for attr, value in vars(sys.modules.get(name) or object()).items():
        if isinstance(value, CPUDispatcher) and value.signatures:
            found[f"{name}.{attr}"] = sorted(map(str, value.signatures))
print(json.dumps(found))
'''


def test_the_optimisers_kernels_compiled_aside_are_those_a_fit_runs():
    """``fgl.learn.lbfgs.compile_optimiser`` (the second process's share for
    the L-BFGS trainer) runs every L-BFGS kernel a small fit runs, for the same
    types: what the fit would otherwise compile, it finds cached."""
    def kernels(how: str) -> dict:
        out = subprocess.run([sys.executable, "-c", OPTIMISER_KERNELS, how], capture_output=True,
                             text=True, cwd=REPO, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    fit, aside = kernels("fit"), kernels("aside")
    assert fit, "a fit ran no L-BFGS kernel"
    assert {k: v for k, v in aside.items() if k in fit} == fit


def test_argument_types_travel_as_plain_data_and_come_back_equal():
    """The second process is told the kernels' argument types as JSON (no
    pickle): arrays of any dtype, layout and writability, numbers, booleans
    and (named) tuples of them come back as the same numba types."""
    import json

    from fgl.engines.background_compile import from_type_spec, type_spec
    from fgl.engines.graph.factor_graph import FactorGraph
    from fgl.jit import typeof

    frozen = np.zeros(3)
    frozen.flags.writeable = False
    for value in (np.zeros(3), np.zeros((2, 3), np.int32)[:, 1], frozen, np.zeros(2, np.int8),
                  np.zeros(2, bool), 5, 1.5, True, (np.zeros(2), 3),
                  FactorGraph.from_factors([2, 2], [[0, 1]]).arrays):
        t = typeof(value)
        assert from_type_spec(json.loads(json.dumps(type_spec(t)))) == t
    with pytest.raises(TypeError):
        type_spec(typeof("text"))
