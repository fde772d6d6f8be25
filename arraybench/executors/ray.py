"""Shards on a Ray cluster: one shard per node at a time, every replicate journalled as it arrives.

Each shard is a ``ShardRunner`` actor pinned to its node and reserving all of its CPUs and GPUs (plain
``ray start`` serves); it measures with the local executor's workers, and the head long-polls it. A
node lost mid-shard loses what it had not sent: ``any-node`` gives the rest to another node, once;
``every-node`` leaves it for ``--resume``. A head lost is noticed in ``HEAD_LOST_S``, before Ray would
end this process, so that what was journalled is saved. Docs: docs/cluster.md.
"""

from __future__ import annotations

import time
from collections import deque
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Literal

import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..files import write_atomic
from ..host import machine
from .cluster import (Ended, Interpreters, Message, Node, ReplicateSent, Shard, ShardJob, Started,
                      Unavailable, WorkerInfo, WorkerStarted, differences, identity, log_event,
                      merge_worker, parse, read_shard_log, restore_shard_log, select, shards)
from ..errors import UsageError, from_command_line
from ..model.replicate import Replicate
from ..model import version as arraybench_version
from ..model.options import RunOptions
from ..model.cell import Cell
from ..workloads.trust import SHIPPED_NAME
from .session import RunHandle
from .ray_agent import ShardRunner
from .ray_nodes import HeadWatch, connect, discover, first_line
from .worker_process import STOP_GRACE_S

#: How long a node's agent holds a poll open waiting for an event.
POLL_S = 2.0
#: A shard lost on this many nodes is left for --resume (it may be what kills them).
MAX_ATTEMPTS = 2


@dataclass
class _Flight:
    """A shard under way on one node."""

    shard: Shard
    node: Node
    cells: dict[str, Cell]
    actor: Any
    poll: Any
    attempt: int
    started: float | None = None
    ended: bool = False


