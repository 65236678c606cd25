"""The README stays a front door and the docs hold together, without MkDocs
installed: the README is at most 250 lines, every relative link of the
README, docs/ and the repository pages the site includes reaches a file
and, with `#anchor`, a heading of it (GitHub's anchors, which mkdocs_hooks.py
gives the site too), and mkdocs.yml's nav names every page of docs/."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from support.paths import REPO

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
PAGES = sorted([REPO / "README.md", REPO / "stdlib" / "README.md", REPO / "examples" / "README.md",
                *(REPO / "docs").glob("*.md")])


def _hooks():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", REPO / "mkdocs_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SLUG = _hooks().github_slug


def prose_lines(path: Path) -> list[str]:
    """The page's lines outside fenced code blocks and indented code."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and not line.startswith("    "):
            out.append(line)
    return out


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them (a repeated
    heading gets -1, -2, ...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
        slug = SLUG(text.replace("*", ""))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(path: Path) -> list[str]:
    """The page's relative link targets (code spans and blocks left out)."""
    text = "\n".join(re.sub(r"`[^`]*`", "", line) for line in prose_lines(path))
    return [t for t in LINK.findall(text) if "://" not in t and not t.startswith("mailto:")]


def test_the_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the rest to docs/"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_reaches_a_file_and_heading(page):
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: {dest.name} has no heading with that anchor")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_the_anchors_are_githubs():
    """What the link check and the site both rely on."""
    assert SLUG("Scoring a tagged file (--tagged)") == "scoring-a-tagged-file---tagged"
    assert SLUG("Partially labelled graphs (within-network classification)") == \
        "partially-labelled-graphs-within-network-classification"
    page = REPO / "docs" / "language.md"
    assert {"the-default-sigma", "infer-settings"} <= anchors(page)


def test_the_site_nav_names_every_docs_page():
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config[config.index("\nnav:"):]
    listed = set(re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)\s*$", nav, flags=re.MULTILINE))
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages - listed == set(), "docs pages missing from mkdocs.yml's nav"
    hooked = {p for p in listed if "/" in p}
    assert all((REPO / p).exists() for p in hooked)
