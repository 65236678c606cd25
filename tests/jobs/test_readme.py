"""The README is the front door: its spec example checks, and its two
set-up commands are the ones .ci/run and the test suite rely on."""
import re

from support.paths import REPO

from fgl.lang.checks import check_spec
from fgl.lang.parser import parse_spec

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_spec_example_checks():
    blocks = re.findall(r"```\n(columns.*?)```", README, re.S)
    assert blocks, "the README should show a spec"
    for text in blocks:
        assert check_spec(parse_spec(text, "README.md")) == []


def test_ci_runs_the_readme_test_command():
    command = "pip install -e '.[test]' && python -m ruff check . && python -m pytest -q"
    assert command in README
    assert command in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_main_job_exists():
    assert "python examples/structures.py" in README
    assert (REPO / "examples" / "structures.py").exists()
