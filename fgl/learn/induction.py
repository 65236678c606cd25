"""Feature induction for chain CRFs (McCallum 2003, §3 and Figure 1).

A spec marks one unary template as the source of candidates,
``template cands: y[t] ~ word[t-2..t+2], shape(word[t]) (induce = 2)``:
its attributes are the *atomic observational tests* (with their time
shifts), and ``induce = k`` is the most tests one induced feature may
conjoin.  Training starts from the other templates' features alone and
repeats, for ``induce_rounds`` rounds:

1. train all weights for ``induce_iter`` L-BFGS iterations (3*: not to
   convergence, against early overfitting);
2. compute every training token's label marginals P(s | o, t) by
   forward-backward, and keep the M tokens the model mislabels or labels
   right by less than ``induce_margin`` (§3.1, approximation 2);
3. score candidates: each atomic test a, and each conjunction of two tests
   of the pool — the ``induce_pool`` tests, atomic or already induced, of
   highest gain this round (§4.1) — paired with each label s as the
   agglomerated feature g = [s_t = s]·a(o, t) (1*).  Its gain under the
   mean-field approximation with the other weights fixed (§3.2, eq. 2-3),

       G(μ) = Σ_i μ·[s_i = s] − log(1 − p_i(s) + p_i(s)·e^μ) − μ²/2σ²,

   over the M tokens where the test holds, is maximised over μ by Newton's
   method (concave; ~10 steps);
4. add up to ``induce_per_round`` candidates of highest gain, at least
   ``induce_min_gain`` each (2*), skipping one whose gain equals that of a
   candidate already added for the same label (usually the same feature
   under another name, footnote 5).

Then all weights are trained to convergence (``max_iter``, ``tol``).
Candidates are scored as the agglomerated state features g(s_t, o, t),
and a chosen one enters the model as the state feature (test, s).  With
``InductionOptions.induce_transitions`` it also enters, as the paper's CRF
features pair tests with source and destination states (1*), as copies
g(s_{t-1}, s_t, o, t) for the first-order label pairs (s', s) of the model
(its transition templates') that the gold labels show where the test
holds — the paper's "subset of FSM states selected by a simpler
criteria", as ``support = observed`` does.  Off by default: on CoNLL-2003
(3000 training sentences) the copies raise the likelihood and the dev F1
of every round but overfit at the final training (F1 -1.8).  The induced
tests become attributes of the candidate template (``fgl.compile.conjunctions``), so
the model file, tagging and evaluation are a chain model's; the tests in
the order added (the paper's Figure 3) are the training log's
``induced``, and a model file's metadata.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from fgl.compile.conjunctions import conjunction_key
from fgl.engines.sequence.encoded import EncodedData
from fgl.errors import SpecError
from fgl.jit import njit
from fgl.learn.learner import TrainingLog, train_lbfgs
from fgl.learn.trainer_options import InductionOptions

NEWTON_STEPS = 20


@dataclass
class _Tests:
    """The tests in the model: tuples of atomic test ids, in order added."""

    parts: list[tuple[int, ...]] = field(default_factory=list)
    index: dict[tuple[int, ...], int] = field(default_factory=dict)

    def add(self, parts: tuple[int, ...]) -> int:
        if parts not in self.index:
            self.index[parts] = len(self.parts)
            self.parts.append(parts)
        return self.index[parts]

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, atoms) of every test, atoms sorted."""
        ptr = np.zeros(len(self.parts) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(p) for p in self.parts])
        atoms = np.array([a for p in self.parts for a in p], dtype=np.int64)
        return ptr, atoms


