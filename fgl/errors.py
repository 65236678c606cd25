"""Errors that teach: every user-facing failure names where it happened.

A spec error carries ``file:line:col``; a data error carries ``file:line``;
a model-file error names the file and what is wrong with it.  The CLI prints
``str(error)`` and exits non-zero, never a traceback.
"""
from __future__ import annotations


class FglError(Exception):
    """Base class of every error fgl reports to a user."""


def shorten(text: str, limit: int = 200) -> str:
    """``text`` for a message: cut in the middle when longer than ``limit``
    characters (a data line of a million fields stays one readable line)."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]} ...[{len(text) - 2 * keep} characters]... {text[-keep:]}"


class SpecError(FglError):
    """A mistake in a model spec, located at ``file:line:col``."""

    def __init__(self, message: str, file: str = "<spec>", line: int = 0, col: int = 0):
        self.message, self.file, self.line, self.col = message, file, line, col
        super().__init__(f"{file}:{line}:{col}: {message}")


class TrainingError(FglError):
    """Training that ended without usable weights (a non-finite objective)."""


class IterationLimitWarning(UserWarning):
    """Training stopped at its iteration limit (``max_iter``) before its
    convergence rule held: the weights are usable, not the optimum."""


class DataError(FglError):
    """A mistake in a data file, located at ``file:line``."""

    def __init__(self, message: str, file: str = "<data>", line: int = 0):
        self.message, self.file, self.line = message, file, line
        super().__init__(f"{file}:{line}: {message}")


class ModelFileError(FglError):
    """A model file that is corrupt, foreign or from an unsupported version."""

    def __init__(self, message: str, file: str = "<model>"):
        self.message, self.file = message, file
        super().__init__(f"{file}: {message}")
