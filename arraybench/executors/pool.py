"""Workers started before the turns that use them, so that no measurement waits for a worker's start:
ahead of their replicate index within a run (``EarlyWorkers``: each waits paused for its index), or
kept from one run of a pytest session to the next (``WorkerPool``: a CPU worker that finished cleanly
is kept paused under what made it, and given the next run's job of that description). Two replicate
indices never share a process; GPU workers are not kept (each holds its device's memory).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import Hashable, Iterator

from ..model.cell import Cell, Config
from ..worker.protocol import Done, Prepare
from .worker_process import STARTUP_TIMEOUT_S, WorkerExited, WorkerProcess, WorkerTimeout, end_together

#: (configuration, replicate index, allocator state: "" for the headline's, or the other).
Key = tuple[Config, int, str]


class EarlyWorkers(dict[Key, WorkerProcess]):
    """The workers started early, by ``Key``, each held until its index takes it."""

    def take(self, key: Key, remaining: dict[str, Cell]) -> WorkerProcess | None:
        """The worker started as ``key`` says, resumed, if its job holds every cell of ``remaining``."""
        worker = self.pop(key, None)
        if worker is None:
            return None
        if not set(remaining) <= {c.key for c in worker.cells}:
            worker.close()
            return None
        worker.resume()
        return worker

    def hold(self) -> None:
        """Before anything is timed: every early worker finishes starting, then waits paused, so
        that nothing of theirs runs while another worker measures."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for worker in self.values():
            if not worker.paused:
                worker.wait_started(deadline - time.monotonic())
                worker.pause()

    def close(self, index: int | None = None) -> None:
        """End the workers of replicate index ``index`` (None: all) that nothing took; in a pytest
        session, those that can take another job wait in its pool for a later test's."""
        pool = current()
        unused = [self.pop(key) for key in list(self) if index is None or key[1] == index]
        end_together([worker for worker in unused if pool is None or not pool.keep_unused(worker)])


#: How long an unused worker may take to end its job before it is ended instead (its library is
#: loaded: it answers in well under a second; one still importing after a stop is not waited for).
KEEP_WAIT_S = 10.0
#: The folder of a pool's workers' logs and boards: this, the parent's id, "-" and a random part.
POOL_PREFIX = "arraybench-workers-"


class WorkerPool:
    """Idle workers, paused, by what made them; ``close`` ends them all."""

    def __init__(self) -> None:
        self._idle: dict[Hashable, WorkerProcess] = {}

    @cached_property
    def folder(self) -> Path:
        """Where the pool's workers write their logs (made when first asked)."""
        from ..host.environments import remove_stale_folders

        remove_stale_folders(prefix=POOL_PREFIX)
        return Path(tempfile.mkdtemp(prefix=f"{POOL_PREFIX}{os.getpid()}-"))

    def take(self, key: Hashable) -> WorkerProcess | None:
        """The idle worker made as ``key`` says, no longer idle; None where there is none alive."""
        worker = self._idle.pop(key, None)
        if worker is not None and not worker.alive():
            worker.close()
            return None
        return worker

    def keep(self, key: Hashable, worker: WorkerProcess) -> None:
        """Keep ``worker`` (done with its job, waiting for the next) until a run asks for ``key``."""
        worker.pause()  # a thread pool still spinning must not run beside the next measurement
        old = self._idle.pop(key, None)
        if old is not None:
            old.close()
        self._idle[key] = worker

    def keep_unused(self, worker: WorkerProcess) -> bool:
        """Keep a worker never asked to prepare its job's cells: told to prepare none, it ends the
        job and waits for the next. False where it cannot: no pool's, or a stop ended the job."""
        if worker.pool_key is None:
            return False
        worker.resume()
        worker.send(Prepare(only=[]).to_json())
        with suppress(WorkerTimeout, WorkerExited):
            if [m for m in worker.messages(KEEP_WAIT_S)][-1] == Done():
                self.keep(worker.pool_key, worker)
                return True
        return False

    def close(self) -> None:
        """End every idle worker and remove the folder: an idle worker has sent all it measured, so
        it is killed, not left a library's seconds of teardown at the end of the session."""
        idle, self._idle = list(self._idle.values()), {}
        for worker in idle:  # all signalled first: their exits overlap (0.3 s less for 7 workers)
            worker.kill(wait=False)
        for worker in idle:
            worker.kill()
            worker.close()
        if "folder" in self.__dict__:  # made, by ``cached_property``
            shutil.rmtree(self.__dict__.pop("folder"), ignore_errors=True)


#: Variables that differ from one test to the next and say nothing to a library: a worker
#: started under one test's value does the next test's job.
PER_TEST = frozenset({"PYTEST_CURRENT_TEST"})

_current: WorkerPool | None = None


def current() -> WorkerPool | None:
    """The pool the runs of this process share now, or None (each run starts its own workers)."""
    return _current


@contextmanager
def sharing(pool: WorkerPool) -> Iterator[WorkerPool]:
    """Runs inside take their workers from ``pool`` and leave them there."""
    global _current
    before, _current = _current, pool
    try:
        yield pool
    finally:
        _current = before
