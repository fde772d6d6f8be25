"""The nodes of a cluster as a table: ``arraybench info --cluster ADDRESS``."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from ..executors.cluster import Node, identity


def nodes_table(nodes: list[Node], address: str) -> Table:
    """One row per node: its label, address, CPUs and GPUs, whether it takes shards and is free
    now (none of its CPUs and GPUs reserved), and its machine (fingerprint hash; nodes with one identity can share an any-node run)."""
    t = Table(title=f"Ray cluster at {escape(address)}: {len(nodes)} nodes", title_justify="left",
              header_style="bold", pad_edge=False)
    for name in ("node", "address", "CPUs", "GPUs", "shards", "free", "machine", "identity", "CPU model"):
        t.add_column(name, overflow="fold")
    groups: dict[str, str] = {}
    for n in nodes:
        env = n.environment
        key = repr(sorted(identity(env).items())) if env else ""
        group = groups.setdefault(key, chr(ord("A") + len(groups))) if env else "—"
        gpus = f"{n.gpus:g}" + (f" ({', '.join(n.gpu_types)})" if n.gpu_types else "")
        free = "—" if not n.takes_shards else "unknown" if n.free is None else "yes" if n.free else "busy"
        t.add_row(escape(n.label), escape(n.address), f"{n.cpus:g}", gpus, "yes" if n.takes_shards else "no",
                  free, str(env.get("machine_id", "—")), group, escape(str(env.get("cpu_model", "—"))))
    return t


def nodes_json(nodes: list[Node]) -> list[dict[str, Any]]:
    """The nodes as JSON-ready data (``info --cluster --json``)."""
    return [{"label": n.label, "node_id": n.node_id, "address": n.address, "resources": n.resources,
             "slot": n.takes_shards, "free": n.free, "gpu_types": n.gpu_types,
             "machine_id": n.environment.get("machine_id"), "fingerprint": n.environment.get("fingerprint"),
             "arraybench": n.environment.get("arraybench")} for n in nodes]
