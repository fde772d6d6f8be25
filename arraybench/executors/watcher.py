"""Ends the workers' process groups of a parent that died without its clean-up (SIGKILL).

``PR_SET_PDEATHSIG`` ends only the worker, not what its workload started, and a group paused for
another library's turn would stay stopped for good. So one idle watcher process per parent, in a
session of its own, is told each group ("+GROUP", "-GROUP") over a pipe only the parent writes; when
the pipe closes it kills every group still named. A group is forgotten before its worker is reaped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from contextlib import suppress

#: What the watcher runs (``python -I -S``: nothing from the environment or site-packages).
_SCRIPT = """
import os, signal
groups, pending = set(), b""
while True:
    try:
        chunk = os.read(0, 4096)
    except OSError:
        chunk = b""
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\\n")
    for line in lines:
        if line[:1] in (b"+", b"-") and line[1:].isdigit():
            (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
for group in groups:
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except OSError:
            pass
"""

_lock = threading.Lock()
_process: subprocess.Popen | None = None
_fd: int | None = None  # the pipe's end the parent writes
_groups: set[int] = set()


def watch(group: int) -> None:
    """Have the watcher end process group ``group`` if this process dies before ``unwatch``."""
    # Where reading a process's exit reaps it (no ``waitid``), a group id could be reused while
    # named: there the workers' own death signal is all.
    if not hasattr(os, "waitid") or not hasattr(os, "killpg"):
        return
    with _lock:
        _groups.add(group)
        _tell(f"+{group}\n")


def unwatch(group: int) -> None:
    """The group is killed (its leader not yet reaped): the watcher forgets it."""
    with _lock:
        if group in _groups:
            _groups.discard(group)
            _tell(f"-{group}\n")


def _tell(line: str) -> None:
    """Write ``line`` to the watcher; one that is gone (killed by someone) is replaced, told every group."""
    global _process, _fd
    for _ in range(2):
        if _fd is None:
            if not _groups:
                return
            _process, _fd = _start()
            if _fd is None:
                return
            line = "".join(f"+{group}\n" for group in sorted(_groups))
        try:
            os.write(_fd, line.encode())
            return
        except OSError:
            os.close(_fd)
            _fd = None
            if _process is not None:
                _process.poll()  # reaped, if it is gone


def _start() -> tuple[subprocess.Popen | None, int | None]:
    """A watcher and the end of its pipe to write; (None, None) where none can start (each
    worker still dies with the parent)."""
    if not sys.executable:
        return None, None
    read, write = os.pipe()  # close-on-exec: no worker holds it open after the parent is gone
    try:
        process = subprocess.Popen([sys.executable, "-I", "-S", "-c", _SCRIPT], stdin=read,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
    except OSError:
        os.close(write)
        return None, None
    finally:
        os.close(read)
    return process, write


def _forget() -> None:
    """In a child forked from this process: its copy of the pipe's end is closed, so that the
    watcher sees the parent's death and not the child's, and the child starts its own if need be."""
    global _lock, _process, _fd
    _lock = threading.Lock()
    if _fd is not None:
        with suppress(OSError):
            os.close(_fd)
    _process, _fd = None, None
    _groups.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
