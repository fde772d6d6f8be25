"""The node agent: what runs on a cluster node during a cluster run (a Ray actor and a Ray task).

``ShardRunner`` measures one shard as a local run would (a ``Session`` and the ``LocalExecutor``), but
journals into a queue of typed messages (``cluster``) that the head drains with long polls, so
a node lost mid-shard loses only what it had not sent. Ray sets ``OMP_NUM_THREADS`` and the visible
devices for what it starts; ``restore_node_environ`` gives the workers the node as it is."""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
import time
from contextlib import nullcontext, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import ray

from ..errors import command_line
from ..files import write_atomic, write_bytes_atomic
from ..host import machine
from ..host.environments import find, remove_stale_folders
from ..model.replicate import Replicate
from ..model.options import RunOptions
from ..model.journal import Reporter
from ..analysis.policy import RunState
from .session import Session
from ..workloads.trust import SHIPPED_NAME
from ..workloads.userfile import describe_exception
from .local import LocalExecutor
from .probe import interpreter_problems, python_label
from .cluster import (Ended, Interpreters, ReplicateSent, ShardJob, Started, Unavailable, WorkerInfo,
                      WorkerStarted, encode)

#: Variables Ray sets in the processes it starts; a benchmark's workers get the node's own.
RAY_SET = ("OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
SHARD_PREFIX = "arraybench-shard-"  #: then its agent's process id (``remove_stale_folders``)
#: The tail of each worker log sent home with a shard's end.
LOG_TAIL_BYTES = 64 * 1024


def restore_node_environ() -> None:
    """Undo Ray's thread and device variables in ``os.environ``: those this process was started
    with, where Linux says (``/proc/self/environ``)."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return
    initial = {k.decode(errors="replace"): v.decode(errors="replace")
               for k, sep, v in (item.partition(b"=") for item in raw.split(b"\0")) if sep}
    for var in RAY_SET:
        if var in initial:
            os.environ[var] = initial[var]
        else:
            os.environ.pop(var, None)


@ray.remote(num_cpus=0)
def node_environment(threads: int | None) -> dict[str, Any]:
    """``machine.collect()`` on the node this task is placed on."""
    restore_node_environ()
    return machine.collect(threads)


class _QueueSink:
    """Where a shard's session journals (a ``model.journal.JournalSink``): each entry goes into the
    queue the head drains, which journals it on the head's disk."""

    def __init__(self, events: "queue.Queue[dict[str, Any]]") -> None:
        self._events = events

    def replicate(self, key: str, index: int, replicate: Replicate) -> None:
        self._events.put(encode(ReplicateSent(key, index, replicate)))

    def unavailable(self, backend: str, device: str, reason: str, environment: str = "") -> None:
        self._events.put(encode(Unavailable(backend, device, environment, reason)))

    def worker(self, backend: str, device: str, index: int, info: dict[str, Any],
               pid: int | None = None, environment: str = "") -> None:
        self._events.put(encode(WorkerInfo(backend, device, environment, index, info, pid)))

    def close(self) -> None:
        """The queue stays open: the shard's ``ended`` event follows."""


class _QueueReporter(Reporter):
    """The shard's progress the head shows: each worker started (with its environment)."""

    def __init__(self, events: "queue.Queue[dict[str, Any]]") -> None:
        self._events = events

    def worker_started(self, backend: str, device: str, replicate: int, cells: int,
                       environment: str = "") -> None:
        self._events.put(encode(WorkerStarted(backend, device, environment, replicate, cells)))


@ray.remote(max_concurrency=4)
class ShardRunner:
    """Measures one shard on its node; the head calls ``start`` once, then ``poll`` until it sees
    the ``ended`` event, and ``stop`` to wind it down early."""

    def __init__(self) -> None:
        restore_node_environ()
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._session: Session | None = None
        self._stopping = False
        self._lock = threading.Lock()

    def start(self, job: dict[str, Any]) -> None:
        """Begin measuring ``job`` (a ``ShardJob`` as a dict) in a thread; messages follow."""
        self._events.put(encode(Started(time.time(), os.getpid())))
        threading.Thread(target=self._run, args=(job,), daemon=True).start()

    def poll(self, timeout: float) -> list[dict[str, Any]]:
        """The events since the last poll, waiting up to ``timeout`` seconds for the first."""
        events: list[dict[str, Any]] = []
        with suppress(queue.Empty):
            events.append(self._events.get(timeout=timeout))
            while True:
                events.append(self._events.get_nowait())
        return events

    def stop(self) -> None:
        """Finish the measurement under way and go no further (a head in a hurry kills the actor)."""
        with self._lock:
            self._stopping = True
            if self._session is not None and not self._session.stop_requested():
                self._session.request_stop()

    def _run(self, data: dict[str, Any]) -> None:
        # An agent killed mid-shard (a node lost, a cluster torn down) never reaches ``finally``.
        remove_stale_folders(prefix=SHARD_PREFIX)
        folder = Path(tempfile.mkdtemp(prefix=f"{SHARD_PREFIX}{os.getpid()}-"))
        outcome: Literal["done", "stopped", "error"] = "done"
        reason = ""
        try:
            job = ShardJob.from_dict(data)
            session = self._session_for(job, folder)
            with self._lock:
                self._session = session
                if self._stopping:  # asked before the session existed
                    session.request_stop()
            self._check_interpreters(session, job)
            LocalExecutor().run(session, session.options, folder)
            if session.stop_requested() and session.missing():
                outcome = "stopped"
        except Exception as exc:  # a bug or a broken node: said, never a silent loss
            outcome, reason = "error", describe_exception(exc)
        finally:
            logs = _log_tails(folder / "logs")
            shutil.rmtree(folder, ignore_errors=True)
            self._events.put(encode(Ended(time.time(), outcome, reason, logs)))

    def _check_interpreters(self, session: Session, job: ShardJob) -> None:
        """Each ``--python`` interpreter asked on this node before anything is measured: the
        environments of one that cannot run the worker here are unavailable on this node alone.
        The answers go home, so that the node's later shards are not asked again."""
        options = session.options
        if not options.pythons:
            return
        node = job.node or "this node"
        answers = interpreter_problems(options, known=job.interpreters)
        self._events.put(encode(Interpreters(answers)))
        with command_line() if job.command_line else nullcontext():
            for config in session.configs():
                python = find(options, config.environment).python or ""
                if answers.get(python) and not session.is_unavailable(config):
                    session.mark_unavailable(config, f"node {node}: {python_label(options, python)}: "
                                                     f"{answers[python]}")

    def _session_for(self, job: ShardJob, folder: Path) -> Session:
        """A session over the shard's cells and the replicates the head has, its files on disk here."""
        options = RunOptions.from_dict(job.options)
        (folder / "workloads").mkdir()
        files = [folder / "workloads" / f"{i}-{name}" for i, (name, _) in enumerate(job.files)]
        for path, (_, text) in zip(files, job.files):
            write_atomic(path, text, durable=False)
        options = replace(options, workload_files=[str(p) for p in files])
        if job.shipped is not None:
            write_bytes_atomic(folder / SHIPPED_NAME, job.shipped, durable=False)
        return Session(RunState(list(job.cells), options, job.done), folder, _QueueSink(self._events), {},
                       _QueueReporter(self._events))


def _log_tails(folder: Path) -> dict[str, str]:
    """The end of each worker log, by file name."""
    out = {}
    for path in sorted(folder.glob("*.log")):
        with suppress(OSError), open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
            out[path.name] = f.read().decode("utf-8", errors="replace")
    return out
