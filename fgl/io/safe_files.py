"""Every file fgl writes.

Writing (``check_output``, ``atomic_output``, ``write_bytes``, ``write_text``):

* Only a regular file, or a name where nothing is yet, is written.  A
  folder, a device node (``/dev/null``), a FIFO or a socket is refused
  with a message, before any work when the command checks its outputs
  first (``check_output``) and again just before the file is replaced.
* A symbolic link is refused too, whatever it points to: fgl replaces a
  file whole (below), which would put the new file in place of the link,
  and writing through it instead would let a link planted in a shared
  folder (``/tmp/out.fglm -> ~/.bashrc``) aim fgl's output anywhere.
  Give the path of the file itself (``realpath LINK``).
* A path that is also one of the command's inputs (``fgl tag M.fglm
  data.txt -o M.fglm``) is refused, whether it exists yet or not.
* A name ending in ``/`` (or ``/.``, ``/..``) names a folder and is
  refused: the file system would drop the slash and write the file.
* The new content goes to a temporary file in the target's folder
  (``.NAME.PID.XXXXXXXX.tmp``, PID the writing process, NAME cut short
  where the whole would not fit the file system's longest name), is flushed to
  disk (fsync) and renamed over the target (``os.replace``, atomic on
  POSIX): a reader sees the previous file or the new one, never a part of
  either.  A failed write — no such folder,
  a read-only file system, a full disk, a file size limit — is a one-line
  message naming the file, and the previous file is left as it was.
* SIGINT and SIGTERM arriving while the file is written and renamed are
  held until the rename is done (or the write has failed and its
  temporary file is removed), then delivered as they would have been: a
  signal ends the run after the write, never half-way through it.  The
  temporary file is removed on every way out but SIGKILL and a crash of
  the machine; what those leave is removed by the next write of the same
  file (a temporary file whose process is gone).
* The file keeps the permission bits of the file it replaces; a new file
  gets the usual ``0666`` less the umask.
* ``-`` names standard output where a command allows it (``allow_stdout``).

Reading, with size caps, is ``fgl.data.inputs``.
"""
from __future__ import annotations

import contextlib
import errno
import glob
import io
import os
import signal
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Iterable, Iterator

from fgl.data.inputs import kind
from fgl.errors import FglError

STDOUT = "-"

# ---------------------------------------------------------------- errors


class OutputError(FglError):
    """A file fgl will not or could not write, named with why."""

    def __init__(self, message: str, file: str):
        self.message, self.file = message, file
        super().__init__(f"{file}: {message}")


# ---------------------------------------------------------------- what a path holds

def _target_problem(p: Path, what: str) -> str | None:
    """Why fgl will not replace what is at ``p`` (None: nothing there, or
    a regular file)."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return f"{p.parent} is not a folder"
    except OSError as e:
        return f"cannot look at it: {e.strerror or e}"
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            to = os.readlink(p)
        except OSError:
            to = "?"
        return (f"is a symbolic link (to {to}); fgl replaces files whole and does not write "
                f"through links: give the path of the file itself")
    if stat.S_ISDIR(st.st_mode):
        return f"is a folder; give a file name for the {what} inside it"
    return (f"is {kind(st.st_mode)}, not a regular file; fgl writes the {what} only to a "
            "regular file (or a new name)")


def _folder_problem(p: Path) -> str | None:
    """Why no file can be made in ``p``'s folder (None: it can)."""
    parent = p.parent
    if not parent.exists():
        return f"the folder {parent} does not exist"
    if not parent.is_dir():
        return f"{parent} is not a folder"
    try:
        if os.statvfs(parent).f_flag & os.ST_RDONLY:
            return f"the folder {parent} is on a read-only file system"
    except (OSError, AttributeError):
        pass
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the folder {parent} is not writable"
    return None


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same file where both
    exist, else the same path once links and ``..`` are resolved (an
    output and a checkpoint not yet written, say)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        pass
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def check_output(path: str | Path, what: str = "output", inputs: Iterable = (),
                 allow_stdout: bool = False) -> str:
    """``path`` as given, if fgl can write the ``what`` there; else an
    OutputError saying why (module docstring).  ``inputs`` (path, what)
    pairs — or plain paths — are the files the command reads: the output
    may not be one of them.  Commands call this before their work."""
    name = str(path)
    if name == STDOUT and allow_stdout:
        return name
    if name == "":
        raise OutputError(f"an empty file name for the {what}", "''")
    end = "/" if name.endswith(os.sep) else os.path.basename(name)
    if end in ("/", ".", ".."):   # (a trailing / would be dropped: keep.txt/ is keep.txt)
        raise OutputError(f"names a folder (it ends in {end}); give a file name for the "
                          f"{what}", name)
    p = Path(path)
    problem = _target_problem(p, what) or _folder_problem(p)
    if problem:
        raise OutputError(problem, name)
    for item in inputs:
        given, role = item if isinstance(item, tuple) else (item, "an input")
        if given is None or str(given) == STDOUT:
            continue
        for one in ([given] if isinstance(given, (str, Path)) else given):
            if _same_file(p, Path(one)):
                raise OutputError(f"is also {role} of this command; write the {what} to "
                                  "another file", name)
    return name


