"""Where the store is: a file path, a PostgreSQL URL, or by default ``results.sqlite`` in the user's
data folder as ``platformdirs`` knows it (``~/.local/share/arraybench`` on Linux)."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import platformdirs

from ..errors import StoreError

STORE_FILE = "results.sqlite"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def default_location() -> str:
    """The store every run goes to unless told otherwise."""
    try:
        return str(Path(platformdirs.user_data_dir("arraybench", appauthor=False)) / STORE_FILE)
    except RuntimeError as exc:  # Path.home() without a home
        raise StoreError(f"no user data folder for the default store ({exc}); give --store PATH") from None


def is_postgres(location: str) -> bool:
    return location.startswith(POSTGRES_SCHEMES)


def resolve_location(location: str | os.PathLike[str] | None) -> str:
    """A store location as given (``None``: the default); a path made absolute."""
    if location is None:
        return default_location()
    text = os.fspath(location)
    if not str(text).strip():
        raise StoreError("--store is empty; give a file path or a postgresql:// URL")
    if is_postgres(str(text)):
        return str(text)
    try:
        return str(Path(text).expanduser().resolve())
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise StoreError(f"store {text}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None


#: A URL's ``user:password@``, a ``password=`` query parameter or connection option.
_USERINFO = re.compile(r"(://[^:/@\s\"']*:)[^@\s\"']*@")
# The value ends at a separator; a colon just before one is the sentence's ("…password=***: refused").
_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s\"']*?(?=:?(?:[&\s\"']|$)))",
                       re.IGNORECASE)


def redact(text: object, location: str | None = None) -> str:
    """``text`` with every password replaced by ``***`` (a URL's ``user:password@``, a ``password=``
    parameter, and ``location``'s own wherever quoted). Every shown location or message goes through here."""
    out = _PASSWORD.sub(r"\1***", _USERINFO.sub(r"\1***@", str(text)))
    for secret in _secrets(location) if location else ():
        out = out.replace(secret, "***")
    return out


def _secrets(location: str) -> list[str]:
    """The passwords a location holds, as written and as decoded (longest first)."""
    found: set[str] = set()
    for m in _USERINFO.finditer(location):
        found.add(m.group(0)[len(m.group(1)):-1])
    for m in _PASSWORD.finditer(location):
        found.add(m.group(2).strip("'"))
    with contextlib.suppress(ValueError):  # a malformed URL: what the patterns found is all there is
        parts = urlsplit(location)
        found.add(parts.password or "")
        found |= {v for k, v in parse_qsl(parts.query) if k.lower() == "password"}
    found |= {unquote(s) for s in found}
    return sorted((s for s in found if s and s != "***"), key=len, reverse=True)


def describe_location(location: str) -> str:
    """The location fit to print: its passwords replaced by ``***`` (``redact``)."""
    return redact(location, location)
