"""What running through Ray costs: the same plan measured locally and as shards on a one-node Ray
cluster on this machine, alternately, and the figures printed (wall time, per-shard overhead, and
each cell's median both ways).

    python benchmarks/cluster_overhead.py [--rounds 2]

Needs ``arraybench[ray]`` and root (or user namespaces): the cluster runs in a network namespace
of its own with only ``lo``, so nothing leaves loopback. On a shared, noisy machine read the
medians' ratio with its spread across rounds, not as one number.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLAN = ["--backends", "numpy,torch", "--devices", "cpu", "--workloads", "elementwise,matmul,sort",
        "--sizes", "small", "--processes", "3", "--max-time", "0.3", "--threads", "1", "-q",
        "--no-plots"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    if os.environ.get("ARRAYBENCH_IN_NAMESPACE") != "1":
        cmd = f'ip link set lo up && exec "{sys.executable}" "{__file__}" --rounds {args.rounds}'
        env = {**os.environ, "ARRAYBENCH_IN_NAMESPACE": "1"}
        return subprocess.call(["unshare", "-n", "sh", "-c", cmd], env=env)

    from ray.cluster_utils import Cluster

    from arraybench.executors.cluster import NAME_LABEL

    temp = tempfile.mkdtemp(prefix="abbench")
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 80 << 20, "temp_dir": temp})
    cluster.add_node(num_cpus=os.cpu_count(), labels={NAME_LABEL: "node"},
                     object_store_memory=80 << 20)
    cluster.wait_for_nodes()
    walls: dict[str, list[float]] = {"local": [], "cluster": []}
    medians: dict[tuple[str, str], dict[str, list[float]]] = {}
    try:
        for r in range(args.rounds):
            for how in (("local", "cluster") if r % 2 == 0 else ("cluster", "local")):
                out = Path(temp) / f"{how}-{r}"
                extra = ["--cluster", cluster.address] if how == "cluster" else []
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "arraybench", "run", *PLAN, *extra,
                                       "-o", str(out)], cwd=ROOT, capture_output=True, text=True)
                walls[how].append(time.perf_counter() - t0)
                if done.returncode != 0:
                    print(done.stderr[-2000:], file=sys.stderr)
                    return 1
                for rec in json.loads((out / "results.json").read_text())["records"]:
                    key = (f"{rec['workload']} {rec['size_label']}", rec["backend"])
                    medians.setdefault(key, {"local": [], "cluster": []})[how].append(rec["median_s"])
    finally:
        cluster.shutdown()
    shards = 3
    print(f"plan: {' '.join(PLAN)}; {args.rounds} rounds, alternating; {os.cpu_count()} cores")
    for how, ws in walls.items():
        print(f"wall time {how:8s}: " + ", ".join(f"{w:.1f} s" for w in ws))
    extra = statistics.median(walls["cluster"]) - statistics.median(walls["local"])
    print(f"cluster minus local (median): {extra:+.1f} s, {extra / shards:+.2f} s per shard "
          "(connect, node environment, one actor per shard)")
    print(f"{'cell':18s} {'library':8s} {'local':>10s} {'cluster':>10s} {'cluster/local':>14s}")
    for (cell, lib), m in medians.items():
        lo, cl = statistics.median(m["local"]), statistics.median(m["cluster"])
        print(f"{cell:18s} {lib:8s} {lo * 1e6:8.1f}µs {cl * 1e6:8.1f}µs {cl / lo:13.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