@njit(cache=True)
def _active_tests(tok_ptr, tok_atom, tokens, test_ptr, test_atoms, first_ptr, first_test,
                  n_atoms):
    """CSR over ``tokens`` of the tests whose atoms all hold there."""
    mark = np.zeros(n_atoms, dtype=np.bool_)
    ptr = np.zeros(len(tokens) + 1, dtype=np.int64)
    out = []
    for k in range(len(tokens)):
        t = tokens[k]
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            mark[tok_atom[j]] = True
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            a = tok_atom[j]
            for f in range(first_ptr[a], first_ptr[a + 1]):
                test = first_test[f]
                ok = True
                for q in range(test_ptr[test] + 1, test_ptr[test + 1]):
                    if not mark[test_atoms[q]]:
                        ok = False
                        break
                if ok:
                    out.append(test)
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            mark[tok_atom[j]] = False
        ptr[k + 1] = len(out)
    return ptr, np.array(out, dtype=np.int64)


@njit(cache=True)
def _gains(cand_ptr, cand_tok, probs, gold, inv_var):
    """Mean-field gain and weight of (candidate c, label s) for every c, s:
    Newton's method on G(μ) over the tokens ``cand_tok[cand_ptr[c]:...]``
    (rows of ``probs`` / ``gold``)."""
    n_cand, n = len(cand_ptr) - 1, probs.shape[1]
    gain = np.zeros((n_cand, n))
    mu_out = np.zeros((n_cand, n))
    for c in range(n_cand):
        lo, hi = cand_ptr[c], cand_ptr[c + 1]
        for s in range(n):
            hits = 0.0
            for j in range(lo, hi):
                if gold[cand_tok[j]] == s:
                    hits += 1.0
            mu = 0.0
            for _ in range(NEWTON_STEPS):
                d1 = hits - mu * inv_var
                d2 = -inv_var
                e = np.exp(mu)
                for j in range(lo, hi):
                    p = probs[cand_tok[j], s]
                    q = p * e / (1.0 - p + p * e)
                    d1 -= q
                    d2 -= q * (1.0 - q)
                step = d1 / d2
                if step > 5.0:
                    step = 5.0
                elif step < -5.0:
                    step = -5.0
                mu -= step
                if abs(step) < 1e-9:
                    break
            e = np.exp(mu)
            g = mu * hits - 0.5 * mu * mu * inv_var
            for j in range(lo, hi):
                p = probs[cand_tok[j], s]
                g -= np.log(1.0 - p + p * e)
            gain[c, s] = g
            mu_out[c, s] = mu
    return gain, mu_out


