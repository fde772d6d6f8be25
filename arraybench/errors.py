"""Errors that end a command with one clear line instead of a traceback."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: an option, a size, a file. Exit status 2."""

    exit_code = 2


class ResultsError(UsageError):
    """A results file that cannot be used: missing, truncated, not JSON, another schema or tool."""
