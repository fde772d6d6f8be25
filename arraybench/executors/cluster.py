"""A run across a cluster, without Ray (so that its round trip is tested without one): nodes, shards,
the shard log, and what the head and a node's agent say to each other (``executors/ray.py`` talks to Ray).

A **shard** is one (workload, size) with all its libraries and devices, measured on one node, so that
every ratio between libraries comes from one machine; it reserves all of its node's CPUs and GPUs, so at
most one shard runs on a node at a time. ``every-node`` measures the plan on each node; ``any-node``
splits it across nodes that must be one machine (``identity``). The head sends one ``ShardJob``; typed
messages come back as plain dicts, each checked against its declaration (``model.schema``): a job
without its shape fails the shard, a message without it is not acted on, a malformed replicate fails.
"""

from __future__ import annotations

import json
from contextlib import suppress
import os
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Literal, Union, get_args

from ..errors import UsageError
from ..model import schema
from ..model.cell import Cell, Config
from ..model.options import RunOptions
from ..model.replicate import Replicate

#: The Ray node label that names a node in results (``ray start --labels arraybench/node=NAME``).
NAME_LABEL = "arraybench/node"
PLACEMENTS = ("every-node", "any-node")
#: Ray's resource for a node's accelerator type (``accelerator_type:H100``).
ACCELERATOR_PREFIX = "accelerator_type:"


@dataclass
class Node:
    """One node of a Ray cluster, as arraybench sees it."""

    label: str
    node_id: str
    address: str
    resources: dict[str, float] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)  # ``machine.collect()`` on the node
    free: bool | None = None  # none of its CPUs and GPUs reserved now (None: Ray does not say)
    #: What its shards found of the run's ``--python`` interpreters: {interpreter: problem or ""}.
    interpreters: dict[str, str] = field(default_factory=dict)

    @property
    def takes_shards(self) -> bool:
        """Whether a shard can reserve the node: it offers Ray at least one CPU."""
        return self.cpus > 0

    @property
    def gpu_types(self) -> list[str]:
        """Ray's accelerator types of the node ("H100"), from its resources."""
        return sorted(k[len(ACCELERATOR_PREFIX):] for k in self.resources if k.startswith(ACCELERATOR_PREFIX))

    @property
    def cpus(self) -> float:
        return float(self.resources.get("CPU", 0))

    @property
    def gpus(self) -> float:
        return float(self.resources.get("GPU", 0))


def labels(names: list[str], node_ids: list[str]) -> list[str]:
    """A label per node: its name, made unique with the start of its Ray node id where two nodes
    share one (two nodes on one host without ``arraybench/node`` labels), and safe in file names."""
    safe = [re.sub(r"[^A-Za-z0-9._-]+", "-", n).strip("-.") or "node" for n in names]
    return [f"{name}-{node_id[:6]}" if safe.count(name) > 1 else name for name, node_id in zip(safe, node_ids)]


def check_options(options: RunOptions) -> None:
    """``UsageError`` for cluster options that make no sense (``--on`` without ``--cluster``...)."""
    if options.on not in PLACEMENTS:
        raise UsageError(f"unknown --on {options.on!r}; valid: {', '.join(PLACEMENTS)}")
    if options.cluster is None and (options.on != PLACEMENTS[0] or options.gpu_type):
        raise UsageError("--on and --gpu-type choose nodes of a cluster: give --cluster ADDRESS too")
    if options.cluster is not None and not (isinstance(options.cluster, str) and options.cluster.strip()):
        raise UsageError("--cluster needs an address: auto, HOST:PORT or ray://HOST:10001")


def select(nodes: Iterable[Node], gpu_type: str | None) -> list[Node]:
    """The nodes a run may use: those that take shards and, with ``gpu_type``, have that
    accelerator; ``UsageError`` when none is left, saying what the cluster has instead."""
    measuring = [n for n in nodes if n.takes_shards]
    if not measuring:
        raise UsageError("no node of the cluster offers Ray a CPU to measure on (a head started with "
                         "--num-cpus 0 takes no shards): add a node with `ray start --address HEAD` "
                         "(docs/cluster.md)")
    if gpu_type is None:
        return measuring
    chosen = [n for n in measuring if gpu_type in n.gpu_types]
    if not chosen:
        have = sorted({t for n in measuring for t in n.gpu_types})
        raise UsageError(f"--gpu-type {gpu_type}: no node that takes shards has that accelerator type "
                         f"(the nodes have: {', '.join(have) or 'no accelerator'})")
    return chosen


