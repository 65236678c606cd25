"""pytest's configuration of the fgl test suite: the folders mirror fgl's
packages (tests/lang, tests/engines/graph, ...), and the helpers they share
live in the ``support`` package next to this file."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

_TESTS_DIR = Path(__file__).resolve().parent
# Make ``import support`` work regardless of pytest's import mode / rootdir.
if str(_TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(_TESTS_DIR))

# The suite runs one process per core (pytest-xdist): a property test's example may then
# take longer than on a quiet machine, so no test is failed for its own speed -- neither by
# a deadline per example nor by hypothesis's health check on slow data generation. What
# a test sets itself still applies; this is the default beneath it.
settings.register_profile("fgl", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fgl")
