"""Shared check: an objective's gradient against central finite differences."""
import numpy as np


def assert_gradient_matches_central_differences(objective, n_features, scale=1.0, n_checks=40,
                                                h=1e-5, rtol=1e-6, seed=0):
    """``objective(w) -> (f, g)``; checks ``n_checks`` random coordinates at
    random weights of the given scale."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0, scale, n_features)
    _, g = objective(w)
    for k in rng.choice(n_features, size=min(n_checks, n_features), replace=False):
        e = np.zeros_like(w)
        e[k] = h
        numeric = (objective(w + e)[0] - objective(w - e)[0]) / (2 * h)
        assert abs(numeric - g[k]) <= rtol * max(1.0, abs(g[k])), (k, numeric, g[k])
