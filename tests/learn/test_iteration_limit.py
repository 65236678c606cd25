"""A training run that stops at its iteration limit says so loudly: an
``IterationLimitWarning`` from Python, one ``fgl: warning:`` line from the
command line even with ``-q``; a run stopped by its convergence rule says
nothing of the kind.  The default limit is 1000."""
from __future__ import annotations

import warnings

import pytest
from support.cli import run, train_model
from support.sentences import inputs_and_labels, segment_data

from fgl import CRF
from fgl.errors import IterationLimitWarning
from fgl.lang.parser import parse_spec
from fgl.lang.settings import resolve_train

SPEC = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
"""


def test_python_warns_at_the_limit_only():
    X, y = inputs_and_labels(segment_data(n_train=20, n_test=1)[0])
    with pytest.warns(IterationLimitWarning, match=r"iteration limit \(max_iter = 3\)"):
        crf = CRF(SPEC, max_iter=3).fit(X, y)
    assert not crf.training_log.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error", IterationLimitWarning)
        crf = CRF(SPEC).fit(X, y)             # converges well within the default
    assert crf.training_log.converged


def test_the_command_line_says_so_with_quiet(capsys, tmp_path):
    spec = tmp_path / "s.fgl"
    spec.write_text(SPEC)
    model, train, _ = train_model(capsys, tmp_path, spec)       # converged: no warning
    code, _, err = run(capsys, "train", spec, "--train", train, "-o", model, "-q")
    assert code == 0 and "warning" not in err
    for _ in range(2):   # (every run says so, also a second one in one process)
        code, _, err = run(capsys, "train", spec, "--train", train, "-o", model, "-q",
                           "--max-iter", 3)
        assert code == 0
        assert err.count("fgl: warning: training stopped at the iteration limit "
                         "(max_iter = 3)") == 1


def test_the_default_limit():
    assert resolve_train(parse_spec(SPEC)).options().max_iter == 1000   # (docs/language.md: why)