def is_free(total: dict[str, float], available: dict[str, float]) -> bool:
    """Whether a node whose Ray resources are ``total`` has all of its CPUs and GPUs ``available``."""
    return all(available.get(r, 0) >= total.get(r, 0) for r in ("CPU", "GPU"))


def identity(env: dict[str, Any]) -> dict[str, Any]:
    """What makes a node's results comparable to another's: its fingerprint without the host
    hash, its Python, arraybench and library versions."""
    fp = {k: v for k, v in (env.get("fingerprint") or {}).items() if k != "host_sha"}
    return {**fp, **{k: env.get(k) for k in ("python", "arraybench", "libraries")}}


def differences(nodes: list[Node]) -> str | None:
    """None where every node has one identity; else which nodes differ from the first, and in what."""
    base = identity(nodes[0].environment) if nodes else {}
    parts = []
    for n in nodes[1:]:
        other = identity(n.environment)
        diff = [f"{k} {_short(other.get(k))} (vs {_short(base.get(k))})"
                for k in sorted(set(base) | set(other)) if base.get(k) != other.get(k)]
        if diff:
            parts.append(f"{n.label}: {', '.join(diff)}")
    if not parts:
        return None
    return (f"--on any-node needs identical nodes, and these differ from {nodes[0].label}: "
            + "; ".join(parts) + ". Compare them with --on every-node, or choose nodes with --gpu-type")


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} {v}" for k, v in value.items() if v) + "}"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Shard:
    """One (workload, size) of the plan, on one machine for an every-node run ("" for any-node)."""

    workload: str
    size_label: str
    machine: str = ""

    @property
    def key(self) -> str:
        return f"{self.workload}|{self.size_label}" + (f"@{self.machine}" if self.machine else "")


def shards(cells: Iterable[Cell]) -> dict[Shard, list[Cell]]:
    """The cells grouped into shards, in plan order."""
    out: dict[Shard, list[Cell]] = {}
    for c in cells:
        out.setdefault(Shard(c.workload, c.size_label, c.machine), []).append(c)
    return out


# -- the shard log: DIR/cluster.jsonl beside the journal, one fsynced line per event -------------
# The journal stays the source of truth for measurements; this log lets ``--resume`` describe nodes
# that have since left, and shows that no two shards shared a node. Entries (``type``): ``nodes``,
# ``shard_started``, ``shard_ended``, ``worker``.
LOG_NAME = "cluster.jsonl"


