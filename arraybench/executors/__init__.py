"""Executors decide where replicates run and bring them home; they never measure.

``local``: worker processes on this machine, a case's libraries taking turns. ``ray``: shards on a Ray
cluster, one per node at a time (``ray_agent`` is its side on the nodes); Ray is an optional extra,
imported only when a run names a cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from .cluster import Node
    from ..model.options import RunOptions
    from .ray import RayExecutor

#: What a user without Ray is told, in one line.
NO_RAY = ("--cluster needs Ray, which is not installed here: pip install 'arraybench[ray]' "
          "(the same on every node; docs/cluster.md)")


def _ray_modules():  # -> the executors.ray and executors.ray_nodes modules
    try:
        from . import ray as ray_executor, ray_nodes
    except ImportError as exc:
        if (exc.name or "").split(".")[0] == "ray":
            raise UsageError(NO_RAY) from None
        raise
    return ray_executor, ray_nodes


def cluster_executor(options: "RunOptions", *, node_wait: float | None = None) -> "RayExecutor":
    """Connected to ``options.cluster``, its nodes checked; ``UsageError`` in one line when Ray
    is not installed, the cluster cannot be reached, or its nodes cannot serve this run."""
    return _ray_modules()[0].RayExecutor.connect(options, node_wait=node_wait)


def cluster_nodes(address: str) -> "list[Node]":
    """The nodes of the cluster at ``address``, with their environments and which are free."""
    module = _ray_modules()[1]
    module.connect(address)
    try:
        return module.discover()
    finally:
        module.ray.shutdown()
