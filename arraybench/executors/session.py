"""One run in progress (its plan, journal, replicates so far), and the narrow interface an executor
sees it through (``RunHandle``, ``Executor``). A stop signal only sets a flag, read by the executor
between messages: a handler that raised could land between receiving a replicate and journalling it.
"""

from __future__ import annotations

import signal
import threading
import uuid
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from ..analysis import pairs
from ..analysis.aggregate import aggregate
from ..analysis.policy import RunState, timer_settings
from ..errors import SaveError
from ..host import git, machine, environments
from ..model.journal import Journal, JournalSink, JournalState, Reporter
from ..model.record import Record
from ..model.replicate import Replicate
from ..model.results import Results
from ..model.options import RunOptions
from ..model.cell import Cell, Config, worker_key


class RunHandle(Protocol):
    """A run in progress as an executor sees it (``Session`` implements it, and says what each does)."""

    @property
    def cells(self) -> list[Cell]: ...

    @property
    def environment(self) -> dict[str, Any]: ...

    def configs(self) -> list[Config]: ...

    def is_unavailable(self, config: Config) -> bool: ...

    def wanted(self, cell: Cell) -> int: ...

    def todo(self, config: Config, index: int) -> list[Cell]: ...

    def missing_indices(self, cell: Cell) -> list[int]: ...

    def replicates_of(self, cell: Cell) -> dict[int, Replicate]: ...

    def begin(self) -> None: ...

    def worker_started(self, config: Config, index: int, cells: int) -> None: ...

    def worker_ready(self, config: Config, index: int, info: dict[str, Any], pid: int | None) -> None: ...

    def keep(self, cell: Cell, index: int, replicate: Replicate) -> None: ...

    def mark_unavailable(self, config: Config, reason: str) -> None: ...

    def start_failed(self, config: Config, reason: str) -> None: ...

    def why_missing(self, cell: Cell, reason: str, *, overwrite: bool = True) -> None: ...

    def stop_requested(self) -> bool: ...

    def stop_now(self) -> bool: ...


class Executor(Protocol):
    """Decides where a run's replicates are measured and brings them home."""

    def plan(self, cells: list[Cell]) -> list[Cell]:
        """The run's cells as this executor measures them (a cluster may multiply them)."""

    def run(self, run: RunHandle, options: RunOptions, out_dir: Path) -> None:
        """Measure what ``run`` still lacks; return when nothing is left, nothing more can be
        measured, or the run was asked to stop."""

    def close(self) -> None:
        """Give back what the executor holds (a cluster connection)."""


