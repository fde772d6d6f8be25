"""Writing files so that no reader ever sees half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write a text file through a temporary file in the same folder and a rename."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write a file through a temporary file in the same folder and a rename.

    An ``OSError`` names ``path`` (not the temporary file), whatever step failed.
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _naming(exc, path) from None
    try:
        # mkstemp makes the file private (0600); a report is meant to be read like any file.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _naming(exc, path) from None
        raise
    return path


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` about ``path``: the file meant, not the temporary file it went through."""
    return OSError(exc.errno, exc.strerror, str(path)) if exc.errno else exc
