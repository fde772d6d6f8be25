"""Orchestration: worker processes per (backend, device), in rounds, journalled as they go.

Each (backend, device) is measured by ``processes`` fresh workers, one per round; the order of the
configurations is shuffled in every round, and each worker shuffles its cells, so slow drifts of the
machine spread over every library instead of landing on one. Workers run one at a time: two
libraries timed at once would compete for the same cores.

A worker that crashes costs its current cell (``failed``, with the signal); a fresh worker goes on
with the rest. A worker silent for longer than ``timeout`` is killed the same way. Ctrl-C or
SIGTERM stop the run cleanly: the worker under way is asked to send the cells it has finished
(a second Ctrl-C, or ``STOP_GRACE_S``, cuts that short), and what was measured is kept and saved.

Signals only set a flag, which is read between messages: a handler that raised could land between
receiving a shard and journalling it, and lose exactly what this module exists to keep.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from . import backends, environment
from .aggregate import aggregate
from .journal import Journal, JournalState
from .plan import Cell, RunOptions
from .records import Record, Results
from .spawn import STARTUP_TIMEOUT_S, StopRequested, WorkerExited, WorkerProcess, WorkerTimeout
from .threads import worker_cpus, worker_env
from .timer import TimerSettings


#: How long a worker asked to stop may take to send the cells it has finished.
STOP_GRACE_S = 5.0


class Interrupted(Exception):
    """The run was stopped by a signal; ``results`` holds what was measured before it."""

    def __init__(self, results: Results, signum: int) -> None:
        self.results = results
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process ended by it (130 for Ctrl-C)."""
        return 128 + self.signum


class Reporter:
    """What the runner tells a user interface as it goes; this base says nothing."""

    def run_started(self, total: int) -> None:
        """``total`` measurements (cells times processes) are about to be made."""

    def worker_started(self, backend: str, device: str, process: int, cells: int) -> None:
        """A worker process starts on ``cells`` cells."""

    def config_unavailable(self, backend: str, device: str, reason: str) -> None:
        """A library or device cannot run here; its cells are skipped."""

    def shard_done(self, cell: Cell, process: int, shard: dict[str, Any]) -> None:
        """One process finished one cell."""

    def record_done(self, record: Record) -> None:
        """A cell's record is final (all its processes are done, or it was skipped)."""

    def run_finished(self, results: Results) -> None:
        """The run is over."""

    # Optional (looked up with getattr, so older reporters keep working):
    # def stopping(self, signum: int) -> None: told once, when a stop signal arrives.



