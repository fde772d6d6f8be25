"""Worker processes on this machine: one per configuration and replicate index, what each is started
with, and what the parent does with its messages. The configurations of an index take turns
(``turns``); a crashed or hung worker costs its cell, and its other cells take turns again in a fresh
one. On the CPU, one index's large outputs are measured in the allocator's other state too, by a
worker beside them (or after them, in the run's first process), their samples carried beside their
own. The float64 references are computed once per run, in a folder of its own."""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import backends
from ..analysis.policy import timer_settings
from ..host import environments
from ..host.threads import choice_ignored, uncontrolled_reason, with_state, worker_cpus, worker_env
from ..model.replicate import HEADLINE, LARGE_OUTPUT_BYTES, OTHER, WORDS, Replicate, StateSamples
from ..model.cell import Cell, Config
from ..model.options import RunOptions
from ..worker.protocol import Job, Message, Ready, ReplicateDone, Unavailable
from ..workloads.trust import SHIPPED_NAME
from .pool import PER_TEST, EarlyWorkers, current as shared_pool
from .session import RunHandle
from .turns import take_turns
from .worker_process import StopRequested, WorkerProcess

#: The shared references' folder of a run: this, the parent's process id, "-" and a random part.
REFERENCES_PREFIX = "arraybench-references-"


class LocalExecutor:
    """Runs a run's missing replicates in worker processes on this machine (an ``Executor``)."""

    #: The run's folder of shared references (float64), set by ``run``.
    _references: str

    def __init__(self) -> None:
        #: Workers started ahead of their replicate index (``_start_early``).
        self._early = EarlyWorkers()
        #: The configurations one of this run's workers was asked to describe (``Job.describe``).
        self._described: set[Config] = set()

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
        # Never the output folder, which a received run could have filled; named by this process's
        # id, so that the next run removes the folder of one killed before it could clean up.
        environments.remove_stale_folders(prefix=REFERENCES_PREFIX)
        self._references = tempfile.mkdtemp(prefix=f"{REFERENCES_PREFIX}{os.getpid()}-")
        try:
            self._rounds(run, options, out_dir)
        except StopRequested:
            pass  # the run says it stopped; what came home before is journalled
        finally:
            self._early.close()  # those the run, a stop or a crash left unused
            shutil.rmtree(self._references, ignore_errors=True)

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
        """Measure ``order``'s ``index``-th replicates taking turns; the configurations whose cells
        a crashed or hung worker handed back. ``attempt``: how many times this index took turns."""
        plan = {config: cells for config in order if (cells := session.todo(config, index))}
        if not plan:
            return []
        helds: dict[Config, dict[str, tuple[Cell, Replicate]]] = {}

        def start(config: Config, cells: list[Cell]) -> tuple[WorkerProcess, Listener, dict[str, Cell]]:
            environment = environments.find(options, config.environment)
            state = allocator_state(options, environment)
            held = helds.setdefault(config, {}) if other_state_wanted(options, config, state, index) else None
            remaining = {c.key: c for c in cells}
            session.worker_started(config, index, len(cells))
            worker = self._early.take((config, index, ""), remaining) \
                or self._worker(options, out_dir, config, index, cells, attempt=attempt)
            return worker, Listener(session, config, index, remaining, held,
                                     allocator_note(options, environment)), remaining

        others: dict[Config, OtherState] = {}

        def start_other(config: Config, cells: list[Cell]) -> tuple[WorkerProcess, "OtherState", dict[str, Cell]]:
            remaining = {c.key: c for c in cells}
            worker = self._early.take((config, index, OTHER), remaining) \
                or self._worker(options, out_dir, config, index, cells, other=True)
            others[config] = OtherState(remaining)
            return worker, others[config], remaining

        def turns(plan: dict[Config, list[Cell]], extra: dict[Config, list[Cell]]) -> dict[Config, list[Cell]]:
            return take_turns(session, plan, start, timeout=options.timeout,
                              seed=hash((options.seed, index, "turns")) & 0xFFFFFFFF, extra=extra,
                              start_extra=start_other, before_prepare=self._early.hold, keep=self._keep,
                              judged=lambda cell: judged_before(session.replicates_of(cell), index),
                              retry=attempt > 0)

        try:
            self._start_early(session, options, out_dir, list(plan), index)
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
                other: bool = False, attempt: int = 0) -> WorkerProcess:
        """A worker for ``config``'s ``index``-th replicates of ``cells`` (``other``: in the other
        allocator state); a retry's (``attempt``) gets another order of its cells. In a session
        with a pool, a CPU worker comes from it where one was made alike (its state included)."""
        environment = environments.find(options, config.environment)
        state = OTHER if other else allocator_state(options, environment)
        # The run's first worker of a configuration in the headline's state reports its code paths
        # (``Job.describe``): what it says holds for the rest.
        describe = state != OTHER and config not in self._described
        if describe:
            self._described.add(config)
        # Shared references by environment: another interpreter, or another version of the code
        # (``--against``), computes its own.
        references = os.path.join(self._references, config.environment.replace("/", "@") or "_")
        os.makedirs(references, exist_ok=True)
        shared = shared_pool()
        pooled = shared is not None and config.device == "cpu"  # a GPU's memory is not shared
        job = Job(backend=config.backend, device=config.device, replicate=index, cells=tuple(cells),
                  timer=timer_settings(options), seed=options.seed,
                  shuffle_seed=hash((options.seed, index, OTHER if other else attempt)) & 0xFFFFFFFF,
                  threads=options.threads, allow_tf32=options.allow_tf32,
                  workload_files=tuple(str(Path(p).resolve()) for p in options.workload_files),
                  shipped=str((out_dir / SHIPPED_NAME).resolve()) if options.shipped_workloads else None,
                  allocator=state, references=references, describe=describe, reuse=pooled)
        env, name = worker_variables(options, config, environment, state)
        cpus = worker_cpus(options.threads)
        log_name = f"{name}-p{index}-{OTHER}.log" if other else f"{name}-p{index}.log"
        if shared is None or not pooled:
            return WorkerProcess(job, env=env, cpus=cpus, log_path=out_dir / "logs" / log_name,
                                 python=environment.python)
        # What made the worker: a kept one made otherwise cannot take this job.
        key = (config, index, state, environment.python,
               tuple(sorted((k, v) for k, v in env.items() if k not in PER_TEST)), tuple(cpus or ()))
        worker = shared.take(key)
        if worker is not None:
            worker.assign(job)
        else:  # its log lives as long as the worker, longer than this run's folder
            worker = WorkerProcess(job, env=env, cpus=cpus, log_path=shared.folder / log_name,
                                   python=environment.python)
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
                     index: int) -> None:
        """Start the workers of the replicate indices after ``index`` that the run wants so far
        now, beside ``index``'s (``pool.EarlyWorkers``): they wait, paused, for their index's turns.
        Past the first processes, the next index's too, for this index's cells: a cell given one
        more process seldom stops at it (in six quiet default runs, 30 of the 35 given a fourth got
        a fifth), and one started after it waits alone for its library to import (1.3-1.4 s)."""
        wanted = max((session.wanted(c) for c in session.cells), default=0)
        for later in early_indices(options, index, wanted):
            for config in order:
                cells = session.todo(config, later if later < wanted else index)
                # On the CPU only: a GPU worker takes its device's memory as it starts (JAX 75%),
                # which would starve the next index's worker of its library.
                if not cells or config.device != "cpu":
                    continue
                # The other allocator state's too, its job every cell (which are large is known
                # only once measured); not in a pytest session, whose small runs seldom have one.
                other = other_state_beside(options, config, later) and shared_pool() is None
                for state in ("", OTHER) if other else ("",):
                    if (config, later, state) not in self._early:
                        self._early[config, later, state] = self._worker(options, out_dir, config, later, cells,
                                                                         other=bool(state))