def log_event(out_dir: Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` to the run's shard log as one fsynced line."""
    with open(out_dir / LOG_NAME, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(entry, allow_nan=False, default=str) + "\n")
        stream.flush()
        os.fsync(stream.fileno())


def read_shard_log(out_dir: Path) -> list[dict[str, Any]]:
    """The entries of a run's shard log ([] where there is none); a torn or damaged line is
    skipped: the log describes, the journal decides."""
    try:
        text = (out_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    entries = []
    for line in text.splitlines():
        with suppress(ValueError, RecursionError):
            entries.append(json.loads(line))
    return [e for e in entries if isinstance(e, dict)]


def merge_worker(env: dict[str, Any], entry: dict[str, Any], on: str) -> None:
    """A shard log's ``worker`` entry into a run's environment: under its node, and at the top for any-node."""
    from ..host.machine import merge_worker_info

    node = env.setdefault("machines", {}).setdefault(str(entry.get("node")), {})
    for into in (node, env) if on == "any-node" else (node,):
        merge_worker_info(into, str(entry.get("backend")), str(entry.get("device")), entry["info"],
                          str(entry.get("environment") or ""))  # the environment it ran in


def restore_shard_log(env: dict[str, Any], entries: list[dict[str, Any]], on: str) -> None:
    """Fold a shard log into a run's environment: each node's environment and its workers'
    reports under ``machines``, the shards under ``cluster["shards"]``; for an any-node run (its
    nodes are one machine) the nodes' environment at the top, in place of the driver's."""
    machines = env.setdefault("machines", {})
    shards = []
    for e in entries:
        kind = e.get("type")
        if kind == "nodes" and isinstance(e.get("nodes"), dict):
            machines.update(e["nodes"])
        elif kind == "worker" and isinstance(e.get("info"), dict):
            merge_worker(env, e, on)
        elif kind == "shard_ended":
            shards.append({k: e.get(k) for k in ("shard", "node", "started", "ended", "outcome")})
    env.setdefault("cluster", {})["shards"] = shards
    env["cluster"]["nodes"] = sorted(machines)
    if on == "any-node" and machines:
        top = next(iter(machines.values()))
        env.update({k: v for k, v in top.items() if k not in ("timestamp", "backends", "ray")})


# -- what the head and a node's agent say to each other ----------------------------------------
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
class ShardJob(_PlainJob):
    """What a node needs to measure a shard's cells: the workload files' text (the node has its own
    disk), the replicates journalled (by cell key, then index), what its earlier shards found of the
    ``--python`` interpreters, and whether messages spell an option as the command line does."""

    cells: tuple[Cell, ...]  # type: ignore[assignment]
    shipped: bytes | None = None
    done: dict[str, dict[int, Replicate]] = field(default_factory=dict)  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """The job as Ray carries it: plain data (the shipped workloads as bytes)."""
        return schema.to_json(self)

    @classmethod
    def from_dict(cls, data: Any) -> "ShardJob":
        """The job in ``data``; ``schema.SchemaError`` names a field that does not fit."""
        plain = schema.from_json(_PlainJob, data, where="shard job")
        shipped = plain.shipped
        if shipped is not None and not isinstance(shipped, bytes):
            raise schema.SchemaError(f"shard job.shipped: expected bytes, got {type(shipped).__name__}")
        done = {}
        for key, have in plain.done.items():
            if not all(i.isdigit() for i in have):
                raise schema.SchemaError(f"shard job.done.{key}: replicate indices must be numbers")
            done[key] = {int(i): Replicate.from_dict(r, f"shard job.done.{key}.{i}") for i, r in have.items()}
        cells = tuple(Cell.from_dict(c, f"shard job.cells[{i}]") for i, c in enumerate(plain.cells))
        return cls(**{**vars(plain), "cells": cells, "done": done})


@dataclass(frozen=True)
class Started:
    """The agent took the job (its process id, and when, by its clock)."""

    EVENT: ClassVar[str] = "started"
    time: float
    pid: int


@dataclass(frozen=True)
class _OfConfig:
    """A message about one configuration's workers on the node."""

    backend: str
    device: str
    environment: str

    @property
    def config(self) -> Config:
        return Config(self.backend, self.device, self.environment)


@dataclass(frozen=True)
class WorkerStarted(_OfConfig):
    """The shard's session started a worker for ``config``, replicate ``index``, for ``cells`` cells."""

    EVENT: ClassVar[str] = "worker_started"
    index: int
    cells: int


@dataclass(frozen=True)
class WorkerInfo(_OfConfig):
    """What a worker reported of its library and device (``info``), for the run's environment."""

    EVENT: ClassVar[str] = "worker"
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
class Unavailable(_OfConfig):
    """A library cannot run on this node (``reason``); its cells of the shard are skipped here."""

    EVENT: ClassVar[str] = "unavailable"
    reason: str


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
_TYPES: dict[str, type] = {t.EVENT: t for t in get_args(Message)}


def encode(message: Message) -> dict[str, Any]:
    """One message as the plain dict Ray carries, its type named by ``event``."""
    return {"event": message.EVENT, **schema.to_json(message)}


def parse(data: Any, sender: str = "the node") -> Message | None:
    """The message in ``data`` from a node's agent (``sender``, as a malformed replicate names it), or None."""
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