def _invert(ptr: np.ndarray, items: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """The CSR item -> rows of a CSR row -> items."""
    rows = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    order = np.argsort(items, kind="stable")
    out_ptr = np.zeros(n_items + 1, dtype=np.int64)
    np.add.at(out_ptr, items + 1, 1)
    return np.cumsum(out_ptr), rows[order]


class FeatureInduction:
    """One induction run over a compiled chain model (module docstring)."""

    def __init__(self, model, data: EncodedData, settings: InductionOptions):
        self.model, self.data, self.s = model, data, settings
        self.cand = _candidate_template(model.spec)
        self.max_parts = int(next(o.value for o in model.spec.templates[self.cand].options
                                  if o.key == "induce"))
        self.atom_keys, atom_rows = model.vocabs[self.cand].keys_by_row()
        n_rows = len(model.program.row_ptr) - 1
        self.atom_of_row = np.full(n_rows, -1, dtype=np.int64)
        self.atom_of_row[atom_rows] = np.arange(len(self.atom_keys))
        self.base_rows = np.flatnonzero(self.atom_of_row < 0)
        self.new_base = np.full(n_rows, -1, dtype=np.int64)
        self.new_base[self.base_rows] = np.arange(len(self.base_rows))
        # per token: its atomic tests (CSR) and its base rows with values
        in_cand = self.atom_of_row[data.tok_row] >= 0
        per_tok = np.diff(data.tok_ptr)
        tok_of = np.repeat(np.arange(data.n_tokens), per_tok)
        self.atom_ptr = np.zeros(data.n_tokens + 1, dtype=np.int64)
        np.add.at(self.atom_ptr, tok_of[in_cand] + 1, 1)
        self.atom_ptr = np.cumsum(self.atom_ptr)
        self.atom_tok = self.atom_of_row[data.tok_row[in_cand]]
        self.atom_val = np.asarray(data.tok_val)[in_cand]
        self.base_tok, self.base_keep = tok_of[~in_cand], ~in_cand
        self.tests = _Tests()
        self.features: list[tuple[int, int]] = []        # (test, label) in order added
        self.sigma = float(model.templates[self.cand].sigma)
        # (1*): the label patterns of an induced (test, s): s, then (s', s)
        # for the first-order label pairs of the model seen in training
        # where the test holds (``feature_patterns``)
        z_of = {z: i for i, z in enumerate(model.structure.patterns)}
        self.label_z = [z_of[(y,)] for y in range(len(model.labels))]
        self.pair_z = {z: i for z, i in z_of.items() if len(z) == 2} \
            if settings.induce_transitions else {}
        self.prev_gold = np.concatenate([[-1], data.gold[:-1]]).astype(np.int64)
        self.prev_gold[data.seq_ptr[:-1][data.seq_ptr[:-1] < data.n_tokens]] = -1
        self.patterns: dict[tuple[int, int], list[int]] = {}
        self._everywhere: tuple[int, np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------ the model of a round

    def _first_index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        test_ptr, test_atoms = self.tests.csr()
        firsts = test_atoms[test_ptr[:-1]] if len(self.tests.parts) else np.zeros(0, np.int64)
        first_ptr, first_test = _invert(np.arange(len(firsts) + 1), firsts, len(self.atom_keys))
        return test_ptr, test_atoms, first_ptr, first_test

    def active(self, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """CSR over ``tokens`` of the model's tests that hold there."""
        return _active_tests(self.atom_ptr, self.atom_tok, tokens, *self._first_index(),
                             len(self.atom_keys))

    def active_everywhere(self) -> tuple[np.ndarray, np.ndarray]:
        """``active`` over every training token (kept until tests are added)."""
        n_tests = len(self.tests.parts)
        if self._everywhere is None or self._everywhere[0] != n_tests:
            self._everywhere = (n_tests, *self.active(np.arange(self.data.n_tokens)))
        return self._everywhere[1], self._everywhere[2]

    def feature_patterns(self) -> dict[tuple[int, int], list[int]]:
        """The label patterns of every feature (test, s), ascending: s and
        its copies (s', s) for the label pairs of the model that the gold
        labels show where the test holds (1*, the subset of previous states
        the training data support)."""
        new = [f for f in self.features if f not in self.patterns]
        if not new:
            return self.patterns
        extra: dict[tuple[int, int], list[int]] = {f: [] for f in new}
        if self.pair_z:
            t_ptr, t_tests = self.active_everywhere()
            tok = np.repeat(np.arange(self.data.n_tokens), np.diff(t_ptr))
            n = len(self.label_z)
            keep = np.isin(t_tests, [t for t, _ in new]) & (self.prev_gold[tok] >= 0)
            codes = np.unique((t_tests[keep] * n + self.prev_gold[tok[keep]]) * n
                              + self.data.gold[tok[keep]])
            for code in codes.tolist():
                test, rest = divmod(code, n * n)
                prev, label = divmod(rest, n)
                z = self.pair_z.get((prev, label))
                if z is not None and (test, label) in extra:
                    extra[(test, label)].append(z)
        for f in new:
            self.patterns[f] = sorted([self.label_z[f[1]]] + extra[f])
        return self.patterns

    def n_features(self) -> int:
        """Features of the model ``build`` makes: the base ones and every
        induced one's patterns."""
        base = int(np.diff(self.model.program.row_ptr)[self.base_rows].sum())
        return base + sum(len(z) for z in self.feature_patterns().values())

    def build(self) -> tuple[object, EncodedData]:
        """The chain model and encoded data with the base features and the
        induced ones."""
        m, data = self.model, self.data
        old_ptr, old_pat = m.program.row_ptr, m.program.feat_pattern
        base_len = np.diff(old_ptr)[self.base_rows]
        n_tests = len(self.tests.parts)
        by_test: list[list[int]] = [[] for _ in range(n_tests)]
        patterns = self.feature_patterns()
        for feature in self.features:
            by_test[feature[0]].extend(patterns[feature])
        by_test = [sorted(b) for b in by_test]
        lengths = np.concatenate([base_len, [len(b) for b in by_test]]).astype(np.int64)
        row_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        row_ptr[1:] = np.cumsum(lengths)
        base_feats = np.concatenate([np.arange(old_ptr[r], old_ptr[r + 1])
                                     for r in self.base_rows]).astype(np.int64) \
            if len(self.base_rows) else np.zeros(0, np.int64)
        feat_pattern = np.concatenate([old_pat[base_feats],
                                       np.array([z for b in by_test for z in b],
                                                dtype=np.int64)])
        nb = len(self.base_rows)
        vocabs = []
        for k, vocab in enumerate(m.vocabs):
            if k == self.cand:
                vocabs.append({conjunction_key(self.atom_keys[a] for a in parts): nb + i
                               for i, parts in enumerate(self.tests.parts)})
            else:
                vocabs.append({key: int(self.new_base[r]) for key, r in vocab.items()})
        model = type(m)(m.spec, m.base_dir, m.layers[0], m.templates,
                           list(m.structure.patterns), vocabs, row_ptr, feat_pattern,
                           m.lexicons)
        # units: base rows, then the tests that hold (product of atomic values)
        t_ptr, t_tests = self.active_everywhere()
        values = self._test_values(np.arange(data.n_tokens), t_ptr, t_tests)
        tok = np.concatenate([self.base_tok, np.repeat(np.arange(data.n_tokens),
                                                       np.diff(t_ptr))])
        rows = np.concatenate([self.new_base[data.tok_row[self.base_keep]], nb + t_tests])
        vals = np.concatenate([np.asarray(data.tok_val)[self.base_keep], values])
        order = np.argsort(tok, kind="stable")
        tok_ptr = np.zeros(data.n_tokens + 1, dtype=np.int64)
        np.add.at(tok_ptr, tok + 1, 1)
        encoded = EncodedData(data.seq_ptr, np.cumsum(tok_ptr), rows[order].astype(np.int32),
                              vals[order], data.gold, data.starts, 1)
        return model, encoded

    def _test_values(self, tokens, t_ptr, t_tests) -> np.ndarray:
        """The value of each active test: the product of its atoms' values
        (1 for the binary tests of text columns)."""
        if np.all(self.atom_val == 1.0):
            return np.ones(len(t_tests))
        out = np.ones(len(t_tests))
        for k, t in enumerate(tokens):
            lo, hi = self.atom_ptr[t], self.atom_ptr[t + 1]
            value = dict(zip(self.atom_tok[lo:hi].tolist(), self.atom_val[lo:hi].tolist()))
            for j in range(t_ptr[k], t_ptr[k + 1]):
                for a in self.tests.parts[t_tests[j]]:
                    out[j] *= value[a]
        return out

    # ------------------------------------------------------------ one round of candidates

    def candidates(self, probs: np.ndarray) -> tuple[list[tuple[float, tuple[int, ...], int]],
                                                     int]:
        """Scored candidates (gain, test atoms, label), best first, and how
        many (test, label) pairs were scored."""
        gold = self.data.gold
        p_gold = probs[np.arange(len(gold)), gold]
        rival = probs.copy()
        rival[np.arange(len(gold)), gold] = -1.0
        tokens = np.flatnonzero(p_gold - rival.max(axis=1) < self.s.induce_margin)
        if len(tokens) == 0:
            return [], 0
        pm, gm = probs[tokens], gold[tokens]
        inv_var = 1.0 / self.sigma ** 2
        # atomic tests at the M tokens
        lo, hi = self.atom_ptr[tokens], self.atom_ptr[tokens + 1]
        a_ptr = np.zeros(len(tokens) + 1, dtype=np.int64)
        a_ptr[1:] = np.cumsum(hi - lo)
        a_items = np.concatenate([self.atom_tok[a:b] for a, b in zip(lo, hi)]) \
            if len(tokens) else np.zeros(0, np.int64)
        c_ptr, c_tok = _invert(a_ptr, a_items, len(self.atom_keys))
        atom_gain, _ = _gains(c_ptr, c_tok, pm, gm, inv_var)
        scored = [(atom_gain, [(a,) for a in range(len(self.atom_keys))])]
        pairs = 0
        if self.max_parts > 1:
            # the pool: the tests of highest gain, atomic or in the model
            t_ptr, t_items = self.active(tokens)
            in_ptr, in_tok = _invert(t_ptr, t_items, len(self.tests.parts))
            test_gain, _ = _gains(in_ptr, in_tok, pm, gm, inv_var)
            pool_parts = [(a,) for a in range(len(self.atom_keys))] + self.tests.parts
            pool_gain = np.concatenate([atom_gain.max(axis=1, initial=0.0),
                                        test_gain.max(axis=1, initial=0.0)])
            pool = np.argsort(-pool_gain, kind="stable")[:self.s.induce_pool]
            pool = pool[pool_gain[pool] > 0]
            conj_parts, conj_ptr, conj_tok = self._conjunctions(
                tokens, a_ptr, a_items, t_ptr, t_items, pool, pool_parts)
            if conj_parts:
                conj_gain, _ = _gains(conj_ptr, conj_tok, pm, gm, inv_var)
                scored.append((conj_gain, conj_parts))
                pairs = len(conj_parts)
        out = []
        taken = set(self.features)
        known = self.tests.index
        for gains, parts_list in scored:
            for c, parts in enumerate(parts_list):
                test = known.get(parts)
                for s in np.flatnonzero(gains[c] >= self.s.induce_min_gain):
                    if test is None or (test, int(s)) not in taken:
                        out.append((float(gains[c, s]), parts, int(s)))
        out.sort(key=lambda item: (-item[0], item[1], item[2]))
        return out, (len(self.atom_keys) + pairs) * probs.shape[1]

    def _conjunctions(self, tokens, a_ptr, a_items, t_ptr, t_items, pool, pool_parts):
        """Conjunctions of two pool tests that hold together at the M
        tokens: their atoms, and the CSR of the (M-token) rows where they
        hold."""
        n_atoms = len(self.atom_keys)
        pool_slot = np.full(len(pool_parts), -1, dtype=np.int64)
        pool_slot[pool] = np.arange(len(pool))
        found: dict[tuple[int, ...], list[int]] = {}
        for k in range(len(tokens)):
            here = [int(x) for x in a_items[a_ptr[k]:a_ptr[k + 1]]]
            here += [n_atoms + int(x) for x in t_items[t_ptr[k]:t_ptr[k + 1]]]
            here = [x for x in here if pool_slot[x] >= 0]
            for i in range(len(here)):
                for j in range(i + 1, len(here)):
                    parts = tuple(sorted(set(pool_parts[here[i]]) | set(pool_parts[here[j]])))
                    if 1 < len(parts) <= self.max_parts:
                        rows = found.setdefault(parts, [])
                        if not rows or rows[-1] != k:
                            rows.append(k)
        parts_list = sorted(found)
        ptr = np.zeros(len(parts_list) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(found[p]) for p in parts_list])
        tok = np.array([k for p in parts_list for k in found[p]], dtype=np.int64)
        return parts_list, ptr, tok

    def select(self, scored: list[tuple[float, tuple[int, ...], int]]) -> list[tuple[int, int]]:
        """Add the best candidates (at most ``per_round``; equal gains for
        one label once); returns the (test, label) features added."""
        added: list[tuple[int, int]] = []
        seen: set[tuple[float, int]] = set()
        for gain, parts, label in scored:
            if len(added) >= self.s.induce_per_round:
                break
            key = (round(gain, 9), label)
            if key in seen:
                continue
            seen.add(key)
            feature = (self.tests.add(parts), label)
            self.features.append(feature)
            added.append(feature)
        return added

    def describe(self, feature: tuple[int, int]) -> str:
        test, label = feature
        parts = self.tests.parts[test]
        return (f"{conjunction_key(self.atom_keys[a] for a in parts)} -> "
                f"{self.model.labels[label]}")


def _candidate_template(spec) -> int:
    """The index of the template with ``induce``; refuse any other use."""
    marked = [i for i, t in enumerate(spec.templates)
              if any(o.key == "induce" for o in t.options)]
    for i in marked:
        t = spec.templates[i]
        if len(t.labels) != 1 or t.labels[0].lo != t.labels[0].hi or not t.observations:
            raise SpecError("`induce` marks a unary template with observations, "
                            "`y[t] ~ obs, ...`: its attributes are the candidate tests",
                            t.loc.file, t.loc.line, t.loc.col)
    if len(marked) > 1:
        t = spec.templates[marked[1]]
        raise SpecError("only one template may carry `induce`", t.loc.file, t.loc.line,
                        t.loc.col)
    return marked[0]


def train_with_induction(model, data: EncodedData, settings: InductionOptions, *,
                         max_iter: int, tol: float, jobs: int,
                         progress: Callable[[dict], None] | None = None,
                         dev_score: Callable[[object, np.ndarray], float] | None = None,
                         should_stop: Callable[[], str | None] | None = None
                         ) -> tuple[object, np.ndarray, TrainingLog]:
    """Induce features into the chain ``model`` on ``data`` (module
    docstring); returns the final model, its weights and the log, whose
    ``rounds`` rows say per round the candidates scored, the features added,
    the objective and (``dev_score(model, w)``) the development score, and
    whose ``induced`` lists the features in the order added."""
    run = FeatureInduction(model, data, settings)
    start = time.perf_counter()
    weights: dict[tuple[int, int], float] = {}
    rounds: list[dict] = []
    w = None
    for r in range(1, settings.induce_rounds + 1):
        current, encoded = run.build()
        w, log = train_lbfgs(current.program, encoded, current.feat_sigma,
                             max_iter=settings.induce_iter, tol=tol, jobs=jobs,
                             w0=_carry(weights, current))
        weights = _weights_by_feature(current, w)
        probs = np.concatenate(current.program.marginals(w, encoded, jobs).per_instance)
        scored, n_scored = run.candidates(probs)
        added = run.select(scored)
        row = {"round": r, "scored": n_scored, "added": len(added),
               "features": run.n_features(), "objective": log.objective,
               "seconds": time.perf_counter() - start,
               "first": [run.describe(f) for f in added[:3]]}
        if dev_score is not None:
            row["dev"] = dev_score(current, w)
        rounds.append(row)
        if progress is not None:
            progress(row)
        if not added or (should_stop is not None and should_stop()):
            break
    current, encoded = run.build()
    w, log = train_lbfgs(current.program, encoded, current.feat_sigma, max_iter=max_iter,
                         tol=tol, jobs=jobs, w0=_carry(weights, current),
                         progress=progress, should_stop=should_stop)
    log.seconds = time.perf_counter() - start
    log.rounds = rounds
    log.induced = [run.describe(f) for f in run.features]
    return current, w, log


def _weights_by_feature(model, w: np.ndarray) -> dict[tuple[str, int], float]:
    """Weights by (attribute key, pattern), to carry across rebuilds."""
    out = {}
    ptr, pat = model.program.row_ptr, model.program.feat_pattern
    for vocab in model.vocabs:
        for key, r in vocab.items():
            for k in range(ptr[r], ptr[r + 1]):
                out[(key, int(pat[k]))] = float(w[k])
    return out


def _carry(weights: dict, model) -> np.ndarray:
    """The new model's weights: the old ones where a feature existed, 0 for
    new features."""
    w = np.zeros(model.program.n_features)
    ptr, pat = model.program.row_ptr, model.program.feat_pattern
    for vocab in model.vocabs:
        for key, r in vocab.items():
            for k in range(ptr[r], ptr[r + 1]):
                w[k] = weights.get((key, int(pat[k])), 0.0)
    return w
