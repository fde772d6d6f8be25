"""Orchestration: worker processes per (backend, device), in rounds, journalled as they go.

Each (backend, device) is measured by ``processes`` fresh workers, one per round; the order of the
configurations is shuffled in every round, and each worker shuffles its cells, so slow drifts of the
machine spread over every library instead of landing on one. Workers run one at a time: two
libraries timed at once would compete for the same cores.

A worker that crashes costs its current cell (``failed``, with the signal); a fresh worker goes on
with the rest. A worker silent for longer than ``timeout`` is killed the same way. Ctrl-C or
SIGTERM stop the run cleanly: what was measured is kept and saved.
"""

from __future__ import annotations

import os
import random
import signal
from dataclasses import asdict
from pathlib import Path
from typing import Any

from . import backends, environment
from .aggregate import aggregate
from .journal import Journal, JournalState
from .plan import Cell, RunOptions
from .records import Record, Results
from .spawn import WorkerExited, WorkerProcess, WorkerTimeout
from .threads import worker_cpus, worker_env
from .timer import TimerSettings


class Interrupted(Exception):
    """The run was stopped by a signal; ``results`` holds what was measured before it."""

    def __init__(self, results: Results, signum: int) -> None:
        self.results = results
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


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


class _StopSignal(BaseException):
    def __init__(self, signum: int) -> None:
        self.signum = signum


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
        self._current: WorkerProcess | None = None
        self._completed: set[str] = set()
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
        """Measure every cell not yet measured; return (and save) the results."""
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def on_signal(signum: int, _frame: Any) -> None:
            raise _StopSignal(signum)

        for s in previous:
            signal.signal(s, on_signal)
        try:
            self._run_rounds()
        except _StopSignal as stop:
            if self._current is not None:
                self._current.kill()
            results = self.results(complete=False)
            raise Interrupted(results, stop.signum) from None
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.journal.close()
        results = self.results(complete=True)
        self.reporter.run_finished(results)
        return results

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
        remaining = sum(len(self._todo(cfg, p)) for p in range(self.options.processes)
                        for cfg in self._configs() if cfg not in self.unavailable)
        self.reporter.run_started(remaining)
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
                    self._run_worker(config, process, todo)

    def _mark_unavailable(self, config: tuple[str, str], reason: str) -> None:
        self.unavailable[config] = reason
        self.journal.unavailable(config[0], config[1], reason)
        self.reporter.config_unavailable(config[0], config[1], reason)
        self._emit_complete(config)

    def _run_worker(self, config: tuple[str, str], process: int, todo: list[Cell]) -> None:
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
            self._current = worker
            ready = False

            def blamed(index: int) -> Cell | None:
                cell = job_cells[index] if 0 <= index < len(job_cells) else None
                return cell if cell is not None and cell.key in remaining else None

            try:
                for msg in worker.messages(timeout=self.options.timeout):
                    event = msg.get("event")
                    if event == "ready":
                        ready = True
                        self.journal.worker(backend, device, process, msg.get("info", {}))
                        environment.merge_worker_info(self.env, backend, device, msg.get("info", {}))
                    elif event == "unavailable":
                        self._mark_unavailable(config, msg.get("reason", "unavailable"))
                        return
                    elif event == "shard" and msg.get("key") in remaining:
                        self._store(remaining.pop(msg["key"]), process, msg.get("shard", {}))
            except WorkerTimeout as exc:
                worker.kill()
                if not ready:
                    self._mark_unavailable(
                        config, f"worker did not start within {self.options.timeout:g} s")
                    return
                cell = blamed(exc.cell)
                if cell is not None:
                    self._store(remaining.pop(cell.key), process, {
                        "status": "failed",
                        "reason": f"timed out after {exc.waited:.0f} s (--timeout {self.options.timeout:g})",
                    })
            except WorkerExited as exc:
                if not ready:
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
                self._current = None
            attempt += 1

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


def run(cells: list[Cell], options: RunOptions, out_dir: Path,
        reporter: Reporter | None = None) -> Results:
    """Run a plan into ``out_dir`` (created if needed) and return the results."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return Runner(cells, options, out_dir, reporter).run()

