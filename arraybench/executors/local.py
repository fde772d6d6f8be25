"""Worker processes on this machine: one per configuration and replicate index.

Each configuration (backend, device, environment) is measured by fresh workers, one per replicate
index. The configurations of an index take turns, their workers alive together and one sampling
at a time (``turns``), so that every verdict's two sides sample the same seconds of the machine;
a run of one configuration takes turns alone, its cells in rounds. Two libraries never measure at
once: they would compete for the cores.

Every worker starts with glibc's malloc in a known state (``host/allocator``: freed memory kept);
on the CPU, one replicate index's large outputs are measured in the other state too (fresh
pages), by a worker that takes turns beside them, or after them where the run's first process is
the one that says which outputs are large, and carry its samples beside their own. The float64
references are computed once per run and shared through a folder of its own.

A worker that crashes or hangs costs its current cell (``failed``, with the signal); its other
cells take turns again in a fresh worker, and a retry whose worker dies outside any cell fails
them all. When the run is asked to stop, the workers are asked to send the cells they have
finished (``turns``).

This module only moves measurements: it never measures and never writes results; it sees the run
only as a ``base.RunHandle``, and every replicate goes straight to it, which journals it.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from .. import backends
from ..host import environments
from ..host.threads import worker_cpus
from ..model.allocator import OTHER
from ..model.replicate import Replicate
from ..model.options import RunOptions
from ..model.cell import Cell, Config
from .session import RunHandle
from .pool import PER_TEST, EarlyWorkers, current as shared_pool
from .listeners import Listener, OtherState, large
from .turns import take_turns
from .worker_process import STARTUP_TIMEOUT_S, StopRequested, WorkerProcess
from .worker_setup import (allocator_note, allocator_state, job_for, judged_before, other_state_beside,
                           other_state_wanted, worker_variables)

__all__ = ["LocalExecutor"]

#: The shared references' folder of a run: this, the parent's process id, "-" and a random part.
REFERENCES_PREFIX = "arraybench-references-"


class LocalExecutor:
    """Runs a run's missing replicates in worker processes on this machine (an ``Executor``)."""

    _references: str | None = None

    def __init__(self) -> None:
        #: Workers started ahead of their replicate index (``_start_early``).
        self._early = EarlyWorkers()
        #: The configurations one of this run's workers was asked to describe (``_describes``).
        self._described: set[Config] = set()

    def _describes(self, config: Config, state: str) -> bool:
        """Whether the worker about to start reports ``config``'s code paths (``Job.describe``):
        the run's first in the headline's allocator state does; what it says holds for the rest."""
        if state == OTHER or config in self._described:
            return False
        self._described.add(config)
        return True

    def _references_for(self, config: Config) -> str | None:
        """The run's shared references for ``config``'s environment: another interpreter, or
        another version of the code (``--against``), computes its own."""
        if self._references is None:
            return None
        folder = os.path.join(self._references, config.environment.replace("/", "@") or "_")
        os.makedirs(folder, exist_ok=True)
        return folder

    def plan(self, cells: list[Cell]) -> list[Cell]:
        """The cells as given: this machine measures each once per replicate."""
        return cells

    def run(self, run: RunHandle, options: RunOptions, out_dir: Path) -> None:
        """Measure until nothing is missing, or until the run is told to stop."""
        for config in run.configs():
            # The preflight asks this interpreter's libraries: another's workers say for themselves.
            if not run.is_unavailable(config) and environments.find(options, config.environment).python is None:
                reason = backends.SPECS[config.backend].preflight(config.device)
                if reason:
                    run.mark_unavailable(config, reason)
        for note in dict.fromkeys(allocator_note(options, environments.find(options, c.environment))
                                  for c in run.configs()):
            if note:  # the records say it too; this says it before the run's minutes go by
                print(f"arraybench: {note}", file=sys.stderr)
        run.begin()
        self._described.clear()
        # References computed once and read by every worker of the run (a folder of its own,
        # never the output folder, which a received run could have filled).
        # Named by this process's id: one killed before it could clean up (SIGKILL) leaves its
        # folder behind, and the next run removes those of processes that are gone.
        environments.remove_stale_folders(prefix=REFERENCES_PREFIX)
        self._references = tempfile.mkdtemp(prefix=f"{REFERENCES_PREFIX}{os.getpid()}-")
        try:
            self._rounds(run, options, out_dir)
        except StopRequested:
            pass  # the run says it stopped; what came home before is journalled
        finally:
            self._early.close()  # those a stop, or a crash, left unused
            shutil.rmtree(self._references, ignore_errors=True)
            self._references = None

    def close(self) -> None:
        """Nothing is held between runs: each worker ends with its replicate."""

    def _rounds(self, run: RunHandle, options: RunOptions, out_dir: Path) -> None:
        rng = random.Random(options.seed)
        index = 0
        # The run may want more replicates of a cell as they come in: ask again every round.
        while index < max(run.wanted(c) for c in run.cells):
            order = [cfg for cfg in run.configs() if run.todo(cfg, index)]
            rng.shuffle(order)
            attempt = 0
            while order:  # again for the cells a worker that crashed or hung handed back
                if run.stop_requested():
                    raise StopRequested()
                order = self._measure_index(run, options, out_dir, order, index, attempt)
                attempt += 1
            index += 1

    def _measure_index(self, session: RunHandle, options: RunOptions, out_dir: Path, order: list[Config],
                       index: int, attempt: int) -> list[Config]:
        """Measure the ``index``-th replicates of ``order``'s configurations with their workers
        taking turns (``turns``); the configurations with cells handed back (a worker that
        crashed or hung) to take turns again. ``attempt``: how many times this index took turns."""
        plan = {config: cells for config in order if (cells := session.todo(config, index))}
        if not plan:
            return []
        helds: dict[Config, dict[str, tuple[Cell, Replicate]]] = {}
        environments_of = {config: environments.find(options, config.environment) for config in plan}

        def start(config: Config, cells: list[Cell]) -> tuple[WorkerProcess, Listener, dict[str, Cell]]:
            environment = environments_of[config]
            state = allocator_state(options, environment)
            held = helds.setdefault(config, {}) if other_state_wanted(options, config, state, index) else None
            remaining = {c.key: c for c in cells}
            session.worker_started(config, index, len(cells))
            worker = self._early.take((config, index, ""), remaining) \
                or self._worker(options, out_dir, config, index, cells, environment, attempt=attempt)
            return worker, Listener(session, config, index, remaining, held,
                                     allocator_note(options, environment)), remaining

        others: dict[Config, OtherState] = {}

        def start_other(config: Config, cells: list[Cell]) -> tuple[WorkerProcess, "OtherState", dict[str, Cell]]:
            remaining = {c.key: c for c in cells}
            worker = self._early.take((config, index, OTHER), remaining) \
                or self._worker(options, out_dir, config, index, cells, environments_of[config], other=True)
            others[config] = OtherState()
            return worker, others[config], remaining

        def turns(plan: dict[Config, list[Cell]], extra: dict[Config, list[Cell]]) -> dict[Config, list[Cell]]:
            return take_turns(session, plan, start, timeout=options.timeout, startup_timeout=STARTUP_TIMEOUT_S,
                              seed=hash((options.seed, index, "turns")) & 0xFFFFFFFF, extra=extra,
                              start_extra=start_other, before_prepare=self._early.hold, keep=self._keep,
                              judged=lambda cell: judged_before(session.replicates_of(cell), index),
                              retry=attempt > 0)

        try:
            self._start_early(session, options, out_dir, list(plan), environments_of, index)
            # The other allocator state of large CPU outputs takes turns beside them, in a worker of
            # its own, where the first process said which outputs are large...
            left = turns(plan, {config: [c for c in cells if large(session.replicates_of(c).get(0))]
                                for config, cells in plan.items() if other_state_beside(options, config, index)})
            # ...and after them where this is the first process, for the outputs it found large.
            after = {config: [cell for cell, _ in held.values()] for config, held in helds.items()
                     if held and config not in others}
            if after:
                turns({}, after)
            for config, held in helds.items():
                if held:
                    others[config].attach(held)
        finally:
            for held in helds.values():
                for cell, replicate in held.values():
                    session.keep(cell, index, replicate)
            self._early.close(index)  # started for this index, and needed by none of it
        return [config for config in order if config in left]

    def _worker(self, options: RunOptions, out_dir: Path, config: Config, index: int, cells: list[Cell],
                environment: environments.Environment, other: bool = False, attempt: int = 0) -> WorkerProcess:
        """A worker for ``config``'s ``index``-th replicates of ``cells`` (``other``: in the other
        allocator state; never a pool's); a retry's (``attempt``) gets another order of its cells."""
        state = OTHER if other else allocator_state(options, environment)
        job = job_for(options, out_dir, config, index, cells,
                      hash((options.seed, index, OTHER if other else attempt)) & 0xFFFFFFFF, state,
                      self._references_for(config), self._describes(config, state))
        env, name = worker_variables(options, config, environment, state)
        cpus = worker_cpus(options.threads)
        log_path = out_dir / "logs" / (f"{name}-p{index}-{OTHER}.log" if other else f"{name}-p{index}.log")
        shared = shared_pool()
        if shared is None or other or config.device != "cpu":  # a GPU's memory is not shared (``_start_early``)
            return WorkerProcess(job, env=env, cpus=cpus, log_path=log_path, python=environment.python)
        # What made the worker: a kept one made otherwise cannot take this job.
        key = (config, index, state, environment.python,
               tuple(sorted((k, v) for k, v in env.items() if k not in PER_TEST)), tuple(cpus or ()))
        worker = shared.take(key)
        if worker is not None:
            worker.assign(replace(job, reuse=True))
        else:  # its log lives as long as the worker, longer than this run's folder
            worker = WorkerProcess(replace(job, reuse=True), env=env, cpus=cpus,
                                   log_path=shared.folder / log_path.name, python=environment.python)
        worker.pool_key = key
        return worker

    def _keep(self, worker: WorkerProcess) -> bool:
        """Keep a worker that finished cleanly in the session's pool, where there is one."""
        shared, key = shared_pool(), worker.pool_key
        if shared is None or key is None:
            return False
        shared.keep(key, worker)
        return True

    def _start_early(self, session: RunHandle, options: RunOptions, out_dir: Path, order: list[Config],
                     environments_of: dict[Config, environments.Environment], index: int) -> None:
        """Start the workers of the replicate indices after ``index`` that the run wants so far
        now, beside ``index``'s (``pool.EarlyWorkers``): they wait, paused, for their index's turns."""
        wanted = max((session.wanted(c) for c in session.cells), default=0)
        for later in range(index + 1, wanted):
            for config in order:
                cells = session.todo(config, later)
                # On the CPU only: a GPU worker takes its device's memory when it starts (JAX
                # preallocates 75% of it), so two of one library alive at once would starve the
                # second; GPU workers start at their own index.
                if not cells or config.device != "cpu":
                    continue
                if (config, later, "") not in self._early:
                    worker = self._worker(options, out_dir, config, later, cells, environments_of[config])
                    self._early.add((config, later, ""), worker, cells)
                # The other allocator state's worker too: which of its cells have large outputs
                # is known only once the first index measured them, so its job has them all. Not
                # in a pytest session (a pool): its runs are one test's cells each, seldom large,
                # and a worker started for none costs each test an import.
                if other_state_beside(options, config, later) and shared_pool() is None \
                        and (config, later, OTHER) not in self._early:
                    worker = self._worker(options, out_dir, config, later, cells, environments_of[config],
                                          other=True)
                    self._early.add((config, later, OTHER), worker, cells)
