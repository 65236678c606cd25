"""Spec texts several test files share."""

from __future__ import annotations

from fgl.lang.ast import Spec
from fgl.lang.checks import validate
from fgl.lang.parser import parse_spec

# every construct of the language; test_parser.py holds its exact AST
EVERY_CONSTRUCT = '''\
# comment to end of line; whitespace/newlines insignificant
model "CoNLL-2000 chunker"
columns word, pos, x1:number, pix:vector, chunk
output chunk
labels chunk = [B-NP I-NP O "," "."]

obs w    = word[t-2..t+2]
obs ww   = word[t-1] & word[t]
obs lw   = lower(word[t])
obs suf  = suffix(lower(word[t]), 3)
obs cap  = regex(word[t], "^[A-Z]")
obs lex  = lexicon(word[t], "names.txt")
obs x    = value(x1[t-1..t+1])
obs edge = bos | eos
obs both = w & edge

template state: y[t] ~ w, ww, pos[t-1..t+1], lower(word[t]) (sigma = 5, support = all)
template trans: y[t-1..t]
template ho:    y[t-2..t] patterns observed
template ho3:   y[t-3..t] patterns observed upto
template ex:    y[t-2..t] patterns [B-NP I-NP I-NP], [O B-NP]
template full:  y[t-1..t] patterns all ~ lower(word[t])
template skip:  (y[t-2], y[t])

train {
  sigma = 10
  max_iter = 200
  tol = 1e-6
}
infer exact
'''

# two output layers linked by a cross-layer template (a factorial CRF)
FACTORIAL = """columns word, pos, chunk
output pos, chunk
template pos_state:   pos[t] ~ bias, word[t]
template chunk_state: chunk[t] ~ bias, word[t]
template chunk_trans: chunk[t-1..t]
template cross:       (pos[t], chunk[t])
infer trp(max_iter = 30)
train { sigma = 3  max_iter = 15 }
"""

# a skip chain linking every pair of equal words
SKIP_CHAIN = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j] ~ bias
infer trp(max_iter = 30)
"""

# a relational model over JSON-lines graphs of papers citing each other
GRAPH = """input graph
columns words, label
output label
template node: y[a] ~ bias, tokens(words[a])
template cites: (y[a], y[b]) where edge(a, b, "cites")
train { max_iter = 10 }
"""

# a first-order chain, to be formatted with more templates (extra=) and an infer line (infer=)
CHAIN_FORMAT = """
columns word, label
output label
template state: y[t] ~ bias, word[t], word[t-1]
template trans: y[t-1..t]
{extra}
{infer}
"""
# the same with a train block (train=)
TRAINED_CHAIN_FORMAT = CHAIN_FORMAT + "{train}\n"
# a skip template whose predicate never holds leaves the factor graph a chain
NEVER_SKIP = ('template skip: (y[i], y[j]) where word[i] == word[j] and regex(word[i], "^never$")'
              ' ~ bias')
# a skip template linking every pair of equal words (extra= of CHAIN_FORMAT)
SKIP_EQUAL_WORDS = 'template skip: (y[i], y[j]) where word[i] == word[j] ~ bias, either(word[t])'

# a chain with a hidden layer z, small enough for `infer exact`
LATENT = """
columns word, label
output label
hidden z = [z0 z1]
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
template zy:    (z[t], y[t]) ~ bias
template zz:    z[t-1..t]
infer exact(max_states = 300000)
train { sigma = 2 }
"""


def checked_spec(text: str) -> Spec:
    """``text`` parsed and validated."""
    return validate(parse_spec(text, "<test>"))


# a second-order chain and a semi-Markov CRF, trained briefly: the sequence engines'
# batched n-best and log Z are checked on them (tests/engines/sequence; tests/api's n-best
# and probabilities train them longer)
SHORT_TRAINED_CHAIN = """columns word, label
output label
template state: y[t] ~ bias, word[t], word[t-1]
template trans: y[t-1..t]
template tri:   y[t-2..t]
train { sigma = 3  max_iter = 15 }
"""

SHORT_TRAINED_SEGMENTS = """columns word, label
output label
segments max 3 from bio
template segment: s[j] ~ bias, lower(word[u]), length
template transition: s[j-1..j]
train { sigma = 3  max_iter = 15 }
"""
