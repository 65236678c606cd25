"""A model file's zip archive, read no further than it declares.

Before ``zipfile`` reads the central directory (a ``ZipInfo`` object per
entry), the end-of-central-directory record is read from the file's last
bytes: an archive declaring more entries, or a longer directory, than a
model file has is refused there.  Each member is then read through its own
numpy header (its dtype and shape) and no further than its declared size.
"""
from __future__ import annotations

import re
import struct
import zipfile
from typing import BinaryIO

import numpy as np

MAX_NPY_HEADER = 10_000          # an array member's own (numpy) header
_EOCD = struct.Struct("<4s4H2LH")          # end of central directory
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_LAST = _EOCD.size + 0xFFFF                # the record, then a comment of at most 64 KiB


class Corrupt(Exception):
    """What is wrong with a model file (the loader's message, after
    "corrupt model file: ")."""


def directory_size(fp: BinaryIO) -> tuple[int, int] | None:
    """(entries, bytes) the archive's central directory declares, read from
    its end records alone (None: no end record, not a zip archive)."""
    fp.seek(0, 2)
    size = fp.tell()
    fp.seek(max(0, size - _LAST))
    tail = fp.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        return None
    _, _, _, _, entries, cd_bytes, _, _ = _EOCD.unpack_from(tail, at)
    if (entries == 0xFFFF or cd_bytes == 0xFFFFFFFF) and at >= _ZIP64_LOCATOR.size:
        sig, _, where, _ = _ZIP64_LOCATOR.unpack_from(tail, at - _ZIP64_LOCATOR.size)
        if sig == b"PK\x06\x07" and where < size:
            fp.seek(where)
            record = fp.read(_ZIP64_EOCD.size)
            if len(record) == _ZIP64_EOCD.size and record[:4] == b"PK\x06\x06":
                fields = _ZIP64_EOCD.unpack(record)
                entries, cd_bytes = fields[7], fields[8]
    return entries, cd_bytes


def array_header(fp: BinaryIO, info: zipfile.ZipInfo, kinds: str, ndim: int
                 ) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a member's numpy header declares (only that
    header is read), once they are of ``kinds`` (numpy dtype kinds), ``ndim``
    dimensions, and fill the member's declared size exactly."""
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp, MAX_NPY_HEADER)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp, MAX_NPY_HEADER)
    else:
        raise Corrupt(f"member {info.filename} is not a numpy array")
    if dtype.hasobject or dtype.kind not in kinds or dtype.itemsize > 8 \
            or fortran or len(shape) != ndim:
        raise Corrupt(f"member {info.filename} holds {dtype} {list(shape)} data, not "
                      "what a model file holds there")
    count = 1
    for n in shape:
        count *= int(n)
    if count * dtype.itemsize != info.file_size - fp.tell():
        raise Corrupt(f"member {info.filename}: its array of {count} values does not "
                      f"fill its {info.file_size} bytes")
    return tuple(int(n) for n in shape), dtype


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, kinds: str, ndim: int = 1,
                digest=None, keep: bool = True) -> np.ndarray | None:
    """The array stored in ``info`` (None when not ``keep``: only hashed),
    read only as far as its numpy header says and its declared size allows;
    its data bytes go into ``digest`` as they are read."""
    with zf.open(info) as fp:
        shape, dtype = array_header(fp, info, kinds, ndim)
        nbytes = info.file_size - fp.tell()
        data = bytearray(nbytes) if keep else None
        done = 0
        while done < nbytes:
            chunk = fp.read(min(1 << 22, nbytes - done))
            if not chunk:
                raise Corrupt(f"member {info.filename} ends early")
            if digest is not None:
                digest.update(chunk)
            if keep:
                data[done:done + len(chunk)] = chunk
            done += len(chunk)
        fp.read(1)   # the end: zipfile checks the member's CRC there
    if not keep:
        return None
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def declared_version(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int | None:
    """The format version a header member names in its first bytes (where
    every fgl header has it), without reading the rest; None when absent."""
    try:
        with zf.open(info) as fp:
            array_header(fp, info, "u", 1)
            start = fp.read(200)
    except (Corrupt, ValueError, OSError, zipfile.BadZipFile, EOFError):
        return None
    found = re.search(rb'"version":\s*(\d{1,6})\b', start)
    return int(found.group(1)) if found else None