class Interrupted(Exception):
    """The run was stopped by a signal; ``results`` holds what was measured before it (saved).
    ``storing``: the signal came while the finished run was being stored (its files are written)."""

    def __init__(self, results: Results, signum: int, *, storing: bool = False) -> None:
        self.results = results
        self.signum = signum
        self.storing = storing
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process ended by it (130 for Ctrl-C)."""
        return 128 + self.signum


def stop_signals() -> list[int]:
    """The signals that stop a run with what it measured kept: SIGINT, SIGTERM, and SIGHUP, SIGQUIT,
    SIGUSR1 and SIGALRM where their default would end the process (leaving paused workers behind)."""
    more = [getattr(signal, name) for name in ("SIGHUP", "SIGQUIT", "SIGUSR1", "SIGALRM") if hasattr(signal, name)]
    return [signal.SIGINT, signal.SIGTERM, *(s for s in more if signal.getsignal(s) == signal.SIG_DFL)]


class Session:
    """A run's state, journal and progress (a ``RunHandle``): ``start`` or ``resume``, then ``run``."""

    def __init__(self, state: RunState, out_dir: Path, sink: JournalSink, env: dict[str, Any],
                 reporter: Reporter | None = None) -> None:
        self.state = state
        self.out_dir = out_dir
        self.sink = sink
        self.environment = env
        self.reporter = reporter or Reporter()
        #: Why a cell is still missing where it is not an interruption (a lost node).
        self.missing_reasons: dict[str, str] = {}
        self._completed: set[str] = set()
        self._signals: list[int] = []  # stop signals received, in order

    @classmethod
    def start(cls, cells: list[Cell], options: RunOptions, out_dir: Path,
              reporter: Reporter | None = None, context: dict[str, str] | None = None,
              code: dict[str, str] | None = None) -> "Session":
        """A new run: writes the journal's header (the plan and this machine) into ``out_dir``.
        ``context``: free labels; ``code``: each workload's fingerprint, for ``--resume`` to compare."""
        env = machine.collect(options.threads)
        # Two runs started in the same second with the same plan are two runs in the store.
        env["run_id"] = uuid.uuid4().hex[:16]
        env["project"] = git.project()  # ``last`` names the latest run of the user's project
        if context:
            env["context"] = dict(context)
        if code:  # in results.json and the store too: history names a step whose code changed
            env["workload_code"] = dict(code)
        described = environments.describe(options)
        if described:  # each environment's interpreter and variables, by label
            env["environments"] = described
        sink = Journal.create(out_dir, options, cells, env, code)
        return cls(RunState(cells, options), out_dir, sink, env, reporter)

    @classmethod
    def resume(cls, journalled: JournalState, out_dir: Path,
               reporter: Reporter | None = None) -> "Session":
        """Go on with the run journalled in ``out_dir`` (as read under its lock), appending to it."""
        env = journalled.environment or machine.collect(journalled.options.threads)
        for (b, d, e), info in journalled.worker_info.items():
            machine.merge_worker_info(env, b, d, info, e)
        return cls(RunState.of(journalled), out_dir, Journal.reopen(out_dir), env, reporter)

    @property
    def cells(self) -> list[Cell]:
        """The plan's cells, in plan order."""
        return self.state.cells

    @property
    def options(self) -> RunOptions:
        """The run's options."""
        return self.state.options

    # -- the run --------------------------------------------------------------------------------
    def run(self, executor: Executor) -> Results:
        """Measure every cell not yet measured with ``executor``; the results, saved (``complete=False``
        where something could not be measured). ``Interrupted`` after a stop signal."""
        # Only the main thread may set signal handlers; run from another, the caller keeps them.
        main = threading.current_thread() is threading.main_thread()
        previous = {s: signal.getsignal(s) for s in stop_signals()} if main else {}
        for s in previous:
            signal.signal(s, self._on_signal)
        try:
            try:
                executor.run(self, self.options, self.out_dir)
            except SaveError:
                # A results.json of what the journal holds, if the disk allows, so that no older
                # one beside the journal passes for this run's (--resume writes it from the journal).
                with suppress(OSError, SaveError):
                    self.save(self.results(complete=False))
                raise
            complete, stopped = not self.missing(), bool(self._signals)
            results = self.results(complete)
            self.save(results)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.sink.close()
        self.reporter.run_finished(results)
        if stopped and not complete:
            raise Interrupted(results, self._signals[0])
        return results

    def save(self, results: Results) -> Path:
        """Write ``results.json`` into the output folder."""
        return results.save(self.out_dir / "results.json")

    def results(self, complete: bool) -> Results:
        """Records from everything measured so far."""
        errors = [{"kind": "worker", "source": worker_key(b, d, e), "error": reason}
                  for (b, d, e), reason in self.state.start_failures.items()]
        records, twins = pairs.split(self.record(c) for c in self.cells)
        checked = pairs.twin_pairs(twins, records, environments.twin_of(self.options)) if twins else []
        return Results(environment=self.environment, settings=self._settings(), records=records,
                       complete=complete, errors=errors, pairs=pairs.pairs_of(records), twins=twins,
                       self_check=checked, output_dir=self.out_dir)

    def record(self, cell: Cell) -> Record:
        """A cell's record from the replicates journalled so far."""
        state = self.state
        reps = [r for _, r in sorted(state.replicates_of(cell).items())]
        decision = state.decision(cell)
        rec = aggregate(cell, reps, decision.wanted, self.options.rel_ci, stop=decision.stop)
        if not reps:
            rec.reason = state.unavailable.get(cell.config) or self.missing_reasons.get(cell.key) or \
                "not measured (run interrupted; continue with --resume)"
            if cell.config in state.start_failures and cell.config not in state.unavailable:
                rec.status = "failed"
                rec.reason = f"{state.start_failures[cell.config]}; not measured (continue with --resume)"
        return rec

    # -- what executors ask (RunHandle) -----------------------------------------------------------
    def configs(self) -> list[Config]:
        """The (backend, device, environment) configurations of the plan, in plan order."""
        return self.state.configs()

    def is_unavailable(self, config: Config) -> bool:
        """The library or device cannot run here (journalled: its cells are final)."""
        return config in self.state.unavailable

    def wanted(self, cell: Cell) -> int:
        """How many replicates the cell should have, given those it has (``analysis.policy``)."""
        return self.state.wanted(cell)

    def todo(self, config: Config, index: int) -> list[Cell]:
        """The cells of ``config`` still lacking their ``index``-th replicate, to try now."""
        return self.state.todo(config, index)

    def missing_indices(self, cell: Cell) -> list[int]:
        """The replicate indices the cell still lacks."""
        return self.state.missing_indices(cell)

    def replicates_of(self, cell: Cell) -> dict[int, Replicate]:
        """The cell's replicates so far, by index."""
        return self.state.replicates_of(cell)

    def missing(self) -> int:
        """How many (cell, replicate) measurements are still to make (0: the run is complete)."""
        return self.state.missing()

    def stop_requested(self) -> bool:
        """A stop signal arrived: finish the measurement under way and go no further."""
        return bool(self._signals)

    def stop_now(self) -> bool:
        """A second stop signal arrived: do not wait even for the measurement under way."""
        return len(self._signals) > 1

    # -- what executors tell --------------------------------------------------------------------
    def begin(self) -> None:
        """Measuring starts: the reporter learns the total; unavailable configurations' cells are final."""
        self.reporter.run_started(self.missing())
        for config in self.configs():
            if config in self.state.unavailable:
                self._complete_config(config)

    def worker_started(self, config: Config, index: int, cells: int) -> None:
        """A worker starts on ``cells`` cells of ``config`` as their ``index``-th replicate."""
        # The environment it runs in, given only where there is one.
        where = {"environment": config.environment} if config.environment else {}
        self.reporter.worker_started(config.backend, config.device, index, cells, **where)

    def worker_ready(self, config: Config, index: int, info: dict[str, Any], pid: int | None) -> None:
        """A worker imported its library and reported what it sees (BLAS, threads, device)."""
        self.sink.worker(config.backend, config.device, index, info, pid=pid, environment=config.environment)
        machine.merge_worker_info(self.environment, config.backend, config.device, info, config.environment)

    def keep(self, cell: Cell, index: int, replicate: Replicate) -> None:
        """Journal one replicate the moment it arrives (a ``SaveError`` if it cannot be: then it is
        not counted either, so the records never hold what the journal lacks)."""
        before = self.wanted(cell)
        self.sink.replicate(cell.key, index, replicate)
        self.state.add(cell, index, replicate)
        self.reporter.replicate_done(cell, index, replicate)
        if self.wanted(cell) > before:
            self.reporter.more_wanted(cell, self.wanted(cell) - before)
        if len(self.replicates_of(cell)) >= self.wanted(cell):
            self._complete(cell)

    def mark_unavailable(self, config: Config, reason: str) -> None:
        """A library or device cannot run here: journal it, and its cells are final (skipped)."""
        self.state.unavailable[config] = reason
        self.sink.unavailable(config.backend, config.device, reason, environment=config.environment)
        # The reporter's protocol names a (backend, device): an environment's is said in the reason.
        self.reporter.config_unavailable(config.backend, config.device,
                                         f"{reason} (in environment {config.environment})" if config.environment else reason)
        self._complete_config(config)

    def start_failed(self, config: Config, reason: str) -> None:
        """A worker died before it was ready: a failure of this run, not the library's, so nothing is
        journalled (``--resume`` tries again); the configuration is not tried again in this run."""
        self.state.start_failures[config] = reason
        self._complete_config(config)

    def why_missing(self, cell: Cell, reason: str, *, overwrite: bool = True) -> None:
        """Why the cell stays missing, where it is not an interruption (a lost node); with
        ``overwrite=False`` an earlier reason stands."""
        if overwrite or cell.key not in self.missing_reasons:
            self.missing_reasons[cell.key] = reason

    def request_stop(self) -> None:
        """Stop as Ctrl-C would (a cluster node is told to stop by the head, not by a signal)."""
        self._on_signal(signal.SIGINT, None)

    # -- internals ------------------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signals.append(signum)
        if len(self._signals) == 1:
            # a terminal that hung up (SIGHUP): the stop must not fail on saying so
            with suppress(OSError):
                self.reporter.stopping(signum)

    def _complete_config(self, config: Config) -> None:
        for c in self.cells:
            if c.config == config:
                self._complete(c)

    def _complete(self, cell: Cell) -> None:
        if cell.key not in self._completed:
            self._completed.add(cell.key)
            self.reporter.record_done(self.record(cell))

    def _settings(self) -> dict[str, Any]:
        threads = self.options.threads
        return {**self.options.to_dict(), "timer": asdict(timer_settings(self.options)),
                "threads_applied": "all cores (no limit)" if threads is None else
                f"{threads}: CPU affinity, OMP/MKL/OpenBLAS variables, threadpoolctl, torch.set_num_threads"}
