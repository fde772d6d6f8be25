"""A tiny shared board through which a worker says what it is doing, without waking the parent.

The worker writes (cell index, progress counter) into a memory-mapped file before every step; the
parent reads it only to decide whether the worker hangs, and on which cell it crashed. Messages on
the pipe would wake the parent on every sample, and on a 2-core machine a woken parent competes
with the very operation being timed.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

_FORMAT = "<iq"  # cell index (-1: none), progress counter
SIZE = struct.calcsize(_FORMAT)


def create(path: Path) -> None:
    """Make an empty board at ``path`` (the parent, before starting the worker): a new file, never
    written through a link (which could point out of the output folder) nor into a file that
    another name shares (``files``)."""
    from ..files import write_bytes_atomic

    write_bytes_atomic(path, struct.pack(_FORMAT, -1, 0), durable=False)


def read(path: Path) -> tuple[int, int]:
    """(cell index, counter) as last written; (-1, 0) if unreadable."""
    try:
        data = path.read_bytes()[:SIZE]
        return struct.unpack(_FORMAT, data) if len(data) == SIZE else (-1, 0)
    except OSError:
        return -1, 0


class Board:
    """The worker's side."""

    def __init__(self, path: str | None) -> None:
        self._map: mmap.mmap | None = None
        self._counter = 0
        if path:
            fd = os.open(path, os.O_RDWR)
            try:
                self._map = mmap.mmap(fd, SIZE)
            finally:
                os.close(fd)

    def mark(self, index: int) -> None:
        """Say that work on cell ``index`` is under way (and that the worker is alive)."""
        self._counter += 1
        if self._map is not None:
            self._map[:SIZE] = struct.pack(_FORMAT, index, self._counter)
