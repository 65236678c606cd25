"""What kind of file a path holds, given where a model file is expected: a
model file is a zip archive; a spec is text; another toolkit's model or
template is named (``fgl.modelfile.peer_files``).  ``check_model_file``
refuses all but the first with what to do instead.
"""
from __future__ import annotations

import re

from fgl.data.inputs import display_name, is_model_bytes, is_stdin
from fgl.errors import ModelFileError

_SPEC_LINES = re.compile(r"(?m)^[ \t]*(columns[ \t]+\w+[ \t]*[,:]|template[ \t]+\w+[ \t]*:"
                         r"|obs[ \t]+\w+[ \t]*=)")


def looks_like_spec(data: bytes, path) -> bool:
    """Whether ``data`` (the start of a file) reads as an fgl spec: text
    named ``.fgl``, text that parses as a spec, or text with a line that
    only a spec has (``columns a, ...``, ``template t:``, ``obs o =``)."""
    if b"\x00" in data:
        return False
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if e.start < len(data) - 4:   # not just a character cut at the end of ``data``
            return False
        text = data[:e.start].decode("utf-8-sig")
    if str(path).endswith(".fgl") or _SPEC_LINES.search(text) is not None:
        return True
    from fgl.lang.parser import parse_spec

    try:
        spec = parse_spec(text, str(path))
    except Exception:  # noqa: BLE001 - any text that does not parse is not a spec
        return False
    return bool(spec.columns)


class NotAModelFile(ModelFileError):
    """A spec (text) given where a model file is expected."""

    def __init__(self, path):
        self.file = display_name(path)
        self.message = (f"a spec (text), not a model file: train it first with `fgl train "
                        f"{self.file} --train DATA -o MODEL.fglm`, then give MODEL.fglm")
        Exception.__init__(self, f"{self.file} is {self.message}")


def check_model_file(path) -> None:
    """Raise ``NotAModelFile`` when ``path`` holds a spec instead of a
    model, and a ``ModelFileError`` naming the toolkit when another
    toolkit's model or template (``fgl.modelfile.peer_files``)."""
    from fgl.modelfile.peer_files import peer_file

    if is_stdin(path):
        return
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return
    if not data or is_model_bytes(data):
        return
    peer = peer_file(data)
    if peer is not None:
        raise ModelFileError(peer, display_name(path))
    if looks_like_spec(data, path):
        raise NotAModelFile(path)
