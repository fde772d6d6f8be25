"""The lock a run holds on its output folder: an exclusive ``flock`` on ``DIR/.arraybench.lock``
from before it reads or writes the journal until its report is written. A second run into the
same folder is refused at once, naming the process that holds it; the kernel drops the lock when
the process dies, however it dies, so a killed run never leaves a stale lock behind. The lock file
itself stays (removing it would let two runs lock two different files of the same name).
"""

from __future__ import annotations

import errno
import os
import warnings
from pathlib import Path
from types import TracebackType

from ..errors import UsageError
from ..files import new_beside

LOCK_NAME = ".arraybench.lock"

try:
    import fcntl
except ImportError:  # not on Windows: runs there are not locked
    fcntl = None  # type: ignore[assignment]
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class FolderLock:
    """This process's claim on an output folder; ``release`` it, or let the process end."""

    def __init__(self, folder: Path, fd: int | None) -> None:
        self.folder = folder
        self._fd = fd

    @classmethod
    def acquire(cls, folder: Path) -> "FolderLock":
        """Lock ``folder`` or raise ``UsageError`` naming the run that holds it."""
        path = folder / LOCK_NAME
        while True:
            try:
                # O_NOFOLLOW: a link planted under the lock's name must not make us create a file
                # elsewhere.
                fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o666)
            except OSError as exc:
                raise UsageError(f"{path}: cannot be opened to lock the folder ({reason(exc)})") from None
            lock = cls._locked(folder, path, fd)
            held = os.fstat(fd)
            if held.st_nlink > 1:
                # A hard-linked copy's lock (cp -al) is the original folder's too: give this
                # folder one of its own (renamed into place while we hold the shared one), and
                # lock that instead. The pid is never written into the original's file.
                try:
                    os.close(new_beside(path, b""))
                except OSError as exc:
                    lock.release()
                    raise UsageError(f"{path}: cannot be replaced by a lock of this folder's own "
                                     f"({reason(exc)})") from None
                lock.release()
                continue
            try:
                named = os.lstat(path)
            except OSError:
                named = None
            if named is None or (named.st_ino, named.st_dev) != (held.st_ino, held.st_dev):
                lock.release()  # replaced meanwhile: lock what the name now holds
                continue
            break
        _write_pid(fd)  # only said to a second run, in its message
        return lock

    @classmethod
    def check_free(cls, folder: Path) -> None:
        """``UsageError`` if another run holds ``folder``; creates nothing."""
        path = folder / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | _NOFOLLOW | _CLOEXEC)
        except OSError:
            return  # no lock file yet (or not one we can open): acquire() says what is wrong
        with warnings.catch_warnings():  # an unlockable file system is said once, by acquire()
            warnings.simplefilter("ignore")
            cls._locked(folder, path, fd).release()

    @classmethod
    def _locked(cls, folder: Path, path: Path, fd: int) -> "FolderLock":
        """``fd`` (open on the lock file) locked, or ``UsageError`` (``fd`` closed)."""
        if fcntl is None:
            return cls(folder, fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f" (process {holder})" if holder else ""
            raise UsageError(f"{folder}: another arraybench run is writing there{who}; wait for it "
                             "to end, or choose another --output-dir") from None
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                os.close(fd)
                raise UsageError(f"{path}: cannot lock the folder ({reason(exc)})") from None
            # A file system without locks (some network and FUSE mounts): run unlocked rather
            # than not at all.
            warnings.warn(f"{folder}: this file system cannot lock the folder ({reason(exc)}); "
                          "make sure no other run writes there at the same time", stacklevel=3)
        return cls(folder, fd)

    def release(self) -> None:
        """Give the folder back (closing the file drops the lock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _write_pid(fd: int) -> None:
    try:  # only said to a second run; a full disk must not stop this one
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def reason(exc: OSError) -> str:
    """What the system said of a failed file operation, in words."""
    return exc.strerror or str(exc)
