"""LINQS citation data (the CiteSeer and Cora files of Sen et al. 2008) as
JSON-lines graphs, for ``fgl convert linqs`` (docs/data.md).

Two files describe one citation graph:

- ``NAME.content``: one paper a line, tab-separated: the paper's id, its
  words, its class label.  The words are either the LINQS layout — one 0/1
  column per dictionary word (CiteSeer 3,703 columns, Cora 1,433), the word
  of column j (from 0) named ``wj`` — or one field holding the present
  words' names separated by spaces (the layout of copies converted from
  the Planetoid files).  The first line decides which; every line must
  then follow it.
- ``NAME.cites``: one link a line, ``cited<TAB>citing`` (two paper ids;
  spaces also separate them).

A paper becomes a node ``{"id", "words", "label"}`` — ``words`` its present
words as space-separated tokens, as ``tokens(words[a])`` reads them — and a
link an edge ``{"source": citing, "target": cited, "type": "cites"}``.

The real files have defects, which are dropped and counted, never fatal
(``LinkCounts``): CiteSeer's .cites names papers that its .content does not
list, and repeats links.  A link is kept once per pair of papers: a line
naming a paper not in .content, a self-link (a pair template links two
different nodes), a repeated line and the reverse of a link already kept
(the pair is linked; a pair template reads it either way) are dropped.  A
malformed line is a DataError at ``file:line`` saying what was found and
what was expected.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fgl.errors import DataError, FglError, shorten
from fgl.io.conll import LINE_BREAK, decode_text

LINK_TYPE = "cites"


@dataclass
class Paper:
    id: str
    words: str    # the present words, space-separated
    label: str
    line: int


@dataclass
class LinkCounts:
    """What became of the lines of a .cites file (``first_*``: the line of
    the first of each kind of dropped line, 0 for none)."""

    lines: int = 0
    kept: int = 0
    missing: int = 0                  # naming a paper not in .content
    missing_ids: set[str] = field(default_factory=set)
    first_missing: int = 0
    self_links: int = 0
    first_self: int = 0
    repeats: int = 0                  # the same (cited, citing) again
    first_repeat: int = 0
    reverse: int = 0                  # the reverse of a link kept: the pair is linked

    @property
    def dropped(self) -> int:
        return self.missing + self.self_links + self.repeats + self.reverse


@dataclass
class Linqs:
    """A LINQS citation graph: its papers (file order) and links
    ``(citing, cited)``, one per pair of papers."""

    papers: list[Paper]
    links: list[tuple[str, str]]
    layout: str          # "columns" (0/1 per word) or "lists" (word names)
    vocabulary: int      # dictionary words (columns), or distinct words listed
    counts: LinkCounts
    content: str
    cites: str

    @property
    def labels(self) -> Counter:
        return Counter(p.label for p in self.papers)

    def isolated(self) -> int:
        """Papers in no kept link."""
        linked = {x for link in self.links for x in link}
        return sum(p.id not in linked for p in self.papers)


def _lines(path: str | Path, encoding: str) -> list[str]:
    name = str(path)
    from fgl.data.inputs import read_capped

    try:
        raw = read_capped(path)   # a file or pipe, at most FGL_MAX_INPUT bytes
    except FileNotFoundError:
        raise DataError("no such file", name, 0) from None
    except OSError as e:
        raise DataError(f"cannot read: {e.strerror or e}", name, 0) from None
    lines = LINE_BREAK.split(decode_text(raw, encoding, name))
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_content(path: str | Path, encoding: str = "utf-8"
                 ) -> tuple[list[Paper], str, int]:
    """The papers of a .content file, its layout ("columns" or "lists")
    and its vocabulary size."""
    name = str(path)
    papers: list[Paper] = []
    where: dict[str, int] = {}
    layout, width, vocab = "", 0, set()
    for lineno, line in enumerate(_lines(path, encoding), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if not layout:
            if len(fields) < 3:
                raise DataError(f"found {len(fields)} tab-separated field"
                                f"{'s' if len(fields) != 1 else ''}; expected a paper id, its "
                                "words (0/1 columns, or one field of word names separated by "
                                "spaces) and its label, separated by tabs", name, lineno)
            layout = "columns" if len(fields) > 3 or fields[1].strip() in ("0", "1") else "lists"
            width = len(fields)
        pid, label = fields[0].strip(), fields[-1].strip()
        if layout == "columns":
            if len(fields) != width:
                raise DataError(f"found {len(fields)} tab-separated fields; expected {width} "
                                f"(a paper id, {width - 2} word columns of 0 or 1, a label) "
                                "as on the first line", name, lineno)
            words = []
            for j, v in enumerate(fields[1:-1]):
                v = v.strip()
                if v == "1":
                    words.append(f"w{j}")
                elif v != "0":
                    raise DataError(f"word column {j + 1} of {width - 2} (field {j + 2}) holds "
                                    f"{shorten(v, 40)!r}; expected 0 or 1", name, lineno)
        else:
            if len(fields) != 3:
                raise DataError(f"found {len(fields)} tab-separated fields; expected 3 (a "
                                "paper id, its word names separated by spaces, a label) as on "
                                "the first line", name, lineno)
            words = fields[1].split()
            vocab.update(words)
        if not pid:
            raise DataError("the paper id (the first field) is empty", name, lineno)
        if not label:
            raise DataError(f"paper '{shorten(pid, 60)}' has an empty label (the last field)",
                            name, lineno)
        if pid in where:
            raise DataError(f"paper '{shorten(pid, 60)}' again (first on line {where[pid]}); "
                            "a paper is one line", name, lineno)
        where[pid] = lineno
        papers.append(Paper(pid, " ".join(words), label, lineno))
    if not papers:
        raise DataError("no papers (the file is empty)", name, 1)
    return papers, layout, width - 2 if layout == "columns" else len(vocab)


def read_links(path: str | Path, known: set[str] | dict, encoding: str = "utf-8"
               ) -> tuple[list[tuple[str, str]], LinkCounts]:
    """The links ``(citing, cited)`` of a .cites file between ``known``
    papers, one per pair of papers, and what became of its lines."""
    name = str(path)
    counts = LinkCounts()
    links: list[tuple[str, str]] = []
    lines_seen: set[tuple[str, str]] = set()
    pairs: set[frozenset[str]] = set()
    for lineno, line in enumerate(_lines(path, encoding), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            raise DataError(f"found {len(fields)} field{'s' if len(fields) != 1 else ''} "
                            f"({shorten(line.strip(), 60)!r}); expected two paper ids, the cited "
                            "paper then the citing one, separated by a tab", name, lineno)
        cited, citing = fields
        counts.lines += 1
        absent = [x for x in (cited, citing) if x not in known]
        if absent:
            counts.missing += 1
            counts.missing_ids.update(absent)
            counts.first_missing = counts.first_missing or lineno
        elif cited == citing:
            counts.self_links += 1
            counts.first_self = counts.first_self or lineno
        elif (cited, citing) in lines_seen:
            counts.repeats += 1
            counts.first_repeat = counts.first_repeat or lineno
        elif frozenset((cited, citing)) in pairs:
            counts.reverse += 1
            lines_seen.add((cited, citing))
        else:
            lines_seen.add((cited, citing))
            pairs.add(frozenset((cited, citing)))
            links.append((citing, cited))
    counts.kept = len(links)
    return links, counts


def read_linqs(content: str | Path, cites: str | Path, encoding: str = "utf-8") -> Linqs:
    """A LINQS pair of files (module docstring)."""
    papers, layout, vocab = read_content(content, encoding)
    links, counts = read_links(cites, {p.id for p in papers}, encoding)
    return Linqs(papers, links, layout, vocab, counts, str(content), str(cites))


def graph_json(papers: list[Paper], links: list[tuple[str, str]],
               null: set[str] | frozenset[str] = frozenset(),
               withheld: set[str] | frozenset[str] = frozenset()) -> dict:
    """One graph as a line of a graph file holds it (``fgl.io.graphs``):
    the papers' labels ``null`` for the ids in ``null``, and ``"withheld":
    true`` on those in ``withheld`` (their labels kept, for evaluation)."""
    nodes = []
    for p in papers:
        node = {"id": p.id, "words": p.words, "label": None if p.id in null else p.label}
        if p.id in withheld:
            node["withheld"] = True
        nodes.append(node)
    return {"nodes": nodes,
            "edges": [{"source": a, "target": b, "type": LINK_TYPE} for a, b in links]}


def _chosen(n: int, share: float, seed: int, what: str) -> np.ndarray:
    """A seeded random choice of round(share·n) of n items (their indices,
    ascending): at least one chosen and one left."""
    k = int(round(share * n))
    if not 0 < k < n:
        raise FglError(f"{what} {share:g} of {n} papers chooses {k}; choose at least one "
                       "paper and leave at least one")
    return np.sort(np.random.default_rng(seed).permutation(n)[:k])


def split(data: Linqs, share: float, seed: int
          ) -> tuple[list[Paper], list[Paper], list[tuple[str, str]], list[tuple[str, str]],
                     int]:
    """A seeded random split of the papers: ``share`` of them (rounded)
    for training, the rest for testing, each with the links between its
    own papers; returns (train papers, test papers, train links, test
    links, links across the split, which are dropped)."""
    chosen = set(_chosen(len(data.papers), share, seed, "--split").tolist())
    train = [p for i, p in enumerate(data.papers) if i in chosen]
    test = [p for i, p in enumerate(data.papers) if i not in chosen]
    side = {p.id: True for p in train} | {p.id: False for p in test}
    train_links = [link for link in data.links if side[link[0]] and side[link[1]]]
    test_links = [link for link in data.links if not side[link[0]] and not side[link[1]]]
    return train, test, train_links, test_links, len(data.links) - len(train_links) - len(
        test_links)


def withhold(data: Linqs, fraction: float, seed: int) -> set[str]:
    """The ids of a seeded random ``fraction`` (rounded) of the papers,
    whose labels are withheld."""
    chosen = _chosen(len(data.papers), fraction, seed, "--withhold")
    return {data.papers[i].id for i in chosen}
