"""A run across a cluster, without Ray itself: nodes, shards, where a shard may run, and the shard log.

A **shard** is one (workload, size) with all its libraries and devices, measured on one node, so that
every ratio between libraries comes from one machine; it reserves all of its node's CPUs and GPUs, so at
most one shard runs on a node at a time. ``every-node`` measures the plan on each node; ``any-node``
splits it across nodes that must be one machine (``identity``). ``executors/ray.py`` talks to Ray.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..errors import UsageError
from ..model.options import RunOptions
from ..model.cell import Cell

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
    if options.cluster is None:
        if options.on != PLACEMENTS[0] or options.gpu_type:
            raise UsageError("--on and --gpu-type choose nodes of a cluster: give --cluster ADDRESS too")
        return
    if not isinstance(options.cluster, str) or not options.cluster.strip():
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
    """Whether a node whose Ray resources are ``total`` has all of its CPUs and GPUs
    ``available``: no shard, and no other Ray work, holds any of them."""
    return all(available.get(r, 0) >= total.get(r, 0) for r in ("CPU", "GPU"))


#: Besides the fingerprint, what must match for results from two nodes to be one run's.
IDENTITY_KEYS = ("python", "arraybench", "libraries")


def identity(env: dict[str, Any]) -> dict[str, Any]:
    """What makes a node's results comparable to another's: its fingerprint without the host
    hash, its Python, arraybench and library versions."""
    fp = {k: v for k, v in (env.get("fingerprint") or {}).items() if k != "host_sha"}
    return {**fp, **{k: env.get(k) for k in IDENTITY_KEYS}}


def differences(nodes: list[Node]) -> str | None:
    """None where every node has one identity; else which nodes differ from the first, and in what."""
    if not nodes:
        return None
    first = nodes[0]
    base = identity(first.environment)
    parts = []
    for n in nodes[1:]:
        other = identity(n.environment)
        diff = [f"{k} {_short(other.get(k))} (vs {_short(base.get(k))})"
                for k in sorted(set(base) | set(other)) if base.get(k) != other.get(k)]
        if diff:
            parts.append(f"{n.label}: {', '.join(diff)}")
    if not parts:
        return None
    return (f"--on any-node needs identical nodes, and these differ from {first.label}: "
            + "; ".join(parts) + ". Compare them with --on every-node, or choose nodes with --gpu-type")


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} {v}" for k, v in value.items() if v) + "}"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def every_node_cells(cells: list[Cell], node_labels: list[str]) -> list[Cell]:
    """The plan of an every-node run: each cell once per node, labelled with it."""
    return [replace(c, machine=label) for label in node_labels for c in cells]


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


class ShardLog:
    """Append-only, a line per event, fsynced."""

    def __init__(self, out_dir: Path) -> None:
        self._stream = open(out_dir / LOG_NAME, "a", encoding="utf-8")

    def write(self, entry: dict[str, Any]) -> None:
        self._stream.write(json.dumps(entry, allow_nan=False, default=str) + "\n")
        self._stream.flush()
        os.fsync(self._stream.fileno())

    def close(self) -> None:
        self._stream.close()


def read_shard_log(out_dir: Path) -> list[dict[str, Any]]:
    """The entries of a run's shard log ([] where there is none); a torn or damaged line is
    skipped: the log describes, the journal decides."""
    try:
        text = (out_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def merge_worker(env: dict[str, Any], entry: dict[str, Any], on: str) -> None:
    """A shard log's ``worker`` entry into a run's environment: under its node's machine, and at
    the top too for an any-node run."""
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

