"""Real data: CoNLL-2000 chunking with CRFsuite's feature set
(stdlib/crfsuite_chunking.fgl).  Skipped when ../shared/data is absent.

CRFsuite reaches chunk F1 93.63 at convergence on this machine; fgl's full
run reaches the same objective (13024.3) and F1 93.62.  The test stops at 80
L-BFGS iterations to keep the suite short, which already clears 93.0.
"""

from support.paths import STDLIB, require_shared

from fgl.api import CRF
from fgl.evaluation.evaluate import evaluate
from fgl.io.conll import read_conll


def test_crfsuite_features_reach_chunk_f1_93():
    data = require_shared("data", "conll2000")
    crf = CRF(STDLIB / "crfsuite_chunking.fgl", max_iter=80)
    crf.fit_sentences(read_conll(data / "train.txt"))
    assert crf.model.program.n_features == 453_010  # CRFsuite's count on this data
    test, pred = crf.predict_file(data / "test.txt")
    report = evaluate([s.column(-1) for s in test], pred)
    assert report.overall.f1 >= 93.0, report.format()
