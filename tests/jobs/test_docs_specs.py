"""The specs shown outside docs/language.md (which test_language_doc.py
covers, with training) stay true: every ```fgl block of the other docs pages
is a spec `fgl check` accepts."""
from __future__ import annotations

import re

import pytest
from support.paths import REPO

from fgl.lang.checks import check_spec
from fgl.lang.parser import parse_spec

PAGES = [p for p in sorted((REPO / "docs").glob("*.md")) if p.name != "language.md"]
BLOCKS = [(page, block) for page in PAGES
          for block in re.findall(r"^```fgl\n(.*?)^```", page.read_text(encoding="utf-8"),
                                  flags=re.DOTALL | re.MULTILINE)]


def test_the_overview_shows_specs():
    assert sum(page.name == "overview.md" for page, _ in BLOCKS) >= 2


@pytest.mark.parametrize("page, block", BLOCKS,
                         ids=[f"{p.name}-{i}" for i, (p, _) in enumerate(BLOCKS)])
def test_every_spec_block_checks(page, block):
    assert check_spec(parse_spec(block, page.name)) == []
