"""The README is the front door: its spec example checks and is the main
job's file it says it is, and its two set-up commands are the ones .ci/run
and the test suite rely on (its length and links: test_docs_links.py)."""
import re

from support.paths import REPO

from fgl.lang.checks import check_spec
from fgl.lang.parser import parse_spec

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_spec_example_checks():
    blocks = re.findall(r"```fgl\n(.*?)```", README, re.S)
    assert blocks, "the README should show a spec"
    for text in blocks:
        assert check_spec(parse_spec(text, "README.md")) == []


def test_readme_spec_is_the_main_jobs_file():
    """The spec shown is examples/specs/high_order.fgl, its comments aside."""
    (shown,) = re.findall(r"```fgl\n(.*?)```", README, re.S)
    path = REPO / "examples" / "specs" / "high_order.fgl"
    assert f"`{path.relative_to(REPO)}`" in README
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    assert "\n".join(lines).strip() == shown.strip()


def test_ci_runs_the_readme_test_command():
    command = ("pip install -e '.[test]' && python -m ruff check . && "
               "python -m mkdocs build --strict && python -m pytest -q")
    assert command in README
    assert command in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_main_job_exists():
    assert "python examples/structures.py" in README
    assert (REPO / "examples" / "structures.py").exists()


def test_readme_lists_every_command():
    """One line per `fgl` command in the README's list of commands."""
    from fgl.cli import COMMANDS

    listed = set(re.findall(r"^    fgl (\w+) ", README, flags=re.MULTILINE))
    assert set(COMMANDS) - listed == set(), "commands missing from the README's list"
