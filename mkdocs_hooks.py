"""MkDocs hooks (mkdocs.yml `hooks:`). Headings get GitHub's anchors, so a
link like `evaluation.md#scoring-a-tagged-file---tagged` works on GitHub and
on the site alike. The repository pages the docs link to outside `docs/`
(the stdlib's list and built-ins, the examples' ladder) become pages of the
site, so `mkdocs build --strict` checks links into them too.

A link from `docs/` to `../stdlib/README.md` is pointed at the site's copy
`stdlib/README.md`; inside a copied page, a link back into `docs/` is pointed
at the site's page, and a link to a repository file the site does not hold
(a folder, a spec) becomes its plain text. A link to a repository path that
does not exist fails the build."""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent
REPO_PAGES = ("stdlib/README.md", "stdlib/BUILTINS.md", "examples/README.md")
LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s#]+)(#[^)\s]*)?\)")


def github_slug(value: str, separator: str = "-") -> str:
    """A heading's anchor as GitHub makes it: lower case, every character but
    letters, digits, `_`, `-` and spaces dropped, each space a `-`."""
    return re.sub(r"[^\w\- ]", "", value.strip().lower()).replace(" ", separator)


def on_config(config):
    """Headings' anchors by ``github_slug``."""
    config["mdx_configs"].setdefault("toc", {})["slugify"] = github_slug
    return config


def on_files(files, config):
    """Add the repository pages to the site's files."""
    from mkdocs.structure.files import File

    for path in REPO_PAGES:
        files.append(File(path, src_dir=str(REPO), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Point links that leave `docs/` at the site's pages (module docstring)."""
    from mkdocs.exceptions import PluginError

    src = page.file.src_uri
    in_repo_page = src in REPO_PAGES
    repo_dir = posixpath.dirname(src) if in_repo_page else "docs"

    def relink(m: re.Match) -> str:
        text, target, anchor = m.group(1), m.group(2), m.group(3) or ""
        if "://" in target or target.startswith(("mailto:", "/")):
            return m.group(0)
        if not in_repo_page and not target.startswith("../"):
            return m.group(0)                         # a link within docs/: MkDocs checks it
        repo_path = posixpath.normpath(posixpath.join(repo_dir, target))
        if not (REPO / repo_path).exists():
            raise PluginError(f"{src}: link to {target}: no such path in the repository")
        if repo_path in REPO_PAGES or repo_path.startswith("docs/"):
            site_path = repo_path[len("docs/"):] if repo_path.startswith("docs/") else repo_path
            here = posixpath.dirname(src)
            return f"{text}({posixpath.relpath(site_path, here or '.')}{anchor})"
        return text[1:-1]

    return LINK.sub(relink, markdown)
