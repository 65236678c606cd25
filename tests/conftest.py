"""pytest's configuration of the fgl test suite: the folders mirror fgl's
packages (tests/lang, tests/engines/graph, ...), and the helpers they share
live in the ``support`` package next to this file."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS_DIR = Path(__file__).resolve().parent
# Make ``import support`` work regardless of pytest's import mode / rootdir.
if str(_TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(_TESTS_DIR))
