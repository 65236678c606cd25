"""A cold first run's later kernels, compiled by a second process beside it.

numba compiles one function at a time, in one thread, under one lock, so a
first run on a machine (``fgl.engines.first_run``) leaves every core but one
idle while it compiles.  When a chain or a semi-Markov model starts
training on a cold cache, ``start`` hands the kernels the run needs later --
its engine's Viterbi for tagging, and under the L-BFGS trainer the
optimiser's (``also_call``) -- to a process of its own, which compiles them
into the same numba cache while this one compiles training's kernel; this
process then loads them from the cache as any later run would.  On the
quiet 2-core development machine a cold ``CRFEstimator`` fit of 300
sentences took 12.9 s instead of 16.1 s, and its predict 0.1 s instead of
2.3 s (docs/benchmarks.md, "A first run").

A kernel loaded from the cache is the code this process would have
compiled (the same compiler, flags and machine): results are the same bit
for bit.  The second process is started once per process, only when the
cache holds no Viterbi kernel yet and more than one core is usable, and a
core looks free (the load average; ``FGL_BACKGROUND_COMPILE=1``: always,
``0``: never); it writes nothing but numba's cache and is waited for
before tagging (``wait``) and before this process exits.  numba writes its cache
files through a temporary file and a rename; ``fgl.jit`` gives each
process's cached code files names of their own, so two processes saving
the same kernel at once can lose an index entry (a later compilation) but
never pair a signature with another's code.

``python -m fgl.engines.background_compile`` is the second process: it
reads what to compile from standard input, as JSON (``Work``; numba's
types written out by ``type_spec``).
"""
from __future__ import annotations

import atexit
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from fgl.engines.parallel import cores

_process: subprocess.Popen | None = None
_decided = False   # (whether to start is decided once per process, at the first call)
_calls: list[str] = []


class Work(NamedTuple):
    """What the second process compiles: kernels by ``(module, name,
    argument types)`` (``type_spec``'s), then the functions named
    ``"module:function"`` in ``calls`` (each compiles kernels whose types do
    not depend on the data by running them on a small problem)."""

    kernels: list[tuple[str, str, list]]
    calls: list[str]


def type_spec(t: object) -> dict:
    """A numba type of a kernel argument as plain data (JSON): arrays,
    numbers, booleans and (named) tuples of them; TypeError for others."""
    from fgl.jit import types

    if isinstance(t, types.Array):
        return {"array": str(t.dtype), "ndim": t.ndim, "layout": t.layout,
                "readonly": not t.mutable}
    if isinstance(t, types.BaseTuple):
        cls = getattr(t, "instance_class", None) if isinstance(t, types.BaseNamedTuple) else None
        return {"tuple": [type_spec(x) for x in t.types],
                "class": None if cls is None else f"{cls.__module__}:{cls.__qualname__}"}
    if isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return {"scalar": str(t)}
    raise TypeError(f"no plain form for the numba type {t}")


def from_type_spec(spec: dict) -> object:
    """The numba type ``type_spec`` wrote."""
    from fgl.jit import types

    def scalar(name: str) -> object:
        return types.boolean if name == "bool" else getattr(types, name)

    if "array" in spec:
        return types.Array(scalar(spec["array"]), spec["ndim"], spec["layout"],
                           readonly=spec["readonly"])
    if "tuple" in spec:
        fields = [from_type_spec(x) for x in spec["tuple"]]
        if spec["class"] is None:
            return types.BaseTuple.from_types(fields)
        module, name = spec["class"].split(":")
        return types.BaseTuple.from_types(fields, getattr(importlib.import_module(module), name))
    return scalar(spec["scalar"])


def also_call(call: str) -> None:
    """Have the second process, when one starts, also call ``call``
    (``"module:function"``, no arguments): how a layer above the engines
    adds its own kernels (the L-BFGS trainer, its optimiser's)."""
    if call not in _calls:
        _calls.append(call)


def idle_core() -> bool:
    """Whether a core looks free: the last minute's load average is below
    the cores less a half (this process, compiling, is one of the load; on
    a machine others keep busy a second process would only slow it down)."""
    try:
        return os.getloadavg()[0] < cores() - 0.5
    except (AttributeError, OSError):   # (no load average on this platform)
        return True


def wanted() -> bool:
    """Whether a second process may compile: ``FGL_BACKGROUND_COMPILE`` is
    ``1``, or unset and a core looks free (``idle_core``); more than one
    core; numba compiling at all."""
    switch = os.environ.get("FGL_BACKGROUND_COMPILE", "")
    return (switch == "1" or (switch == "" and idle_core())) and cores() > 1 \
        and os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")


def start(kernels: list[tuple[object, tuple]]) -> bool:
    """Compile each ``(dispatcher, example arguments)`` of ``kernels`` for
    the arguments' types, and make the calls of ``also_call``, in a second
    process, when the first dispatcher has no cache yet (decided at the
    first call in a process; see the module's docstring); returns whether
    it started."""
    global _process, _decided
    from fgl.engines.first_run import cache_index

    if _decided or not kernels:
        return False
    _decided = True
    index = cache_index(kernels[0][0])
    if index is None or index.exists() or not wanted():
        return False
    from fgl.jit import own_cache_file_names, typeof

    own_cache_file_names()
    root = str(Path(__file__).resolve().parents[2])   # (the folder holding fgl)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [root, os.environ.get("PYTHONPATH")]))}
    try:
        work = json.dumps(Work([(d.py_func.__module__, d.py_func.__name__,
                                 [type_spec(typeof(a)) for a in args]) for d, args in kernels],
                               list(_calls))._asdict()).encode()
        _process = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=env, cwd=root)
        _process.stdin.write(work)
        _process.stdin.close()
        atexit.register(wait)   # (no process outlives this one)
    except Exception:   # (a type with no plain form, no process: this one compiles as usual)
        _process = None
        return False
    return True


def wait(timeout: float = 600.0) -> None:
    """Wait for the second process, if one is compiling (before running a
    kernel it compiles: loaded from the cache then, not compiled twice);
    one still compiling after ``timeout`` seconds is stopped (this process
    then compiles what it needs itself)."""
    global _process
    if _process is not None:
        try:
            _process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _process.kill()
            _process.wait()
        _process = None


def main() -> None:
    """The second process: compile what standard input asks for."""
    from fgl.jit import own_cache_file_names

    own_cache_file_names()
    work = Work(**json.loads(sys.stdin.buffer.read()))
    for module, name, specs in work.kernels:
        getattr(importlib.import_module(module), name).compile(
            tuple(from_type_spec(x) for x in specs))
    for call in work.calls:
        module, function = call.split(":")
        getattr(importlib.import_module(module), function)()


if __name__ == "__main__":
    main()
