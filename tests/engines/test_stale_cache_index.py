"""A numba cache index left by an fgl whose modules had other names (it
pickles the overloads' types by module and class) is a cache miss: the
kernel compiles and runs (``fgl.jit``), where numba alone raised
ModuleNotFoundError on the first call."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

from support.paths import REPO

KERNEL = '''from fgl.jit import njit


@njit(cache=True)
def twice(x):
    return 2 * x
'''
CALL = "import sys; sys.path[:0] = [{repo!r}, {here!r}]; import kernel; print(kernel.twice(21))"


def _call(folder: Path) -> subprocess.CompletedProcess:
    """The kernel called in a fresh process, its cache beside it (a
    ``NUMBA_CACHE_DIR`` of the caller's would move it elsewhere)."""
    code = CALL.format(repo=str(REPO), here=str(folder))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=folder, env=env)


def test_an_index_naming_a_missing_module_is_a_cache_miss(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNEL, encoding="utf-8")
    first = _call(tmp_path)
    assert first.stdout.split() == ["42"], first.stderr
    [index] = (tmp_path / "__pycache__").glob("kernel.twice-*.nbi")
    with open(index, "rb") as f:
        version = pickle.load(f)
    with open(index, "wb") as f:   # the same numba, overloads of a module fgl no longer has
        pickle.dump(version, f, protocol=-1)
        f.write(b"cfgl_module_renamed_since\nOldTables\n.")
    again = _call(tmp_path)
    assert again.returncode == 0 and again.stdout.split() == ["42"], again.stderr
    with open(index, "rb") as f:   # written anew
        assert pickle.load(f) == version
        assert b"fgl_module_renamed_since" not in f.read()