def early_indices(options: RunOptions, index: int, wanted: int) -> range:
    """The replicate indices whose workers start beside ``index``'s, the run wanting ``wanted``
    processes so far: those it wants and, past the first processes, one more while one is allowed."""
    ahead = options.adaptive and options.processes <= index < options.max_processes - 1 and wanted == index + 1
    return range(index + 1, wanted + ahead)


# -- what a worker is started with ----------------------------------------------------------------
def judged_before(replicates: dict[int, Replicate], index: int) -> bool:
    """Whether a process before ``index`` judged the cell's result right (``replicates``: the
    cell's so far, by index). Every process computes the same arithmetic on the same seeded
    inputs, so later ones time it without judging again (a default run's second and a half)."""
    return any(i < index and rep.status == "ok" and rep.max_rel_error is not None
               for i, rep in replicates.items())


def other_state_wanted(options: RunOptions, config: Config, state: str, index: int) -> bool:
    """Whether ``config``'s ``index``-th replicates of large outputs wait for the other state."""
    # One process says what that state costs (a second worker in every process doubled a run's
    # workers for a sentence): the second, so that it takes turns beside the first state.
    return bool(state) and config.device == "cpu" and options.allocator == "both" \
        and index == (1 if options.processes >= 2 else 0)


def other_state_beside(options: RunOptions, config: Config, index: int) -> bool:
    """Whether the other state takes turns beside ``config``'s own at ``index`` (rather than
    in a worker after them): where the first process told which outputs are large."""
    state = allocator_state(options, environments.find(options, config.environment))
    return other_state_wanted(options, config, state, index) and index >= 1


