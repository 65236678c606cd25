"""numba is imported in one place, ``fgl/jit.py``, which gives it SciPy's
BLAS extension without the ``scipy.linalg`` package (17 MB of resident
memory per process that runs a kernel): every other module takes ``njit``
from there, so whichever kernel module loads first imports numba that way."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

FGL = Path(__file__).resolve().parents[2] / "fgl"


def numba_imports(root: Path) -> list[str]:
    """``path:line`` of every import of numba under ``root`` but jit.py."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "jit.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "numba" or n.startswith("numba.") for n in names):
                hits.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return hits


def test_numba_is_imported_only_through_fgl_jit():
    assert numba_imports(FGL) == []


def test_a_planted_numba_import_is_reported(tmp_path):
    (tmp_path / "kernel.py").write_text("import numpy\nfrom numba import njit\n")
    assert numba_imports(tmp_path) == [f"{tmp_path.name}/kernel.py:2"]


def test_training_a_chain_uses_blas_without_scipy_linalg():
    """A first-order chain's training runs a matrix product through BLAS
    (``chain._add_taken_first_order``) with the extension loaded alone."""
    code = ("import sys\n"
            "from fgl.api import CRF\n"
            "X = [[[w] for w in s] for s in [['a', 'b'], ['b', 'a', 'a']] * 5]\n"
            "y = [['A', 'B'], ['B', 'A', 'A']] * 5\n"
            "spec = 'columns word, label\\noutput label\\n"
            "template state: y[t] ~ bias, word[t]\\ntemplate trans: y[t-1..t]\\n'\n"
            "crf = CRF(spec, max_iter=3).fit(X, y)\n"
            "assert crf.predict(X[:1]) == y[:1]\n"
            "blas = sys.modules.get('scipy.linalg.cython_blas')\n"
            "print('scipy.linalg' in sys.modules, blas is not None and hasattr(blas, "
            "'__pyx_capi__'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "True"]