def timer_settings(options: RunOptions) -> dict[str, Any]:
    """Per-process timer settings: the cell's budget and sample floor are shared by its processes."""
    p = options.processes
    return asdict(TimerSettings(
        target_sample_s=options.target_sample,
        min_samples=max(3, -(-options.min_samples // p)),
        budget_s=options.max_time / p,
        rel_ci=options.rel_ci,
        warmup_s=options.warmup,
        cold=options.cold,
    ))


class Runner:
    """Runs a plan; use ``Runner(...).run()``."""

    def __init__(self, cells: list[Cell], options: RunOptions, out_dir: Path,
                 reporter: Reporter | None = None, *, resume: JournalState | None = None) -> None:
        self.cells = cells
        self.options = options
        self.out_dir = out_dir
        self.reporter = reporter or Reporter()
        self.shards: dict[str, dict[int, dict[str, Any]]] = {}
        self.unavailable: dict[tuple[str, str], str] = {}
        self.env: dict[str, Any]
        self._completed: set[str] = set()
        self._signals: list[int] = []  # stop signals received, in order
        if resume is not None:
            self.env = resume.environment or environment.collect(options.threads)
            self.shards = {k: dict(v) for k, v in resume.shards.items()}
            self.unavailable = dict(resume.unavailable)
            for (b, d), info in resume.worker_info.items():
                environment.merge_worker_info(self.env, b, d, info)
            self.journal = Journal.reopen(out_dir)
        else:
            self.env = environment.collect(options.threads)
            self.journal = Journal.create(out_dir, options, cells, self.env)

    # -- public ---------------------------------------------------------------------------------
    def run(self) -> Results:
        """Measure every cell not yet measured; return (and save) the results.

        Raises ``Interrupted`` (with the partial results, saved) after SIGINT or SIGTERM.
        """
        # Only the main thread may set signal handlers; run from another, the caller keeps them.
        main = threading.current_thread() is threading.main_thread()
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
        for s in previous:
            signal.signal(s, self._on_signal)
        try:
            try:
                self._run_rounds()
            except StopRequested:
                pass
            if self._signals and self.missing():
                raise Interrupted(self.results(complete=False), self._signals[0])
            results = self.results(complete=True)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.journal.close()
        self.reporter.run_finished(results)
        return results

    def missing(self) -> int:
        """How many (cell, process) measurements are still to make (0: the run is complete)."""
        return sum(len(self._todo(cfg, p)) for p in range(self.options.processes)
                   for cfg in self._configs() if cfg not in self.unavailable)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signals.append(signum)
        if len(self._signals) == 1:
            stopping = getattr(self.reporter, "stopping", None)
            if stopping is not None:
                stopping(signum)

    def _stop_requested(self) -> bool:
        return bool(self._signals)

    def results(self, complete: bool) -> Results:
        """Records from everything measured so far, saved to ``results.json``."""
        records = [self._record(c) for c in self.cells]
        results = Results(environment=self.env, settings=self._settings(), records=records,
                          complete=complete)
        results.save(self.out_dir / "results.json")
        return results

    # -- rounds ---------------------------------------------------------------------------------
    def _configs(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys(c.config for c in self.cells))

    def _todo(self, config: tuple[str, str], process: int) -> list[Cell]:
        return [c for c in self.cells
                if c.config == config and process not in self.shards.get(c.key, {})]

    def _run_rounds(self) -> None:
        for config in self._configs():
            if config not in self.unavailable:
                reason = backends.SPECS[config[0]].preflight(config[1])
                if reason:
                    self._mark_unavailable(config, reason)
        self.reporter.run_started(self.missing())
        for config in self._configs():
            if config in self.unavailable:
                self._emit_complete(config)
        rng = random.Random(self.options.seed)
        for process in range(self.options.processes):
            order = self._configs()
            rng.shuffle(order)
            for config in order:
                if config in self.unavailable:
                    continue
                todo = self._todo(config, process)
                if todo:
                    if self._stop_requested():
                        raise StopRequested()
                    self._run_worker(config, process, todo)

    def _mark_unavailable(self, config: tuple[str, str], reason: str) -> None:
        self.unavailable[config] = reason
        self.journal.unavailable(config[0], config[1], reason)
        self.reporter.config_unavailable(config[0], config[1], reason)
        self._emit_complete(config)

    def _run_worker(self, config: tuple[str, str], process: int, todo: list[Cell]) -> None:
        """Measure ``todo`` in fresh workers until every cell has a shard (or the run stops)."""
        backend, device = config
        remaining = {c.key: c for c in todo}
        attempt = 0
        while remaining:
            job_cells = list(remaining.values())
            job = {
                "backend": backend, "device": device, "process": process,
                "cells": [c.to_dict() for c in job_cells],
                "timer": timer_settings(self.options), "seed": self.options.seed,
                "shuffle_seed": hash((self.options.seed, process, attempt)) & 0xFFFFFFFF,
                "threads": self.options.threads, "allow_tf32": self.options.allow_tf32,
                "workload_files": [str(Path(p).resolve()) for p in self.options.workload_files],
            }
            env = worker_env(os.environ, threads=self.options.threads, backend=backend,
                             device=device, allow_tf32=self.options.allow_tf32)
            log = self.out_dir / "logs" / f"{backend}-{device}-p{process}.log"
            self.reporter.worker_started(backend, device, process, len(remaining))
            worker = WorkerProcess(job, env=env, cpus=worker_cpus(self.options.threads), log_path=log)
            session = _Session(config, process, remaining)
            timeout = self.options.timeout

            def blamed(index: int) -> Cell | None:
                cell = job_cells[index] if 0 <= index < len(job_cells) else None
                return cell if cell is not None and cell.key in remaining else None

            try:
                for msg in worker.messages(timeout, startup_timeout=STARTUP_TIMEOUT_S,
                                           stop=self._stop_requested):
                    if self._handle(msg, session):
                        return
            except StopRequested:
                self._wind_down(worker, session)
                raise
            except WorkerTimeout as exc:
                worker.kill()
                if not session.ready:
                    self._mark_unavailable(
                        config, f"worker did not start within {max(timeout, STARTUP_TIMEOUT_S):g} s")
                    return
                cell = blamed(exc.cell)
                if cell is not None:
                    self._store(remaining.pop(cell.key), process, {
                        "status": "failed",
                        "reason": f"timed out after {timeout:g} s without progress (--timeout)",
                    })
            except WorkerExited as exc:
                if not session.ready:
                    self._mark_unavailable(config, f"worker could not start: {exc}")
                    return
                cell = blamed(worker.current_cell())
                if cell is not None:
                    self._store(remaining.pop(cell.key), process, {
                        "status": "failed", "reason": f"worker crashed: {exc}",
                    })
                elif remaining and attempt >= 1:
                    # Died outside any cell, twice: do not loop forever on a worker that cannot go on.
                    for c in list(remaining.values()):
                        self._store(remaining.pop(c.key), process, {
                            "status": "failed", "reason": f"worker crashed: {exc}"})
            finally:
                worker.close()
            attempt += 1

    def _handle(self, msg: dict[str, Any], session: "_Session") -> bool:
        """Act on one message from a worker; True when the worker's configuration is unavailable."""
        backend, device = session.config
        event = msg.get("event")
        if event == "ready":
            session.ready = True
            info = msg.get("info", {})
            self.journal.worker(backend, device, session.process, info, pid=msg.get("pid"))
            environment.merge_worker_info(self.env, backend, device, info)
        elif event == "unavailable":
            self._mark_unavailable(session.config, msg.get("reason", "unavailable"))
            return True
        elif event == "shard" and msg.get("key") in session.remaining:
            self._store(session.remaining.pop(msg["key"]), session.process, msg.get("shard", {}))
        return False

    def _wind_down(self, worker: WorkerProcess, session: "_Session") -> None:
        """Ask a worker to stop, keep the cells it finished, then make sure it is gone."""
        if session.ready:
            worker.request_stop()
            deadline = time.monotonic() + STOP_GRACE_S
            try:
                for msg in worker.messages(STOP_GRACE_S, deadline=deadline,
                                           stop=lambda: len(self._signals) > 1):
                    self._handle(msg, session)
            except (StopRequested, WorkerTimeout, WorkerExited):
                pass  # a second Ctrl-C, the grace period, or the worker died: keep what came
        worker.kill()

    def _store(self, cell: Cell, process: int, shard: dict[str, Any]) -> None:
        self.shards.setdefault(cell.key, {})[process] = shard
        self.journal.shard(cell.key, process, shard)
        self.reporter.shard_done(cell, process, shard)
        if len(self.shards[cell.key]) >= self.options.processes:
            self._complete(cell)

    def _emit_complete(self, config: tuple[str, str]) -> None:
        for c in self.cells:
            if c.config == config:
                self._complete(c)

    def _complete(self, cell: Cell) -> None:
        if cell.key not in self._completed:
            self._completed.add(cell.key)
            self.reporter.record_done(self._record(cell))

    def _record(self, cell: Cell) -> Record:
        shards = [s for _, s in sorted(self.shards.get(cell.key, {}).items())]
        if not shards and cell.config in self.unavailable:
            rec = aggregate(cell, [], self.options.processes, self.options.rel_ci)
            rec.reason = self.unavailable[cell.config]
            return rec
        rec = aggregate(cell, shards, self.options.processes, self.options.rel_ci)
        if not shards:
            rec.reason = "not measured (run interrupted; continue with --resume)"
        return rec

    def _settings(self) -> dict[str, Any]:
        settings = self.options.to_dict()
        settings["timer"] = timer_settings(self.options)
        settings["threads_applied"] = (
            "all cores (no limit)" if self.options.threads is None else
            f"{self.options.threads}: CPU affinity, OMP/MKL/OpenBLAS variables, threadpoolctl, "
            "torch.set_num_threads"
        )
        return settings


class _Session:
    """What the runner knows about the worker it is listening to."""

    def __init__(self, config: tuple[str, str], process: int, remaining: dict[str, Cell]) -> None:
        self.config = config
        self.process = process
        self.remaining = remaining
        self.ready = False


def run(cells: list[Cell], options: RunOptions, out_dir: Path,
        reporter: Reporter | None = None) -> Results:
    """Run a plan into ``out_dir`` (created if needed) and return the results."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return Runner(cells, options, out_dir, reporter).run()