def allocator_state(options: RunOptions, environment: environments.Environment) -> str:
    """The allocator state a worker starts in; "" where a variant sets the allocator's own
    variables (the user's choice, left alone)."""
    if uncontrolled_reason({**os.environ, **environment.variables}):
        return ""
    return HEADLINE if options.allocator == "both" else options.allocator


def allocator_note(options: RunOptions, environment: environments.Environment) -> str:
    """Why the allocator state the user chose is not the one its workers run in ("" where it is)."""
    return choice_ignored(options.allocator, {**os.environ, **environment.variables})


def worker_variables(options: RunOptions, config: Config, environment: environments.Environment,
                     state: str) -> tuple[dict[str, str], str]:
    """A worker's variables (its threads, its allocator ``state`` where controlled, then its
    environment's own, which win) and the name its log goes by."""
    backend, device, label = config
    env = worker_env(os.environ, threads=options.threads, backend=backend, device=device,
                     allow_tf32=options.allow_tf32)
    if state:
        env = with_state(env, state)
    name = f"{backend}-{device}"
    if not environment.default:
        env = environments.worker_env(environment, env)
        # "@", which no label holds, keeps ``a/b+c`` and ``a+b/c`` in logs of their own.
        name += "-" + label.replace(environments.JOIN, "@")
    return env, name


# -- what the parent does with a worker's messages -------------------------------------------------
@dataclass(eq=False)
class Listener:
    """Acts on the messages of one worker: each replicate kept as it comes, or held (``held``)
    until its other allocator state is measured."""

    session: RunHandle
    config: Config
    index: int
    remaining: dict[str, Cell]
    held: dict[str, tuple[Cell, Replicate]] | None = None
    note: str = ""  # said in each replicate's warnings (the allocator state not applied)
    ready: bool = False

    def fail(self, cell: Cell, reason: str) -> None:
        """Answer ``cell`` with a failed replicate saying ``reason``."""
        self.remaining.pop(cell.key, None)
        self.session.keep(cell, self.index, Replicate.ended("failed", reason))

    def handle(self, msg: Message) -> bool:
        """Act on one message; True when the worker's configuration turned out unavailable."""
        if isinstance(msg, Ready):
            self.ready = True
            self.session.worker_ready(self.config, self.index, msg.info, msg.pid)
        elif isinstance(msg, Unavailable):
            self.session.mark_unavailable(self.config, msg.reason)
            return True
        elif isinstance(msg, ReplicateDone) and msg.key in self.remaining:
            cell = self.remaining.pop(msg.key)
            if self.note and msg.replicate.timed:
                msg.replicate.warnings.append(self.note)
            if self.held is not None and large(msg.replicate):
                self.held[msg.key] = (cell, msg.replicate)
            else:
                self.session.keep(cell, self.index, msg.replicate)
        return False


@dataclass(eq=False)
class OtherState:
    """The messages of a worker measuring large outputs in the other allocator state: its
    replicates go to the held ones (``attach``), never to the run; ``remaining``: the cells it
    has yet to answer (one that answered all may do another job)."""

    remaining: dict[str, Cell]
    ready: bool = False
    got: dict[str, Replicate] = field(default_factory=dict)
    why: str = ""

    def handle(self, msg: Message) -> bool:
        """Keep a replicate; True where the worker could not run."""
        if isinstance(msg, Ready):
            self.ready = True
        elif isinstance(msg, Unavailable):
            self.why = msg.reason
            return True
        elif isinstance(msg, ReplicateDone):
            self.got[msg.key] = msg.replicate
            self.remaining.pop(msg.key, None)
        return False

    def fail(self, cell: Cell, reason: str) -> None:
        """The worker failed: the reason every held replicate it did not reach will give."""
        self.why = self.why or reason

    def attach(self, held: dict[str, tuple[Cell, Replicate]]) -> None:
        """Give each held replicate the samples taken in the other state, or say why not."""
        for key, (_, replicate) in held.items():
            other = self.got.get(key)
            if other is not None and other.timed and other.status == "ok" and other.allocator:
                replicate.other_allocator = StateSamples(other.allocator, other.samples_s,  # type: ignore[arg-type]
                                                         other.number, other.stop_reason, other.usage)
            elif other is not None:
                replicate.warnings.append(f"not measured with {WORDS.get(other.allocator, 'the other state')}: "
                                          f"{other.reason or other.status}")
            else:
                replicate.warnings.append(f"not measured with {WORDS[OTHER]}: {self.why or 'the worker ended first'}")


def large(replicate: Replicate | None) -> bool:
    """Whether a replicate's outputs are large enough for the allocator's state to matter."""
    return (replicate is not None and replicate.status == "ok" and replicate.timed
            and bool(replicate.allocator) and (replicate.output_bytes or 0) >= LARGE_OUTPUT_BYTES)
