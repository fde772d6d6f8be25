"""One cell measured in the test's own process: what a worker does for a cell, without the worker.

The worker prepares its cells, samples them a turn at a time and finishes them (``worker/main.py``);
a test of a workload or a library wants one cell's replicate, in this process, fast.
"""

from __future__ import annotations

import gc
from typing import Any, Callable

from arraybench.model.replicate import Replicate, TimerSettings
from arraybench.model.cell import Cell
from arraybench.worker.prepare import ReferenceCache, finish, prepare
from arraybench.worker.sampling import gc_paused
from arraybench.workloads.definition import Workload


def freeze_what_lives() -> None:
    """Collect garbage, then move every object alive out of the collector's sight (``gc.freeze``).

    A cell measured in this process collects garbage before sampling and before reading its
    memory peak, as a worker does; in a test process those collections walked every object that
    PyTorch, JAX and the tests before made (0.2 s or more a collection, twice a cell). Frozen,
    they are not walked again; garbage is collected first, and what a test then makes is
    collected as before. Called where a test opens a library and before each cell it measures.
    """
    gc.collect()
    gc.freeze()


def measure_cell(backend: Any, wl: Workload, cell: Cell, base: TimerSettings,
                 references: ReferenceCache, *, seed: int = 0,
                 flush: Callable[[], None] | None = None) -> Replicate:
    """Prepare, sample and finish one cell on its own: every turn is its own."""
    freeze_what_lives()  # its collections walk only what is new since (see there)
    prepared = prepare(backend, wl, cell, base, references, seed=seed, flush=flush)
    if prepared.run is not None:
        with gc_paused():
            while not prepared.run.done:
                prepared.run.take_turn()
    return finish(backend, prepared)


_SHARED: list[str] = []


def shared_references() -> ReferenceCache:
    """A reference cache whose files every test of this process shares, as a run's workers share
    theirs: for built-in and example workloads, whose names always mean the same code."""
    if not _SHARED:
        import atexit
        import shutil
        import tempfile

        _SHARED.append(tempfile.mkdtemp(prefix="arraybench-test-references-"))
        atexit.register(shutil.rmtree, _SHARED[0], True)
    return ReferenceCache(_SHARED[0])
