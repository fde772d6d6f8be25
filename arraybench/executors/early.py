"""Workers started ahead of their replicate index, paused until its turns.

Starting a worker is an interpreter and a library's import, never timed: the run's first indices
start theirs at once, so that the imports share the cores, where one index after another waited
for its slowest import each time. Each waits, paused, for its index (``hold``), and is taken
there (``take``) if its job holds every cell the index still measures (``Prepare.only`` names
those: a cell that ended since is left out).
"""

from __future__ import annotations

import time

from ..model.cell import Cell, Config
from .turns import end_together
from .worker_process import STARTUP_TIMEOUT_S, WorkerProcess

__all__ = ["EarlyWorkers", "Key"]

#: (configuration, replicate index, allocator state: "" for the headline's, or the other).
Key = tuple[Config, int, str]


class EarlyWorkers:
    """The workers started early, by ``Key``, each with the keys of its job's cells."""

    def __init__(self) -> None:
        self._held: dict[Key, tuple[WorkerProcess, list[str]]] = {}

    def __contains__(self, key: Key) -> bool:
        return key in self._held

    def add(self, key: Key, worker: WorkerProcess, cells: list[Cell]) -> None:
        """Hold ``worker``, started for ``cells``, until its index takes it."""
        self._held[key] = (worker, [c.key for c in cells])

    def take(self, key: Key, remaining: dict[str, Cell]) -> WorkerProcess | None:
        """The worker started as ``key`` says, resumed, where its job holds every cell of
        ``remaining``; None where there is none. One whose job lacks a cell (it cannot have been
        told of it) is closed."""
        early = self._held.pop(key, None)
        if early is None:
            return None
        worker, keys = early
        if not set(remaining) <= set(keys):
            worker.close()
            return None
        worker.resume()
        return worker

    def hold(self) -> None:
        """Before anything is timed: every early worker finishes starting, then waits paused, so
        that nothing of theirs runs while another worker measures."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for worker, _ in self._held.values():
            if not worker.paused:
                worker.wait_started(deadline - time.monotonic())
                worker.pause()

    def close(self, index: int | None = None) -> None:
        """End the workers of replicate index ``index`` (None: all) that nothing took."""
        keys = [key for key in self._held if index is None or key[1] == index]
        end_together([self._held.pop(key)[0] for key in keys])
