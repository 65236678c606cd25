"""Empirical co-occurrence rate networks (ECRNs): a chain model whose
weights are set from counts instead of trained.

Zhu et al., eq. 5, factorise a chain's label distribution exactly as

    p(S_1..S_n | O) = Π_i p(S_i | O) · Π_j CR(S_j; S_{j+1} | O),
    CR(a; b | O) = p(a, b | O) / (p(a | O) p(b | O)),

and an ECRN estimates each factor on its own from empirical relative
frequencies: no global normalisation, no iterative training.  Here the
ECRN is the chain model compiled from the spec as usual (same templates,
same features) with every weight set from counts over the training data,
so decoding is the chain engine's Viterbi and model files, tagging,
evaluation and ``fgl compare`` work unchanged.  A feature pairs one
attribute a of a template (a feature row, e.g. ``word[t]=the``; the
constant ``bias`` of a template without observations) with a label
pattern:

* one label y (``y[t] ~ obs...``): log p(y | a), the relative frequency of
  y among the training tokens where a is active.  With one observation per
  token this is Zhu et al.'s p(S_i | O_i); with several, the token's local
  distribution is the normalised product of these empirical estimates (the
  normaliser does not depend on the label, so Viterbi needs none).
* two labels (y', y) (``y[t-1..t]``, with or without observations):
  log CR(y'; y | a), where p(y', y | a), p(y' | a) and p(y | a) are
  relative frequencies over the training bigrams (t-1, t) whose token t
  has a active — for a template without observations, the unconditional
  CR of the label unigram and bigram frequencies.

Counts are weighted by the attribute's value (numeric attributes, meant to
be non-negative); the chain scores weight × value, so such a factor enters
raised to that power.  Zeros: with a floor ε the weight is
log max(p, ε) − log ε (p a probability or a CR), which is 0 for a feature
that does not exist — with ``support = observed``, an (attribute, pattern)
pair never seen in training — so an unseen pair scores as log ε.  The
−log ε adds the same amount to every labelling's score for each active
attribute, so Viterbi's argmax is that of eq. 5 with factors floored at ε.

Only first-order chain models are ECRNs: the trainer's ``check_spec``
(``fgl.learn.trainers.ecrn``) refuses longer label windows, segment models
and factor-graph models.
"""
from __future__ import annotations

import time

import numpy as np

from fgl.engines.sequence.encoded import EncodedData
from fgl.errors import FglError
from fgl.learn.learner import TrainingLog

EPSILON = 1e-10   # the floor of every estimated probability and co-occurrence rate


def _sums(keys: np.ndarray, weights: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Σ ``weights`` over equal ``keys``, at the keys ``wanted`` (0 where absent)."""
    uniq, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=weights, minlength=len(uniq))
    at = np.minimum(np.searchsorted(uniq, wanted), max(len(uniq) - 1, 0))
    return np.where(uniq[at] == wanted, sums[at], 0.0) if len(uniq) else np.zeros(len(wanted))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is not positive."""
    safe = den > 0
    return np.where(safe, num / np.where(safe, den, 1.0), 0.0)


def train_ecrn(model, data: EncodedData) -> tuple[np.ndarray, TrainingLog]:
    """ECRN weights of the chain ``model``'s features from ``data`` (its
    encoded training data, gold labels included), module docstring; the log
    has one row and, as objective, −log of eq. 5's floored product at the
    training labels."""
    start = time.perf_counter()
    program, st = model.program, model.structure
    lengths = np.array([len(z) for z in st.patterns])
    if lengths.max() > 2:
        raise FglError(f"trainer ecrn: label patterns of {lengths.max()} labels; an ECRN is "
                       f"first-order (Zhu et al., eq. 5): use trainer lbfgs or perceptron")
    n, n_tokens, gold = st.n_labels, data.n_tokens, data.gold
    n_rows = len(program.row_ptr) - 1
    # every active (attribute row, token) with its value; constant rows at every token
    const = program.const_rows
    row = np.concatenate([data.tok_row, np.repeat(const, n_tokens)]).astype(np.int64)
    token = np.concatenate([np.repeat(np.arange(n_tokens), np.diff(data.tok_ptr)),
                            np.tile(np.arange(n_tokens), len(const))])
    value = np.concatenate([data.tok_val, np.ones(len(const) * n_tokens)])
    first = np.zeros(n_tokens + 1, dtype=np.bool_)
    first[data.seq_ptr[:-1]] = True
    bi = ~first[token]                        # token t closes a bigram (t-1, t)
    row_b, val_b, tok_b = row[bi], value[bi], token[bi]
    prev_b, gold_b = gold[tok_b - 1], gold[tok_b]

    feat_row = np.repeat(np.arange(n_rows), np.diff(program.row_ptr))
    pat = program.feat_pattern
    y_first = np.array([z[0] for z in st.patterns])[pat]
    y_last = np.array([z[-1] for z in st.patterns])[pat]
    pair = lengths[pat] == 2
    with_a = np.bincount(row, weights=value, minlength=n_rows)          # tokens with a
    bigrams_a = np.bincount(row_b, weights=val_b, minlength=n_rows)     # bigrams with a
    joint = np.empty(len(pat))                                          # count of (a, pattern)
    joint[pair] = _sums((row_b * n + prev_b) * n + gold_b, val_b,
                        ((feat_row * n + y_first) * n + y_last)[pair])
    joint[~pair] = _sums(row * n + gold[token], value, (feat_row * n + y_last)[~pair])
    left = _sums(row_b * n + prev_b, val_b, feat_row[pair] * n + y_first[pair])
    right = _sums(row_b * n + gold_b, val_b, feat_row[pair] * n + y_last[pair])
    estimate = _ratio(joint, with_a[feat_row])                           # p(y | a)
    estimate[pair] = _ratio(joint[pair] * bigrams_a[feat_row[pair]], left * right)  # CR
    log_eps = np.log(EPSILON)
    w = np.log(np.maximum(estimate, EPSILON)) - log_eps

    # −log of eq. 5 at the gold labels: every active (attribute, factor) not scored
    # by a feature contributes log ε, the others their feature's weight + log ε
    row_template = np.empty(n_rows, dtype=np.int64)
    for ti, vocab in enumerate(model.vocabs):
        row_template[list(vocab.values())] = ti
    has = np.array([[any(len(z) == m for z in plan.patterns) for m in (1, 2)]
                    for plan in model.templates])[row_template]
    active = float(with_a @ has[:, 0] + bigrams_a @ has[:, 1])
    objective = -float(w @ joint + log_eps * active)

    seconds = time.perf_counter() - start
    log = TrainingLog(evaluations=1, seconds=seconds, objective=objective, converged=True,
                      message="relative frequencies in one pass (Zhu et al., eq. 5)")
    log.iterations.append({"iteration": 1, "tokens": n_tokens, "bigrams": int(len(gold)
                           - np.count_nonzero(np.diff(data.seq_ptr))),
                           "features": program.n_features, "seconds": seconds})
    return w, log
