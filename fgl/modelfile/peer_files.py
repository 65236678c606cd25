"""Recognising the other toolkits' files given where an fgl model file is
expected: CRF++ models (binary, or text from ``crf_learn -t``), Wapiti
models, CRFsuite models and CRF++/Wapiti templates, each named with what to
do instead — fgl reads none of them as a model.

The signatures, as the toolkits write them: a CRF++ binary model opens with
its version (100, a little-endian uint32) and holds its templates' text
(``%x[``); a CRF++ text model opens with ``version: `` and a
``cost-factor: `` line; a Wapiti model opens with ``#mdl#``; a CRFsuite
model with ``lCRF``.
"""
from __future__ import annotations

import struct

from fgl.lang.peer_templates import crfpp_template_line

_RETRAIN = ("fgl reads no other toolkit's weights: convert the feature template with "
            "`fgl convert crfpp TEMPLATE --columns word,pos,label -o spec.fgl` and train it "
            "with `fgl train spec.fgl --train DATA -o model.fglm` (docs/crfpp.md)")
_CRFSUITE = ("fgl reads no other toolkit's weights: train the same feature dicts with "
             "fgl.CRFEstimator (docs/sklearn.md), or write the features as a spec "
             "(stdlib/crfsuite_chunking.fgl) and `fgl train` it")


def peer_file(data: bytes) -> str | None:
    """What ``data`` (a file's first bytes) is, when another toolkit wrote
    it: the message naming it and what to do, else None."""
    if data.startswith(b"lCRF"):
        return f"a CRFsuite model file, not an fgl model; {_CRFSUITE}"
    if data.startswith(b"#mdl#"):
        return f"a Wapiti model file, not an fgl model; {_RETRAIN}"
    if data.startswith(struct.pack("<I", 100)) and b"%x[" in data:
        return f"a CRF++ model file (binary), not an fgl model; {_RETRAIN}"
    text = data.decode("utf-8", "replace")
    if text.startswith("version: ") and "\ncost-factor: " in text:
        return f"a CRF++ model file (text, crf_learn -t), not an fgl model; {_RETRAIN}"
    if crfpp_template_line(text) is not None:
        return ("a CRF++ (or Wapiti) feature template, not a model file: convert it with "
                "`fgl convert crfpp TEMPLATE --columns word,pos,label -o spec.fgl`, train "
                "spec.fgl with `fgl train`, and give the model it writes (docs/crfpp.md)")
    return None
