"""Errors that end a command in one clear line instead of a traceback, and how such a line names an
option: as its reader types it (``--max-time 2`` on the command line, ``max_time=2`` in Python)."""

from __future__ import annotations

import difflib
import unicodedata
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, Iterator, Sequence

#: Names a message lists when none is close to what was typed; past this, it says where to look.
MAX_LISTED = 12


def _escaped(text: str, escape: Callable[[str], bool]) -> str:
    return "".join(ch.encode("unicode_escape").decode("ascii") if escape(ch) else ch for ch in str(text))


def one_line(text: str) -> str:
    """``text`` with line breaks and control characters escaped: a message quoting input stays one line."""
    return _escaped(text, lambda ch: unicodedata.category(ch) in ("Cc", "Zl", "Zp"))


def printable(text: str) -> str:
    """``text`` with control characters escaped (line breaks and tabs kept): a library's message must not
    rewrite the user's terminal."""
    return _escaped(text, lambda ch: ch not in "\n\t\u200d" and unicodedata.category(ch) in ("Cc", "Cf"))


def unknown_name(kind: str, name: str, valid: Sequence[str], *, listed: Sequence[str] | None = None,
                 more: str = "", where: str = "") -> str:
    """``unknown workload 'matmull'; did you mean 'matmul'?``; where nothing is close, up to ``MAX_LISTED``
    of ``listed`` (default ``valid``), then ``more``; ``where`` follows the name."""
    by_lower = {v.lower(): v for v in reversed(valid)}  # the first of names that differ in case
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=3, cutoff=0.6)
    head = f"unknown {kind} {one_line(repr(name))}" + (f" {where}" if where else "")
    if close:
        names = [repr(by_lower[c]) for c in close]
        return f"{head}; did you mean {' or '.join(names)}?"
    shown = list(valid if listed is None else listed)
    if not shown:
        return head + (f" ({more})" if more else "")
    text = ", ".join(shown[:MAX_LISTED])
    if len(shown) > MAX_LISTED:
        text += f" and {len(shown) - MAX_LISTED} more"
    return f"{head}; valid: {text}" + (f" ({more})" if more else "")


#: Who is asking, so that a message names an option as its reader typed it: ``"python"`` (the
#: API's keywords, the default), ``"command line"`` (set by ``commands/main.main`` for its command)
#: or ``"pytest"``, with the plugin's spellings. A process-wide setting, not a context variable: the
#: run's threads must see the command's.
_CALLER: list[tuple[str, dict[str, str]]] = [("python", {})]


@contextmanager
def _asking(caller: str, names: dict[str, str]) -> Iterator[None]:
    _CALLER.append((caller, names))
    try:
        yield
    finally:
        _CALLER.pop()


def command_line() -> AbstractContextManager[None]:
    """Within this block, messages spell options as the command line does (``--max-time 2``)."""
    return _asking("command line", {})


def pytest_session(names: dict[str, str]) -> AbstractContextManager[None]:
    """Within this block, messages spell options as the pytest plugin does (``names``, by keyword)."""
    return _asking("pytest", names)


def option_name(name: str) -> str:
    """An option's name as the caller writes it: ``--max-time`` for a command, ``max_time`` in Python."""
    caller, names = _CALLER[-1]
    if caller != "command line":
        return names.get(name, name)
    # One spelling each (``options.OPTIONS``); ``--processes MIN:MAX`` sets max_processes too.
    return "--" + ("processes" if name == "max_processes" else name).replace("_", "-")


def from_command_line() -> bool:
    """Whether the command line is the caller (``command_line`` is in effect)."""
    return _CALLER[-1][0] == "command line"


def spell(name: str, value: Any = None) -> str:
    """An option as the caller writes it: ``--max-time 2`` for a command, ``max_time=2`` in Python."""
    flag, (caller, _) = option_name(name), _CALLER[-1]
    if caller == "python" or flag == name:
        return f"{name}={'True' if value is None else value}"
    return flag if value is None else f"{flag}{' ' if caller == 'command line' else '='}{value}"


class UsageError(Exception):
    """Bad input from the user: an option, a size, a file. Exit status 2; the message is one line."""

    exit_code = 2

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(str(message)))


class ResultsError(UsageError):
    """A results file that cannot be used: missing, truncated, not JSON, another schema or tool."""


class SaveError(Exception):
    """A file of a run could not be written once measuring began (exit status 1); what reached the
    journal is kept and the message says how to go on. ``path``: the file."""

    exit_code = 1

    def __init__(self, message: object = "", path: object = None) -> None:
        super().__init__(one_line(str(message)))
        self.path = path

    @classmethod
    def from_os(cls, exc: OSError, what: object = None) -> "SaveError":
        """``could not write PATH (No space left on device)`` from an ``OSError``."""
        path = what if what is not None else (exc.filename or "a file")
        return cls(f"could not write {path} ({exc.strerror or exc})", path)


class StoreError(UsageError):
    """A store that cannot be opened, read or written: one line, saying which and why."""


class StoreWarning(UserWarning):
    """A run that could not be stored, kept all the same. Here, so the command line need not import the store."""
