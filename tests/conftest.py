"""pytest's configuration of the fgl test suite: the folders mirror fgl's
packages (tests/lang, tests/engines/graph, ...), and the helpers they share
live in the ``support`` package next to this file."""

from __future__ import annotations

import os
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
# a test sets itself (its number of examples) still applies; this is the default beneath it.
# (On hypothesis's own defaults, not the profile it loads itself when CI is set.)
_BASE = dict(parent=settings.get_profile("default"), deadline=None,
             suppress_health_check=[HealthCheck.too_slow], print_blob=True)
# "ci": every property test draws the same examples on every run (derandomize: a seed
# made from the test's own source, no example database), so a green CI means the same
# thing every time -- a change of code, not of luck, turns it red.
settings.register_profile("ci", derandomize=True, database=None, **_BASE)
# "explore": a fresh random seed per run (``--hypothesis-seed=N`` replays run N), failures
# kept in .hypothesis/ and tried first next time.  Every property must hold on any seed:
# local runs keep looking for the seed where one does not.
settings.register_profile("explore", **_BASE)


def hypothesis_profile(env: dict[str, str]) -> str:
    """FGL_HYPOTHESIS_PROFILE when set, else "ci" under CI (the CI variable most CI
    services set, unless "", "0" or "false"), else "explore"."""
    chosen = env.get("FGL_HYPOTHESIS_PROFILE")
    if chosen:
        return chosen
    return "ci" if env.get("CI", "").strip().lower() not in ("", "0", "false") else "explore"


settings.load_profile(hypothesis_profile(dict(os.environ)))
