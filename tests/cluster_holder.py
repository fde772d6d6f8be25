"""A real two-node Ray cluster on this machine, for the cluster tests; run inside its own network
namespace (only ``lo``), so that Ray binds 127.0.0.1 and no test traffic leaves loopback.

    unshare -n sh -c 'ip link set lo up && exec python tests/cluster_holder.py TEMP_DIR'

Prints one JSON line ({"address", "pid"}) once the cluster is up, then obeys one command per line
on stdin, answering each with one line: ``remove NAME`` kills that node's processes (a node lost
mid-shard), ``add NAME`` starts a node of that name again, ``lose-head`` kills the head's
processes (its GCS: the cluster lost, as ``ray stop --force`` on the head's machine leaves it, but
without touching any other Ray on this machine), ``quit`` (or end of input) stops all.
The cluster is started as plain ``ray start`` starts one: no custom resource on any node. The head
takes no shards (no CPUs, no dashboard), as docs/cluster.md advises.
"""

from __future__ import annotations

import json
import os
import sys

from ray.cluster_utils import Cluster

from arraybench.executors.cluster import NAME_LABEL

STORE = 80 * 1024 * 1024  # the smallest object store Ray accepts comfortably; shards send little
#: Extra Ray resources per node: n1 claims an accelerator type, so --gpu-type has one node to pick.
EXTRA = {"n1": {"accelerator_type:T4": 1}, "n2": {}}


def main() -> int:
    temp_dir = sys.argv[1]
    # Ray writes the cluster's address under its default temp folder (/tmp/ray), which other
    # clusters on this machine share and may delete: keep everything of this one in temp_dir.
    os.environ["RAY_TMPDIR"] = temp_dir
    # A node removed by a test is dead at once; Ray's defaults take ~20 s of missed health checks
    # to say so (every 3 s, 5 misses), which only slowed the lost-node tests down.
    os.environ.setdefault("RAY_health_check_initial_delay_ms", "1000")
    os.environ.setdefault("RAY_health_check_period_ms", "500")
    os.environ.setdefault("RAY_health_check_timeout_ms", "1000")
    os.environ.setdefault("RAY_health_check_failure_threshold", "2")
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE,
        "temp_dir": temp_dir})
    nodes = {}

    def add(name: str) -> None:
        nodes[name] = cluster.add_node(num_cpus=1, resources=EXTRA.get(name, {}),
                                       labels={NAME_LABEL: name}, object_store_memory=STORE)

    for name in ("n1", "n2"):
        add(name)
    cluster.wait_for_nodes()
    print(json.dumps({"address": cluster.address, "pid": os.getpid()}), flush=True)
    head_lost = False
    for line in sys.stdin:
        command, _, name = line.strip().partition(" ")
        if command == "remove" and name in nodes:
            cluster.remove_node(nodes.pop(name), allow_graceful=False)
        elif command == "add" and name not in nodes:
            add(name)
            cluster.wait_for_nodes()
        elif command == "lose-head" and not head_lost:
            cluster.remove_node(cluster.head_node, allow_graceful=False)
            head_lost = True
        elif command == "quit":
            break
        print("ok", flush=True)
    if head_lost:  # nothing answers for the cluster: its nodes' processes are killed one by one
        for node in list(nodes.values()):
            cluster.remove_node(node, allow_graceful=False)
    else:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