class RayExecutor:
    """Runs a run's missing replicates as shards on a Ray cluster (an ``Executor``)."""

    #: The output folder of the run under way (shipped workloads, the nodes' logs), set by ``run``
    #: before anything reads it.
    _out_dir: Path

    def __init__(self, options: RunOptions, nodes: list[Node], *, node_wait: float = 60.0,
                 head: str | None = None) -> None:
        self.options = options
        self.nodes = nodes
        self.node_wait = node_wait
        self._driver = machine.collect(options.threads)
        self._head = HeadWatch(head)

    @classmethod
    def connect(cls, options: RunOptions, *, node_wait: float | None = None) -> "RayExecutor":
        """Connect to ``options.cluster`` and check its nodes: ``UsageError`` (before anything is
        measured or written) when none can run shards, none has ``--gpu-type``, one runs another
        arraybench, or, for ``any-node``, the nodes are not the same machine."""
        assert options.cluster is not None
        head = connect(options.cluster)
        try:
            nodes = select(discover(options.threads), options.gpu_type)
            mine = arraybench_version()
            other = [f"{n.label} has {n.environment.get('arraybench')}" for n in nodes
                     if n.environment.get("arraybench") != mine]
            if other:
                raise UsageError(f"every node must run this arraybench ({mine}); "
                                 + "; ".join(other))
            if options.on == "any-node":
                differ = differences(nodes)
                if differ:
                    raise UsageError(differ)
        except BaseException:
            ray.shutdown()
            raise
        return cls(options, nodes, node_wait=60.0 if node_wait is None else node_wait, head=head)

    def plan(self, cells: list[Cell]) -> list[Cell]:
        """The cells of the run: for ``every-node``, each cell once per node."""
        if self.options.on == "every-node":
            return [replace(c, machine=n.label) for n in self.nodes for c in cells]
        return cells

    def close(self) -> None:
        ray.shutdown()  # with the head lost too: it ends the driver's wait for it (no kill at 60 s)

    # -- the run --------------------------------------------------------------------------------
    def run(self, run: RunHandle, options: RunOptions, out_dir: Path) -> None:
        """Measure until nothing is missing, no node can measure what is, or the run is told to
        stop (the shards under way send what they finished)."""
        self._out_dir = out_dir
        before = read_shard_log(out_dir)
        self._check_resumed(before)
        self._wait_for_nodes(run)
        self._describe(run, before)
        run.begin()
        self._dispatch(run)  # a stop ends it early: the run says it stopped, what came home is journalled

    def _check_resumed(self, before: list[dict[str, Any]]) -> None:
        """An any-node run resumed on nodes unlike those it started on stops here."""
        first = next((e for e in before if e.get("type") == "nodes" and e.get("identity")), None)
        if self.options.on != "any-node" or first is None:
            return
        for n in self.nodes:
            if identity(n.environment) != first["identity"]:
                raise UsageError(f"node {n.label} is not the machine this any-node run started on "
                                 "(see its cluster.jsonl); results from it would not be comparable")

    def _wait_for_nodes(self, session: RunHandle) -> None:
        """Every-node: wait up to ``node_wait`` for the nodes the missing cells need; the cells
        of nodes still absent get a reason and stay missing."""
        if self.options.on != "every-node":
            return
        needed = {c.machine for c in session.cells if _missing(session, c)}
        deadline = time.monotonic() + self.node_wait
        while needed - {n.label for n in self.nodes} and time.monotonic() < deadline:
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
            try:
                found = select(discover(self.options.threads, environments=False), self.options.gpu_type)
            except UsageError:
                continue
            fresh = [n for n in found if n.label in needed and n.label not in {m.label for m in self.nodes}]
            if fresh:
                ready = {n.label: n for n in discover(self.options.threads)}
                self.nodes += [ready[n.label] for n in fresh if n.label in ready]
        absent = needed - {n.label for n in self.nodes}
        for c in session.cells:
            if c.machine in absent:
                session.why_missing(c, f"node {c.machine} is not in the cluster (waited "
                                       f"{self.node_wait:g} s); continue with --resume once it is back")

    def _describe(self, session: RunHandle, before: list[dict[str, Any]]) -> None:
        """The nodes as found now into the shard log, and with earlier attempts into the results."""
        found = {n.label: {**n.environment, "ray": {"node_id": n.node_id, "address": n.address,
                                                    "resources": n.resources}} for n in self.nodes}
        first = identity(self.nodes[0].environment) if self.nodes else {}
        entry = {"type": "nodes", "time": time.time(), "nodes": found,
                 "identity": first if self.options.on == "any-node" else None}
        log_event(self._out_dir, entry)
        restore_shard_log(session.environment, before + [entry], self.options.on)
        session.environment["cluster"].update({"address": self.options.cluster, "on": self.options.on,
                                               "gpu_type": self.options.gpu_type,
                                               "driver": self._driver.get("machine_id")})

    def _dispatch(self, session: RunHandle) -> None:
        every = self.options.on == "every-node"
        queues: dict[str, deque[Shard]] = {}
        for s, cells in shards(session.cells).items():
            if any(_missing(session, c) for c in cells):
                queues.setdefault(s.machine if every else "", deque()).append(s)
        attempts: dict[Shard, int] = {}
        usable = list(self.nodes)
        flights: dict[str, _Flight] = {}
        stopping_since: float | None = None
        while True:
            if stopping_since is None and session.stop_requested():
                stopping_since = time.monotonic()
                for f in flights.values():
                    f.actor.stop.remote()
            if stopping_since is None:
                for node in usable:
                    q = queues.get(node.label if every else "")
                    if node.label not in flights and q:
                        shard = q.popleft()
                        attempts[shard] = attempts.get(shard, 0) + 1
                        flights[node.label] = self._launch(session, shard, node, attempts[shard])
            if not flights:
                break
            if stopping_since is not None and (session.stop_now() or
                                               time.monotonic() - stopping_since > 2 * STOP_GRACE_S):
                for f in flights.values():
                    self._lost(session, f, "stopped at once")
                    ray.kill(f.actor, no_restart=True)
                break
            if self._head.lost():  # the whole cluster is gone: Ray is asked nothing more
                for f in flights.values():
                    self._lost(session, f, f"the cluster's head at {self._head.head} stopped answering "
                                           "(the cluster was lost) mid-shard")
                _leave(session, [s for q in queues.values() for s in q],
                       "the cluster was lost before measuring it; continue with --resume once it is back")
                break
            by_ref = {f.poll: f for f in flights.values()}
            ready, _ = ray.wait(list(by_ref), num_returns=1, timeout=0.5)
            for ref in ready:
                f = by_ref[ref]
                try:
                    events = ray.get(ref)
                except RayError as exc:
                    del flights[f.node.label]
                    usable = [n for n in usable if n.label != f.node.label]
                    self._lost(session, f, f"node {f.node.label} was lost mid-shard ({first_line(exc)})")
                    if every:
                        _leave(session, queues.pop(f.node.label, deque()), f"node {f.node.label} was lost "
                               "before measuring it; continue with --resume once it is back", overwrite=True)
                    elif attempts[f.shard] < MAX_ATTEMPTS and stopping_since is None:
                        queues.setdefault("", deque()).appendleft(f.shard)
                    continue
                for e in events:
                    message = parse(e, f"node {f.node.label}")
                    if message is not None:  # one without its shape is not acted on
                        self._handle(session, f, message)
                if f.ended:
                    del flights[f.node.label]
                    ray.kill(f.actor, no_restart=True)  # gives the node's CPUs and GPUs back
                else:
                    f.poll = f.actor.poll.remote(POLL_S)
            if not usable and any(queues.values()):
                _leave(session, [s for q in queues.values() for s in q],
                       "no node of the cluster is left to measure it; continue with --resume")
                break

    def _launch(self, session: RunHandle, shard: Shard, node: Node, attempt: int) -> _Flight:
        cells = [c for c in shards(session.cells)[shard] if _missing(session, c)]
        # All of the node's CPUs and GPUs, on that node and no other: Ray starts the actor once
        # nothing else holds any of them, and places nothing beside it until it is killed.
        actor = ShardRunner.options(
            num_cpus=node.cpus, num_gpus=node.gpus,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            max_restarts=0,
        ).remote()
        actor.start.remote(self._job(session, cells, node).to_dict())
        return _Flight(shard=shard, node=node, cells={c.key: c for c in cells}, actor=actor,
                       poll=actor.poll.remote(POLL_S), attempt=attempt)

    def _job(self, session: RunHandle, cells: list[Cell], node: Node) -> ShardJob:
        """What ``node`` needs to measure ``cells`` (see ``ShardJob``)."""
        files = tuple((Path(p).name, Path(p).read_text(encoding="utf-8")) for p in self.options.workload_files)
        shipped = self._out_dir / SHIPPED_NAME
        return ShardJob(
            options=self.options.to_dict(), cells=tuple(cells), files=files,
            shipped=shipped.read_bytes() if self.options.shipped_workloads else None,
            done={c.key: session.replicates_of(c) for c in cells}, node=node.label,
            interpreters=dict(node.interpreters),
            command_line=from_command_line())  # how the node's messages spell an option

    def _handle(self, session: RunHandle, f: _Flight, m: Message) -> None:
        """One message from a node's agent."""
        label = f.node.label
        if isinstance(m, Started):
            f.started = m.time
            log_event(self._out_dir, {"type": "shard_started", "shard": f.shard.key, "node": label,
                                      "attempt": f.attempt, "time": f.started})
        elif isinstance(m, WorkerStarted):
            session.worker_started(m.config, m.index, m.cells)
        elif isinstance(m, Interpreters):  # the node's later shards are not asked again
            f.node.interpreters.update(m.answers)
        elif isinstance(m, WorkerInfo):
            entry = {"type": "worker", "node": label, "backend": m.backend, "device": m.device,
                     "environment": m.environment, "index": m.index, "info": m.info}
            log_event(self._out_dir, entry)
            merge_worker(session.environment, entry, self.options.on)
        elif isinstance(m, ReplicateSent):
            cell = f.cells.get(m.key)
            if cell is None or m.index in session.replicates_of(cell):
                return
            m.replicate.machine = label
            session.keep(cell, m.index, m.replicate)
        elif isinstance(m, Unavailable):
            reason = m.reason
            if self.options.on == "any-node" and not reason.startswith(f"node {label}:"):
                reason += f" (on {label})"
            for cell in f.cells.values():
                if cell.config == m.config:  # on this node only: another may have what this one lacks
                    self._end_missing(session, cell, "skipped", reason, label)
        elif isinstance(m, Ended):
            f.ended = True
            self._save_logs(self._out_dir, label, m.logs)
            self._ended(session, f, m.time, m.outcome, m.reason)
            if m.outcome == "error":
                for cell in f.cells.values():
                    self._end_missing(session, cell, "failed", f"the node agent on {label} failed: {m.reason}",
                                      label)

    @staticmethod
    def _end_missing(session: RunHandle, cell: Cell, status: Literal["skipped", "failed"], reason: str,
                     label: str) -> None:
        """Each replicate ``cell`` still misses, ended with ``status`` and ``reason`` on node ``label``."""
        for i in session.missing_indices(cell):
            session.keep(cell, i, Replicate(status=status, reason=reason, machine=label))

    def _lost(self, session: RunHandle, f: _Flight, reason: str) -> None:
        self._ended(session, f, time.time(), "lost", reason)
        for cell in f.cells.values():
            session.why_missing(cell, f"{reason}; continue with --resume")

    def _ended(self, session: RunHandle, f: _Flight, ended: float, outcome: str, reason: str) -> None:
        """A shard's end, in the shard log and the run's environment."""
        entry = {"shard": f.shard.key, "node": f.node.label, "started": f.started, "ended": ended,
                 "outcome": outcome}
        log_event(self._out_dir, {"type": "shard_ended", **entry, "attempt": f.attempt, "reason": reason})
        session.environment.setdefault("cluster", {}).setdefault("shards", []).append(entry)

    @staticmethod
    def _save_logs(out: Path, label: str, logs: dict[str, str]) -> None:
        """A node's worker logs, under ``logs/<node>/`` as a local run keeps its own."""
        if not logs:
            return
        folder = out / "logs" / label
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return  # logs help; they never cost a measurement
        for name, text in logs.items():
            # a new file renamed into place: never through a link or into a pipe planted there
            with suppress(OSError):
                write_atomic(folder / Path(name).name, text)


def _missing(session: RunHandle, cell: Cell) -> bool:
    return not session.is_unavailable(cell.config) and bool(session.missing_indices(cell))


def _leave(session: RunHandle, queued: Iterable[Shard], reason: str, overwrite: bool = False) -> None:
    """The cells of shards this run will not measure, with why."""
    for shard in queued:
        for c in shards(session.cells).get(shard, []):
            session.why_missing(c, reason, overwrite=overwrite)