# ---------------------------------------------------------------- signals


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held while the block runs, then delivered to the
    handlers in force before (only the main thread can hold them; elsewhere
    the block runs as is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum, frame) -> None:
        pending.append(signum)

    old = {}
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            old[s] = signal.signal(s, hold)
    except (ValueError, OSError):   # (an embedding that owns the signals)
        pass
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for s in dict.fromkeys(pending):
            signal.raise_signal(s)


# ---------------------------------------------------------------- writing


def _umask() -> int:
    """The process's umask, read without changing it where possible."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the system allows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_failed(e: OSError, what: str, existed: bool) -> str:
    reason = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
              errno.EFBIG: "the file is larger than this system allows (a file size limit)",
              errno.EROFS: "the file system is read-only"}.get(e.errno, e.strerror or str(e))
    kept = "; the previous file is unchanged" if existed else ""
    return f"cannot write the {what}: {reason}{kept}"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


_TEMP_EXTRA = len("..") + len(".XXXXXXXX.tmp")   # a temporary name's bytes besides NAME, PID


def _temp_stem(p: Path) -> str:
    """The NAME of ``p``'s temporary files (``.NAME.PID.XXXXXXXX.tmp``):
    its file name, cut short (by bytes) where the whole would be longer
    than its folder allows, so that a temporary file fits wherever the
    file itself does."""
    try:
        longest = os.pathconf(p.parent if str(p.parent) else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    room = longest - _TEMP_EXTRA - len(str(os.getpid()))
    raw = os.fsencode(p.name)
    return p.name if len(raw) <= room else os.fsdecode(raw[:max(room, 1)])


def _remove_stale_temporaries(p: Path) -> None:
    """Remove the temporary files a killed write of ``p`` left beside it
    (``.NAME.PID.XXXXXXXX.tmp`` whose process PID is gone: SIGKILL, a crash).
    A live writer's file, and anything not shaped so, is left alone."""
    folder = p.parent if str(p.parent) else Path(".")
    stem = _temp_stem(p)
    with contextlib.suppress(OSError):
        for tmp in folder.glob(f".{glob.escape(stem)}.*.tmp"):
            parts = tmp.name[len(stem) + 2:].split(".")
            if len(parts) == 3 and parts[0].isdigit() and tmp.is_file() \
                    and not tmp.is_symlink() and not _alive(int(parts[0])):
                with contextlib.suppress(OSError):
                    tmp.unlink()


@contextlib.contextmanager
def atomic_output(path: str | Path, what: str = "output", *, text: bool = False,
                  encoding: str = "utf-8", inputs: Iterable = (),
                  allow_stdout: bool = False) -> Iterator[IO]:
    """A file object whose content replaces ``path`` when the block ends
    without an exception (module docstring); binary, or ``text`` in
    ``encoding``.  Any failure is an OutputError naming ``path``, and the
    previous file stays as it was."""
    name = str(path)
    if name == STDOUT and allow_stdout:
        yield _stdout(text, encoding)
        return
    inputs = list(inputs)
    check_output(path, what, inputs)
    p = Path(path)
    _remove_stale_temporaries(p)
    with signals_held():
        existed = p.exists()
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{_temp_stem(p)}.{os.getpid()}.", suffix=".tmp",
                                       dir=p.parent if str(p.parent) else ".")
        except OSError as e:
            raise OutputError(_write_failed(e, what, existed), name) from None
        done = False
        try:
            raw = os.fdopen(fd, "wb")
            fh = io.TextIOWrapper(raw, encoding=encoding, newline="\n") if text else raw
            with fh:
                yield fh
                fh.flush()
                os.fsync(raw.fileno())
            try:
                mode = stat.S_IMODE(os.stat(p).st_mode) if existed else 0o666 & ~_umask()
            except OSError:
                mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)     # mkstemp's file is private; the output is not
            check_output(path, what, inputs)   # what is there now (it may have changed)
            os.replace(tmp, p)
            done = True
            _fsync_folder(p.parent if str(p.parent) else Path("."))
        except OSError as e:
            raise OutputError(_write_failed(e, what, existed), name) from None
        finally:
            if not done:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _stdout(text: bool, encoding: str) -> IO:
    if text:
        return sys.stdout
    return getattr(sys.stdout, "buffer", sys.stdout)


def write_bytes(path: str | Path, data: bytes, what: str = "output", *,
                inputs: Iterable = (), allow_stdout: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (``atomic_output``)."""
    with atomic_output(path, what, inputs=inputs, allow_stdout=allow_stdout) as fh:
        fh.write(data)
        fh.flush()


def write_text(path: str | Path, text: str, what: str = "output", *, encoding: str = "utf-8",
               inputs: Iterable = (), allow_stdout: bool = False) -> None:
    """Write ``text`` to ``path`` atomically (``atomic_output``)."""
    with atomic_output(path, what, text=True, encoding=encoding, inputs=inputs,
                       allow_stdout=allow_stdout) as fh:
        fh.write(text)
        fh.flush()
