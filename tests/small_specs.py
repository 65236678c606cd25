"""Small general-CRF specs that several test files train on generated data."""

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
SKIP = """columns word, label
output label
template state: y[t] ~ bias, word[t]
template trans: y[t-1..t]
template skip: (y[i], y[j]) where word[i] == word[j] ~ bias
infer trp(max_iter = 30)
"""
