"""The shard log of a cluster run: which node ran which shard, when, and how it ended.

``DIR/cluster.jsonl`` sits beside the journal and is written like it (one line per event, flushed
and fsynced): the nodes a run found (each node's environment), each shard's start and end on its
node, in the node's own clock, and each worker's self-report per node. The journal stays the
source of truth for measurements; this log lets ``--resume`` describe nodes that have since left,
and lets anyone check that no two shards ever shared a node.

Entries (``type``): ``nodes`` {nodes: {label: environment}, identity}, ``shard_started`` {shard,
node, time}, ``shard_ended`` {shard, node, started, ended, outcome, reason}, ``worker`` {node,
backend, device, environment, info}.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

LOG_NAME = "cluster.jsonl"


class ShardLog:
    """Append-only, a line per event, fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stream = open(path, "a", encoding="utf-8")

    @classmethod
    def open(cls, out_dir: Path) -> "ShardLog":
        return cls(out_dir / LOG_NAME)

    def write(self, entry: dict[str, Any]) -> None:
        self._stream.write(json.dumps(entry, allow_nan=False, default=str) + "\n")
        self._stream.flush()
        os.fsync(self._stream.fileno())

    def close(self) -> None:
        self._stream.close()


def read(out_dir: Path) -> list[dict[str, Any]]:
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


def restore(env: dict[str, Any], entries: list[dict[str, Any]], on: str) -> None:
    """Fold a shard log into a run's environment: each node's environment and its workers'
    reports under ``machines``, the shards under ``cluster["shards"]``; for an any-node run (its
    nodes are one machine) the nodes' environment at the top, in place of the driver's."""
    from ..host.machine import merge_worker_info

    machines = env.setdefault("machines", {})
    shards = []
    for e in entries:
        kind = e.get("type")
        if kind == "nodes" and isinstance(e.get("nodes"), dict):
            machines.update(e["nodes"])
        elif kind == "worker" and isinstance(e.get("info"), dict):
            where = str(e.get("environment") or "")  # the environment it ran in
            merge_worker_info(machines.setdefault(str(e.get("node")), {}), str(e.get("backend")),
                              str(e.get("device")), e["info"], where)
            if on == "any-node":
                merge_worker_info(env, str(e.get("backend")), str(e.get("device")), e["info"], where)
        elif kind == "shard_ended":
            shards.append({k: e.get(k) for k in ("shard", "node", "started", "ended", "outcome")})
    env.setdefault("cluster", {})["shards"] = shards
    env["cluster"]["nodes"] = sorted(machines)
    if on == "any-node" and machines:
        top = next(iter(machines.values()))
        env.update({k: v for k, v in top.items() if k not in ("timestamp", "backends", "ray")})

