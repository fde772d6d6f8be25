"""Errors that end a command with one clear line instead of a traceback."""

from __future__ import annotations

import unicodedata


def one_line(text: str) -> str:
    """``text`` with line breaks and control characters escaped (``\\n``): a message that quotes
    what a user typed, or a file name, stays one line whatever they contain."""
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch
        for ch in str(text)
    )


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters (ANSI escape sequences, bells,
    carriage returns) escaped as ``\\x1b``, line breaks and tabs kept. A workload's description or
    a library's error message must not recolour, retitle or rewrite the user's terminal."""
    return "".join(
        ch if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf") or ch == "\u200d"
        else ch.encode("unicode_escape").decode("ascii")
        for ch in str(text)
    )


class UsageError(Exception):
    """Bad input from the user: an option, a size, a file. Exit status 2; the message is one line."""

    exit_code = 2

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(str(message)))


class ResultsError(UsageError):
    """A results file that cannot be used: missing, truncated, not JSON, another schema or tool."""


class SaveError(Exception):
    """A file of a run could not be written (a full disk, a folder in the way). Exit status 1.

    Raised once measuring has begun: what reached the journal is kept, and the message says what
    failed and how to go on (``--resume``). ``path`` is the file that could not be written.
    """

    exit_code = 1

    def __init__(self, message: object = "", path: object = None) -> None:
        super().__init__(one_line(str(message)))
        self.path = path

    @classmethod
    def from_os(cls, exc: OSError, what: object = None) -> "SaveError":
        """``could not write PATH (No space left on device)`` from an ``OSError``."""
        path = what if what is not None else (exc.filename or "a file")
        return cls(f"could not write {path} ({exc.strerror or exc})", path)
