"""numba is imported in one place, ``fgl/jit.py``, which hides SciPy's BLAS
from it (17 MB of resident memory per process that runs a kernel): every
other module takes ``njit`` from there, so whichever kernel module loads
first imports numba that way."""
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


def test_running_a_kernel_leaves_scipy_blas_unloaded():
    code = ("import sys\n"
            "import numpy as np\n"
            "from fgl.engines.sequence import chain, encoded, spans\n"
            "from fgl.learn import lbfgs, objective\n"
            "w = np.zeros(3)\n"
            "objective.add_prior(w, np.ones(3), np.ones(3))\n"
            "import numba.np.arraymath as m\n"
            "print('scipy.linalg.cython_blas' in sys.modules, m._HAVE_BLAS)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]
