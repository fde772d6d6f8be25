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


class UsageError(Exception):
    """Bad input from the user: an option, a size, a file. Exit status 2; the message is one line."""

    exit_code = 2

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(str(message)))


class ResultsError(UsageError):
    """A results file that cannot be used: missing, truncated, not JSON, another schema or tool."""
