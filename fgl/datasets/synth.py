"""Generated data sets for experiments and tests.

:func:`markov_sequences` follows Ye et al. 2009 §4.1 / Cuong et al. 2014 §3.1.1: a randomly
generated order-k Markov model over n states where each k-history allows at
most r next states, and each state emits m Gaussian observations.

:func:`segment_sequences` generates BIO-tagged word sequences from a simple
segment-level (semi-Markov) model, for semi-Markov experiments.

Everything is drawn from ``numpy.random.default_rng(seed)``, so the same
arguments always give the same data.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fgl.data.sentence import Sentence
from fgl.io.conll import write_conll
from fgl.io.safe_files import atomic_output

GENERATED = "<generated>"


def _sentences(rows_list: list[list[list[str]]]) -> list[Sentence]:
    """Wrap rows as Sentences whose line numbers match :func:`write_conll` output."""
    out = []
    line = 1
    for rows in rows_list:
        out.append(Sentence(rows, list(range(line, line + len(rows))), 0, GENERATED))
        line += len(rows) + 1
    return out


@dataclass
class MarkovModel:
    """An order-k Markov model with sparse successors and Gaussian emissions.

    ``successors[h]`` (an array of at most r distinct states) and ``probs[h]``
    (their probabilities) for each history index ``h``; a history
    ``(y_{t-k}, ..., y_{t-1})`` has index ``sum(y_{t-k+i} * n**(k-1-i))``.
    ``mu[i, j]`` is the mean of observation j in state i.
    """
    n_labels: int
    order: int
    successors: np.ndarray   # (n**k, r) int
    probs: np.ndarray        # (n**k, r) float, rows sum to 1
    mu: np.ndarray           # (n, m)
    sigma: float

    @classmethod
    def random(cls, rng: np.random.Generator, n_labels: int = 5, order: int = 2, r: int = 2,
               m: int = 3, sigma: float = 0.5) -> "MarkovModel":
        if n_labels < 1 or order < 0 or m < 1 or sigma < 0:
            raise ValueError("need n_labels >= 1, order >= 0, m >= 1 and sigma >= 0")
        if not 1 <= r <= n_labels:
            raise ValueError(f"r must be between 1 and n_labels ({n_labels}), found {r}")
        n_hist = n_labels ** order
        succ = np.empty((n_hist, r), dtype=np.int64)
        probs = np.empty((n_hist, r))
        for h in range(n_hist):
            succ[h] = rng.choice(n_labels, size=r, replace=False)
            w = rng.uniform(0.0, 1.0, size=r)
            probs[h] = w / w.sum() if w.sum() > 0 else np.full(r, 1.0 / r)
        mu = rng.uniform(0.0, 1.0, size=(n_labels, m))
        return cls(n_labels, order, succ, probs, mu, float(sigma))

    def history_index(self, history) -> int:
        h = 0
        for s in history:
            h = h * self.n_labels + int(s)
        return h

    def sample(self, rng: np.random.Generator, length: int) -> tuple[np.ndarray, np.ndarray]:
        """(states of shape (length,), observations of shape (length, m)).

        The first ``min(k, length)`` states are uniform at random; each later
        state is drawn from the successors of the previous k states.
        """
        k, n = self.order, self.n_labels
        y = np.empty(length, dtype=np.int64)
        start = min(k, length)
        y[:start] = rng.integers(0, n, size=start)
        cum = np.cumsum(self.probs, axis=1)
        u = rng.random(length)
        for t in range(start, length):
            h = self.history_index(y[t - k:t])
            j = min(int(np.searchsorted(cum[h], u[t], side="right")), cum.shape[1] - 1)
            y[t] = self.successors[h][j]
        x = rng.normal(self.mu[y], self.sigma) if self.sigma > 0 else self.mu[y].copy()
        return y, x


def markov_sequences(n_labels: int = 5, order: int = 2, r: int = 2, m: int = 3, sigma: float = 0.5,
                     n_train: int = 500, n_test: int = 500, length: int = 20,
                     seed: int = 0) -> tuple[list[Sentence], list[Sentence]]:
    """Train and test sets sampled from one random order-k Markov model.

    Each token row is ``[a1, ..., am, label]`` with observations formatted
    ``"{:.4f}"`` and labels ``s0 .. s{n-1}``; file ``"<generated>"``, doc 0,
    and line numbers as they would be in the file written by write_conll.
    The model is drawn first, then the training sequences, then the test
    sequences, all from ``default_rng(seed)``.
    """
    if length < 1:
        raise ValueError(f"length must be at least 1, found {length}")
    rng = np.random.default_rng(seed)
    model = MarkovModel.random(rng, n_labels, order, r, m, sigma)
    names = [f"s{i}" for i in range(n_labels)]

    def draw(count: int) -> list[Sentence]:
        all_rows = []
        for _ in range(count):
            y, x = model.sample(rng, length)
            all_rows.append([[*(f"{a:.4f}" for a in x[t]), names[y[t]]] for t in range(length)])
        return _sentences(all_rows)

    train = draw(n_train)
    test = draw(n_test)
    return train, test


def _write_pair(directory, train: list[Sentence], test: list[Sentence]) -> tuple[Path, Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = (d / "train.txt", d / "test.txt")
    for path, data in zip(paths, (train, test)):
        with atomic_output(path, "data file", text=True) as f:
            write_conll(f, data)
    return paths


def write_markov_files(directory, **kwargs) -> tuple[Path, Path]:
    """Write :func:`markov_sequences` (same keyword arguments) to
    ``directory/train.txt`` and ``directory/test.txt``; columns a1..am label."""
    return _write_pair(directory, *markov_sequences(**kwargs))


def segment_sequences(n_types: int = 3, max_len: int = 4, vocab: int = 50, n_train: int = 200,
                      n_test: int = 200, length: int = 20,
                      seed: int = 0) -> tuple[list[Sentence], list[Sentence]]:
    """BIO-tagged ``word label`` sequences from a segment-level model.

    Segment kinds are the ``n_types`` entity types ``T0 .. T{n_types-1}`` plus
    an outside kind ``O``.  The model (drawn first from ``default_rng(seed)``):

    * a bigram over kinds: the first kind of a sequence is uniform, then each
      kind depends on the previous segment's kind, ``P(next | prev)`` a
      normalised uniform vector (the same kind may repeat, giving adjacent
      chunks ``B-T0 I-T0 B-T0``);
    * per kind, a segment-length distribution over ``1 .. max_len``
      (normalised uniform weights); ``O`` segments always have length 1;
    * per kind, a word distribution over the vocabulary ``w0 .. w{vocab-1}``
      drawn from Dirichlet(0.1), so each kind has its own, peaked, words.

    Segments are generated until the sequence has ``length`` tokens; the last
    segment is cut short if it overflows.  Entity segments are tagged
    ``B-Tk I-Tk ...``, outside tokens ``O``.
    """
    if n_types < 1 or max_len < 1 or vocab < 1 or length < 1:
        raise ValueError("need n_types, max_len, vocab and length all >= 1")
    rng = np.random.default_rng(seed)
    kinds = n_types + 1  # last kind is O
    trans = rng.uniform(0.0, 1.0, size=(kinds, kinds))
    trans /= trans.sum(axis=1, keepdims=True)
    lengths = rng.uniform(0.0, 1.0, size=(kinds, max_len))
    lengths[n_types] = 0.0
    lengths[n_types, 0] = 1.0
    lengths /= lengths.sum(axis=1, keepdims=True)
    words = rng.dirichlet(np.full(vocab, 0.1), size=kinds)
    vocab_names = [f"w{i}" for i in range(vocab)]

    def one() -> list[list[str]]:
        rows: list[list[str]] = []
        kind = int(rng.integers(0, kinds))
        while len(rows) < length:
            seg = 1 + int(rng.choice(max_len, p=lengths[kind]))
            seg = min(seg, length - len(rows))
            ws = rng.choice(vocab, size=seg, p=words[kind])
            for i, w in enumerate(ws):
                tag = "O" if kind == n_types else ("B-" if i == 0 else "I-") + f"T{kind}"
                rows.append([vocab_names[w], tag])
            kind = int(rng.choice(kinds, p=trans[kind]))
        return rows

    train = _sentences([one() for _ in range(n_train)])
    test = _sentences([one() for _ in range(n_test)])
    return train, test


def write_segment_files(directory, **kwargs) -> tuple[Path, Path]:
    """Write :func:`segment_sequences` to ``directory/train.txt`` and ``test.txt``."""
    return _write_pair(directory, *segment_sequences(**kwargs))


def citation_graphs(n_graphs: int = 40, n_papers: int = 12, n_topics: int = 3,
                    topical: float = 0.3, p_within: float = 0.4, p_across: float = 0.03,
                    seed: int = 0) -> list[dict]:
    """Citation graphs for relational CRFs (Sutton & McCallum §1.4.1), as
    dicts in the JSON-lines graph format of :mod:`fgl.io.graphs`.

    Each graph holds ``n_papers`` papers (nodes ``p0, p1, ...``) with a topic
    ``T0 .. T{n_topics-1}`` drawn uniformly (column ``label``) and four words
    (column ``words``). Each word is one of the topic's five words
    (``t{k}w{i}``) with probability ``topical``, else one of 30 words
    common to all topics (``c{i}``), so many papers have no topical word at
    all. Two papers of one topic cite each other (an edge of type
    ``"cites"``) with probability ``p_within``, of different topics
    ``p_across``: a paper's neighbours tell its topic where its words do not.
    Drawn from ``default_rng(seed)``.
    """
    if n_graphs < 0 or n_papers < 1 or n_topics < 1:
        raise ValueError("need n_graphs >= 0, n_papers >= 1 and n_topics >= 1")
    for name, p in (("topical", topical), ("p_within", p_within), ("p_across", p_across)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name} must be a probability, found {p}")
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(n_graphs):
        topics = rng.integers(0, n_topics, n_papers)
        nodes = []
        for k, z in enumerate(topics):
            words = [f"t{z}w{rng.integers(0, 5)}" if rng.random() < topical
                     else f"c{rng.integers(0, 30)}" for _ in range(4)]
            nodes.append({"id": f"p{k}", "words": " ".join(words), "label": f"T{z}"})
        edges = [{"source": f"p{a}", "target": f"p{b}", "type": "cites"}
                 for a in range(n_papers) for b in range(a + 1, n_papers)
                 if rng.random() < (p_within if topics[a] == topics[b] else p_across)]
        graphs.append({"nodes": nodes, "edges": edges})
    return graphs


def write_citation_graphs(path, **kwargs) -> Path:
    """Write :func:`citation_graphs` (same keyword arguments) to ``path``, one
    graph of JSON per line."""
    import json

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(p, "data file", text=True) as f:
        for graph in citation_graphs(**kwargs):
            f.write(json.dumps(graph) + "\n")
    return p
