"""What the head asks a cluster node's agent and what the agent answers: one ``ShardJob`` in, typed
messages out (the cluster's counterpart of ``worker/protocol.py``), carried by Ray as plain dicts.
Each side checks what it gets against these declarations (``model.schema``): a job without its shape
fails the shard, a message without it is not acted on, a malformed replicate is a failed one.
Nothing here imports Ray: the round trip is tested without a cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union

from ..model import schema
from ..model.cell import Cell, Config
from ..model.replicate import Replicate


@dataclass(frozen=True)
class ShardJob:
    """What a node needs to measure a shard's cells: the run's options, the workload files' text
    (the node has its own disk), the shipped workloads, the replicates already journalled (by cell
    key, then index), the node's label, what its earlier shards found of the ``--python``
    interpreters there, and whether messages spell an option as the command line does."""

    options: dict[str, Any]
    cells: tuple[Cell, ...]
    files: tuple[tuple[str, str], ...] = ()
    shipped: bytes | None = None
    done: dict[str, dict[int, Replicate]] = field(default_factory=dict)
    node: str = ""
    interpreters: dict[str, str] = field(default_factory=dict)
    command_line: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The job as Ray carries it: plain data (the shipped workloads as bytes)."""
        return {"options": self.options, "cells": [c.to_dict() for c in self.cells],
                "files": [list(f) for f in self.files], "shipped": self.shipped,
                "done": {key: {str(i): r.to_dict() for i, r in have.items()} for key, have in self.done.items()},
                "node": self.node, "interpreters": dict(self.interpreters), "command_line": self.command_line}

    @classmethod
    def from_dict(cls, data: Any) -> "ShardJob":
        """The job in ``data``; ``schema.SchemaError`` names a field that does not fit."""
        plain = schema.from_json(_PlainJob, data, where="shard job")
        if plain.shipped is not None and not isinstance(plain.shipped, bytes):
            raise schema.SchemaError(f"shard job.shipped: expected bytes, got {type(plain.shipped).__name__}")
        done = {}
        for key, have in plain.done.items():
            if not all(i.isdigit() for i in have):
                raise schema.SchemaError(f"shard job.done.{key}: replicate indices must be numbers")
            done[key] = {int(i): Replicate.from_dict(r, f"shard job.done.{key}.{i}") for i, r in have.items()}
        return cls(options=plain.options,
                   cells=tuple(Cell.from_dict(c, f"shard job.cells[{i}]") for i, c in enumerate(plain.cells)),
                   files=plain.files, shipped=plain.shipped, done=done, node=plain.node,
                   interpreters=plain.interpreters, command_line=plain.command_line)


@dataclass(frozen=True)
class _PlainJob:
    """The job's shape as ``schema`` checks it (cells, replicates and bytes have readers of their own)."""

    options: dict[str, Any]
    cells: list[Any]
    files: tuple[tuple[str, str], ...] = ()
    shipped: Any = None
    done: dict[str, dict[str, Any]] = field(default_factory=dict)
    node: str = ""
    interpreters: dict[str, str] = field(default_factory=dict)
    command_line: bool = False


@dataclass(frozen=True)
class Started:
    """The agent took the job (its process id, and when, by its clock)."""

    EVENT: ClassVar[str] = "started"
    time: float
    pid: int


@dataclass(frozen=True)
class WorkerStarted:
    """The shard's session started a worker for ``config``, replicate ``index``, for ``cells`` cells."""

    EVENT: ClassVar[str] = "worker_started"
    backend: str
    device: str
    environment: str
    index: int
    cells: int

    @property
    def config(self) -> Config:
        return Config(self.backend, self.device, self.environment)


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker reported of its library and device (``info``), for the run's environment."""

    EVENT: ClassVar[str] = "worker"
    backend: str
    device: str
    environment: str
    index: int
    info: dict[str, Any]
    pid: int | None = None


@dataclass(frozen=True)
class Interpreters:
    """The node's answers on the ``--python`` interpreters: ``{interpreter: problem, "" if none}``."""

    EVENT: ClassVar[str] = "interpreters"
    answers: dict[str, str]


@dataclass(frozen=True)
class ReplicateSent:
    """Replicate ``index`` of the cell ``key`` is measured (or failed, or was skipped)."""

    EVENT: ClassVar[str] = "replicate"
    key: str
    index: int
    replicate: Replicate


@dataclass(frozen=True)
class Unavailable:
    """A library cannot run on this node (``reason``); its cells of the shard are skipped here."""

    EVENT: ClassVar[str] = "unavailable"
    backend: str
    device: str
    environment: str
    reason: str

    @property
    def config(self) -> Config:
        return Config(self.backend, self.device, self.environment)


@dataclass(frozen=True)
class Ended:
    """The shard is over: ``done``, ``stopped`` early, or ``error`` (``reason`` says which); the
    tail of each worker log, by file name."""

    EVENT: ClassVar[str] = "ended"
    time: float
    outcome: Literal["done", "stopped", "error"]
    reason: str = ""
    logs: dict[str, str] = field(default_factory=dict)


Message = Union[Started, WorkerStarted, WorkerInfo, Interpreters, ReplicateSent, Unavailable, Ended]
_TYPES: dict[str, type] = {t.EVENT: t for t in (Started, WorkerStarted, WorkerInfo, Interpreters,
                                                ReplicateSent, Unavailable, Ended)}


def encode(message: Message) -> dict[str, Any]:
    """One message as the plain dict Ray carries, its type named by ``event``."""
    if isinstance(message, ReplicateSent):  # the replicate's own format (its inf and NaN as null)
        data: dict[str, Any] = {"key": message.key, "index": message.index,
                                "replicate": message.replicate.to_dict()}
    else:
        data = schema.to_json(message)
    return {"event": message.EVENT, **data}


def parse(data: Any, sender: str = "the node") -> Message | None:
    """The message in ``data`` from a node's agent (``sender``: how a malformed replicate names
    it), or None for one that is not a message."""
    if not isinstance(data, dict):
        return None
    cls = _TYPES.get(data.get("event"))  # type: ignore[arg-type]
    if cls is None:
        return None
    if cls is ReplicateSent:
        key, index = data.get("key"), data.get("index")
        if not isinstance(key, str) or not isinstance(index, int) or isinstance(index, bool):
            return None
        try:
            replicate = Replicate.from_dict(data.get("replicate"))
        except schema.SchemaError as exc:
            replicate = Replicate.ended("failed", f"{sender} sent a malformed measurement ({exc})")
        return ReplicateSent(key, index, replicate)
    try:
        return schema.from_json(cls, data)
    except schema.SchemaError:
        return None
