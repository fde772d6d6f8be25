"""The worker process: one library on one device, doing one ``protocol.Job`` read from stdin.

The messages go to a private copy of the original stdout; the process's own stdout is pointed at
stderr, so a library that prints cannot corrupt them. SIGTERM (or SIGINT) asks the worker to stop:
it finishes the sample under way, sends the replicates whose sampling is complete, drops the others
(a resumed run measures them again) and says ``Done``. A crash writes the Python stack to stderr
(``faulthandler``), so the parent can say on which line of a workload a segfault happened.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import platform
import random
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from ..model.replicate import OTHER
from ..model.schema import SchemaError
from .protocol import (Board, Done, Job, Message, Prepare, Prepared, Ready, ReplicateDone, Sampled, Turn,
                       Unavailable, encode)

if TYPE_CHECKING:
    from ..backends.base import Backend
    from .counters import SampleCounters
    from .sampling import Sampling
    from ..host.cpu_time import OwnThreads

#: ``host.git.SOURCE_MAP``, spelled here so that a worker imports that module (git,
#: subprocess) only in a run ``--against REF``, where it is set.
SOURCE_MAP = "ARRAYBENCH_SOURCE_MAP"


class Channel:
    """The worker's side of the protocol: a private copy of stdout, stdout itself now stderr."""

    def __init__(self) -> None:
        fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self.stream = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, message: Message) -> None:
        self.stream.write(encode(message) + "\n")  # line-buffered: written through at once


def serve() -> int:
    """Read the job from stdin, open its library on its device and do the job, then (``Job.reuse``)
    the jobs that follow on stdin for the same library, device and settings; the exit status."""
    stop = threading.Event()  # checked between samples and between cells, never mid-sample
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, lambda *_: stop.set())
    faulthandler.enable(file=sys.stderr, all_threads=False)
    channel = Channel()
    line, what = sys.stdin.readline(), "the job"
    if not line:
        return 2
    opened = backend = None
    while True:
        try:
            job = Job.from_json(line)
        except SchemaError as exc:  # a parent of another version, or a bug: one line on stderr
            print(f"arraybench worker: {what} does not fit the protocol: {exc}", file=sys.stderr)
            return 2
        if backend is None:
            started = time.perf_counter()
            backend = _open_backend(job, channel)
            if backend is None:
                return 0
            if job.threads is not None:
                backend.limit_threads(job.threads)
            opened = (job.backend, job.device, job.allow_tf32, job.threads)
        elif (job.backend, job.device, job.allow_tf32, job.threads) != opened:
            print("arraybench worker: a job for another library, device or settings", file=sys.stderr)
            return 2
        _do(job, backend, channel, stop, started)
        if not job.reuse or stop.is_set():
            return 0
        line, what = sys.stdin.readline(), "the next job"
        if not line.strip():
            return 0


def _do(job: Job, backend: "Backend", channel: Channel, stop: threading.Event, started: float) -> None:
    """Do the job's task with its library open (since ``started``, by ``perf_counter``)."""
    if job.task == "measure":
        _measure(job, backend, channel, stop, started)
        return
    info = _info(backend, started)
    if job.task == "probe":  # whether this interpreter can load workloads sent by value (--python)
        from importlib.util import find_spec

        info["cloudpickle"] = find_spec("cloudpickle") is not None
    channel.send(Ready(info=info, pid=os.getpid()))
    if job.task == "selfcheck":
        from .selfcheck import run_checks

        for outcome in run_checks(backend, job.only):
            channel.send(outcome)
    channel.send(Done())


def _open_backend(job: Job, channel: Channel) -> "Backend | None":
    """The job's backend on its device, or None once ``Unavailable`` is sent."""
    from .. import backends
    from ..backends.base import Unavailable as NotHere

    try:
        return backends.load(job.backend)(job.device, allow_tf32=job.allow_tf32)
    except NotHere as exc:
        channel.send(Unavailable(str(exc)))
    except ImportError as exc:
        channel.send(Unavailable(f"cannot import {job.backend}: {exc}"))
    except Exception as exc:  # a broken install must not look like a crash of the benchmark
        from ..workloads.userfile import describe_exception

        channel.send(Unavailable(f"{job.backend} failed to start: {describe_exception(exc)}", broken=True))
    return None


