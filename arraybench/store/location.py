"""Where the store is: the user's data folder by default, a file path, or a PostgreSQL URL.

The default is the platform's folder for per-user application data, as ``platformdirs`` knows it:
``$XDG_DATA_HOME/arraybench`` or ``~/.local/share/arraybench`` on Linux and other Unixes,
``~/Library/Application Support/arraybench`` on macOS, ``%LOCALAPPDATA%\\arraybench`` on Windows;
the file is ``results.sqlite`` in it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import platformdirs

from .errors import StoreError

STORE_FILE = "results.sqlite"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def data_folder() -> Path:
    """arraybench's folder for per-user data on this platform."""
    return Path(platformdirs.user_data_dir("arraybench", appauthor=False))


def default_location() -> str:
    """The store every run goes to unless told otherwise."""
    try:
        return str(data_folder() / STORE_FILE)
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
    return str(Path(text).expanduser().resolve())


def describe_location(location: str) -> str:
    """The location fit to print: a URL's password replaced by ``***``."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", location)
