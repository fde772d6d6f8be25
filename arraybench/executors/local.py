"""Worker processes on this machine: one per configuration and replicate index.

Each configuration (backend, device, environment) is measured by fresh workers, one per replicate
index. The configurations of an index take turns, their workers alive together and one sampling
at a time (``turns``), so that every verdict's two sides sample the same seconds of the machine;
a run of one configuration (or ``side_by_side=False``) runs its workers one after another, each
shuffling its own cells. Two libraries never measure at once: they would compete for the cores.

Every worker starts with glibc's malloc in a known state (``host/allocator``: freed memory kept);
on the CPU, one replicate index's large outputs are measured in the other state too (fresh
pages), by a worker that takes turns beside them, and carry its samples beside their own. The
float64 references are computed once per run and shared through a folder of its own.

A worker that crashes costs its current cell (``failed``, with the signal); a fresh worker goes on
with the rest. A worker silent for longer than ``timeout`` is killed the same way. When the run is
asked to stop, the worker under way is asked to send the cells it has finished (a second stop, or
``STOP_GRACE_S``, cuts that short).

This module only moves measurements: it never measures and never writes results; it sees the run
only as a ``base.RunHandle``, and every replicate goes straight to it, which journals it.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from .. import backends
from ..host import environments
from ..host.threads import worker_cpus
from ..model.allocator import OTHER, WORDS
from ..model.replicate import Replicate
from ..model.options import RunOptions
from ..model.cell import Cell, Config
from ..worker.protocol import ReplicateDone, Unavailable
from .base import RunHandle
from .early import EarlyWorkers
from .pool import PER_TEST, current as shared_pool
from .listeners import Listener, OtherState, attach_other_state, large
from .turns import take_turns
from .worker_process import STARTUP_TIMEOUT_S, StopRequested, WorkerExited, WorkerProcess, WorkerTimeout
from .worker_setup import (allocator_note, allocator_state, job_for, judged_before, other_state_beside,
                           other_state_wanted, worker_variables)

__all__ = ["LocalExecutor"]

#: The shared references' folder of a run: this, the parent's process id, "-" and a random part.
REFERENCES_PREFIX = "arraybench-references-"

#: How long a worker asked to stop may take to send the cells it has finished.
STOP_GRACE_S = 5.0


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
            # In a session that keeps its workers, one configuration takes turns alone: a worker
            # taking turns is one that can do another job.
            if options.side_by_side and (len(order) > 1 or (order and shared_pool() is not None)):
                if run.stop_requested():
                    raise StopRequested()
                order = self._side_by_side(run, options, out_dir, order, index)
            for config in order:
                todo = run.todo(config, index)
                if todo:
                    if run.stop_requested():
                        raise StopRequested()
                    self._run_worker(run, options, out_dir, config, index, todo)
            index += 1

    def _side_by_side(self, session: RunHandle, options: RunOptions, out_dir: Path, order: list[Config],
                      index: int) -> list[Config]:
        """Measure the ``index``-th replicates of ``order``'s configurations with their workers
        taking turns (``turns``); the configurations left to measure alone (a worker that
        crashed or hung, a large CPU output's other allocator state is measured after)."""
        helds: dict[Config, dict[str, tuple[Cell, Replicate]]] = {}
        environments_of = {config: environments.find(options, config.environment) for config in order}
        states: dict[Config, str] = {}

        def start(config: Config, cells: list[Cell]) -> tuple[WorkerProcess, Listener, dict[str, Cell]]:
            environment = environments_of[config]
            state = allocator_state(options, environment)
            states[config] = state
            held = helds.setdefault(config, {}) if other_state_wanted(options, config, state, index) else None
            remaining = {c.key: c for c in cells}
            session.worker_started(config, index, len(cells))
            worker = self._early.take((config, index, ""), remaining) \
                or self._turns_worker(options, out_dir, config, index, cells, environment)
            return worker, Listener(session, config, index, remaining, held,
                                     allocator_note(options, environment)), remaining

        others: dict[Config, OtherState] = {}

        def start_other(config: Config, cells: list[Cell]) -> tuple[WorkerProcess, "OtherState", dict[str, Cell]]:
            remaining = {c.key: c for c in cells}
            worker = self._early.take((config, index, OTHER), remaining) \
                or self._turns_worker(options, out_dir, config, index, cells, environments_of[config], other=True)
            others[config] = OtherState()
            return worker, others[config], remaining

        plan = {config: session.todo(config, index) for config in order}
        # The other allocator state of large CPU outputs takes turns beside them, in a worker of
        # its own, where the first process said which outputs are large.
        extra = {config: [c for c in plan[config] if large(session.replicates_of(c).get(0))]
                 for config in order if other_state_beside(options, config, index)}
        try:
            self._start_early(session, options, out_dir, order, environments_of, index)
            left = take_turns(session, plan, start, timeout=options.timeout, startup_timeout=STARTUP_TIMEOUT_S,
                              seed=hash((options.seed, index, "turns")) & 0xFFFFFFFF, extra=extra,
                              start_extra=start_other, before_prepare=self._early.hold, keep=self._keep,
                              judged=lambda cell: judged_before(session.replicates_of(cell), index))
            for config, held in helds.items():
                if held and config in others:
                    others[config].attach(held)
                elif held:
                    self._other_state(session, options, out_dir, config, environments_of[config], index, held)
        finally:
            for held in helds.values():
                for cell, replicate in held.values():
                    session.keep(cell, index, replicate)
            self._early.close(index)  # started for this index, and needed by none of it
        return [config for config in order if config in left]

    def _turns_worker(self, options: RunOptions, out_dir: Path, config: Config, index: int, cells: list[Cell],
                      environment: environments.Environment, other: bool = False) -> WorkerProcess:
        """A worker for ``config``'s ``index``-th replicates of ``cells`` whose job takes turns
        (``other``: in the other allocator state, beside the headline's; never a pool's)."""
        state = OTHER if other else allocator_state(options, environment)
        job = replace(job_for(options, out_dir, config, index, cells,
                              hash((options.seed, index, OTHER if other else 0)) & 0xFFFFFFFF, state,
                              self._references_for(config), self._describes(config, state)), turns=True)
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
        now, beside ``index``'s (``early``): they wait, paused, for their index's turns."""
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
                    worker = self._turns_worker(options, out_dir, config, later, cells, environments_of[config])
                    self._early.add((config, later, ""), worker, cells)
                # The other allocator state's worker too: which of its cells have large outputs
                # is known only once the first index measured them, so its job has them all. Not
                # in a pytest session (a pool): its runs are one test's cells each, seldom large,
                # and a worker started for none costs each test an import.
                if other_state_beside(options, config, later) and shared_pool() is None \
                        and (config, later, OTHER) not in self._early:
                    worker = self._turns_worker(options, out_dir, config, later, cells, environments_of[config],
                                                other=True)
                    self._early.add((config, later, OTHER), worker, cells)

    def _run_worker(self, session: RunHandle, options: RunOptions, out_dir: Path, config: Config,
                    index: int, todo: list[Cell]) -> None:
        """Measure ``todo`` in fresh workers until every cell has a replicate (or the run stops).

        Workers start with glibc's malloc in the headline's allocator state (``model/allocator``).
        On the CPU, the replicates of cells whose outputs are large wait for one more worker,
        started in the other state, whose samples they carry beside their own.
        """
        # Each environment's workers start with its interpreter and variables.
        environment = environments.find(options, config.environment)
        state = allocator_state(options, environment)
        held: dict[str, tuple[Cell, Replicate]] | None = \
            {} if other_state_wanted(options, config, state, index) else None
        try:
            self._measure(session, options, out_dir, config, environment, index, todo, state, held)
            if held:
                self._other_state(session, options, out_dir, config, environment, index, held)
        finally:
            for cell, replicate in (held or {}).values():
                session.keep(cell, index, replicate)

    def _other_state(self, session: RunHandle, options: RunOptions, out_dir: Path, config: Config,
                     environment: environments.Environment, index: int,
                     held: dict[str, tuple[Cell, Replicate]]) -> None:
        """Measure the ``held`` cells in a worker started in the other allocator state and give
        each held replicate those samples; where that fails, a warning says why instead."""
        job = job_for(options, out_dir, config, index, [cell for cell, _ in held.values()],
                      hash((options.seed, index, OTHER)) & 0xFFFFFFFF, OTHER, self._references_for(config),
                      describe=False)
        env, name = worker_variables(options, config, environment, OTHER)
        log = out_dir / "logs" / f"{name}-p{index}-{OTHER}.log"
        worker = WorkerProcess(job, env=env, cpus=worker_cpus(options.threads), log_path=log,
                               python=environment.python)
        why = ""
        try:
            for msg in worker.messages(options.timeout, startup_timeout=STARTUP_TIMEOUT_S,
                                       stop=session.stop_requested):
                if isinstance(msg, Unavailable):
                    why = msg.reason
                    break
                if isinstance(msg, ReplicateDone) and msg.key in held:
                    attach_other_state(held[msg.key][1], msg.replicate)
        except StopRequested:
            worker.kill()
            raise
        except (WorkerTimeout, WorkerExited) as exc:
            worker.kill()
            why = str(exc)
        except BaseException:
            worker.kill()
            raise
        finally:
            worker.close()
        for _, replicate in held.values():
            if replicate.other_allocator is None and not any(WORDS[OTHER] in w for w in replicate.warnings):
                replicate.warnings.append(f"not measured with {WORDS[OTHER]}: {why or 'the worker ended first'}")

    def _measure(self, session: RunHandle, options: RunOptions, out_dir: Path, config: Config,
                 environment: environments.Environment, index: int, todo: list[Cell], state: str,
                 held: dict[str, tuple[Cell, Replicate]] | None) -> None:
        """Measure ``todo`` in fresh workers started in allocator ``state``; replicates of large
        CPU outputs go to ``held`` (where given) instead of to the run."""
        remaining = {c.key: c for c in todo}
        attempt = 0
        while remaining:
            job_cells = list(remaining.values())
            job = job_for(options, out_dir, config, index, job_cells,
                          hash((options.seed, index, attempt)) & 0xFFFFFFFF, state, self._references_for(config),
                          self._describes(config, state))
            env, name = worker_variables(options, config, environment, state)
            log = out_dir / "logs" / f"{name}-p{index}.log"
            session.worker_started(config, index, len(remaining))
            worker = WorkerProcess(job, env=env, cpus=worker_cpus(options.threads), log_path=log,
                                   python=environment.python)
            listener = Listener(session, config, index, remaining, held, allocator_note(options, environment))
            timeout = options.timeout

            def blamed(position: int) -> Cell | None:
                cell = job_cells[position] if 0 <= position < len(job_cells) else None
                return cell if cell is not None and cell.key in remaining else None

            try:
                for msg in worker.messages(timeout, startup_timeout=STARTUP_TIMEOUT_S,
                                           stop=session.stop_requested):
                    if listener.handle(msg):
                        return
            except StopRequested:
                self._wind_down(session, worker, listener)
                raise
            except WorkerTimeout as exc:
                worker.kill()
                if not listener.ready:
                    session.start_failed(
                        config, f"worker did not start within {max(timeout, STARTUP_TIMEOUT_S):g} s")
                    return
                cell = blamed(exc.cell)
                if cell is not None:
                    session.keep(remaining.pop(cell.key), index, Replicate.ended(
                        "failed", f"timed out after {timeout:g} s without progress (--timeout)"))
            except WorkerExited as exc:
                if not listener.ready:
                    # Dead before it was ready: killed, or its library crashed on import. A library
                    # that is merely absent says "unavailable" itself (handled by the listener).
                    session.start_failed(config, f"worker could not start: {exc}")
                    return
                cell = blamed(worker.current_cell())
                if cell is not None:
                    session.keep(remaining.pop(cell.key), index,
                                  Replicate.ended("failed", f"worker crashed: {exc}"))
                elif remaining and attempt >= 1:
                    # Died outside any cell, twice: do not loop forever on a worker that cannot go on.
                    for c in list(remaining.values()):
                        session.keep(remaining.pop(c.key), index,
                                      Replicate.ended("failed", f"worker crashed: {exc}"))
            except BaseException:
                worker.kill()  # a journal that cannot be written, say: no worker outlives the run
                raise
            finally:
                worker.close()
            attempt += 1

    def _wind_down(self, session: RunHandle, worker: WorkerProcess, listener: "Listener") -> None:
        """Ask a worker to stop, keep the cells it finished, then make sure it is gone."""
        if listener.ready:
            worker.request_stop()
            deadline = time.monotonic() + STOP_GRACE_S
            try:
                for msg in worker.messages(STOP_GRACE_S, deadline=deadline, stop=session.stop_now):
                    listener.handle(msg)
            except (StopRequested, WorkerTimeout, WorkerExited):
                pass  # a second Ctrl-C, the grace period, or the worker died: keep what came
        worker.kill()