def _info(backend: "Backend", started: float, describe: bool = True) -> dict[str, Any]:
    """What ``Ready`` reports: the backend's own info, its start-up time and settings, and
    (``describe``) the code paths it runs."""
    from ..host.threads import recorded

    info = getattr(backend, "ready_info", None)  # a reused worker's library is the same
    if info is None:
        info = backend.info()
        info["startup_s"] = time.perf_counter() - started
        info["kernel_env"] = recorded(os.environ)  # as this worker ran (--threads adds limits)
        # Which interpreter and arraybench it really ran: environments (--python) differ in these.
        info["python"] = platform.python_version()
        info["executable"] = sys.executable
        info["arraybench_path"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        backend.ready_info = info  # type: ignore[attr-defined]
    if describe and not getattr(backend, "described", False):
        info.update(backend.kernels())
        backend.described = True  # type: ignore[attr-defined]
    return dict(info)


def _measure(job: Job, backend: "Backend", channel: Channel, stop: threading.Event, started: float) -> None:
    """Prepare each of the job's cells, in a shuffled order, then sample them turn by turn."""
    from .counters import SampleCounters
    from .footprint import energy_metered
    from ..host.cpu_time import OwnThreads
    from .prepare import Prepared as PreparedCell, ReferenceCache, finish, prepare
    from ..model.replicate import Replicate
    from ..workloads import REGISTRY
    from ..errors import UsageError
    from ..workloads.trust import receive
    from ..workloads.userfile import describe_exception, load_files, missing_workload_reason

    files = list(job.workload_files)
    if os.environ.get(SOURCE_MAP):  # a run --against REF: REF's environment reads REF's files
        from ..host.git import mapped

        files = [mapped(f, os.environ[SOURCE_MAP]) for f in files]
    load_errors = load_files(files, missing_ok=True).errors  # nothing raises in a worker
    if job.shipped:
        try:
            receive(job.shipped)
        except UsageError as exc:  # the shipped workloads cannot be loaded here
            load_errors[job.shipped] = str(exc)
    footprint_too = job.replicate == 0 and job.allocator != OTHER
    channel.send(Ready(info=_info(backend, started, job.describe), pid=os.getpid(),
                       ends_alone=footprint_too and energy_metered(backend)))
    try:
        word = Prepare.from_json(sys.stdin.readline())
    except SchemaError:  # the parent closed stdin (or wrote something else)
        channel.send(Done(stopped=True))
        return
    judged = set(word.judged)
    only = None if word.only is None else set(word.only)

    # Out of the collector's sight, what the imports made (~170k objects for PyTorch) is not walked
    # again in each cell's collections (80 ms each).
    gc.collect()
    gc.freeze()
    board = Board(job.board)
    settings = job.timer
    flush = backend.flush_cache() if settings.cold else None
    references = ReferenceCache(job.references)
    cells = job.cells
    order = list(range(len(cells)))
    random.Random(job.shuffle_seed).shuffle(order)
    batch: list[tuple[int, "PreparedCell"]] = []
    # Counted around each sample, attributed to the cell sampled (the reason behind a time).
    counters = SampleCounters(len(cells))
    threads = OwnThreads()
    for i in order:
        if stop.is_set():
            break
        if only is not None and i not in only:
            continue  # not this worker's after all
        cell = cells[i]
        board.mark(i)  # the cell under way, for the parent to tell a hang and where a crash was
        wl = REGISTRY.get(cell.workload)
        foreign = threads.running()  # another cell's pool, still spinning: not this one's
        try:
            p = prepare(backend, wl, cell, settings, references, seed=job.seed, flush=flush,
                        check=job.allocator != OTHER and i not in judged) if wl is not None else \
                PreparedCell(cell, Replicate.ended("failed", missing_workload_reason(cell.workload, load_errors)))
        except Exception as exc:  # prepare reports its own errors; this is a last resort
            p = PreparedCell(cell, Replicate.ended("failed", describe_exception(exc)))
        if p.run is None:
            channel.send(ReplicateDone(cell.key, p.replicate))
            continue
        p.run.pool -= foreign
        batch.append((i, p))
    if batch:
        rounds = _take_turns(job, {i: p.run for i, p in batch}, channel, stop, board, counters, threads)
        for i, p in batch:
            if stop.is_set() and not p.run.done:
                continue  # partly sampled: not a measurement with the run's settings
            board.mark(i)
            # Peak memory and energy in the first process of the headline's state only.
            replicate = finish(backend, p, footprint_too=footprint_too)
            replicate.usage = counters.usage(i)
            replicate.allocator = job.allocator  # set before the worker started
            if replicate.samples_s:
                replicate.rounds = rounds[i][:len(replicate.samples_s)]
            channel.send(ReplicateDone(cells[i].key, replicate))
        backend.free()
    counters.close()
    channel.send(Done(stopped=stop.is_set()))


def _take_turns(job: Job, runs: dict[int, "Sampling"], channel: Channel, stop: threading.Event, board: Board,
                counters: "SampleCounters", threads: "OwnThreads") -> dict[int, list[int]]:
    """Sample the prepared ``runs`` (by cell index) one sample a ``Turn``, every other worker
    paused meanwhile; the round each cell's samples were taken in."""
    from ..numeric.stopping import REWARM_BELOW_S
    from .sampling import gc_paused

    rounds: dict[int, list[int]] = {i: [] for i in runs}
    for run in runs.values():
        # A slow warm-up call kept as a sample was taken alone, in no round: nothing pairs with it.
        run.drop_samples()
    channel.send(Prepared())
    with gc_paused():
        for line in sys.stdin:
            if stop.is_set():
                break
            try:
                turn = Turn.from_json(line)
            except SchemaError as exc:
                print(f"arraybench worker: not a turn: {exc}", file=sys.stderr)
                continue
            if turn.cell < 0:
                break
            run = runs.get(turn.cell)
            if run is None:  # not a cell that samples here (it ended while being prepared)
                channel.send(Sampled(job.cells[turn.cell].key if 0 <= turn.cell < len(job.cells) else "",
                                     turn.round, True, error=True))
                continue
            board.mark(turn.cell)
            if run.pool:
                threads.settle(own=run.pool)
            counters.begin(turn.cell)
            before = len(run.samples_s)
            if run.error is None:
                # Every turn follows other processes' turns: caches and thread pools are another
                # library's (unre-warmed, PyTorch's 1M elementwise timed 21% slow).
                run.take_turn(rewarm=run.per_call_s < REWARM_BELOW_S)
            if run.regrew_last or (run.warming and run.take_back_warmup(counters.resident_growth())):
                counters.cancel()  # a warm-up sample: neither its time nor its usage count
            else:
                counters.end(turn.cell, run.calls_last)
            kept = len(run.samples_s) > before
            # Samples taken back (a batch regrown) take their rounds with them.
            del rounds[turn.cell][len(run.samples_s) - kept:]
            if kept:
                rounds[turn.cell].append(turn.round)
            channel.send(Sampled(job.cells[turn.cell].key, turn.round, run.done, error=run.error is not None,
                                 seconds=run.samples_s[-1] if kept else 0.0))
    return rounds

