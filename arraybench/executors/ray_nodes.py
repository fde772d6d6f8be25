"""Joining a Ray cluster: connecting as a driver, watching that its head still answers, and finding its
nodes (each asked for its environment on the node itself), for ``executors/ray.py`` to run shards on.
"""

from __future__ import annotations

import logging
import socket
import time

import ray
from ray.exceptions import GetTimeoutError, RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..errors import UsageError, one_line
from .cluster import NAME_LABEL, Node, is_free, labels
from .ray_agent import node_environment

#: How long to wait for every node's environment.
ENVIRONMENT_TIMEOUT_S = 120.0


def connect(address: str) -> str | None:
    """Join the Ray cluster at ``address`` as a driver (never starting one); ``UsageError`` when it
    cannot be reached. The head's ``host:port`` (None for a ray:// address, reached through a server)."""
    head = None if address.startswith("ray://") else _reachable(address)
    if ray.is_initialized():
        return head
    try:
        ray.init(address=address, namespace="arraybench", log_to_driver=False,
                 logging_level=logging.ERROR, ignore_reinit_error=True)
    except ImportError as exc:  # ray:// needs Ray Client's extra packages
        raise UsageError(f"--cluster {address}: {exc.name or exc} is missing; a ray:// address needs "
                         "pip install 'ray[client]'") from None
    except (ConnectionError, RuntimeError, ValueError, OSError, RayError) as exc:
        raise UsageError(f"--cluster {address}: cannot connect to a Ray cluster there "
                         f"({first_line(exc)})") from None
    return head


#: How long the head's address may take to accept a connection.
CONNECT_TIMEOUT_S = 10.0


def _knock(host_port: str, timeout: float) -> None:
    """Open and close a TCP connection to ``host:port``; ``OSError`` or ``ValueError`` if none."""
    host, _, port = host_port.rpartition(":")
    socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()


def _reachable(address: str) -> str:
    """The head's ``host:port``; ``UsageError`` unless something listens at the cluster's
    address: Ray itself would retry an unreachable one for minutes, deaf to Ctrl-C."""
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die  # no public one

        resolved = canonicalize_bootstrap_address_or_die(address)
    except Exception as exc:
        raise UsageError(f"--cluster {address}: no Ray cluster found there ({first_line(exc)})") from None
    try:
        _knock(resolved, CONNECT_TIMEOUT_S)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--cluster {address}: nothing answers at {resolved} "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    return resolved


#: The head answering no connection for this long is a cluster lost (seconds).
HEAD_LOST_S = 5.0
#: How often the head is asked whether it is there (seconds).
HEAD_CHECK_S = 1.0


class HeadWatch:
    """Whether the cluster's head still answers at its address: a plain TCP connection, never a
    Ray call (each of those waits up to a minute for a head that is gone)."""

    def __init__(self, head: str | None) -> None:
        self.head = head
        self._checked = 0.0
        self._failing_since: float | None = None

    def lost(self) -> bool:
        """True once the head has answered no connection for ``HEAD_LOST_S``."""
        now = time.monotonic()
        if self.head is None or now - self._checked < HEAD_CHECK_S:
            return False
        self._checked = now
        try:
            _knock(self.head, HEAD_CHECK_S)
            self._failing_since = None
            return False
        except (OSError, ValueError):
            if self._failing_since is None:
                self._failing_since = now
            return time.monotonic() - self._failing_since >= HEAD_LOST_S


def discover(threads: int | None = None, *, environments: bool = True) -> list[Node]:
    """The live nodes of the cluster, labelled, with their environment and whether they are free."""
    raw = sorted((n for n in ray.nodes() if n.get("Alive")),
                 key=lambda n: ((n.get("Labels") or {}).get(NAME_LABEL) or "", n["NodeID"]))
    names = [(n.get("Labels") or {}).get(NAME_LABEL) or n.get("NodeManagerHostname") or "node"
             for n in raw]
    try:
        from ray._private.state import available_resources_per_node  # Ray has no public one

        available = available_resources_per_node()
    except Exception:
        available = None
    nodes = []
    for label, n in zip(labels(names, [n["NodeID"] for n in raw]), raw):
        resources = dict(n.get("Resources") or {})
        free = None if available is None else is_free(resources, available.get(n["NodeID"], {}))
        nodes.append(Node(label=label, node_id=n["NodeID"], address=n.get("NodeManagerAddress", ""),
                          resources=resources, free=free))
    if environments:
        ask = [n for n in nodes if n.takes_shards]
        refs = [node_environment.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n.node_id, soft=False)).remote(threads)
            for n in ask]
        for n, ref in zip(ask, refs):
            try:
                n.environment = ray.get(ref, timeout=ENVIRONMENT_TIMEOUT_S)
            except GetTimeoutError:
                raise UsageError(f"node {n.label} ({n.address}) did not report its environment "
                                 f"within {ENVIRONMENT_TIMEOUT_S:g} s") from None
            except RayError as exc:
                raise UsageError(f"node {n.label} ({n.address}) cannot run arraybench: "
                                 f"{first_line(exc)} (install the same arraybench there)") from None
    return nodes


def first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln.split(":")[0]]
    return one_line((errors[-1] if errors else lines[0] if lines else type(exc).__name__)[:300])
