"""The suite's hypothesis profiles (tests/conftest.py): "ci" draws the same
examples on every run, "explore" a new seed per run; CI runs choose "ci"."""
from __future__ import annotations

import conftest
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st


@pytest.mark.parametrize("env, profile", [
    ({}, "explore"),
    ({"CI": "true"}, "ci"),
    ({"CI": "1"}, "ci"),
    ({"CI": "0"}, "explore"),
    ({"CI": "false"}, "explore"),
    ({"CI": "true", "FGL_HYPOTHESIS_PROFILE": "explore"}, "explore"),
    ({"FGL_HYPOTHESIS_PROFILE": "ci"}, "ci"),
])
def test_profile_chosen_from_the_environment(env, profile):
    assert conftest.hypothesis_profile(env) == profile


def draws(profile: str, run_seed: int | None = None) -> list[int]:
    """The integers a 20-example property test draws under ``profile``."""
    seen: list[int] = []

    @settings(settings.get_profile(profile), max_examples=20, database=None)
    @given(st.integers(0, 2**64))
    def record(x):
        seen.append(x)

    (record if run_seed is None else seed(run_seed)(record))()
    return seen


def test_ci_profile_draws_the_same_examples_every_run():
    assert draws("ci") == draws("ci")
    assert settings.get_profile("ci").database is None


def test_explore_profile_draws_new_examples_per_seed():
    assert not settings.get_profile("explore").derandomize
    assert draws("explore", 1) == draws("explore", 1)
    assert draws("explore", 1) != draws("explore", 2)
