"""Writing files: the one place arraybench writes an output, so no reader ever sees half of one.

An absent or regular target gets a new file written beside it and renamed into place (other hard
links keep their content). Anything else is never replaced: in an output folder a link, pipe,
device or socket is refused (``NotReplaceable``); a target the user named (``through=True``:
``export -o /dev/stdout``) is written through. A block device is refused either way."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: How long a named pipe given as a target is waited on for a reader, before it is refused.
PIPE_READER_WAIT_S = 2.0


class NotReplaceable(OSError):
    """A target that is not a regular file (a link, pipe, device or socket): never replaced."""


_KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def kind(mode: int) -> str:
    """A file type, as a message says it."""
    return _KINDS.get(stat.S_IFMT(mode), "a file")


def _mode_of(path: Path) -> int | None:
    with contextlib.suppress(FileNotFoundError):
        return os.lstat(path).st_mode
    return None


def _refuse(path: Path, mode: int) -> NotReplaceable:
    return NotReplaceable(errno.EEXIST, f"is {kind(mode)}; arraybench replaces only regular files",
                          str(path))


def write_atomic(path: str | os.PathLike[str], text: str, *, through: bool = False,
                 durable: bool = True) -> Path:
    """Write a text file (see ``write_bytes_atomic``)."""
    return write_bytes_atomic(path, text.encode("utf-8"), through=through, durable=durable)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, through: bool = False,
                       durable: bool = True) -> Path:
    """Write ``data`` to ``path`` by the module's rule (``durable``: fsync first); an ``OSError`` names ``path``."""
    path = Path(path)
    mode = _mode_of(path)
    # (A folder in the way is left to the rename, which says "Is a directory".)
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        if not through:
            raise _refuse(path, mode)
        return _write_through(path, data, durable)
    os.close(new_beside(path, data, durable=durable))
    return path


def new_beside(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> int:
    """Write ``data`` beside ``path`` and rename it over ``path``; a descriptor open on it, for appending."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _naming(exc, path) from None
    try:
        # mkstemp makes the file private (0600); a report is meant to be read like any file.
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
        mode = _mode_of(path)  # checked again, last: a link planted meanwhile is not replaced
        if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise _refuse(path, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, NotReplaceable):
            raise _naming(exc, path) from None
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_through(path: Path, data: bytes, durable: bool) -> Path:
    """Write into a link's regular target (renamed into place there), a pipe, terminal or character device."""
    import time

    deadline = time.monotonic() + PIPE_READER_WAIT_S
    while True:
        try:
            # O_NONBLOCK: a pipe nobody reads is refused (ENXIO), not waited on for ever; one
            # whose reader starts at the same moment (``export -o p & cat p``) is retried.
            fd = os.open(path, os.O_WRONLY | _NONBLOCK | _CLOEXEC | getattr(os, "O_NOCTTY", 0))
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise _naming(exc, path) from None
            if time.monotonic() > deadline:
                raise OSError(errno.ENXIO, "is a named pipe that nobody reads", str(path)) from None
            time.sleep(0.05)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):  # a link to a regular file: replace that file, keep the link
            os.close(fd)
            fd = -1
            os.close(new_beside(os.path.realpath(path), data, durable=durable))
            return path
        if stat.S_ISBLK(mode) or stat.S_ISDIR(mode):
            raise _refuse(path, mode)
        if _NONBLOCK:  # written as any program writes to a pipe: blocking, whole
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
        _write_all(fd, data)
    except NotReplaceable:
        raise
    except OSError as exc:
        raise _naming(exc, path) from None
    finally:
        if fd >= 0:
            os.close(fd)
    return path


def private(path: str | os.PathLike[str]) -> None:
    """Give ``path`` its own copy before changing it in place, so other hard links keep their content."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        with open(os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC), "rb") as f:
            data = f.read()
        os.close(new_beside(path, data))


def open_append(path: str | os.PathLike[str]) -> int:
    """A descriptor appending to ``path``: a regular file of its own, never through a link or into a pipe."""
    path = Path(path)
    private(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW | _NONBLOCK | _CLOEXEC,
                     0o666)
    except OSError as exc:
        mode = _mode_of(path)
        if mode is not None and not stat.S_ISREG(mode):
            raise _refuse(path, mode) from None
        raise _naming(exc, path) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refuse(path, mode)
    return fd


def discard(stream: Any) -> None:
    """Point ``stream``'s descriptor at /dev/null: what is left in it then goes nowhere instead of failing again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` about ``path``: the file meant, not the temporary file it went through."""
    return OSError(exc.errno, exc.strerror, str(path)) if exc.errno else exc
